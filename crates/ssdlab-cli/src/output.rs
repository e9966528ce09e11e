//! Output files and the human summary.

use anyhow::{Context, Result};
use serde::Serialize;
use ssdlab_core::config::Derived;
use ssdlab_core::stats::{LatencySummary, TimeSeriesRow};
use ssdlab_core::{Config, Results};
use ssdlab_output as files;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The files `ssdlab run` writes into its output directory, `results.json` first (the
/// marker of a complete run, see [`StagedDir`]). `requests.csv.part` is the plain
/// request log of versions before the log was compressed as it is written: removed if
/// found.
pub const RUN_FILES: [&str; 9] = [
    "results.json",
    "config.resolved.toml",
    "perf.json",
    "latency.csv",
    "latency.svg",
    "timeseries.csv",
    "timeseries.svg",
    crate::request_log::FILE_NAME,
    "requests.csv.part",
];

/// A command's output files, written aside and put in place only once all of them are
/// complete, so an interrupted or failed command never leaves a directory that looks
/// like a finished one (issue 33).
///
/// The files are written into [`StagedDir::path`], a temporary directory
/// `TARGET/.ssdlab-tmp-<pid>` inside the target (so every move is a rename on one
/// filesystem; the target is created if missing). [`StagedDir::commit`] moves them in;
/// dropping an uncommitted `StagedDir` (an error, an interrupt) removes the temporary
/// directory, and the target too if this `StagedDir` created it and it is empty, so the
/// target keeps what it held before: an earlier complete run, or nothing.
///
/// Only the files named in `managed` belong to the command: other files in the target
/// are never touched (`--out .` or a directory of the user's own files is safe). On
/// commit, a managed file this run did not write is removed (an earlier run's
/// `latency.svg` would otherwise look like this run's); `managed[0]` is the marker of a
/// complete set (`results.json`): removed first, moved in last, so while the other files
/// change the target holds no marker (an error midway leaves no complete-looking set).
/// Sweeps can use it per point directory.
pub struct StagedDir {
    target: PathBuf,
    tmp: PathBuf,
    managed: Vec<String>,
    /// The target did not exist before: removed (if empty) when not committed.
    created_target: bool,
    committed: bool,
}

impl StagedDir {
    /// Start staging the outputs of `target` (files `managed`, marker first). Fails
    /// (before any long work) when the target cannot be created or written to.
    pub fn new(target: &Path, managed: &[&str]) -> Result<StagedDir> {
        assert!(
            !managed.is_empty(),
            "a staged directory needs a marker file"
        );
        let created_target = !target.exists();
        std::fs::create_dir_all(target)
            .with_context(|| format!("creating the output directory {}", target.display()))?;
        let tmp = target.join(format!(".ssdlab-tmp-{}", std::process::id()));
        let staged = StagedDir {
            target: target.to_path_buf(),
            tmp,
            managed: managed.iter().map(|m| m.to_string()).collect(),
            created_target,
            committed: false,
        };
        // A directory left by an earlier process of the same id (killed at once) goes.
        let _ = std::fs::remove_dir_all(&staged.tmp);
        std::fs::create_dir(&staged.tmp)
            .with_context(|| format!("output directory {} is not writable", target.display()))?;
        Ok(staged)
    }

    /// The directory the files are for.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Where the files are written until [`StagedDir::commit`].
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Move the staged files into the target: the marker removed first and moved in
    /// last, managed files not staged removed. Refused when a stop was requested
    /// (Ctrl-C): an interrupted command keeps the target as it was.
    pub fn commit(mut self) -> Result<()> {
        ssdlab_core::sim::stop::check()?;
        let marker = &self.managed[0];
        remove_if_present(&self.target.join(marker))?;
        for name in &self.managed[1..] {
            let (from, to) = (self.tmp.join(name), self.target.join(name));
            if from.exists() {
                std::fs::rename(&from, &to)
                    .with_context(|| format!("moving {} into place", to.display()))?;
            } else {
                remove_if_present(&to)?;
            }
        }
        let from = self.tmp.join(marker);
        if from.exists() {
            let to = self.target.join(marker);
            std::fs::rename(&from, &to)
                .with_context(|| format!("moving {} into place", to.display()))?;
        }
        // Files staged under names not in `managed` are a bug: they go with the directory.
        debug_assert!(
            std::fs::read_dir(&self.tmp).is_ok_and(|mut d| d.next().is_none()),
            "a staged file not in the managed list"
        );
        std::fs::remove_dir_all(&self.tmp)
            .with_context(|| format!("removing {}", self.tmp.display()))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.tmp);
            if self.created_target {
                // Only if empty: never anything another process put there meanwhile.
                let _ = std::fs::remove_dir(&self.target);
            }
        }
    }
}

/// Remove file `p` (absent: fine).
pub(crate) fn remove_if_present(p: &Path) -> Result<()> {
    match std::fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", p.display()))
        }
        _ => Ok(()),
    }
}

/// Wall-clock figures, kept out of results.json so that file stays deterministic.
#[derive(Serialize)]
pub struct Perf {
    /// Building the simulation (the device's tables, the workload's sources).
    pub setup_wall_s: f64,
    pub precondition_wall_s: f64,
    pub workload_wall_s: f64,
    pub host_requests_per_wall_s: f64,
    pub peak_rss_bytes: u64,
    /// The binary that measured these figures: cargo profile, and ", PGO" when built with
    /// a profile (`scripts/build-pgo.sh`).
    pub build: &'static str,
}

/// The kind of binary this is (see [`Perf::build`]; set by the crate's build script).
pub const BUILD: &str = env!("SSDLAB_BUILD");

/// Peak resident set size of this process (Linux: VmHWM), 0 where unknown.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// CPU time this process has run, in ns, all its threads (a workload drawn on a thread
/// of its own included, [`ssdlab_workload::threaded`]). Unlike the wall clock it leaves
/// out time spent waiting for a CPU, so two binaries pinned to one CPU and run at once,
/// taking turns, can be compared on it.
pub fn process_cpu_ns() -> Option<u64> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the call only writes it.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) } == 0;
    ok.then(|| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

pub fn write_all(
    dir: &Path,
    cfg: &Config,
    d: &Derived,
    r: &Results,
    series: &[TimeSeriesRow],
    perf: &Perf,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let write = |name: &str, body: String| -> Result<()> {
        let p = dir.join(name);
        std::fs::write(&p, body).with_context(|| format!("writing {}", p.display()))
    };
    write("results.json", files::results_json(r)?)?;
    if !series.is_empty() {
        write("timeseries.csv", files::timeseries_csv(series))?;
    }
    // Functional runs do not model latency: no file of zeros (and an earlier run's goes
    // when the staged directory is committed).
    if let Some(l) = &r.latency_ns {
        write("latency.csv", files::latency_csv(l))?;
    }
    write("config.resolved.toml", files::resolved_toml(cfg, d))?;
    write("perf.json", serde_json::to_string_pretty(perf)? + "\n")?;
    Ok(())
}

fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1000.0)
}

/// The compact human summary printed after a run.
pub fn summary(r: &Results) -> String {
    let mut s = String::new();
    let h = &r.host;
    let _ = writeln!(
        s,
        "{:?} run, seed {}: {} requests ({} reads, {} writes, {} trims, {} flushes) in {:.3} s simulated",
        r.mode,
        r.seed,
        h.requests,
        h.counters.reads,
        h.counters.writes,
        h.counters.trims,
        h.counters.flushes,
        h.sim_time_ns as f64 / 1e9
    );
    match &r.user {
        // A host layer between the workload and the device: the user's figure first.
        Some(u) => {
            let secs = h.sim_time_ns.max(1) as f64 / 1e9;
            let _ = writeln!(
                s,
                "throughput: {:.1} MB/s for the user (read {:.1}, write {:.1}); the device: {:.0} IOPS, {:.1} MB/s (read {:.1}, write {:.1}) with the host layer's relocations",
                u.mb_per_s,
                u.read_bytes as f64 / 1e6 / secs,
                u.write_bytes as f64 / 1e6 / secs,
                h.iops,
                h.mb_per_s,
                h.read_mb_per_s,
                h.write_mb_per_s
            );
        }
        None => {
            let _ = writeln!(
                s,
                "throughput: {:.0} IOPS, {:.1} MB/s (read {:.1}, write {:.1})",
                h.iops, h.mb_per_s, h.read_mb_per_s, h.write_mb_per_s
            );
        }
    }
    if h.counters.failed_requests > 0 {
        let _ = writeln!(
            s,
            "{} requests FAILED (in no other count or latency; by status: results.json zns.errors, fdp)",
            h.counters.failed_requests
        );
        if h.counters.failed_requests == h.requests {
            let _ = writeln!(
                s,
                "  warning: every request failed: a zoned device takes writes at its zones' write pointers (fio zonemode=zbd, the log-structured layer; docs/zns.md)"
            );
        }
    }
    if let Some(z) = &r.zns {
        let _ = writeln!(
            s,
            "zones: {} of {} MiB, {} zone commands, {} resets ({} blocks erased), {} units dropped by resets before NAND, {} offline",
            z.zones,
            z.zone_bytes >> 20,
            h.counters.zone_commands,
            z.resets,
            z.reset_erased_blocks,
            z.dropped_units,
            z.offline_zones
        );
    }
    if let Some(f) = &r.fdp {
        let total: u64 = f.host_units_per_handle.iter().sum();
        let per: Vec<String> = f
            .host_units_per_handle
            .iter()
            .map(|&n| format!("{n} ({:.0} %)", n as f64 * 100.0 / total.max(1) as f64))
            .collect();
        let _ = writeln!(
            s,
            "FDP: {} handles, {} placement ids; host units per handle {}; {} writes refused (unknown placement id)",
            f.handles,
            f.placement_ids,
            per.join(", "),
            f.invalid_placement_ids
        );
    }
    if let Some(u) = &r.user {
        let _ = writeln!(
            s,
            "host log-structured layer: WAF {:.3} ({} user + {} relocated bytes written), total WAF {:.3}",
            u.host_waf,
            r.workload.host_user_write_bytes,
            r.workload.host_gc_write_bytes,
            u.total_waf
        );
        if u.unmapped_read_bytes > 0 {
            let _ = writeln!(
                s,
                "  {:.1} % of the user's read bytes were of units the layer never wrote (zeros, no device I/O)",
                u.unmapped_read_bytes as f64 * 100.0 / u.read_bytes.max(1) as f64
            );
        }
    }
    if let Some(hi) = &r.host_interface {
        let _ = writeln!(
            s,
            "host link: {} ({:.2} GB/s per direction), {} commands ({} requests split), busy {:.1} % down, {:.1} % up; {}",
            hi.link,
            hi.link_gb_per_s,
            hi.commands,
            hi.split_requests,
            hi.down.utilization * 100.0,
            hi.up.utilization * 100.0,
            hi.arbitration
        );
    }
    // Input the run did not replay as written: said here, not only in results.json.
    let w = &r.workload;
    let dropped: Vec<String> = [
        (
            w.skipped_bad_lines,
            "malformed lines skipped (skip_bad_lines)",
        ),
        (w.filtered_records, "records filtered out"),
        (w.zero_size_requests, "zero-size records dropped"),
        (
            w.remapped_requests,
            "requests remapped into the device (out_of_range)",
        ),
        (
            w.clamped_arrivals,
            "arrivals clamped (timestamps going back)",
        ),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if !dropped.is_empty() {
        let _ = writeln!(s, "workload input: {}", dropped.join("; "));
    }
    let none = LatencySummary::of(&ssdlab_core::stats::new_histogram());
    let lat = r.latency_ns.as_ref();
    if lat.is_none() {
        let _ = writeln!(s, "latency: not modelled in the functional mode");
    }
    for (name, l) in [
        ("read", lat.map_or(&none, |l| &l.read)),
        ("write", lat.map_or(&none, |l| &l.write)),
        ("flush", lat.map_or(&none, |l| &l.flush)),
    ] {
        if l.count > 0 {
            let _ = writeln!(
                s,
                "{name} latency us: mean {:.1}  p50 {}  p99 {}  p99.9 {}  p99.99 {}  p99.9999 {}  max {}",
                l.mean / 1000.0,
                us(l.p50),
                us(l.p99),
                us(l.p99_9),
                us(l.p99_99),
                us(l.p99_9999),
                us(l.max)
            );
            // A percentile rests on the samples beyond it: fewer than ten is anecdote.
            let thin: Vec<&str> = [("p99.99", 1e-4), ("p99.9999", 1e-6)]
                .into_iter()
                .filter(|&(_, q)| (l.count as f64) * q < 10.0)
                .map(|(n, _)| n)
                .collect();
            if !thin.is_empty() {
                let plural = format!("{name}s");
                let _ = writeln!(
                    s,
                    "  note: {name} {} rest on fewer than 10 samples beyond them ({} {})",
                    thin.join(" and "),
                    l.count,
                    if name == "flush" { "flushes" } else { &plural }
                );
            }
        }
    }
    let n = &r.nand;
    let _ = writeln!(
        s,
        "NAND pages: reads {} (gc {}), programs {} (gc {}); block erases {}; WAF {}; GC victims {}, copied units {}",
        n.reads.total, n.reads.gc, n.programs.total, n.programs.gc, n.erases.total,
        if r.host.counters.write_units == 0 { "n/a (no host writes)".to_string() } else { format!("{:.3}", r.waf) },
        r.gc.invocations, r.gc.copied_units
    );
    if let Some(x) = r
        .reliability
        .as_ref()
        .filter(|x| x.retries > 0 || x.uncorrectable_reads > 0)
    {
        let _ = writeln!(
            s,
            "read retry ({}): {:.3} retries per NAND read ({} retries, {} soft decodes, {} uncorrectable, {} of them host reads); RBER mean {:.2e}, max {:.2e}",
            x.retry_policy,
            x.read_retries_mean,
            x.retries,
            x.soft_decodes,
            x.uncorrectable_reads,
            x.uncorrectable_host_reads,
            x.rber_mean,
            x.rber_max
        );
    }
    if let Some(m) = &r.mapping {
        let _ = writeln!(
            s,
            "mapping {}: CMT {} B, hit ratio {}; translation page reads {} (host read {}, write {}, relocation {}), programs {} (host read {}, write {}, relocation {}); WAF without translation {}",
            m.policy,
            m.dram_bytes,
            m.cmt_hit_ratio.map_or("n/a".into(), |h| format!("{h:.4}")),
            m.translation_reads.total,
            m.translation_reads.host_read,
            m.translation_reads.host_write,
            m.translation_reads.relocation,
            m.translation_programs.total,
            m.translation_programs.host_read,
            m.translation_programs.host_write,
            m.translation_programs.relocation,
            if r.host.counters.write_units == 0 { "n/a".to_string() } else { format!("{:.3}", m.waf_without_translation) },
        );
        let _ = writeln!(
            s,
            "  NAND reads per host read (0, 1, 2, …, 7+): {:?}; programs per host read (0, 1, 2, 3+): {:?}",
            m.nand_reads_per_host_read, m.nand_programs_per_host_read
        );
    }
    let w = &r.wear;
    let _ = writeln!(
        s,
        "wear: erase count min {} mean {:.2} max {} stddev {:.2}; bad blocks {}",
        w.erase_count_min,
        w.erase_count_mean,
        w.erase_count_max,
        w.erase_count_stddev,
        w.bad_blocks
    );
    let lt = &r.lifetime;
    let event = |e: &Option<ssdlab_core::ftl::LifeEvent>| match e {
        Some(e) => format!(
            "{} at {:.3} s after {} host units",
            e.phase,
            e.sim_ns as f64 / 1e9,
            e.host_write_units
        ),
        None => "none".into(),
    };
    if lt.first_bad_block.is_some() || lt.factory_bad_blocks > 0 {
        let _ = writeln!(
            s,
            "lifetime: {} factory bad blocks; this phase retired {} ({} failed programs, {} failed erases); first bad block: {}; failure: {}",
            lt.factory_bad_blocks,
            lt.retired_blocks,
            lt.program_failures,
            lt.erase_failures,
            event(&lt.first_bad_block),
            event(&lt.failure)
        );
    }
    if r.regions.len() > 1 {
        let list: Vec<String> = r
            .regions
            .iter()
            .map(|g| {
                format!(
                    "{} ({} {}, {} blocks, {} free)",
                    g.name, g.content, g.cell_mode, g.blocks, g.free_blocks
                )
            })
            .collect();
        let _ = writeln!(s, "regions: {}", list.join(", "));
    }
    if r.status == ssdlab_core::RunStatus::WornOut {
        let _ = writeln!(
            s,
            "STATUS: worn out ({}); the figures above cover the run up to the failure",
            lt.failure_reason.as_deref().unwrap_or("device failed")
        );
    }
    if let Some(p) = &r.precondition {
        let _ = writeln!(
            s,
            "precondition: {} fill + {} random units, WAF {:.3}{}",
            p.sequential_fill_units,
            p.random_overwrite_units,
            p.waf,
            if p.steady_state_reached == Some(true) {
                ", steady state"
            } else {
                ""
            }
        );
    }
    if let Some(i) = &r.integrity {
        let _ = writeln!(
            s,
            "integrity: {} reads checked, {} errors",
            i.checked_reads, i.errors
        );
    }
    s.push_str(&audit_lines(&r.audit));
    s
}

pub use ssdlab_experiments::run::audit_lines;

#[cfg(test)]
mod tests {
    use super::*;
    use ssdlab_core::sim::audit;

    /// A small timed run of configs/serve-small.toml.
    fn small_run() -> Results {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/serve-small.toml");
        let mut cfg = Config::from_file(&path).unwrap();
        if let ssdlab_workload::WorkloadConfig::Synthetic(w) = &mut cfg.workload {
            w.requests = 300;
        }
        ssdlab_core::run(cfg, &mut ssdlab_core::NoProgress).unwrap()
    }

    /// The summary ends with the audit: its counts and data path, then each finding — a
    /// warning for a share, INTERNAL ERROR for figures that cannot be (which the run then
    /// reports as an internal error: `cmd_run`).
    #[test]
    fn the_summary_says_the_audit_findings() {
        let r = small_run();
        let s = summary(&r);
        let line = s.lines().find(|l| l.starts_with("audit: ")).expect(&s);
        assert!(
            line.ends_with("data path 7877 MB/s (device.host_transfer_mb_per_s)"),
            "{line}"
        );
        // A fresh device: most reads find units never written.
        assert!(s.contains("  warning (unwritten_reads): "), "{s}");
        assert!(!s.contains("INTERNAL ERROR"), "{s}");
        // A write counted but never completed: an internal error, said.
        let mut bad = r.clone();
        bad.host.counters.writes += 1;
        bad.host.requests += 1;
        bad.audit = audit::audit(&bad, &r.audit.facts);
        let s = summary(&bad);
        assert!(
            s.contains("  INTERNAL ERROR (writes_completed): host.writes = "),
            "{s}"
        );
        let e = bad.audit.internal_error().unwrap().to_string();
        assert!(e.starts_with("internal error (please report it with your config and seed): the results audit found figures that cannot be: writes_completed: "), "{e}");
        // results.json marks it.
        let v: serde_json::Value =
            serde_json::from_str(&files::results_json(&bad).unwrap()).unwrap();
        assert_eq!(v["audit"]["verdict"], "internal_error");
    }
}
