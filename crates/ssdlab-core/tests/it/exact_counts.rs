//! Hand-checked operation counts on tiny devices.

use crate::common;
use ssdlab_core::flash::ids::{Lpn, SlotId};

use common::tiny;
use ssdlab_core::config::CellMode;
use ssdlab_core::flash::{Cause, CellState, OpKind};
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::Simulation;

/// 1 plane × 6 blocks × 4 pages, one unit per page, 8 logical units (OP 2.0), GC below 2 free
/// blocks, 1 kept for GC. The sequence and its expected effects are worked out by hand:
///
/// fill 0..8 → blocks 0 {0,1,2,3} and 1 {4,5,6,7} full, free pool [2,3,4,5].
/// write 0,1,4,5 → block 2 {0,1,4,5} full; block 0 valid {2,3}, block 1 valid {6,7}.
/// write 2 → opens block 3 (free 2: no GC); write 6 → block 3 page 1.
///   block 0 valid {3}, block 1 valid {7}.
/// write 0,1 → block 3 {2,6,0,1} full; block 2 valid {4,5}.
/// write 2 → opens block 4, free = 1 < 2 → GC. Candidates with 1 valid: blocks 0 and 1;
///   block 1 entered that bucket last (write 6 after write 2) so greedy takes it first:
///   copy unit 7 into GC block 5 (slot 20), erase block 1 → free [1] = 1, still < 2 →
///   victim block 0: copy unit 3 into block 5 page 1 (slot 21), erase → free = 2: stop.
#[test]
fn greedy_victims_and_copies_by_hand() {
    let mut sim = Simulation::new(tiny(1, 6, 4, 1, 2.0)).unwrap();
    assert_eq!(sim.derived.logical_units, 8);
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    for lpn in [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 4, 5, 2, 6, 0, 1] {
        d.write_unit(lpn).unwrap();
    }
    assert_eq!(d.ftl.counters().gc_invocations, 0);
    assert_eq!(
        d.ftl
            .media()
            .free_blocks(0, ssdlab_core::flash::ids::PlaneId(0)),
        2
    );
    d.write_unit(2).unwrap();
    let c = d.ftl.counters();
    assert_eq!(c.gc_invocations, 2);
    assert_eq!(c.gc_copied_units, 2);
    assert_eq!(c.nand.get(OpKind::Read, Cause::Gc), 2);
    assert_eq!(c.nand.get(OpKind::Program, Cause::Gc), 2);
    assert_eq!(c.nand.get(OpKind::Erase, Cause::Gc), 2);
    assert_eq!(c.nand.get(OpKind::Program, Cause::Host), 17);
    assert_eq!(
        d.ftl.media().slot_of(Lpn(7)),
        SlotId(20),
        "unit 7 moved first, to block 5 page 0"
    );
    assert_eq!(
        d.ftl.media().slot_of(Lpn(3)),
        SlotId(21),
        "unit 3 moved second, to block 5 page 1"
    );
    assert_eq!(d.ftl.erase_counts()[..6], [1, 1, 0, 0, 0, 0]);
    assert_eq!(
        d.ftl
            .media()
            .free_blocks(0, ssdlab_core::flash::ids::PlaneId(0)),
        2
    );
    // Serial time: 17 + 2 programs, 2 reads, 2 erases with the default TLC timing.
    let t = d.ftl.timing();
    let tlc = |kind| t.array_ns(kind, CellState::fresh(CellMode::Tlc));
    assert_eq!(
        d.clock.time_ns,
        19 * tlc(OpKind::Program) + 2 * tlc(OpKind::Read) + 2 * tlc(OpKind::Erase)
    );
    d.ftl.check_invariants().unwrap();
}

/// Pages of 4 units (1 plane × 7 blocks × 2 pages × 4 units, 16 logical units, GC below 3
/// free blocks): each victim's valid units are packed into pages of the GC frontier and
/// the remainder of a victim goes out padded. Only blocks with at most 8 − 4 valid units
/// (a page's worth of garbage) qualify as victims.
///
/// fill 0..16 → blocks 0 {0..7}, 1 {8..15}. write 0,1,2,3,8,9,10,11 → block 2 full;
/// block 0 valid {4,5,6,7}, block 1 valid {12..15}. write 4,5,12,13,0,1,2,3 → block 3 full
/// (opened at free 4 → 3, no GC); block 0 {6,7}, block 1 {14,15}, block 2 {8,9,10,11}.
/// write 8,9,10,6 → opens block 4 (free 2) → GC: block 0 {7} and block 2 {11} hold one
/// valid unit; block 0 entered that bucket last → victim: unit 7 → block 5 page 0 (slot 40,
/// 3 slots padding); erase → free 2 → victim block 2: unit 11 → block 5 page 1 (slot 44);
/// erase → free 3: stop.
#[test]
fn gc_packs_units_into_pages_and_pads_the_rest() {
    let mut c = tiny(1, 7, 2, 4, 2.5);
    c.ftl.gc_soft_free_blocks = 3;
    let mut sim = Simulation::new(c).unwrap();
    assert_eq!(sim.derived.logical_units, 16);
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    for lpn in (0..16).chain([0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 12, 13, 0, 1, 2, 3]) {
        d.write_unit(lpn).unwrap();
    }
    assert_eq!(&d.ftl.media().blocks().valid_units[..4], &[2, 2, 4, 8]);
    assert_eq!(d.ftl.counters().gc_invocations, 0);
    for lpn in [8, 9, 10, 6] {
        d.write_unit(lpn).unwrap();
    }
    let c = d.ftl.counters();
    assert_eq!(
        (c.gc_invocations, c.gc_copied_units, c.padding_units),
        (2, 2, 6)
    );
    assert_eq!(
        (
            c.nand.get(OpKind::Read, Cause::Gc),
            c.nand.get(OpKind::Program, Cause::Gc),
            c.nand.get(OpKind::Erase, Cause::Gc)
        ),
        (2, 2, 2)
    );
    assert_eq!(
        (
            d.ftl.media().slot_of(Lpn(7)),
            d.ftl.media().slot_of(Lpn(11))
        ),
        (SlotId(40), SlotId(44))
    );
    assert_eq!(&d.ftl.erase_counts()[..7], &[1, 0, 1, 0, 0, 0, 0]);
    d.ftl.check_invariants().unwrap();
}

/// A functional run ends as a timed run settles: the partial page is programmed, padded.
/// Three 4 KiB writes on a device of 16 KiB pages (4 units): one host program, one unit
/// of padding, WAF 4/3 — before, no program at all (WAF 0) and the three units lost to a
/// later phase. The same in the timed mode.
#[test]
fn a_functional_run_programs_its_last_partial_page() {
    use ssdlab_core::config::Mode;
    use ssdlab_workload::replay::VecSource;
    use ssdlab_workload::{Arrival, Flow, HostOp, HostRequest, Workload};
    let req = |op, lpn: u64| HostRequest {
        tag: 0,
        placement_id: 0,
        arrival_ns: 0,
        op,
        offset_bytes: lpn * 4096,
        size_bytes: 4096,
        journal: None,
    };
    let wl = |reqs: Vec<HostRequest>| Workload {
        flows: vec![Flow {
            name: "t".into(),
            arrival: Arrival::Closed { queue_depth: 1 },
            source: Box::new(VecSource::new(reqs)),
        }],
        duration_ns: None,
        stats: Default::default(),
    };
    for mode in [Mode::Functional, Mode::Timed] {
        let mut c = tiny(2, 16, 8, 4, 1.0);
        c.mode = mode;
        let mut sim = Simulation::new(c).unwrap();
        let writes = (0..3).map(|l| req(HostOp::Write, l)).collect();
        let r = sim
            .run_workload_with(wl(writes), &mut ssdlab_core::NoProgress)
            .unwrap();
        assert_eq!(r.nand.programs.host, 1, "{mode:?}");
        assert_eq!(r.waf, 1.333333, "{mode:?} (rounded to 6 places)");
        // A later phase reads the three units from flash.
        let reads = (0..3).map(|l| req(HostOp::Read, l)).collect();
        let r = sim
            .run_workload_with(wl(reads), &mut ssdlab_core::NoProgress)
            .unwrap();
        assert_eq!(r.nand.reads.host, 3, "{mode:?}");
        assert_eq!(r.host.counters.unmapped_read_units, 0, "{mode:?}");
    }
}
