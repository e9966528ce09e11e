//! MQSim's flow study (Tavakkol et al., "MQSim: A Framework for Enabling Realistic Studies
//! of Modern Multi-Queue SSD Devices", FAST 2018, Fig. 8; the repository's
//! `fast18/backend-contention` inputs): two flows of 4 KiB uniform random reads, each its
//! own NVMe submission queue, share one device; the victim keeps [`VICTIM_QD`] requests
//! outstanding while the other's depth sweeps [`OTHER_QDS`]. Slowdown = a flow's mean
//! response time together / alone at the same depth; fairness = min / max of the two
//! flows' 1 / slowdown (MQSim's definition). MQSim: the victim's slowdown reaches 14.4× at
//! QD 256 while the other stays near 1.
//!
//! The device ([`MQSIM_TOML`]) is MQSim's Table 3 / `ssdconfig-backend-contention.xml`: 8
//! channels at 333 MT/s, 2 dies × 2 planes per chip, 256 pages of 8 KiB per block, MLC tR
//! 75 µs, tPROG 750 µs, erase 3.8 ms, 7 % OP, PCIe 3.0 x4; the flows there read chips 0
//! and 1 of each channel's 4 (`Chip_IDs`), so the device here has those 2 chips per
//! channel (the other two idle in MQSim's runs); blocks per plane 2048 → 128 (the reads
//! need a filled device, not a large one; `--scale N` divides the 8 channels too, down to
//! one). MQSim fetches up to 512 commands per queue
//! (`Queue_Fetch_Size`); here the controller holds 1024 at once: no flow waits for a slot.

use crate::experiment::Check;
use crate::{ExperimentError, Result};
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::stats::LatencySummary;
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::synthetic::{AddressPattern, SyntheticConfig};
use ssdlab_workload::{Workload, WorkloadConfig};
use std::time::Instant;

/// MQSim's device (FAST 2018 Table 3; `fast18/backend-contention/ssdconfig-backend-contention.xml`
/// of github.com/CMU-SAFARI/MQSim), scaled as the module says.
pub const MQSIM_TOML: &str = r#"
seed = 1
mode = "timed"

[device]
cell_mode = "mlc"
over_provisioning_ratio = 0.07
channel_rate_mb_per_s = 333
command_overhead_ns = 1000

[device.host_interface]
pcie_generation = 3
lanes = 4
max_commands_in_flight = 1024
arbitration = { policy = "round-robin" }

[device.geometry]
channels = 8
chips_per_channel = 2
dies_per_chip = 2
planes_per_die = 2
blocks_per_plane = 128
pages_per_block = 256
page_size_bytes = 8192
mapping_unit_bytes = 4096

[device.timing.mlc]
read_ns = 75000
program_ns = 750000
erase_loop_ns = 3800000
erase_loops = [[0, 1]]
endurance_pe_cycles = 10000

[ftl]
gc = { policy = "greedy" }
stripe_order = "CWDP"

[precondition]
enabled = true
sequential_fill = true
random_overwrite_capacity_multiple = 0.0
"#;

/// The victim's queue depth (MQSim's flow-1: `Average_No_of_Reqs_in_Queue` 2).
pub const VICTIM_QD: u32 = 2;
/// The other flow's depths (MQSim's flow-2: 2 … 256; 1 added below the victim's).
pub const OTHER_QDS: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];
/// Request size (MQSim: 8 sectors).
pub const REQUEST_BYTES: u64 = 4096;
/// Simulated time of each run at scale 1 (divided by the scale).
pub const DURATION_NS: u64 = 400_000_000;
/// MQSim's victim slowdown at the deepest point (Fig. 8).
pub const PAPER_VICTIM_SLOWDOWN: f64 = 14.4;
/// The checks: the victim at least this slowed at the deepest point, the other at most
/// [`MAX_OTHER_SLOWDOWN`] everywhere.
pub const MIN_VICTIM_SLOWDOWN: f64 = 4.0;
pub const MAX_OTHER_SLOWDOWN: f64 = 1.2;

/// Parameters of the flow study.
#[derive(Clone, Debug)]
pub struct QdParams {
    pub base: Config,
    pub duration_ns: u64,
    pub victim_qd: u32,
    pub other_qds: Vec<u32>,
}

impl QdParams {
    /// The study at `scale` (a power of two: it divides the duration and the 8 channels,
    /// down to one), with the mq study's seed.
    pub fn paper(scale: u32, seed: u64) -> Result<QdParams> {
        let mut base = Config::from_toml_str(MQSIM_TOML, "the MQSim device (mq::qd)")?;
        base.seed = seed;
        let g = &mut base.device.geometry;
        g.channels = (g.channels / scale.max(1)).max(1);
        base.validate()?;
        Ok(QdParams {
            base,
            duration_ns: DURATION_NS / scale.max(1) as u64,
            victim_qd: VICTIM_QD,
            other_qds: OTHER_QDS.to_vec(),
        })
    }

    fn flow(&self, qd: u32) -> SyntheticConfig {
        SyntheticConfig {
            read_percent: 100.0,
            block_size_bytes: REQUEST_BYTES,
            queue_depth: qd,
            pattern: AddressPattern::Uniform,
            requests: 0,
            total_bytes: 0,
            duration_ns: self.duration_ns,
            ..Default::default()
        }
    }

    /// The flows `[victim at victim_qd]`, `[other at qd]` or both, each its own seed.
    fn workload(&self, sim: &Simulation, victim: bool, other: Option<u32>) -> Result<Workload> {
        let mut out = Workload {
            flows: Vec::new(),
            duration_ns: Some(self.duration_ns),
            stats: Default::default(),
        };
        let mut add = |name: &str, qd: u32, k: u64| -> Result<()> {
            let mut ctx = sim.workload_context();
            ctx.seed = self.base.seed.wrapping_add(k);
            let w = WorkloadConfig::Synthetic(self.flow(qd))
                .build(&ctx)
                .map_err(|e| ExperimentError::invalid(format!("qd.{name}"), e.to_string()))?;
            for mut f in w.flows {
                f.name = name.to_string();
                out.flows.push(f);
            }
            Ok(())
        };
        if victim {
            add("victim", self.victim_qd, 0)?;
        }
        if let Some(q) = other {
            add("other", q, 1)?;
        }
        Ok(out)
    }
}

/// One point of the sweep.
#[derive(Clone, Debug, Serialize)]
pub struct QdPoint {
    pub other_qd: u32,
    pub victim_alone_mean_ns: f64,
    pub victim_shared_mean_ns: f64,
    pub other_alone_mean_ns: f64,
    pub other_shared_mean_ns: f64,
    pub victim_requests: u64,
    pub other_requests: u64,
    pub victim_slowdown: f64,
    pub other_slowdown: f64,
    pub fairness: f64,
}

/// The flow study's report.
#[derive(Clone, Debug, Serialize)]
pub struct QdReport {
    pub victim_qd: u32,
    pub duration_ns: u64,
    pub dies: u32,
    pub points: Vec<QdPoint>,
    pub fill_wall_s: f64,
    pub wall_s: f64,
}

/// MQSim's figures from the mean response times: (victim slowdown, other slowdown,
/// fairness = min / max of the two 1 / slowdown).
pub fn slowdowns(
    victim_alone: f64,
    victim_shared: f64,
    other_alone: f64,
    other_shared: f64,
) -> (f64, f64, f64) {
    let sv = victim_shared / victim_alone;
    let so = other_shared / other_alone;
    let (a, b) = (1.0 / sv, 1.0 / so);
    (sv, so, a.min(b) / a.max(b))
}

/// One run: the victim, the other at `other`, or both; their read latencies.
fn measure(
    p: &QdParams,
    state: &Simulation,
    victim: bool,
    other: Option<u32>,
) -> Result<Vec<LatencySummary>> {
    let mut sim = Simulation::from_state(p.base.clone(), state)?;
    let w = p.workload(&sim, victim, other)?;
    let r = sim.run_workload_with(w, &mut NoProgress)?;
    let lat = r
        .latency_ns
        .as_ref()
        .ok_or_else(|| ExperimentError::invalid("mode", "the flow study needs the timed mode"))?;
    Ok(lat
        .per_flow
        .iter()
        .map(|f| f.latency.read.clone())
        .collect())
}

/// The sweep: a filled device, then every run from it in parallel on the caller's pool.
pub fn run(p: &QdParams) -> Result<QdReport> {
    let t0 = Instant::now();
    let mut filled = Simulation::new(p.base.clone())?;
    filled.precondition(&mut NoProgress)?;
    let fill_wall_s = t0.elapsed().as_secs_f64();
    let mut jobs: Vec<(bool, Option<u32>)> = vec![(true, None)];
    for &q in &p.other_qds {
        jobs.push((false, Some(q)));
        jobs.push((true, Some(q)));
    }
    let out: Vec<Vec<LatencySummary>> = jobs
        .par_iter()
        .map(|&(v, o)| measure(p, &filled, v, o))
        .collect::<Result<_>>()?;
    let mean = |k: usize, i: usize| out[k].get(i).map_or(0.0, |l| l.mean);
    let victim_alone = mean(0, 0);
    let points = p
        .other_qds
        .iter()
        .enumerate()
        .map(|(i, &q)| {
            let (alone, shared) = (1 + 2 * i, 2 + 2 * i);
            let (oa, vs, os) = (mean(alone, 0), mean(shared, 0), mean(shared, 1));
            let (sv, so, fair) = slowdowns(victim_alone, vs, oa, os);
            QdPoint {
                other_qd: q,
                victim_alone_mean_ns: victim_alone,
                victim_shared_mean_ns: vs,
                other_alone_mean_ns: oa,
                other_shared_mean_ns: os,
                victim_requests: out[shared].first().map_or(0, |l| l.count),
                other_requests: out[shared].get(1).map_or(0, |l| l.count),
                victim_slowdown: sv,
                other_slowdown: so,
                fairness: fair,
            }
        })
        .collect();
    let g = &p.base.device.geometry;
    Ok(QdReport {
        victim_qd: p.victim_qd,
        duration_ns: p.duration_ns,
        dies: g.channels * g.chips_per_channel * g.dies_per_chip,
        points,
        fill_wall_s,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

pub const CSV_HEADER: &str = "other_qd,victim_slowdown,other_slowdown,fairness,victim_qd,victim_alone_mean_ns,victim_shared_mean_ns,other_alone_mean_ns,other_shared_mean_ns,victim_requests,other_requests";

impl QdReport {
    /// `mq-qd.csv`.
    pub fn csv(&self) -> String {
        let mut s = String::from(CSV_HEADER);
        s.push('\n');
        for x in &self.points {
            s += &format!(
                "{},{:.4},{:.4},{:.4},{},{:.1},{:.1},{:.1},{:.1},{},{}\n",
                x.other_qd,
                x.victim_slowdown,
                x.other_slowdown,
                x.fairness,
                self.victim_qd,
                x.victim_alone_mean_ns,
                x.victim_shared_mean_ns,
                x.other_alone_mean_ns,
                x.other_shared_mean_ns,
                x.victim_requests,
                x.other_requests
            );
        }
        s
    }

    /// The report's section (a `###` table).
    pub fn markdown(&self) -> String {
        let mut s = format!(
            "\n### Flow study (MQSim Fig. 8): a victim at QD {} against a flow at QD 1 … 256\n\n",
            self.victim_qd
        );
        s += &format!(
            "Both flows 4 KiB uniform random reads on MQSim's device ({} dies, MLC tR 75 µs), {:.0} ms each run; slowdown = mean response time together / alone at the same depth; fairness = min / max of the two flows' 1 / slowdown. MQSim: the victim {PAPER_VICTIM_SLOWDOWN}× at QD 256.\n\n",
            self.dies,
            self.duration_ns as f64 / 1e6
        );
        s += "| other QD | victim mean µs (alone {}) | other mean µs alone | other mean µs together | victim slowdown | other slowdown | fairness | victim requests |\n";
        s = s.replacen(
            "{}",
            &format!(
                "{:.1}",
                self.points.first().map_or(0.0, |x| x.victim_alone_mean_ns) / 1e3
            ),
            1,
        );
        s += "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
        for x in &self.points {
            s += &format!(
                "| {} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} | {} |\n",
                x.other_qd,
                x.victim_shared_mean_ns / 1e3,
                x.other_alone_mean_ns / 1e3,
                x.other_shared_mean_ns / 1e3,
                x.victim_slowdown,
                x.other_slowdown,
                x.fairness,
                x.victim_requests
            );
        }
        s
    }

    /// The flow study's checks (group `flow study`).
    pub fn checks(&self) -> Vec<Check> {
        checks(&self.points, self.victim_qd)
    }
}

/// The checks on the sweep's points: the victim's slowdown rises with the other's depth
/// past its own (each deeper point at least as slowed, within 2 %) and reaches
/// [`MIN_VICTIM_SLOWDOWN`] at the deepest (MQSim 14.4×); the other flow at most
/// [`MAX_OTHER_SLOWDOWN`] everywhere.
pub fn checks(points: &[QdPoint], victim_qd: u32) -> Vec<Check> {
    let group = "flow study";
    let mut out = Vec::new();
    let past: Vec<&QdPoint> = points.iter().filter(|x| x.other_qd >= victim_qd).collect();
    let claim =
        format!("the victim's slowdown rises with the other's depth past its own (QD {victim_qd})");
    if past.len() < 2 {
        out.push(Check::missing(group, claim));
    } else {
        let bad: Vec<String> = past
            .windows(2)
            .filter(|w| w[1].victim_slowdown < w[0].victim_slowdown * 0.98)
            .map(|w| {
                format!(
                    "QD {} {:.2}× after QD {} {:.2}×",
                    w[1].other_qd, w[1].victim_slowdown, w[0].other_qd, w[0].victim_slowdown
                )
            })
            .collect();
        let seq = past
            .iter()
            .map(|x| format!("{:.2}", x.victim_slowdown))
            .collect::<Vec<_>>()
            .join(" → ");
        let ok = bad.is_empty();
        out.push(Check::new(
            group,
            claim,
            Some(ok),
            if ok {
                format!("{seq}×")
            } else {
                format!("{seq}×; falls: {}", bad.join(", "))
            },
        ));
    }
    let claim = format!(
        "the victim at least {MIN_VICTIM_SLOWDOWN}× slowed at the deepest point (MQSim {PAPER_VICTIM_SLOWDOWN}× at QD 256)"
    );
    match points.iter().max_by_key(|x| x.other_qd) {
        Some(x) => {
            let ok = x.victim_slowdown >= MIN_VICTIM_SLOWDOWN;
            let mut d = format!("{:.2}× at QD {}", x.victim_slowdown, x.other_qd);
            if !ok {
                d += "; the dies serve the victim's reads without much wait behind the other's: more dies per outstanding request than MQSim's";
            }
            out.push(Check::new(group, claim, Some(ok), d));
        }
        None => out.push(Check::missing(group, claim)),
    }
    let claim = format!("the other flow at most {MAX_OTHER_SLOWDOWN}× slowed at every depth");
    match points
        .iter()
        .max_by(|a, b| a.other_slowdown.total_cmp(&b.other_slowdown))
    {
        Some(x) => {
            let ok = x.other_slowdown <= MAX_OTHER_SLOWDOWN;
            let mut d = format!("largest {:.3}× at QD {}", x.other_slowdown, x.other_qd);
            if !ok {
                d +=
                    "; the victim's few requests slowed the deep flow: they are not few against it";
            }
            out.push(Check::new(group, claim, Some(ok), d));
        }
        None => out.push(Check::missing(group, claim)),
    }
    out
}

/// `mq-qd.svg`: both flows' slowdown (left) and the fairness (right) against the other's
/// depth (log scale).
pub fn plot(r: &QdReport, svg: &mut String) -> crate::plot::PlotResult {
    use crate::plot::COLORS;
    use plotters::prelude::*;
    let root = SVGBackend::with_string(svg, (1200, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(600);
    let x_hi = r.points.iter().map(|x| x.other_qd).max().unwrap_or(256) as f64 * 1.5;
    let y_hi = r
        .points
        .iter()
        .flat_map(|x| [x.victim_slowdown, x.other_slowdown])
        .fold(1.0f64, f64::max)
        * 1.15;
    let mut c = ChartBuilder::on(&left)
        .caption(
            format!("slowdown (victim at QD {})", r.victim_qd),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((0.7f64..x_hi).log_scale(), 0f64..y_hi)?;
    c.configure_mesh()
        .x_desc("other flow's queue depth (log)")
        .y_desc("mean response time together / alone")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    type Figure = fn(&QdPoint) -> f64;
    let series: [(&str, Figure); 2] = [
        ("victim", |x| x.victim_slowdown),
        ("other", |x| x.other_slowdown),
    ];
    for (k, (name, f)) in series.iter().enumerate() {
        let color = COLORS[(k + 1) % COLORS.len()];
        let pts: Vec<(f64, f64)> = r.points.iter().map(|x| (x.other_qd as f64, f(x))).collect();
        c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(*name)
            .legend(move |(a, b)| {
                PathElement::new(vec![(a, b), (a + 20, b)], color.stroke_width(2))
            });
        c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    let mut c = ChartBuilder::on(&right)
        .caption("fairness (min / max of 1 / slowdown)", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((0.7f64..x_hi).log_scale(), 0f64..1.05)?;
    c.configure_mesh()
        .x_desc("other flow's queue depth (log)")
        .y_desc("fairness")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    let pts: Vec<(f64, f64)> = r
        .points
        .iter()
        .map(|x| (x.other_qd as f64, x.fairness))
        .collect();
    c.draw_series(LineSeries::new(pts.clone(), COLORS[0].stroke_width(2)))?;
    c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, COLORS[0].filled())))?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(q: u32, sv: f64, so: f64) -> QdPoint {
        QdPoint {
            other_qd: q,
            victim_alone_mean_ns: 100.0,
            victim_shared_mean_ns: 100.0 * sv,
            other_alone_mean_ns: 100.0,
            other_shared_mean_ns: 100.0 * so,
            victim_requests: 1000,
            other_requests: 1000,
            victim_slowdown: sv,
            other_slowdown: so,
            fairness: sv.min(so) / sv.max(so),
        }
    }

    /// MQSim's arithmetic on a hand-checked case: the victim 100 µs alone, 500 µs
    /// together (5×); the other 200 µs alone, 220 µs together (1.1×); fairness =
    /// min(1/5, 1/1.1) / max(…) = 0.2 / 0.909… = 0.22.
    #[test]
    fn slowdown_and_fairness_arithmetic() {
        let (sv, so, f) = slowdowns(100.0, 500.0, 200.0, 220.0);
        assert!((sv - 5.0).abs() < 1e-12);
        assert!((so - 1.1).abs() < 1e-12);
        assert!((f - 0.22).abs() < 1e-12, "{f}");
        // Symmetric: which flow is slowed more does not matter.
        let (_, _, g) = slowdowns(200.0, 220.0, 100.0, 500.0);
        assert!((f - g).abs() < 1e-12);
    }

    /// The checks hold on a rising sweep and fail on perturbed ones: a dip past the
    /// victim's depth, a deepest point under 4×, the other flow slowed 1.3×.
    #[test]
    fn checks_fail_on_perturbed_sweeps() {
        let good: Vec<QdPoint> = [(1, 1.1), (2, 1.3), (4, 1.8), (8, 3.0), (16, 5.5)]
            .iter()
            .map(|&(q, s)| point(q, s, 1.02))
            .collect();
        let holds =
            |p: &[QdPoint]| -> Vec<Option<bool>> { checks(p, 2).iter().map(|c| c.holds).collect() };
        assert_eq!(holds(&good), vec![Some(true); 3]);
        let mut dip = good.clone();
        dip[3].victim_slowdown = 1.5;
        assert_eq!(holds(&dip)[0], Some(false));
        // A dip below the victim's depth does not count.
        let mut low = good.clone();
        low[0].victim_slowdown = 2.0;
        assert_eq!(holds(&low)[0], Some(true));
        let mut weak = good.clone();
        weak[4].victim_slowdown = 3.9;
        assert_eq!(holds(&weak), vec![Some(true), Some(false), Some(true)]);
        let mut hurt = good.clone();
        hurt[2].other_slowdown = 1.3;
        assert_eq!(holds(&hurt)[2], Some(false));
        assert_eq!(holds(&[])[0], None);
    }
}
