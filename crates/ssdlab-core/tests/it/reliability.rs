//! Read reclaim (`ftl.read_reclaim`) and retention refresh (`ftl.refresh`): hand-checked
//! counts on tiny devices in both modes. The integrity oracle with the jobs on is in
//! `integrity.rs`, the swarm draws them (`swarm.rs`).

use crate::common;
use common::{flush, open, req, tiny};
use ssdlab_core::config::{Config, Mode, ReclaimConfig, RefreshConfig};
use ssdlab_core::flash::ids::{Lpn, PlaneId};
use ssdlab_core::flash::{Cause, OpKind};
use ssdlab_core::policy::{reclaim, refresh};
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::{NoProgress, Simulation};
use ssdlab_workload::{HostOp, HostRequest};

/// Read reclaim after `read_count` reads.
pub fn reclaim_after(read_count: u32) -> ReclaimConfig {
    ReclaimConfig::Threshold(reclaim::threshold::Params {
        read_count,
        urgent_read_count: 0,
    })
}

/// Retention refresh at `age_ms`, scanned every `scan_interval_ms`.
pub fn refresh_at(age_ms: u64, scan_interval_ms: u64) -> RefreshConfig {
    RefreshConfig::Age(refresh::age::Params {
        age_ms,
        scan_interval_ms,
    })
}

/// `req` arriving at `ms`.
fn at(ms: u64, mut r: HostRequest) -> HostRequest {
    r.arrival_ns = ms * 1_000_000;
    r
}

/// (reads, programs, erases) of `cause`.
fn ops(c: &ssdlab_core::ftl::NandCounts, cause: Cause) -> (u64, u64, u64) {
    (
        c.get(OpKind::Read, cause),
        c.get(OpKind::Program, cause),
        c.get(OpKind::Erase, cause),
    )
}

/// 1 plane × 7 blocks × 4 pages, a unit per page, 8 logical units (OP 2.5: the wear-stream
/// block the jobs copy into is kept back), reclaim after 3 reads.
/// fill 0..8 → blocks 0 {0,1,2,3} and 1 {4..7} full; write 0 → block 2 page 0, block 0
/// holds V = 3 valid units {1,2,3}. Reads of unit 1: the third makes block 0 due, and its
/// reclaim copies its 3 units (3 reads, 3 programs into wear-stream block 3) and erases
/// it; no GC (free blocks: 4, then 3 with block 3 open, 4 after the erase). A fourth read
/// (of unit 1's new copy, in open block 3) and reads of block 1 below the count do
/// nothing.
#[test]
fn a_block_read_n_times_is_reclaimed_once_with_its_valid_units() {
    let mut c = tiny(1, 7, 4, 1, 2.5);
    c.ftl.read_reclaim = reclaim_after(3);
    let mut sim = Simulation::new(c).unwrap();
    assert_eq!(sim.derived.logical_units, 8);
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    for lpn in [0, 1, 2, 3, 4, 5, 6, 7, 0] {
        d.write_unit(lpn).unwrap();
    }
    let read = |u| req(HostOp::Read, u, 1);
    for _ in 0..2 {
        d.submit(&read(1)).unwrap();
    }
    assert_eq!(d.ftl.media().blocks().reads_since_erase[..2], [2, 0]);
    assert_eq!(d.ftl.counters().reclaimed_blocks, 0);
    d.submit(&read(1)).unwrap();
    let c = *d.ftl.counters();
    assert_eq!(ops(&c.nand, Cause::Reclaim), (3, 3, 1));
    assert_eq!((c.reclaimed_blocks, c.reclaimed_units), (1, 3));
    assert_eq!((c.gc_invocations, ops(&c.nand, Cause::Gc)), (0, (0, 0, 0)));
    assert_eq!(c.nand.get(OpKind::Read, Cause::Host), 3);
    let blocks = d.ftl.media().blocks();
    assert_eq!(d.ftl.erase_counts()[..4], [1, 0, 0, 0]);
    assert_eq!(blocks.reads_since_erase[0], 0, "cleared by the erase");
    for (u, slot) in [(1, 12), (2, 13), (3, 14)] {
        assert_eq!(d.ftl.media().slot_of(Lpn(u)).0, slot, "unit {u} in block 3");
    }
    assert_eq!(d.ftl.media().free_blocks(0, PlaneId(0)), 4);
    d.submit(&read(1)).unwrap();
    d.submit(&read(4)).unwrap();
    d.submit(&read(5)).unwrap();
    let c = d.ftl.counters();
    assert_eq!(
        (c.reclaimed_blocks, ops(&c.nand, Cause::Reclaim)),
        (1, (3, 3, 1))
    );
    d.ftl.check_invariants().unwrap();
}

/// Timed: the same device and sequence, the reads 10 ms apart; the reclaim runs in the
/// background (its erase, 25 ms, done well before the last read at 200 ms) and its
/// operations count in the measured phase's `nand` and WAF.
#[test]
fn timed_reclaim_counts_by_cause_and_in_waf() {
    let mut c = tiny(1, 7, 4, 1, 2.5);
    c.mode = Mode::Timed;
    c.ftl.read_reclaim = reclaim_after(3);
    let mut sim = Simulation::new(c).unwrap();
    let mut reqs: Vec<HostRequest> = [0, 1, 2, 3, 4, 5, 6, 7, 0]
        .iter()
        .map(|&u| req(HostOp::Write, u, 1))
        .collect();
    reqs.push(flush());
    for ms in [10, 20, 30] {
        reqs.push(at(ms, req(HostOp::Read, 1, 1)));
    }
    reqs.push(at(200, req(HostOp::Read, 0, 1)));
    let r = sim
        .run_workload_with(open(reqs.clone()), &mut NoProgress)
        .unwrap();
    common::assert_all_completed(&r, &reqs);
    let n = &r.nand;
    assert_eq!(
        (n.reads.reclaim, n.programs.reclaim, n.erases.reclaim),
        (3, 3, 1)
    );
    assert_eq!((r.gc.reclaimed_blocks, r.gc.reclaimed_units), (1, 3));
    assert_eq!((n.programs.host, n.programs.total), (9, 12));
    assert_eq!(r.waf, (12.0f64 / 9.0 * 1e6).round() / 1e6);
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"reclaim\":3") && !json.contains("\"refresh\""));
    // The audit's conservation of operations by cause shows the reclaim's figures.
    let check = r.audit.checks.iter().find(|c| c.name == "nand_by_cause");
    let json = serde_json::to_string(&check).unwrap();
    assert!(json.contains("\"gc.reclaimed_units\":3"), "{json}");
    assert!(json.contains("\"verdict\":\"ok\""), "{json}");
}

/// Timed refresh by age (250 ms, scanned every 10 ms): blocks 0 and 1 are written at about
/// 0 ms; the read at 300 ms scans and finds both due, so each is refreshed, 4 units each
/// (8 reads, 8 programs, 2 erases; one job per plane at a time). The read at 500 ms scans
/// again: the copies, written from about 300 ms, are younger than 250 ms. With an age
/// beyond the run nothing moves; with 20 ms the copies are refreshed again.
#[test]
fn timed_refresh_moves_old_blocks_once() {
    let run = |age_ms| {
        let mut c = tiny(1, 7, 4, 1, 2.5);
        c.mode = Mode::Timed;
        c.ftl.refresh = refresh_at(age_ms, 10);
        let mut sim = Simulation::new(c).unwrap();
        let mut reqs: Vec<HostRequest> = (0..8).map(|u| req(HostOp::Write, u, 1)).collect();
        reqs.push(flush());
        reqs.push(at(300, req(HostOp::Read, 0, 1)));
        reqs.push(at(500, req(HostOp::Read, 5, 1)));
        let r = sim
            .run_workload_with(open(reqs.clone()), &mut NoProgress)
            .unwrap();
        common::assert_all_completed(&r, &reqs);
        r
    };
    let r = run(250);
    let n = &r.nand;
    assert_eq!(
        (n.reads.refresh, n.programs.refresh, n.erases.refresh),
        (8, 8, 2)
    );
    assert_eq!((r.gc.refreshed_blocks, r.gc.refreshed_units), (2, 8));
    assert_eq!((n.reads.reclaim, n.programs.gc), (0, 0));
    // Older than the run: never due.
    let r = run(600);
    assert_eq!((r.gc.refreshed_blocks, r.nand.programs.refresh), (0, 0));
    // Younger than the copies: the read at 500 ms refreshes them too (counted as started).
    let r = run(20);
    assert!(r.gc.refreshed_blocks > 2, "{}", r.gc.refreshed_blocks);
}

/// The keys are validated with errors naming them, and refused on a zoned device.
#[test]
fn reliability_keys_are_validated() {
    let base = common::tiny(1, 7, 4, 1, 2.5);
    let err = |edit: &dyn Fn(&mut Config)| {
        let mut c = base.clone();
        edit(&mut c);
        c.validate()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(err(&|c| c.ftl.read_reclaim = reclaim_after(0)).contains("ftl.read_reclaim.read_count"));
    assert!(err(&|c| c.ftl.refresh = refresh_at(0, 1)).contains("ftl.refresh.age_ms"));
    assert!(err(&|c| c.ftl.refresh = refresh_at(1, 0)).contains("ftl.refresh.scan_interval_ms"));
    assert_eq!(err(&|c| c.ftl.read_reclaim = reclaim_after(5)), "");
    let ftl = |t: &str| toml::from_str::<ssdlab_core::config::FtlConfig>(t);
    let f = ftl(
        "read_reclaim = { policy = \"threshold\", read_count = 7 }\n\
                 refresh = { policy = \"age\", age_ms = 9, scan_interval_ms = 2 }\n",
    )
    .unwrap();
    assert_eq!(
        (f.read_reclaim, f.refresh),
        (reclaim_after(7), refresh_at(9, 2))
    );
    assert!(ftl("read_reclaim = { policy = \"threshold\", reads = 7 }").is_err());
    // Left out of a written config while off.
    let text = toml::to_string(&base.ftl).unwrap();
    assert!(!text.contains("read_reclaim") && !text.contains("refresh"));
}

/// Read disturb bounded at a WAF cost (functional, 2 planes × 16 blocks × 8 pages, 2 units a
/// page): a read-hot workload (9 reads of 4 hot units per write of a random unit) after
/// a fill. Without reclaim the hot units' blocks gather thousands of reads since their
/// erase; with `read_count = 64` no full block holds more than the count plus the reads of
/// one request past it (a block is relocated by the background turn of the read that made
/// it due), and the relocations cost programs (WAF above the run without).
#[test]
fn read_reclaim_bounds_reads_since_erase_at_a_waf_cost() {
    let run = |reclaim: Option<u32>| {
        let mut c = tiny(2, 16, 8, 2, 1.0);
        if let Some(n) = reclaim {
            c.ftl.read_reclaim = reclaim_after(n);
        }
        let mut sim = Simulation::new(c).unwrap();
        let units = sim.derived.logical_units as u64;
        let mut d = FunctionalDriver::new(&mut sim.ftl);
        for u in 0..units {
            d.write_unit(u as u32).unwrap();
        }
        let mut rng = common::Rng(0x9e37_79b9_7f4a_7c15);
        let (mut writes, mut max_reads) = (0u64, 0u32);
        for i in 0..20_000u64 {
            if i % 10 == 9 {
                d.submit(&req(HostOp::Write, rng.below(units), 1)).unwrap();
                writes += 1;
            } else {
                d.submit(&req(HostOp::Read, rng.below(4), 1)).unwrap();
            }
            let b = d.ftl.media().blocks();
            let full = (0..b.len()).filter(|&x| b.state[x] == ssdlab_core::flash::BlockState::Full);
            max_reads = max_reads.max(full.map(|x| b.reads_since_erase[x]).max().unwrap_or(0));
        }
        let c = *d.ftl.counters();
        let waf = c.nand.total(OpKind::Program) as f64 * 2.0 / (units + writes) as f64;
        (max_reads, c.reclaimed_blocks, waf)
    };
    let (off_reads, off_blocks, off_waf) = run(None);
    let (on_reads, on_blocks, on_waf) = run(Some(64));
    eprintln!(
        "read-hot: without reclaim max {off_reads} reads since erase, WAF {off_waf:.3}; \
         with read_count 64: max {on_reads}, {on_blocks} blocks reclaimed, WAF {on_waf:.3}"
    );
    assert_eq!(off_blocks, 0);
    assert!(off_reads > 1000, "{off_reads}");
    assert!(on_reads <= 64, "{on_reads}");
    assert!(on_blocks > 50, "{on_blocks}");
    assert!(on_waf > off_waf, "{on_waf} vs {off_waf}");
}

/// Read reclaim after `read_count` reads, urgent from `urgent_read_count` (0: never).
fn reclaim_urgent(read_count: u32, urgent_read_count: u32) -> ReclaimConfig {
    ReclaimConfig::Threshold(reclaim::threshold::Params {
        read_count,
        urgent_read_count,
    })
}

/// An RBER model of read disturb alone: `RBER = γ·PE·r` (no base, wear or retention
/// term; every cell mode), on blocks of `pe` initial P/E cycles.
fn disturb_only(c: &mut Config, gamma: f64, pe: u32) {
    let p = ssdlab_core::flash::reliability::RberParams {
        base_rber: 0.0,
        wear_coefficient: 0.0,
        retention_coefficient: 0.0,
        disturb_coefficient: gamma,
        disturb_pe_exponent: 1.0,
        disturb_reads_exponent: 1.0,
        ..ssdlab_core::flash::reliability::RberParams::default_for(
            ssdlab_core::config::CellMode::Tlc,
        )
    };
    let r = &mut c.device.reliability;
    r.initial_pe_cycles = pe;
    r.rber.slc = p.clone();
    r.rber.mlc = p.clone();
    r.rber.tlc = p.clone();
    r.rber.qlc = p;
}

/// Urgency (issue 51): a read-hot closed loop at QD 16 on a tiny timed device (1 plane ×
/// 7 blocks × 4 pages, a unit per page): units 0..8 fill blocks 0 and 1, then 3,000
/// reads of unit 1. Reclaim after 20 reads. With main's rule (no urgency) the hot die
/// always has a host read queued and reads go first, so the reclaim of block 0 starts
/// (its copies queued) but gets no batch until the reads are over: one block reclaimed,
/// and its last copy read saw block 0 read 3,003 times since its erase. With `urgent_read_count =
/// 40` the job turns urgent at the 40th read of its source and its die alternates reads
/// and background batches: the hot units move from block to block (each full, so due
/// again at 20 reads), 75 blocks are reclaimed, and no read sees more than the urgent
/// count plus the reads issued before unit 1's copy completes (the job's second: a copy
/// read and program each take a background batch, a host read runs between them, and
/// reads are counted at issue): measured 43, bounded here by 40 + 16. The largest reads-since-erase a read saw is measured through the
/// RBER model, set to read disturb alone (`RBER = γ·PE·r`, γ·PE = 1e-12 per read: far
/// below any retry).
#[test]
fn urgent_reclaim_runs_on_a_read_saturated_die() {
    const READS: u64 = 3000;
    let run = |urgent: u32| {
        let mut c = tiny(1, 7, 4, 1, 2.5);
        c.mode = Mode::Timed;
        c.ftl.read_reclaim = reclaim_urgent(20, urgent);
        disturb_only(&mut c, 1e-15, 1000);
        c.precondition.enabled = true;
        c.precondition.random_overwrite_capacity_multiple = 0.0;
        let mut sim = Simulation::new(c).unwrap();
        sim.precondition(&mut NoProgress).unwrap();
        let reqs: Vec<HostRequest> = (0..READS).map(|_| req(HostOp::Read, 1, 1)).collect();
        let r = sim
            .run_workload_with(common::closed(reqs.clone(), 16), &mut NoProgress)
            .unwrap();
        common::assert_all_completed(&r, &reqs);
        let rel = r
            .reliability
            .as_ref()
            .expect("aged device: section present");
        assert_eq!(rel.retries, 0);
        // γ·PE = 1e-12 per read (PE = 1000 + the block's erases this run, ≤ 2 % more).
        let max_reads = rel.rber_max / 1e-12;
        (r, max_reads)
    };
    let (main, main_reads) = run(0);
    assert_eq!(
        main.gc.reclaimed_blocks, 1,
        "one job, stuck behind the reads"
    );
    assert_eq!(main.gc.urgent_relocations, 0);
    assert!(
        (READS as f64..(READS + 4) as f64).contains(&main_reads),
        "every read hit block 0 (and the job's copy reads after them): {main_reads}"
    );
    let (urgent, urgent_reads) = run(40);
    assert!(
        urgent.gc.reclaimed_blocks > 50,
        "{}",
        urgent.gc.reclaimed_blocks
    );
    assert_eq!(urgent.gc.urgent_relocations, urgent.gc.reclaimed_blocks);
    assert_eq!(urgent.nand.erases.reclaim, urgent.gc.reclaimed_blocks);
    assert!(
        (40.0..=56.0 * 1.02).contains(&urgent_reads),
        "reads since erase bounded: {urgent_reads}"
    );
    eprintln!(
        "QD 16 read-hot: main's rule max {main_reads:.0} reads since erase, 1 block; \
         urgent at 40: max {urgent_reads:.1}, {} blocks",
        urgent.gc.reclaimed_blocks
    );
}

/// The hard-decode limit of `c`'s device (whole-page reads fail step 0 with 1e-3).
fn hard_limit(c: &Config) -> f64 {
    let page = c.device.geometry.page_size_bytes;
    c.device.reliability.hard_limit_rber(page)
}

/// `rber` reclaim, exact (functional, the device of the first test): read disturb alone,
/// `RBER = γ·PE·r` with PE = 1000 and γ·1000 = 0.5·L / 5.5 (L the hard-decode limit),
/// margin 0.5: the RBER reaches 0.5·L at r = 5.5, so block 0 is due at its 6th read since
/// its erase (its reads counted before the policy is asked), not at its 5th; it is
/// counted as reclaimed by RBER. Block 1, read 5 times, is not due.
#[test]
fn rber_reclaim_relocates_at_the_read_that_crosses_the_margin() {
    let mut c = tiny(1, 7, 4, 1, 2.5);
    let limit = hard_limit(&c);
    assert!((1e-3..1e-2).contains(&limit), "{limit}");
    disturb_only(&mut c, 0.5 * limit / 5.5 / 1000.0, 1000);
    c.ftl.read_reclaim = ReclaimConfig::Rber(reclaim::rber::Params {
        margin: 0.5,
        urgent_margin: 0.0,
    });
    let mut sim = Simulation::new(c).unwrap();
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    for lpn in [0, 1, 2, 3, 4, 5, 6, 7, 0] {
        d.write_unit(lpn).unwrap();
    }
    let read = |u| req(HostOp::Read, u, 1);
    for _ in 0..5 {
        d.submit(&read(1)).unwrap();
    }
    assert_eq!(d.ftl.media().blocks().reads_since_erase[0], 5);
    assert_eq!(
        d.ftl.counters().reclaimed_blocks,
        0,
        "5 reads: 5/5.5 of the mark"
    );
    d.submit(&read(1)).unwrap();
    let c = *d.ftl.counters();
    assert_eq!((c.reclaimed_blocks, c.reclaimed_blocks_rber), (1, 1));
    assert_eq!(
        (c.reclaimed_units, ops(&c.nand, Cause::Reclaim)),
        (3, (3, 3, 1))
    );
    assert_eq!(c.reliability.retries, 0, "far below any retry");
    // Block 1, read 5 times, is not due.
    for _ in 0..5 {
        d.submit(&read(5)).unwrap();
    }
    assert_eq!(d.ftl.counters().reclaimed_blocks, 1);
    d.ftl.check_invariants().unwrap();
}

/// `rber` refresh (timed, scanned every 10 ms): retention alone, `RBER = β·PE·t` (t in
/// days, PE = 1000, exponent 1) with β set so that the RBER reaches margin 0.5 of the
/// hard-decode limit at an age of exactly 250 ms. Blocks 0 and 1 are written at about
/// 0 ms: the read at 240 ms scans and finds neither due (ages < 240 ms); the read at
/// 260 ms finds both (ages > 250 ms: their first programs complete within 10 ms), so each
/// is refreshed once, by RBER (8 units).
#[test]
fn rber_refresh_relocates_once_the_age_crosses_the_margin() {
    let run = |reads_ms: &[u64]| {
        let mut c = tiny(1, 7, 4, 1, 2.5);
        c.mode = Mode::Timed;
        let limit = hard_limit(&c);
        let t_days = 250e6 / ssdlab_core::flash::reliability::NS_PER_DAY;
        let p = ssdlab_core::flash::reliability::RberParams {
            base_rber: 0.0,
            wear_coefficient: 0.0,
            retention_coefficient: 0.5 * limit / t_days / 1000.0,
            retention_pe_exponent: 1.0,
            retention_days_exponent: 1.0,
            disturb_coefficient: 0.0,
            ..ssdlab_core::flash::reliability::RberParams::default_for(
                ssdlab_core::config::CellMode::Tlc,
            )
        };
        let r = &mut c.device.reliability;
        r.initial_pe_cycles = 1000;
        r.rber.tlc = p;
        c.ftl.refresh = RefreshConfig::Rber(refresh::rber::Params {
            margin: 0.5,
            urgent_margin: 0.0,
            scan_interval_ms: 10,
        });
        let mut sim = Simulation::new(c).unwrap();
        let mut reqs: Vec<HostRequest> = (0..8).map(|u| req(HostOp::Write, u, 1)).collect();
        reqs.push(flush());
        for &ms in reads_ms {
            reqs.push(at(ms, req(HostOp::Read, 0, 1)));
        }
        let r = sim
            .run_workload_with(open(reqs.clone()), &mut NoProgress)
            .unwrap();
        common::assert_all_completed(&r, &reqs);
        r
    };
    let r = run(&[240]);
    assert_eq!((r.gc.refreshed_blocks, r.nand.programs.refresh), (0, 0));
    let r = run(&[240, 260]);
    assert_eq!(
        (
            r.gc.refreshed_blocks,
            r.gc.refreshed_blocks_by_rber,
            r.gc.refreshed_units
        ),
        (2, 2, 8)
    );
    assert_eq!((r.nand.reads.refresh, r.nand.programs.refresh), (8, 8));
    assert_eq!(r.gc.reclaimed_blocks, 0);
}

/// The hard-decode limit is the RBER at which a whole page's step-0 read fails with
/// probability 1e-3 (bisection): 5.46e-3 for the default ECC (72 bits per 1 KiB) and a
/// 16 KiB page (16 codewords), 5.73e-3 for a 4 KiB page; the never-retry threshold is the
/// same search at 1e-12.
#[test]
fn hard_decode_limit_is_the_one_in_a_thousand_failure_rber() {
    use ssdlab_core::flash::reliability::{read_fail, NEGLIGIBLE};
    let r = ssdlab_core::config::ReliabilityConfig::default();
    let ecc = r.ecc();
    for (page, codewords, want) in [(16384, 16, 5.464e-3), (4096, 4, 5.734e-3)] {
        let l = r.hard_limit_rber(page);
        assert!((l - want).abs() < 1e-6, "{page}: {l}");
        let f = |p| read_fail(ecc.codeword_bits, p, ecc.correctable_bits, codewords);
        assert!(
            f(l) < 1e-3 && f(l * (1.0 + 1e-9)) >= 1e-3 * (1.0 - 1e-6),
            "{}",
            f(l)
        );
        assert_eq!(
            ecc.rber_at_read_fail(codewords, NEGLIGIBLE),
            ecc.negligible_rber(codewords)
        );
    }
}
