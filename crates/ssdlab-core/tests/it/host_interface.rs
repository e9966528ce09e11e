//! The host interface (`[device.host_interface]`): the PCIe link's timing exact on hand-
//! checked cases, link-bound throughput, NVMe arbitration order, splitting at the maximum
//! data transfer size, full duplex, and errors naming their key.

use crate::common;
use ssdlab_core::config::{Config, HostInterfaceConfig, Mode};
use ssdlab_core::policy::arbitration::{
    round_robin, weighted_round_robin, ArbitrationConfig, Priority,
};
use ssdlab_core::sim::{NoProgress, Results};
use ssdlab_core::Simulation;
use ssdlab_workload::replay::VecSource;
use ssdlab_workload::{Arrival, Flow, HostOp, HostRequest, Workload};

/// ⌈wire bytes · 65 / (64 · lanes)⌉: a PCIe 3.0 link's time for `wire` bytes alone (ns).
fn gen3_ns(wire: u64, lanes: u64) -> u64 {
    (wire * 65).div_ceil(64 * lanes)
}

fn timed(planes: u32, hi: HostInterfaceConfig) -> Config {
    let mut c = common::tiny(planes, 8, 8, 4, 2.0);
    c.mode = Mode::Timed;
    c.device.host_interface = Some(hi);
    c
}

fn run(c: &Config, w: Workload) -> (Results, Vec<ssdlab_core::sim::timed::Completion>) {
    let mut sim = Simulation::new(c.clone()).unwrap();
    sim.precondition(&mut NoProgress).unwrap();
    sim.trace_completions = true;
    let r = sim.run_workload_with(w, &mut NoProgress).unwrap();
    (r, std::mem::take(&mut sim.completions))
}

fn flows(per_flow: Vec<Vec<HostRequest>>, qd: u32) -> Workload {
    Workload {
        flows: per_flow
            .into_iter()
            .enumerate()
            .map(|(i, reqs)| Flow {
                name: format!("f{i}"),
                arrival: Arrival::Closed { queue_depth: qd },
                source: Box::new(VecSource::new(reqs)),
            })
            .collect(),
        duration_ns: None,
        stats: Default::default(),
    }
}

/// One 4 KiB read of a never-written unit over PCIe 3.0 x4 (MPS 256, 26 bytes per TLP),
/// hand-checked: doorbell 30 B down (8 ns), entry fetch request 26 B up (7 ns), the 64 B
/// entry in one TLP down (90 B, 23 ns), `command_ns` 1,000, the buffer access 1,000
/// (unmapped: no flash), then 4,096 B in 16 TLPs plus the completion entry (42 B) and
/// MSI-X (30 B) up: 4,584 B, 1,164 ns. Total 3,202 ns. Without the section: 1,000 ns.
#[test]
fn one_read_crosses_the_link_step_by_step() {
    let hi = HostInterfaceConfig::default();
    assert_eq!(
        (hi.lanes, hi.max_payload_bytes, hi.tlp_overhead_bytes),
        (4, 256, 26)
    );
    let c = timed(1, hi);
    let (r, done) = run(&c, common::closed(vec![common::req(HostOp::Read, 3, 1)], 1));
    assert_eq!(
        [
            gen3_ns(30, 4),
            gen3_ns(26, 4),
            gen3_ns(90, 4),
            gen3_ns(4584, 4)
        ],
        [8, 7, 23, 1164]
    );
    assert_eq!(done[0].latency_ns(), 8 + 7 + 23 + 1000 + 1000 + 1164);
    let hs = r.host_interface.unwrap();
    assert_eq!((hs.down.wire_bytes, hs.up.wire_bytes), (30 + 90, 26 + 4584));
    assert_eq!(hs.link, "PCIe 3.0 x4");
    let mut plain = c.clone();
    plain.device.host_interface = None;
    let (r, done) = run(
        &plain,
        common::closed(vec![common::req(HostOp::Read, 3, 1)], 1),
    );
    // Without the link: the buffer access, then the data over the host data path
    // (`device.host_transfer_mb_per_s`: 4 KiB at 7877 MB/s).
    assert_eq!(done[0].latency_ns(), 1000 + 520);
    assert!(r.host_interface.is_none());
}

/// A read from flash adds the NAND read to the same steps; a 4 KiB write moves its data
/// down (read requests up beside it) before the buffer takes it.
#[test]
fn reads_and_writes_pay_their_data_on_the_link() {
    let hi = HostInterfaceConfig {
        command_ns: 500,
        ..Default::default()
    };
    let mut c = timed(1, hi);
    c.precondition.enabled = true;
    c.precondition.sequential_fill = true;
    c.precondition.random_overwrite_capacity_multiple = 0.0;
    let t = c.device.timing_model();
    // The NAND read: command cycles, sensing, the channel transfer.
    let tlc = ssdlab_core::flash::CellState::fresh(ssdlab_core::config::CellMode::Tlc);
    let tr = t.array_ns(ssdlab_core::flash::OpKind::Read, tlc);
    let flash = c.device.command_overhead_ns + tr + t.transfer_ns(4096);
    let (_, done) = run(&c, common::closed(vec![common::req(HostOp::Read, 3, 1)], 1));
    assert_eq!(done[0].latency_ns(), 8 + 7 + 23 + 500 + flash + 1164);
    // Write: doorbell, fetch, processing, then 4,096 B + 16 TLPs = 4,512 B down (1,146
    // ns; its read requests, 8 × 26 B, go up at the same time), the buffer, the
    // completion (72 B up, 19 ns).
    let (r, done) = run(
        &c,
        common::closed(vec![common::req(HostOp::Write, 3, 1)], 1),
    );
    assert_eq!(gen3_ns(4512, 4), 1146);
    assert_eq!(
        done[0].latency_ns(),
        8 + 7 + 23 + 500 + 1146 + 1000 + gen3_ns(72, 4)
    );
    let hs = r.host_interface.unwrap();
    assert_eq!(
        (hs.down.wire_bytes, hs.up.wire_bytes),
        (30 + 90 + 4512, 26 + 8 * 26 + 72)
    );
}

/// Flash faster than its link: 64 KiB reads at queue depth 32 over one PCIe 3.0 lane.
/// Every read puts the same bytes on the up direction (entry fetch request, 64 KiB in
/// 256 TLPs, completion entry and MSI-X: 72,290 B), the up direction's busy time is
/// those bytes over 64/65 B per ns, and the link is the bottleneck: busy for nearly the
/// whole run, the read rate within 1 % of the link's payload rate.
#[test]
fn throughput_is_link_bound_when_the_flash_is_faster() {
    let hi = HostInterfaceConfig {
        lanes: 1,
        command_ns: 100,
        ..Default::default()
    };
    let mut c = timed(4, hi);
    c.device.channel_rate_mb_per_s = 100_000;
    c.device.timing.tlc.read_ns = 1_000;
    c.precondition.enabled = true;
    c.precondition.sequential_fill = true;
    c.precondition.random_overwrite_capacity_multiple = 0.0;
    let logical_units = Simulation::new(c.clone()).unwrap().derived.logical_units as u64;
    let n = 200u64;
    let reqs: Vec<_> = (0..n)
        .map(|i| common::req(HostOp::Read, (i * 16) % (logical_units - 16), 16))
        .collect();
    let (r, done) = run(&c, common::closed(reqs, 32));
    assert_eq!(done.len() as u64, n);
    let per_read = 26 + 65_536 + 256 * 26 + 72;
    assert_eq!(per_read, 72_290);
    let hs = r.host_interface.unwrap();
    assert_eq!(hs.up.wire_bytes, n * per_read);
    let busy_ns = gen3_ns(n * per_read, 1);
    let t = r.host.sim_time_ns;
    assert!(hs.up.utilization >= 0.99, "{hs:?}");
    assert!(
        (hs.up.utilization - busy_ns as f64 / t as f64).abs() < 1e-5,
        "busy {busy_ns} of {t} ns: {hs:?}"
    );
    // Payload rate of the link for this transfer mix: 64 KiB per 72,290 wire bytes.
    let link_mb_per_s = 65_536.0 / (per_read as f64 * 65.0 / 64.0) * 1e3;
    let got = r.host.read_mb_per_s;
    assert!(
        got <= link_mb_per_s && got >= 0.99 * link_mb_per_s,
        "{got} vs {link_mb_per_s}"
    );
}

/// One command slot: the controller fetches in the arbiter's order, so commands complete
/// in it. Three flows with three reads each, all submitted at once: the doorbells go down
/// one after another, flow 0's first, and its command takes the free slot; the other
/// eight wait in their queues for the arbiter.
#[test]
fn arbitration_decides_which_queue_is_fetched_next() {
    let order = |arb: ArbitrationConfig, classes: Vec<Priority>| {
        let hi = HostInterfaceConfig {
            max_commands_in_flight: 1,
            arbitration: arb,
            flow_priority: classes,
            ..Default::default()
        };
        let c = timed(1, hi);
        let per_flow = (0..3)
            .map(|f| {
                (0..3)
                    .map(|k| common::req(HostOp::Read, f * 3 + k, 1))
                    .collect()
            })
            .collect();
        let (_, done) = run(&c, flows(per_flow, 3));
        done.iter().map(|d| d.flow).collect::<Vec<_>>()
    };
    let rr = |burst| ArbitrationConfig::RoundRobin(round_robin::Params { burst });
    assert_eq!(order(rr(1), vec![]), [0, 1, 2, 0, 1, 2, 0, 1, 2]);
    assert_eq!(order(rr(2), vec![]), [0, 0, 1, 1, 2, 2, 0, 1, 2]);
    let wrr = ArbitrationConfig::WeightedRoundRobin(weighted_round_robin::Params {
        burst: 1,
        high_weight: 2,
        medium_weight: 1,
        low_weight: 1,
    });
    use Priority::*;
    // Flow 0's first command, then urgent first; then high twice per low once.
    assert_eq!(
        order(wrr, vec![Low, High, Urgent]),
        [0, 2, 2, 2, 1, 1, 0, 1, 0]
    );
}

/// A 1 MiB read with a 128 KiB maximum transfer size is 8 commands and one request (one
/// latency, one count); a 130 KiB write is two commands.
#[test]
fn requests_above_the_maximum_transfer_size_are_split() {
    let hi = HostInterfaceConfig {
        max_data_transfer_bytes: 131_072,
        ..Default::default()
    };
    let mut c = common::tiny(2, 64, 16, 4, 2.0);
    c.mode = Mode::Timed;
    c.device.host_interface = Some(hi);
    let reqs = vec![
        common::req(HostOp::Read, 0, 256),
        HostRequest {
            size_bytes: 130 * 1024,
            ..common::req(HostOp::Write, 0, 1)
        },
    ];
    let (r, done) = run(&c, common::closed(reqs, 1));
    assert_eq!(done.len(), 2);
    assert_eq!(
        (done[0].size_bytes, done[1].size_bytes),
        (1 << 20, 130 * 1024)
    );
    let hs = r.host_interface.unwrap();
    assert_eq!((hs.commands, hs.split_requests), (10, 2));
    let h = &r.host.counters;
    assert_eq!(
        (h.reads, h.writes, h.read_bytes, h.write_bytes),
        (1, 1, 1 << 20, 130 * 1024)
    );
    assert_eq!(hs.per_flow[0].read_bytes, 1 << 20);
    // Each part's doorbell, entry fetch and completion cross the link: 8 + 2 of each.
    assert_eq!(hs.down.wire_bytes, 10 * (30 + 90) + (130 * 1024 + 520 * 26));
}

/// Full duplex: a 1 MiB write (data down) and a 1 MiB read (data up) together take about
/// as long as the longer alone, not the sum.
#[test]
fn the_two_directions_carry_data_at_once() {
    let hi = HostInterfaceConfig {
        lanes: 1,
        ..Default::default()
    };
    let mut c = common::tiny(2, 64, 16, 4, 2.0);
    c.mode = Mode::Timed;
    c.device.channel_rate_mb_per_s = 100_000;
    c.device.timing.tlc.read_ns = 1_000;
    c.ftl.write_buffer_bytes = 4 << 20;
    c.device.host_interface = Some(hi);
    c.precondition.enabled = true;
    c.precondition.sequential_fill = true;
    c.precondition.random_overwrite_capacity_multiple = 0.0;
    let read = || vec![common::req(HostOp::Read, 0, 256)];
    let write = || vec![common::req(HostOp::Write, 512, 256)];
    let last = |w| run(&c, w).1.iter().map(|d| d.complete_ns).max().unwrap();
    let (r_alone, w_alone) = (last(flows(vec![read()], 1)), last(flows(vec![write()], 1)));
    let both = last(flows(vec![read(), write()], 1));
    let data_ns = gen3_ns(1 << 20, 1);
    assert!(
        r_alone > data_ns && w_alone > data_ns,
        "{r_alone} {w_alone}"
    );
    assert!(
        both <= r_alone.max(w_alone) + r_alone.min(w_alone) / 20,
        "together {both} ns, alone {r_alone} and {w_alone} ns"
    );
}

/// Bad keys name themselves; priorities need weighted round robin and at most a class per
/// flow.
#[test]
fn bad_host_interface_settings_name_their_key() {
    let err = |edit: &dyn Fn(&mut HostInterfaceConfig)| {
        let mut hi = HostInterfaceConfig::default();
        edit(&mut hi);
        let c = timed(1, hi);
        c.validate().err().map(|e| e.to_string())
    };
    type Edit<'a> = &'a dyn Fn(&mut HostInterfaceConfig);
    let cases: [(Edit, &str); 9] = [
        (
            &|h| h.pcie_generation = 6,
            "device.host_interface.pcie_generation",
        ),
        (&|h| h.lanes = 3, "device.host_interface.lanes"),
        (
            &|h| h.max_payload_bytes = 100,
            "device.host_interface.max_payload_bytes",
        ),
        (
            &|h| h.max_commands_in_flight = 0,
            "device.host_interface.max_commands_in_flight",
        ),
        (
            &|h| h.max_data_transfer_bytes = 512,
            "device.host_interface.max_data_transfer_bytes",
        ),
        // NVMe's MDTS is 2^n memory pages: 5000 and 6144 would split 128 KiB reads into
        // parts that are not unit-aligned.
        (
            &|h| h.max_data_transfer_bytes = 5000,
            "device.host_interface.max_data_transfer_bytes: 5000: NVMe's MDTS is a power of two times the 4 KiB memory page",
        ),
        (
            &|h| h.max_data_transfer_bytes = 6144,
            "device.host_interface.max_data_transfer_bytes: 6144:",
        ),
        (
            &|h| h.arbitration = ArbitrationConfig::RoundRobin(round_robin::Params { burst: 3 }),
            "device.host_interface.arbitration.burst",
        ),
        (
            &|h| h.flow_priority = vec![Priority::High],
            "weighted-round-robin",
        ),
    ];
    for (edit, key) in cases {
        let e = err(edit).expect(key);
        assert!(e.contains(key), "{e}");
    }
    // More classes than flows: an error at run time, before any request.
    let hi = HostInterfaceConfig {
        arbitration: ArbitrationConfig::WeightedRoundRobin(Default::default()),
        flow_priority: vec![Priority::High, Priority::Low],
        ..Default::default()
    };
    let mut sim = Simulation::new(timed(1, hi)).unwrap();
    let e = sim
        .run_workload_with(
            common::closed(vec![common::req(HostOp::Read, 0, 1)], 1),
            &mut NoProgress,
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("flow_priority") && e.contains("2 classes given for a workload of 1 flow"),
        "{e}"
    );
    // From TOML, with the line.
    let text = "[device]\nover_provisioning_ratio = 0.2\n[device.geometry]\nchannels = 1\nchips_per_channel = 1\ndies_per_chip = 1\nplanes_per_die = 1\nblocks_per_plane = 16\npages_per_block = 8\npage_size_bytes = 4096\n[device.host_interface]\nlanes = 5\n";
    let c = Config::from_toml_str(text, "x.toml").unwrap();
    let e = c.validate_in(text, "x.toml").unwrap_err().to_string();
    assert!(e.contains("x.toml:12") && e.contains("lanes"), "{e}");
}
