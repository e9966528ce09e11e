//! SLC write buffer and journal region (spec 05): the baseline falls to TLC speed when its
//! buffer is full and recovers after idle time; journal blocks are reclaimed without copies
//! and journal data never migrates; the detector finds the ext4 model's journal; integrity
//! holds through migration and journal reclamation.

use crate::common;

use proptest::prelude::*;
use ssdlab_core::config::Mode;
use ssdlab_core::sim::functional::{FunctionalDriver, SerialClock};
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::{HostOp, HostRequest};

/// Two planes of TLC (48 pages per block; SLC mode: 16) with SLC 5× faster: a data region,
/// an 8-block-per-plane SLC buffer drained only when idle (1 ms), and with `slc-journal`
/// a 6-block journal region. `workload` is appended as the `[workload]` table.
fn device(mode: Mode, policy: &str, integrity: bool, workload: &str) -> Config {
    let mode = if mode == Mode::Timed {
        "timed"
    } else {
        "functional"
    };
    let journal = if policy == "slc-journal" {
        r#", { name = "journal", content = "journal", cell_mode = "slc", blocks_per_plane = 10, gc_soft_free_blocks = 2, gc_hard_free_blocks = 1 }"#
    } else {
        ""
    };
    let params = if policy == "slc-journal" {
        ", min_journal_bytes = 262144"
    } else {
        ""
    };
    let text = format!(
        r#"
seed = 4
mode = "{mode}"
integrity = {integrity}
[device]
cell_mode = "tlc"
over_provisioning_ratio = 0.07
command_overhead_ns = 1000
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 214
pages_per_block = 48
page_size_bytes = 16384
mapping_unit_bytes = 4096
[device.timing.tlc]
read_ns = 100000
program_ns = 1000000
erase_loop_ns = 5000000
erase_loops = [[0, 2]]
endurance_pe_cycles = 1000
[device.timing.slc]
read_ns = 20000
program_ns = 200000
erase_loop_ns = 2000000
erase_loops = [[0, 1]]
endurance_pe_cycles = 100000
[ftl]
placement = {{ policy = "{policy}"{params} }}
gc_soft_free_blocks = 3
gc_hard_free_blocks = 1
write_buffer_bytes = 262144
idle_gc_after_ns = 1000000
regions = [{{ name = "data", content = "data" }}, {{ name = "slc", content = "cache", cell_mode = "slc", blocks_per_plane = 8, drain_when_idle = true, gc_soft_free_blocks = 1, gc_hard_free_blocks = 1 }}{journal}]
[precondition]
enabled = false
{workload}
"#
    );
    Config::from_toml_str(&text, "slc-test").unwrap()
}

/// The ext4 model: fio 8 KiB random writes, fsync every 4, a 1 MiB journal, data mode.
const EXT4: &str = r#"[workload]
kind = "ext4"
mode = "data"
app = "fio"
journal_bytes = 1048576
fsync_every = 4
requests = 30000"#;

/// Functional time per page: SLC pages cost 200 µs, TLC pages 1 ms, and each page's 16 KiB
/// cross the host data path (`device.host_transfer_mb_per_s`). `slc-buffer` writes
/// its first pages at SLC speed, falls to TLC speed once the buffer is full, and after an
/// idle gap (the buffer drains to TLC) writes at SLC speed again.
#[test]
fn the_baseline_falls_to_tlc_speed_when_full_and_recovers_after_idle() {
    let mut sim = Simulation::new(device(Mode::Functional, "slc-buffer", false, "")).unwrap();
    let mut d = FunctionalDriver::new(&mut sim.ftl).with_idle_gc(1_000_000);
    // Buffer: 8 blocks × 16 pages × 2 planes, less one block per plane of reserve and one
    // open block's worth: about 224 pages.
    let page = |unit: u64, t: u64| HostRequest {
        tag: 0,
        placement_id: 0,
        arrival_ns: t,
        op: HostOp::Write,
        offset_bytes: unit * 4096,
        size_bytes: 16384,
        journal: None,
    };
    let mut unit = 0u64;
    let mut time_pages = |d: &mut FunctionalDriver, n: u64, t: u64| {
        let t0 = d.clock.time_ns;
        for i in 0..n {
            d.submit(&page(unit, if i == 0 { t } else { 0 })).unwrap();
            unit += 4;
        }
        (d.clock.time_ns - t0) / n
    };
    let host = sim_host_ns(16384);
    let fast = time_pages(&mut d, 100, 0);
    let _ = time_pages(&mut d, 200, 0); // fills the buffer
    let slow = time_pages(&mut d, 100, 0);
    assert_eq!(fast, 200_000 + host, "SLC program per page");
    assert_eq!(
        slow,
        1_000_000 + host,
        "TLC program per page once the buffer is full"
    );
    // An idle gap: the buffer migrates to TLC, then writes run at SLC speed again.
    let idle_at = d.clock.time_ns + 10_000_000;
    let _ = time_pages(&mut d, 1, idle_at);
    let again = time_pages(&mut d, 100, 0);
    assert_eq!(again, 200_000 + host, "SLC speed after the idle drain");
    let migrated = d.ftl.counters().journal.migrated_units;
    assert!(migrated > 200 * 4, "{migrated} units migrated");
}

/// Host transfer time of `bytes` at the default `device.host_transfer_mb_per_s`.
fn sim_host_ns(bytes: u64) -> u64 {
    let t = device(Mode::Functional, "slc-buffer", false, "")
        .device
        .timing_model();
    assert_eq!(t.host_transfer_ns(16384), 2080, "⌈16384000 / 7877⌉");
    t.host_transfer_ns(bytes)
}

/// Run the ext4 model (`requests`), then let the host go idle so the buffer drains.
fn run_then_idle(policy: &str, mode: Mode, requests: u32) -> Simulation {
    let w = EXT4.replace("requests = 30000", &format!("requests = {requests}"));
    let mut sim = Simulation::new(device(mode, policy, true, &w)).unwrap();
    let r = sim.run_workload(&mut NoProgress).unwrap();
    assert!(r.journal.is_some());
    let mut clock = SerialClock::new(sim.ftl.timing());
    sim.ftl.set_host_idle(true, &mut clock).unwrap();
    sim.ftl.check_invariants().unwrap();
    sim
}

/// `slc-journal` learns the journal, reclaims its blocks without a single copy and never
/// migrates journal data, even when the buffer drains; `slc-buffer` migrates journal data
/// with everything else.
#[test]
fn journal_blocks_expire_without_copies_and_never_migrate() {
    for mode in [Mode::Functional, Mode::Timed] {
        let sim = run_then_idle("slc-journal", mode, 30000);
        let c = &sim.ftl.counters_now();
        let journal_region = 2;
        assert!(
            c.host_units_by_region[journal_region] > 2000,
            "{mode:?}: {c:?}"
        );
        assert_eq!(
            c.relocated_units_by_region[journal_region], 0,
            "{mode:?}: copies"
        );
        assert!(c.journal.migrated_units > 0, "{mode:?}: the buffer drained");
        assert_eq!(c.journal.journal_units_migrated, 0, "{mode:?}");
        assert!(
            c.nand.total(ssdlab_core::flash::OpKind::Erase) > 0,
            "{mode:?}: blocks reused"
        );
        let j = &c.journal;
        assert_eq!(j.false_positive, 0, "{mode:?}: precision 1");
        assert!(
            j.true_positive as f64 / (j.true_positive + j.false_negative) as f64 > 0.8,
            "{mode:?}: recall {j:?}"
        );
        // The baseline's buffer, drained before it fills, moves the live journal to TLC.
        let base = run_then_idle("slc-buffer", mode, 300);
        assert!(
            base.ftl.counters().journal.journal_units_migrated > 0,
            "{mode:?}"
        );
        // Early on, slc-journal can only migrate what it wrote before it learned the
        // journal (its first lap, 256 units here): nothing after.
        let sim = run_then_idle("slc-journal", mode, 300);
        assert!(
            sim.ftl.counters().journal.journal_units_migrated <= 256,
            "{mode:?}"
        );
    }
}

/// `own_stripe` on a region: refused before it existed (unknown key), off by default and
/// left out of the configuration as shown when off (so every existing configuration prints
/// and runs as before), carried into the region's geometry when on.
#[test]
fn own_stripe_is_a_region_key_off_by_default() {
    let c = device(Mode::Functional, "slc-journal", false, EXT4);
    assert!(!c.ftl.regions[2].own_stripe);
    let shown = toml::to_string(&c).unwrap();
    assert!(!shown.contains("own_stripe"), "{shown}");
    let d = c.validate().unwrap();
    assert!(d.regions.iter().all(|r| !r.own_stripe));
    let mut c = c;
    c.ftl.regions[2].own_stripe = true;
    assert!(toml::to_string(&c).unwrap().contains("own_stripe = true"));
    assert!(c.validate().unwrap().regions[2].own_stripe);
    let mut sim = Simulation::new(c).unwrap();
    sim.run_workload(&mut NoProgress).unwrap();
    // Both planes of the journal region take journal pages on its own cursor (the spread
    // it buys shows where commits alias with a longer stripe: the experiments' test at
    // 8 planes, where the shared cursor makes the region copy).
    let [a, b] = [0, 1].map(|p| {
        sim.ftl
            .media()
            .plane_state(2, ssdlab_core::flash::ids::PlaneId(p))
            .host_units
    });
    assert!(a > 2000 && b > 2000, "{a} / {b}");
}

/// Open-loop random writes, reads and flushes plus a small circular "journal", with idle
/// gaps that drain the buffer: every read returns the last version written (integrity
/// mode) and the FTL's invariants hold, both modes, both policies.
fn reqs() -> impl Strategy<Value = Vec<(u8, u64, u64)>> {
    prop::collection::vec((0u8..10, 0u64..60_000, 0u64..4), 100..600)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn integrity_holds_through_migration_and_journal_reclamation(ops in reqs(), timed in any::<bool>()) {
        let mode = if timed { Mode::Timed } else { Mode::Functional };
        let jbase = 30_000u64;
        let mut head = 0u64;
        let mut t = 0u64;
        let mut list = Vec::new();
        for (k, unit, gap) in ops {
            t += 50_000 + gap * gap * 1_000_000; // gaps of 0, 1, 4, 9 ms: idle drains
            let r = |op, unit: u64, n: u64| HostRequest { tag: 0, placement_id: 0, arrival_ns: t, op, offset_bytes: unit * 4096, size_bytes: n * 4096, journal: None };
            list.push(match k {
                0..=3 => { let r = r(HostOp::Write, jbase + head, 2); head = (head + 2) % 512; r }
                4..=6 => r(HostOp::Write, unit, 1 + gap),
                7..=8 => r(HostOp::Read, unit, 1 + gap),
                _ => common::flush(),
            });
            if let Some(l) = list.last_mut() { l.arrival_ns = t; }
        }
        for policy in ["slc-journal", "slc-buffer"] {
            let mut sim = Simulation::new(device(mode, policy, true, "")).unwrap();
            sim.run_workload_with(common::open(list.clone()), &mut NoProgress).unwrap();
            sim.ftl.check_invariants().unwrap();
        }
    }
}

#[test]
fn placement_and_region_errors_name_the_key() {
    let mut c = device(Mode::Functional, "slc-journal", false, "");
    c.ftl.regions.pop();
    let e = Simulation::new(c).err().unwrap().to_string();
    assert!(e.contains("ftl.placement") && e.contains("journal"), "{e}");
    let mut c = device(Mode::Functional, "slc-buffer", false, "");
    c.ftl.regions[1].relocate_to = Some("slc".into());
    let e = Simulation::new(c).err().unwrap().to_string();
    assert!(e.contains("drain_when_idle"), "{e}");
}

/// A blkparse trace whose `jbd2` requests are the ground truth (`journal_process`): the
/// detector is scored per request against them, in both modes.
#[test]
fn blkparse_jbd2_requests_are_the_detector_ground_truth() {
    let dir = std::env::temp_dir().join(format!("ssdlab-slc-blk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.blk");
    let mut text = String::new();
    let (jstart, jblocks) = (200_000u64 / 8 * 8, 256u64); // a 1 MiB circular journal
    let mut head = 0u64;
    let mut x = 5u64;
    for seq in 0..6000u64 {
        let t = seq * 100_000;
        let (sector, proc_name) = if seq % 3 == 0 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (((x >> 33) % 20_000) * 8, "fio") // below the journal
        } else {
            let s = jstart + head * 8;
            head = (head + 1) % jblocks;
            (s, "jbd2/sda1-8")
        };
        text += &format!(
            "  8,0    0 {seq:>8} {}.{:09} 4162  Q  WS {sector} + 8 [{proc_name}]\n",
            t / 1_000_000_000,
            t % 1_000_000_000
        );
    }
    std::fs::write(&path, text).unwrap();
    let workload = format!(
        "[workload]\nkind = \"trace\"\npath = \"{}\"\nformat = \"blkparse\"\nreplay = \"closed\"\nqueue_depth = 1\njournal_process = \"jbd2\"",
        path.display()
    );
    for mode in [Mode::Functional, Mode::Timed] {
        let mut sim = Simulation::new(device(mode, "slc-journal", true, &workload)).unwrap();
        let r = sim.run_workload(&mut NoProgress).unwrap();
        let j = r.journal.unwrap();
        assert_eq!(j.journal_range_bytes, None);
        let d = j.detector.expect("scored against the labels");
        assert_eq!(d.true_positive + d.false_negative, 4000, "{mode:?}");
        assert_eq!(d.precision, Some(1.0), "{mode:?}");
        assert!(d.recall.unwrap() > 0.8, "{mode:?}: {d:?}");
        assert_eq!(
            j.learned_range_bytes,
            Some([jstart * 512, (jstart + jblocks * 8) * 512]),
            "{mode:?}"
        );
        if mode == Mode::Timed {
            assert!(j.journal_write_latency_ns.is_some_and(|l| l.count > 0));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `slc-buffer` with TurboWrite sizes (docs/calibration.md): 1 MiB static + at most 2 MiB
/// dynamic on the fresh device (its free space / 3 is far more) is 3 MiB: in SLC blocks
/// of 16 pages × 16 KiB = 256 KiB on 2 planes, 6 blocks per plane (of the region's 8, 7
/// outside its reserve). Sequential pages fill exactly 6 × 16 × 2 = 192 pages of cache,
/// every later page goes to TLC past the cache (counted); the results show the size and
/// the bytes. Filling the device shrinks the size to the static part (2 blocks per plane).
#[test]
fn a_turbowrite_cache_takes_its_size_then_shrinks_as_the_device_fills() {
    let mut c = device(Mode::Functional, "slc-buffer", false, "");
    c.ftl.placement =
        toml::from_str::<ssdlab_core::config::FtlConfig>(
            r#"placement = { policy = "slc-buffer", static_cache_bytes = 1048576, dynamic_cache_bytes = 2097152 }"#,
        )
        .unwrap()
        .placement;
    let mut sim = Simulation::new(c).unwrap();
    assert_eq!(sim.ftl.cache_size_now(), Some((3 << 20, 6)));
    let logical = sim.ftl.media().logical_units() as u64;
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    let page = |unit: u64| HostRequest {
        tag: 0,
        placement_id: 0,
        arrival_ns: 0,
        op: HostOp::Write,
        offset_bytes: unit * 4096,
        size_bytes: 16384,
        journal: None,
    };
    for p in 0..300 {
        d.submit(&page(4 * p)).unwrap();
    }
    let c = d.ftl.counters_now();
    let (data, cache) = (c.host_units_by_region[0], c.host_units_by_region[1]);
    assert_eq!((cache, data), (192 * 4, 108 * 4));
    assert_eq!(c.journal.cache_bypassed_pages, 108);
    // The rest of the logical space: the cache's dynamic part is gone, its size the
    // static part's 2 blocks per plane.
    for p in 300..logical / 4 {
        d.submit(&page(4 * p)).unwrap();
    }
    assert_eq!(d.ftl.cache_size_now(), Some((1 << 20, 2)));
    let c2 = d.ftl.counters_now();
    assert_eq!(
        c2.host_units_by_region[1],
        192 * 4,
        "no page into a full cache"
    );
}
