//! Wear-out is a result: a run on a device that wears out ends with status `worn_out`, its
//! figures up to that point, and the first bad block and failure stamped; factory bad
//! blocks and injected program/erase failures retire blocks without losing data.

use crate::common;

use common::{closed, req};
use proptest::prelude::*;
use ssdlab_core::config::{CellMode, Mode};
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::{Config, NoProgress, RunStatus, Simulation};
use ssdlab_workload::{HostOp, HostRequest};
use std::collections::HashMap;

/// 1 die × 2 planes × 24 blocks × 8 pages × 2 units, TLC endurance `endurance`.
fn device(mode: Mode, endurance: u32) -> Config {
    let mut c = common::tiny(2, 24, 8, 2, 1.0);
    c.mode = mode;
    c.device.timing.tlc.endurance_pe_cycles = endurance;
    c.device.cell_mode = CellMode::Tlc;
    c.workload =
        ssdlab_workload::WorkloadConfig::Synthetic(ssdlab_workload::synthetic::SyntheticConfig {
            read_percent: 20.0,
            queue_depth: 4,
            requests: 10_000_000,
            ..Default::default()
        });
    c
}

fn wears_out(mode: Mode) {
    let r = ssdlab_core::run(device(mode, 12), &mut NoProgress).unwrap();
    assert_eq!(r.status, RunStatus::WornOut, "{mode:?}");
    let lt = &r.lifetime;
    let (first, fail) = (lt.first_bad_block.unwrap(), lt.failure.unwrap());
    assert!(r.lifetime.retired_blocks > 0);
    assert!(
        first.host_write_units > 0 && first.host_write_units <= fail.host_write_units,
        "{mode:?}: first bad {first:?}, failure {fail:?}"
    );
    assert!(first.sim_ns <= fail.sim_ns && fail.sim_ns > 0);
    // Either the usable blocks no longer hold the data and the reserve, or a plane ran out
    // of free blocks for GC (erases that retire their block free nothing).
    let reason = lt.failure_reason.clone().unwrap_or_default();
    assert!(
        reason.contains("logical capacity") || reason.contains("no free block left"),
        "{mode:?}: {reason}"
    );
    // The figures cover the run up to the failure, not the 10 M requests asked for.
    assert!(r.host.requests > 1000 && r.host.requests < 10_000_000);
    assert!(r.host.counters.write_units >= fail.host_write_units);
    assert!(r.wear.bad_blocks as u64 >= r.lifetime.retired_blocks);
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"status\":\"worn_out\""), "{json}");
}

#[test]
fn functional_run_ends_worn_out_with_figures() {
    wears_out(Mode::Functional);
}

#[test]
fn timed_run_ends_worn_out_with_figures() {
    wears_out(Mode::Timed);
}

#[test]
fn factory_bad_blocks_are_excluded_and_too_many_are_an_error() {
    let mut c = device(Mode::Functional, 3000);
    c.device.bad_block_ratio = 0.1;
    let sim = Simulation::new(c.clone()).unwrap();
    let bad = sim.ftl.factory_bad_blocks();
    assert!(bad > 0, "some of 48 blocks are bad at 10 %");
    assert_eq!(sim.ftl.media().blocks().usable(), 48 - bad as usize);
    sim.ftl.check_invariants().unwrap();
    c.device.bad_block_ratio = 0.6;
    let e = Simulation::new(c).err().unwrap().to_string();
    assert!(e.starts_with("device.bad_block_ratio"), "{e}");
}

#[derive(Clone, Debug)]
enum Op {
    Write(u32),
    Read(u32),
}

/// Oracle: versions are handed out 1, 2, 3, … in write order.
fn oracle(ops: &[Op]) -> HashMap<u32, u64> {
    let mut m = HashMap::new();
    let mut next = 1;
    for op in ops {
        if let Op::Write(l) = *op {
            m.insert(l, next);
            next += 1;
        }
    }
    m
}

fn failing(mode: Mode, seed: u64) -> Simulation {
    let mut c = common::tiny(2, 24, 4, 2, 1.5);
    c.mode = mode;
    c.seed = seed;
    c.integrity = true;
    c.device.bad_block_ratio = 0.05;
    c.device.program_fail_rate = 0.02;
    c.device.erase_fail_rate = 0.02;
    Simulation::new(c).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Failed programs and erases retire blocks; every unit keeps its last version.
    #[test]
    fn failures_lose_no_data(seed in 0..1000u64, timed in any::<bool>(), writes in prop::collection::vec(0..40u32, 50..400)) {
        let mode = if timed { Mode::Timed } else { Mode::Functional };
        let mut sim = failing(mode, seed);
        let units = sim.derived.logical_units;
        let mut seq: Vec<Op> = Vec::new();
        for (i, w) in writes.iter().enumerate() {
            seq.push(Op::Write(w % units));
            if i % 3 == 0 {
                seq.push(Op::Read((w * 7) % units));
            }
        }
        let reqs: Vec<HostRequest> = seq
            .iter()
            .map(|o| match *o {
                Op::Write(l) => req(HostOp::Write, l as u64, 1),
                Op::Read(l) => req(HostOp::Read, l as u64, 1),
            })
            .collect();
        let worn = if timed {
            let mut reqs = reqs;
            reqs.push(common::flush());
            let r = sim.run_workload_with(closed(reqs, 1), &mut NoProgress).unwrap();
            r.status == RunStatus::WornOut
        } else {
            let mut d = FunctionalDriver::new(&mut sim.ftl);
            for r in &reqs {
                d.submit(r).unwrap();
                if d.worn_out() {
                    break;
                }
            }
            d.flush().unwrap();
            d.worn_out()
        };
        sim.ftl.check_invariants().unwrap();
        if !worn {
            let want = oracle(&seq);
            for lpn in 0..units {
                prop_assert_eq!(sim.ftl.flash_version(lpn), want.get(&lpn).copied(), "unit {}", lpn);
            }
        }
    }
}

/// Over a long run with injected failures, programs and erases do fail, blocks are
/// retired, and the data stays intact.
#[test]
fn injected_failures_happen_and_are_survived() {
    let mut sim = failing(Mode::Functional, 1);
    let units = sim.derived.logical_units;
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    let mut want = HashMap::new();
    for i in 0..3000u32 {
        let lpn = (i * 17 + i / 7) % units;
        d.write_unit(lpn).unwrap();
        want.insert(lpn, i as u64 + 1);
        if d.worn_out() {
            break;
        }
    }
    d.flush().unwrap();
    let c = d.ftl.counters();
    assert!(c.program_failures > 0 && c.erase_failures > 0, "{c:?}");
    assert!(c.blocks_retired >= c.erase_failures);
    assert!(
        c.retired_units_moved > 0,
        "a doomed block's data was moved out"
    );
    for (lpn, v) in want {
        assert_eq!(d.stored_version(lpn), Some(v), "unit {lpn}");
    }
    d.ftl.check_invariants().unwrap();
}
