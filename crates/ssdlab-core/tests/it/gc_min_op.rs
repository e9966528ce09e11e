//! At the smallest OP that validation accepts, GC never runs out of free blocks under
//! sustained random writes, in both modes; just below it, validation refuses.

use crate::common;

use common::{closed, flush, req};
use rand::{Rng, SeedableRng};
use ssdlab_core::config::Mode;
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::HostOp;

fn geometry(planes: u32, blocks: u32, pages: u32, spp: u32) -> Config {
    // OP 3: a valid start for every geometry here (between its minimum and its maximum,
    // where the logical space still fills a block per plane), replaced by the minimum.
    let mut c = common::tiny(planes, blocks, pages, spp, 3.0);
    // At the minimum OP the WAF is huge; keep wear-out out of this test.
    c.device.timing.tlc.endurance_pe_cycles = u32::MAX;
    c
}

/// The config at exactly the minimum OP its geometry accepts.
fn at_minimum(mut c: Config) -> Config {
    let min = c.validate().unwrap().min_over_provisioning_ratio;
    c.device.over_provisioning_ratio = min;
    let d = c.validate().unwrap();
    // One more logical unit than the minimum allows is refused, naming the key.
    let mut below = c.clone();
    below.device.over_provisioning_ratio =
        d.geometry.slots as f64 / (d.logical_units + 1) as f64 - 1.0;
    let e = below.validate().unwrap_err().to_string();
    assert!(e.starts_with("device.over_provisioning_ratio"), "{e}");
    assert!(d.logical_units > 0);
    c
}

#[test]
fn functional_random_writes_at_minimum_op() {
    for (planes, blocks, pages, spp) in [(1, 8, 4, 1), (2, 10, 4, 2), (4, 12, 8, 4)] {
        let c = at_minimum(geometry(planes, blocks, pages, spp));
        let mut sim = Simulation::new(c).unwrap();
        let units = sim.derived.logical_units;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
        let mut d = FunctionalDriver::new(&mut sim.ftl);
        for lpn in 0..units {
            d.write_unit(lpn).unwrap();
        }
        for _ in 0..units * 40 {
            d.write_unit(rng.gen_range(0..units)).unwrap();
        }
        d.flush().unwrap();
        d.ftl.check_invariants().unwrap();
        assert!(d.ftl.counters().gc_invocations > 0);
        assert_eq!(
            d.ftl.media().mapped_units(),
            units as u64,
            "{planes}x{blocks}x{pages}x{spp}"
        );
    }
}

#[test]
fn timed_random_writes_at_minimum_op() {
    let mut c = at_minimum(geometry(2, 10, 4, 2));
    c.mode = Mode::Timed;
    let mut sim = Simulation::new(c).unwrap();
    let units = sim.derived.logical_units as u64;
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(4);
    let mut reqs: Vec<_> = (0..units).map(|u| req(HostOp::Write, u, 1)).collect();
    reqs.extend((0..units * 30).map(|_| {
        req(
            if rng.gen_bool(0.3) {
                HostOp::Read
            } else {
                HostOp::Write
            },
            rng.gen_range(0..units),
            1,
        )
    }));
    reqs.push(flush());
    let r = sim
        .run_workload_with(closed(reqs, 8), &mut NoProgress)
        .unwrap();
    assert!(r.gc.invocations > 0);
    sim.ftl.check_invariants().unwrap();
    assert_eq!(sim.ftl.media().mapped_units(), units);
}
