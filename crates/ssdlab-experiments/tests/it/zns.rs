//! Issue 37's block-interface study (`reproduce zns`) at its smallest scale (fixed seed):
//! the runs and their arithmetic, and the expected shape: device WAF 1 on ZNS, FDP below
//! the conventional device on the hot/cold mix and not below it on uniform (writes split
//! over the handles by address), ZNS's total WAF at
//! most the conventional device's at 28 % spare. The FDP check fails when the device puts
//! both placement identifiers on one handle (identifiers ignored).

use ssdlab_experiments::zns::{self, Device, Mix, ZnsParams, ZnsReport};

/// One channel (256 MiB raw).
const SCALE: u32 = 4;

fn report(p: &ZnsParams) -> ZnsReport {
    zns::run(p, &|_| {}).unwrap()
}

fn holds(r: &ZnsReport, group: &str, start: &str) -> Option<bool> {
    let shape = r.checks();
    shape
        .iter()
        .find(|c| c.group == group && c.claim.starts_with(start))
        .unwrap_or_else(|| panic!("{group}: {start}: {shape:?}"))
        .holds
}

#[test]
fn zns_study_rows_arithmetic_and_shape() {
    let mut p = ZnsParams::paper(SCALE).unwrap();
    // The LSM rows have their own test below (their checks on set figures).
    p.lsm = false;
    let g = &p.base.device.geometry;
    assert_eq!(
        (g.channels, g.blocks_per_plane, g.pages_per_block),
        (1, 256, 32)
    );
    let r = report(&p);
    // 12 runs in (mix, spare, device) order.
    let order: Vec<(Mix, f64, Device)> =
        r.runs.iter().map(|x| (x.mix, x.spare, x.device)).collect();
    let mut want = Vec::new();
    for m in Mix::ALL {
        for s in zns::SPARE {
            for d in Device::ALL {
                want.push((m, s, d));
            }
        }
    }
    assert_eq!(order, want);
    assert_eq!(r.csv().lines().count(), 13);
    assert_eq!(r.csv().lines().next().unwrap(), zns::CSV_HEADER);
    assert_eq!(
        (r.raw_bytes, r.zone_bytes, r.zones),
        (256 << 20, 1 << 20, 254)
    );
    for x in &r.runs {
        assert_eq!(x.request_errors, 0, "{x:?}");
        assert_eq!(x.total_waf, x.device_waf * x.host_waf, "{x:?}");
        // The measured phase wrote its share of the user space (the last request may
        // overshoot by its size).
        let want = (p.measure_capacity_multiple * x.user_capacity_bytes as f64) as u64;
        assert!(
            x.user_write_bytes >= want && x.user_write_bytes < want + (1 << 20),
            "{x:?}"
        );
        match x.device {
            Device::Zns => {
                // No device GC; host WAF = (user + relocated) / user.
                assert_eq!(x.gc_victims, 0, "{x:?}");
                assert!(x.host_waf > 1.5, "{x:?}");
                // The latency columns are the user's: a 16 KiB user write is one device
                // write; the layer's relocations (requests of at most 128 KiB) apart.
                assert_eq!(x.write.count, x.user_write_bytes / 16384, "{x:?}");
                let moved = x.write_bytes - x.user_write_bytes;
                let rw = x.relocation_write.as_ref().unwrap().count;
                assert!(rw >= moved / (128 << 10) && rw <= moved / 16384, "{x:?}");
                let rr = x.relocation_read.as_ref().unwrap().count;
                assert!(rr >= moved / (128 << 10) && rr <= moved / 16384, "{x:?}");
                // Every zone filled is reset once in steady state: resets ≈ device bytes
                // written / zone size.
                let resets = x.zone_resets.unwrap() as f64;
                let per_zone = x.write_bytes as f64 / r.zone_bytes as f64;
                assert!(
                    (resets / per_zone - 1.0).abs() < 0.05,
                    "{resets} {per_zone}"
                );
                // User space = zones · zone capacity / (1 + spare), in whole units.
                let user = (254.0 * (1u64 << 20) as f64 / (1.0 + x.spare)) as u64;
                assert_eq!(x.user_capacity_bytes, user / 16384 * 16384, "{x:?}");
            }
            _ => {
                assert_eq!((x.host_waf, x.zone_resets), (1.0, None), "{x:?}");
                assert!(x.relocation_read.is_none() && x.relocation_write.is_none());
                assert_eq!(x.write.count, x.write_bytes / 16384, "{x:?}");
                assert!(x.gc_victims > 0, "{x:?}");
            }
        }
    }
    // FDP's uniform runs split the writes over both handles (by address): not the
    // conventional run again (they were identical, byte for byte, when every uniform write
    // carried placement id 0, and the check comparing them could not fail).
    for s in zns::SPARE {
        let c = r.run_of(Device::Conventional, Mix::Uniform, s).unwrap();
        let f = r.run_of(Device::Fdp, Mix::Uniform, s).unwrap();
        assert_ne!(f.device_waf, c.device_waf, "{s}");
        assert_ne!(f.write.p99, c.write.p99, "{s}");
    }
    // The expected shape at this scale.
    assert_eq!(holds(&r, "all", "device WAF = 1 on ZNS"), Some(true));
    for sp in ["7 %", "28 %"] {
        assert_eq!(
            holds(
                &r,
                "uniform",
                &format!("FDP device WAF not below conventional's at {sp}")
            ),
            Some(true)
        );
        assert_eq!(
            holds(
                &r,
                "hot-cold",
                &format!("FDP device WAF < conventional's at {sp}")
            ),
            Some(true)
        );
    }
    assert_eq!(
        holds(&r, "hot-cold", "total WAF on ZNS ≤ conventional at 28 %"),
        Some(true)
    );
    // A failed check says why.
    for c in r.checks().iter().filter(|c| c.holds == Some(false)) {
        assert!(c.detail.contains("; "), "{c:?}");
    }
    let md = r.markdown();
    assert!(md.contains("| 28 % | zns | "), "{md}");
}

/// An FDP device that puts both placement identifiers on handle 0 (as if it ignored
/// them) is the conventional device: the hot/cold check misses.
#[test]
fn zns_study_fdp_check_fails_when_placement_ids_are_ignored() {
    let mut p = ZnsParams::paper(SCALE).unwrap();
    p.devices = vec![Device::Conventional, Device::Fdp];
    p.spare = vec![0.28];
    p.fdp.placement_handles = vec![0, 0];
    let r = report(&p);
    let conv = r.run_of(Device::Conventional, Mix::HotCold, 0.28).unwrap();
    let fdp = r.run_of(Device::Fdp, Mix::HotCold, 0.28).unwrap();
    assert_eq!(fdp.device_waf, conv.device_waf);
    assert_eq!(
        holds(&r, "hot-cold", "FDP device WAF < conventional's at 28 %"),
        Some(false)
    );
    // The ZNS checks have no runs to judge.
    assert_eq!(holds(&r, "all", "device WAF = 1 on ZNS"), None);
}

#[test]
fn zns_study_refuses_a_bad_scale_and_a_conventional_base() {
    let e = ZnsParams::paper(3).unwrap_err().to_string();
    assert!(e.starts_with("scale: 3: 1, 2 or 4"), "{e}");
    let mut p = ZnsParams::paper(SCALE).unwrap();
    p.base.device.zns = None;
    let e = p.check().unwrap_err().to_string();
    assert!(e.starts_with("device.zns: "), "{e}");
}

/// One run of the study with the figures the checks read (the rest empty).
fn row(device: Device, mix: Mix, spare: f64, device_waf: f64, host_waf: f64) -> zns::ZnsRun {
    let none = ssdlab_core::stats::LatencySummary::of(&ssdlab_core::stats::new_histogram());
    zns::ZnsRun {
        audit_warnings: Vec::new(),
        device,
        mix,
        spare,
        user_capacity_bytes: 1 << 30,
        warmup_write_bytes: 0,
        write_bytes: 0,
        user_write_bytes: 0,
        user_read_bytes: 0,
        sim_time_ns: 1,
        device_waf,
        host_waf,
        total_waf: device_waf * host_waf,
        user_mb_per_s: 0.0,
        read: none.clone(),
        write: none,
        relocation_read: None,
        relocation_write: None,
        gc_victims: 0,
        zone_resets: None,
        zone_resets_per_gb: None,
        request_errors: 0,
        warmup_device_waf: device_waf,
        wall_s: 0.0,
    }
}

/// Every check of the expected shape is decided by the rows: for each, one change of the
/// rows makes it hold and another makes it fail (a check that cannot fail is a defect:
/// the FDP-on-uniform check compared two identical runs before FDP's uniform writes were
/// split over the handles by address).
#[test]
fn zns_every_shape_check_can_hold_and_fail() {
    let mut runs = Vec::new();
    for m in Mix::ALL {
        for s in zns::SPARE {
            runs.push(row(Device::Conventional, m, s, 3.0, 1.0));
            runs.push(row(Device::Zns, m, s, 1.0, 2.5));
            runs.push(row(Device::Fdp, m, s, 2.5, 1.0));
        }
    }
    let base = ZnsReport {
        scale: 4,
        raw_bytes: 0,
        zone_bytes: 1 << 20,
        zones: 1,
        warmup_capacity_multiple: 3.0,
        measure_capacity_multiple: 2.0,
        read_percent: 20.0,
        block_bytes: 16384,
        queue_depth: 16,
        hot_io_percent: 80.0,
        hot_space_percent: 20.0,
        runs,
        raw: Vec::new(),
        lsm_runs: Vec::new(),
        wall_s: 0.0,
    };
    // A run's figures set: device WAF and host WAF (total = their product).
    let set = |r: &mut ZnsReport, d: Device, m: Mix, s: f64, dw: f64, hw: f64| {
        let x = r
            .runs
            .iter_mut()
            .find(|x| x.device == d && x.mix == m && x.spare == s)
            .unwrap();
        (x.device_waf, x.host_waf, x.total_waf) = (dw, hw, dw * hw);
    };
    type Change = Box<dyn Fn(&mut ZnsReport)>;
    let mut cases: Vec<(&str, String, Change, Change)> = vec![(
        "all",
        "device WAF = 1 on ZNS".into(),
        Box::new(|_| {}),
        Box::new(move |r| set(r, Device::Zns, Mix::HotCold, 0.28, 1.02, 2.5)),
    )];
    for s in zns::SPARE {
        let pc = format!("{:.0} %", s * 100.0);
        cases.push((
            "uniform",
            format!("FDP device WAF not below conventional's at {pc}"),
            Box::new(move |r| set(r, Device::Fdp, Mix::Uniform, s, 3.1, 1.0)),
            Box::new(move |r| set(r, Device::Fdp, Mix::Uniform, s, 2.9, 1.0)),
        ));
        cases.push((
            "hot-cold",
            format!("total WAF on ZNS ≤ conventional at {pc}"),
            Box::new(move |r| set(r, Device::Zns, Mix::HotCold, s, 1.0, 2.9)),
            Box::new(move |r| set(r, Device::Zns, Mix::HotCold, s, 1.0, 3.1)),
        ));
        cases.push((
            "hot-cold",
            format!("FDP device WAF < conventional's at {pc}"),
            Box::new(move |r| set(r, Device::Fdp, Mix::HotCold, s, 2.9, 1.0)),
            Box::new(move |r| set(r, Device::Fdp, Mix::HotCold, s, 2.99, 1.0)),
        ));
    }
    // Every check of the report is one of the cases.
    assert_eq!(base.checks().len(), cases.len());
    for (group, check, good, bad) in &cases {
        for (change, want) in [(good, true), (bad, false)] {
            let mut r = base.clone();
            change(&mut r);
            assert_eq!(holds(&r, group, check), Some(want), "{group}: {check}");
        }
    }
}

/// The §5.1 raw workload at scale 4 (one die): its rows in order, their arithmetic, and
/// the paper's shape (ZNS WAF 1, throughput 7 % < 28 % < ZNS, ZNS reads faster under a
/// write load), each check holding here.
#[test]
fn zns_raw_workload_rows_and_shape() {
    use zns::raw::{self, Kind};
    let p = ZnsParams::paper(SCALE).unwrap();
    let rows = raw::run(&p, &|_| {}).unwrap();
    let order: Vec<(Kind, Device, f64)> =
        rows.iter().map(|r| (r.kind, r.device, r.spare)).collect();
    let mut want = Vec::new();
    for k in [Kind::Throughput]
        .into_iter()
        .chain(raw::WRITE_LOADS.iter().map(|&l| Kind::Latency(l)))
    {
        want.push((k, Device::Zns, 0.0));
        for s in zns::SPARE {
            want.push((k, Device::Conventional, s));
        }
    }
    assert_eq!(order, want);
    let zns_rate = rows[0].write_mib_per_s;
    for r in &rows {
        assert_eq!(r.request_errors, 0, "{r:?}");
        let rate = r.write_bytes as f64 / (1u64 << 20) as f64 / (r.sim_time_ns as f64 / 1e9);
        assert!((r.write_mib_per_s - rate).abs() < 1e-9, "{r:?}");
        assert_eq!(r.zone_resets.is_some(), r.device == Device::Zns, "{r:?}");
        match r.kind {
            Kind::Throughput => {
                assert!(r.read.is_none());
                // The measured phase wrote one capacity of the zones (the last writes
                // may overshoot by a request each).
                let total = r.zones as u64 * r.zone_capacity_bytes;
                assert!(
                    r.write_bytes >= total && r.write_bytes < total + (1 << 20),
                    "{r:?}"
                );
            }
            Kind::Latency(l) => {
                assert!(r.read.as_ref().unwrap().count > 1000, "{r:?}");
                // The writers kept their rate: the load's share of the ZNS row's.
                assert!(
                    (r.write_mib_per_s / (l * zns_rate) - 1.0).abs() < 0.05,
                    "{r:?}"
                );
            }
        }
        if r.device == Device::Zns {
            assert!(r.zone_resets.unwrap() > 0, "{r:?}");
        }
    }
    let checks = raw::checks(&rows);
    assert_eq!(checks.len(), 6);
    for c in &checks {
        assert_eq!(c.holds, Some(true), "{c:?}");
    }
    let md = raw::markdown(&rows);
    assert!(md.contains("### §5.1 raw workload"), "{md}");
    assert_eq!(raw::csv(&rows).lines().count(), 1 + rows.len());
}

/// An LSM row with the figures the checks read.
fn lsm_row(
    device: Device,
    op: Option<f64>,
    device_waf: f64,
    puts_per_s: f64,
    p99: u64,
) -> zns::LsmRun {
    let lat = |p99| ssdlab_core::stats::LatencySummary {
        count: 1000,
        mean: 0.0,
        min: 0,
        p50: 0,
        p90: 0,
        p95: 0,
        p99,
        p99_9: p99,
        p99_99: p99,
        p99_999: p99,
        p99_9999: p99,
        max: p99,
    };
    zns::LsmRun {
        device,
        op,
        keys: 1000,
        puts: 1000,
        gets: 100,
        sim_time_ns: 1_000_000_000,
        user_bytes: 1 << 20,
        app_waf: 12.0,
        compaction_waf: 11.0,
        host_waf: 1.0,
        device_waf,
        total_waf: 12.0 * device_waf,
        puts_per_s,
        gets_per_s: 100.0,
        get: lat(p99),
        background_read: lat(p99),
        write: lat(p99),
        zone_resets: 0,
        gc_bytes: 0,
        trim_bytes: 0,
        device_gc_victims: 0,
        level_bytes: Vec::new(),
        rww: Some(zns::LsmRww {
            put_rate_limit_bytes_per_s: 500_000,
            put_rate_bytes_per_s: 500_000,
            puts: 500,
            gets: 10_000,
            sim_time_ns: 1_000_000_000,
            device_waf,
            get: lat(p99),
        }),
        wall_s: 0.0,
        audit_warnings: Vec::new(),
    }
}

/// The paper's shape holds on figures like the paper's (ZNS device WAF 1, conventional
/// 2.2, ZNS 2× the puts, a lower get tail at the same put rate) and each check fails
/// when its figure moves the other way.
#[test]
fn zns_lsm_checks_hold_and_fail() {
    let good = || {
        vec![
            lsm_row(Device::Conventional, Some(0.07), 2.2, 1000.0, 900),
            lsm_row(Device::Conventional, Some(0.28), 1.6, 1300.0, 800),
            lsm_row(Device::Zns, None, 1.0, 2000.0, 400),
            lsm_row(Device::Fdp, Some(0.07), 1.1, 1800.0, 500),
        ]
    };
    let checks = zns::lsm_checks(&good());
    assert_eq!(checks.len(), 5);
    assert!(checks.iter().all(|c| c.holds == Some(true)), "{checks:?}");
    type Perturb = fn(&mut Vec<zns::LsmRun>);
    let broken: [(&str, Perturb); 5] = [
        ("ZNS device WAF", |r| r[2].device_waf = 1.05),
        ("conventional device WAF", |r| r[0].device_waf = 1.2),
        ("ZNS total WAF", |r| r[2].total_waf = 30.0),
        ("ZNS puts/s", |r| r[2].puts_per_s = 1200.0),
        ("readwhilewriting", |r| {
            r[2].rww.as_mut().unwrap().get.p99 = 950
        }),
    ];
    for (start, perturb) in broken {
        let mut runs = good();
        perturb(&mut runs);
        let c = zns::lsm_checks(&runs);
        let x = c.iter().find(|c| c.claim.starts_with(start)).unwrap();
        assert_eq!(x.holds, Some(false), "{start}: {x:?}");
        assert!(x.detail.contains("; "), "{start} says why: {}", x.detail);
        assert_eq!(
            c.iter().filter(|c| c.holds == Some(false)).count(),
            1,
            "{start}"
        );
    }
}

/// The LSM rows' setup follows the paper's (§5.2): the conventional store's file system
/// issues no online discard (XFS's default mount), FDP's does; the ZNS rows' zones stripe
/// over every die (`zone_dies = 0`, as the ZN540) while the other rows keep configs/zns.toml's
/// one-die zones.
#[test]
fn zns_lsm_rows_follow_the_papers_setup() {
    let p = ZnsParams::paper(1).unwrap();
    assert!(!p.lsm(Device::Conventional, 1000).trim);
    assert!(p.lsm(Device::Fdp, 1000).trim);
    let zd = |c: ssdlab_core::Config| c.device.zns.unwrap().zone_dies;
    assert_eq!(zd(p.lsm_config(Device::Zns, None).unwrap()), 0);
    assert_eq!(zd(p.config(Device::Zns, 0.0).unwrap()), 1);
}
