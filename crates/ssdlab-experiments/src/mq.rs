//! The multi-queue study MQSim (Tavakkol et al., FAST 2018) was built for
//! (`ssdlab reproduce mq`, docs/host-interface.md). Two flows, each its own NVMe submission
//! queue, share one device: `reads` (4 KiB uniform random reads at queue depth 8) and
//! `writes` (128 KiB sequential writes at queue depth 32). Each flow runs alone, then both
//! together under round-robin and under weighted-round-robin arbitration (`reads` high,
//! `writes` low), on a freshly filled device (no GC) and on a preconditioned one (GC in
//! effect). Per flow: throughput, mean, p99 and p99.99 latency; its slowdown (mean latency
//! together / alone, MQSim's definition) and the fairness of each shared run (min slowdown /
//! max slowdown).
//!
//! The device is `configs/nvme-pcie3-tlc.toml` with its host interface (PCIe 3.0 x4 with the
//! core's defaults when the preset has none) whose controller holds 16 commands at once: fewer than the flows' 8 + 32, so commands wait in the submission
//! queues and the arbiter decides which flow's command is fetched next.

use crate::experiment::{Check, Common, DocTable, Experiment, PlotResult, Say, Shape};
use crate::{ExperimentError, Result};
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::config::HostInterfaceConfig;
use ssdlab_core::policy::arbitration::{
    round_robin, weighted_round_robin, ArbitrationConfig, Priority,
};
use ssdlab_core::stats::LatencySummary;
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::synthetic::{AddressPattern, SyntheticConfig};
use ssdlab_workload::{Workload, WorkloadConfig};
use std::fmt::Write as _;
use std::time::Instant;

pub mod qd;

pub const NVME_TOML: &str = include_str!("../../../configs/nvme-pcie3-tlc.toml");

/// Simulated time of each run at scale 1.
pub const DURATION_NS: u64 = 2_000_000_000;

/// A change of a slowdown under this share counts as none in the expected-shape checks
/// (the writes' slowdowns differ by a few tenths of a percent between seeds).
pub const MATERIAL: f64 = 0.01;

/// Controller command slots (`max_commands_in_flight`) of the study: below the flows' 8 +
/// 32 outstanding commands, so the arbiter decides.
pub const SLOTS: u32 = 16;

/// Command slots of the control runs ([`Sharing::RoundRobinAllSlots`]): the preset's
/// 1024, more than both flows' commands, so nothing waits for a slot and what is left of
/// the interference is the back end's (and the link's).
pub const ALL_SLOTS: u32 = 1024;

/// One flow of the study.
#[derive(Clone, Debug, Serialize)]
pub struct FlowSpec {
    pub name: &'static str,
    pub read_percent: f64,
    pub block_bytes: u64,
    pub queue_depth: u32,
    pub pattern: AddressPattern,
    /// Its submission queue's class under weighted round robin.
    pub priority: Priority,
}

impl FlowSpec {
    /// The operation the flow issues.
    pub fn op(&self) -> &'static str {
        if self.read_percent >= 100.0 {
            "read"
        } else {
            "write"
        }
    }
}

/// How the flows share the device in one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sharing {
    /// The flow runs by itself.
    Alone,
    /// Both flows, NVMe round robin.
    RoundRobin,
    /// Both flows, NVMe weighted round robin.
    WeightedRoundRobin,
    /// Both flows, round robin with [`ALL_SLOTS`] command slots: no wait for a slot.
    RoundRobinAllSlots,
}

impl Sharing {
    pub const ALL: [Sharing; 4] = [
        Sharing::Alone,
        Sharing::RoundRobin,
        Sharing::WeightedRoundRobin,
        Sharing::RoundRobinAllSlots,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Sharing::Alone => "alone",
            Sharing::RoundRobin => "round-robin",
            Sharing::WeightedRoundRobin => "weighted-round-robin",
            Sharing::RoundRobinAllSlots => "round-robin-all-slots",
        }
    }
    /// Short label for tables.
    pub fn short(self) -> &'static str {
        match self {
            Sharing::Alone => "alone",
            Sharing::RoundRobin => "RR",
            Sharing::WeightedRoundRobin => "WRR",
            Sharing::RoundRobinAllSlots => "RR, all slots",
        }
    }
}

/// Parameters of the study.
#[derive(Clone, Debug)]
pub struct MqParams {
    /// The device (host interface included); its workload and preconditioning are set per
    /// run.
    pub base: Config,
    /// Divisor of the pages per block (384) and of the run duration.
    pub scale: u32,
    /// Simulated time of each run (both flows issue requests the whole time).
    pub duration_ns: u64,
    /// `reads` then `writes`.
    pub flows: [FlowSpec; 2],
    /// MQSim's flow study ([`qd`]), run beside the rest (`None`: not run).
    pub qd: Option<qd::QdParams>,
}

impl MqParams {
    /// The study at `scale`: a power of two ≤ 16 dividing the pages per block (384 → 24)
    /// and the run duration, so the write volume keeps the same share of the free space.
    pub fn paper(scale: u32) -> Result<MqParams> {
        if !(scale.is_power_of_two() && scale <= 16) {
            return Err(ExperimentError::invalid(
                "scale",
                format!(
                    "{scale}: a power of two up to 16 (it divides the 384 pages per block and the run duration)"
                ),
            ));
        }
        let mut base = Config::from_toml_str(NVME_TOML, "configs/nvme-pcie3-tlc.toml")?;
        base.device.geometry.pages_per_block /= scale;
        // The DRAM buffer absorbs the same share of each (shorter) run's writes.
        base.ftl.write_buffer_bytes /= scale as u64;
        // The preset's host interface when it has one (else PCIe 3.0 x4 with the core's
        // defaults), with the study's command slots.
        let mut hi = base.device.host_interface.clone().unwrap_or_default();
        hi.max_commands_in_flight = SLOTS;
        // The study gives each flow its class itself.
        hi.flow_priority = Vec::new();
        base.device.host_interface = Some(hi);
        base.validate()?;
        let base_seed = base.seed;
        Ok(MqParams {
            base,
            scale,
            duration_ns: DURATION_NS / scale as u64,
            flows: [
                FlowSpec {
                    name: "reads",
                    read_percent: 100.0,
                    block_bytes: 4096,
                    queue_depth: 8,
                    pattern: AddressPattern::Uniform,
                    priority: Priority::High,
                },
                FlowSpec {
                    name: "writes",
                    read_percent: 0.0,
                    block_bytes: 128 << 10,
                    queue_depth: 32,
                    pattern: AddressPattern::Sequential,
                    priority: Priority::Low,
                },
            ],
            qd: Some(qd::QdParams::paper(scale, base_seed)?),
        })
    }

    /// The host interface of the base device.
    pub fn host_interface(&self) -> Result<&HostInterfaceConfig> {
        self.base.device.host_interface.as_ref().ok_or_else(|| {
            ExperimentError::invalid(
                "device.host_interface",
                "the study needs a host interface (submission queues and their arbitration)",
            )
        })
    }

    /// The configuration of a run: the base with `sharing`'s arbitration (round robin for a
    /// flow alone, where the policy cannot matter).
    pub fn config(&self, sharing: Sharing) -> Result<Config> {
        let mut c = self.base.clone();
        let mut hi = self.host_interface()?.clone();
        match sharing {
            Sharing::Alone | Sharing::RoundRobin | Sharing::RoundRobinAllSlots => {
                // The study's two arbitration policies, by name: the preset's burst when it
                // has one of them, else round robin's default (a policy registered later
                // neither breaks the study nor joins it).
                let burst = match &hi.arbitration {
                    ArbitrationConfig::RoundRobin(p) => p.burst,
                    ArbitrationConfig::WeightedRoundRobin(p) => p.burst,
                    #[allow(unreachable_patterns)]
                    _ => round_robin::Params::default().burst,
                };
                hi.arbitration = ArbitrationConfig::RoundRobin(round_robin::Params { burst });
                hi.flow_priority = Vec::new();
            }
            Sharing::WeightedRoundRobin => {
                if !matches!(hi.arbitration, ArbitrationConfig::WeightedRoundRobin(_)) {
                    hi.arbitration = ArbitrationConfig::WeightedRoundRobin(
                        weighted_round_robin::Params::default(),
                    );
                }
                hi.flow_priority = self.flows.iter().map(|f| f.priority).collect();
            }
        }
        if sharing == Sharing::RoundRobinAllSlots {
            hi.max_commands_in_flight = ALL_SLOTS;
        }
        c.device.host_interface = Some(hi);
        c.precondition.enabled = false;
        c.validate()?;
        Ok(c)
    }

    /// The burst of the round-robin runs.
    pub fn rr_burst(&self) -> Result<u32> {
        match self.config(Sharing::RoundRobin)?.device.host_interface {
            Some(HostInterfaceConfig {
                arbitration: ArbitrationConfig::RoundRobin(p),
                ..
            }) => Ok(p.burst),
            _ => Err(ExperimentError::invalid(
                "device.host_interface.arbitration",
                "the round-robin runs have no round-robin arbitration",
            )),
        }
    }

    /// The weights of the weighted-round-robin runs (high, medium, low) and the burst.
    pub fn wrr(&self) -> Result<weighted_round_robin::Params> {
        match self
            .config(Sharing::WeightedRoundRobin)?
            .device
            .host_interface
        {
            Some(HostInterfaceConfig {
                arbitration: ArbitrationConfig::WeightedRoundRobin(p),
                ..
            }) => Ok(p),
            _ => Err(ExperimentError::invalid(
                "device.host_interface.arbitration",
                "the weighted-round-robin runs have no weighted-round-robin arbitration",
            )),
        }
    }

    /// Every run's configuration is valid (scale, overrides, duration): call before
    /// announcing the runs; [`run`] calls it before any long work.
    pub fn check(&self) -> Result<()> {
        if self.duration_ns == 0 {
            return Err(ExperimentError::invalid("duration_ns", "must be > 0"));
        }
        if self.base.mode != ssdlab_core::config::Mode::Timed {
            return Err(ExperimentError::invalid(
                "mode",
                "the study measures latency: the timed mode is needed",
            ));
        }
        if !self.host_interface()?.flow_priority.is_empty() {
            return Err(ExperimentError::invalid(
                "device.host_interface.flow_priority",
                format!(
                    "the study sets each flow's class itself ({}) for its weighted-round-robin runs",
                    self.flows
                        .iter()
                        .map(|f| format!("{} {}", f.name, f.priority.name()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        for s in Sharing::ALL {
            self.config(s)?;
        }
        // Both flows' generators accept the device.
        let sim = Simulation::new(self.config(Sharing::Alone)?)?;
        for i in 0..2 {
            self.workload(&sim, &[i])?;
        }
        Ok(())
    }

    /// The synthetic configuration of flow `i`.
    pub fn flow_config(&self, i: usize) -> SyntheticConfig {
        let f = &self.flows[i];
        SyntheticConfig {
            read_percent: f.read_percent,
            block_size_bytes: f.block_bytes,
            queue_depth: f.queue_depth,
            pattern: f.pattern,
            // The run's duration is the only limit: both flows issue the whole time.
            requests: 0,
            total_bytes: 0,
            duration_ns: self.duration_ns,
            ..Default::default()
        }
    }

    /// One workload of the flows `which` (indexes into `flows`), each named after its flow
    /// and drawn from its own seed (the base seed + its index).
    pub fn workload(&self, sim: &Simulation, which: &[usize]) -> Result<Workload> {
        let mut out = Workload {
            flows: Vec::new(),
            duration_ns: Some(self.duration_ns),
            stats: Default::default(),
        };
        for &i in which {
            let mut ctx = sim.workload_context();
            ctx.seed = self.base.seed.wrapping_add(i as u64);
            let w = WorkloadConfig::Synthetic(self.flow_config(i))
                .build(&ctx)
                .map_err(|e| {
                    ExperimentError::invalid(format!("flows.{}", self.flows[i].name), e.to_string())
                })?;
            for mut f in w.flows {
                f.name = self.flows[i].name.to_string();
                out.flows.push(f);
            }
        }
        Ok(out)
    }
}

/// One flow in one run.
#[derive(Clone, Debug, Serialize)]
pub struct MqRow {
    /// Run on the preconditioned device (GC in effect) rather than the freshly filled one.
    pub gc: bool,
    pub sharing: Sharing,
    pub flow: &'static str,
    /// Its submission queue's class under weighted round robin.
    pub priority: &'static str,
    /// Requests of the flow completed in the run.
    pub requests: u64,
    pub iops: f64,
    /// 10⁶ bytes per second.
    pub mb_per_s: f64,
    /// Latency of the flow's requests (its one operation).
    pub latency: LatencySummary,
    /// Mean latency together / mean latency alone (`null` when alone).
    pub slowdown: Option<f64>,
    /// The run's min slowdown / max slowdown (`null` when alone).
    pub fairness: Option<f64>,
}

/// One run (one or both flows).
#[derive(Clone, Debug, Serialize)]
pub struct MqRun {
    pub gc: bool,
    pub sharing: Sharing,
    /// The flows run, by name.
    pub flows: Vec<&'static str>,
    pub sim_time_ns: u64,
    /// GC victims collected during the run.
    pub gc_victims: u64,
    pub waf: f64,
    /// Share of the run with a transfer on the link, host → device and device → host.
    pub link_down_utilization: f64,
    pub link_up_utilization: f64,
    pub die_utilization_mean: f64,
    pub wall_s: f64,
    /// Per flow in `flows` order: (completed, latency of its operation).
    #[serde(skip)]
    pub per_flow: Vec<(u64, LatencySummary)>,
    /// Warnings of the point's results audit (shares a reader of its figures must know).
    pub audit_warnings: Vec<crate::AuditWarning>,
}

/// The whole study.
#[derive(Clone, Debug, Serialize)]
pub struct MqReport {
    pub scale: u32,
    pub duration_ns: u64,
    pub slots: u32,
    pub flows: Vec<FlowSpec>,
    /// Round robin's burst; weighted round robin's weights and burst.
    pub rr_burst: u32,
    pub wrr: weighted_round_robin::Params,
    pub link: String,
    /// Wall time of the preconditioning: the sequential fill, then the random overwrites.
    pub fill_wall_s: f64,
    pub overwrite_wall_s: f64,
    pub runs: Vec<MqRun>,
    pub rows: Vec<MqRow>,
    /// MQSim's flow study ([`qd`]).
    pub qd: Option<qd::QdReport>,
    pub wall_s: f64,
}

/// Every (GC state, sharing, flows) run in report order.
fn jobs() -> Vec<(Sharing, Vec<usize>)> {
    vec![
        (Sharing::Alone, vec![0]),
        (Sharing::Alone, vec![1]),
        (Sharing::RoundRobin, vec![0, 1]),
        (Sharing::WeightedRoundRobin, vec![0, 1]),
        (Sharing::RoundRobinAllSlots, vec![0, 1]),
    ]
}

fn measure(
    p: &MqParams,
    state: &Simulation,
    gc: bool,
    sharing: Sharing,
    which: &[usize],
) -> Result<MqRun> {
    let t = Instant::now();
    let mut sim = Simulation::from_state(p.config(sharing)?, state)?;
    let w = p.workload(&sim, which)?;
    let r = sim.run_workload_with(w, &mut NoProgress)?;
    let lat = r
        .latency_ns
        .as_ref()
        .ok_or_else(|| ExperimentError::invalid("mode", "the study needs the timed mode"))?;
    let per_flow = which
        .iter()
        .zip(&lat.per_flow)
        .map(|(&i, fl)| {
            let l = if p.flows[i].op() == "read" {
                &fl.latency.read
            } else {
                &fl.latency.write
            };
            (l.count, l.clone())
        })
        .collect();
    let hi = r.host_interface.as_ref();
    let engine = r.engine.as_ref();
    Ok(MqRun {
        gc,
        sharing,
        flows: which.iter().map(|&i| p.flows[i].name).collect(),
        sim_time_ns: r.host.sim_time_ns,
        gc_victims: r.gc.invocations,
        waf: r.waf,
        link_down_utilization: hi.map_or(0.0, |h| h.down.utilization),
        link_up_utilization: hi.map_or(0.0, |h| h.up.utilization),
        die_utilization_mean: engine.map_or(0.0, |e| e.die_utilization_mean),
        wall_s: t.elapsed().as_secs_f64(),
        per_flow,
        audit_warnings: crate::AuditWarning::of(
            &r,
            format!(
                "{} {} {}",
                if gc { "GC" } else { "no GC" },
                sharing.short(),
                which
                    .iter()
                    .map(|&i| p.flows[i].name)
                    .collect::<Vec<_>>()
                    .join(" + ")
            ),
        ),
    })
}

/// Fill the device (sequential fill of the whole logical space), run the no-GC runs from
/// that state while a copy is overwritten at random (one capacity, so GC is in effect),
/// then the GC runs from that; runs go in parallel on the caller's rayon pool.
/// `on_run` is called after each run (progress).
pub fn run(p: &MqParams, on_run: &(dyn Fn(&MqRun) + Sync)) -> Result<MqReport> {
    let t0 = Instant::now();
    p.check()?;
    let mut fill = p.config(Sharing::Alone)?;
    fill.precondition.enabled = true;
    fill.precondition.sequential_fill = true;
    fill.precondition.random_overwrite_capacity_multiple = 0.0;
    let mut filled = Simulation::new(fill)?;
    filled.precondition(&mut NoProgress)?;
    let fill_wall_s = t0.elapsed().as_secs_f64();
    let runs_of = |state: &Simulation, gc: bool| -> Result<Vec<MqRun>> {
        jobs()
            .par_iter()
            .map(|(s, which)| {
                let r = measure(p, state, gc, *s, which)?;
                on_run(&r);
                Ok(r)
            })
            .collect()
    };
    let ((no_gc, with_gc), flow_study) = rayon::join(
        || {
            rayon::join(
                || runs_of(&filled, false),
                || -> Result<(f64, Vec<MqRun>)> {
                    let t = Instant::now();
                    let mut aged = filled.clone();
                    aged.config.precondition.enabled = true;
                    aged.config.precondition.sequential_fill = false;
                    aged.config.precondition.random_overwrite_capacity_multiple = 1.0;
                    aged.precondition(&mut NoProgress)?;
                    let wall = t.elapsed().as_secs_f64();
                    Ok((wall, runs_of(&aged, true)?))
                },
            )
        },
        || p.qd.as_ref().map(qd::run).transpose(),
    );
    let flow_study = flow_study?;
    let (overwrite_wall_s, with_gc) = with_gc?;
    let runs: Vec<MqRun> = no_gc?.into_iter().chain(with_gc).collect();
    let rows = rows(p, &runs);
    Ok(MqReport {
        scale: p.scale,
        duration_ns: p.duration_ns,
        slots: p.host_interface()?.max_commands_in_flight,
        flows: p.flows.to_vec(),
        rr_burst: p.rr_burst()?,
        wrr: p.wrr()?,
        link: {
            let h = p.host_interface()?;
            format!("PCIe {}.0 x{}", h.pcie_generation, h.lanes)
        },
        fill_wall_s,
        overwrite_wall_s,
        runs,
        rows,
        qd: flow_study,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

/// The per-flow rows with slowdowns and fairness, in (GC state, sharing, flow) order.
fn rows(p: &MqParams, runs: &[MqRun]) -> Vec<MqRow> {
    let mut out = Vec::new();
    for gc in [false, true] {
        let alone_mean = |flow: &str| {
            runs.iter()
                .find(|r| r.gc == gc && r.sharing == Sharing::Alone && r.flows == [flow])
                .map(|r| r.per_flow[0].1.mean)
        };
        for sharing in Sharing::ALL {
            let mut these: Vec<MqRow> = Vec::new();
            for f in &p.flows {
                let Some(run) = runs.iter().find(|r| {
                    r.gc == gc
                        && r.sharing == sharing
                        && r.flows.contains(&f.name)
                        && (sharing == Sharing::Alone) == (r.flows.len() == 1)
                }) else {
                    continue;
                };
                let k = run.flows.iter().position(|n| *n == f.name).unwrap_or(0);
                let (n, lat) = &run.per_flow[k];
                let s = run.sim_time_ns.max(1) as f64 / 1e9;
                let slowdown = match (sharing, alone_mean(f.name)) {
                    (Sharing::Alone, _) => None,
                    (_, Some(a)) if a > 0.0 => Some(lat.mean / a),
                    _ => None,
                };
                these.push(MqRow {
                    gc,
                    sharing,
                    flow: f.name,
                    priority: f.priority.name(),
                    requests: *n,
                    iops: *n as f64 / s,
                    mb_per_s: (*n * f.block_bytes) as f64 / s / 1e6,
                    latency: lat.clone(),
                    slowdown,
                    fairness: None,
                });
            }
            let sd: Vec<f64> = these.iter().filter_map(|r| r.slowdown).collect();
            if sd.len() == 2 {
                let fair = sd[0].min(sd[1]) / sd[0].max(sd[1]);
                for r in &mut these {
                    r.fairness = Some(fair);
                }
            }
            out.extend(these);
        }
    }
    out
}

pub const CSV_HEADER: &str = "gc,sharing,flow,priority,requests,iops,mb_per_s,mean_ns,p50_ns,p99_ns,p99_99_ns,max_ns,slowdown,fairness";

impl MqReport {
    pub fn row(&self, gc: bool, sharing: Sharing, flow: &str) -> Option<&MqRow> {
        self.rows
            .iter()
            .find(|r| r.gc == gc && r.sharing == sharing && r.flow == flow)
    }

    fn slowdown(&self, gc: bool, sharing: Sharing, flow: &str) -> Option<f64> {
        self.row(gc, sharing, flow).and_then(|r| r.slowdown)
    }

    pub fn csv(&self) -> String {
        let mut s = String::from(CSV_HEADER);
        s.push('\n');
        let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.4}"));
        for r in &self.rows {
            let l = &r.latency;
            s += &format!(
                "{},{},{},{},{},{:.1},{:.2},{:.1},{},{},{},{},{},{}\n",
                if r.gc { "on" } else { "off" },
                r.sharing.name(),
                r.flow,
                r.priority,
                r.requests,
                r.iops,
                r.mb_per_s,
                l.mean,
                l.p50,
                l.p99,
                l.p99_99,
                l.max,
                opt(r.slowdown),
                opt(r.fairness),
            );
        }
        s
    }

    /// One table per device state, then the runs' device figures.
    pub fn markdown(&self) -> String {
        let us = |ns: f64| format!("{:.1}", ns / 1e3);
        let mut s = String::new();
        for gc in [false, true] {
            s += &format!(
                "\n### {}\n\n",
                if gc {
                    "GC in effect (sequential fill + one capacity of random 4 KiB overwrites)"
                } else {
                    "No GC (right after a sequential fill; the writes stay within the free space)"
                }
            );
            s += "| sharing | flow | priority (WRR) | requests | IOPS | MB/s | mean µs | p99 µs | p99.99 µs | max µs | slowdown | fairness |\n";
            s += "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
            for r in self.rows.iter().filter(|r| r.gc == gc) {
                let l = &r.latency;
                let f = |v: Option<f64>| v.map_or("–".to_string(), |x| format!("{x:.2}"));
                s += &format!(
                    "| {} | {} | {} | {} | {:.0} | {:.1} | {} | {} | {} | {} | {} | {} |\n",
                    r.sharing.short(),
                    r.flow,
                    r.priority,
                    r.requests,
                    r.iops,
                    r.mb_per_s,
                    us(l.mean),
                    us(l.p99 as f64),
                    us(l.p99_99 as f64),
                    us(l.max as f64),
                    f(r.slowdown),
                    f(r.fairness),
                );
            }
        }
        s += "\n| GC | sharing | flows | sim ms | GC victims | WAF | link down util. | link up util. | die util. | wall s |\n";
        s += "|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
        for r in &self.runs {
            s += &format!(
                "| {} | {} | {} | {:.1} | {} | {:.2} | {:.3} | {:.3} | {:.3} | {:.1} |\n",
                if r.gc { "on" } else { "off" },
                r.sharing.short(),
                r.flows.join(" + "),
                r.sim_time_ns as f64 / 1e6,
                r.gc_victims,
                r.waf,
                r.link_down_utilization,
                r.link_up_utilization,
                r.die_utilization_mean,
                r.wall_s
            );
        }
        let thin: Vec<String> = self
            .rows
            .iter()
            .filter(|r| r.requests < 100_000)
            .map(|r| {
                format!(
                    "{}/{}/{} {:.1}",
                    if r.gc { "GC" } else { "no GC" },
                    r.sharing.short(),
                    r.flow,
                    r.requests as f64 * 1e-4
                )
            })
            .collect();
        if !thin.is_empty() {
            s += &format!(
                "\nNote: these p99.99 figures rest on fewer than 10 samples beyond them (samples): {}.\n",
                thin.join(", ")
            );
        }
        s
    }

    /// The run of `flows` (names joined by `+`) in a state.
    pub fn run_of(&self, gc: bool, sharing: Sharing, flows: &[&str]) -> Option<&MqRun> {
        self.runs
            .iter()
            .find(|r| r.gc == gc && r.sharing == sharing && r.flows == flows)
    }

    /// What bounds the writes when they run alone: the dies' and the link's (host → device)
    /// busy shares.
    fn write_bound(&self, gc: bool) -> String {
        match self.run_of(gc, Sharing::Alone, &["writes"]) {
            Some(w) => format!(
                "alone they keep the dies {:.0} % and the link's host → device direction {:.0} % busy",
                w.die_utilization_mean * 100.0,
                w.link_down_utilization * 100.0
            ),
            None => "the writes' run alone is missing".into(),
        }
    }

    /// The expected shape (MQSim, FAST 2018: the flows interfere through the shared back end
    /// and link; weighted arbitration protects the weighted flow), per device state and
    /// across them. A change under [`MATERIAL`] counts as none.
    pub fn checks(&self) -> Vec<Check> {
        let mut out = Vec::new();
        let f3 = |v: f64| format!("{v:.3}");
        let pct = |a: f64, b: f64| format!("{:+.1} %", (a / b - 1.0) * 100.0);
        for gc in [false, true] {
            let group = if gc { "GC" } else { "no GC" };
            let sd = |sh, fl| self.slowdown(gc, sh, fl);
            // 0: the design holds: no GC in the no-GC runs, GC in the GC runs with writes.
            let victims: Vec<(String, u64)> = self
                .runs
                .iter()
                .filter(|r| r.gc == gc && r.flows.contains(&"writes"))
                .map(|r| {
                    (
                        format!("{} {}", r.sharing.short(), r.flows.join("+")),
                        r.gc_victims,
                    )
                })
                .collect();
            if victims.is_empty() {
                out.push(Check::missing(group, "GC victims"));
            } else {
                let ok = victims.iter().all(|(_, v)| (*v > 0) == gc);
                out.push(Check {
                    group: group.into(),
                    claim: if gc {
                        "design: every run with the writes collects GC victims".into()
                    } else {
                        "design: the writes stay within the free space (no GC victim)".into()
                    },
                    holds: Some(ok),
                    detail: victims
                        .iter()
                        .map(|(n, v)| format!("{n}: {v}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
            // 1: interference under round robin, each flow.
            for flow in ["reads", "writes"] {
                match sd(Sharing::RoundRobin, flow) {
                    Some(x) => {
                        let ok = x > 1.0 + MATERIAL;
                        let mut d = format!("{} {}×", flow, f3(x));
                        if !ok {
                            d += &if flow == "writes" {
                                format!(
                                    "; not slowed: their rate is the back end's and the link's ({}), which the reads hardly use",
                                    self.write_bound(gc)
                                )
                            } else {
                                "; not slowed".to_string()
                            };
                        }
                        out.push(Check {
                            group: group.into(),
                            claim: format!(
                                "RR: the {flow} slow down (slowdown > {:.2}): interference",
                                1.0 + MATERIAL
                            ),
                            holds: Some(ok),
                            detail: d,
                        });
                    }
                    None => out.push(Check::missing(group, format!("RR: the {flow} slow down"))),
                }
            }
            // 2: WRR protects the weighted (high) flow.
            match (
                sd(Sharing::RoundRobin, "reads"),
                sd(Sharing::WeightedRoundRobin, "reads"),
            ) {
                (Some(rr), Some(wrr)) => {
                    let ok = wrr < rr * (1.0 - MATERIAL);
                    let mut d = format!(
                        "reads {}× under WRR vs {}× under RR ({})",
                        f3(wrr),
                        f3(rr),
                        pct(wrr, rr)
                    );
                    if !ok {
                        d += "; the reads' wait is in the back end, not for command slots (all the arbiter hands out)";
                    }
                    out.push(Check {
                        group: group.into(),
                        claim:
                            "WRR protects the weighted read flow: its slowdown under WRR < under RR"
                                .into(),
                        holds: Some(ok),
                        detail: d,
                    });
                }
                _ => out.push(Check::missing(group, "WRR protects the read flow")),
            }
            // 4: the write flow pays for it.
            match (
                self.row(gc, Sharing::RoundRobin, "writes"),
                self.row(gc, Sharing::WeightedRoundRobin, "writes"),
            ) {
                (Some(rr), Some(wrr)) => match (rr.slowdown, wrr.slowdown) {
                    (Some(a), Some(b)) => {
                        let ok = b > a * (1.0 + MATERIAL);
                        let mut d = format!(
                            "writes {}× under WRR vs {}× under RR ({}); {:.0} vs {:.0} MB/s",
                            f3(b),
                            f3(a),
                            pct(b, a),
                            wrr.mb_per_s,
                            rr.mb_per_s
                        );
                        if !ok {
                            d += &format!(
                                "; the writes are not short of command slots ({}), so the slots WRR gives the reads cost them little",
                                self.write_bound(gc)
                            );
                        }
                        out.push(Check {
                            group: group.into(),
                            claim: "the write flow pays for the protection: its slowdown under WRR > under RR"
                                .into(),
                            holds: Some(ok),
                            detail: d,
                        });
                    }
                    _ => out.push(Check::missing(group, "the write flow pays")),
                },
                _ => out.push(Check::missing(group, "the write flow pays")),
            }
        }
        // 3: GC makes interference worse.
        let group = "GC vs no GC";
        match (
            self.slowdown(false, Sharing::RoundRobin, "reads"),
            self.slowdown(true, Sharing::RoundRobin, "reads"),
        ) {
            (Some(off), Some(on)) => {
                let ok = on > off * (1.0 + MATERIAL);
                let mut d = format!(
                    "reads under RR: {}× with GC vs {}× without",
                    f3(on),
                    f3(off)
                );
                if !ok {
                    d += "; GC did not add to the reads' slowdown";
                }
                // What the gap measures: with every command given a slot it is gone.
                if let (Some(a), Some(b)) = (
                    self.slowdown(false, Sharing::RoundRobinAllSlots, "reads"),
                    self.slowdown(true, Sharing::RoundRobinAllSlots, "reads"),
                ) {
                    d += &format!(
                        "; with {ALL_SLOTS} slots {}× vs {}×: the gap is the {SLOTS} command slots (a write holds its slot for its whole latency, longer with GC), not the back end",
                        f3(b),
                        f3(a)
                    );
                }
                out.push(Check {
                    group: group.into(),
                    claim: "GC makes interference worse: the reads' RR slowdown with GC > without"
                        .into(),
                    holds: Some(ok),
                    detail: d,
                });
            }
            _ => out.push(Check::missing(group, "GC makes interference worse")),
        }
        // 5: GC through the back end alone: the read tail with every command in a slot.
        let claim = format!(
            "back end ({ALL_SLOTS} slots): GC lengthens the reads' tail: their RR p99 with GC > without (by > {:.0} %)",
            MATERIAL * 100.0
        );
        match (
            self.row(false, Sharing::RoundRobinAllSlots, "reads"),
            self.row(true, Sharing::RoundRobinAllSlots, "reads"),
        ) {
            (Some(off), Some(on)) => {
                let (a, b) = (off.latency.p99 as f64, on.latency.p99 as f64);
                let ok = b > a * (1.0 + MATERIAL);
                let mut d = format!(
                    "reads' p99 {:.0} µs with GC vs {:.0} µs without ({:.2}×; p99.99 {:.0} vs {:.0} µs); mean slowdown {}× vs {}×",
                    b / 1e3,
                    a / 1e3,
                    b / a.max(1.0),
                    on.latency.p99_99 as f64 / 1e3,
                    off.latency.p99_99 as f64 / 1e3,
                    on.slowdown.map_or("–".into(), f3),
                    off.slowdown.map_or("–".into(), f3)
                );
                if !ok {
                    d += "; the reads never waited behind a GC copy or erase on their die";
                }
                out.push(Check::new(group, claim, Some(ok), d));
            }
            _ => out.push(Check::missing(group, claim)),
        }
        if let Some(q) = &self.qd {
            out.extend(q.checks());
        }
        out
    }
}

/// `ssdlab reproduce mq`.
pub struct Mq;

/// `reproduce mq`'s own flags.
#[derive(clap::Args)]
pub struct MqArgs {
    /// Divide the pages per block (384) and each run's simulated time (2000 ms) by this
    /// power of two ≤ 16 (1 = the study as documented).
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// Simulated time of each run in ms (overrides 2000 / SCALE).
    #[arg(long)]
    duration_ms: Option<f64>,
}

impl Experiment for Mq {
    const NAME: &'static str = "mq";
    const ABOUT: &'static str = "MQSim's multi-queue study on the PCIe 3.0 x4 TLC device: 4 KiB random reads (QD 8) and 128 KiB sequential writes (QD 32), alone and together under round robin and weighted round robin, without and with GC: slowdown and fairness";
    const DOC_TABLES: &'static [DocTable] = &[DocTable {
        name: "mq",
        doc: "docs/host-interface.md",
        fast: true,
        from: "### ",
        to: None,
    }];
    const EXTRA_FILES: &'static [&'static str] = &["mq-qd.csv", "mq-qd.svg"];
    type Args = MqArgs;
    type Params = MqParams;
    type Report = MqReport;

    fn params(a: &MqArgs, common: &Common) -> Result<MqParams> {
        let mut p = MqParams::paper(a.scale)?;
        p.base = crate::run::with_overrides(
            &p.base,
            &common.sets,
            "configs/nvme-pcie3-tlc.toml (with the study's host interface)",
        )?;
        if let Some(s) = common.seed {
            p.base.seed = s;
            if let Some(q) = p.qd.as_mut() {
                q.base.seed = s;
            }
        }
        if let Some(ms) = a.duration_ms {
            if !(ms > 0.0 && ms.is_finite()) {
                return Err(ExperimentError::invalid(
                    "--duration-ms",
                    format!("{ms}: must be a positive number of milliseconds"),
                ));
            }
            p.duration_ns = (ms * 1e6).round() as u64;
        }
        p.check()?;
        Ok(p)
    }

    fn banner(p: &MqParams, threads: usize) -> String {
        format!(
            "reproduce mq: sequential fill, then (no GC | random overwrite + GC) x (reads alone, writes alone, RR, WRR), {:.0} ms simulated each, on {threads} threads ...",
            p.duration_ns as f64 / 1e6,
        )
    }

    fn run(p: &MqParams, say: &dyn Say) -> Result<MqReport> {
        run(p, &|r: &MqRun| {
            say.progress(&format!(
                "  {:<5} {:<5} {:<14}: {} GC victims, {:.1} s wall",
                if r.gc { "GC" } else { "no GC" },
                r.sharing.short(),
                r.flows.join(" + "),
                r.gc_victims,
                r.wall_s
            ));
            say.audit(&r.audit_warnings);
        })
    }

    fn csv(r: &MqReport) -> String {
        r.csv()
    }

    fn extra_files(r: &MqReport) -> Result<Vec<(&'static str, String)>> {
        let Some(q) = &r.qd else {
            return Ok(Vec::new());
        };
        let mut svg = String::new();
        qd::plot(q, &mut svg).map_err(|e| ExperimentError::Output {
            what: "drawing mq-qd.svg".into(),
            reason: e.to_string(),
        })?;
        Ok(vec![("mq-qd.csv", q.csv()), ("mq-qd.svg", svg)])
    }

    fn checks(r: &MqReport) -> Vec<Check> {
        r.checks()
    }

    fn markdown(r: &MqReport, p: &MqParams, _wall_s: f64) -> String {
        let c = &p.base;
        let g = &c.device.geometry;
        let t = crate::experiment::FreshTimes::of(c);
        let mut o = String::new();
        let _ = writeln!(o, "# Multi-queue interference (MQSim, FAST 2018)\n");
        let _ = writeln!(
            o,
            "* Device (configs/nvme-pcie3-tlc.toml): TLC, {} channels x {} chips x {} dies x {} planes, {} blocks/plane, {} pages/block{}, {} KiB pages, OP {:.0} %, tR {} µs, tPROG {} µs, greedy GC, {} MiB write buffer; seed {}.",
            g.channels,
            g.chips_per_channel,
            g.dies_per_chip,
            g.planes_per_die,
            g.blocks_per_plane,
            g.pages_per_block,
            if r.scale > 1 {
                format!(" (384 / scale {})", r.scale)
            } else {
                String::new()
            },
            g.page_size_bytes >> 10,
            c.device.over_provisioning_ratio * 100.0,
            t.read_ns / 1000,
            t.program_ns / 1000,
            c.ftl.write_buffer_bytes >> 20,
            c.seed
        );
        let _ = writeln!(
            o,
            "{}",
            crate::experiment::gc_planes_line(
                c.scheduler.multi_plane_gc,
                "MQSim's transaction scheduler issues multi-plane commands for GC transactions as for host ones."
            )
        );
        let w = &r.wrr;
        let _ = writeln!(
            o,
            "* Host interface: {}, one submission queue per flow, {} controller command slots (fewer than the flows' {} outstanding commands: the arbiter decides whose command is fetched); RR burst {}; WRR weights high {} / medium {} / low {}, burst {}.",
            r.link,
            r.slots,
            r.flows.iter().map(|f| f.queue_depth).sum::<u32>(),
            r.rr_burst,
            w.high_weight,
            w.medium_weight,
            w.low_weight,
            w.burst
        );
        let _ = writeln!(
            o,
            "* Control runs `RR, all slots`: round robin with {ALL_SLOTS} command slots (more than the flows' commands: nothing waits for a slot), so what is left of the interference and of GC's effect is the back end's and the link's."
        );
        let _ = writeln!(
            o,
            "* Flows: {}; each run {:.0} ms of simulated time, both flows issuing the whole time.",
            r.flows
                .iter()
                .map(|f| format!(
                    "`{}` = {} KiB {} {}s at QD {} (WRR class {})",
                    f.name,
                    f.block_bytes >> 10,
                    match f.pattern {
                        AddressPattern::Sequential => "sequential",
                        _ => "uniform random",
                    },
                    f.op(),
                    f.queue_depth,
                    f.priority.name()
                ))
                .collect::<Vec<_>>()
                .join(", "),
            r.duration_ns as f64 / 1e6
        );
        let _ = writeln!(
            o,
            "* Slowdown = mean latency together / mean latency alone (MQSim's definition); fairness = min slowdown / max slowdown of the run. Preconditioning: sequential fill {:.1} s, random overwrite {:.1} s wall.",
            r.fill_wall_s, r.overwrite_wall_s
        );
        o += &r.markdown();
        if let Some(q) = &r.qd {
            o += &q.markdown();
        }
        o += &crate::experiment::shape_section(
            Shape {
                title: "MQSim, FAST 2018",
                group: Some("device state"),
            },
            &r.checks(),
            r.runs.len() + r.qd.as_ref().map_or(0, |q| 1 + 2 * q.points.len()),
            r.wall_s,
        );
        o
    }

    /// Each flow's slowdown under RR and WRR, without GC (left) and with GC (right).
    fn plot(r: &MqReport, svg: &mut String) -> PlotResult {
        use crate::plot::COLORS;
        use plotters::prelude::*;
        let root = SVGBackend::with_string(svg, (1200, 500)).into_drawing_area();
        root.fill(&WHITE)?;
        let (left, right) = root.split_horizontally(600);
        let shared = [Sharing::RoundRobin, Sharing::WeightedRoundRobin];
        let y_hi = r
            .rows
            .iter()
            .filter_map(|x| x.slowdown)
            .fold(1.0f64, f64::max)
            * 1.2;
        for (gc, area) in [(false, left), (true, right)] {
            let mut c = ChartBuilder::on(&area)
                .caption(
                    format!("slowdown, {}", if gc { "GC in effect" } else { "no GC" }),
                    ("sans-serif", 20),
                )
                .margin(15)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(-0.5f64..1.5, 0f64..y_hi)?;
            c.configure_mesh()
                .x_labels(2)
                .x_label_formatter(&|x| match x.round() as i64 {
                    0 => "round robin".into(),
                    1 => "weighted round robin".into(),
                    _ => String::new(),
                })
                .y_desc("mean latency together / alone")
                .draw()?;
            c.draw_series(LineSeries::new(
                [(-0.5, 1.0), (1.5, 1.0)],
                BLACK.mix(0.3).stroke_width(1),
            ))?;
            // Bars side by side per arbitration: the two are categories, not points of a line.
            let w = 0.8 / r.flows.len().max(1) as f64;
            for (k, f) in r.flows.iter().enumerate() {
                let color = COLORS[(k + 1) % COLORS.len()];
                let bars: Vec<_> = shared
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| {
                        let x0 = i as f64 - 0.4 + k as f64 * w;
                        r.row(gc, *s, f.name)
                            .and_then(|x| x.slowdown)
                            .map(|v| Rectangle::new([(x0, 0.0), (x0 + w, v)], color.filled()))
                    })
                    .collect();
                c.draw_series(bars)?
                    .label(format!("{} ({})", f.name, f.priority.name()))
                    .legend(move |(a, b)| {
                        Rectangle::new([(a, b - 5), (a + 15, b + 5)], color.filled())
                    });
            }
            c.configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
        }
        root.present()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The help states the study's real duration and pages per block (it said 400 ms
    /// while the runs lasted 2 s).
    #[test]
    fn the_help_states_the_studys_duration_and_block() {
        use clap::Args as _;
        let help = MqArgs::augment_args(clap::Command::new("mq"))
            .render_long_help()
            .to_string();
        let ms = DURATION_NS / 1_000_000;
        assert!(help.contains(&format!("({ms} ms)")), "{help}");
        assert!(help.contains(&format!("overrides {ms} / SCALE")), "{help}");
        let p = MqParams::paper(1).unwrap();
        let ppb = p.base.device.geometry.pages_per_block;
        assert!(help.contains(&format!("pages per block ({ppb})")), "{help}");
    }
}
