//! Integrity mode: random read/write/trim/flush sequences on tiny geometries checked against
//! a HashMap oracle, through GC and buffer flushes, in both modes; and a corrupted slot is
//! caught with the address and its history.

use crate::common;
use ssdlab_core::flash::ids::Lpn;

use common::{closed, flush, req};
use proptest::prelude::*;
use ssdlab_core::config::Mode;
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::{NoProgress, SimError, Simulation};
use ssdlab_workload::{HostOp, HostRequest};
use std::collections::HashMap;

#[derive(Clone, Debug)]
enum Op {
    Write(u32, u32),
    Read(u32, u32),
    Trim(u32, u32),
    Flush,
}

fn ops(units: u32) -> impl Strategy<Value = Vec<Op>> {
    let span = move || (0..units, 1..4u32).prop_map(move |(a, n)| (a, n.min(units - a)));
    let op = prop_oneof![
        6 => span().prop_map(|(a, n)| Op::Write(a, n)),
        3 => span().prop_map(|(a, n)| Op::Read(a, n)),
        1 => span().prop_map(|(a, n)| Op::Trim(a, n)),
        1 => Just(Op::Flush),
    ];
    prop::collection::vec(op, 1..400)
}

fn integrity_sim(planes: u32, spp: u32, mode: Mode) -> Simulation {
    // OP 3 is valid for every geometry here (replaced below by 1.3 x the minimum).
    let mut c = common::tiny(planes, 8, 4, spp, 3.0);
    let min = c.validate().unwrap().min_over_provisioning_ratio;
    c.device.over_provisioning_ratio = min * 1.3;
    c.integrity = true;
    c.mode = mode;
    Simulation::new(c).unwrap()
}

fn to_request(op: &Op) -> HostRequest {
    match *op {
        Op::Write(a, n) => req(HostOp::Write, a as u64, n as u64),
        Op::Read(a, n) => req(HostOp::Read, a as u64, n as u64),
        Op::Trim(a, n) => req(HostOp::Trim, a as u64, n as u64),
        Op::Flush => flush(),
    }
}

/// Oracle: the version each unit should hold. Versions are handed out 1, 2, 3, … in the
/// order units are written, which the oracle reproduces.
fn oracle(ops: &[Op]) -> HashMap<u32, u64> {
    let mut m = HashMap::new();
    let mut next = 1;
    for op in ops {
        match *op {
            Op::Write(a, n) => {
                for l in a..a + n {
                    m.insert(l, next);
                    next += 1;
                }
            }
            Op::Trim(a, n) => {
                for l in a..a + n {
                    m.remove(&l);
                }
            }
            _ => {}
        }
    }
    m
}

/// Functional mode: `seq` (its spans within the device) through `sim`, then every unit
/// holds the oracle's version.
fn functional_matches(mut sim: Simulation, seq: Vec<Op>) -> Result<(), TestCaseError> {
    let units = sim.derived.logical_units;
    let seq: Vec<Op> = seq
        .into_iter()
        .filter(|o| match o {
            Op::Write(a, n) | Op::Read(a, n) | Op::Trim(a, n) => a + n <= units,
            Op::Flush => true,
        })
        .collect();
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    for op in &seq {
        d.submit(&to_request(op)).unwrap();
    }
    let want = oracle(&seq);
    for lpn in 0..units {
        prop_assert_eq!(
            d.stored_version(lpn),
            want.get(&lpn).copied(),
            "unit {}",
            lpn
        );
    }
    d.ftl.check_invariants().unwrap();
    Ok(())
}

/// Timed mode at depth `qd`: every request completes, every read is checked, and every
/// unit holds the oracle's version.
fn timed_matches(mut sim: Simulation, seq: Vec<Op>, qd: u32) -> Result<(), TestCaseError> {
    let units = sim.derived.logical_units;
    let mut seq: Vec<Op> = seq
        .into_iter()
        .filter(|o| match o {
            Op::Write(a, n) | Op::Read(a, n) | Op::Trim(a, n) => a + n <= units,
            Op::Flush => true,
        })
        .collect();
    // Aligned writes enter the buffer in submission order, so versions follow the
    // oracle at any depth; a trim applies at submission and may overtake a write still
    // waiting for buffer space, so trims run at depth 1 only.
    if qd > 1 {
        seq.retain(|o| !matches!(o, Op::Trim(..)));
    }
    seq.push(Op::Flush);
    let reqs: Vec<HostRequest> = seq.iter().map(to_request).collect();
    let r = sim
        .run_workload_with(closed(reqs.clone(), qd), &mut NoProgress)
        .unwrap();
    common::assert_all_completed(&r, &reqs);
    let reads: u64 = seq
        .iter()
        .map(|o| if let Op::Read(_, n) = o { *n as u64 } else { 0 })
        .sum();
    prop_assert_eq!(r.integrity.unwrap().checked_reads, reads);
    let want = oracle(&seq);
    for lpn in 0..units {
        prop_assert_eq!(
            sim.ftl.flash_version(lpn),
            want.get(&lpn).copied(),
            "unit {}",
            lpn
        );
    }
    sim.ftl.check_invariants().unwrap();
    Ok(())
}

/// `sim` with read reclaim after `read_count` reads and retention refresh at `age_ms`
/// (scanned every ms): both modes' clocks reach a few ms in these runs.
fn with_reliability_jobs(
    planes: u32,
    spp: u32,
    mode: Mode,
    read_count: u32,
    age_ms: u64,
) -> Simulation {
    let mut c = common::tiny(planes, 12, 4, spp, 3.0);
    c.ftl.read_reclaim = crate::reliability::reclaim_after(read_count);
    c.ftl.refresh = crate::reliability::refresh_at(age_ms, 1);
    with_jobs(c, mode)
}

/// `c` (a tiny device with its reliability jobs set) in integrity `mode` at 1.3 × its
/// minimum OP.
fn with_jobs(mut c: ssdlab_core::config::Config, mode: Mode) -> Simulation {
    // 12 blocks a plane: their wear-stream block raises the minimum OP (then 1.3 x it).
    c.integrity = true;
    c.mode = mode;
    let min = [1.0, 2.0, 3.0, 4.0, 6.0]
        .iter()
        .find_map(|&op| {
            c.device.over_provisioning_ratio = op;
            c.validate().ok()
        })
        .expect("a valid OP")
        .min_over_provisioning_ratio;
    c.device.over_provisioning_ratio = min * 1.3;
    Simulation::new(c).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn functional_matches_oracle(planes in 1..3u32, spp in prop::sample::select(vec![1u32, 2, 4]), seq in ops(10)) {
        functional_matches(integrity_sim(planes, spp, Mode::Functional), seq)?;
    }

    #[test]
    fn timed_matches_oracle(planes in 1..3u32, spp in prop::sample::select(vec![1u32, 2]), qd in 1..6u32, seq in ops(10)) {
        timed_matches(integrity_sim(planes, spp, Mode::Timed), seq, qd)?;
    }

    /// Read reclaim and retention refresh move blocks under the same random sequences
    /// (reads count towards reclaim; the clocks age the data): still every unit as the
    /// oracle says.
    #[test]
    fn functional_matches_oracle_with_reliability_jobs(planes in 1..3u32, spp in prop::sample::select(vec![1u32, 2, 4]), read_count in 1..6u32, age_ms in prop::sample::select(vec![2u64, 10, 50]), seq in ops(10)) {
        functional_matches(with_reliability_jobs(planes, spp, Mode::Functional, read_count, age_ms), seq)?;
    }

    #[test]
    fn timed_matches_oracle_with_reliability_jobs(planes in 1..3u32, spp in prop::sample::select(vec![1u32, 2]), qd in 1..6u32, read_count in 1..6u32, age_ms in prop::sample::select(vec![2u64, 10, 50]), seq in ops(10)) {
        timed_matches(with_reliability_jobs(planes, spp, Mode::Timed, read_count, age_ms), seq, qd)?;
    }
}

/// Many overwrites through GC in timed mode at queue depth 8 (reads interleave with GC
/// copies, buffer flushes, erases): every read is checked.
#[test]
fn timed_integrity_through_gc_at_depth() {
    let mut sim = integrity_sim(2, 2, Mode::Timed);
    let units = sim.derived.logical_units as u64;
    let mut reqs = Vec::new();
    for i in 0..units * 40 {
        let lpn = (i * 7919) % units;
        reqs.push(req(
            if i % 3 == 0 {
                HostOp::Read
            } else {
                HostOp::Write
            },
            lpn,
            1,
        ));
    }
    let r = sim
        .run_workload_with(closed(reqs, 8), &mut NoProgress)
        .unwrap();
    assert!(r.gc.invocations > 10);
    assert!(r.integrity.unwrap().checked_reads > units * 10);
}

/// The same at depth 8 with read reclaim (after 4 reads) and retention refresh (5 ms):
/// blocks are reclaimed and refreshed while reads and GC run, and every read is checked
/// (a read served by a block under relocation, or by the copy, sees its version); then
/// every unit holds its last write's version.
#[test]
fn timed_integrity_through_reclaim_and_refresh_at_depth() {
    let mut sim = with_reliability_jobs(2, 2, Mode::Timed, 4, 5);
    let units = sim.derived.logical_units as u64;
    let mut reqs = Vec::new();
    let mut seq = Vec::new();
    for i in 0..units * 40 {
        let lpn = (i * 7919) % units;
        let read = i % 2 == 0;
        reqs.push(req(if read { HostOp::Read } else { HostOp::Write }, lpn, 1));
        seq.push(if read {
            Op::Read(lpn as u32, 1)
        } else {
            Op::Write(lpn as u32, 1)
        });
    }
    reqs.push(flush());
    let reads = reqs.iter().filter(|r| r.op == HostOp::Read).count() as u64;
    let r = sim
        .run_workload_with(closed(reqs.clone(), 8), &mut NoProgress)
        .unwrap();
    common::assert_all_completed(&r, &reqs);
    assert!(r.gc.reclaimed_blocks > 10, "{}", r.gc.reclaimed_blocks);
    assert!(r.gc.refreshed_blocks > 10, "{}", r.gc.refreshed_blocks);
    assert!(r.nand.programs.reclaim > 0 && r.nand.programs.refresh > 0);
    assert_eq!(r.integrity.unwrap().checked_reads, reads);
    let want = oracle(&seq);
    for lpn in 0..units as u32 {
        assert_eq!(
            sim.ftl.flash_version(lpn),
            want.get(&lpn).copied(),
            "unit {lpn}"
        );
    }
    sim.ftl.check_invariants().unwrap();
}

/// The same with the `rber` policies and urgency: an RBER model of read disturb and
/// retention alone (`RBER = γ·PE·r + β·PE²·t`, PE = 1000) reaching half the hard-decode
/// limit after 4 reads or 400 ms; reclaim at margin 0.5 (urgent at 1.0: 8 reads), refresh
/// at 0.2 (scanned every ms). Blocks are reclaimed (many urgently: a due block waits
/// while its plane's previous job runs, and is read meanwhile) and refreshed by RBER while
/// reads, writes and GC run, every read is checked, and every unit ends with its last
/// write's version.
#[test]
fn timed_integrity_through_rber_jobs_and_urgency() {
    use ssdlab_core::config::{CellMode, ReclaimConfig, RefreshConfig};
    use ssdlab_core::flash::reliability::{RberParams, NS_PER_DAY};
    use ssdlab_core::policy::{reclaim, refresh};
    let mut c = common::tiny(2, 12, 4, 2, 3.0);
    let limit = c
        .device
        .reliability
        .hard_limit_rber(c.device.geometry.page_size_bytes);
    let half = 0.5 * limit / 1000.0;
    let p = RberParams {
        base_rber: 0.0,
        wear_coefficient: 0.0,
        // β·PE² (β < 1 must hold: a day is long).
        retention_coefficient: half / 1000.0 / (400e6 / NS_PER_DAY),
        retention_pe_exponent: 2.0,
        retention_days_exponent: 1.0,
        disturb_coefficient: half / 4.0,
        disturb_pe_exponent: 1.0,
        disturb_reads_exponent: 1.0,
        ..RberParams::default_for(CellMode::Tlc)
    };
    c.device.reliability.initial_pe_cycles = 1000;
    c.device.reliability.rber.tlc = p;
    // Reads never retry (the data of open blocks ages past the limit within the run); the
    // policies still see the model's RBER.
    c.device.reliability.enabled = false;
    c.ftl.read_reclaim = ReclaimConfig::Rber(reclaim::rber::Params {
        margin: 0.5,
        urgent_margin: 1.0,
    });
    c.ftl.refresh = RefreshConfig::Rber(refresh::rber::Params {
        margin: 0.2,
        urgent_margin: 0.0,
        scan_interval_ms: 1,
    });
    let mut sim = with_jobs(c, Mode::Timed);
    let units = sim.derived.logical_units as u64;
    let mut reqs = Vec::new();
    let mut seq = Vec::new();
    for i in 0..units * 40 {
        let lpn = (i * 7919) % units;
        let read = i % 2 == 0;
        reqs.push(req(if read { HostOp::Read } else { HostOp::Write }, lpn, 1));
        seq.push(if read {
            Op::Read(lpn as u32, 1)
        } else {
            Op::Write(lpn as u32, 1)
        });
    }
    reqs.push(flush());
    let reads = reqs.iter().filter(|r| r.op == HostOp::Read).count() as u64;
    let r = sim
        .run_workload_with(closed(reqs.clone(), 8), &mut NoProgress)
        .unwrap();
    common::assert_all_completed(&r, &reqs);
    let g = &r.gc;
    eprintln!(
        "rber jobs: {} reclaimed ({} by RBER), {} refreshed ({} by RBER), {} urgent",
        g.reclaimed_blocks,
        g.reclaimed_blocks_by_rber,
        g.refreshed_blocks,
        g.refreshed_blocks_by_rber,
        g.urgent_relocations
    );
    assert!(g.reclaimed_blocks > 10, "{}", g.reclaimed_blocks);
    assert_eq!(g.reclaimed_blocks_by_rber, g.reclaimed_blocks);
    assert!(g.refreshed_blocks > 0, "{}", g.refreshed_blocks);
    assert_eq!(g.refreshed_blocks_by_rber, g.refreshed_blocks);
    assert!(
        g.urgent_relocations > 0 && g.urgent_relocations < g.reclaimed_blocks + g.refreshed_blocks
    );
    assert_eq!(r.integrity.unwrap().checked_reads, reads);
    let want = oracle(&seq);
    for lpn in 0..units as u32 {
        assert_eq!(
            sim.ftl.flash_version(lpn),
            want.get(&lpn).copied(),
            "unit {lpn}"
        );
    }
    sim.ftl.check_invariants().unwrap();
}

#[test]
fn corrupted_slot_is_reported_with_history() {
    let mut sim = integrity_sim(1, 1, Mode::Functional);
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    d.submit(&req(HostOp::Write, 3, 1)).unwrap();
    d.submit(&req(HostOp::Write, 3, 1)).unwrap();
    let slot = d.ftl.media().slot_of(Lpn(3)).idx();
    d.ftl.corrupt().1.version[slot] = 1; // a stale version: as if the second write was lost
    let e = d.submit(&req(HostOp::Read, 3, 1)).unwrap_err();
    let SimError::Integrity(text) = e else {
        panic!("expected an integrity error, got {e}")
    };
    assert!(
        text.contains("unit 3 (byte offset 12288)")
            && text.contains("found version 1")
            && text.contains("version 2 was written last"),
        "{text}"
    );
    assert!(
        text.contains("host write v1") && text.contains("host write v2"),
        "{text}"
    );
}
