//! What a run leaves behind, in one place for every program that runs the simulator
//! (`ssdlab run` and `sweep`, the experiments, the Python binding, `ssdlab serve`): the
//! text of the output files — `results.json`, `latency.csv`, `timeseries.csv`,
//! `config.resolved.toml` — byte-identical whoever writes them, an atomic write for files a
//! reader may be watching, and the memory the machine has available (the check before a
//! large device is built).
//!
//! The formats are pure functions of the core's results and configuration; the file system
//! and `/proc` are read and written here, never in the core (`ssdlab-core` does no I/O of
//! its own beyond its inputs).

mod resolved;

pub use resolved::{derived_toml, resolved_toml};

use ssdlab_core::sim::LatencyBlock;
use ssdlab_core::stats::{LatencySummary, TimeSeriesRow};
use ssdlab_core::Results;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// `results.json`: the deterministic results, pretty-printed, with a final newline.
pub fn results_json(r: &Results) -> serde_json::Result<String> {
    Ok(serde_json::to_string_pretty(r)? + "\n")
}

fn percentile_rows(name: &str, s: &LatencySummary, out: &mut String) {
    let rows = [
        ("mean", s.mean),
        ("p50", s.p50 as f64),
        ("p90", s.p90 as f64),
        ("p95", s.p95 as f64),
        ("p99", s.p99 as f64),
        ("p99.9", s.p99_9 as f64),
        ("p99.99", s.p99_99 as f64),
        ("p99.999", s.p99_999 as f64),
        ("p99.9999", s.p99_9999 as f64),
        ("max", s.max as f64),
    ];
    for (p, v) in rows {
        let _ = writeln!(out, "{name},{p},{v},{}", s.count);
    }
}

/// `latency.csv`: one row per operation and percentile (timed mode; operations that did
/// not occur are left out).
pub fn latency_csv(l: &LatencyBlock) -> String {
    let mut s = String::from("op,percentile,latency_ns,samples\n");
    for (name, summary) in [("read", &l.read), ("write", &l.write), ("flush", &l.flush)] {
        if summary.count > 0 {
            percentile_rows(name, summary, &mut s);
        }
    }
    s
}

/// `timeseries.csv`: one row per `output.timeseries_interval_ns` of a timed run.
pub fn timeseries_csv(rows: &[TimeSeriesRow]) -> String {
    let mut s = String::from(TimeSeriesRow::CSV_HEADER);
    s.push('\n');
    for r in rows {
        s.push_str(&r.csv_line());
        s.push('\n');
    }
    s
}

/// Write `body` to `dir/name` atomically (a temporary file `.name.tmp`, then a rename), so
/// a reader never sees half a file.
pub fn write_atomic(dir: &Path, name: &str, body: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, body)?;
    std::fs::rename(&tmp, dir.join(name))
}

/// `MemAvailable` of /proc/meminfo (Linux), in bytes.
pub fn available_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
