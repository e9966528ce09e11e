use super::*;
use crate::WorkloadConfig;

const GIB: u64 = 1 << 30;

fn ctx() -> WorkloadContext {
    WorkloadContext {
        logical_bytes: GIB,
        unit_bytes: 4096,
        seed: 11,
        base_dir: None,
        zones: None,
        placement_ids: 0,
    }
}

fn build_text(text: &str) -> Result<Workload, WorkloadError> {
    build_from_str(text, "job.fio", &ctx())
}

fn drain(w: &mut Workload, flow: usize) -> Vec<HostRequest> {
    let mut out = Vec::new();
    while let Some(r) = w.flows[flow].source.next_request().unwrap() {
        out.push(r);
    }
    out
}

fn err_of(text: &str) -> (u64, String) {
    match build_text(text).err().expect("an error") {
        WorkloadError::Parse {
            file, line, reason, ..
        } => {
            assert_eq!(file, "job.fio");
            (line, reason)
        }
        other => panic!("not a parse error: {other}"),
    }
}

fn req(op: HostOp, offset_bytes: u64, size_bytes: u64) -> HostRequest {
    HostRequest {
        tag: 0,
        placement_id: 0,
        arrival_ns: 0,
        op,
        offset_bytes,
        size_bytes,
        journal: None,
    }
}

#[test]
fn sequential_write_with_fsync_and_ignored_keys() {
    let text = "; a comment\n[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\ngroup_reporting\n\
bs=4k\n\n[seq]\nrw=write\nsize=16k\nfsync=2\niodepth=4\n";
    let mut w = build_text(text).unwrap();
    assert_eq!(w.flows.len(), 1);
    assert_eq!(w.flows[0].name, "seq");
    assert_eq!(w.flows[0].arrival, Arrival::Closed { queue_depth: 4 });
    assert_eq!(w.duration_ns, None);
    let f = HostRequest {
        tag: 0,
        placement_id: 0,
        arrival_ns: 0,
        op: HostOp::Flush,
        offset_bytes: 0,
        size_bytes: 0,
        journal: None,
    };
    assert_eq!(
        drain(&mut w, 0),
        vec![
            req(HostOp::Write, 0, 4096),
            req(HostOp::Write, 4096, 4096),
            f,
            req(HostOp::Write, 8192, 4096),
            req(HostOp::Write, 12288, 4096),
            f
        ]
    );
}

#[test]
fn offset_percent_wraps_region_and_number_ios() {
    // Region = [50%, 50% + 8k) of 1 GiB; sequential reads wrap inside it.
    let mut w =
        build_text("[r]\nrw=read\nbs=4k\noffset=50%\nsize=8k\nio_size=1m\nnumber_ios=5\n").unwrap();
    let offs: Vec<u64> = drain(&mut w, 0).iter().map(|r| r.offset_bytes).collect();
    let h = GIB / 2;
    assert_eq!(offs, vec![h, h + 4096, h, h + 4096, h]);
}

#[test]
fn randrw_mix_numjobs_seeds_and_random_map() {
    let text = "[global]\nrw=randrw\nrwmixread=70\nbs=4k\nsize=4m\n[mix]\nnumjobs=2\n";
    let mut w = build_text(text).unwrap();
    assert_eq!(
        w.flows.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
        vec!["mix.0", "mix.1"]
    );
    let a = drain(&mut w, 0);
    let b = drain(&mut w, 1);
    assert_eq!(a.len(), 1024); // 4 MiB of 4 KiB requests
    assert_ne!(a, b, "clones draw from distinct streams");
    let reads = a.iter().filter(|r| r.op == HostOp::Read).count() as f64 / a.len() as f64;
    assert!((reads - 0.7).abs() < 0.05, "{reads}");
    // Random map: every block exactly once in the pass.
    let mut offs: Vec<u64> = a.iter().map(|r| r.offset_bytes).collect();
    offs.sort_unstable();
    assert_eq!(offs, (0..1024).map(|i| i * 4096).collect::<Vec<_>>());
    // Same seed, same stream; randseed changes it.
    let mut again = build_text(text).unwrap();
    assert_eq!(drain(&mut again, 0), a);
    let mut other = build_text(&format!("{text}randseed=99\n")).unwrap();
    assert_ne!(drain(&mut other, 0), a);
}

#[test]
fn bssplit_bsrange_per_direction_and_alignment() {
    let mut w = build_text("[j]\nrw=randwrite\nbssplit=4k/50:16k/\nsize=1m\nio_size=1g\nnumber_ios=2000\nnorandommap\n").unwrap();
    let reqs = drain(&mut w, 0);
    assert_eq!(reqs.len(), 2000);
    let small = reqs.iter().filter(|r| r.size_bytes == 4096).count();
    assert!(reqs
        .iter()
        .all(|r| (r.size_bytes == 4096 || r.size_bytes == 16384) && r.offset_bytes % 4096 == 0));
    assert!(reqs
        .iter()
        .all(|r| r.offset_bytes + r.size_bytes <= 1 << 20));
    assert!((small as f64 / 2000.0 - 0.5).abs() < 0.05, "{small}");

    let mut w = build_text("[j]\nrw=randrw\nbs=8k,64k\nsize=1m\nnumber_ios=200\n").unwrap();
    for r in drain(&mut w, 0) {
        assert_eq!(
            r.size_bytes,
            if r.op == HostOp::Read { 8192 } else { 65536 }
        );
    }
    let mut w = build_text(
        "[j]\nrw=randread\nbsrange=4k-16k\nba=512\nsize=1m\nio_size=1g\nnumber_ios=500\n",
    )
    .unwrap();
    let reqs = drain(&mut w, 0);
    assert!(reqs
        .iter()
        .all(|r| [4096, 8192, 12288, 16384].contains(&r.size_bytes)));
    assert!(
        reqs.iter().any(|r| r.offset_bytes % 4096 != 0),
        "ba=512 allows unaligned starts"
    );
}

#[test]
fn size_suffixes_follow_fio() {
    assert_eq!(parse_size("4k", 1024), Ok(SizeValue::Bytes(4096)));
    assert_eq!(parse_size("4KB", 1024), Ok(SizeValue::Bytes(4096)));
    assert_eq!(parse_size("4KiB", 1024), Ok(SizeValue::Bytes(4000)));
    assert_eq!(parse_size("4k", 1000), Ok(SizeValue::Bytes(4000)));
    assert_eq!(parse_size("4kib", 1000), Ok(SizeValue::Bytes(4096)));
    assert_eq!(parse_size("1g", 1024), Ok(SizeValue::Bytes(GIB)));
    assert_eq!(parse_size("1.5m", 1024), Ok(SizeValue::Bytes(1_572_864)));
    assert_eq!(parse_size("512", 1024), Ok(SizeValue::Bytes(512)));
    assert_eq!(parse_size("10%", 1024), Ok(SizeValue::Percent(10.0)));
    assert!(parse_size("4x", 1024).is_err());
    assert!(parse_size("4µ", 1024).is_err());
    assert!(parse_size("4ib", 1024).is_err());
    assert!(parse_size("k", 1024).is_err());
    assert_eq!(parse_time_ns("30", 1_000_000_000), Ok(30_000_000_000));
    assert_eq!(parse_time_ns("2m", 1_000_000_000), Ok(120_000_000_000));
    assert_eq!(parse_time_ns("500", 1_000), Ok(500_000));
    assert_eq!(parse_time_ns("5ms", 1_000), Ok(5_000_000));
    assert_eq!(per_direction("a,b,").unwrap(), [Some("a"), Some("b"), None]);
    assert_eq!(per_direction(",b").unwrap(), [None, Some("b"), Some("b")]);
    // kb_base in the job file.
    let mut w = build_text("[j]\nkb_base=1000\nrw=write\nbs=4k\nsize=8k\n").unwrap();
    assert_eq!(
        drain(&mut w, 0),
        vec![req(HostOp::Write, 0, 4000), req(HostOp::Write, 4000, 4000)]
    );
}

#[test]
fn runtime_time_based_rate_and_thinktime() {
    let mut w =
        build_text("[j]\nrw=randwrite\nsize=1m\nruntime=2\ntime_based\nrate_iops=1000\n").unwrap();
    assert_eq!(w.duration_ns, Some(2_000_000_000));
    assert_eq!(w.flows[0].arrival, Arrival::Open);
    let first: Vec<u64> = (0..4)
        .map(|_| {
            w.flows[0]
                .source
                .next_request()
                .unwrap()
                .unwrap()
                .arrival_ns
        })
        .collect();
    assert_eq!(first, vec![0, 1_000_000, 2_000_000, 3_000_000]);
    // time_based: no byte limit (far more than 1 MiB available).
    for _ in 0..10_000 {
        assert!(w.flows[0].source.next_request().unwrap().is_some());
    }

    let mut w = build_text("[j]\nrw=write\nsize=64k\nthinktime=250\nthinktime_blocks=2\n").unwrap();
    let arrivals: Vec<u64> = drain(&mut w, 0)
        .iter()
        .map(|r| r.arrival_ns)
        .take(6)
        .collect();
    assert_eq!(arrivals, vec![0, 0, 250_000, 250_000, 500_000, 500_000]);

    // Different runtimes cannot map to one run duration.
    let (line, reason) = err_of("[a]\nruntime=1\n[b]\nruntime=2\n");
    assert_eq!(line, 4);
    assert!(reason.contains("same runtime"), "{reason}");
}

#[test]
fn distributions_parse_and_shape() {
    assert_eq!(
        parse_distribution("zipf:1.2"),
        Ok(Distribution::Zipf(1.2, 0.0))
    );
    assert_eq!(
        parse_distribution("pareto:0.3:0.5"),
        Ok(Distribution::Pareto(0.3, 0.5))
    );
    assert_eq!(
        parse_distribution("normal:10"),
        Ok(Distribution::Normal(10.0, 0.5))
    );
    assert_eq!(
        parse_distribution("zoned:60/10:40/90"),
        Ok(Distribution::Zoned(vec![(60.0, 10.0), (40.0, 90.0)]))
    );
    assert!(parse_distribution("zoned:60/10:30/90").is_err());
    assert!(parse_distribution("zoned_abs:60/10M:40/20M").is_err());
    assert!(parse_distribution("pareto:1.5").is_err());

    // zoned: 80% of the I/O into the first 10% of a 100 MiB region at offset 1 MiB.
    let mut w = build_text(
        "[z]\nrw=randread\nsize=100m\noffset=1m\nrandom_distribution=zoned:80/10:20/90\nnumber_ios=10000\n",
    )
    .unwrap();
    let reqs = drain(&mut w, 0);
    let hot = reqs
        .iter()
        .filter(|r| r.offset_bytes < (1 << 20) + 10 * (1 << 20))
        .count() as f64
        / 10_000.0;
    assert!((hot - 0.8).abs() < 0.03, "{hot}");
    assert!(reqs
        .iter()
        .all(|r| r.offset_bytes >= 1 << 20 && r.offset_bytes + 4096 <= 101 << 20));

    // normal:5 around the middle: about 68% within one sigma (5% of the region).
    let mut w = build_text(
        "[n]\nrw=randwrite\nsize=100m\nrandom_distribution=normal:5\nnumber_ios=10000\n",
    )
    .unwrap();
    let reqs = drain(&mut w, 0);
    let mid = 50.0 * (1 << 20) as f64;
    let within = reqs
        .iter()
        .filter(|r| (r.offset_bytes as f64 - mid).abs() < 5.0 * (1 << 20) as f64)
        .count();
    assert!((within as f64 / 10_000.0 - 0.683).abs() < 0.03, "{within}");

    for d in ["zipf:1.1", "pareto:0.2"] {
        let mut w = build_text(&format!(
            "[p]\nrw=randread\nsize=4m\nrandom_distribution={d}\nnumber_ios=5000\n"
        ))
        .unwrap();
        let mut counts = HashMap::new();
        for r in drain(&mut w, 0) {
            *counts.entry(r.offset_bytes).or_insert(0u32) += 1;
        }
        let top = counts.values().max().copied().unwrap_or(0);
        assert!(top > 100, "{d}: most popular block got {top} of 5000");
    }
}

#[test]
fn errors_name_key_file_and_line() {
    let (line, reason) = err_of("[global]\nbs=4k\n[job]\nrw=randwrite\nverify=md5\n");
    assert_eq!(line, 5);
    assert!(
        reason.contains("unsupported fio option `verify`"),
        "{reason}"
    );
    let (line, reason) = err_of("[job]\nrw=randwrite:8\n");
    assert_eq!(line, 2);
    assert!(
        reason.contains("rw:") && reason.contains("offset modifiers"),
        "{reason}"
    );
    let (line, reason) = err_of("[job]\nbs=4q\n");
    assert_eq!(line, 2);
    assert!(reason.contains("unknown suffix"), "{reason}");
    let (line, reason) = err_of("[job]\nsize=2g\n");
    assert_eq!(line, 2);
    assert!(reason.contains("exceeds the device"), "{reason}");
    let (line, reason) = err_of("bs=4k\n[job]\n");
    assert_eq!(line, 1);
    assert!(reason.contains("outside a section"), "{reason}");
    let (_, reason) = err_of("[global]\nbs=4k\n");
    assert!(reason.contains("no job section"), "{reason}");
    let (line, reason) = err_of("[job]\nrwmixread=70\nrwmixwrite=20\n");
    assert_eq!(line, 3);
    assert!(reason.contains("must be 100"), "{reason}");
    let (line, reason) = err_of("[job]\ntime_based\n");
    assert_eq!(line, 2);
    assert!(reason.contains("runtime"), "{reason}");
    let (line, reason) = err_of("[job]\nsize=${SIZE}\n");
    assert_eq!(line, 2);
    assert!(reason.contains("environment variables"), "{reason}");
    let shown = build_text("[job]\nrate=10m\n").err().unwrap().to_string();
    assert!(
        shown.starts_with("job.fio:2:") && shown.contains("`rate`"),
        "{shown}"
    );
}

#[test]
fn config_from_toml_with_relative_path() {
    let dir = std::env::temp_dir().join(format!("ssdlab-fio-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("job.fio"),
        "[w]\r\nrw=trim\r\nbs=1m\r\nsize=2m\r\n",
    )
    .unwrap();
    let c: WorkloadConfig = toml::from_str("kind = \"fio\"\npath = \"job.fio\"\n").unwrap();
    let ctx = WorkloadContext {
        base_dir: Some(dir.clone()),
        ..ctx()
    };
    let mut w = c.build(&ctx).unwrap();
    assert_eq!(
        drain(&mut w, 0),
        vec![
            req(HostOp::Trim, 0, 1 << 20),
            req(HostOp::Trim, 1 << 20, 1 << 20)
        ]
    );
    assert!(toml::from_str::<WorkloadConfig>("kind = \"fio\"\npath = \"a\"\nsize = 3\n").is_err());
    let e = WorkloadConfig::Fio(FioWorkloadConfig {
        path: "missing.fio".into(),
    })
    .build(&ctx)
    .err()
    .unwrap();
    assert!(matches!(e, WorkloadError::Io { .. }));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- zonemode=zbd, FDP

const KIB: u64 = 1024;
const ZONE: u64 = 64 * KIB;

/// 4 zones of 64 KiB (capacity `cap`), at most `open` open, and `pids` placement IDs.
fn zoned_ctx(cap: u64, open: u32, pids: u16) -> WorkloadContext {
    WorkloadContext {
        logical_bytes: 4 * ZONE,
        zones: Some(crate::ZoneGeometry {
            zone_bytes: ZONE,
            zone_capacity_bytes: cap,
            zones: 4,
            max_open_zones: open,
            max_active_zones: open,
        }),
        placement_ids: pids,
        ..ctx()
    }
}

fn zoned(text: &str) -> Vec<HostRequest> {
    let mut w = build_from_str(text, "job.fio", &zoned_ctx(ZONE, 2, 0)).unwrap();
    drain(&mut w, 0)
}

fn zone_err(text: &str, c: &WorkloadContext) -> (u64, String) {
    match build_from_str(text, "job.fio", c).err().expect("an error") {
        WorkloadError::Parse {
            file, line, reason, ..
        } => {
            assert_eq!(file, "job.fio");
            (line, reason)
        }
        other => panic!("not a parse error: {other}"),
    }
}

fn reset(offset_bytes: u64) -> HostRequest {
    req(HostOp::ZoneReset, offset_bytes, 0)
}

#[test]
fn zbd_sequential_writes_fill_zones_in_order_then_reset_on_wrap() {
    // Region = zones 0 and 1; io_size 1.5 × the region: the wrap finds zone 0 full and
    // resets it (fio: a write to a full zone resets it first).
    let got = zoned("[w]\nzonemode=zbd\nrw=write\nbs=16k\nsize=128k\nio_size=192k\n");
    let mut want: Vec<HostRequest> = (0..8)
        .map(|i| req(HostOp::Write, i * 16 * KIB, 16 * KIB))
        .collect();
    want.push(reset(0));
    want.extend((0..4).map(|i| req(HostOp::Write, i * 16 * KIB, 16 * KIB)));
    assert_eq!(got, want);
}

#[test]
fn zbd_sequential_writes_skip_the_gap_past_zone_capacity() {
    // Capacity 48 KiB of 64: zone 0 takes 3 writes, the 4th starts zone 1.
    let c = zoned_ctx(48 * KIB, 2, 0);
    let mut w = build_from_str(
        "[w]\nzonemode=zbd\nrw=write\nbs=16k\nnumber_ios=5\n",
        "job.fio",
        &c,
    )
    .unwrap();
    let offs: Vec<u64> = drain(&mut w, 0)
        .iter()
        .map(|r| r.offset_bytes / KIB)
        .collect();
    assert_eq!(offs, vec![0, 16, 32, 64, 80]);
}

/// Replays `reqs` against write pointers: every write at its zone's write pointer, inside
/// its capacity, at most `open` zones partly written at once; every read below a write
/// pointer. Returns the resets seen.
fn check_zoned(reqs: &[HostRequest], cap: u64, open: usize) -> usize {
    let mut wp = [0u64; 4];
    let mut resets = 0;
    for r in reqs {
        let z = (r.offset_bytes / ZONE) as usize;
        let rel = r.offset_bytes % ZONE;
        match r.op {
            HostOp::Write => {
                assert_eq!(rel, wp[z], "write {r:?} not at the write pointer {}", wp[z]);
                assert!(rel + r.size_bytes <= cap, "write {r:?} beyond the capacity");
                wp[z] += r.size_bytes;
                let partly = wp.iter().filter(|&&p| p > 0 && p < cap).count();
                assert!(partly <= open, "{partly} zones open after {r:?}");
            }
            HostOp::Read => {
                assert!(r.size_bytes > 0);
                assert!(
                    rel + r.size_bytes <= wp[z],
                    "read {r:?} above the write pointer {}",
                    wp[z]
                );
            }
            HostOp::ZoneReset => {
                assert_eq!(rel, 0);
                assert!(wp[z] > 0, "reset of an empty zone");
                wp[z] = 0;
                resets += 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    resets
}

#[test]
fn zbd_random_writes_stay_at_write_pointers_and_reset_full_zones() {
    for (bs, open) in [("4k", 2), ("bssplit=4k/50:12k/50", 1), ("8k", 2)] {
        let bs_line = if bs.contains('=') {
            bs.to_string()
        } else {
            format!("bs={bs}")
        };
        let text = format!(
            "[w]\nzonemode=zbd\nrw=randwrite\n{bs_line}\nio_size=100m\nnumber_ios=400\nmax_open_zones={open}\n"
        );
        let reqs = zoned(&text);
        assert_eq!(reqs.iter().filter(|r| r.op == HostOp::Write).count(), 400);
        // 400 writes of >= 4 KiB over 256 KiB: zones fill and are reset.
        let resets = check_zoned(&reqs, ZONE, open);
        assert!(resets > 0, "{text}: no reset");
    }
}

#[test]
fn zbd_reads_stay_below_write_pointers() {
    // randrw: the first I/O is a write (nothing to read yet); reads then only read data.
    let reqs =
        zoned("[m]\nzonemode=zbd\nrw=randrw\nbs=4k\nio_size=100m\nnumber_ios=300\nrandseed=5\n");
    assert_eq!(reqs[0].op, HostOp::Write);
    assert!(reqs.iter().filter(|r| r.op == HostOp::Read).count() > 50);
    check_zoned(&reqs, ZONE, 2);
    // Sequential reads of a zoned device with nothing written: nothing to read, the job
    // ends (fio's io_u_eof).
    assert_eq!(zoned("[r]\nzonemode=zbd\nrw=read\nbs=4k\n"), vec![]);
    // Sequential rw: reads follow the written data and stop at the write pointer.
    let reqs = zoned("[m]\nzonemode=zbd\nrw=rw\nbs=4k\nio_size=100m\nnumber_ios=100\n");
    check_zoned(&reqs, ZONE, 2);
}

#[test]
fn zbd_reset_threshold_and_frequency() {
    // Threshold 0.5 of a 128 KiB region: once 64 KiB are valid, every write (frequency 1)
    // resets its zone first.
    let got = zoned(
        "[w]\nzonemode=zbd\nrw=write\nbs=16k\nsize=128k\nzone_reset_threshold=0.5\nzone_reset_frequency=1\n",
    );
    let k16 = 16 * KIB;
    let mut want: Vec<HostRequest> = (0..5).map(|i| req(HostOp::Write, i * k16, k16)).collect();
    for _ in 0..3 {
        want.push(reset(4 * k16));
        want.push(req(HostOp::Write, 4 * k16, k16));
    }
    assert_eq!(got, want);
    // Frequency 0.5: every second write past the threshold.
    let got = zoned(
        "[w]\nzonemode=zbd\nrw=write\nbs=16k\nsize=128k\nzone_reset_threshold=0.5\nzone_reset_frequency=0.5\n",
    );
    let offs: Vec<(HostOp, u64)> = got.iter().map(|r| (r.op, r.offset_bytes / KIB)).collect();
    use HostOp::{Write as W, ZoneReset as ZR};
    assert_eq!(
        offs,
        vec![
            (W, 0),
            (W, 16),
            (W, 32),
            (W, 48),
            (W, 64),
            (ZR, 64),
            (W, 64),
            (W, 80),
            (ZR, 64),
            (W, 64)
        ]
    );
}

#[test]
fn zbd_trim_is_a_zone_reset() {
    let got = zoned("[w]\nzonemode=zbd\nrw=write\nbs=64k\nsize=128k\n[t]\nzonemode=zbd\nrw=trim\nbs=64k\nsize=128k\n");
    assert_eq!(
        got,
        vec![req(HostOp::Write, 0, ZONE), req(HostOp::Write, ZONE, ZONE)]
    );
    // The trim job (flow 1) after the writer: resets both zones.
    let c = zoned_ctx(ZONE, 2, 0);
    let mut w = build_from_str(
        "[w]\nzonemode=zbd\nrw=write\nbs=64k\nsize=128k\n[t]\nzonemode=zbd\nrw=trim\nbs=64k\nsize=128k\n",
        "job.fio",
        &c,
    )
    .unwrap();
    drain(&mut w, 0);
    assert_eq!(drain(&mut w, 1), vec![reset(0), reset(ZONE)]);
}

#[test]
fn zbd_option_errors_name_the_line() {
    let conventional = ctx();
    let (line, why) = zone_err("[w]\nrw=write\nzonemode=zbd\n", &conventional);
    assert_eq!(line, 3);
    assert!(
        why.contains("zonemode") && why.contains("zoned device"),
        "{why}"
    );
    let z = zoned_ctx(ZONE, 2, 0);
    for (text, line, words) in [
        (
            "[w]\nzonemode=zbd\nzonesize=128k\n",
            3,
            "zone size is 65536",
        ),
        ("[w]\nzonemode=zbd\nzonerange=32k\n", 3, "zone size"),
        (
            "[w]\nzonemode=zbd\nzonecapacity=32k\n",
            3,
            "zone capacity is 65536",
        ),
        (
            "[w]\nzonemode=zbd\nrw=write\nmax_open_zones=3\n",
            4,
            "max_open_zones (2)",
        ),
        (
            "[w]\nzonemode=zbd\nrw=write\nbs=128k\n",
            4,
            "exceeds the zone size",
        ),
        (
            "[w]\nzonemode=zbd\nrw=write\noffset=16k\nsize=64k\n",
            5,
            "whole zone",
        ),
        ("[w]\nzonemode=zbd\nrw=trim\nbs=4k\n", 4, "zone size"),
        // Writes below (or off) the mapping unit (4 KiB here): every one would fail
        // (zone_invalid_write), a run of resets only.
        (
            "[w]\nzonemode=zbd\nrw=randwrite\nbs=2k\n",
            4,
            "not a multiple of the device's mapping unit (4096 bytes)",
        ),
        (
            "[w]\nzonemode=zbd\nrw=write\nbssplit=4k/50:6k/50\n",
            4,
            "a write of 6144 bytes is not a multiple",
        ),
        (
            "[w]\nzonemode=zbd\nrw=randrw\nbsrange=2k-8k\n",
            4,
            "a write of 2048 bytes",
        ),
        (
            "[w]\nzonemode=zbd\nzone_reset_threshold=2\n",
            3,
            "between 0 and 1",
        ),
        ("[w]\nzonemode=strided\n", 2, "not supported"),
        ("[w]\nmax_open_zones=1\n", 2, "zonemode=zbd only"),
        (
            "[a]\nzonemode=zbd\nmax_open_zones=1\n[b]\nzonemode=zbd\nmax_open_zones=2\n",
            6,
            "another job",
        ),
    ] {
        let (l, why) = zone_err(text, &z);
        assert_eq!(l, line, "{text}: {why}");
        assert!(why.contains(words), "{text}: {why}");
    }
    // A region off zone boundaries is rounded to whole zones (as fio does).
    let c = zoned_ctx(ZONE, 2, 0);
    let mut w = build_from_str(
        "[w]\nzonemode=zbd\nrw=write\nbs=64k\noffset=16k\nsize=200k\n",
        "job.fio",
        &c,
    )
    .unwrap();
    let offs: Vec<u64> = drain(&mut w, 0).iter().map(|r| r.offset_bytes).collect();
    assert_eq!(offs, vec![ZONE, 2 * ZONE]);
}

fn placements(text: &str, pids: u16) -> Vec<(HostOp, u16)> {
    let mut w = build_from_str(
        text,
        "job.fio",
        &WorkloadContext {
            placement_ids: pids,
            ..ctx()
        },
    )
    .unwrap();
    drain(&mut w, 0)
        .iter()
        .map(|r| (r.op, r.placement_id))
        .collect()
}

#[test]
fn fdp_round_robin_random_and_errors() {
    // plids ranges, sorted as fio sorts them; writes only (reads, flushes carry 0).
    let got = placements("[w]\nrw=write\nfdp=1\nfdp_pli=5,0,2-3\nnumber_ios=6\n", 8);
    let ids: Vec<u16> = got.iter().map(|g| g.1).collect();
    assert_eq!(ids, vec![0, 2, 3, 5, 0, 2]);
    // Default: every placement ID of the device; `plids` and `dataplacement=fdp` aliases.
    let ids: Vec<u16> = placements("[w]\nrw=write\nfdp=1\nnumber_ios=5\n", 3)
        .iter()
        .map(|g| g.1)
        .collect();
    assert_eq!(ids, vec![0, 1, 2, 0, 1]);
    let ids: Vec<u16> = placements(
        "[w]\nrw=write\ndataplacement=fdp\nplids=1\nnumber_ios=2\n",
        3,
    )
    .iter()
    .map(|g| g.1)
    .collect();
    assert_eq!(ids, vec![1, 1]);
    let got = placements(
        "[w]\nrw=randrw\nfdp=1\nfdp_pli=1,3\nfsync=1\nnumber_ios=40\n",
        4,
    );
    for (op, pid) in &got {
        match op {
            HostOp::Write => assert!([1, 3].contains(pid)),
            _ => assert_eq!(*pid, 0),
        }
    }
    // Random selection: from the list, both used, same offsets as without fdp.
    let got = placements(
        "[w]\nrw=randwrite\nfdp=1\nplids=1,3\nplid_select=random\nnumber_ios=64\n",
        4,
    );
    assert!(got.iter().all(|g| g.1 == 1 || g.1 == 3));
    assert!(got.iter().any(|g| g.1 == 1) && got.iter().any(|g| g.1 == 3));
    // Errors name the line.
    let (line, why) = zone_err("[w]\nrw=write\nfdp=1\n", &ctx());
    assert_eq!(line, 3);
    assert!(
        why.contains("fdp") && why.contains("Flexible Data Placement"),
        "{why}"
    );
    let c = WorkloadContext {
        placement_ids: 4,
        ..ctx()
    };
    for (text, line, words) in [
        (
            "[w]\nfdp=1\nfdp_pli=0,4\n",
            3,
            "index 4 must be smaller than 4",
        ),
        ("[w]\nfdp=1\nplids=3-1\n", 3, "range start"),
        ("[w]\nfdp=1\nplid_select=scheme\n", 3, "not supported"),
        ("[w]\nplids=1\n", 2, "fdp=1 only"),
        ("[w]\ndataplacement=streams\n", 2, "streams"),
    ] {
        let (l, why) = zone_err(text, &c);
        assert_eq!(l, line, "{text}: {why}");
        assert!(why.contains(words), "{text}: {why}");
    }
}
