//! Each selectable GC victim and free-block policy changes behaviour in the way its
//! definition says (a test that would fail if the policy were a stub of another).

use crate::common;

use common::tiny;
use ssdlab_core::config::GcConfig;
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::{Config, Simulation};

/// 1 plane × 8 blocks × 4 pages, one unit per page, 12 logical units.
fn device(victim: GcConfig) -> Config {
    let mut c = tiny(1, 8, 4, 1, 32.0 / 12.0 - 1.0);
    c.ftl.gc = victim;
    c
}

/// Victims of the first GC, in the order they were erased (they join the FIFO free pool
/// in that order).
///
/// fill 0..12 → blocks 0 {0..3}, 1 {4..7}, 2 {8..11}; rewrite 0,1,4,5 → block 3; rewrite
/// 6,0,1,0 → block 4; four writes of unit 8 → block 5 (1 valid). The first write of 9
/// opens block 6 (free 2 → 1 < 2) → GC collects two victims. At that moment (25 pages
/// programmed) the full blocks are, as (valid units, closed at page): block 0 (2, 4),
/// block 1 (1, 8), block 2 (3, 12), block 3 (2, 16), block 4 (3, 20), block 5 (1, 24).
/// - fifo: oldest first → 0, then 1;
/// - greedy: fewest valid, ties to the block that entered its bucket last → 5, then 1;
/// - cost-benefit, score (U − v)·(age + 1)/(U + v), U = 4: block 1: 3·18/5 = 10.8,
///   block 0: 2·22/6 = 7.3, block 3: 2·10/6, block 5: 3·2/5 → 1; then (one page later)
///   block 0: 2·23/6 = 7.7 beats block 5: 3·3/5 → 0.
fn first_victims(victim: GcConfig) -> Vec<u32> {
    let mut sim = Simulation::new(device(victim)).unwrap();
    assert_eq!(sim.derived.logical_units, 12);
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    for lpn in (0..12).chain([0, 1, 4, 5, 6, 0, 1, 0, 8, 8, 8, 8, 9]) {
        d.write_unit(lpn).unwrap();
    }
    d.ftl.check_invariants().unwrap();
    d.ftl
        .media()
        .plane_state(0, ssdlab_core::flash::ids::PlaneId(0))
        .free
        .blocks()
        .into_iter()
        .map(|b| b.0)
        .filter(|&b| d.ftl.erase_counts()[b as usize] > 0)
        .collect()
}

#[test]
fn victim_policies_choose_as_defined() {
    assert_eq!(
        first_victims(GcConfig::Fifo(Default::default())),
        vec![0, 1]
    );
    assert_eq!(
        first_victims(GcConfig::Greedy(Default::default())),
        vec![5, 1]
    );
    assert_eq!(
        first_victims(GcConfig::CostBenefit(Default::default())),
        vec![1, 0]
    );
}

#[test]
fn random_victims_depend_on_the_seed_and_are_always_eligible() {
    let mut victims = std::collections::BTreeSet::new();
    for seed in 0..12 {
        let mut c = device(GcConfig::Random(Default::default()));
        c.seed = seed;
        let mut sim = Simulation::new(c).unwrap();
        let mut d = FunctionalDriver::new(&mut sim.ftl);
        for i in 0..300u32 {
            d.write_unit((i * 7 + i / 5) % 12).unwrap();
        }
        d.ftl.check_invariants().unwrap();
        let ec: Vec<u32> = d.ftl.erase_counts().to_vec();
        victims.insert(ec);
    }
    assert!(
        victims.len() > 3,
        "different seeds pick different victims: {} distinct wear patterns",
        victims.len()
    );
}
