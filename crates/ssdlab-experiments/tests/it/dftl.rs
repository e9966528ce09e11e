//! Spec 04 / issue 36 item 5: `reproduce dftl`'s paper-timing variant and its per-request
//! breakdown of where the time goes, on the smallest device (scale 32: 2 planes, a 2 GiB
//! data set) with a few thousand requests.

use ssdlab_experiments::dftl::{self, DftlParams, DftlTiming, PAPER_READ_NS};
use ssdlab_experiments::experiment::Check;

fn small(timing: DftlTiming, variants: &[&str]) -> DftlParams {
    DftlParams {
        variants: variants.iter().map(|v| v.to_string()).collect(),
        requests: 4_000,
        scale: 32,
        timing,
        ..DftlParams::paper()
    }
}

#[test]
fn paper_timing_sets_the_boards_read_time_and_a_users_set_still_wins() {
    let tlc = |p: &DftlParams| p.config("dftl").unwrap().device.timing.tlc.clone();
    let preset = tlc(&small(DftlTiming::Preset, &["dftl"]));
    let paper = tlc(&small(DftlTiming::Paper, &["dftl"]));
    assert_eq!(preset.read_ns, 50_000);
    assert_eq!(paper.read_ns, PAPER_READ_NS);
    assert_eq!(PAPER_READ_NS, 400_000, "Fig. 1: two NAND reads in 0.8 ms");
    // Only the read time changes: the paper gives no program or erase time.
    assert_eq!(paper.program_ns, preset.program_ns);
    assert_eq!(paper.erase_loop_ns, preset.erase_loop_ns);
    let mut p = small(DftlTiming::Paper, &["dftl"]);
    p.sets = vec!["device.timing.tlc.read_ns=100000".into()];
    assert_eq!(tlc(&p).read_ns, 100_000);
}

#[test]
fn per_request_breakdown_counts_every_cause_at_the_papers_timing() {
    let p = small(
        DftlTiming::Paper,
        &["page-map", "dftl", "dftl-partitioned-log"],
    );
    let r = dftl::run(&p, &|_| {}).unwrap();
    assert_eq!(r.timing, DftlTiming::Paper);
    assert_eq!((r.read_us, r.program_us), (400.0, 600.0));
    assert_eq!(r.rows.len(), 18);
    let n = p.requests as f64;
    for row in &r.rows {
        let b = &row.per_request;
        let what = format!("{} {} gc={}: {b:?}", row.variant, row.workload, row.gc);
        // Array time is the operations times their times (tR 400, tPROG 600 µs).
        let data_us = b.data_reads * 400.0 + b.data_programs * 600.0;
        assert!((b.data_us - data_us).abs() < 1e-6, "{what}");
        let tr_us = b.translation_reads * 400.0 + b.translation_programs * 600.0;
        assert!((b.translation_us - tr_us).abs() < 1e-6, "{what}");
        assert!((0.0..=1.0).contains(&b.die_utilization), "{what}");
        assert!(b.die_busy_us >= 0.0, "{what}");
        match row.workload {
            // One 4 KiB read is one data NAND read; nothing is programmed.
            "read" => {
                assert_eq!(b.data_reads, 1.0, "{what}");
                assert_eq!((b.data_programs, b.gc_programs, b.erases), (0.0, 0.0, 0.0));
                assert_eq!(b.data_us, 400.0, "{what}");
                // Reads wait for their NAND reads: the dies were busy for them.
                assert!(b.die_busy_us > 0.0, "{what}");
            }
            // Writes read no data.
            "write" => assert_eq!(b.data_reads, 0.0, "{what}"),
            _ => assert!(b.data_reads > 0.5 && b.data_reads < 0.9, "{what}"),
        }
        if row.variant == "page-map" {
            assert_eq!((b.translation_reads, b.translation_programs), (0.0, 0.0));
        } else {
            // Translation reads are the mapping's own (loads and merges) plus the
            // translation region's GC copies, which the breakdown counts as translation.
            assert!(
                b.translation_reads * n >= row.translation_reads as f64,
                "{what}"
            );
            assert!(
                b.translation_programs * n >= row.translation_writes as f64,
                "{what}"
            );
        }
    }
    // dftl's mixed requests pay translation programs (read misses evicting dirty pages
    // and write misses), page-map's none: the cost the ratio to the log variant comes from.
    let d = r.row("dftl", "mixed", false).unwrap();
    assert!(d.per_request.translation_programs > 0.0);
    assert!(d.read_path_programs > 0);
    let md = r.breakdown_markdown();
    assert!(md.contains("Where the time goes"), "{md}");
    assert_eq!(md.matches("| no GC | ").count(), 3, "{md}");
    assert_eq!(md.matches("| GC | ").count(), 3, "{md}");

    // The mixed-ratio check: ±25 % at the paper's timing (±15 % at the preset's), and a
    // failing row says why with both variants' array time per request.
    let mixed_rows = |r: &dftl::DftlReport| -> Vec<Check> {
        r.checks()
            .into_iter()
            .filter(|c| c.claim.starts_with("mixed: log / dftl"))
            .collect()
    };
    // At this size the log's mixed gain is 0.97–0.98×: within ±25 % (the paper's timing),
    // not within ±10 %; each row's verdict follows its tolerance (the preset's ±15 % is
    // checked on the same rows), with a "why" exactly when it fails.
    let mut preset = r.clone();
    preset.timing = DftlTiming::Preset;
    for (report, tol) in [(&r, 25.0), (&preset, 15.0)] {
        let rows = mixed_rows(report);
        assert_eq!(rows.len(), 2);
        for Check {
            group,
            claim: name,
            holds: ok,
            detail,
        } in &rows
        {
            let gc = &(group == "GC");
            assert!(name.contains(&format!("within ±{tol:.0} %")), "{name}");
            let (d, l) = (
                r.row("dftl", "mixed", *gc).unwrap(),
                r.row("dftl-partitioned-log", "mixed", *gc).unwrap(),
            );
            let x = l.iops / d.iops;
            let within = |t: f64| (x / 1.15 - 1.0).abs() * 100.0 <= t;
            assert!(within(25.0) && !within(10.0), "{detail}");
            assert!(detail.starts_with(&format!("{x:.2}×")), "{detail}");
            assert_eq!(*ok, Some(within(tol)), "{detail}");
            let why = format!(
                "; why: array µs per request dftl {:.0} ({:.0} translation",
                d.per_request.array_us(),
                d.per_request.translation_us
            );
            assert_eq!(detail.contains(&why), *ok == Some(false), "{detail}");
            assert!(!detail.contains('\n'), "one line: {detail}");
        }
    }
}

/// A row of the study with the figures the checks read.
fn row(variant: &str, workload: &'static str, gc: bool, iops: f64) -> dftl::DftlRow {
    let partitioned = variant.starts_with("dftl-partitioned");
    dftl::DftlRow {
        audit_warnings: Vec::new(),
        variant: variant.into(),
        workload,
        gc,
        iops,
        mbps: 0.0,
        waf: Some(match variant {
            "page-map" => 2.0,
            "dftl-partitioned-log" => 2.1,
            _ => 3.0,
        }),
        waf_without_translation: None,
        read_p50_ns: if variant == "page-map" { 100 } else { 200 },
        read_p99_ns: if variant == "page-map" { 200 } else { 400 },
        read_p99_99_ns: if variant == "dftl" { 5000 } else { 3000 },
        read_mean_ns: 0.0,
        read_max_ns: 0,
        cmt_hit_ratio: None,
        translation_reads: 0,
        translation_writes: 0,
        read_path_programs: if variant == "dftl" { 10 } else { 0 },
        relocation_programs: 0,
        max_nand_reads_per_host_read: partitioned.then_some(2),
        gc_victims: 0,
        sim_s: 0.0,
        wall_s: 0.0,
        per_request: Default::default(),
        read_ccdf: Vec::new(),
    }
}

/// Each check of the shape, in both device states, on rows changed to make it hold and
/// to make it fail.
#[test]
fn dftl_every_shape_check_can_hold_and_fail() {
    use crate::shape::{assert_each_can_hold_and_fail, Change};
    let mut rows = Vec::new();
    for gc in [false, true] {
        for (v, write, mixed) in [
            ("page-map", 1000.0, 1200.0),
            ("dftl", 500.0, 1000.0),
            ("dftl-partitioned", 450.0, 900.0),
            ("dftl-partitioned-log", 825.0, 1150.0),
        ] {
            rows.push(row(v, "write", gc, write));
            rows.push(row(v, "mixed", gc, mixed));
        }
    }
    let base = dftl::DftlReport {
        timing: DftlTiming::Preset,
        read_us: 50.0,
        program_us: 600.0,
        requests: 1,
        planes: 2,
        cmt_share: 0.0,
        rows,
        wall_s: 0.0,
    };
    let holds = |r: &dftl::DftlReport, key: &str| {
        let (gc, start) = key.split_once('|').unwrap();
        let group = if gc == "true" { "GC" } else { "no GC" };
        r.checks()
            .into_iter()
            .find(|c| c.group == group && c.claim.starts_with(start))
            .unwrap_or_else(|| panic!("{key}"))
            .holds
    };
    type R = dftl::DftlReport;
    fn at<'a>(r: &'a mut R, v: &str, w: &str, gc: bool) -> &'a mut dftl::DftlRow {
        r.rows
            .iter_mut()
            .find(|x| x.variant == v && x.workload == w && x.gc == gc)
            .unwrap()
    }
    let mut cases: Vec<(String, Change<R>, Change<R>)> = Vec::new();
    for gc in [false, true] {
        let k = |s: &str| format!("{gc}|{s}");
        cases.push((
            k("write: log / dftl"),
            Box::new(|_| {}),
            Box::new(move |r| at(r, "dftl-partitioned-log", "write", gc).iops = 1500.0),
        ));
        cases.push((
            k("mixed: log / dftl"),
            Box::new(|_| {}),
            Box::new(move |r| at(r, "dftl-partitioned-log", "mixed", gc).iops = 2000.0),
        ));
        cases.push((
            k("write IOPS: partitioned ≤ dftl < log ≤ page-map"),
            Box::new(|_| {}),
            Box::new(move |r| at(r, "dftl-partitioned", "write", gc).iops = 600.0),
        ));
        cases.push((
            k("write WAF"),
            Box::new(|_| {}),
            Box::new(move |r| at(r, "dftl-partitioned-log", "write", gc).waf = Some(3.5)),
        ));
        cases.push((
            k("mixed read latency: page-map fastest"),
            Box::new(|_| {}),
            Box::new(move |r| at(r, "page-map", "mixed", gc).read_p99_ns = 1000),
        ));
        cases.push((
            k("partitioned variants"),
            Box::new(|_| {}),
            Box::new(move |r| at(r, "dftl-partitioned-log", "mixed", gc).read_path_programs = 1),
        ));
        cases.push((
            k("dftl: programs on reads' paths"),
            Box::new(|_| {}),
            Box::new(move |r| at(r, "dftl", "mixed", gc).read_p99_99_ns = 2000),
        ));
    }
    assert_each_can_hold_and_fail(&base, base.checks().len(), holds, cases);
}
