//! Issue 37's block-interface study (`reproduce zns`) at its smallest scale (fixed seed):
//! the runs and their arithmetic, and the expected shape: device WAF 1 on ZNS, FDP below
//! the conventional device on the hot/cold mix and equal on uniform, ZNS's total WAF at
//! most the conventional device's at 28 % spare. The FDP check fails when the device puts
//! both placement identifiers on one handle (identifiers ignored).

use ssdlab_experiments::zns::{self, Device, Mix, ZnsParams, ZnsReport};

/// One channel (256 MiB raw).
const SCALE: u32 = 4;

fn report(p: &ZnsParams) -> ZnsReport {
    zns::run(p, &|_| {}).unwrap()
}

fn holds(r: &ZnsReport, group: &str, start: &str) -> Option<bool> {
    let shape = r.shape();
    shape
        .iter()
        .find(|c| c.group == group && c.check.starts_with(start))
        .unwrap_or_else(|| panic!("{group}: {start}: {shape:?}"))
        .holds
}

#[test]
fn zns_study_rows_arithmetic_and_shape() {
    let p = ZnsParams::paper(SCALE).unwrap();
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
                assert!(x.gc_victims > 0, "{x:?}");
            }
        }
    }
    // The expected shape at this scale.
    assert_eq!(holds(&r, "all", "device WAF = 1 on ZNS"), Some(true));
    for sp in ["7 %", "28 %"] {
        assert_eq!(
            holds(
                &r,
                "uniform",
                &format!("FDP device WAF ≈ conventional's at {sp}")
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
    for c in r.shape().iter().filter(|c| c.holds == Some(false)) {
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
