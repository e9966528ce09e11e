//! Read retry on an aged TLC device (`ssdlab reproduce retry`, docs/reliability.md
//! "Study"): read latency (mean, p99, p99.99) and retries per read across P/E cycles
//! ({0, 1000, 3000}, `device.reliability.initial_pe_cycles`) × retention ({0, 30, 365}
//! days, `retention_age_days`) × retry policy (`table`, `sticky`, `oracle`), in the timed
//! mode under a random-read-mostly workload (90 % 4 KiB reads, uniform, QD 16), on
//! configs/default.toml's TLC device scaled down; plus a read-hot workload (99.9 % of
//! 4 KiB reads to a few pages, worn block, fresh data) with and without read reclaim
//! (`ftl.read_reclaim = { policy = "threshold", read_count = … }`): read-disturb retries
//! and the reclaim's WAF cost. The ASPLOS 2024 observation ("Achieving Near-Zero Read
//! Retry for 3D NAND Flash Memory"): with the chip's predefined table, > 3 retries per
//! read on average at 3K P/E and long retention.

use crate::experiment::{Check, Common, DocTable, Experiment, PlotResult, Say, Shape};
use crate::{ExperimentError, Result};
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::{Config, NoProgress, Simulation};
use std::fmt::Write as _;
use std::time::Instant;

const DEFAULT_TOML: &str = include_str!("../../../configs/default.toml");

pub const PE_CYCLES: [u32; 3] = [0, 1000, 3000];
pub const RETENTION_DAYS: [f64; 3] = [0.0, 30.0, 365.0];
pub const POLICIES: [&str; 3] = ["table", "sticky", "oracle"];
/// Requests of a grid run and of a read-hot run at scale 1.
pub const GRID_REQUESTS: u64 = 100_000;
pub const HOT_REQUESTS: u64 = 200_000;
/// Points beyond TLC's rated endurance (3,000): `table`, a year; 1.5× and 2× the rating.
pub const BEYOND_PE_CYCLES: [u32; 2] = [4500, 6000];
/// JESD218's client-class UBER bound at the rated endurance after a year's retention
/// (the check's text): uncorrectable reads are the ECC's failures beyond it.
pub const JESD218_CLIENT_UBER: f64 = 1e-15;
/// The read-hot runs' P/E cycles and read-reclaim threshold (reads since erase).
pub const HOT_PE_CYCLES: u32 = 3000;
pub const RECLAIM_READ_COUNT: u64 = 20_000;
/// The read-hot runs at QD 16 (a die saturated with reads): without reclaim, with it
/// (which today's rule starves), with it urgent from this many reads since erase, and
/// with the `rber` policy at these margins of the hard-decode limit.
pub const HOT_QD16: [&str; 4] = [
    "read-hot QD16",
    "read-hot QD16",
    "read-hot QD16 urgent",
    "read-hot QD16 rber",
];
pub const URGENT_READ_COUNT: u64 = 2 * RECLAIM_READ_COUNT;
pub const RBER_MARGIN: f64 = 0.8;
pub const RBER_URGENT_MARGIN: f64 = 0.9;
/// At QD 16, reclaim (urgent) keeps at most this share of the retries per read without it.
pub const QD16_RETRY_SHARE_MAX: f64 = 0.1;
/// The ASPLOS 2024 figure: `table` retries per read at 3K P/E and a year.
pub const TABLE_RETRIES_AT_3K_1Y_MIN: f64 = 3.0;
/// `sticky` "far fewer": at most this share of `table`'s retries at 3K P/E and a year.
pub const STICKY_SHARE_MAX: f64 = 0.5;

/// Parameters of the study.
#[derive(Clone, Debug)]
pub struct RetryParams {
    pub base: Config,
    /// Divisor of the runs' requests (1 = the study as documented).
    pub scale: f64,
    pub grid_requests: u64,
    pub hot_requests: u64,
}

/// One point of the study.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub workload: &'static str,
    pub pe_cycles: u32,
    pub retention_days: f64,
    pub policy: &'static str,
    pub reclaim: bool,
}

impl RetryParams {
    pub fn new(scale: f64) -> Result<RetryParams> {
        if !(scale >= 1.0 && scale.is_finite()) {
            return Err(ExperimentError::invalid(
                "--scale",
                format!("{scale}: must be ≥ 1 (it divides the requests)"),
            ));
        }
        let mut base = Config::from_toml_str(DEFAULT_TOML, "configs/default.toml")?;
        // 4 channels x 2 chips x 2 planes x 32 blocks x 128 pages of 16 KiB: 1 GiB raw.
        base.device.geometry.blocks_per_plane = 32;
        base.precondition.enabled = true;
        base.precondition.sequential_fill = true;
        base.precondition.random_overwrite_capacity_multiple = 0.0;
        let requests = |n: u64| ((n as f64 / scale).round() as u64).max(200);
        Ok(RetryParams {
            base,
            scale,
            grid_requests: requests(GRID_REQUESTS),
            hot_requests: requests(HOT_REQUESTS),
        })
    }

    pub fn jobs(&self) -> Vec<Job> {
        let mut out = Vec::new();
        for &pe in &PE_CYCLES {
            for &t in &RETENTION_DAYS {
                for &policy in &POLICIES {
                    out.push(Job {
                        workload: "random",
                        pe_cycles: pe,
                        retention_days: t,
                        policy,
                        reclaim: false,
                    });
                }
            }
        }
        for &pe in &BEYOND_PE_CYCLES {
            out.push(Job {
                workload: "random",
                pe_cycles: pe,
                retention_days: 365.0,
                policy: "table",
                reclaim: false,
            });
        }
        for reclaim in [false, true] {
            out.push(Job {
                workload: "read-hot",
                pe_cycles: HOT_PE_CYCLES,
                retention_days: 0.0,
                policy: "table",
                reclaim,
            });
        }
        for (i, workload) in HOT_QD16.into_iter().enumerate() {
            out.push(Job {
                workload,
                pe_cycles: HOT_PE_CYCLES,
                retention_days: 0.0,
                policy: "table",
                reclaim: i > 0,
            });
        }
        out
    }

    pub fn config(&self, j: &Job) -> Result<Config> {
        let mut sets = vec![
            format!("device.reliability.initial_pe_cycles={}", j.pe_cycles),
            format!("device.reliability.retention_age_days={}", j.retention_days),
            format!("device.reliability.retry={{ policy = \"{}\" }}", j.policy),
            "workload.block_size_bytes=4096".to_string(),
        ];
        if j.workload == "random" {
            sets.push("workload.read_percent=90.0".into());
            sets.push("workload.queue_depth=16".into());
            sets.push("workload.pattern=\"uniform\"".into());
            sets.push(format!("workload.requests={}", self.grid_requests));
        } else {
            sets.push("workload.read_percent=100.0".into());
            // QD 1: at QD 16 the hot block's die never idles and, reads first
            // (`read_priority`), the reclaim job gets a turn only when urgent (the QD 16
            // rows, docs/reliability.md).
            let qd = if j.workload.contains("QD16") { 16 } else { 1 };
            sets.push(format!("workload.queue_depth={qd}"));
            sets.push("workload.pattern=\"hot-cold\"".into());
            sets.push("workload.hot_io_percent=99.9".into());
            sets.push("workload.hot_space_percent=0.001".into());
            sets.push(format!("workload.requests={}", self.hot_requests));
        }
        if j.reclaim && j.workload.ends_with("rber") {
            sets.push(format!(
                "ftl.read_reclaim={{ policy = \"rber\", margin = {RBER_MARGIN}, urgent_margin = {RBER_URGENT_MARGIN} }}"
            ));
        } else if j.reclaim {
            let urgent = if j.workload.ends_with("urgent") {
                URGENT_READ_COUNT
            } else {
                0
            };
            sets.push(format!(
                "ftl.read_reclaim={{ policy = \"threshold\", read_count = {RECLAIM_READ_COUNT}, urgent_read_count = {urgent} }}"
            ));
        }
        let c = crate::run::with_overrides(&self.base, &sets, "configs/default.toml")?;
        c.validate()?;
        Ok(c)
    }

    pub fn check(&self) -> Result<()> {
        for j in self.jobs() {
            self.config(&j)?;
        }
        Ok(())
    }
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct RetryRun {
    pub workload: &'static str,
    pub pe_cycles: u32,
    pub retention_days: f64,
    pub policy: &'static str,
    pub reclaim: bool,
    pub reads: u64,
    pub read_mean_us: f64,
    pub read_p99_us: f64,
    pub read_p99_99_us: f64,
    /// CCDF points of the read latency: (µs, P(latency > µs)).
    pub ccdf: Vec<(f64, f64)>,
    pub retries_per_read: f64,
    pub uncorrectable_reads: u64,
    pub soft_decodes: u64,
    pub rber_mean: f64,
    pub waf: f64,
    pub reclaimed_blocks: u64,
    /// Units the read reclaim moved (its programs' cost: WAF is undefined without host
    /// writes, as in the read-hot runs).
    pub reclaimed_units: u64,
    pub wall_s: f64,
    #[serde(skip)]
    pub audit_warnings: Vec<crate::AuditWarning>,
}

/// The study's report.
#[derive(Clone, Debug, Serialize)]
pub struct RetryReport {
    pub scale: f64,
    pub grid_requests: u64,
    pub hot_requests: u64,
    pub endurance_pe_cycles: u32,
    pub runs: Vec<RetryRun>,
    pub wall_s: f64,
}

fn one(p: &RetryParams, j: &Job) -> Result<RetryRun> {
    let t0 = Instant::now();
    let c = p.config(j)?;
    let mut sim = Simulation::new(c)?;
    sim.precondition(&mut NoProgress)?;
    let r = sim.run_workload(&mut NoProgress)?;
    let lat = r
        .latency_ns
        .as_ref()
        .map(|l| l.read.clone())
        .ok_or_else(|| ExperimentError::invalid("mode", "the study needs the timed mode"))?;
    let us = |x: u64| x as f64 / 1e3;
    let ccdf: Vec<(f64, f64)> = [
        (lat.p50, 0.5),
        (lat.p90, 0.1),
        (lat.p95, 0.05),
        (lat.p99, 1e-2),
        (lat.p99_9, 1e-3),
        (lat.p99_99, 1e-4),
        (lat.p99_999, 1e-5),
    ]
    .iter()
    .map(|&(x, q)| (us(x), q))
    .collect();
    let rel = r.reliability.as_ref();
    Ok(RetryRun {
        workload: j.workload,
        pe_cycles: j.pe_cycles,
        retention_days: j.retention_days,
        policy: j.policy,
        reclaim: j.reclaim,
        reads: lat.count,
        read_mean_us: lat.mean / 1e3,
        read_p99_us: us(lat.p99),
        read_p99_99_us: us(lat.p99_99),
        ccdf,
        retries_per_read: rel.map_or(0.0, |x| x.read_retries_mean),
        uncorrectable_reads: rel.map_or(0, |x| x.uncorrectable_reads),
        soft_decodes: rel.map_or(0, |x| x.soft_decodes),
        rber_mean: rel.map_or(0.0, |x| x.rber_mean),
        waf: r.waf,
        reclaimed_blocks: r.gc.reclaimed_blocks,
        reclaimed_units: r.gc.reclaimed_units,
        wall_s: t0.elapsed().as_secs_f64(),
        audit_warnings: crate::AuditWarning::of(
            &r,
            format!(
                "{} {} P/E {} d {} reclaim {}",
                j.workload, j.pe_cycles, j.retention_days, j.policy, j.reclaim
            ),
        ),
    })
}

/// Every run, in parallel on the caller's rayon pool.
pub fn run(p: &RetryParams, on_run: &(dyn Fn(&RetryRun) + Sync)) -> Result<RetryReport> {
    let t0 = Instant::now();
    let runs: Vec<RetryRun> = p
        .jobs()
        .par_iter()
        .map(|j| {
            let r = one(p, j)?;
            on_run(&r);
            Ok(r)
        })
        .collect::<Result<_>>()?;
    Ok(RetryReport {
        scale: p.scale,
        grid_requests: p.grid_requests,
        hot_requests: p.hot_requests,
        endurance_pe_cycles: p.base.device.timing.tlc.endurance_pe_cycles,
        runs,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

pub const CSV_HEADER: &str = "workload,pe_cycles,retention_days,policy,reclaim,reads,read_mean_us,read_p99_us,read_p99_99_us,retries_per_read,uncorrectable_reads,soft_decodes,rber_mean,waf,reclaimed_blocks,reclaimed_units";

/// A row the checks read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// `random`, `read-hot` (QD 1) or one of [`HOT_QD16`].
    pub workload: &'static str,
    pub hot: bool,
    pub pe: u32,
    pub days: f64,
    pub policy: &'static str,
    pub reclaim: bool,
    pub retries: f64,
    pub p99_99_us: f64,
    pub uncorrectable: u64,
    pub waf: f64,
    pub reclaimed_units: u64,
}

fn find<'a>(pts: &'a [Point], pe: u32, days: f64, policy: &str) -> Option<&'a Point> {
    pts.iter()
        .find(|p| !p.hot && p.pe == pe && p.days == days && p.policy == policy)
}

/// The expected shape of the points (`endurance`: the cell mode's rated P/E cycles).
pub fn shape_checks(pts: &[Point], endurance: u32) -> Vec<Check> {
    let mut out = Vec::new();
    // 1. table: retries and the read tail non-decreasing with P/E (each retention) and
    // with retention (each P/E), and the oldest above the freshest.
    let grows = "`table`: retries per read and read p99.99 grow with P/E cycles and with retention (Cai et al. 2017; Luo et al. 2018)";
    let mut falls = Vec::new();
    let mut n = 0;
    for &pe in &PE_CYCLES {
        for w in RETENTION_DAYS.windows(2) {
            if let (Some(a), Some(b)) = (find(pts, pe, w[0], "table"), find(pts, pe, w[1], "table"))
            {
                n += 1;
                if b.retries < a.retries || b.p99_99_us < a.p99_99_us * 0.98 {
                    falls.push(format!("{pe} P/E {}→{} d", w[0], w[1]));
                }
            }
        }
    }
    for &t in &RETENTION_DAYS {
        for w in PE_CYCLES.windows(2) {
            if let (Some(a), Some(b)) = (find(pts, w[0], t, "table"), find(pts, w[1], t, "table")) {
                n += 1;
                if b.retries < a.retries || b.p99_99_us < a.p99_99_us * 0.98 {
                    falls.push(format!("{t} d {}→{} P/E", w[0], w[1]));
                }
            }
        }
    }
    let (first, last) = (find(pts, 0, 0.0, "table"), find(pts, 3000, 365.0, "table"));
    match (first, last) {
        (Some(a), Some(b)) if n > 0 => {
            let ok = falls.is_empty() && b.retries > a.retries && b.p99_99_us > a.p99_99_us;
            let mut d = format!(
                "retries {:.3} (fresh) → {:.3} (3K P/E, 1 y); p99.99 {:.0} → {:.0} µs",
                a.retries, b.retries, a.p99_99_us, b.p99_99_us
            );
            if !falls.is_empty() {
                d += &format!("; falls at {}", falls.join(", "));
            }
            if !(b.retries > a.retries && b.p99_99_us > a.p99_99_us) {
                d += "; the oldest point is not above the fresh one";
            }
            out.push(Check::new("random", grows, Some(ok), d));
        }
        _ => out.push(Check::missing("random", grows)),
    }
    // 2. table > 3 at 3K and 1 y.
    let asplos = format!("`table` > {TABLE_RETRIES_AT_3K_1Y_MIN} retries per read at 3K P/E and 1 year (ASPLOS 2024, \"Achieving Near-Zero Read Retry for 3D NAND Flash Memory\")");
    match last {
        Some(b) => {
            let ok = b.retries > TABLE_RETRIES_AT_3K_1Y_MIN;
            let mut d = format!("{:.3}", b.retries);
            if !ok {
                d += "; the model's TLC magnitudes (docs/reliability.md#defaults) are set for ≈ 2.6 at 2,500 P/E and > 3 at 3K with a whole page's codewords; this run's reads decode fewer codewords (4 KiB) and its blocks' erases this run add none";
            }
            out.push(Check::new("random", asplos, Some(ok), d));
        }
        None => out.push(Check::missing("random", asplos)),
    }
    // 3. sticky far fewer.
    let sticky = format!("`sticky` far fewer retries than `table` at 3K P/E and 1 year (≤ {:.0} % of them; ASPLOS 2024: per-block read offsets remove most retries)", STICKY_SHARE_MAX * 100.0);
    match (last, find(pts, 3000, 365.0, "sticky")) {
        (Some(t), Some(s)) => {
            let ok = s.retries <= STICKY_SHARE_MAX * t.retries && t.retries > 0.0;
            let mut d = format!("sticky {:.3} vs table {:.3}", s.retries, t.retries);
            if !ok {
                d += "; sticky keeps too many of table's retries";
            }
            out.push(Check::new("random", sticky, Some(ok), d));
        }
        _ => out.push(Check::missing("random", sticky)),
    }
    // 4. oracle ≤ sticky ≤ table at every (P/E, retention).
    let order = "`oracle` ≤ `sticky` ≤ `table` retries per read at every P/E and retention (docs/reliability.md: policies)";
    let mut bad = Vec::new();
    let mut m = 0;
    for &pe in &PE_CYCLES {
        for &t in &RETENTION_DAYS {
            if let (Some(o), Some(s), Some(tb)) = (
                find(pts, pe, t, "oracle"),
                find(pts, pe, t, "sticky"),
                find(pts, pe, t, "table"),
            ) {
                m += 1;
                if !(o.retries <= s.retries + 1e-9 && s.retries <= tb.retries + 1e-9) {
                    bad.push(format!(
                        "{pe} P/E {t} d: {:.3}, {:.3}, {:.3}",
                        o.retries, s.retries, tb.retries
                    ));
                }
            }
        }
    }
    if m == 0 {
        out.push(Check::missing("random", order));
    } else {
        let ok = bad.is_empty();
        let d = if ok {
            format!("{m} points in order")
        } else {
            format!("out of order at {}", bad.join("; "))
        };
        out.push(Check::new("random", order, Some(ok), d));
    }
    // 5. uncorrectable only beyond rated endurance: none at any point ≤ the rating, some at
    // every point beyond it (JESD218: the rated endurance is the wear at which, after the
    // class's retention, the UBER still meets its bound; the defaults put the soft
    // decoder's failure at ≈ 1e-16 per bit at 3K P/E and a year, ≈ 3e-3 per 4 KiB read at
    // 4,500: 90,000 reads see hundreds).
    let unc = format!("uncorrectable reads appear only beyond the rated endurance ({endurance} P/E, `endurance_pe_cycles` of TLC): none at any point ≤ it, some at every point beyond it (JESD218: at the rated P/E and a year at 30 °C the client UBER is ≤ {JESD218_CLIENT_UBER:.0e})");
    let within: Vec<String> = pts
        .iter()
        .filter(|p| p.pe <= endurance && p.uncorrectable > 0)
        .map(|p| {
            format!(
                "{} P/E {} d {}: {}",
                p.pe, p.days, p.policy, p.uncorrectable
            )
        })
        .collect();
    let beyond: Vec<&Point> = pts.iter().filter(|p| p.pe > endurance).collect();
    if pts.is_empty() {
        out.push(Check::missing("all", unc));
    } else {
        let none_beyond: Vec<String> = beyond
            .iter()
            .filter(|p| p.uncorrectable == 0)
            .map(|p| format!("{} P/E {} d {}", p.pe, p.days, p.policy))
            .collect();
        let ok = within.is_empty() && !beyond.is_empty() && none_beyond.is_empty();
        let mut d = if within.is_empty() {
            format!(
                "0 at every point ≤ {endurance} P/E ({} points)",
                pts.iter().filter(|p| p.pe <= endurance).count()
            )
        } else {
            format!(
                "uncorrectable within the endurance at {}",
                within.join("; ")
            )
        };
        if beyond.is_empty() {
            d += "; no point beyond the endurance";
        } else {
            let b: Vec<String> = beyond
                .iter()
                .map(|p| {
                    format!(
                        "{} at {} P/E {} d {}",
                        p.uncorrectable, p.pe, p.days, p.policy
                    )
                })
                .collect();
            d += &format!("; beyond it: {}", b.join(", "));
        }
        if !none_beyond.is_empty() {
            d += &format!("; none beyond the endurance at {}", none_beyond.join(", "));
        }
        out.push(Check::new("all", unc, Some(ok), d));
    }
    // 6. read reclaim bounds read-disturb retries at a WAF cost.
    let rr = "read reclaim bounds read-disturb retries (fewer retries per read with it) at a WAF cost (Cai et al., DSN 2015)";
    let hot = |reclaim: bool| {
        pts.iter()
            .find(|p| p.workload == "read-hot" && p.reclaim == reclaim)
    };
    match (hot(false), hot(true)) {
        (Some(a), Some(b)) => {
            let cost = b.waf > a.waf || b.reclaimed_units > a.reclaimed_units;
            let ok = b.retries < a.retries && cost;
            let waf = |w: f64| {
                if w > 0.0 {
                    format!("{w:.3}")
                } else {
                    "n/a (no host writes)".to_string()
                }
            };
            let mut d = format!(
                "retries per read {:.3} without → {:.3} with; cost: {} units moved by reclaim (WAF {} → {})",
                a.retries,
                b.retries,
                b.reclaimed_units,
                waf(a.waf),
                waf(b.waf)
            );
            if b.retries >= a.retries {
                d += "; reclaim did not lower the retries (no read-disturb retries to remove, or the job got no turn on the die)";
            }
            if !cost {
                d += "; no cost: reclaim moved nothing";
            }
            out.push(Check::new("read-hot", rr, Some(ok), d));
        }
        _ => out.push(Check::missing("read-hot", rr)),
    }
    // 7, 8. At QD 16 (reads saturate the hot die) reclaim bounds the read-disturb retries
    // only with the urgency rule: `threshold` urgent, and `rber`.
    let without = pts.iter().find(|p| p.workload == HOT_QD16[0] && !p.reclaim);
    let starved = pts.iter().find(|p| p.workload == HOT_QD16[1] && p.reclaim);
    let share = QD16_RETRY_SHARE_MAX * 100.0;
    for (name, what) in [
        (
            HOT_QD16[2],
            format!("at QD 16 read reclaim with `urgent_read_count = {URGENT_READ_COUNT}` gets die time: retries per read ≤ {share:.0} % of those without reclaim (docs/reliability.md, urgency)"),
        ),
        (
            HOT_QD16[3],
            format!("at QD 16 `rber` read reclaim (margin {RBER_MARGIN}, urgent {RBER_URGENT_MARGIN} of the hard-decode limit): retries per read ≤ {share:.0} % of those without reclaim"),
        ),
    ] {
        match (without, pts.iter().find(|p| p.workload == name && p.reclaim)) {
            (Some(a), Some(b)) => {
                let ok = a.retries > 0.0
                    && b.retries <= QD16_RETRY_SHARE_MAX * a.retries
                    && b.reclaimed_units > 0;
                let mut d = format!(
                    "retries per read {:.4} without → {:.4} with, {} units moved",
                    a.retries, b.retries, b.reclaimed_units
                );
                if let Some(s) = starved {
                    d += &format!(
                        " (without urgency: {:.4}, {} units moved)",
                        s.retries, s.reclaimed_units
                    );
                }
                if a.retries <= 0.0 {
                    d += "; no read-disturb retries without reclaim";
                } else if b.retries > QD16_RETRY_SHARE_MAX * a.retries {
                    d += "; the reclaim did not bound the retries (no die time?)";
                }
                if b.reclaimed_units == 0 {
                    d += "; nothing moved";
                }
                out.push(Check::new("read-hot", what, Some(ok), d));
            }
            _ => out.push(Check::missing("read-hot", what)),
        }
    }
    out
}

impl RetryRun {
    pub fn point(&self) -> Point {
        Point {
            workload: self.workload,
            hot: self.workload.starts_with("read-hot"),
            pe: self.pe_cycles,
            days: self.retention_days,
            policy: self.policy,
            reclaim: self.reclaim,
            retries: self.retries_per_read,
            p99_99_us: self.read_p99_99_us,
            uncorrectable: self.uncorrectable_reads,
            waf: self.waf,
            reclaimed_units: self.reclaimed_units,
        }
    }
}

impl RetryReport {
    pub fn csv(&self) -> String {
        let mut s = String::from(CSV_HEADER);
        s.push('\n');
        for r in &self.runs {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{:.2},{:.2},{:.2},{:.4},{},{},{:.3e},{:.4},{},{}",
                r.workload,
                r.pe_cycles,
                r.retention_days,
                r.policy,
                r.reclaim,
                r.reads,
                r.read_mean_us,
                r.read_p99_us,
                r.read_p99_99_us,
                r.retries_per_read,
                r.uncorrectable_reads,
                r.soft_decodes,
                r.rber_mean,
                r.waf,
                r.reclaimed_blocks,
                r.reclaimed_units
            );
        }
        s
    }

    pub fn checks(&self) -> Vec<Check> {
        let pts: Vec<Point> = self.runs.iter().map(|r| r.point()).collect();
        shape_checks(&pts, self.endurance_pe_cycles)
    }

    pub fn table(&self) -> String {
        let mut s = String::from("| workload | P/E | retention d | policy | reclaim | retries/read | read mean µs | p99 µs | p99.99 µs | uncorrectable | WAF | reclaimed units |\n|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for r in &self.runs {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {:.3} | {:.1} | {:.0} | {:.0} | {} | {:.3} | {} |",
                r.workload,
                r.pe_cycles,
                r.retention_days,
                r.policy,
                match (r.reclaim, r.workload) {
                    (false, _) => "no",
                    (true, w) if w.ends_with("urgent") => "urgent",
                    (true, w) if w.ends_with("rber") => "rber",
                    (true, _) => "yes",
                },
                r.retries_per_read,
                r.read_mean_us,
                r.read_p99_us,
                r.read_p99_99_us,
                r.uncorrectable_reads,
                r.waf,
                r.reclaimed_units
            );
        }
        s
    }
}

/// `ssdlab reproduce retry`.
pub struct Retry;

/// `reproduce retry`'s own flags.
#[derive(clap::Args)]
pub struct RetryArgs {
    /// Divide every run's requests by this (≥ 1; 1 = the study as documented).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
}

impl Experiment for Retry {
    const NAME: &'static str = "retry";
    const ABOUT: &'static str = "Read retry on aged TLC (ASPLOS 2024, \"Achieving Near-Zero Read Retry for 3D NAND Flash Memory\"): read latency and retries per read over P/E cycles x retention x retry policy (table, sticky, oracle), and read reclaim under a read-hot workload";
    const DOC_TABLES: &'static [DocTable] = &[DocTable {
        name: "retry",
        doc: "docs/reliability.md",
        fast: false,
        from: "| workload | P/E |",
        to: Some("## Expected"),
    }];
    type Args = RetryArgs;
    type Params = RetryParams;
    type Report = RetryReport;

    fn params(a: &RetryArgs, common: &Common) -> Result<RetryParams> {
        let mut p = RetryParams::new(a.scale)?;
        p.base = crate::run::with_overrides(&p.base, &common.sets, "configs/default.toml")?;
        if let Some(s) = common.seed {
            p.base.seed = s;
        }
        p.check()?;
        Ok(p)
    }

    fn banner(p: &RetryParams, threads: usize) -> String {
        format!(
            "reproduce retry: {} runs ({} requests per grid run, {} per read-hot run) on {threads} threads ...",
            p.jobs().len(),
            p.grid_requests,
            p.hot_requests
        )
    }

    fn run(p: &RetryParams, say: &dyn Say) -> Result<RetryReport> {
        run(p, &|r: &RetryRun| {
            say.progress(&format!(
                "  {:<8} {:>4} P/E {:>3} d {:<6} reclaim {:<5}: {:.3} retries/read, p99.99 {:.0} µs, {:.1} s wall",
                r.workload,
                r.pe_cycles,
                r.retention_days,
                r.policy,
                r.reclaim,
                r.retries_per_read,
                r.read_p99_99_us,
                r.wall_s
            ));
            say.audit(&r.audit_warnings);
        })
    }

    fn csv(r: &RetryReport) -> String {
        r.csv()
    }

    fn checks(r: &RetryReport) -> Vec<Check> {
        r.checks()
    }

    fn markdown(r: &RetryReport, p: &RetryParams, _wall_s: f64) -> String {
        let c = &p.base;
        let g = &c.device.geometry;
        let mut o = String::from("# Read retry on aged TLC\n\n");
        let _ = writeln!(
            o,
            "* Device (configs/default.toml scaled): TLC, {} channels x {} chips x {} planes/die x {} blocks/plane x {} pages of {} KiB, {:.0} % OP, timed; preconditioned by a sequential fill; rated endurance {} P/E; seed {}.",
            g.channels,
            g.chips_per_channel,
            g.planes_per_die,
            g.blocks_per_plane,
            g.pages_per_block,
            g.page_size_bytes >> 10,
            c.device.over_provisioning_ratio * 100.0,
            r.endurance_pe_cycles,
            c.seed
        );
        let _ = writeln!(
            o,
            "* Grid: `device.reliability.initial_pe_cycles` x `retention_age_days` x `retry` policy; {} requests each, 90 % 4 KiB uniform random reads, QD 16.",
            r.grid_requests
        );
        let _ = writeln!(
            o,
            "* Read-hot: {HOT_PE_CYCLES} P/E, fresh data, `table`; {} requests, 100 % reads at QD 1, 99.9 % of I/O to the first 0.001 % of the space; with and without `ftl.read_reclaim = {{ policy = \"threshold\", read_count = {RECLAIM_READ_COUNT} }}`.",
            r.hot_requests
        );
        let _ = writeln!(
            o,
            "* Read-hot at QD 16 (the hot die always has a read queued): without reclaim; with it (`yes`: starved, reads go first); with `urgent_read_count = {URGENT_READ_COUNT}` (`urgent`: the job then takes every other batch); with `{{ policy = \"rber\", margin = {RBER_MARGIN}, urgent_margin = {RBER_URGENT_MARGIN} }}` (`rber`).\n"
        );
        o += &r.table();
        o += &crate::experiment::shape_section(
            Shape {
                title: "ASPLOS 2024; Cai et al.",
                group: Some("workload"),
            },
            &r.checks(),
            r.runs.len(),
            r.wall_s,
        );
        o
    }

    /// Read-latency CCDFs of `table`, one line per (P/E, retention).
    fn plot(r: &RetryReport, svg: &mut String) -> PlotResult {
        use plotters::prelude::*;
        let root = SVGBackend::with_string(svg, (900, 600)).into_drawing_area();
        root.fill(&WHITE)?;
        let names: Vec<String> = r
            .runs
            .iter()
            .filter(|x| x.workload == "random" && x.policy == "table")
            .map(|x| format!("{} P/E, {} d", x.pe_cycles, x.retention_days))
            .collect();
        let series: Vec<(&str, Vec<(f64, f64)>)> = r
            .runs
            .iter()
            .filter(|x| x.workload == "random" && x.policy == "table")
            .zip(&names)
            .map(|(x, n)| (n.as_str(), x.ccdf.clone()))
            .collect();
        crate::plot::ccdf_panel(
            &root,
            "read latency CCDF by age (`table` retry policy)",
            &series,
        )?;
        root.present()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(table_3k_1y: f64) -> Vec<Point> {
        let mut v = Vec::new();
        for (i, &pe) in PE_CYCLES.iter().enumerate() {
            for (k, &t) in RETENTION_DAYS.iter().enumerate() {
                let base = (i * 3 + k) as f64 * 0.4;
                let table = if pe == 3000 && t == 365.0 {
                    table_3k_1y
                } else {
                    base
                };
                for (policy, r) in [
                    ("table", table),
                    ("sticky", table * 0.2),
                    ("oracle", table * 0.1),
                ] {
                    v.push(Point {
                        workload: "random",
                        hot: false,
                        pe,
                        days: t,
                        policy,
                        reclaim: false,
                        retries: r,
                        p99_99_us: 100.0 + 50.0 * r,
                        uncorrectable: 0,
                        waf: 1.0,
                        reclaimed_units: 0,
                    });
                }
            }
        }
        for (pe, unc) in [(4500, 12), (6000, 900)] {
            v.push(Point {
                workload: "random",
                hot: false,
                pe,
                days: 365.0,
                policy: "table",
                reclaim: false,
                retries: 5.0,
                p99_99_us: 400.0,
                uncorrectable: unc,
                waf: 1.0,
                reclaimed_units: 0,
            });
        }
        for (reclaim, retries, waf, moved) in [(false, 0.5, 0.0, 0), (true, 0.1, 0.0, 512)] {
            v.push(Point {
                workload: "read-hot",
                hot: true,
                pe: 3000,
                days: 0.0,
                policy: "table",
                reclaim,
                retries,
                p99_99_us: 100.0,
                uncorrectable: 0,
                waf,
                reclaimed_units: moved,
            });
        }
        // QD 16: without reclaim, starved, urgent, rber.
        for (i, (retries, moved)) in [(0.5, 0), (0.5, 0), (0.01, 512), (0.02, 768)]
            .into_iter()
            .enumerate()
        {
            v.push(Point {
                workload: HOT_QD16[i],
                hot: true,
                pe: 3000,
                days: 0.0,
                policy: "table",
                reclaim: i > 0,
                retries,
                p99_99_us: 100.0,
                uncorrectable: 0,
                waf: 0.0,
                reclaimed_units: moved,
            });
        }
        v
    }

    fn holds(c: &[Check]) -> Vec<Option<bool>> {
        c.iter().map(|c| c.holds).collect()
    }

    /// The QD 16 checks (7: urgent threshold, 8: rber) fail when the reclaim keeps more
    /// than 10 % of the retries, moves nothing, or there were no retries to remove.
    #[test]
    fn the_qd16_checks_fail_on_perturbed_points() {
        let at = |v: &[Point], w: &str| -> usize {
            v.iter().position(|p| p.workload == w && p.reclaim).unwrap()
        };
        for (k, w) in [(6, HOT_QD16[2]), (7, HOT_QD16[3])] {
            let mut v = grid(3.4);
            let i = at(&v, w);
            v[i].retries = 0.051; // just above 10 % of 0.5
            let c = shape_checks(&v, 3000);
            assert_eq!(
                (c[k].holds, c[13 - k].holds),
                (Some(false), Some(true)),
                "{w}"
            );
            assert!(c[k].detail.contains("did not bound"), "{}", c[k].detail);
            v[i].retries = 0.05; // exactly 10 %
            assert_eq!(shape_checks(&v, 3000)[k].holds, Some(true));
            v[i].reclaimed_units = 0;
            assert_eq!(shape_checks(&v, 3000)[k].holds, Some(false));
        }
        // No retries without reclaim: nothing to show.
        let mut v = grid(3.4);
        v.iter_mut()
            .find(|p| p.workload == HOT_QD16[0])
            .unwrap()
            .retries = 0.0;
        let c = shape_checks(&v, 3000);
        assert_eq!((c[6].holds, c[7].holds), (Some(false), Some(false)));
        // The starved run appears in the detail only.
        assert!(
            c[6].detail.contains("without urgency: 0.5000"),
            "{}",
            c[6].detail
        );
    }

    #[test]
    fn the_checks_fail_on_perturbed_points() {
        let good = grid(3.4);
        assert_eq!(holds(&shape_checks(&good, 3000)), [Some(true); 8]);
        // table below 3 at 3K/1y (and below 3K/30d: growth fails too).
        let low = grid(2.6);
        assert_eq!(
            holds(&shape_checks(&low, 3000)),
            [
                Some(false),
                Some(false),
                Some(true),
                Some(true),
                Some(true),
                Some(true),
                Some(true),
                Some(true)
            ]
        );
        // sticky as many as table.
        let mut s = grid(3.4);
        for p in s.iter_mut().filter(|p| p.policy == "sticky") {
            p.retries = find(&grid(3.4), p.pe, p.days, "table").unwrap().retries;
        }
        let c = shape_checks(&s, 3000);
        assert_eq!(holds(&c)[2], Some(false));
        assert_eq!(holds(&c)[3], Some(true));
        // oracle above sticky at one point.
        let mut o = grid(3.4);
        o.iter_mut()
            .find(|p| p.policy == "oracle" && p.pe == 1000 && p.days == 30.0)
            .unwrap()
            .retries = 5.0;
        let c = shape_checks(&o, 3000);
        assert_eq!(holds(&c)[3], Some(false));
        assert!(c[3].detail.contains("1000 P/E 30 d"), "{}", c[3].detail);
        // an uncorrectable read within the endurance.
        let mut u = grid(3.4);
        u.iter_mut()
            .find(|p| p.pe == 1000 && p.policy == "table")
            .unwrap()
            .uncorrectable = 2;
        let c = shape_checks(&u, 3000);
        assert_eq!(holds(&c)[4], Some(false));
        assert!(
            c[4].detail.contains("1000 P/E 0 d table: 2"),
            "{}",
            c[4].detail
        );
        assert!(c[4].claim.contains("1e-15"), "{}", c[4].claim);
        // rated 500: the 1K and 3K points are beyond it, and most have none.
        assert_eq!(holds(&shape_checks(&u, 500))[4], Some(false));
        // a point beyond the endurance without an uncorrectable read, or none beyond.
        let mut b = grid(3.4);
        b.iter_mut().find(|p| p.pe == 4500).unwrap().uncorrectable = 0;
        let c = shape_checks(&b, 3000);
        assert_eq!(holds(&c)[4], Some(false));
        assert!(
            c[4].detail
                .contains("none beyond the endurance at 4500 P/E"),
            "{}",
            c[4].detail
        );
        assert_eq!(holds(&shape_checks(&grid(3.4), 10_000))[4], Some(false));
        // reclaim without a WAF cost, or without fewer retries.
        fn qd1(v: &mut [Point]) -> &mut Point {
            v.iter_mut()
                .find(|p| p.workload == "read-hot" && p.reclaim)
                .unwrap()
        }
        let mut r = grid(3.4);
        qd1(&mut r).reclaimed_units = 0;
        assert_eq!(holds(&shape_checks(&r, 3000))[5], Some(false));
        let mut r = grid(3.4);
        qd1(&mut r).retries = 0.6;
        assert_eq!(holds(&shape_checks(&r, 3000))[5], Some(false));
        // a fall with retention.
        let mut f = grid(3.4);
        f.iter_mut()
            .find(|p| p.policy == "table" && p.pe == 1000 && p.days == 365.0)
            .unwrap()
            .retries = 0.0;
        assert_eq!(holds(&shape_checks(&f, 3000))[0], Some(false));
        assert_eq!(holds(&shape_checks(&[], 3000)), [None; 8]);
    }

    #[test]
    fn the_study_is_valid() {
        let p = RetryParams::new(100.0).unwrap();
        p.check().unwrap();
        assert_eq!(p.jobs().len(), 31 + HOT_QD16.len());
        assert!(RetryParams::new(0.5).is_err());
    }

    /// A quick run (requests / 1000): every point present, the CSV one row each, aged
    /// `table` points retry more than fresh ones, and the checks decide.
    #[test]
    fn a_quick_run_has_every_point() {
        let p = RetryParams::new(1000.0).unwrap();
        let r = run(&p, &|_| {}).unwrap();
        assert_eq!(r.runs.len(), 31 + HOT_QD16.len());
        assert_eq!(r.csv().lines().count(), 32 + HOT_QD16.len());
        let t = |pe, d| {
            r.runs
                .iter()
                .find(|x| {
                    x.workload == "random"
                        && x.policy == "table"
                        && x.pe_cycles == pe
                        && x.retention_days == d
                })
                .unwrap()
                .retries_per_read
        };
        assert_eq!(t(0, 0.0), 0.0);
        assert!(t(3000, 365.0) > t(3000, 30.0), "{}", r.csv());
        assert!(r.checks().iter().all(|c| c.holds.is_some()));
    }
}
