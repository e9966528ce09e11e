//! `bet`: the Block Erasing Table of Chang, Hsieh and Kuo ("Endurance enhancement of
//! flash-memory storage systems: an efficient static wear leveling design", DAC 2007).
//! One flag per set of 2^k blocks records whether the set was erased in the current
//! resetting interval; `e` counts erases and `f` flags set in the interval. When
//! `e / f ≥ T` (erases concentrate on few sets), a set whose flag is clear is chosen
//! scanning from a random index, and one full block of it (in the plane of the erase) has
//! its data moved out and is erased, so cold blocks join the rotation. When every flag is
//! set, the interval ends and the table resets. Defaults from the paper's evaluation:
//! T = 100, k = 0 (one flag per block).

use super::{WearAction, WearCtx, WearPolicy, WearShape};
use crate::flash::NONE;
use rand::Rng;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::{stream, SimRng};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Unevenness threshold T on erases per flag set in the interval.
    pub threshold: u32,
    /// log2 of the blocks per flag (k).
    pub blocks_per_flag_log2: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            threshold: 100,
            blocks_per_flag_log2: 0,
        }
    }
}

#[derive(Clone)]
pub struct Bet {
    threshold: u64,
    k: u32,
    /// Flag per set of 2^k blocks (set index = region-relative index >> k).
    flags: Vec<bool>,
    erases: u64,
    set_flags: u64,
    rng: SimRng,
    shape: WearShape,
    /// Migrations chosen so far (tests).
    pub migrations: u64,
    /// Intervals completed (tests).
    pub resets: u64,
}

impl Bet {
    /// Region-relative index of `block` (planes stacked).
    fn rel(&self, block: u32) -> u32 {
        let s = &self.shape;
        let plane = block / s.blocks_per_plane;
        plane * s.region_blocks_per_plane + (block % s.blocks_per_plane - s.first_index)
    }

    fn block_of_rel(&self, rel: u32) -> u32 {
        let s = &self.shape;
        let plane = rel / s.region_blocks_per_plane;
        plane * s.blocks_per_plane + s.first_index + rel % s.region_blocks_per_plane
    }

    /// A full block of an unflagged set in `ctx.plane`, scanning sets from a random index.
    fn cold_block(&mut self, ctx: &WearCtx) -> Option<u32> {
        let sets = self.flags.len();
        let start = self.rng.gen_range(0..sets);
        for i in 0..sets {
            let set = (start + i) % sets;
            if self.flags[set] {
                continue;
            }
            let first = (set as u32) << self.k;
            let last = (first + (1 << self.k)).min(self.shape.planes * self.shape.region_blocks_per_plane);
            for rel in first..last {
                let b = self.block_of_rel(rel);
                if self.shape.plane_blocks(ctx.plane).contains(&b) && ctx.migratable(b) {
                    return Some(b);
                }
            }
        }
        None
    }
}

impl WearPolicy for Bet {
    type Params = Params;

    fn new(p: &Params, s: &WearShape) -> Bet {
        let blocks = s.planes * s.region_blocks_per_plane;
        let k = p.blocks_per_flag_log2.min(20);
        Bet {
            threshold: p.threshold.max(1) as u64,
            k,
            flags: vec![false; (blocks as usize).div_ceil(1 << k)],
            erases: 0,
            set_flags: 0,
            rng: stream(s.seed, 0xBE7 + s.region as u64),
            shape: *s,
            migrations: 0,
            resets: 0,
        }
    }

    fn on_erase(&mut self, block: u32, ctx: &WearCtx) -> WearAction {
        self.erases += 1;
        let set = (self.rel(block) >> self.k) as usize;
        if !self.flags[set] {
            self.flags[set] = true;
            self.set_flags += 1;
            if self.set_flags == self.flags.len() as u64 {
                self.flags.fill(false);
                self.set_flags = 0;
                self.erases = 0;
                self.resets += 1;
                return WearAction::Idle;
            }
        }
        if self.erases < self.threshold * self.set_flags.max(1) {
            return WearAction::Idle;
        }
        match self.cold_block(ctx) {
            Some(from) => {
                self.migrations += 1;
                WearAction::Migrate { from, into: NONE }
            }
            None => WearAction::Idle,
        }
    }
}
