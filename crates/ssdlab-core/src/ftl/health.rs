//! Bad blocks and wear-out: factory bad blocks, injected program and erase failures,
//! retirement, and the lifetime events (first bad block, device failure).
//!
//! A block is retired when its erase count reaches its cell mode's endurance (after its
//! data has moved: it is a GC or wear-leveling source when that erase runs), when an erase
//! fails, or, after a failed program, once its valid data has been moved out. The device
//! fails when the data region's usable blocks can no longer hold the logical capacity
//! (each plane keeps its reserve and the garbage GC needs to find a victim; the same rule
//! as the minimum OP of `Derived`). From then on the FTL accepts no host write and the
//! drivers end the run with status `worn_out`, keeping every figure up to that point.

use super::Ftl;
use crate::config::Config;
use crate::flash::BlockState;
use crate::ids::BlockId;
use rand::Rng;
use serde::Serialize;
use ssdlab_workload::rng::{stream, tag, SimRng};

/// When a lifetime event happened: the phase that saw it (`precondition` or `workload`),
/// its simulated time and the host units written in it by then (stamped by the driver,
/// since the FTL reads no clock).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LifeEvent {
    pub phase: &'static str,
    pub sim_ns: u64,
    pub host_write_units: u64,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Lifetime {
    /// The first block retired during the run (factory bad blocks excluded).
    pub first_bad_block: Option<LifeEvent>,
    /// The device could no longer hold its logical capacity.
    pub failure: Option<LifeEvent>,
    pub failure_reason: Option<String>,
}

#[derive(Clone)]
pub struct Health {
    rng: SimRng,
    program_fail_rate: f64,
    erase_fail_rate: f64,
    bad_block_ratio: f64,
    seed: u64,
    lifetime: Lifetime,
    /// Blocks bad from the factory.
    factory_bad: u64,
    /// Events recorded but not yet stamped by the driver.
    stamp_pending: bool,
}

impl Health {
    pub fn new(cfg: &Config) -> Health {
        Health {
            rng: stream(cfg.seed, tag::FAILURES),
            program_fail_rate: cfg.device.program_fail_rate,
            erase_fail_rate: cfg.device.erase_fail_rate,
            bad_block_ratio: cfg.device.bad_block_ratio,
            seed: cfg.seed,
            lifetime: Lifetime::default(),
            factory_bad: 0,
            stamp_pending: false,
        }
    }

    /// Factory bad blocks: each block independently with `bad_block_ratio` (own stream).
    /// Draw the factory bad blocks of a device of `blocks` blocks (once, when it is built).
    pub fn draw_factory_bad_blocks(&mut self, blocks: u32) -> std::collections::BTreeSet<u32> {
        let mut out = std::collections::BTreeSet::new();
        if self.bad_block_ratio > 0.0 {
            let mut rng = stream(self.seed, tag::FACTORY_BAD);
            for b in 0..blocks {
                if rng.gen::<f64>() < self.bad_block_ratio {
                    out.insert(b);
                }
            }
        }
        self.factory_bad = out.len() as u64;
        out
    }

    #[inline]
    pub fn draw_program_failure(&mut self) -> bool {
        self.program_fail_rate > 0.0 && self.rng.gen::<f64>() < self.program_fail_rate
    }

    /// Whether programs may fail (a failure rate is set).
    #[inline]
    pub fn programs_may_fail(&self) -> bool {
        self.program_fail_rate > 0.0
    }

    #[inline]
    pub fn draw_erase_failure(&mut self) -> bool {
        self.erase_fail_rate > 0.0 && self.rng.gen::<f64>() < self.erase_fail_rate
    }

    fn record_first_bad(&mut self) {
        if self.lifetime.first_bad_block.is_none() {
            self.lifetime.first_bad_block = Some(LifeEvent::default());
            self.stamp_pending = true;
        }
    }

    /// The device has failed for `reason` (the first reason is kept).
    pub fn fail(&mut self, reason: String) {
        if self.lifetime.failure.is_none() {
            self.lifetime.failure = Some(LifeEvent::default());
            self.lifetime.failure_reason = Some(reason);
            self.stamp_pending = true;
        }
    }

    /// Give the events recorded since the last stamp their time.
    pub fn stamp(&mut self, phase: &'static str, sim_ns: u64, host_write_units: u64) {
        if !self.stamp_pending {
            return;
        }
        let e = LifeEvent {
            phase,
            sim_ns,
            host_write_units,
        };
        for ev in [
            &mut self.lifetime.first_bad_block,
            &mut self.lifetime.failure,
        ]
        .into_iter()
        .flatten()
        {
            if *ev == LifeEvent::default() {
                *ev = e;
            }
        }
        self.stamp_pending = false;
    }
}

impl Ftl {
    /// Retire `block`, in state `from` (it holds no valid data).
    pub(super) fn retire(&mut self, block: BlockId, from: BlockState) {
        let b = block.idx();
        debug_assert_eq!(self.media.blocks.valid_units[b], 0);
        self.media
            .set_block_state(&mut self.internal, block, from, BlockState::Bad);
        self.media.blocks.doomed[b] = false;
        self.counters.blocks_retired += 1;
        self.health.record_first_bad();
        let rp = self.media.blocks.rp[b] as usize;
        self.media.ps[rp].usable_blocks -= 1;
        let plane = self.media.geo.plane_of_block(block);
        if let Some(mut zv) = self.zoned() {
            zv.block_retired(plane.0);
        }
        if let Err(why) = self.media.update_capacity() {
            self.health.fail(why);
        }
    }
}

impl Ftl {
    /// Blocks bad from the factory.
    pub fn factory_bad_blocks(&self) -> u64 {
        self.health.factory_bad
    }

    /// Lifetime events so far (first bad block, failure).
    pub fn lifetime(&self) -> &Lifetime {
        &self.health.lifetime
    }

    /// Whether the device has failed (it can no longer hold its logical capacity).
    #[inline]
    pub fn worn_out(&self) -> bool {
        self.health.lifetime.failure.is_some()
    }

    /// Test hook: the device fails now, as wear-out would make it (`why`: the reason).
    #[doc(hidden)]
    pub fn force_failure(&mut self, why: &str) {
        self.health.fail(why.to_string());
    }

    /// Whether a lifetime event waits for the driver's time stamp.
    #[inline]
    pub fn lifetime_stamp_pending(&self) -> bool {
        self.health.stamp_pending
    }

    /// Stamp pending lifetime events with the driver's phase, clock and host write count.
    pub fn stamp_lifetime(&mut self, phase: &'static str, sim_ns: u64, host_write_units: u64) {
        self.health.stamp(phase, sim_ns, host_write_units);
    }
}
