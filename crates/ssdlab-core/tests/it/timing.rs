//! Latency arithmetic of the timed mode on hand-checked cases.

use crate::common;
use ssdlab_core::flash::ids::Lpn;

use common::{closed, flush, open, req, tiny};
use ssdlab_core::config::{CellMode, Mode};
use ssdlab_core::flash::{CellState, OpKind};
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::HostOp;

/// 4 KiB at 800 MB/s.
const XFER_4K_NS: u64 = 5120;
const CMD_NS: u64 = 1000;
/// 4 KiB over the host data path (`device.host_transfer_mb_per_s` = 7877): ⌈4096000 / 7877⌉.
const HOST_4K_NS: u64 = 520;

fn timed(mut c: Config) -> Simulation {
    c.mode = Mode::Timed;
    let mut s = Simulation::new(c).unwrap();
    s.trace_completions = true;
    s
}

/// Array time of `kind` on a fresh TLC block.
fn tlc_ns(s: &Simulation, kind: OpKind) -> u64 {
    s.ftl
        .timing()
        .array_ns(kind, CellState::fresh(CellMode::Tlc))
}

fn read_ns(s: &Simulation) -> u64 {
    tlc_ns(s, OpKind::Read)
}

#[test]
fn lone_read_is_command_plus_tr_plus_transfer() {
    let mut s = timed(tiny(1, 8, 4, 1, 2.0));
    let w = closed(
        vec![req(HostOp::Write, 3, 1), flush(), req(HostOp::Read, 3, 1)],
        1,
    );
    let r = s.run_workload_with(w, &mut NoProgress).unwrap();
    let read = s.completions.iter().find(|c| c.op == HostOp::Read).unwrap();
    assert_eq!(
        read.latency_ns(),
        CMD_NS + read_ns(&s) + XFER_4K_NS + HOST_4K_NS
    );
    // Flush latency is reported: submitted when the write completed (after the buffer
    // access and the host transfer, while its program ran), it completes a buffer access
    // after the program ends: command + transfer + tPROG in all, less the host transfer.
    let flush = &r.latency_ns.as_ref().unwrap().flush;
    assert_eq!(flush.count, 1);
    let want = CMD_NS + XFER_4K_NS + tlc_ns(&s, OpKind::Program) - HOST_4K_NS;
    assert_eq!(s.completions[1].latency_ns(), want);
    assert!(
        flush.max.abs_diff(want) * 1000 < want,
        "{} vs {want} (3 digits)",
        flush.max
    );
    assert_eq!(r.host.counters.flushes, 1);
    assert_eq!(
        r.host.requests, 3,
        "IOPS counts reads, writes, trims and flushes"
    );
    // The write completes once in the DRAM buffer and its data crossed the host data
    // path; the flush waits for the program: command + transfer + tPROG from the write's
    // start.
    let write = &s.completions[0];
    assert_eq!(
        write.latency_ns(),
        1000 + HOST_4K_NS,
        "buffer_access_ns + host transfer"
    );
    let fl = &s.completions[1];
    assert_eq!(
        fl.complete_ns - write.submit_ns,
        CMD_NS + XFER_4K_NS + tlc_ns(&s, OpKind::Program) + 1000
    );
}

#[test]
fn unwritten_and_buffered_reads_skip_nand() {
    let mut s = timed(tiny(1, 8, 4, 4, 2.0));
    let w = closed(
        vec![
            req(HostOp::Read, 9, 1),
            req(HostOp::Write, 1, 1),
            req(HostOp::Read, 1, 1),
        ],
        1,
    );
    let r = s.run_workload_with(w, &mut NoProgress).unwrap();
    // No NAND, but a buffer access and the host transfer of the data: a read of a unit
    // never written is no faster than the data path.
    assert!(s
        .completions
        .iter()
        .all(|c| c.latency_ns() == 1000 + HOST_4K_NS));
    assert_eq!(
        (
            r.host.counters.unmapped_read_units,
            r.host.counters.buffer_read_hits,
            r.nand.reads.total
        ),
        (1, 1, 0)
    );
}

fn two_dies(channels: u32) -> Config {
    let text = format!(
        r#"
seed = 1
[device]
over_provisioning_ratio = 2.0
command_overhead_ns = 1000
[device.geometry]
channels = {channels}
chips_per_channel = 1
dies_per_chip = {dies}
planes_per_die = 1
blocks_per_plane = 8
pages_per_block = 4
page_size_bytes = 4096
[ftl]
gc_soft_free_blocks = 2
gc_hard_free_blocks = 1
write_buffer_bytes = 16384
stripe_order = "DCWP"
"#,
        dies = 2 / channels
    );
    Config::from_toml_str(&text, "two-dies").unwrap()
}

/// Two dies on one channel: both sense at once, then the transfers queue on the bus; on
/// two channels both finish at once and queue on the host data path instead.
#[test]
fn channel_contention_between_two_dies() {
    for (channels, second_extra) in [(1, XFER_4K_NS), (2, HOST_4K_NS)] {
        let mut s = timed(two_dies(channels));
        // Units 0 and 1 land on different dies (consecutive pages stripe over dies).
        let prep = vec![req(HostOp::Write, 0, 1), req(HostOp::Write, 1, 1), flush()];
        s.run_workload_with(closed(prep, 1), &mut NoProgress)
            .unwrap();
        assert_ne!(
            s.ftl.geometry().die_of_block(
                s.ftl
                    .geometry()
                    .block_of_slot(s.ftl.media().slot_of(Lpn(0)))
            ),
            s.ftl.geometry().die_of_block(
                s.ftl
                    .geometry()
                    .block_of_slot(s.ftl.media().slot_of(Lpn(1)))
            )
        );
        s.run_workload_with(
            closed(vec![req(HostOp::Read, 0, 1), req(HostOp::Read, 1, 1)], 2),
            &mut NoProgress,
        )
        .unwrap();
        let mut lat: Vec<u64> = s.completions.iter().map(|c| c.latency_ns()).collect();
        lat.sort_unstable();
        let lone = CMD_NS + read_ns(&s) + XFER_4K_NS + HOST_4K_NS;
        assert_eq!(
            lat,
            vec![lone, lone + second_extra],
            "{channels} channel(s)"
        );
    }
}

/// Two reads to the same die queue: the second waits for the first's whole operation.
#[test]
fn reads_on_one_die_serialise() {
    let mut s = timed(tiny(1, 8, 4, 1, 2.0));
    s.run_workload_with(
        closed(vec![req(HostOp::Write, 0, 2), flush()], 1),
        &mut NoProgress,
    )
    .unwrap();
    s.run_workload_with(
        closed(vec![req(HostOp::Read, 0, 1), req(HostOp::Read, 1, 1)], 2),
        &mut NoProgress,
    )
    .unwrap();
    let lone = CMD_NS + read_ns(&s) + XFER_4K_NS;
    let lat: Vec<u64> = s.completions.iter().map(|c| c.latency_ns()).collect();
    assert_eq!(lat, vec![lone + HOST_4K_NS, 2 * lone + HOST_4K_NS]);
}

/// Two reads to the two planes of one die run as one multi-plane read: one tR, two
/// transfers; then their data crosses the host data path one after the other.
#[test]
fn multi_plane_read() {
    let mut s = timed(tiny(2, 8, 4, 1, 2.0));
    s.run_workload_with(
        closed(vec![req(HostOp::Write, 0, 2), flush()], 1),
        &mut NoProgress,
    )
    .unwrap();
    let g = s.ftl.geometry();
    assert_ne!(
        g.plane_of_block(g.block_of_slot(s.ftl.media().slot_of(Lpn(0)))),
        g.plane_of_block(g.block_of_slot(s.ftl.media().slot_of(Lpn(1))))
    );
    s.run_workload_with(
        closed(vec![req(HostOp::Read, 0, 1), req(HostOp::Read, 1, 1)], 2),
        &mut NoProgress,
    )
    .unwrap();
    let lat: Vec<u64> = s.completions.iter().map(|c| c.latency_ns()).collect();
    let both = CMD_NS + read_ns(&s) + 2 * XFER_4K_NS;
    assert_eq!(lat, vec![both + HOST_4K_NS, both + 2 * HOST_4K_NS]);
}

/// Open loop: latency counts from the trace's arrival time, including queueing.
#[test]
fn open_loop_latency_from_arrival() {
    let mut s = timed(tiny(1, 8, 4, 1, 2.0));
    s.run_workload_with(
        closed(vec![req(HostOp::Write, 0, 2), flush()], 1),
        &mut NoProgress,
    )
    .unwrap();
    let mut a = req(HostOp::Read, 0, 1);
    let mut b = req(HostOp::Read, 1, 1);
    a.arrival_ns = 0;
    b.arrival_ns = 10_000; // arrives while the first read is sensing
    s.run_workload_with(open(vec![a, b]), &mut NoProgress)
        .unwrap();
    let lone = CMD_NS + read_ns(&s) + XFER_4K_NS;
    let lat: Vec<u64> = s.completions.iter().map(|c| c.latency_ns()).collect();
    assert_eq!(lat, vec![lone + HOST_4K_NS, 2 * lone - 10_000 + HOST_4K_NS]);
}

/// With a power-loss-protected buffer a flush costs a buffer access and no NAND work: the
/// partial page stays in the buffer (no padded program) in both modes.
#[test]
fn protected_buffer_flush_completes_at_once() {
    let mut c = tiny(1, 8, 4, 1, 2.0);
    c.ftl.power_loss_protection = true;
    let mut s = timed(c.clone());
    let w = closed(vec![req(HostOp::Write, 3, 1), flush()], 1);
    let r = s.run_workload_with(w, &mut NoProgress).unwrap();
    assert_eq!(s.completions[1].op, HostOp::Flush);
    assert_eq!(s.completions[1].latency_ns(), 1000, "buffer_access_ns");
    assert_eq!(r.host.counters.flushes, 1);
    // Functional: one unit, a flush, three more, a flush: one page of four units when the
    // flushes pad nothing; an unprotected buffer programs two padded pages.
    let programs = |plp: bool| {
        let mut c = tiny(1, 8, 4, 4, 2.0);
        c.ftl.power_loss_protection = plp;
        let mut f = Simulation::new(c).unwrap();
        assert_eq!(f.ftl.geometry().slots_per_page, 4);
        let mut reqs = vec![req(HostOp::Write, 3, 1), flush()];
        reqs.extend((4..7).map(|l| req(HostOp::Write, l, 1)));
        reqs.push(flush());
        let r = f
            .run_workload_with(closed(reqs, 1), &mut NoProgress)
            .unwrap();
        r.nand.programs.host
    };
    assert_eq!((programs(true), programs(false)), (1, 2));
}

/// Every byte crosses the host data path (`device.host_transfer_mb_per_s`): 1 MiB writes
/// that fit the DRAM buffer take their transfer (they took 1 µs each at QD1: "1,048,576
/// MB/s"), and so do 128 KiB reads of units never written (free before: "2,097,152 MB/s");
/// throughput stays within the path in both modes, and the audit says which reads were
/// never written.
#[test]
fn large_requests_cross_the_host_data_path() {
    let mut c = tiny(2, 64, 16, 4, 2.0);
    c.ftl.write_buffer_bytes = 4 << 20;
    let mib: u64 = 1 << 20;
    let host_mib = (mib * 1000).div_ceil(7877);
    let mut s = timed(c.clone());
    let writes = closed(
        (0..4).map(|i| req(HostOp::Write, i * 256, 256)).collect(),
        1,
    );
    let r = s.run_workload_with(writes, &mut NoProgress).unwrap();
    assert!(s
        .completions
        .iter()
        .all(|c| c.latency_ns() == 1000 + host_mib));
    let mb = r.host.write_mb_per_s;
    assert!(mb <= 7877.0 && mb > 7700.0, "{mb} MB/s");
    assert_eq!(r.audit.data_path.bound, "device.host_transfer_mb_per_s");
    assert_eq!(r.audit.data_path.mb_per_s, 7877.0);
    // 128 KiB reads of units never written, 8 at a time: the path, shared, is the limit.
    let reads = || {
        let reqs = (0..64)
            .map(|i| req(HostOp::Read, 1024 + (i % 8) * 32, 32))
            .collect();
        closed(reqs, 8)
    };
    let r = s.run_workload_with(reads(), &mut NoProgress).unwrap();
    let mb = r.host.read_mb_per_s;
    assert!(mb <= 7877.0 && mb > 7800.0, "{mb} MB/s");
    assert_eq!(r.nand.reads.total, 0);
    let unwritten = r.audit.checks.iter().find(|c| c.name == "unwritten_reads");
    let w = unwritten.unwrap();
    assert_eq!(w.verdict, ssdlab_core::sim::audit::Verdict::Warning);
    assert!(
        w.message
            .as_deref()
            .unwrap()
            .starts_with("100 % of the units read were never written"),
        "{w:?}"
    );
    // Functional: each request's transfer adds to the serial clock.
    let mut f = Simulation::new(c).unwrap();
    let r = f.run_workload_with(reads(), &mut NoProgress).unwrap();
    assert_eq!(r.host.sim_time_ns, 64 * (mib / 8 * 1000).div_ceil(7877));
    assert!(r.host.read_mb_per_s <= 7877.0);
}
