//! One meaning of a host request for both drivers (`host::command`): on tiny cases the
//! functional and the timed mode issue the same NAND operations, by cause, and count the
//! same host work (buffer hits, unmapped units, read-modify-write reads) for the same
//! requests. Each write group ends with a flush, so both modes program the same pages.

use crate::common;
use ssdlab_core::config::Mode;
use ssdlab_core::sim::{NoProgress, Results};
use ssdlab_core::Simulation;
use ssdlab_workload::{HostOp, HostRequest};

fn bytes(op: HostOp, offset_bytes: u64, size_bytes: u64) -> HostRequest {
    HostRequest {
        tag: 0,
        placement_id: 0,
        arrival_ns: 0,
        op,
        offset_bytes,
        size_bytes,
        journal: None,
    }
}

fn run(mode: Mode, planes: u32, reqs: &[HostRequest]) -> Results {
    let mut c = common::tiny(planes, 8, 8, 4, 2.0);
    c.mode = mode;
    let mut sim = Simulation::new(c).unwrap();
    sim.run_workload_with(common::closed(reqs.to_vec(), 1), &mut NoProgress)
        .unwrap()
}

/// Writes of whole pages, partial writes over written and unwritten units (read-modify-
/// write of the written ones only), reads over flash and unmapped units, trims, flushes.
fn case() -> Vec<HostRequest> {
    use HostOp::*;
    let u = 4096;
    vec![
        bytes(Write, 0, 8 * u),
        common::flush(),
        // Units 7 (written: read first) and 8 (never written: no read), both partly covered.
        bytes(Write, 7 * u + 512, u),
        common::flush(),
        // Units 3..=5, both ends partly (written: read first); then 12 partly (never written).
        bytes(Write, 3 * u + 100, 2 * u),
        bytes(Write, 12 * u, 1024),
        common::flush(),
        bytes(Read, 0, 16 * u),
        bytes(Read, 5 * u, 3 * u + 7),
        bytes(Trim, 4 * u, 3 * u),
        bytes(Read, 3 * u, 5 * u),
        bytes(Write, 5 * u + 1, 10),
        common::flush(),
        bytes(Read, 0, 16 * u),
    ]
}

#[test]
fn both_modes_issue_the_same_nand_operations_by_cause() {
    for planes in [1, 2] {
        let reqs = case();
        let f = run(Mode::Functional, planes, &reqs);
        let t = run(Mode::Timed, planes, &reqs);
        common::assert_all_completed(&t, &reqs);
        let json = |r: &Results| {
            (
                serde_json::to_value(r.nand).unwrap(),
                serde_json::to_value(r.host.counters).unwrap(),
            )
        };
        assert_eq!(json(&f), json(&t), "{planes} plane(s)");
        // By hand: read-modify-write reads of units 7, 3 and 5 (not of 8 and 12, never
        // written, nor of 5 the second time: trimmed); host pages 0..4, 4..8, {7, 8}
        // padded, {3, 4, 5, 12} full, {5} padded.
        let h = f.host.counters;
        assert_eq!(h.rmw_reads, 3, "units 7, 3 and 5");
        assert_eq!(f.nand.programs.host, 5, "three full pages, two padded ones");
    }
}
