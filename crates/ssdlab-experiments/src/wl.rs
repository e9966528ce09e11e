//! Spec 03: wear leveling and lifetime on the Table-2 device (`ssdlab reproduce wl`,
//! docs/reproduce-wl.md). Every algorithm and TH runs on every trace until the device
//! fails; figures are also given as ratios to GA on the same trace (the paper's seconds
//! come from a clock it does not describe).

use crate::experiment::{Check, Common, DocTable, Experiment, PlotResult, Say, Shape};
use crate::{ExperimentError, Result};
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::{Config, NoProgress, RunStatus, Simulation};
use std::fmt::Write as _;
use std::time::Instant;

pub const TABLE2_TOML: &str = include_str!("../../../configs/wl-table2.toml");

/// One algorithm setting: a wear-leveling table and an allocation policy.
#[derive(Clone, Debug, Serialize)]
pub struct WlAlgo {
    pub name: &'static str,
    /// TH in percent (PET, EPET).
    pub th: Option<u32>,
    /// `[ftl] wear_leveling = …` (inline TOML table).
    pub wear: String,
    pub allocation: &'static str,
}

impl WlAlgo {
    pub fn label(&self) -> String {
        match self.th {
            Some(t) => format!("{}-TH{t}", self.name),
            None => self.name.to_string(),
        }
    }
}

/// The paper's set: GA, DP, BET, Adaptive, PET-TH 90/95/97, EPET-TH 90/95/97/98/99, with
/// the paper's allocation (min-erase for EPET, FIFO for the others) unless `allocation`
/// names one for all.
pub fn paper_algorithms(allocation: Option<&'static str>) -> Vec<WlAlgo> {
    let a = |own: &'static str| allocation.unwrap_or(own);
    let simple = |name, policy: &str| WlAlgo {
        name,
        th: None,
        wear: format!("{{ policy = \"{policy}\" }}"),
        allocation: a("fifo"),
    };
    let mut v = vec![
        simple("GA", "none"),
        simple("DP", "dual-pool"),
        simple("BET", "bet"),
        simple("Adaptive", "adaptive"),
    ];
    for th in [90, 95, 97] {
        v.push(WlAlgo {
            name: "PET",
            th: Some(th),
            wear: format!("{{ policy = \"pet\", th_percent = {th} }}"),
            allocation: a("fifo"),
        });
    }
    for th in [90, 95, 97, 98, 99] {
        v.push(WlAlgo {
            name: "EPET",
            th: Some(th),
            wear: format!("{{ policy = \"epet\", th_percent = {th} }}"),
            allocation: a("min-erase"),
        });
    }
    v
}

/// Trace `t` (1, 2, 3): hot share of the address space and of the writes, in percent.
pub fn trace_shares(t: u32) -> Option<(u32, u32)> {
    match t {
        1 => Some((15, 85)),
        2 => Some((25, 75)),
        3 => Some((35, 65)),
        _ => None,
    }
}

#[derive(Clone, Debug)]
pub struct WlParams {
    pub algorithms: Vec<WlAlgo>,
    pub traces: Vec<u32>,
    /// P/E cycles a block endures (10^3 for the paper's lifetime runs; Table 2 says 10^4).
    pub endurance: u32,
    /// Divide the blocks (and the GC threshold) by this, for quick runs.
    pub scale: u32,
    pub seed: Option<u64>,
    /// `key=value` overrides applied to every run's configuration (`--set`).
    pub sets: Vec<String>,
}

impl WlParams {
    pub fn paper() -> WlParams {
        WlParams {
            algorithms: paper_algorithms(None),
            traces: vec![1, 2, 3],
            endurance: 1000,
            scale: 1,
            seed: None,
            sets: Vec::new(),
        }
    }

    /// Every run's configuration is valid (scale, endurance, traces, algorithms and
    /// overrides): call before announcing the runs; [`run`] calls it before any long work.
    pub fn check(&self) -> Result<()> {
        for a in &self.algorithms {
            for &tr in &self.traces {
                self.config(a, tr)?;
            }
        }
        Ok(())
    }

    /// The config of one run, from the preset's text (so the policies are named as a user
    /// names them).
    pub fn config(&self, algo: &WlAlgo, trace: u32) -> Result<Config> {
        let (hot_space, hot_io) = trace_shares(trace).ok_or_else(|| {
            ExperimentError::invalid("traces", format!("trace {trace}: expected 1, 2 or 3"))
        })?;
        if self.scale == 0 || self.endurance == 0 {
            return Err(ExperimentError::invalid("scale/endurance", "must be >= 1"));
        }
        if 2048 / self.scale < 64 {
            return Err(ExperimentError::invalid(
                "scale",
                format!(
                    "{}: at most 32 (2048 blocks / scale must leave 64)",
                    self.scale
                ),
            ));
        }
        let blocks = 2048 / self.scale;
        let soft = (blocks * 5).div_ceil(100);
        let mut text = String::new();
        for line in TABLE2_TOML.lines() {
            let key = line.split('=').next().unwrap_or("").trim();
            let l = match key {
                "wear_leveling" => format!("wear_leveling = {}", algo.wear),
                "allocation" => format!("allocation = {{ policy = \"{}\" }}", algo.allocation),
                "endurance_pe_cycles" => format!("endurance_pe_cycles = {}", self.endurance),
                "blocks_per_plane" => format!("blocks_per_plane = {blocks}"),
                "gc_soft_free_blocks" => format!("gc_soft_free_blocks = {soft}"),
                "hot_space_percent" => format!("hot_space_percent = {hot_space}.0"),
                "hot_io_percent" => format!("hot_io_percent = {hot_io}.0"),
                "requests" => "until = \"failure\"".to_string(),
                _ => line.to_string(),
            };
            text.push_str(&l);
            text.push('\n');
        }
        let text = ssdlab_core::config::apply_overrides(&text, &self.sets)?;
        let mut c =
            Config::from_toml_str(&text, &format!("configs/wl-table2.toml ({})", algo.label()))
                .map_err(|e| {
                    ExperimentError::invalid("algorithm", format!("{}: {e}", algo.label()))
                })?;
        if let Some(s) = self.seed {
            c.seed = s;
        }
        Ok(c)
    }
}

/// A change in percent with its sign: `-5.0 %`, `+1.7 %`, `0.0 %`.
pub fn signed_percent(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == 0.0 {
        "0.0 %".to_string()
    } else {
        format!("{r:+.1} %")
    }
}

/// One run to failure.
#[derive(Clone, Debug, Serialize)]
pub struct WlRun {
    pub algorithm: String,
    pub th: Option<u32>,
    pub trace: u32,
    pub allocation: &'static str,
    pub first_bad_s: f64,
    pub first_bad_host_writes: u64,
    pub failure_s: f64,
    pub failure_host_writes: u64,
    /// (failure − first bad) / failure time, in percent.
    pub gap_pct: f64,
    /// Valid pages moved by GC and wear leveling (NAND programs of both causes).
    pub page_migrations: u64,
    /// Of which by wear leveling.
    pub wl_page_migrations: u64,
    pub erase_stddev: f64,
    /// Simulated time per host write (the functional mode's serial clock).
    pub avg_response_ns: f64,
    pub waf: f64,
    pub wall_s: f64,
    /// Erase count of every block at failure (for the distribution plot).
    #[serde(skip)]
    pub erase_counts: Vec<u32>,
    /// Warnings of the point's results audit (shares a reader of its figures must know).
    pub audit_warnings: Vec<crate::AuditWarning>,
}

impl WlRun {
    /// Page migrations per host write up to the failure (runs end at different host
    /// writes, so overheads compare per write).
    pub fn migrations_per_host_write(&self) -> f64 {
        self.page_migrations as f64 / self.failure_host_writes.max(1) as f64
    }
}

/// Run one algorithm on one trace to failure.
pub fn run_one(p: &WlParams, algo: &WlAlgo, trace: u32) -> Result<WlRun> {
    let t = Instant::now();
    let mut sim = Simulation::new(p.config(algo, trace)?)?;
    sim.precondition(&mut NoProgress)?;
    let r = sim.run_workload(&mut NoProgress)?;
    let label = algo.label();
    let (Some(fb), Some(f)) = (&r.lifetime.first_bad_block, &r.lifetime.failure) else {
        return Err(ExperimentError::invalid(
            "requests",
            format!("{label} trace {trace}: the device did not fail"),
        ));
    };
    if r.status != RunStatus::WornOut {
        return Err(ExperimentError::invalid(
            "status",
            format!("{label}: run ended without wearing out"),
        ));
    }
    let s = |ns: u64| ns as f64 / 1e9;
    let audit_warnings = crate::AuditWarning::of(&r, format!("{label} trace {trace}"));
    Ok(WlRun {
        algorithm: label,
        th: algo.th,
        trace,
        allocation: algo.allocation,
        first_bad_s: s(fb.sim_ns),
        first_bad_host_writes: fb.host_write_units,
        failure_s: s(f.sim_ns),
        failure_host_writes: f.host_write_units,
        gap_pct: 100.0 * (f.sim_ns - fb.sim_ns.min(f.sim_ns)) as f64 / f.sim_ns.max(1) as f64,
        page_migrations: r.nand.programs.gc + r.nand.programs.wear_leveling,
        wl_page_migrations: r.nand.programs.wear_leveling,
        erase_stddev: r.wear.erase_count_stddev,
        avg_response_ns: r.host.sim_time_ns as f64 / r.host.counters.write_units.max(1) as f64,
        waf: r.waf,
        wall_s: t.elapsed().as_secs_f64(),
        erase_counts: sim.ftl.erase_counts().to_vec(),
        audit_warnings,
    })
}

#[derive(Clone, Debug, Serialize)]
pub struct WlReport {
    pub endurance: u32,
    pub blocks: u32,
    pub runs: Vec<WlRun>,
    pub wall_s: f64,
}

/// Every algorithm on every trace, in parallel (rayon's pool); rows in (trace, algorithm)
/// order.
pub fn run(p: &WlParams, on_run: &(dyn Fn(&WlRun) + Sync)) -> Result<WlReport> {
    let t = Instant::now();
    p.check()?;
    let jobs: Vec<(u32, &WlAlgo)> = p
        .traces
        .iter()
        .flat_map(|&tr| p.algorithms.iter().map(move |a| (tr, a)))
        .collect();
    let runs = jobs
        .par_iter()
        .map(|&(tr, a)| {
            let r = run_one(p, a, tr)?;
            on_run(&r);
            Ok(r)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(WlReport {
        endurance: p.endurance,
        blocks: 2048 / p.scale.max(1),
        runs,
        wall_s: t.elapsed().as_secs_f64(),
    })
}

pub const CSV_HEADER: &str = "algorithm,th,trace,allocation,first_bad_s,first_bad_host_writes,failure_s,failure_host_writes,gap_pct,page_migrations,erase_stddev,avg_response_ns,first_bad_s_vs_ga,failure_s_vs_ga,page_migrations_per_write_vs_ga,erase_stddev_vs_ga,avg_response_ns_vs_ga,wl_page_migrations";

impl WlReport {
    /// GA's run on `trace`.
    pub fn ga(&self, trace: u32) -> Option<&WlRun> {
        self.runs
            .iter()
            .find(|r| r.trace == trace && r.algorithm == "GA")
    }

    pub fn find(&self, algorithm: &str, trace: u32) -> Option<&WlRun> {
        self.runs
            .iter()
            .find(|r| r.trace == trace && r.algorithm == algorithm)
    }

    /// `r`'s figures over GA's on the same trace (NaN without a GA run).
    pub fn ratios(&self, r: &WlRun) -> [f64; 5] {
        let Some(g) = self.ga(r.trace) else {
            return [f64::NAN; 5];
        };
        let q = |a: f64, b: f64| if b == 0.0 { f64::NAN } else { a / b };
        [
            q(r.first_bad_s, g.first_bad_s),
            q(r.failure_s, g.failure_s),
            q(r.migrations_per_host_write(), g.migrations_per_host_write()),
            q(r.erase_stddev, g.erase_stddev),
            q(r.avg_response_ns, g.avg_response_ns),
        ]
    }

    pub fn csv(&self) -> String {
        let mut s = String::from(CSV_HEADER);
        s.push('\n');
        for r in &self.runs {
            let x = self.ratios(r);
            s += &format!(
                "{},{},{},{},{:.3},{},{:.3},{},{:.3},{},{:.3},{:.1},{:.4},{:.4},{:.4},{:.4},{:.4},{}\n",
                r.algorithm,
                r.th.map_or(String::new(), |t| t.to_string()),
                r.trace,
                r.allocation,
                r.first_bad_s,
                r.first_bad_host_writes,
                r.failure_s,
                r.failure_host_writes,
                r.gap_pct,
                r.page_migrations,
                r.erase_stddev,
                r.avg_response_ns,
                x[0],
                x[1],
                x[2],
                x[3],
                x[4],
                r.wl_page_migrations
            );
        }
        s
    }

    /// Table 4's layout per trace, each figure with its ratio to GA.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let mut traces: Vec<u32> = self.runs.iter().map(|r| r.trace).collect();
        traces.dedup();
        for t in traces {
            let (h, c) = trace_shares(t).unwrap_or((0, 0));
            s += &format!("\n### Trace {t} (central {h} % of addresses get {c} % of writes)\n\n");
            s += "| algorithm | alloc | first bad s (× GA) | failure s (× GA) | gap % | page migrations (per host write × GA) | of which WL | erase stddev (× GA) | avg response µs (× GA) | WAF |\n";
            s += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
            for r in self.runs.iter().filter(|r| r.trace == t) {
                let x = self.ratios(r);
                s += &format!(
                    "| {} | {} | {:.0} ({:.2}) | {:.0} ({:.2}) | {:.2} | {} ({:.2}) | {} | {:.1} ({:.2}) | {:.0} ({:.2}) | {:.2} |\n",
                    r.algorithm,
                    r.allocation,
                    r.first_bad_s,
                    x[0],
                    r.failure_s,
                    x[1],
                    r.gap_pct,
                    r.page_migrations,
                    x[2],
                    r.wl_page_migrations,
                    r.erase_stddev,
                    x[3],
                    r.avg_response_ns / 1e3,
                    x[4],
                    r.waf
                );
            }
        }
        s
    }

    /// The paper's expected shape, per trace: each check with the numbers and whether it
    /// holds ("not run" when an algorithm is missing).
    pub fn checks(&self) -> Vec<Check> {
        let mut out = Vec::new();
        let mut traces: Vec<u32> = self.runs.iter().map(|r| r.trace).collect();
        traces.dedup();
        for t in traces {
            let get = |a: &str| self.find(a, t);
            let fb = |a: &str| get(a).map(|r| r.first_bad_s);
            let mut add = |name: &str, ok: Option<bool>, detail: String| {
                out.push(Check::new(t.to_string(), name, ok, detail))
            };
            let ga = get("GA");
            // 1. EPET-TH90 first bad and lifetime >= 3x GA (paper 5.2x and 4.4x).
            match (ga, get("EPET-TH90")) {
                (Some(g), Some(e)) => {
                    let (a, b) = (e.first_bad_s / g.first_bad_s, e.failure_s / g.failure_s);
                    let ok = a >= 3.0 && b >= 3.0;
                    let why = if ok { String::new() } else { even_wear_why(g) };
                    add(
                        "EPET-TH90 first bad and lifetime >= 3x GA (paper 5.2x, 4.4x)",
                        Some(ok),
                        format!("{a:.2}x, {b:.2}x{why}"),
                    );
                }
                _ => add("EPET-TH90 vs GA", None, "not run".into()),
            }
            // 2. EPET > PET at each TH for first bad.
            let pairs: Vec<(u32, f64, f64)> = [90, 95, 97]
                .iter()
                .filter_map(|th| {
                    Some((
                        *th,
                        fb(&format!("EPET-TH{th}"))?,
                        fb(&format!("PET-TH{th}"))?,
                    ))
                })
                .collect();
            add(
                "EPET > PET first bad at each TH",
                (!pairs.is_empty()).then(|| pairs.iter().all(|p| p.1 > p.2)),
                pairs
                    .iter()
                    .map(|p| format!("TH{}: {:.0} vs {:.0} s", p.0, p.1, p.2))
                    .collect::<Vec<_>>()
                    .join("; "),
            );
            // 3. BET: most migrations (per host write), >= 3x any EPET, lowest stddev.
            if let Some(b) = get("BET") {
                let rows: Vec<&WlRun> = self.runs.iter().filter(|r| r.trace == t).collect();
                let m = |r: &WlRun| r.migrations_per_host_write();
                let most = rows.iter().all(|r| m(r) <= m(b));
                let epet_max = rows
                    .iter()
                    .filter(|r| r.algorithm.starts_with("EPET"))
                    .map(|r| m(r))
                    .fold(0.0, f64::max);
                let lowest = rows.iter().all(|r| r.erase_stddev >= b.erase_stddev);
                let ok = most && m(b) >= 3.0 * epet_max;
                let why = match (ok, ga) {
                    (false, Some(g)) => format!(
                        " — why: with its published T = 100 BET moves {:.2}x GA's migrations per host write (GC's own moves dominate), less than EPET's leveling adds",
                        m(b) / m(g).max(f64::MIN_POSITIVE)
                    ),
                    _ => String::new(),
                };
                add(
                    "BET has the most page migrations per host write, >= 3x any EPET",
                    Some(ok),
                    format!("BET {:.3} vs max EPET {epet_max:.3}{why}", m(b)),
                );
                let best = rows
                    .iter()
                    .min_by(|x, y| x.erase_stddev.total_cmp(&y.erase_stddev))
                    .expect("BET is among the rows");
                let why = if lowest {
                    String::new()
                } else {
                    format!(
                        " — why: {} levels closer ({:.1}); BET's flags cover block sets once per interval (T = 100), a coarse bound",
                        best.algorithm, best.erase_stddev
                    )
                };
                add(
                    "BET has the lowest erase-count stddev",
                    Some(lowest),
                    format!(
                        "BET {:.1}; lowest {:.1}{why}",
                        b.erase_stddev, best.erase_stddev
                    ),
                );
            } else {
                add("BET migrations and stddev", None, "not run".into());
            }
            // 4. EPET migrations fall strictly with TH; first bad falls slowly.
            let epet: Vec<&WlRun> = [90, 95, 97, 98, 99]
                .iter()
                .filter_map(|th| get(&format!("EPET-TH{th}")))
                .collect();
            if epet.len() >= 2 {
                let falls = epet
                    .windows(2)
                    .all(|w| w[1].wl_page_migrations < w[0].wl_page_migrations);
                add(
                    "EPET's wear-leveling migrations fall strictly as TH rises",
                    Some(falls),
                    epet.iter()
                        .map(|r| r.wl_page_migrations.to_string())
                        .collect::<Vec<_>>()
                        .join(" > "),
                );
                let (a, b) = (epet[0].first_bad_s, epet[epet.len() - 1].first_bad_s);
                add(
                    "EPET first bad falls slowly with TH (last >= 80 % of TH90's)",
                    Some(b <= a * 1.05 && b >= 0.8 * a),
                    format!("{a:.0} -> {b:.0} s"),
                );
            } else {
                add("EPET TH trend", None, "not run".into());
            }
            // 5. PET more TH-sensitive than EPET (TH90 -> TH97).
            match (
                fb("PET-TH90"),
                fb("PET-TH97"),
                fb("EPET-TH90"),
                fb("EPET-TH97"),
            ) {
                (Some(p0), Some(p1), Some(e0), Some(e1)) => {
                    let (dp, de) = ((p0 - p1) / p0, (e0 - e1) / e0);
                    add(
                        "PET first bad more TH-sensitive than EPET's (TH90 -> 97)",
                        Some(dp > de),
                        format!(
                            "PET {}, EPET {}",
                            signed_percent(-100.0 * dp),
                            signed_percent(-100.0 * de)
                        ),
                    );
                }
                _ => add("PET vs EPET TH sensitivity", None, "not run".into()),
            }
            // 6. EPET gap <= 1 % of lifetime (PET's 14-28 % in the paper).
            let gaps: Vec<String> = epet.iter().map(|r| format!("{:.2}", r.gap_pct)).collect();
            let pet_gaps: Vec<String> = [90, 95, 97]
                .iter()
                .filter_map(|th| get(&format!("PET-TH{th}")))
                .map(|r| format!("{:.1}", r.gap_pct))
                .collect();
            let over: Vec<String> = epet
                .iter()
                .filter(|r| r.gap_pct > 1.0)
                .map(|r| format!("{} {:.2} %", r.algorithm, r.gap_pct))
                .collect();
            let why = if over.is_empty() {
                String::new()
            } else {
                format!(
                    " — why: {}: the highest thresholds migrate least ({} pages at the last), leaving the spread to the allocator on the most skewed trace",
                    over.join(", "),
                    epet.last().map_or(0, |r| r.wl_page_migrations)
                )
            };
            add(
                "EPET gap <= 1 % of lifetime (PET's for comparison)",
                (!epet.is_empty()).then_some(over.is_empty()),
                format!(
                    "EPET {} %; PET {} %{why}",
                    gaps.join(", "),
                    pet_gaps.join(", ")
                ),
            );
            // 7. DP ~ GA (first bad within 10 %).
            match (ga, get("DP")) {
                (Some(g), Some(d)) => {
                    let x = d.first_bad_s / g.first_bad_s;
                    add(
                        "DP ≈ GA (first bad within 10 %)",
                        Some((0.9..=1.1).contains(&x)),
                        format!("{x:.2}x"),
                    );
                }
                _ => add("DP vs GA", None, "not run".into()),
            }
        }
        out
    }
}

/// Why EPET cannot reach 3× GA on a trace: with perfectly even wear the device would last at
/// most (endurance / GA's mean erase count at its failure) × GA's lifetime.
fn even_wear_why(ga: &WlRun) -> String {
    let n = ga.erase_counts.len().max(1) as f64;
    let mean = ga.erase_counts.iter().map(|&c| c as f64).sum::<f64>() / n;
    let max = ga.erase_counts.iter().copied().max().unwrap_or(0);
    if mean <= 0.0 {
        return String::new();
    }
    format!(
        " — why: GA's blocks average {mean:.0} erases of {max} when it fails, so even wear could last at most {:.1}x GA's lifetime on this trace (the paper's 5.2x needs far more skewed wear)",
        max as f64 / mean
    )
}

/// `ssdlab reproduce wl`.
pub struct Wl;

/// `reproduce wl`'s own flags.
#[derive(clap::Args)]
pub struct WlArgs {
    /// Shrink the Table-2 device by this factor (2048 blocks / SCALE, SCALE ≤ 32), for a
    /// quick look; 1 = the paper's device.
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// Traces to run (1, 2, 3: hot 15/25/35 % of the addresses get 85/75/65 % of writes).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    traces: Vec<u32>,
    /// P/E cycles per block (10^3: the paper's lifetime runs; 10^4: its Table 2, 10x
    /// longer).
    #[arg(long, default_value_t = 1000)]
    endurance: u32,
    /// Free-block allocation for every algorithm: `paper` (min-erase for EPET, FIFO for
    /// the others), `fifo` or `min-erase`.
    #[arg(long, default_value = "paper")]
    allocation: String,
}

impl Experiment for Wl {
    const NAME: &'static str = "wl";
    const ABOUT: &'static str = "Spec 03: wear leveling (GA, DP, BET, Adaptive, PET, EPET) on the Table-2 device and the normal-distribution traces, to device failure: lifetime, migrations, spread";
    const DOC_TABLES: &'static [DocTable] = &[
        DocTable {
            name: "wl",
            doc: "docs/wear-leveling.md",
            fast: false,
            from: "### ",
            to: Some("### Trace 2"),
        },
        DocTable {
            name: "wl-shape",
            doc: "docs/wear-leveling.md",
            fast: false,
            from: "| trace | check |",
            to: None,
        },
    ];
    type Args = WlArgs;
    type Params = WlParams;
    type Report = WlReport;

    fn params(a: &WlArgs, common: &Common) -> Result<WlParams> {
        let allocation = match a.allocation.as_str() {
            "paper" => None,
            "fifo" => Some("fifo"),
            "min-erase" => Some("min-erase"),
            other => {
                return Err(ExperimentError::invalid(
                    format!("--allocation {other}"),
                    "expected paper, fifo or min-erase",
                ))
            }
        };
        let p = WlParams {
            algorithms: paper_algorithms(allocation),
            traces: a.traces.clone(),
            endurance: a.endurance,
            scale: a.scale,
            seed: common.seed,
            sets: common.sets.clone(),
        };
        p.check()?;
        Ok(p)
    }

    fn banner(p: &WlParams, threads: usize) -> String {
        let runs = p.algorithms.len() * p.traces.len();
        // About 2-10 s per run on the full device at endurance 10^3 (scales with both).
        let est = runs as f64 * 5.0 * p.endurance as f64
            / 1000.0
            / p.scale.max(1) as f64
            / threads as f64;
        format!(
            "reproduce wl: {} algorithms x {} traces to device failure on {threads} threads (about {est:.0} s) ...",
            p.algorithms.len(),
            p.traces.len(),
        )
    }

    fn run(p: &WlParams, say: &dyn Say) -> Result<WlReport> {
        run(p, &|r: &WlRun| {
            say.progress(&format!(
                "  {:<10} trace {}: first bad {:>9.0} s, failure {:>9.0} s, {:.1} s wall",
                r.algorithm, r.trace, r.first_bad_s, r.failure_s, r.wall_s
            ));
            say.audit(&r.audit_warnings);
        })
    }

    fn csv(r: &WlReport) -> String {
        r.csv()
    }

    fn checks(r: &WlReport) -> Vec<Check> {
        r.checks()
    }

    fn markdown(r: &WlReport, p: &WlParams, _wall_s: f64) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "# Wear leveling and lifetime (spec 03, EPET paper)\n");
        let _ = writeln!(
            o,
            "* Device: Table 2, {} blocks x 64 pages x 4 KiB MLC{}, 15 % reserve, GC below 5 % free blocks, read/program/erase 60/800/1,500 µs, endurance {} P/E cycles; functional mode (serial clock); seed from the preset.",
            r.blocks,
            if p.scale > 1 { " (scaled down)" } else { "" },
            r.endurance
        );
        let _ = writeln!(
            o,
            "{}",
            crate::experiment::gc_planes_line(
                true,
                "functional mode (no dies): wear and migrations do not depend on it."
            )
        );
        let _ = writeln!(
            o,
            "* Traces: 4 KiB writes after a sequential fill; block index ~ centred Normal, σ such that the central hot share of addresses gets the cold share of writes; run until the device fails (usable blocks no longer hold the logical capacity plus the GC reserve)."
        );
        let _ = writeln!(
            o,
            "* Page migrations = valid pages moved by GC and wear leveling; avg response = simulated time per host write; ratios are to GA on the same trace (the paper's seconds come from an undescribed clock)."
        );
        o += &r.markdown();
        o += &crate::experiment::shape_section(
            Shape {
                title: "the paper's shape, spec 03",
                group: Some("trace"),
            },
            &r.checks(),
            r.runs.len(),
            r.wall_s,
        );
        o
    }

    /// Top: first bad and failure time over GA's, per algorithm, for the first trace.
    /// Bottom: erase counts of every block at failure, sorted (GA, DP, BET, Adaptive,
    /// PET-TH90, EPET-TH90).
    fn plot(r: &WlReport, svg: &mut String) -> PlotResult {
        use crate::plot::{side_legend, Mark, COLORS};
        use plotters::prelude::*;
        let root = SVGBackend::with_string(svg, (1350, 1000)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, bottom) = root.split_vertically(500);
        let (top, top_legend) = top.split_horizontally(1180);
        let (bottom, bottom_legend) = bottom.split_horizontally(1180);
        let Some(trace) = r.runs.first().map(|x| x.trace) else {
            root.present()?;
            return Ok(());
        };
        let rows: Vec<&WlRun> = r.runs.iter().filter(|x| x.trace == trace).collect();
        let ratios: Vec<(f64, f64)> = rows
            .iter()
            .map(|x| {
                let q = r.ratios(x);
                (q[0], q[1])
            })
            .collect();
        let y_hi = ratios
            .iter()
            .flat_map(|p| [p.0, p.1])
            .filter(|v| v.is_finite())
            .fold(1.0, f64::max)
            * 1.15;
        let n = rows.len();
        let mut c = ChartBuilder::on(&top)
            .caption(
                format!("trace {trace}: first bad block and failure time, × GA"),
                ("sans-serif", 20),
            )
            .margin(10)
            .x_label_area_size(60)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n as f64, 0f64..y_hi)?;
        c.configure_mesh()
            .x_labels(0)
            .y_desc("× GA")
            .disable_x_mesh()
            .draw()?;
        // Each group's name above its bars (tick labels cannot be centred on groups).
        for (i, (x, &(fb, fail))) in rows.iter().zip(&ratios).enumerate() {
            let top = [fb, fail]
                .into_iter()
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max);
            c.draw_series([Text::new(
                x.algorithm.clone(),
                (i as f64 + 0.1, top + 0.03 * y_hi),
                ("sans-serif", 13),
            )])?;
        }
        for (i, &(fb, fail)) in ratios.iter().enumerate() {
            let x = i as f64;
            let bar = |lo: f64, hi: f64, v: f64, color: RGBColor| {
                Rectangle::new([(x + lo, 0.0), (x + hi, v)], color.filled())
            };
            if fb.is_finite() {
                c.draw_series([bar(0.1, 0.45, fb, COLORS[2])])?;
            }
            if fail.is_finite() {
                c.draw_series([bar(0.5, 0.85, fail, COLORS[1])])?;
            }
        }
        side_legend(
            &top_legend,
            60,
            &[
                ("first bad block".into(), COLORS[2], Mark::Bar),
                ("failure".into(), COLORS[1], Mark::Bar),
            ],
        )?;

        let shown = ["GA", "DP", "BET", "Adaptive", "PET-TH90", "EPET-TH90"];
        let curves: Vec<(&str, Vec<u32>)> = shown
            .iter()
            .filter_map(|name| {
                let x = rows.iter().find(|x| x.algorithm == *name)?;
                let mut e = x.erase_counts.clone();
                e.sort_unstable();
                Some((*name, e))
            })
            .collect();
        let blocks = curves.iter().map(|c| c.1.len()).max().unwrap_or(1).max(1);
        let e_hi = curves
            .iter()
            .flat_map(|c| c.1.iter().copied())
            .max()
            .unwrap_or(1)
            .max(1) as f64
            * 1.05;
        let mut c = ChartBuilder::on(&bottom)
            .caption(
                format!("trace {trace}: erase count of every block at failure (sorted)"),
                ("sans-serif", 20),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..blocks as f64, 0f64..e_hi)?;
        c.configure_mesh()
            .x_desc("blocks, fewest erases first")
            .y_desc("erase count")
            .draw()?;
        let mut entries = Vec::new();
        for (k, (name, e)) in curves.iter().enumerate() {
            let color = COLORS[k % COLORS.len()];
            let pts: Vec<(f64, f64)> = e
                .iter()
                .enumerate()
                .map(|(i, &v)| (i as f64, v as f64))
                .collect();
            c.draw_series(LineSeries::new(pts, color.stroke_width(2)))?;
            entries.push((name.to_string(), color, Mark::Line));
        }
        side_legend(&bottom_legend, 60, &entries)?;
        root.present()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(algorithm: &str, first_bad_s: f64) -> WlRun {
        WlRun {
            algorithm: algorithm.into(),
            th: None,
            trace: 1,
            allocation: "fifo",
            first_bad_s,
            first_bad_host_writes: 1,
            failure_s: first_bad_s,
            failure_host_writes: 1,
            gap_pct: 0.0,
            page_migrations: 0,
            wl_page_migrations: 0,
            erase_stddev: 1.0,
            avg_response_ns: 1.0,
            waf: 1.0,
            wall_s: 0.0,
            erase_counts: Vec::new(),
            audit_warnings: Vec::new(),
        }
    }

    /// Every check of the shape is decided by the runs: one change makes it hold, another
    /// makes it fail.
    #[test]
    fn every_shape_check_can_hold_and_fail() {
        let mut runs = Vec::new();
        for (a, fb, moved, wl) in [
            ("GA", 100.0, 100, 0),
            ("DP", 100.0, 100, 0),
            ("BET", 150.0, 10_000, 0),
            ("PET-TH90", 300.0, 100, 0),
            ("PET-TH95", 280.0, 100, 0),
            ("PET-TH97", 200.0, 100, 0),
            ("EPET-TH90", 400.0, 1000, 500),
            ("EPET-TH95", 395.0, 900, 400),
            ("EPET-TH97", 390.0, 800, 300),
            ("EPET-TH98", 385.0, 700, 200),
            ("EPET-TH99", 380.0, 600, 100),
        ] {
            let mut r = run(a, fb);
            (r.page_migrations, r.wl_page_migrations) = (moved, wl);
            r.gap_pct = 0.5;
            if a == "BET" {
                r.erase_stddev = 0.5;
            }
            runs.push(r);
        }
        let base = WlReport {
            endurance: 1000,
            blocks: 64,
            runs,
            wall_s: 0.0,
        };
        type Change = Box<dyn Fn(&mut WlReport)>;
        fn at<'a>(r: &'a mut WlReport, a: &str) -> &'a mut WlRun {
            r.runs.iter_mut().find(|x| x.algorithm == a).unwrap()
        }
        let cases: Vec<(&str, Change)> = vec![
            (
                "EPET-TH90 first bad and lifetime",
                Box::new(|r| at(r, "EPET-TH90").failure_s = 200.0),
            ),
            (
                "EPET > PET first bad",
                Box::new(|r| at(r, "PET-TH95").first_bad_s = 500.0),
            ),
            (
                "BET has the most page migrations",
                Box::new(|r| at(r, "EPET-TH95").page_migrations = 5000),
            ),
            (
                "BET has the lowest erase-count stddev",
                Box::new(|r| at(r, "DP").erase_stddev = 0.1),
            ),
            (
                "EPET's wear-leveling migrations fall",
                Box::new(|r| at(r, "EPET-TH97").wl_page_migrations = 450),
            ),
            (
                "EPET first bad falls slowly",
                Box::new(|r| at(r, "EPET-TH99").first_bad_s = 200.0),
            ),
            (
                "PET first bad more TH-sensitive",
                Box::new(|r| at(r, "PET-TH97").first_bad_s = 299.0),
            ),
            (
                "EPET gap <= 1 %",
                Box::new(|r| at(r, "EPET-TH98").gap_pct = 2.0),
            ),
            ("DP ≈ GA", Box::new(|r| at(r, "DP").first_bad_s = 150.0)),
        ];
        assert_eq!(cases.len(), base.checks().len(), "every check has its case");
        let holds = |r: &WlReport, check: &str| {
            let shape = r.checks();
            shape
                .iter()
                .find(|c| c.claim.starts_with(check))
                .unwrap_or_else(|| panic!("{check}: {shape:?}"))
                .holds
        };
        for (check, bad) in &cases {
            assert_eq!(holds(&base, check), Some(true), "{check}");
            let mut r = base.clone();
            bad(&mut r);
            assert_eq!(holds(&r, check), Some(false), "{check}");
        }
    }

    /// A change is printed with one sign: EPET's first bad block coming later at TH97
    /// is "+1.7 %" (it was "--1.7 %").
    #[test]
    fn th_sensitivity_prints_signed_changes() {
        let r = WlReport {
            endurance: 1000,
            blocks: 64,
            runs: vec![
                run("PET-TH90", 1000.0),
                run("PET-TH97", 900.0),
                run("EPET-TH90", 1000.0),
                run("EPET-TH97", 1017.0),
            ],
            wall_s: 0.0,
        };
        let shape = r.checks();
        let c = shape
            .iter()
            .find(|c| c.claim.starts_with("PET first bad more TH-sensitive"))
            .unwrap();
        assert_eq!(c.detail, "PET -10.0 %, EPET +1.7 %");
        assert_eq!(c.holds, Some(true));
        assert_eq!(signed_percent(-0.04), "0.0 %");
        assert_eq!(signed_percent(2.0), "+2.0 %");
    }
}
