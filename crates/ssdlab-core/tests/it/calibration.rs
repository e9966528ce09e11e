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

/// With its PCIe 3.0 x4 link the preset reads as the drive it models (the Samsung 970 EVO
/// Plus 1 TB: 3,500 MB/s sequential, 600K IOPS 4 KiB random; docs/host-interface.md):
/// 128 KiB reads at QD32, random and sequential, within 10 % of 3.3–3.5 GB/s (they were
/// 6.4 GB/s without a link); 4 KiB random reads at QD128 stop at the controller's
/// ceiling (10⁹ / command_ns), above 95 % of it. Fewer blocks per plane: the figures are
/// the link's and the controller's, not the capacity's.
#[test]
fn nvme_preset_link_limits_throughput_as_the_real_drive() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/nvme-pcie3-tlc.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let base = Config::from_toml_str(&text, path).unwrap();
    let hi = base
        .device
        .host_interface
        .clone()
        .expect("the preset has a link");
    let run_reads = |bs: &str, qd: &str, pattern: &str, n: &str| {
        let sets = [
            "device.geometry.blocks_per_plane=32".to_string(),
            "precondition.random_overwrite_capacity_multiple=0.0".to_string(),
            "workload.read_percent=100".to_string(),
            format!("workload.block_size_bytes={bs}"),
            format!("workload.queue_depth={qd}"),
            format!("workload.pattern=\"{pattern}\""),
            format!("workload.requests={n}"),
        ];
        let t = ssdlab_core::config::apply_overrides(&text, &sets).unwrap();
        run(Config::from_toml_str(&t, path).unwrap(), &mut NoProgress).unwrap()
    };
    for pattern in ["uniform", "sequential"] {
        let r = run_reads("131072", "32", pattern, "6000");
        let gb = r.host.read_mb_per_s / 1e3;
        assert!(
            (3.3 * 0.9..=3.5 * 1.1).contains(&gb),
            "{pattern}: {gb} GB/s"
        );
    }
    let r = run_reads("4096", "128", "uniform", "60000");
    let ceiling = 1e9 / hi.command_ns as f64;
    assert!(
        r.host.iops <= ceiling && r.host.iops >= 0.95 * ceiling,
        "{} IOPS, ceiling {ceiling}",
        r.host.iops
    );
}
