//! Functional preconditioning: fill, random overwrites, the steady-state stop, and a timed
//! run that continues from the preconditioned state with its own figures.

use crate::common;

use ssdlab_core::config::Mode;
use ssdlab_core::{run, NoProgress, Simulation};

#[test]
fn fill_overwrite_and_steady_state_stop() {
    let mut c = common::tiny(2, 32, 8, 2, 0.3);
    c.precondition.enabled = true;
    c.precondition.random_overwrite_capacity_multiple = 20.0;
    c.precondition.steady_state_waf_tolerance = 0.05;
    c.precondition.steady_state_window_capacity_multiple = 1.0;
    let mut sim = Simulation::new(c.clone()).unwrap();
    let units = sim.derived.logical_units as u64;
    sim.precondition(&mut NoProgress).unwrap();
    let p = sim.precondition_summary().unwrap().clone();
    assert_eq!(p.sequential_fill_units, units);
    assert_eq!(
        p.steady_state_reached,
        Some(true),
        "WAF settles within 5% long before 20 capacities"
    );
    assert!(
        p.random_overwrite_units < 20 * units && p.random_overwrite_units.is_multiple_of(units)
    );
    assert!(p.waf > 1.0 && p.nand.erases.gc > 0);
    assert_eq!(sim.ftl.media().mapped_units(), units);

    // Without the tolerance the whole volume is written.
    c.precondition.steady_state_waf_tolerance = 0.0;
    c.precondition.random_overwrite_capacity_multiple = 2.0;
    let mut sim = Simulation::new(c).unwrap();
    sim.precondition(&mut NoProgress).unwrap();
    let p = sim.precondition_summary().unwrap();
    assert_eq!(
        p.steady_state_reached, None,
        "not reported when not asked for"
    );
    assert_eq!(p.random_overwrite_units, 2 * units);
}

/// A tight tolerance with small windows used to stop after 0.2 capacities, before any GC
/// had run (WAF 1.0 in two windows) and call that steady. Detection now waits for one
/// capacity of overwrites and a GC erase on every plane.
#[test]
fn steady_state_is_not_declared_before_gc_has_run() {
    let mut c = common::tiny(2, 32, 8, 2, 0.3);
    c.precondition.enabled = true;
    c.precondition.random_overwrite_capacity_multiple = 5.0;
    c.precondition.steady_state_waf_tolerance = 0.01;
    c.precondition.steady_state_window_capacity_multiple = 0.1;
    let mut sim = Simulation::new(c).unwrap();
    let units = sim.derived.logical_units as u64;
    sim.precondition(&mut NoProgress).unwrap();
    let p = sim.precondition_summary().unwrap();
    assert!(
        p.random_overwrite_units > units,
        "stopped after {} of {units} units",
        p.random_overwrite_units
    );
    assert!(p.nand.erases.gc >= 2, "GC ran on both planes");
    assert!(
        p.waf > 1.2,
        "steady state is past the transient: WAF {}",
        p.waf
    );
}

#[test]
fn measured_figures_exclude_preconditioning() {
    let mut c = common::tiny(2, 32, 8, 2, 0.3);
    c.mode = Mode::Timed;
    c.precondition.enabled = true;
    c.workload = toml::from_str(
        "kind = \"synthetic\"\nread_percent = 100.0\nrequests = 500\nqueue_depth = 4",
    )
    .unwrap();
    let r = run(c, &mut NoProgress).unwrap();
    let p = r.precondition.as_ref().unwrap();
    assert!(p.nand.programs.total > 0);
    // The measured phase only reads: no programs, no erases, every read hits NAND.
    assert_eq!(
        (
            r.nand.programs.total,
            r.nand.erases.total,
            r.host.counters.reads
        ),
        (0, 0, 500)
    );
    assert_eq!(r.nand.reads.host, 500);
    assert_eq!(r.host.counters.unmapped_read_units, 0);
}
