//! Spec 01, the SSR paper's experiment (`ssdlab reproduce ssr`): read and write tail
//! latency of the erase-suspend policies `none`, `ies`, `des`, `ssr-static` and
//! `ssr-dynamic` on the Table-1 device, for the 4 KiB random 70/30 QD16 job (`fio`) and
//! the TPC-C-like OLTP model (`tpcc`).
//!
//! The device is preconditioned once (functional mode: the whole device including OP is
//! written, sequentially then one capacity of random 4 KiB overwrites) and every run starts
//! from a clone of that state, so the policies see the same device. Runs are independent
//! and go in parallel on the caller's rayon pool (each holds its own FTL copy).

use crate::{ExperimentError, Result};
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::config::SuspendConfig;
use ssdlab_core::stats::{Latency, LatencySummary, SuspendSummary};
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::synthetic::{AddressPattern, SyntheticConfig};
use ssdlab_workload::tpcc::TpccConfig;
use ssdlab_workload::WorkloadConfig;
use std::time::Instant;

/// The Table-1 preset.
pub const TABLE1_TOML: &str = include_str!("../../../configs/ssr-table1.toml");

/// Samples wanted beyond the p99.9999 point of reads (10 / 10^-6 = 10^7 reads per run).
pub const TAIL_SAMPLES: f64 = 10.0;

/// The two workloads of the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SsrWorkload {
    /// 4 KiB random, 70 % reads, queue depth 16.
    Fio,
    /// TPC-C-like OLTP (`ssdlab_workload::tpcc`), queue depth 16.
    Tpcc,
}

impl SsrWorkload {
    pub const ALL: [SsrWorkload; 2] = [SsrWorkload::Fio, SsrWorkload::Tpcc];
    pub fn name(self) -> &'static str {
        match self {
            SsrWorkload::Fio => "fio",
            SsrWorkload::Tpcc => "tpcc",
        }
    }
    /// Share of the workload's requests that are reads.
    pub fn read_share(self) -> f64 {
        match self {
            SsrWorkload::Fio => 0.7,
            SsrWorkload::Tpcc => {
                let t = TpccConfig::default();
                let d = t.data_ios_per_transaction as f64;
                // Per transaction: d data I/Os, one log write, 1/group flushes.
                t.read_percent / 100.0 * d / (d + 1.0 + 1.0 / t.group_commit_transactions as f64)
            }
        }
    }
}

/// Parameters of the experiment.
#[derive(Clone, Debug)]
pub struct SsrParams {
    /// The device and scheduler settings (Table 1, possibly scaled); `erase_suspend` and the
    /// workload are set per run.
    pub base: Config,
    /// The erase-suspend policies with their parameters (default: every registered policy
    /// with its defaults: `ssr-static` N = 10, `ssr-dynamic` 30 then 10 from 1,000 P/E).
    /// The policy `base` names (e.g. `--set 'scheduler.erase_suspend={ policy =
    /// "ssr-static", points_per_loop = 5 }'`) runs with the base's parameters instead
    /// ([`SsrParams::policy_config`]).
    pub policies: Vec<SuspendConfig>,
    pub workloads: Vec<SsrWorkload>,
    /// Requests per run, per workload (in `workloads` order).
    pub requests: Vec<u64>,
    /// Record every erase (for the execution-time check; memory grows with the run).
    pub trace_erases: bool,
}

impl SsrParams {
    /// The paper's experiment; `scale` > 1 shrinks the device by `scale` (chips per channel
    /// first, then pages per block) and divides the requests per run by `scale`.
    pub fn paper(scale: u32) -> Result<SsrParams> {
        if scale == 0 {
            return Err(ExperimentError::invalid("scale", "must be >= 1"));
        }
        let mut base = Config::from_toml_str(TABLE1_TOML, "configs/ssr-table1.toml")?;
        // Shrink the chips per channel first (each die keeps Table 1's load and GC
        // dynamics), then the pages per block; blocks per plane stay (the 7 % OP needs them).
        let g = &mut base.device.geometry;
        let chips = (g.chips_per_channel / scale).max(1);
        let rest = scale as f64 / (g.chips_per_channel / chips) as f64;
        g.chips_per_channel = chips;
        g.pages_per_block = ((g.pages_per_block as f64 / rest) as u32).max(16);
        base.validate()?;
        let workloads = SsrWorkload::ALL.to_vec();
        let requests = workloads
            .iter()
            // 2 % margin: the read share is a mean; the run must reach the sample target.
            .map(|w| {
                ((1.02 * TAIL_SAMPLES / 1e-6 / w.read_share()).ceil() as u64).div_ceil(scale as u64)
            })
            .collect();
        Ok(SsrParams {
            base,
            policies: SuspendConfig::NAMES
                .iter()
                .filter_map(|n| SuspendConfig::by_name(n))
                .collect(),
            workloads,
            requests,
            trace_erases: false,
        })
    }

    /// The erase-suspend table `policy` runs with: the base's when it names the same
    /// policy, else `policy` itself.
    pub fn policy_config(&self, policy: &SuspendConfig) -> SuspendConfig {
        let base = &self.base.scheduler.erase_suspend;
        if base.name() == policy.name() {
            base.clone()
        } else {
            policy.clone()
        }
    }

    /// The config of one run.
    pub fn run_config(
        &self,
        policy: &SuspendConfig,
        workload: SsrWorkload,
        requests: u64,
    ) -> Config {
        let mut c = self.base.clone();
        c.scheduler.erase_suspend = self.policy_config(policy);
        c.precondition.enabled = false;
        c.workload = match workload {
            SsrWorkload::Fio => WorkloadConfig::Synthetic(SyntheticConfig {
                read_percent: 70.0,
                block_size_bytes: 4096,
                queue_depth: 16,
                pattern: AddressPattern::Uniform,
                requests,
                ..Default::default()
            }),
            SsrWorkload::Tpcc => WorkloadConfig::Tpcc(TpccConfig {
                requests,
                queue_depth: 16,
                ..Default::default()
            }),
        };
        c
    }
}

/// One policy on one workload.
#[derive(Clone, Debug, Serialize)]
pub struct SsrRun {
    pub policy: &'static str,
    pub workload: &'static str,
    pub read: LatencySummary,
    pub write: LatencySummary,
    pub suspend: SuspendSummary,
    pub requests: u64,
    pub sim_time_ns: u64,
    pub waf: f64,
    pub wall_s: f64,
    /// Samples beyond the read / write p99.9999 point (count × 10^-6).
    pub read_samples_beyond_p99_9999: f64,
    pub write_samples_beyond_p99_9999: f64,
    /// Erase records when `trace_erases` was on.
    #[serde(skip)]
    pub erases: Vec<ssdlab_core::stats::EraseRecord>,
    /// CCDF of read and write latency: (latency_ns, share of requests slower).
    #[serde(skip)]
    pub read_ccdf: Vec<(u64, f64)>,
    #[serde(skip)]
    pub write_ccdf: Vec<(u64, f64)>,
}

/// The whole experiment.
#[derive(Clone, Debug, Serialize)]
pub struct SsrReport {
    pub scale_note: String,
    pub precondition_wall_s: f64,
    /// P/E cycles of the blocks when every run starts (SSR(d)'s N depends on them).
    pub start_wear: ssdlab_core::stats::WearSummary,
    pub runs_wall_s: f64,
    pub runs: Vec<SsrRun>,
}

/// One row of `ssr.csv`.
#[derive(Clone, Debug, Serialize)]
pub struct SsrRow {
    pub policy: &'static str,
    pub workload: &'static str,
    pub op: &'static str,
    pub p99_ns: u64,
    pub p99_9_ns: u64,
    pub p99_99_ns: u64,
    pub p99_999_ns: u64,
    pub p99_9999_ns: u64,
    pub max_ns: u64,
    pub suspensions: u64,
    pub safe_limit_violations: u64,
}

impl SsrReport {
    /// Rows in run order, read then write.
    pub fn rows(&self) -> Vec<SsrRow> {
        let mut out = Vec::new();
        for r in &self.runs {
            for (op, l) in [("read", &r.read), ("write", &r.write)] {
                out.push(SsrRow {
                    policy: r.policy,
                    workload: r.workload,
                    op,
                    p99_ns: l.p99,
                    p99_9_ns: l.p99_9,
                    p99_99_ns: l.p99_99,
                    p99_999_ns: l.p99_999,
                    p99_9999_ns: l.p99_9999,
                    max_ns: l.max,
                    suspensions: r.suspend.erase_suspensions + r.suspend.program_suspensions,
                    safe_limit_violations: r.suspend.erases_exceeding_safe_limit,
                });
            }
        }
        out
    }

    /// The run of `policy` on `workload`.
    pub fn run(&self, policy: &str, workload: SsrWorkload) -> Option<&SsrRun> {
        self.runs
            .iter()
            .find(|r| r.policy == policy && r.workload == workload.name())
    }

    /// `ssr.csv`.
    pub fn csv(&self) -> String {
        let mut s = String::from("policy,workload,op,p99_ns,p99_9_ns,p99_99_ns,p99_999_ns,p99_9999_ns,max_ns,suspensions,safe_limit_violations\n");
        for r in self.rows() {
            s += &format!(
                "{},{},{},{},{},{},{},{},{},{},{}\n",
                r.policy,
                r.workload,
                r.op,
                r.p99_ns,
                r.p99_9_ns,
                r.p99_99_ns,
                r.p99_999_ns,
                r.p99_9999_ns,
                r.max_ns,
                r.suspensions,
                r.safe_limit_violations
            );
        }
        s
    }

    /// The markdown table (latencies in µs) with the suspension statistics.
    pub fn markdown(&self) -> String {
        let us = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
        let mut s = String::new();
        s += "| policy | workload | op | p99 µs | p99.9 µs | p99.99 µs | p99.999 µs | p99.9999 µs | max µs | suspensions (erase + program) | safe-limit violations |\n";
        s += "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
        for r in self.rows() {
            s += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.policy,
                r.workload,
                r.op,
                us(r.p99_ns),
                us(r.p99_9_ns),
                us(r.p99_99_ns),
                us(r.p99_999_ns),
                us(r.p99_9999_ns),
                us(r.max_ns),
                r.suspensions,
                r.safe_limit_violations
            );
        }
        s += "\n| policy | workload | requests | reads | erases | max susp./erase | max susp./loop | extra RBER (model) | read delay by erase max µs | erase postponement max ms | WAF | sim s | wall s |\n";
        s += "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
        for r in &self.runs {
            let p = &r.suspend;
            s += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {:.3e} | {} | {:.1} | {:.2} | {:.1} | {:.1} |\n",
                r.policy,
                r.workload,
                r.requests,
                r.read.count,
                p.erases,
                p.max_suspensions_per_erase,
                p.max_suspensions_per_loop,
                p.extra_rber_sum,
                us(p.erase_read_delay_max_ns),
                p.erase_postponement_max_ns as f64 / 1e6,
                r.waf,
                r.sim_time_ns as f64 / 1e9,
                r.wall_s
            );
        }
        let thin: Vec<String> = self
            .runs
            .iter()
            .flat_map(|r| {
                [
                    ("read", r.read_samples_beyond_p99_9999),
                    ("write", r.write_samples_beyond_p99_9999),
                ]
                .into_iter()
                .filter(|(_, n)| *n < TAIL_SAMPLES)
                .map(move |(op, n)| format!("{}/{}/{op}: {n:.1}", r.policy, r.workload))
            })
            .collect();
        if thin.is_empty() {
            s += &format!(
                "\nEvery p99.9999 figure rests on at least {TAIL_SAMPLES} samples beyond it.\n"
            );
        } else {
            s += &format!("\nNote: these p99.9999 figures rest on fewer than {TAIL_SAMPLES} samples beyond them (samples): {}.\n", thin.join(", "));
        }
        s
    }
}

/// CCDF points of a histogram: for each recorded value v, the share of samples above v.
pub fn ccdf(h: &hdr::Histogram<u64>) -> Vec<(u64, f64)> {
    let total = h.len();
    if total == 0 {
        return Vec::new();
    }
    let mut seen = 0u64;
    let mut out = Vec::new();
    for v in h.iter_recorded() {
        seen += v.count_since_last_iteration();
        let above = total - seen;
        out.push((
            h.highest_equivalent(v.value_iterated_to()),
            above as f64 / total as f64,
        ));
    }
    out
}

use ssdlab_core::stats::hdr;

/// Precondition the device once and run every policy on every workload.
/// `on_run` is called after each run (progress).
pub fn run(p: &SsrParams, on_run: &(dyn Fn(&SsrRun) + Sync)) -> Result<SsrReport> {
    if p.requests.len() != p.workloads.len() {
        return Err(ExperimentError::invalid(
            "requests",
            "one request count per workload is needed",
        ));
    }
    let t = Instant::now();
    let mut pre_cfg = p.base.clone();
    pre_cfg.precondition.enabled = true;
    let mut base = Simulation::new(pre_cfg)?;
    base.precondition(&mut NoProgress)?;
    let precondition_wall_s = t.elapsed().as_secs_f64();
    let start_wear = ssdlab_core::stats::WearSummary::of(&base.ftl.blocks);
    let jobs: Vec<(SsrWorkload, u64, &SuspendConfig)> = p
        .workloads
        .iter()
        .zip(&p.requests)
        .flat_map(|(&w, &n)| p.policies.iter().map(move |pol| (w, n, pol)))
        .collect();
    let t = Instant::now();
    let runs = jobs
        .par_iter()
        .map(|&(w, n, pol)| -> Result<SsrRun> {
            let t = Instant::now();
            let mut sim = Simulation::from_state(p.run_config(pol, w, n), &base)?;
            sim.trace_completions = p.trace_erases;
            let r = sim.run_workload(&mut NoProgress)?;
            let lat: Latency = sim.last_latency.take().unwrap_or_default();
            let l = r.latency_ns.ok_or_else(|| {
                ExperimentError::invalid("mode", "the SSR runs need the timed mode")
            })?;
            let run = SsrRun {
                policy: pol.name(),
                workload: w.name(),
                read_samples_beyond_p99_9999: l.read.count as f64 * 1e-6,
                write_samples_beyond_p99_9999: l.write.count as f64 * 1e-6,
                read: l.read,
                write: l.write,
                suspend: r.suspend.unwrap_or_default(),
                requests: r.host.requests,
                sim_time_ns: r.host.sim_time_ns,
                waf: r.waf,
                wall_s: t.elapsed().as_secs_f64(),
                erases: std::mem::take(&mut sim.erase_trace),
                read_ccdf: ccdf(&lat.read),
                write_ccdf: ccdf(&lat.write),
            };
            on_run(&run);
            Ok(run)
        })
        .collect::<Result<Vec<_>>>()?;
    let g = &p.base.device.geometry;
    Ok(SsrReport {
        scale_note: if (g.chips_per_channel, g.pages_per_block) == (4, 768) {
            "as Table 1".into()
        } else {
            format!(
                "scaled down: {} chips/channel and {} pages/block, Table 1 has 4 and 768",
                g.chips_per_channel, g.pages_per_block
            )
        },
        precondition_wall_s,
        start_wear,
        runs_wall_s: t.elapsed().as_secs_f64(),
        runs,
    })
}
