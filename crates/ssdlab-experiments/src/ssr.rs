//! Spec 01, the SSR paper's experiment (`ssdlab reproduce ssr`): read and write tail
//! latency of the erase-suspend policies `none`, `ies`, `des`, `ssr-static` and
//! `ssr-dynamic` on the Table-1 device, for the 4 KiB random 70/30 QD16 job (`fio`) and
//! the TPC-C-like OLTP model (`tpcc`).
//!
//! The device is preconditioned once (functional mode: the whole device including OP is
//! written, sequentially then one capacity of random 4 KiB overwrites) and every run starts
//! from a clone of that state, so the policies see the same device. Runs are independent
//! and go in parallel on the caller's rayon pool (each holds its own FTL copy).

use crate::experiment::{Check, Common, DocTable, Experiment, PlotResult, Say, Shape};
use crate::{ExperimentError, Result};
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::config::SuspendConfig;
use ssdlab_core::stats::{Latency, LatencySummary, SuspendSummary};
use ssdlab_core::{Config, NoProgress, SimError, Simulation};
use ssdlab_workload::synthetic::{self, AddressPattern, SyntheticConfig};
use ssdlab_workload::tpcc::TpccConfig;
use ssdlab_workload::{WorkloadConfig, WorkloadContext};
use std::fmt::Write as _;
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

/// The paper's five erase-suspend policies, by name: a suspend policy registered later
/// does not join the experiment (its checks compare these five).
pub const PAPER_POLICIES: [&str; 5] = ["none", "ies", "des", "ssr-static", "ssr-dynamic"];

/// Parameters of the experiment.
#[derive(Clone, Debug)]
pub struct SsrParams {
    /// The device and scheduler settings (Table 1, possibly scaled); `erase_suspend` and the
    /// workload are set per run.
    pub base: Config,
    /// The erase-suspend policies with their parameters (default: [`PAPER_POLICIES`] with
    /// their defaults: `ssr-static` N = 10, `ssr-dynamic` 30 then 10 from 1,000 P/E).
    /// The policy `base` names (e.g. `--set 'scheduler.erase_suspend={ policy =
    /// "ssr-static", points_per_loop = 5 }'`) runs with the base's parameters instead
    /// ([`SsrParams::policy_config`]).
    pub policies: Vec<SuspendConfig>,
    pub workloads: Vec<SsrWorkload>,
    /// Requests per run, per workload (in `workloads` order).
    pub requests: Vec<u64>,
    /// Record every erase (for the execution-time check; memory grows with the run).
    pub trace_erases: bool,
    /// The read-intensity axis; `None` runs only the two QD 16 workloads.
    pub intensity: Option<IntensityParams>,
}

/// The read-intensity axis: the paper's starvation argument is the read
/// arrival rate against the suspend/resume overhead, which a closed QD 16 loop cannot reach
/// (a die sees a read every ~0.8 ms there). Each point runs, per policy, two flows for a
/// fixed simulated time: **open-loop Poisson 4 KiB random reads** at `ρ` reads per die per
/// suspend + resume cycle (`erase_suspend_penalty_ns + resume_penalty_ns`, Table 1: 100 µs), i.e.
/// a per-die inter-arrival time of cycle / ρ, and a **closed-loop 4 KiB random writer** at
/// a fixed queue depth (it keeps the write buffer full, so a write waits for the flash to
/// take data: its tail is how long GC, and the erase it waits for, hold the buffer up).
#[derive(Clone, Debug, Serialize)]
pub struct IntensityParams {
    /// ρ: reads per die per suspend + resume cycle, one point each (ascending).
    pub reads_per_cycle: Vec<f64>,
    /// Queue depth of the writer.
    pub writer_queue_depth: u32,
    /// Simulated time of each run (both flows stop submitting then; what is in flight
    /// completes).
    pub duration_ns: u64,
    /// `ftl.write_buffer_bytes` of these runs (`None`: the preset's).
    pub write_buffer_bytes: Option<u64>,
    /// Simulated time the writer runs alone before each measured run (0 = none): the
    /// preconditioned device has free blocks above the GC threshold, which the writer
    /// spends at the dies' full rate before every plane reaches it at about the same time;
    /// that onset is one stall the same for every policy (no erase is suspended yet).
    pub warmup_ns: u64,
}

impl IntensityParams {
    /// The default axis: from the QD 16 panel's intensity (ρ ≈ 0.12) to ρ = 2, just below
    /// a die's read ceiling (read + transfer ≈ 45 µs, ρ ≈ 2.2); 10 s of simulated time per
    /// run at every scale (the write tail needs the writes; the scaled devices write less),
    /// a 1 MiB write buffer (a full buffer within the first 0.1 s: the write tail is then
    /// the flash's, where the preset's 64 MiB would take most of a run to fill).
    pub fn paper() -> IntensityParams {
        IntensityParams {
            reads_per_cycle: vec![0.125, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0],
            writer_queue_depth: 8,
            duration_ns: 10_000_000_000,
            write_buffer_bytes: Some(1 << 20),
            warmup_ns: 3_000_000_000,
        }
    }
}

/// Dies of `c`'s device.
pub fn dies(c: &Config) -> u32 {
    let g = &c.device.geometry;
    g.channels * g.chips_per_channel * g.dies_per_chip
}

/// The suspend + resume cycle of `c`'s cell mode (the intensity axis's unit).
pub fn suspend_cycle_ns(c: &Config) -> u64 {
    let (t, mode) = (c.device.timing_model(), c.device.cell_mode);
    t.suspend_penalty_ns(ssdlab_core::flash::OpKind::Erase, mode) + t.resume_penalty_ns(mode)
}

/// Time a die takes to serve one 4 KiB read (array read + channel transfer): the read
/// ceiling of the axis is ρ = cycle / this.
pub fn read_service_ns(c: &Config) -> u64 {
    crate::experiment::FreshTimes::of(c).read_ns + c.device.timing_model().transfer_ns(4096)
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
        let intensity = Some(IntensityParams::paper());
        Ok(SsrParams {
            base,
            policies: PAPER_POLICIES
                .iter()
                .map(|n| {
                    SuspendConfig::by_name(n).ok_or_else(|| {
                        ExperimentError::invalid(
                            "scheduler.erase_suspend",
                            format!("{n}: the paper's policy is not registered"),
                        )
                    })
                })
                .collect::<Result<_>>()?,
            intensity,
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
    /// Warnings of the point's results audit (shares a reader of its figures must know).
    pub audit_warnings: Vec<crate::AuditWarning>,
}

/// One policy at one point of the read-intensity axis.
#[derive(Clone, Debug, Serialize)]
pub struct IntensityRun {
    pub policy: &'static str,
    /// ρ: reads per die per suspend + resume cycle.
    pub reads_per_cycle: f64,
    /// Mean time between two reads at one die (cycle / ρ).
    pub read_interarrival_per_die_ns: u64,
    /// Offered read rate of the whole device (open loop).
    pub offered_read_iops: f64,
    pub read: LatencySummary,
    pub write: LatencySummary,
    /// Host writes completed per second of simulated time (the writer is closed-loop:
    /// what the device let it write).
    pub write_mb_per_s: f64,
    pub read_mb_per_s: f64,
    pub suspend: SuspendSummary,
    pub sim_time_ns: u64,
    pub waf: f64,
    pub wall_s: f64,
    /// Warnings of the point's results audit (shares a reader of its figures must know).
    pub audit_warnings: Vec<crate::AuditWarning>,
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
    /// The read-intensity axis (empty when not run), by ρ then policy.
    pub intensity: Vec<IntensityRun>,
    /// Its parameters and the device's figures that give the axis its meaning.
    pub intensity_params: Option<IntensityParams>,
    pub suspend_cycle_ns: u64,
    pub read_service_ns: u64,
    pub dies: u32,
    /// Most safe points per loop of each SSR policy run, and the most erase loops of the
    /// device (the SSR bound on suspensions per erase is their product).
    pub safe_points_per_loop: Vec<(&'static str, u32)>,
    pub max_erase_loops: u32,
    pub intensity_wall_s: f64,
    /// `ftl.die_affine_group_dies` of the runs (0: writes go around a busy die).
    pub die_affine_group_dies: u32,
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

    /// The intensity run of `policy` at ρ = `rho`.
    pub fn intensity_run(&self, policy: &str, rho: f64) -> Option<&IntensityRun> {
        self.intensity
            .iter()
            .find(|r| r.policy == policy && r.reads_per_cycle == rho)
    }

    /// The axis's points (ρ), ascending, as run.
    pub fn intensity_points(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.intensity.iter().map(|r| r.reads_per_cycle).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    }

    /// ρ of a QD 16 panel run: its reads per die per suspend + resume cycle.
    pub fn qd16_reads_per_cycle(&self, r: &SsrRun) -> f64 {
        if r.sim_time_ns == 0 || self.dies == 0 {
            return 0.0;
        }
        r.read.count as f64 / self.dies as f64 * self.suspend_cycle_ns as f64 / r.sim_time_ns as f64
    }

    /// Whether the paper's erase-postponement order I-ES > SSR(s), SSR(d) > D-ES holds at ρ
    /// (`None` when a policy is missing).
    pub fn postponement_order_at(&self, rho: f64) -> Option<bool> {
        let v = |pol: &str| {
            self.intensity_run(pol, rho)
                .map(|r| r.suspend.erase_postponement_max_ns)
        };
        let (i, s, d, e) = (v("ies")?, v("ssr-static")?, v("ssr-dynamic")?, v("des")?);
        Some(i > s.max(d) && s.min(d) > e)
    }

    /// Whether the paper's write-tail order W_I-ES > W_SSR(s), W_SSR(d) > W_D-ES (p99.99)
    /// holds at ρ.
    pub fn write_order_at(&self, rho: f64) -> Option<bool> {
        let v = |pol: &str| self.intensity_run(pol, rho).map(|r| r.write.p99_99);
        let (i, s, d, e) = (v("ies")?, v("ssr-static")?, v("ssr-dynamic")?, v("des")?);
        Some(i > s.max(d) && s.min(d) > e)
    }

    /// The spec's write-tail order (its corrections: I-ES worst, D-ES best among the
    /// suspending policies, SSR(s) vs SSR(d) free): W_I-ES > W_SSR(s), W_SSR(d) ≥ W_D-ES.
    pub fn write_spec_order_at(&self, rho: f64) -> Option<bool> {
        let v = |pol: &str| self.intensity_run(pol, rho).map(|r| r.write.p99_99);
        let (i, s, d, e) = (v("ies")?, v("ssr-static")?, v("ssr-dynamic")?, v("des")?);
        Some(i > s.max(d) && s.min(d) >= e)
    }

    /// The lowest ρ from which `order` holds at every higher point of the axis (`None`: it
    /// does not hold at the highest point).
    pub fn onset(&self, order: impl Fn(f64) -> Option<bool>) -> Option<f64> {
        let mut onset = None;
        for rho in self.intensity_points().into_iter().rev() {
            if order(rho) == Some(true) {
                onset = Some(rho);
            } else {
                break;
            }
        }
        onset
    }

    /// `ssr-intensity.csv`: one row per point and policy.
    pub fn intensity_csv(&self) -> String {
        let mut s = String::from("reads_per_cycle,read_interarrival_per_die_ns,offered_read_iops,policy,erase_postponement_max_ns,max_suspensions_per_erase,max_suspensions_per_loop,erases,safe_limit_violations,write_count,write_p99_9_ns,write_p99_99_ns,write_max_ns,write_mb_per_s,read_count,read_p99_99_ns,sim_time_ns\n");
        for r in &self.intensity {
            s += &format!(
                "{},{},{:.0},{},{},{},{},{},{},{},{},{},{},{:.3},{},{},{}\n",
                r.reads_per_cycle,
                r.read_interarrival_per_die_ns,
                r.offered_read_iops,
                r.policy,
                r.suspend.erase_postponement_max_ns,
                r.suspend.max_suspensions_per_erase,
                r.suspend.max_suspensions_per_loop,
                r.suspend.erases,
                r.suspend.erases_exceeding_safe_limit,
                r.write.count,
                r.write.p99_9,
                r.write.p99_99,
                r.write.max,
                r.write_mb_per_s,
                r.read.count,
                r.read.p99_99,
                r.sim_time_ns
            );
        }
        s
    }

    /// The intensity axis as markdown: what ρ means here, the table, where the orders
    /// appear, and where the QD 16 panel sits on the axis.
    pub fn intensity_markdown(&self) -> String {
        let Some(ip) = &self.intensity_params else {
            return String::new();
        };
        if self.intensity.is_empty() {
            return String::new();
        }
        let ms = |ns: u64| format!("{:.2}", ns as f64 / 1e6);
        let cycle_us = self.suspend_cycle_ns as f64 / 1e3;
        let mut s = String::from("\n## Read-intensity axis\n\n");
        s += &format!(
            "ρ = reads per die per suspend + resume cycle ({cycle_us:.0} µs here): at ρ ≥ 1 a die gets a read at least as often as one suspension costs, the paper's condition for I-ES to starve erases (its 3.2 GB/s, one 4 KiB read every 1.19 µs, is ρ ≈ 5 per die on its 16 dies). Each run: **open-loop Poisson 4 KiB random reads** at ρ · {} dies / {cycle_us:.0} µs, and a **closed-loop 4 KiB random writer at queue depth {}**, for {:.1} s of simulated time after {:.1} s of the writer alone (warm-up, not measured: the preconditioned device's free blocks above the GC threshold are spent and every plane's GC runs), write buffer {}. A die serves at most one read per {:.0} µs (read + transfer), so ρ ≤ {:.2} is the read ceiling (the device's dies, not the 4 × 800 MB/s channels or a host link, are the limit; the preset has no `[device.host_interface]`).\n\n",
            self.dies,
            ip.writer_queue_depth,
            ip.duration_ns as f64 / 1e9,
            ip.warmup_ns as f64 / 1e9,
            match ip.write_buffer_bytes {
                Some(b) => format!("{} KiB (so a run reaches a full buffer at once; the preset's 64 MiB would take most of the run to fill)", b >> 10),
                None => "as the preset".into(),
            },
            self.read_service_ns as f64 / 1e3,
            self.suspend_cycle_ns as f64 / self.read_service_ns.max(1) as f64,
        );
        s += "| ρ | read inter-arrival per die µs | offered reads kIOPS | policy | erase postponement max ms | max susp./erase | max susp./loop | erases | safe-limit violations | writes | write p99.9 ms | write p99.99 ms | write max ms | host write MB/s | read p99.99 ms |\n";
        s += "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
        for r in &self.intensity {
            let p = &r.suspend;
            s += &format!(
                "| {} | {:.0} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {} |\n",
                r.reads_per_cycle,
                r.read_interarrival_per_die_ns as f64 / 1e3,
                r.offered_read_iops / 1e3,
                r.policy,
                ms(p.erase_postponement_max_ns),
                p.max_suspensions_per_erase,
                p.max_suspensions_per_loop,
                p.erases,
                p.erases_exceeding_safe_limit,
                r.write.count,
                ms(r.write.p99_9),
                ms(r.write.p99_99),
                ms(r.write.max),
                r.write_mb_per_s,
                ms(r.read.p99_99)
            );
        }
        let thin: Vec<String> = self
            .intensity
            .iter()
            .filter(|r| (r.write.count as f64) * 1e-4 < TAIL_SAMPLES)
            .map(|r| {
                format!(
                    "{}@{}: {:.1}",
                    r.policy,
                    r.reads_per_cycle,
                    r.write.count as f64 * 1e-4
                )
            })
            .collect();
        if !thin.is_empty() {
            s += &format!("\nNote: write p99.99 rests on fewer than {TAIL_SAMPLES} samples beyond it in these runs (samples): {}.\n", thin.join(", "));
        }
        let at = |o: Option<f64>| {
            o.map_or("at no point of the axis".to_string(), |x| {
                format!("from ρ = {x} on")
            })
        };
        s += &format!(
            "\nErase postponement order I-ES > SSR(s), SSR(d) > D-ES: {}. Write p99.99 order W_I-ES > W_SSR > W_D-ES (the paper's S4): {}.\n",
            at(self.onset(|x| self.postponement_order_at(x))),
            at(self.onset(|x| self.write_order_at(x)))
        );
        let qd: Vec<String> = self
            .runs
            .iter()
            .filter(|r| r.policy == "ies")
            .map(|r| {
                let rho = self.qd16_reads_per_cycle(r);
                format!(
                    "{} ρ = {rho:.3} (a read every {:.2} ms per die)",
                    r.workload,
                    if rho > 0.0 {
                        self.suspend_cycle_ns as f64 / rho / 1e6
                    } else {
                        f64::INFINITY
                    }
                )
            })
            .collect();
        if !qd.is_empty() {
            s += &format!(
                "\n**Where the QD 16 panel sits:** {}. A closed loop of 16 requests, of which the writes hold slots while they wait for the buffer, keeps only a few reads in flight over {} dies, so an I-ES suspension serves one or two reads and resumes: its erase postponement stays close to SSR(d)'s and no plane's free pool runs dry, so I-ES cannot be the worst writer there. The starvation needs the reads to arrive faster than a suspend/resume cycle, which only the axis above reaches.\n",
                qd.join("; "),
                self.dies
            );
        }
        s
    }

    /// Why the strict S4 order fails on ties (SSR's and D-ES's write p99.99 the same): the
    /// tied figure is a stall every policy shares, the Baseline's too when it ties.
    fn s4_tie_reason(&self, fast: &[f64]) -> String {
        let wp = |pol: &str, x: f64| self.intensity_run(pol, x).map(|r| r.write.p99_99);
        let post = |pol: &str, x: f64| {
            self.intensity_run(pol, x)
                .map_or(0, |r| r.suspend.erase_postponement_max_ns)
        };
        let shared: Vec<String> = fast
            .iter()
            .filter(|&&x| wp("none", x).is_some() && wp("none", x) == wp("des", x))
            .map(|&x| {
                format!(
                    "ρ {x}: {:.2} ms, D-ES postponement ≤ {:.1} ms, SSR(s) ≤ {:.1} ms",
                    wp("none", x).unwrap_or(0) as f64 / 1e6,
                    post("des", x) as f64 / 1e6,
                    post("ssr-static", x) as f64 / 1e6
                )
            })
            .collect();
        let mut s = String::from(". Fails on ties: SSR's and D-ES's p99.99 are the same write");
        if !shared.is_empty() {
            s += &format!(
                ", and the Baseline's (which never suspends) too ({}): the tail is a GC stall every policy shares, longer than an erase plus a guarded policy's postponement less what the write buffer absorbs; only a postponement that outlasts it (I-ES's) shows",
                shared.join("; ")
            );
        }
        if self.die_affine_group_dies == 0 {
            s += " (host pages go to any plane, so a die held by an erase is written around)";
        } else {
            s += " (writes wait for their die: die-affine placement)";
        }
        s
    }

    /// The expected-shape checks, per panel (`intensity`, `QD 16 fio`, `QD 16 tpcc`).
    pub fn checks(&self) -> Vec<Check> {
        let mut out = Vec::new();
        let pts = self.intensity_points();
        let fast: Vec<f64> = pts.iter().copied().filter(|&x| x >= 1.0).collect();
        let grp = "intensity".to_string();
        let post = |pol: &str, x: f64| {
            self.intensity_run(pol, x)
                .map(|r| r.suspend.erase_postponement_max_ns as f64 / 1e6)
        };
        let list = |f: &dyn Fn(f64) -> Option<String>| -> String {
            fast.iter()
                .map(|&x| format!("ρ {x}: {}", f(x).unwrap_or_else(|| "not run".into())))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let all_fast = |f: &dyn Fn(f64) -> Option<bool>| -> Option<bool> {
            if fast.is_empty() {
                return None;
            }
            fast.iter()
                .map(|&x| f(x))
                .collect::<Option<Vec<bool>>>()
                .map(|v| v.iter().all(|b| *b))
        };
        // 1: postponement order wherever reads outpace the cycle.
        let four = |x: f64, get: &dyn Fn(&str, f64) -> Option<f64>, unit: &str| -> Option<String> {
            Some(format!(
                "I-ES {:.2} / SSR(d) {:.2} / SSR(s) {:.2} / D-ES {:.2} {unit}",
                get("ies", x)?,
                get("ssr-dynamic", x)?,
                get("ssr-static", x)?,
                get("des", x)?
            ))
        };
        out.push(Check::new(
            grp.clone(),
            "erase postponement (max): I-ES > SSR(d), SSR(s) > D-ES at every ρ ≥ 1".to_string(),
            all_fast(&|x| self.postponement_order_at(x)),
            format!(
                "{}; order from ρ = {}",
                list(&|x| four(x, &post, "ms")),
                self.onset(|x| self.postponement_order_at(x))
                    .map_or("–".into(), |x| x.to_string())
            ),
        ));
        // 2: I-ES's postponement grows relative to SSR's and D-ES's as ρ rises past 1.
        let ratio = |x: f64, other: &str| Some(post("ies", x)? / post(other, x)?.max(1e-9));
        let rising = |other: &str| -> Option<bool> {
            let v: Option<Vec<f64>> = fast.iter().map(|&x| ratio(x, other)).collect();
            let v = v?;
            (v.len() >= 2).then(|| v.windows(2).all(|w| w[1] > w[0]))
        };
        out.push(Check::new(
            grp.clone(),
            "I-ES / SSR(d) and I-ES / D-ES postponement rise with ρ over ρ ≥ 1 (no bound)"
                .to_string(),
            match (rising("ssr-dynamic"), rising("des")) {
                (Some(a), Some(b)) => Some(a && b),
                _ => None,
            },
            list(&|x| {
                Some(format!(
                    "{:.2}× / {:.2}×",
                    ratio(x, "ssr-dynamic")?,
                    ratio(x, "des")?
                ))
            }),
        ));
        // 3: SSR bounded by its safe points at every ρ; I-ES beyond SSR(d)'s bound at the top.
        let bound_ok = self.safe_points_per_loop.iter().all(|(pol, n)| {
            self.intensity.iter().filter(|r| r.policy == *pol).all(|r| {
                r.suspend.max_suspensions_per_loop <= *n
                    && r.suspend.max_suspensions_per_erase <= n * self.max_erase_loops
                    && r.suspend.erases_exceeding_safe_limit == 0
            })
        });
        let top = pts.last().copied();
        let ies_top = top
            .and_then(|x| self.intensity_run("ies", x))
            .map(|r| r.suspend.max_suspensions_per_erase);
        let max_bound = self
            .safe_points_per_loop
            .iter()
            .map(|e| e.1)
            .max()
            .unwrap_or(0)
            * self.max_erase_loops;
        out.push(Check::new(
            grp.clone(),
            "SSR's suspensions per erase stay within N × loops at every ρ (no safe-limit violation); I-ES's exceed it at the top".to_string(),
            if self.safe_points_per_loop.is_empty() || ies_top.is_none() {
                None
            } else {
                Some(bound_ok && ies_top > Some(max_bound))
            },
            format!(
                "{}; I-ES at ρ {}: {}",
                self.safe_points_per_loop
                    .iter()
                    .map(|(pol, n)| {
                        let m = self.intensity.iter().filter(|r| r.policy == *pol).map(|r| r.suspend.max_suspensions_per_erase).max().unwrap_or(0);
                        format!("{pol} max {m} ≤ {}", n * self.max_erase_loops)
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
                top.map_or("–".into(), |x| x.to_string()),
                ies_top.map_or("not run".into(), |n| n.to_string())
            ),
        ));
        // 4: the paper's S4 on the write tail (strict), then the spec's corrected order.
        let wp = |pol: &str, x: f64| {
            self.intensity_run(pol, x)
                .map(|r| r.write.p99_99 as f64 / 1e6)
        };
        let s4 = all_fast(&|x| self.write_order_at(x));
        let ties = fast.iter().any(|&x| {
            let e = wp("des", x);
            e.is_some() && (wp("ssr-static", x) == e || wp("ssr-dynamic", x) == e)
        });
        out.push(Check::new(
            grp.clone(),
            "write p99.99: I-ES > SSR(d), SSR(s) > D-ES at every ρ ≥ 1 (paper S4, strict)"
                .to_string(),
            s4,
            format!(
                "{}; order from ρ = {}{}",
                list(&|x| four(x, &wp, "ms")),
                self.onset(|x| self.write_order_at(x))
                    .map_or("–".into(), |x| x.to_string()),
                if s4 == Some(false) && ties {
                    self.s4_tie_reason(&fast)
                } else {
                    String::new()
                }
            ),
        ));
        out.push(Check::new(
            grp.clone(),
            "write p99.99: I-ES worst, D-ES best (≤) of the suspending policies at every ρ ≥ 1 (spec 01's corrected order)".to_string(),
            all_fast(&|x| self.write_spec_order_at(x)),
            format!(
                "order from ρ = {}",
                self.onset(|x| self.write_spec_order_at(x))
                    .map_or("–".into(), |x| x.to_string())
            ),
        ));
        // 5: host write throughput: I-ES lowest of the suspending policies.
        let tp = |pol: &str, x: f64| self.intensity_run(pol, x).map(|r| r.write_mb_per_s);
        out.push(Check::new(
            grp.clone(),
            "host write MB/s: I-ES lowest of the suspending policies at every ρ ≥ 1".to_string(),
            all_fast(&|x| {
                let i = tp("ies", x)?;
                Some(
                    ["des", "ssr-static", "ssr-dynamic"]
                        .iter()
                        .all(|p| tp(p, x).is_some_and(|v| v > i)),
                )
            }),
            list(&|x| four(x, &tp, "MB/s")),
        ));
        // 6: the QD 16 panel is in the axis's low-intensity regime: I-ES's postponement
        // over SSR(d)'s there is below the axis's at ρ = 1.
        let at_one = fast.first().and_then(|&x| ratio(x, "ssr-dynamic"));
        for w in SsrWorkload::ALL {
            let (Some(i), Some(d)) = (self.run("ies", w), self.run("ssr-dynamic", w)) else {
                continue;
            };
            let rho = self.qd16_reads_per_cycle(i);
            let q = i.suspend.erase_postponement_max_ns as f64
                / (d.suspend.erase_postponement_max_ns as f64).max(1.0);
            out.push(Check::new(
                format!("QD 16 {}", w.name()),
                "ρ < 1 and I-ES / SSR(d) postponement below the axis's at its first ρ ≥ 1 (why I-ES is not the worst writer there)".to_string(),
                at_one.map(|a| rho < 1.0 && q < a),
                format!(
                    "ρ = {rho:.3}; I-ES / SSR(d) postponement {q:.2}× (QD 16) vs {}",
                    at_one.map_or("–".into(), |a| format!("{a:.2}× (axis, ρ = {})", fast[0]))
                ),
            ));
        }
        out
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
/// `on_intensity` after each run of the read-intensity axis.
pub fn run(
    p: &SsrParams,
    on_run: &(dyn Fn(&SsrRun) + Sync),
    on_intensity: &(dyn Fn(&IntensityRun) + Sync),
) -> Result<SsrReport> {
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
    let start_wear = ssdlab_core::stats::WearSummary::of(base.ftl.media().blocks());
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
            let audit_warnings =
                crate::AuditWarning::of(&r, format!("{} {}", pol.name(), w.name()));
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
                audit_warnings,
            };
            on_run(&run);
            Ok(run)
        })
        .collect::<Result<Vec<_>>>()?;
    let runs_wall_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let intensity = match &p.intensity {
        Some(ip) => run_intensity(p, ip, &base, on_intensity)?,
        None => Vec::new(),
    };
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
        runs_wall_s,
        runs,
        intensity,
        intensity_params: p.intensity.clone(),
        suspend_cycle_ns: suspend_cycle_ns(&p.base),
        read_service_ns: read_service_ns(&p.base),
        dies: dies(&p.base),
        safe_points_per_loop: p
            .policies
            .iter()
            .filter_map(|pol| match p.policy_config(pol) {
                SuspendConfig::SsrStatic(q) => Some((pol.name(), q.points_per_loop)),
                SuspendConfig::SsrDynamic(q) => Some((
                    pol.name(),
                    q.safe_points.iter().map(|e| e.1).max().unwrap_or(0),
                )),
                _ => None,
            })
            .collect(),
        max_erase_loops: {
            let t = p.base.device.timing.get(p.base.device.cell_mode);
            t.erase_loops.iter().map(|e| e.1).max().unwrap_or(0)
        },
        intensity_wall_s: t.elapsed().as_secs_f64(),
        die_affine_group_dies: p.base.ftl.die_affine_group_dies,
    })
}

/// The intensity axis's runs (ρ ascending, policies in `p.policies` order), from clones of
/// the preconditioned `base`.
fn run_intensity(
    p: &SsrParams,
    ip: &IntensityParams,
    base: &Simulation,
    on_run: &(dyn Fn(&IntensityRun) + Sync),
) -> Result<Vec<IntensityRun>> {
    let cycle = suspend_cycle_ns(&p.base);
    if cycle == 0 {
        return Err(ExperimentError::invalid(
            "device.timing.erase_suspend_penalty_ns",
            "the read-intensity axis is in suspend + resume cycles, which are 0 here",
        ));
    }
    if ip.writer_queue_depth == 0 || ip.duration_ns == 0 {
        return Err(ExperimentError::invalid(
            "intensity",
            "the writer's queue depth and the duration must be > 0",
        ));
    }
    if let Some(r) = ip
        .reads_per_cycle
        .iter()
        .find(|r| !(**r > 0.0 && r.is_finite()))
    {
        return Err(ExperimentError::invalid(
            "intensity",
            format!("reads per cycle {r}: must be > 0"),
        ));
    }
    let n_dies = dies(&p.base) as f64;
    let jobs: Vec<(f64, &SuspendConfig)> = ip
        .reads_per_cycle
        .iter()
        .flat_map(|&rho| p.policies.iter().map(move |pol| (rho, pol)))
        .collect();
    jobs.par_iter()
        .map(|&(rho, pol)| -> Result<IntensityRun> {
            let t = Instant::now();
            let offered = n_dies * rho * 1e9 / cycle as f64;
            let mut c = p.base.clone();
            c.scheduler.erase_suspend = p.policy_config(pol);
            c.precondition.enabled = false;
            if let Some(b) = ip.write_buffer_bytes {
                c.ftl.write_buffer_bytes = b;
            }
            let readers = SyntheticConfig {
                read_percent: 100.0,
                block_size_bytes: 4096,
                pattern: AddressPattern::Uniform,
                open_loop_iops: offered,
                requests: 0,
                duration_ns: ip.duration_ns,
                ..Default::default()
            };
            let writer = SyntheticConfig {
                read_percent: 0.0,
                block_size_bytes: 4096,
                pattern: AddressPattern::Uniform,
                queue_depth: ip.writer_queue_depth,
                requests: 0,
                duration_ns: ip.duration_ns,
                ..Default::default()
            };
            c.workload = WorkloadConfig::Synthetic(readers.clone());
            let mut sim = Simulation::from_state(c, base)?;
            let ctx = sim.workload_context();
            if ip.warmup_ns > 0 {
                // The writer alone, on a stream of its own, until GC runs on every plane.
                let warm = SyntheticConfig {
                    duration_ns: ip.warmup_ns,
                    ..writer.clone()
                };
                let wctx = WorkloadContext {
                    seed: ctx.seed ^ 0x7761_726d,
                    ..ctx.clone()
                };
                let w = synthetic::build(&warm, &wctx).map_err(SimError::from)?;
                sim.run_workload_with(w, &mut NoProgress)?;
            }
            let mut w = synthetic::build(&readers, &ctx).map_err(SimError::from)?;
            // The writer's own random stream (the same seed would replay the readers' offsets).
            let wctx = WorkloadContext {
                seed: ctx.seed ^ 0x5772_6974_6572,
                ..ctx
            };
            let mut wf = synthetic::build(&writer, &wctx).map_err(SimError::from)?;
            wf.flows[0].name = "writer".into();
            w.flows[0].name = "readers".into();
            w.flows.append(&mut wf.flows);
            let r = sim.run_workload_with(w, &mut NoProgress)?;
            let audit_warnings = crate::AuditWarning::of(&r, format!("rho {rho} {}", pol.name()));
            let l = r.latency_ns.ok_or_else(|| {
                ExperimentError::invalid("mode", "the SSR runs need the timed mode")
            })?;
            let run = IntensityRun {
                policy: pol.name(),
                reads_per_cycle: rho,
                read_interarrival_per_die_ns: (cycle as f64 / rho).round() as u64,
                offered_read_iops: offered,
                read: l.read,
                write: l.write,
                write_mb_per_s: r.host.write_mb_per_s,
                read_mb_per_s: r.host.read_mb_per_s,
                suspend: r.suspend.unwrap_or_default(),
                sim_time_ns: r.host.sim_time_ns,
                waf: r.waf,
                wall_s: t.elapsed().as_secs_f64(),
                audit_warnings,
            };
            on_run(&run);
            Ok(run)
        })
        .collect()
}

/// `ssdlab reproduce ssr`.
pub struct Ssr;

/// `reproduce ssr`'s own flags.
#[derive(clap::Args)]
pub struct SsrArgs {
    /// Shrink the Table-1 device by this factor (chips per channel first, then pages per
    /// block) and divide the requests per run by it (1 = the paper's 256 GiB device and
    /// ~10^7 reads per run).
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// Requests per run (overrides the default derived from the p99.9999 sample target).
    #[arg(long)]
    requests: Option<u64>,
    /// Points of the read-intensity axis: reads per die per suspend + resume cycle (ρ),
    /// comma-separated, ascending (default 0.125,0.25,0.5,0.75,1,1.5,2).
    #[arg(long, value_delimiter = ',', conflicts_with = "no_intensity")]
    intensity: Option<Vec<f64>>,
    /// Simulated milliseconds per run of the read-intensity axis (default 10000).
    #[arg(long)]
    intensity_duration_ms: Option<u64>,
    /// Simulated milliseconds the writer runs alone before each run of the read-intensity
    /// axis (default 3000; 0 = none).
    #[arg(long)]
    intensity_warmup_ms: Option<u64>,
    /// Skip the read-intensity axis (only the two QD 16 workloads).
    #[arg(long)]
    no_intensity: bool,
}

impl Experiment for Ssr {
    const NAME: &'static str = "ssr";
    const ABOUT: &'static str = "Spec 01: erase suspend/resume policies (none, ies, des, ssr-static, ssr-dynamic) on the preconditioned Table-1 device, 4 KiB random 70/30 and TPC-C-like, tail latency";
    const EXTRA_FILES: &'static [&'static str] = &["ssr-intensity.csv", "ssr-intensity.svg"];
    const DOC_TABLES: &'static [DocTable] = &[
        DocTable {
            name: "ssr",
            doc: "docs/erase-suspend.md",
            fast: false,
            from: "| policy | workload | op |",
            to: Some("## Read-intensity axis"),
        },
        DocTable {
            name: "ssr-intensity",
            doc: "docs/erase-suspend.md",
            fast: false,
            from: "| ρ |",
            to: None,
        },
    ];
    const REQUESTS_FLAG: Option<&'static str> = Some("--requests");
    // `ssr.csv` only: the read-intensity axis has its own CSV.
    const TABLE_ONLY_ARGS: &'static [&'static str] = &["--no-intensity"];
    type Args = SsrArgs;
    type Params = SsrParams;
    type Report = SsrReport;

    fn params(a: &SsrArgs, common: &Common) -> Result<SsrParams> {
        let mut p = SsrParams::paper(a.scale)?;
        p.base = crate::run::with_overrides(&p.base, &common.sets, "configs/ssr-table1.toml")?;
        if let Some(s) = common.seed {
            p.base.seed = s;
        }
        if let Some(n) = a.requests {
            if n == 0 {
                return Err(ExperimentError::invalid("--requests", "must be > 0"));
            }
            p.requests = vec![n; p.workloads.len()];
        }
        if a.no_intensity {
            p.intensity = None;
        }
        if let Some(ip) = p.intensity.as_mut() {
            if let Some(v) = &a.intensity {
                if v.is_empty() || v.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
                    return Err(ExperimentError::invalid(
                        "--intensity",
                        "every point must be a number > 0 (reads per die per suspend + resume cycle)",
                    ));
                }
                if v.windows(2).any(|w| w[1] <= w[0]) {
                    return Err(ExperimentError::invalid(
                        "--intensity",
                        "points must be ascending without repeats",
                    ));
                }
                ip.reads_per_cycle = v.clone();
            }
            if let Some(ms) = a.intensity_duration_ms {
                if ms == 0 {
                    return Err(ExperimentError::invalid(
                        "--intensity-duration-ms",
                        "must be > 0",
                    ));
                }
                ip.duration_ns = ms * 1_000_000;
            }
            if let Some(ms) = a.intensity_warmup_ms {
                ip.warmup_ns = ms * 1_000_000;
            }
            if suspend_cycle_ns(&p.base) == 0 {
                return Err(ExperimentError::invalid(
                    "the read-intensity axis counts reads per suspend + resume cycle, which is 0 here (device.timing.*.erase_suspend_penalty_ns + resume_penalty_ns)",
                    "pass --no-intensity",
                ));
            }
        }
        Ok(p)
    }

    fn banner(p: &SsrParams, threads: usize) -> String {
        format!(
            "reproduce ssr: preconditioning the Table-1 device ({} chips/channel, {} pages/block), then {} policies x {} workloads ({} requests per run) on {threads} threads ...",
            p.base.device.geometry.chips_per_channel,
            p.base.device.geometry.pages_per_block,
            p.policies.len(),
            p.workloads.len(),
            p.requests.iter().map(|n| n.to_string()).collect::<Vec<_>>().join("/"),
        )
    }

    fn run(p: &SsrParams, say: &dyn Say) -> Result<SsrReport> {
        let on_run = |r: &SsrRun| {
            say.progress(&format!(
                "  {:<11} {:<4}: read p99.99 {:>9.1} us, write p99.99 {:>9.1} us, {} suspensions, {:.1} s wall",
                r.policy,
                r.workload,
                r.read.p99_99 as f64 / 1e3,
                r.write.p99_99 as f64 / 1e3,
                r.suspend.erase_suspensions,
                r.wall_s
            ));
            say.audit(&r.audit_warnings);
        };
        let on_intensity = |r: &IntensityRun| {
            say.progress(&format!(
                "  rho {:<5} {:<11}: erase postponement max {:>8.1} ms, write p99.99 {:>9.1} ms, {:.2} MB/s written, {:.1} s wall",
                r.reads_per_cycle,
                r.policy,
                r.suspend.erase_postponement_max_ns as f64 / 1e6,
                r.write.p99_99 as f64 / 1e6,
                r.write_mb_per_s,
                r.wall_s
            ));
            say.audit(&r.audit_warnings);
        };
        run(p, &on_run, &on_intensity)
    }

    fn csv(r: &SsrReport) -> String {
        r.csv()
    }

    fn checks(r: &SsrReport) -> Vec<Check> {
        r.checks()
    }

    fn markdown(r: &SsrReport, p: &SsrParams, total_wall_s: f64) -> String {
        let c = &p.base;
        let g = &c.device.geometry;
        let t = crate::experiment::FreshTimes::of(c);
        let s = &c.scheduler;
        // The SSR policies' own parameters (`scheduler.erase_suspend` tables).
        let (mut ssr_n, mut ssr_table) = (0, Vec::new());
        for pol in &p.policies {
            match p.policy_config(pol) {
                SuspendConfig::SsrStatic(q) => ssr_n = q.points_per_loop,
                SuspendConfig::SsrDynamic(q) => ssr_table = q.safe_points,
                _ => {}
            }
        }
        let mut o = String::new();
        let _ = writeln!(o, "# Erase suspend/resume policies (spec 01, SSR paper)\n");
        let _ = writeln!(
            o,
            "* Device: {} channels x {} chips x {} die, {} planes/die, {} blocks/plane, {} pages/block ({}), {} B pages, OP {:.0} %, page mapping, greedy preemptible GC (urgent below {} free blocks per plane), seed {}.",
            g.channels, g.chips_per_channel, g.dies_per_chip, g.planes_per_die, g.blocks_per_plane, g.pages_per_block, r.scale_note, g.page_size_bytes,
            c.device.over_provisioning_ratio * 100.0, c.ftl.gc_hard_free_blocks, c.seed
        );
        let _ = writeln!(
            o,
            "{}",
            crate::experiment::gc_planes_line(
                c.scheduler.multi_plane_gc,
                "the paper does not say; a real controller runs GC multi-plane (the default), and the policies differ in how erases are suspended, not in how GC is batched."
            )
        );
        let _ = writeln!(
            o,
            "* Timing: read {} us, program {} us, erase {} loops x {} ms, erase-suspend penalty {} us, resume penalty {} us.",
            t.read_ns as f64 / 1e3,
            t.program_ns as f64 / 1e3,
            t.erase_loops,
            t.erase_loop_ns as f64 / 1e6,
            t.erase_suspend_penalty_ns as f64 / 1e3,
            t.resume_penalty_ns as f64 / 1e3
        );
        let _ = writeln!(
            o,
            "* Policies: none, ies, des, ssr-static (N = {}), ssr-dynamic (N by P/E: {:?}); safe limit N_safe(PE) {:?}; extra RBER = {:e} x excess^{}.",
            ssr_n, ssr_table, s.safe_suspensions_per_loop, s.extra_rber_per_excess_suspension, s.extra_rber_exponent
        );
        let _ = writeln!(
            o,
            "* Workloads: fio = 4 KiB random 70 % reads QD 16; tpcc = TPC-C-like OLTP model (8 KiB pages, 65 % reads, sequential log writes, group-commit flushes), QD 16. Requests per run: {}.",
            p.workloads.iter().zip(&p.requests).map(|(w, n)| format!("{} {}", w.name(), n)).collect::<Vec<_>>().join(", ")
        );
        let _ = writeln!(
            o,
            "* Program suspend: {}; write buffer {} MiB, power-loss protected: {} (a flush {}).",
            if s.program_suspend {
                "on (reads wait at most one ISPP loop for a program)"
            } else {
                "off"
            },
            c.ftl.write_buffer_bytes >> 20,
            if c.ftl.power_loss_protection {
                "yes"
            } else {
                "no"
            },
            if c.ftl.power_loss_protection {
                "completes at once"
            } else {
                "waits until the data before it is programmed"
            }
        );
        let _ = writeln!(
            o,
            "* Host writes: {}.",
            match c.ftl.die_affine_group_dies {
                0 => "to any plane that can take them (a die held by an erase is written around)".to_string(),
                1 => "die-affine (`ftl.die_affine_group_dies = 1`): consecutive pages take the dies in stripe order and a page waits for its die, so a die held by an erase, suspended or not, delays the writes assigned to it (a superpage-striping FTL's write; the mechanism of the paper's write-tail order)".to_string(),
                k => format!("die-affine in groups of {k} dies (`ftl.die_affine_group_dies`)"),
            }
        );
        let w = &r.start_wear;
        let n_at = |pe: u32| ssr_table.iter().rfind(|e| e.0 <= pe).map_or(0, |e| e.1);
        let _ = writeln!(o, "* Preconditioned once (functional: sequential fill + 1 capacity of random 4 KiB overwrites, the whole device including OP) in {:.1} s; every run starts from that state: P/E cycles per block min {}, mean {:.2}, max {}, so SSR(d) starts with N = {}..{} safe points per loop.\n", r.precondition_wall_s, w.erase_count_min, w.erase_count_mean, w.erase_count_max, n_at(w.erase_count_max), n_at(w.erase_count_min));
        o += &r.markdown();
        o += &r.intensity_markdown();
        o += &crate::experiment::shape_section(
            Shape {
                title: "the paper's shape, spec 01",
                group: Some("panel"),
            },
            &r.checks(),
            r.runs.len() + r.intensity.len(),
            r.runs_wall_s + r.intensity_wall_s,
        );
        let _ = writeln!(
            o,
            "\nQD 16 runs: {:.1} s wall; intensity axis: {:.1} s wall; whole command {:.1} s.",
            r.runs_wall_s, r.intensity_wall_s, total_wall_s
        );
        o
    }

    /// 2 x 2 panels (workload x read/write): CCDF of latency, both axes log scale.
    fn plot(r: &SsrReport, svg: &mut String) -> PlotResult {
        use plotters::prelude::*;
        let root = SVGBackend::with_string(svg, (1200, 900)).into_drawing_area();
        root.fill(&WHITE)?;
        let panels = root.split_evenly((2, 2));
        for (i, area) in panels.iter().enumerate() {
            let w = SsrWorkload::ALL[i / 2];
            let op = if i % 2 == 0 { "read" } else { "write" };
            let runs: Vec<_> = r.runs.iter().filter(|x| x.workload == w.name()).collect();
            let note = |why: &str| -> PlotResult {
                let (w_px, h_px) = area.dim_in_pixel();
                area.draw(&Text::new(
                    format!("{} {op}: {why}", w.name()),
                    (w_px as i32 / 4, h_px as i32 / 2),
                    ("sans-serif", 18),
                ))?;
                Ok(())
            };
            if runs.is_empty() {
                note("not run")?;
                continue;
            }
            let pts = |x: &SsrRun| -> Vec<(f64, f64)> {
                let c = if op == "read" {
                    &x.read_ccdf
                } else {
                    &x.write_ccdf
                };
                c.iter()
                    .filter(|(_, p)| *p > 0.0)
                    .map(|&(v, p)| (v.max(1) as f64 / 1e3, p))
                    .collect()
            };
            let series: Vec<(&str, Vec<(f64, f64)>)> =
                runs.iter().map(|x| (x.policy, pts(x))).collect();
            let caption = format!("{} {op} latency CCDF", w.name());
            if !crate::plot::ccdf_panel(area, &caption, &series)? {
                note("every latency equal (no tail to plot)")?;
            }
        }
        root.present()?;
        Ok(())
    }

    fn extra_files(r: &SsrReport) -> Result<Vec<(&'static str, String)>> {
        if r.intensity.is_empty() {
            return Ok(Vec::new());
        }
        let mut svg = String::new();
        plot_intensity(r, &mut svg).map_err(|e| ExperimentError::Output {
            what: "drawing ssr-intensity.svg".into(),
            reason: e.to_string(),
        })?;
        Ok(vec![
            ("ssr-intensity.csv", r.intensity_csv()),
            ("ssr-intensity.svg", svg),
        ])
    }
}

/// The read-intensity axis: erase postponement, write p99.99 (both log scale) and host
/// write MB/s against ρ, one line per policy.
fn plot_intensity(r: &SsrReport, svg: &mut String) -> PlotResult {
    use crate::plot::COLORS;
    use plotters::prelude::*;
    let root = SVGBackend::with_string(svg, (1500, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 3));
    let pts = r.intensity_points();
    let (x0, x1) = (
        pts.first().copied().unwrap_or(0.1),
        pts.last().copied().unwrap_or(1.0),
    );
    type Get = fn(&IntensityRun) -> f64;
    let specs: [(&str, &str, Get); 3] = [
        ("erase postponement (max)", "ms", |x| {
            x.suspend.erase_postponement_max_ns as f64 / 1e6
        }),
        ("write p99.99", "ms", |x| x.write.p99_99 as f64 / 1e6),
        ("host write throughput", "MB/s", |x| x.write_mb_per_s),
    ];
    let policies: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for x in &r.intensity {
            if !v.contains(&x.policy) {
                v.push(x.policy);
            }
        }
        v
    };
    for (area, (title, unit, get)) in panels.iter().zip(specs) {
        let series: Vec<(&str, Vec<(f64, f64)>)> = policies
            .iter()
            .map(|pol| {
                let v = r
                    .intensity
                    .iter()
                    .filter(|x| x.policy == *pol)
                    .map(|x| (x.reads_per_cycle, get(x)))
                    .filter(|p| p.1 > 0.0)
                    .collect();
                (*pol, v)
            })
            .collect();
        let ys = series.iter().flat_map(|s| s.1.iter().map(|p| p.1));
        let (lo, hi) = ys.fold((f64::INFINITY, 0f64), |(a, b), y| (a.min(y), b.max(y)));
        let (lo, hi) = if lo.is_finite() && hi > 0.0 {
            (lo, hi)
        } else {
            (0.1, 1.0)
        };
        let caption = format!("{title} (log) vs reads per die per suspend+resume cycle");
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (x0 * 0.9..x1 * 1.1).log_scale(),
                (lo * 0.8..hi * 1.25).log_scale(),
            )?;
        chart
            .configure_mesh()
            .x_desc("rho (1 = one read per suspend+resume cycle)")
            .y_desc(unit)
            .draw()?;
        for (i, (pol, v)) in series.iter().enumerate() {
            let c = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(v.iter().copied(), c.stroke_width(2)))?
                .label(*pol)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], c));
            chart.draw_series(v.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}
