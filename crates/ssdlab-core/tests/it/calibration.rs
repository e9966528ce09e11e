//! `configs/nvme-pcie3-tlc.toml` stays within 2x of the real drive of the SSR paper's
//! Fig. 1 (docs/calibration.md): read mean 100 us, p95 400 us, p99 800 us, p99.99 9 ms,
//! p99.999 above 10 ms (4 KiB random 70/30, QD 16, preconditioned).

use ssdlab_core::{run, Config, NoProgress};

#[test]
fn nvme_preset_matches_the_papers_drive_within_2x() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/nvme-pcie3-tlc.toml"
    );
    let c = Config::from_file(std::path::Path::new(path)).unwrap();
    let r = run(c, &mut NoProgress).unwrap();
    let read = &r.latency_ns.as_ref().unwrap().read;
    // p99.999 must rest on at least ten samples beyond it.
    assert!(read.count >= 1_000_000, "{} reads", read.count);
    let within = |got: u64, want: f64| (want / 2.0..=want * 2.0).contains(&(got as f64));
    for (name, got, want) in [
        ("mean", read.mean as u64, 100e3),
        ("p95", read.p95, 400e3),
        ("p99", read.p99, 800e3),
        ("p99.99", read.p99_99, 9e6),
        ("p99.999", read.p99_999, 10e6),
    ] {
        assert!(within(got, want), "{name}: {got} ns against {want} ns");
    }
    assert!(read.p99_999 > 10_000_000, "p99.999 {} ns", read.p99_999);
}
