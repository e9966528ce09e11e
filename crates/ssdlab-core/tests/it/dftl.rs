//! Demand-based mappings (spec 04): exact translation traffic on tiny cases in both
//! modes, the partitioned variants' bound on a host read's path under random workloads
//! (integrity mode checks it on every read), and the log variant's WAF next to page-map's.

use crate::common;

use proptest::prelude::*;
use ssdlab_core::config::Mode;
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::sim::Results;
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::{HostOp, HostRequest};

/// A tiny one-plane device (4 KiB pages, one unit each) with a translation region of 12
/// blocks; translation pages of 4 entries (`entry_bytes = 1024`) so a few units span
/// several pages. `mapping` is the `[ftl.mapping]` table's inline body.
fn device(mode: Mode, mapping: &str, integrity: bool) -> Config {
    let mode = if mode == Mode::Timed {
        "timed"
    } else {
        "functional"
    };
    let text = format!(
        r#"
seed = 5
mode = "{mode}"
integrity = {integrity}
[device]
over_provisioning_ratio = 0.25
channel_rate_mb_per_s = 800
command_overhead_ns = 1000
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 1
blocks_per_plane = 40
pages_per_block = 16
page_size_bytes = 4096
mapping_unit_bytes = 4096
[ftl]
mapping = {{ {mapping} }}
gc_soft_free_blocks = 2
gc_hard_free_blocks = 1
write_buffer_bytes = 16384
regions = [{{ name = "data", content = "data" }}, {{ name = "map", content = "translation", blocks_per_plane = 12 }}]
[precondition]
enabled = false
"#
    );
    Config::from_toml_str(&text, "dftl-test").unwrap()
}

const DFTL: &str = r#"policy = "dftl", entry_bytes = 1024, cmt_bytes = 4096"#;
const PARTITIONED: &str = r#"policy = "dftl-partitioned", entry_bytes = 1024, cmt_bytes = 8192"#;
const LOG: &str = r#"policy = "dftl-partitioned-log", entry_bytes = 1024, cmt_bytes = 8192, log_entry_bytes = 2048"#;

fn w(unit: u64) -> HostRequest {
    common::req(HostOp::Write, unit, 1)
}

fn r(unit: u64) -> HostRequest {
    common::req(HostOp::Read, unit, 1)
}

/// Write unit 4 (translation page 1) and unit 0 (page 0), each made durable, then read
/// unit 4: page 1 was written back when page 0 took the only dirty slot.
fn dirty_victim_case() -> Vec<HostRequest> {
    vec![w(4), common::flush(), w(0), common::flush(), r(4)]
}

fn run(mode: Mode, mapping: &str, reqs: Vec<HostRequest>, integrity: bool) -> Results {
    let mut sim = Simulation::new(device(mode, mapping, integrity)).unwrap();
    sim.run_workload_with(common::closed(reqs, 1), &mut NoProgress)
        .unwrap()
}

/// `dftl` (one cached page): the read of unit 4 misses while the only cached page (0) is
/// dirty, so it waits for a program (write back page 0), a translation read (page 1) and
/// the data read. The partitioned variants read page 1 into the clean region: one
/// translation read, no program. Same counts in both modes.
#[test]
fn a_read_miss_with_a_dirty_victim_costs_a_program_only_in_dftl() {
    for mode in [Mode::Functional, Mode::Timed] {
        let m = run(mode, DFTL, dirty_victim_case(), true).mapping.unwrap();
        assert_eq!(m.translation_programs.host_read, 1, "{mode:?}");
        assert_eq!(m.translation_reads.host_read, 1, "{mode:?}");
        // Writes: page 1 loaded (never written: no read), then written back for page 0.
        assert_eq!(m.translation_programs.host_write, 1, "{mode:?}");
        assert_eq!(m.translation_reads.host_write, 0, "{mode:?}");
        assert_eq!(m.nand_programs_per_host_read, [0, 1, 0, 0], "{mode:?}");
        assert_eq!(
            m.nand_reads_per_host_read,
            [0, 0, 1, 0, 0, 0, 0, 0],
            "{mode:?}"
        );
        let m = run(mode, PARTITIONED, dirty_victim_case(), true)
            .mapping
            .unwrap();
        assert_eq!(m.translation_programs.host_read, 0, "{mode:?}");
        assert_eq!(m.nand_programs_per_host_read, [1, 0, 0, 0]);
        assert_eq!(m.nand_reads_per_host_read[2], 1, "{mode:?}");
        assert_eq!(m.max_nand_reads_per_host_read, Some(2));
        // The log variant answers from its log (unit 4's entry is logged): the data read only.
        let m = run(mode, LOG, dirty_victim_case(), true).mapping.unwrap();
        assert_eq!(m.translation_reads.host_read, 0, "{mode:?}");
        assert_eq!(m.translation_programs.total, 0, "{mode:?}");
        assert_eq!(m.nand_reads_per_host_read[1], 1, "{mode:?}");
    }
}

/// The log variant with a 2-entry log (4 entries per translation page; every write is
/// one page program here, so its mapping update follows at once):
/// w0, w1 fill the log with two entries of page 0; w4 finds it full: page 0 (never
/// written, nothing to read) is merged with one program, both entries at once; log {4}.
/// w2 → {4, 2}; w3: full, pages 1 and 0 hold one entry each, the older (page 1, never
/// written) is merged; log {2, 3}. w5: full, page 0 holds two: read (it is on flash now),
/// merged, programmed once — both entries.
#[test]
fn a_batch_update_writes_all_of_a_pages_logged_entries_at_once() {
    let reqs = vec![w(0), w(1), w(4)];
    let m = run(Mode::Functional, LOG, reqs, true).mapping.unwrap();
    assert_eq!(m.translation_programs.host_write, 1);
    assert_eq!(m.translation_reads.host_write, 0);
    for mode in [Mode::Functional, Mode::Timed] {
        let reqs = vec![w(0), w(1), w(4), w(2), w(3), w(5)];
        let m = run(mode, LOG, reqs, true).mapping.unwrap();
        assert_eq!(m.translation_programs.host_write, 3, "{mode:?}");
        assert_eq!(m.translation_reads.host_write, 1, "{mode:?}");
        assert_eq!(m.write_lookups, 6);
    }
}

/// The translation region is garbage-collected like any region: many write-backs wrap it
/// several times over, every full invariant check passes (debug builds check every few
/// thousand operations; here once more at the end), and the GTD follows the moved pages.
#[test]
fn translation_blocks_are_collected_and_the_gtd_follows_them() {
    for mode in [Mode::Functional, Mode::Timed] {
        let mut reqs = Vec::new();
        let mut x = 7u64;
        for _ in 0..6000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let unit = (x >> 33) % 350;
            reqs.push(if x & 1 == 0 { w(unit) } else { r(unit) });
        }
        let mut sim = Simulation::new(device(mode, DFTL, true)).unwrap();
        let res = sim
            .run_workload_with(common::closed(reqs, 4), &mut NoProgress)
            .unwrap();
        let m = res.mapping.unwrap();
        assert!(m.translation_programs.total > 1000, "{mode:?}: {m:?}");
        assert!(
            m.translation_gc_programs > 0 || res.nand.erases.total > 0,
            "{mode:?}"
        );
        sim.ftl.check_invariants().unwrap();
    }
}

/// Random reads, writes and trims of 1–3 units in integrity mode: every read returns the
/// last version written, the partitioned variants never put a program or more than one
/// translation read per translation page on a read's path (checked on every read), and a
/// one-unit read issues at most 2 NAND reads.
fn random_reqs() -> impl Strategy<Value = Vec<HostRequest>> {
    prop::collection::vec((0u8..10, 0u64..350, 1u64..3), 50..400).prop_map(|v| {
        v.into_iter()
            .map(|(k, unit, n)| match k {
                0..=4 => common::req(HostOp::Read, unit, 1),
                5..=7 => common::req(HostOp::Write, unit, n),
                8 => common::req(HostOp::Trim, unit, n),
                _ => common::flush(),
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn partitioned_reads_stay_within_two_nand_reads(reqs in random_reqs(), timed in any::<bool>()) {
        let mode = if timed { Mode::Timed } else { Mode::Functional };
        for mapping in [PARTITIONED, LOG] {
            let mut sim = Simulation::new(device(mode, mapping, true)).unwrap();
            let res = sim
                .run_workload_with(common::closed(reqs.clone(), 4), &mut NoProgress)
                .unwrap();
            if timed {
                common::assert_all_completed(&res, &reqs);
            }
            let m = res.mapping.unwrap();
            prop_assert_eq!(m.translation_programs.host_read, 0);
            prop_assert!(m.max_nand_reads_per_host_read.unwrap_or(0) <= 2, "{:?}", m);
            sim.ftl.check_invariants().unwrap();
        }
        // dftl keeps the data right too (its reads may write).
        let mut sim = Simulation::new(device(mode, DFTL, true)).unwrap();
        let res = sim.run_workload_with(common::closed(reqs.clone(), 4), &mut NoProgress).unwrap();
        if timed {
            common::assert_all_completed(&res, &reqs);
        }
        sim.ftl.check_invariants().unwrap();
    }
}

/// Uniform random overwrites with GC in effect (functional): the log variant writes few
/// translation pages, so its WAF (translation writes included) stays within 10 % of
/// page-map's, while page-granularity `dftl` and `dftl-partitioned` pay a program for most
/// writes.
#[test]
fn the_log_variants_waf_stays_near_page_map() {
    let waf = |mapping: &str| {
        let mut cfg = device(Mode::Functional, mapping, false);
        cfg.device.geometry.blocks_per_plane = 4000;
        let mut sim = Simulation::new(cfg).unwrap();
        let units = sim.ftl.logical_units();
        let mut d = FunctionalDriver::new(&mut sim.ftl);
        for l in 0..units {
            d.write_unit(l).unwrap();
        }
        let mut x = 3u64;
        for _ in 0..units * 4 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            d.write_unit(((x >> 33) % units as u64) as u32).unwrap();
        }
        let c = sim.ftl.counters();
        let programs = c.nand.ops[1].iter().sum::<u64>() as f64;
        programs / (units as f64 * 5.0)
    };
    // The defaults: 4 B entries (1024 per page, 50 translation pages), a CMT of 25 % of
    // the table (12 pages; partitioned 6 + 6; log: 6 pages + 3,190 entries).
    let cmt = r#"cmt_share = 0.25"#;
    let page = waf(r#"policy = "page-map""#);
    let log = waf(&format!(r#"policy = "dftl-partitioned-log", {cmt}"#));
    let dftl = waf(&format!(r#"policy = "dftl", {cmt}"#));
    let part = waf(&format!(r#"policy = "dftl-partitioned", {cmt}"#));
    eprintln!("WAF page-map {page:.3} log {log:.3} dftl {dftl:.3} partitioned {part:.3}");
    assert!((log / page - 1.0).abs() < 0.05, "log {log} page-map {page}");
    assert!(
        dftl > log * 1.3 && part > log * 1.3,
        "dftl {dftl} partitioned {part} log {log}"
    );
}

#[test]
fn a_demand_mapping_needs_a_translation_region_that_fits() {
    let mut cfg = device(Mode::Functional, DFTL, false);
    cfg.ftl.regions.clear();
    let e = Simulation::new(cfg).err().unwrap().to_string();
    assert!(
        e.contains("ftl.mapping") && e.contains("translation"),
        "{e}"
    );
    let mut cfg = device(Mode::Functional, DFTL, false);
    cfg.ftl.regions[1].blocks_per_plane = Some(5);
    let e = Simulation::new(cfg).err().unwrap().to_string();
    assert!(e.contains("translation region"), "{e}");
    let cfg = device(
        Mode::Functional,
        r#"policy = "dftl", cmt_share = 1.5"#,
        false,
    );
    let e = Simulation::new(cfg).err().unwrap().to_string();
    assert!(e.contains("ftl.mapping.cmt_share"), "{e}");
}

/// Liveness (issue 33): page-granularity `dftl` on a one-die device (the `reproduce dftl`
/// device cut to one chip), 100 % random reads at QD 32 after preconditioning. A read whose
/// CMT victim is dirty starts its plan with a write-back program; queued as a mapping
/// operation it waited behind every later host read, so 31 of the 32 requests in flight
/// waited for the whole run (max latency 2.2 s of a 2.2 s run). It now ranks, like the
/// plan's translation read, with the host reads, and every request completes in a bounded
/// time: at most the queue's depth of write-backs (0.6 ms each) and reads ahead of it.
#[test]
fn dftl_reads_behind_a_dirty_victim_are_not_starved() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/dftl-64g.toml");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("channels = 8", "channels = 1")
        .replace("chips_per_channel = 4", "chips_per_channel = 1")
        .replace("read_percent = 70.0", "read_percent = 100.0")
        .replace("requests = 1000000", "requests = 20000")
        .replace(r#"policy = "dftl-partitioned-log""#, r#"policy = "dftl""#);
    let cfg = Config::from_toml_str(&text, path).unwrap();
    let mut sim = Simulation::new(cfg).unwrap();
    sim.precondition(&mut NoProgress).unwrap();
    let res = sim.run_workload(&mut NoProgress).unwrap();
    assert_eq!(res.host.counters.reads, 20_000);
    let m = res.mapping.as_ref().unwrap();
    assert!(m.translation_programs.host_read >= 32, "{m:?}");
    let read = &res.latency_ns.as_ref().unwrap().read;
    assert!(
        res.host.sim_time_ns > 1_000_000_000,
        "{}",
        res.host.sim_time_ns
    );
    assert!(read.max < 40_000_000, "read max {} ns", read.max);
    assert!(read.p99_99 < 40_000_000, "read p99.99 {} ns", read.p99_99);
}
