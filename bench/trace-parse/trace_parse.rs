//! Trace parsing speed: lines per second through the whole reader (file → line buffer →
//! MSR parser → request), for plain and gzip files.
//!
//! Run: `cargo bench --manifest-path bench/trace-parse/Cargo.toml -- --warm-up-time 1 --measurement-time 3`

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use ssdlab_workload::trace::{TraceFormat, TraceWorkloadConfig};
use ssdlab_workload::{WorkloadConfig, WorkloadContext};
use std::io::Write;
use std::path::PathBuf;

const LINES: u64 = 500_000;

/// An MSR Cambridge CSV file shaped like the real ones (hm_0: hostname, disk 0, mixed ops).
fn write_msr(dir: &std::path::Path, gzip: bool) -> PathBuf {
    let mut text = String::with_capacity(LINES as usize * 64);
    let mut ts: u64 = 128_166_372_003_061_629;
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for _ in 0..LINES {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ts += x % 20_000;
        let op = if x & 1 == 0 { "Read" } else { "Write" };
        let offset = (x >> 8) % (1 << 34) / 512 * 512;
        let size = 512 << ((x >> 40) % 8);
        text.push_str(&format!("{ts},hm,0,{op},{offset},{size},{}\n", x % 100_000));
    }
    let path = dir.join(if gzip {
        "bench.msr.csv.gz"
    } else {
        "bench.msr.csv"
    });
    let mut f = std::fs::File::create(&path).expect("create bench trace");
    if gzip {
        let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        e.write_all(text.as_bytes()).expect("write bench trace");
        e.finish().expect("finish gzip");
    } else {
        f.write_all(text.as_bytes()).expect("write bench trace");
    }
    path
}

fn replay_all(path: &std::path::Path) -> u64 {
    let ctx = WorkloadContext {
        logical_bytes: 1 << 35,
        unit_bytes: 4096,
        seed: 1,
        base_dir: None,
    };
    let c = WorkloadConfig::Trace(TraceWorkloadConfig {
        path: path.to_path_buf(),
        format: TraceFormat::Msr,
        ..Default::default()
    });
    let mut w = c.build(&ctx).expect("build");
    let mut n = 0;
    while let Some(r) = w.flows[0].source.next_request().expect("parse") {
        n += r.size_bytes & 1;
        n += 1;
    }
    n
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("ssdlab-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let plain = write_msr(&dir, false);
    let gz = write_msr(&dir, true);
    assert_eq!(replay_all(&plain), LINES);
    let mut g = c.benchmark_group("trace_parse");
    g.throughput(Throughput::Elements(LINES));
    g.sample_size(10);
    g.bench_function("msr_csv_lines", |b| {
        b.iter_batched(|| (), |_| replay_all(&plain), BatchSize::SmallInput)
    });
    g.bench_function("msr_csv_gzip_lines", |b| {
        b.iter_batched(|| (), |_| replay_all(&gz), BatchSize::SmallInput)
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
