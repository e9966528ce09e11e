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
/// ceiling (10⁹ / command_ns), above 95 % of it. Fewer blocks per plane (64: the SLC cache
/// region keeps its 25): the figures are the link's and the controller's, not the capacity's.
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
            "device.geometry.blocks_per_plane=64".to_string(),
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

/// The preset's TurboWrite cache (docs/calibration.md: the 970 EVO Plus 1 TB writes
/// 3,300 MB/s while its 42 GB cache lasts and 1,700 MB/s after it): 128 KiB sequential
/// writes at QD32 on the fresh preset (no preconditioning) run at ≥ 2,800 MB/s until the
/// cache holds its size (3.05 GB: 6 + 36 GB per TB of the preset's 72.7 GB), then at
/// 1,400–2,000 MB/s (TLC programs on 32 dies); the cache took its size, in whole blocks.
#[test]
fn nvme_preset_writes_fast_while_its_slc_cache_lasts_then_at_tlc_speed() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/nvme-pcie3-tlc.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let sets = [
        "precondition.enabled=false",
        "workload.read_percent=0",
        "workload.block_size_bytes=131072",
        "workload.queue_depth=32",
        "workload.pattern=\"sequential\"",
        "workload.requests=40000",
        "output.timeseries_interval_ns=20000000",
    ]
    .map(String::from);
    let t = ssdlab_core::config::apply_overrides(&text, &sets).unwrap();
    let mut sim = ssdlab_core::Simulation::new(Config::from_toml_str(&t, path).unwrap()).unwrap();
    let r = sim.run_workload(&mut NoProgress).unwrap();
    let cache = r.journal.as_ref().unwrap().slc_cache.clone().unwrap();
    assert_eq!(cache.size_bytes, 436_000_000 + 2_616_000_000);
    // 23 SLC blocks of 2 MiB on each of 64 planes.
    assert_eq!(cache.size_blocks_per_plane, 23);
    assert_eq!(cache.cached_bytes, 23 * 64 * (2 << 20));
    // Rows by the bytes written before them: the cache's phase (up to 90 % of its size),
    // and the TLC phase (past the size and the 64 MiB DRAM buffer).
    let (mut before, mut prev_ns) = (0.0, 0u64);
    let (mut fast, mut slow) = (Vec::new(), Vec::new());
    for row in &sim.last_timeseries {
        let secs = (row.time_ns - prev_ns) as f64 / 1e9;
        let after = before + row.write_mb_per_s * 1e6 * secs;
        if after <= 0.9 * cache.size_bytes as f64 {
            fast.push(row.write_mb_per_s);
        } else if before >= cache.cached_bytes as f64 + 2.0 * 67108864.0 {
            slow.push(row.write_mb_per_s);
        }
        (before, prev_ns) = (after, row.time_ns);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    assert!(
        fast.len() >= 20 && slow.len() >= 20,
        "{} / {} rows",
        fast.len(),
        slow.len()
    );
    assert!(mean(&fast) >= 2800.0, "cache phase {} MB/s", mean(&fast));
    assert!(
        (1400.0..=2000.0).contains(&mean(&slow)),
        "TLC phase {} MB/s",
        mean(&slow)
    );
}

/// The preset's cache drains when the host is idle (`drain_when_idle`, after
/// `ftl.idle_gc_after_ns` = 100 ms), as TurboWrite does: two bursts of 2.5 GB of 128 KiB
/// sequential writes (each below the 3.05 GB cache, together above it) with 4 s of idle time
/// between them. The first burst's data is drained to TLC during the gap, so the second burst
/// is cached too: no page goes past the cache. Without the drain the second burst would
/// overflow the cache after 0.55 GB.
#[test]
fn nvme_preset_drains_its_slc_cache_when_idle() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/nvme-pcie3-tlc.toml"
    );
    let dir = std::env::temp_dir().join(format!("ssdlab-turbowrite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("bursts.csv");
    let (burst, size, gap_ns) = (19_000u64, 131_072u64, 40_000u64);
    let mut csv = String::from("time_ns,op,offset_bytes,size_bytes\n");
    for i in 0..2 * burst {
        let t = i * gap_ns + if i >= burst { 4_000_000_000 } else { 0 };
        csv.push_str(&format!("{t},W,{},{size}\n", (i % burst) * size));
    }
    std::fs::write(&trace, csv).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let sets = [
        "precondition.enabled=false".to_string(),
        format!(
            "workload={{ kind = \"trace\", path = \"{}\", format = \"ssdlab\", replay = \"open\" }}",
            trace.display()
        ),
    ];
    let t = ssdlab_core::config::apply_overrides(&text, &sets).unwrap();
    let mut sim = ssdlab_core::Simulation::new(Config::from_toml_str(&t, path).unwrap()).unwrap();
    let r = sim.run_workload(&mut NoProgress).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let cache = r.journal.as_ref().unwrap().slc_cache.clone().unwrap();
    let written = 2 * burst * size;
    assert!(written > cache.size_bytes + cache.size_bytes / 2);
    assert_eq!(cache.bypassed_pages, 0, "{cache:?}");
    assert_eq!(cache.cached_bytes, written, "{cache:?}");
    // The first burst (overwritten in place by the second) drained during the gap.
    assert!(cache.drained_bytes >= burst * size * 9 / 10, "{cache:?}");
}
