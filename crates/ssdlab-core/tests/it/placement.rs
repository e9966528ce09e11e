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
