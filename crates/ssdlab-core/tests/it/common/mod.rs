//! Helpers shared by the integration tests.
#![allow(dead_code)]

use ssdlab_core::Config;
use ssdlab_workload::replay::VecSource;
use ssdlab_workload::{Arrival, Flow, HostOp, HostRequest, Workload};

/// A tiny device: `planes` planes on one die, `blocks` blocks of `pages` pages, page =
/// `spp` units of 4 KiB; functional mode; no preconditioning.
pub fn tiny(planes: u32, blocks: u32, pages: u32, spp: u32, op: f64) -> Config {
    let text = format!(
        r#"
seed = 3
mode = "functional"
[device]
over_provisioning_ratio = {op}
channel_rate_mb_per_s = 800
command_overhead_ns = 1000
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = {planes}
blocks_per_plane = {blocks}
pages_per_block = {pages}
page_size_bytes = {page}
mapping_unit_bytes = 4096
[ftl]
gc_soft_free_blocks = 2
gc_hard_free_blocks = 1
write_buffer_bytes = {buf}
"#,
        page = 4096 * spp,
        buf = 4096 * spp * planes * 4
    );
    Config::from_toml_str(&text, "tiny").unwrap()
}

pub fn req(op: HostOp, unit: u64, units: u64) -> HostRequest {
    HostRequest {
        tag: 0,
        placement_id: 0,
        arrival_ns: 0,
        op,
        offset_bytes: unit * 4096,
        size_bytes: units * 4096,
        journal: None,
    }
}

pub fn flush() -> HostRequest {
    HostRequest {
        tag: 0,
        placement_id: 0,
        arrival_ns: 0,
        op: HostOp::Flush,
        offset_bytes: 0,
        size_bytes: 0,
        journal: None,
    }
}

/// One closed-loop flow replaying `reqs` at queue depth `qd`.
pub fn closed(reqs: Vec<HostRequest>, qd: u32) -> Workload {
    Workload {
        flows: vec![Flow {
            name: "test".into(),
            arrival: Arrival::Closed { queue_depth: qd },
            source: Box::new(VecSource::new(reqs)),
        }],
        duration_ns: None,
        stats: Default::default(),
    }
}

/// One open-loop flow replaying `reqs` at their arrival times.
pub fn open(reqs: Vec<HostRequest>) -> Workload {
    Workload {
        flows: vec![Flow {
            name: "test".into(),
            arrival: Arrival::Open,
            source: Box::new(VecSource::new(reqs)),
        }],
        duration_ns: None,
        stats: Default::default(),
    }
}

/// The results audit of `r` found no figure that cannot be (every run of the core is
/// audited, strictly by default; this says so where a test builds results another way).
pub fn assert_audited(r: &ssdlab_core::sim::Results) {
    if let Some(e) = r.audit.internal_error() {
        panic!("{e}");
    }
}

/// Liveness of a timed run: every request of `reqs` completed and was measured (reads,
/// writes and flushes each have one latency sample per request); its audit is clean.
pub fn assert_all_completed(r: &ssdlab_core::sim::Results, reqs: &[HostRequest]) {
    assert_audited(r);
    let n = |op| reqs.iter().filter(|q| q.op == op).count() as u64;
    let l = r.latency_ns.as_ref().expect("a timed run");
    assert_eq!(
        (l.read.count, l.write.count, l.flush.count),
        (n(HostOp::Read), n(HostOp::Write), n(HostOp::Flush)),
        "requests completed (read, write, flush)"
    );
}

/// Deterministic pseudo-random numbers (xorshift), so a failing case is replayable.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
