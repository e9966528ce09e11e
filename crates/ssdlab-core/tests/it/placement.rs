//! Functional mode's plane choice is a fast approximation of timed mode's: periodic
//! multi-stream writers do not alias with it.

use crate::common::{closed, flush};
use ssdlab_core::sim::NoProgress;
use ssdlab_core::{Config, Simulation};
use ssdlab_workload::{HostOp, HostRequest};

/// 8 planes (2 channels × 2 chips × 2 planes), 8 KiB pages of two units.
fn device(mode: &str) -> Config {
    let text = format!(
        r#"
seed = 7
mode = "{mode}"
[device]
over_provisioning_ratio = 0.25
[device.geometry]
channels = 2
chips_per_channel = 2
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 32
pages_per_block = 32
page_size_bytes = 8192
mapping_unit_bytes = 4096
[ftl]
gc_soft_free_blocks = 3
gc_hard_free_blocks = 1
write_buffer_bytes = 131072
"#
    );
    Config::from_toml_str(&text, "placement").unwrap()
}

/// Four writers, each sequential over a zone of its own (a tenth, two, three and four
/// tenths of the logical space: each its own overwrite period), in strict rotation one
/// page-sized request at a time, until `units` units are written.
fn rotation(logical_units: u64, units: u64) -> Vec<HostRequest> {
    let mut zones = [(0u64, 0u64); 4];
    let mut start = 0;
    for (w, z) in zones.iter_mut().enumerate() {
        let len = logical_units * (w as u64 + 1) / 10 / 2 * 2; // whole pages
        *z = (start, len);
        start += len;
    }
    let rounds = units / 8;
    let mut reqs = Vec::with_capacity(4 * rounds as usize + 1);
    for i in 0..rounds {
        for &(start, len) in &zones {
            reqs.push(HostRequest {
                tag: 0,
                placement_id: 0,
                arrival_ns: 0,
                op: HostOp::Write,
                offset_bytes: (start + (i * 2) % len) * 4096,
                size_bytes: 8192,
                journal: None,
            });
        }
    }
    reqs.push(flush());
    reqs
}

fn waf(mode: &str) -> f64 {
    let mut sim = Simulation::new(device(mode)).unwrap();
    let units = sim.ftl.logical_units() as u64;
    let r = sim
        .run_workload_with(closed(rotation(units, 20 * units), 32), &mut NoProgress)
        .unwrap();
    sim.ftl.check_invariants().unwrap();
    r.waf
}

/// Four writers in strict rotation: functional WAF within 5 % of timed (a fixed plane
/// rotation gives each writer a plane of its own in functional mode: a far lower WAF).
#[test]
fn rotating_writers_get_the_timed_waf_in_functional_mode() {
    let (f, t) = (waf("functional"), waf("timed"));
    eprintln!("functional WAF {f:.3}, timed WAF {t:.3}");
    assert!(
        (f - t).abs() <= 0.05 * t,
        "functional WAF {f:.3}, timed {t:.3}"
    );
}

/// `small`'s device in timed mode (4 dies, 8 planes) with `ftl.die_affine_group_dies = k`,
/// random 70/30 at QD 8 (GC runs), and its results.json.
fn affine_json(k: u32) -> serde_json::Value {
    let mut c = device("timed");
    c.ftl.die_affine_group_dies = k;
    c.workload =
        ssdlab_workload::WorkloadConfig::Synthetic(ssdlab_workload::synthetic::SyntheticConfig {
            read_percent: 30.0,
            block_size_bytes: 4096,
            queue_depth: 8,
            requests: 6000,
            ..Default::default()
        });
    c.precondition.enabled = true;
    let mut v = serde_json::to_value(ssdlab_core::run(c, &mut NoProgress).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("config");
    v
}

/// One die group of every die is the default's stripe: the same results, byte for byte;
/// a group per die places differently (and still completes every request).
#[test]
fn one_die_group_of_every_die_is_the_default_stripe() {
    let off = affine_json(0);
    assert!(off["nand"]["erases"]["gc"].as_u64().unwrap() > 0, "GC ran");
    assert_eq!(off, affine_json(4));
    let per_die = affine_json(1);
    assert_eq!(per_die["host"]["requests"], off["host"]["requests"]);
    assert_ne!(per_die["latency_ns"], off["latency_ns"]);
}

/// Two dies of one plane (16 blocks of 8 pages of one unit; GC below 9 free blocks, a 4-page
/// write buffer, erases of 5 × 5 ms), written one page at a time with a flush after each
/// (pages alternate dies 0, 1, …): a fill of units 0..96 (even units on die 0), then
/// rewrites of even units 0, 2, …, 32, whose last opens die 0's block that starts GC
/// there: die 0 erases a block its rewrites emptied (die 1 holds no garbage, so no GC).
/// 2 ms into that erase a burst of 10 single-page writes arrives, of even units (their
/// old copies on die 0: no garbage on die 1). Without die affinity die 0 takes two
/// (queued behind the erase) and die 1 the rest: every write completes while die 0
/// still erases. With a group per die every other page is die 0's: its third waits, the
/// buffer fills behind it, and the burst's last writes wait for the erase's end.
#[test]
fn a_die_held_by_an_erase_delays_the_writes_assigned_to_it() {
    use ssdlab_workload::HostOp;
    const MS: u64 = 1_000_000;
    let run = |k: u32| {
        let mut c = crate::common::tiny(1, 16, 8, 1, 1.0);
        c.mode = ssdlab_core::config::Mode::Timed;
        c.device.geometry.dies_per_chip = 2;
        c.ftl.gc_soft_free_blocks = 9;
        c.ftl.write_buffer_bytes = 4 * 4096;
        c.ftl.die_affine_group_dies = k;
        let mut w = Vec::new();
        let mut at = 0;
        let units = (0..96).chain((0..=32).step_by(2));
        for u in units {
            let mut r = crate::common::req(HostOp::Write, u, 1);
            let mut f = flush();
            (r.arrival_ns, f.arrival_ns) = (at, at);
            w.extend([r, f]);
            at += 2 * MS;
        }
        let burst = at;
        for u in (34..54).step_by(2) {
            let mut r = crate::common::req(HostOp::Write, u, 1);
            r.arrival_ns = burst;
            w.push(r);
        }
        let mut sim = Simulation::new(c).unwrap();
        sim.trace_completions = true;
        sim.run_workload_with(crate::common::open(w), &mut NoProgress)
            .unwrap();
        sim.ftl.check_invariants().unwrap();
        assert_eq!(sim.erase_trace.len(), 1, "one erase");
        let e = sim.erase_trace[0].clone();
        assert_eq!(e.die, 0);
        assert!(
            e.start_ns < burst && burst < e.end_ns,
            "{e:?} burst {burst}"
        );
        let last = sim
            .completions
            .iter()
            .filter(|c| c.op == HostOp::Write && c.submit_ns == burst)
            .map(|c| c.complete_ns)
            .collect::<Vec<_>>();
        assert_eq!(last.len(), 10);
        (last.into_iter().max().unwrap(), e.end_ns)
    };
    let (off, end) = run(0);
    assert!(
        off < end,
        "off: last burst write at {off}, erase ends at {end}"
    );
    let (per_die, end) = run(1);
    assert!(
        per_die > end,
        "per die: last burst write at {per_die}, erase ends at {end}"
    );
}
