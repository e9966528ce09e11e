//! Functional mode collects victims through a bulk copy loop when a job needs nothing per
//! unit beyond the re-mapping (`copy_run_plain`), and through the general loop otherwise
//! (integrity versions, demand-based mapping, migration, injected failures). Both must
//! make the same copies: integrity mode (general loop) and plain mode (bulk loop) of the
//! same random work end in the same counts, time and placement of every unit.

use crate::common;
use ssdlab_core::flash::ids::Lpn;

use common::tiny;
use proptest::prelude::*;
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::Simulation;

/// Counts, serial time and the slot of every unit after `ops` (unit, trim?) on a device
/// of `planes` planes with `spp` units per page.
fn run(planes: u32, spp: u32, ops: &[(u32, bool)], integrity: bool) -> (String, u64, Vec<u32>) {
    let mut cfg = tiny(planes, 24, 8, spp, 0.4);
    cfg.integrity = integrity;
    let mut sim = Simulation::new(cfg).unwrap();
    let units = sim.derived.logical_units;
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    for &(u, trim) in ops {
        let lpn = u % units;
        if trim {
            d.flush().unwrap();
            d.ftl.trim(lpn, &mut d.clock).unwrap();
        } else {
            d.write_unit(lpn).unwrap();
        }
    }
    d.flush().unwrap();
    let time = d.clock.time_ns;
    d.ftl.check_invariants().unwrap();
    let slots = (0..units)
        .map(|l| sim.ftl.media().slot_of(Lpn(l)).0)
        .collect();
    // The RBER the reads saw depends on each read's time: the bulk loop issues a run's
    // reads at the run's start, the general loop one after another (their counts agree).
    let mut c = *sim.ftl.counters();
    c.reliability.rber_sum_e18 = 0;
    c.reliability.rber_max_e18 = 0;
    (format!("{c:?}"), time, slots)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn bulk_and_general_copy_loops_agree(
        planes in 1u32..3,
        spp in prop::sample::select(vec![1u32, 2, 4]),
        ops in prop::collection::vec((0u32..10_000, prop::bool::weighted(0.05)), 200..3000),
    ) {
        let plain = run(planes, spp, &ops, false);
        let general = run(planes, spp, &ops, true);
        prop_assert_eq!(plain, general);
    }
}

/// The bulk loop is the one that ran: GC happened in plain mode on this work.
#[test]
fn plain_work_collects_victims() {
    let ops: Vec<(u32, bool)> = (0..4000u32)
        .map(|i| (i.wrapping_mul(7919) % 10_000, false))
        .collect();
    let (counters, _, _) = run(2, 4, &ops, false);
    assert!(!counters.contains("gc_invocations: 0,"), "{counters}");
}
