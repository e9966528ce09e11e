//! Spec 04: demand-based FTL with a partitioned mapping cache (`ssdlab reproduce dftl`,
//! docs/dftl.md). Every mapping variant runs uniform random 4 KiB reads, writes and a
//! 70/30 mix on the 64 GiB TLC device of `configs/dftl-64g.toml`, once right after a
//! sequential fill (free space left: no GC) and once after one capacity of random
//! overwrites (GC in effect). Each workload starts from the same forked device state.

use crate::experiment::{Check, Common, DocTable, Experiment, PlotResult, Say, Shape};
use crate::{ExperimentError, Result};
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::flash::{CellState, OpKind};
use ssdlab_core::stats::hdr;
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::WorkloadConfig;
use std::fmt::Write as _;
use std::time::Instant;

pub const DFTL_TOML: &str = include_str!("../../../configs/dftl-64g.toml");

/// The variants, in the paper's order.
pub const VARIANTS: [&str; 4] = [
    "page-map",
    "dftl",
    "dftl-partitioned",
    "dftl-partitioned-log",
];

/// The workloads: name and read share (percent).
pub const WORKLOADS: [(&str, f64); 3] = [("read", 100.0), ("write", 0.0), ("mixed", 70.0)];

#[derive(Clone, Debug)]
pub struct DftlParams {
    pub variants: Vec<String>,
    /// Measured requests per run.
    pub requests: u64,
    /// Divide the device (its 32 chips, so the 64 GiB data set) by this power of two
    /// ≤ 32, for quick runs; the per-plane layout and the CMT share stay.
    pub scale: u32,
    /// CMT size as a share of the full table (the paper: 0.25; partitioned variants split
    /// it 50:50).
    pub cmt_share: f64,
    pub seed: Option<u64>,
    /// `key=value` overrides applied to every run's configuration (`--set`).
    pub sets: Vec<String>,
    /// The NAND timing: the preset's or the paper's (`--timing paper`).
    pub timing: DftlTiming,
}

/// Which NAND timing the runs use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DftlTiming {
    /// `configs/dftl-64g.toml`: tR 50 µs, tPROG 600 µs, erase 11 ms (3D TLC).
    #[default]
    Preset,
    /// The paper's board: its Fig. 1 puts a read that misses the CMT (a translation read
    /// and a data read) at 0.8 ms, so tR = [`PAPER_READ_NS`]; the paper gives no program
    /// or erase time (a read behind a write-back takes "0.8–10 ms"), so they stay.
    Paper,
}

/// tR of the paper's board (Fig. 1: two NAND reads in 0.8 ms).
pub const PAPER_READ_NS: u64 = 400_000;

impl DftlTiming {
    /// The `--set` overrides this timing applies before the user's own.
    pub fn sets(self) -> Vec<String> {
        match self {
            DftlTiming::Preset => Vec::new(),
            DftlTiming::Paper => vec![format!("device.timing.tlc.read_ns={PAPER_READ_NS}")],
        }
    }
}

impl DftlParams {
    pub fn paper() -> DftlParams {
        DftlParams {
            variants: VARIANTS.iter().map(|v| v.to_string()).collect(),
            requests: 500_000,
            scale: 1,
            cmt_share: 0.25,
            seed: None,
            sets: Vec::new(),
            timing: DftlTiming::Preset,
        }
    }

    /// Planes of the (scaled) device.
    pub fn planes(&self) -> u32 {
        64 / self.scale.max(1)
    }

    /// Every variant's configuration is valid (scale, requests, names and overrides): call
    /// before announcing the runs; [`run`] calls it before any long work.
    pub fn check(&self) -> Result<()> {
        for v in &self.variants {
            self.config(v)?;
        }
        Ok(())
    }

    /// The configuration of `variant` (from the preset's text, so the mapping is named as a
    /// user names it).
    pub fn config(&self, variant: &str) -> Result<Config> {
        if !(self.scale.is_power_of_two() && self.scale <= 32) {
            return Err(ExperimentError::invalid(
                "scale",
                format!(
                    "{}: a power of two up to 32 (the device's 32 chips / scale)",
                    self.scale
                ),
            ));
        }
        if self.requests == 0 {
            return Err(ExperimentError::invalid("requests", "must be >= 1"));
        }
        let mapping = match variant {
            "page-map" => "{ policy = \"page-map\" }".to_string(),
            v => format!("{{ policy = \"{v}\", cmt_share = {} }}", self.cmt_share),
        };
        let chips = 32 / self.scale;
        let channels = chips.min(8);
        let mut text = String::new();
        for line in DFTL_TOML.lines() {
            let key = line.split('=').next().unwrap_or("").trim();
            let l = match key {
                "mapping" => format!("mapping = {mapping}"),
                "channels" => format!("channels = {channels}"),
                "chips_per_channel" => format!("chips_per_channel = {}", chips / channels),
                _ => line.to_string(),
            };
            text.push_str(&l);
            text.push('\n');
        }
        let mut sets = self.timing.sets();
        sets.extend(self.sets.iter().cloned());
        let text = ssdlab_core::config::apply_overrides(&text, &sets)?;
        let mut c = Config::from_toml_str(&text, &format!("configs/dftl-64g.toml ({variant})"))
            .map_err(|e| ExperimentError::invalid("variant", format!("{variant}: {e}")))?;
        if let Some(s) = self.seed {
            c.seed = s;
        }
        c.validate()?;
        Ok(c)
    }
}

/// One variant on one workload in one device state.
#[derive(Clone, Debug, Serialize)]
pub struct DftlRow {
    pub variant: String,
    pub workload: &'static str,
    /// Run after one capacity of random overwrites (GC in effect) rather than right after
    /// the sequential fill.
    pub gc: bool,
    pub iops: f64,
    pub mbps: f64,
    /// Write amplification with translation writes (`null` without host writes).
    pub waf: Option<f64>,
    pub waf_without_translation: Option<f64>,
    pub read_p50_ns: u64,
    pub read_p99_ns: u64,
    pub read_p99_99_ns: u64,
    /// Mean and longest read latency: with the queue depth and IOPS, the mean checks
    /// Little's law; the max shows a read that waited far beyond the percentiles.
    pub read_mean_ns: f64,
    pub read_max_ns: u64,
    pub cmt_hit_ratio: Option<f64>,
    pub translation_reads: u64,
    pub translation_writes: u64,
    /// Translation programs on host reads' paths.
    pub read_path_programs: u64,
    /// Translation programs that carried GC's (and wear leveling's) moved mappings.
    pub relocation_programs: u64,
    pub max_nand_reads_per_host_read: Option<u32>,
    /// Data GC victims during the measured run.
    pub gc_victims: u64,
    pub sim_s: f64,
    pub wall_s: f64,
    /// Where the run's die time went, per host request.
    pub per_request: PerRequest,
    /// Read latency CCDF (ns, share above), for the plot.
    #[serde(skip)]
    pub read_ccdf: Vec<(u64, f64)>,
    /// Warnings of the point's results audit (shares a reader of its figures must know).
    pub audit_warnings: Vec<crate::AuditWarning>,
}

/// NAND operations and their array time per host request of a measured run, by cause:
/// data (the host's own reads and programs), translation (CMT loads, write-backs, merges
/// and the translation region's GC copies) and GC (data GC copies; the erases of both
/// regions).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PerRequest {
    pub data_reads: f64,
    pub translation_reads: f64,
    pub gc_reads: f64,
    pub data_programs: f64,
    pub translation_programs: f64,
    pub gc_programs: f64,
    pub erases: f64,
    /// Array time (tR, tPROG, erase; no transfers) of those operations, µs per request.
    pub data_us: f64,
    pub translation_us: f64,
    pub gc_us: f64,
    /// Die busy time per request (µs): the dies' mean utilization × dies × run time /
    /// requests; below the array time where multi-plane operations overlap planes.
    pub die_busy_us: f64,
    pub die_utilization: f64,
}

impl PerRequest {
    pub fn array_us(&self) -> f64 {
        self.data_us + self.translation_us + self.gc_us
    }

    fn of(c: &Config, r: &ssdlab_core::Results) -> PerRequest {
        let n = r.host.requests.max(1) as f64;
        let t = c.device.timing_model();
        let mode = c.device.cell_mode;
        let us = |kind| t.array_ns(kind, CellState::fresh(mode)) as f64 / 1e3;
        let (tr, tp, te) = (us(OpKind::Read), us(OpKind::Program), us(OpKind::Erase));
        let (rd, pg) = (&r.nand.reads, &r.nand.programs);
        let per = |x: u64| x as f64 / n;
        // The translation region's GC copies are GC-caused NAND operations; count them
        // as translation work (one read and one program per whole page copied).
        let tgc = r.mapping.as_ref().map_or(0, |m| m.translation_gc_programs);
        let data_reads = per(rd.host);
        let translation_reads = per(rd.mapping + tgc);
        let gc_reads = per(rd.total.saturating_sub(rd.host + rd.mapping + tgc));
        let data_programs = per(pg.host);
        let translation_programs = per(pg.mapping + tgc);
        let gc_programs = per(pg.total.saturating_sub(pg.host + pg.mapping + tgc));
        let erases = per(r.nand.erases.total);
        let g = &c.device.geometry;
        let dies = (g.channels * g.chips_per_channel * g.dies_per_chip) as f64;
        let util = r.engine.as_ref().map_or(0.0, |e| e.die_utilization_mean);
        PerRequest {
            data_reads,
            translation_reads,
            gc_reads,
            data_programs,
            translation_programs,
            gc_programs,
            erases,
            data_us: data_reads * tr + data_programs * tp,
            translation_us: translation_reads * tr + translation_programs * tp,
            gc_us: gc_reads * tr + gc_programs * tp + erases * te,
            die_busy_us: util * dies * r.host.sim_time_ns as f64 / 1e3 / n,
            die_utilization: util,
        }
    }
}

/// Run `variant` on every workload in both device states; rows in (gc, workload) order.
pub fn run_variant(p: &DftlParams, variant: &str) -> Result<Vec<DftlRow>> {
    let mut sim = Simulation::new(p.config(variant)?)?;
    sim.config.precondition.random_overwrite_capacity_multiple = 0.0;
    sim.precondition(&mut NoProgress)?;
    let mut rows = Vec::new();
    for gc in [false, true] {
        if gc {
            sim.config.precondition.sequential_fill = false;
            sim.config.precondition.random_overwrite_capacity_multiple = 1.0;
            sim.precondition(&mut NoProgress)?;
        }
        for (name, read_percent) in WORKLOADS {
            let mut s = sim.clone();
            rows.push(measure(&mut s, p, variant, name, read_percent, gc)?);
        }
    }
    Ok(rows)
}

fn measure(
    sim: &mut Simulation,
    p: &DftlParams,
    variant: &str,
    workload: &'static str,
    read_percent: f64,
    gc: bool,
) -> Result<DftlRow> {
    let t = Instant::now();
    if let WorkloadConfig::Synthetic(w) = &mut sim.config.workload {
        w.read_percent = read_percent;
        w.requests = p.requests;
    }
    let r = sim.run_workload(&mut NoProgress)?;
    let lat = r.latency_ns.as_ref();
    let read = lat.map(|l| &l.read).filter(|l| l.count > 0);
    let m = r.mapping.as_ref();
    let writes = r.host.counters.write_units > 0;
    Ok(DftlRow {
        variant: variant.to_string(),
        workload,
        gc,
        iops: r.host.iops,
        mbps: r.host.mb_per_s,
        waf: writes.then_some(r.waf),
        waf_without_translation: writes.then(|| m.map_or(r.waf, |m| m.waf_without_translation)),
        read_p50_ns: read.map_or(0, |l| l.p50),
        read_p99_ns: read.map_or(0, |l| l.p99),
        read_p99_99_ns: read.map_or(0, |l| l.p99_99),
        read_mean_ns: read.map_or(0.0, |l| l.mean),
        read_max_ns: read.map_or(0, |l| l.max),
        cmt_hit_ratio: m.and_then(|m| m.cmt_hit_ratio),
        translation_reads: m.map_or(0, |m| m.translation_reads.total),
        translation_writes: m.map_or(0, |m| m.translation_programs.total),
        read_path_programs: m.map_or(0, |m| m.translation_programs.host_read),
        relocation_programs: m.map_or(0, |m| m.translation_programs.relocation),
        max_nand_reads_per_host_read: match m {
            Some(m) => m.max_nand_reads_per_host_read,
            // page-map: one read per data page (4 KiB reads: 1).
            None => read.map(|_| 1),
        },
        gc_victims: r.gc.invocations,
        audit_warnings: crate::AuditWarning::of(
            &r,
            format!("{variant} {workload}{}", if gc { " (GC)" } else { "" }),
        ),
        per_request: PerRequest::of(&sim.config, &r),
        sim_s: r.host.sim_time_ns as f64 / 1e9,
        wall_s: t.elapsed().as_secs_f64(),
        read_ccdf: sim
            .last_latency
            .as_ref()
            .map_or_else(Vec::new, |l| ccdf(&l.read)),
    })
}

fn ccdf(h: &hdr::Histogram<u64>) -> Vec<(u64, f64)> {
    crate::ssr::ccdf(h)
}

#[derive(Clone, Debug, Serialize)]
pub struct DftlReport {
    pub timing: DftlTiming,
    /// tR and tPROG of the runs (µs), after `timing` and `--set`.
    pub read_us: f64,
    pub program_us: f64,
    pub requests: u64,
    pub planes: u32,
    pub cmt_share: f64,
    pub rows: Vec<DftlRow>,
    pub wall_s: f64,
}

/// Every variant in parallel (rayon's pool); rows in variant order.
pub fn run(p: &DftlParams, on_variant: &(dyn Fn(&[DftlRow]) + Sync)) -> Result<DftlReport> {
    let t = Instant::now();
    p.check()?;
    let rows = p
        .variants
        .par_iter()
        .map(|v| {
            let rows = run_variant(p, v)?;
            on_variant(&rows);
            Ok(rows)
        })
        .collect::<Result<Vec<_>>>()?;
    let c = p.config(p.variants.first().map_or("page-map", |v| v.as_str()))?;
    let tm = c.device.timing_model();
    let fresh = CellState::fresh(c.device.cell_mode);
    Ok(DftlReport {
        timing: p.timing,
        read_us: tm.array_ns(OpKind::Read, fresh) as f64 / 1e3,
        program_us: tm.array_ns(OpKind::Program, fresh) as f64 / 1e3,
        requests: p.requests,
        planes: p.planes(),
        cmt_share: p.cmt_share,
        rows: rows.into_iter().flatten().collect(),
        wall_s: t.elapsed().as_secs_f64(),
    })
}

pub const CSV_HEADER: &str = "variant,workload,gc,iops,mbps,waf,read_p50_ns,read_p99_ns,read_p99_99_ns,cmt_hit_ratio,translation_reads,translation_writes,max_nand_reads_per_host_read,read_mean_ns,read_max_ns";

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or(String::new(), |x| x.to_string())
}

impl DftlReport {
    pub fn row(&self, variant: &str, workload: &str, gc: bool) -> Option<&DftlRow> {
        self.rows
            .iter()
            .find(|r| r.variant == variant && r.workload == workload && r.gc == gc)
    }

    pub fn csv(&self) -> String {
        let mut s = String::from(CSV_HEADER);
        s.push('\n');
        for r in &self.rows {
            s += &format!(
                "{},{},{},{:.1},{:.2},{},{},{},{},{},{},{},{},{:.0},{}\n",
                r.variant,
                r.workload,
                if r.gc { "on" } else { "off" },
                r.iops,
                r.mbps,
                opt(r.waf.map(|w| format!("{w:.4}"))),
                r.read_p50_ns,
                r.read_p99_ns,
                r.read_p99_99_ns,
                opt(r.cmt_hit_ratio.map(|h| format!("{h:.4}"))),
                r.translation_reads,
                r.translation_writes,
                opt(r.max_nand_reads_per_host_read),
                r.read_mean_ns,
                r.read_max_ns,
            );
        }
        s
    }

    /// One table per device state.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        for gc in [false, true] {
            s += &format!(
                "\n### {}\n\n",
                if gc {
                    "GC in effect (after one capacity of random overwrites)"
                } else {
                    "No GC (right after the sequential fill)"
                }
            );
            s += "| variant | workload | IOPS | MB/s | × dftl | WAF (with translation) | WAF data only | read mean µs | p50 µs | p99 µs | p99.99 µs | max µs | CMT hit | translation reads | translation writes | of which on reads' path | max NAND reads per read | GC victims |\n";
            s +=
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
            for (w, _) in WORKLOADS {
                for r in self.rows.iter().filter(|r| r.gc == gc && r.workload == w) {
                    let x = self
                        .row("dftl", w, gc)
                        .map_or(f64::NAN, |d| r.iops / d.iops);
                    let f = |v: Option<f64>, d: usize| {
                        v.map_or("n/a".to_string(), |v| format!("{v:.d$}"))
                    };
                    s += &format!(
                        "| {} | {} | {:.0} | {:.1} | {:.2} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} | {} | {} | {} | {} |\n",
                        r.variant,
                        r.workload,
                        r.iops,
                        r.mbps,
                        x,
                        f(r.waf, 3),
                        f(r.waf_without_translation, 3),
                        r.read_mean_ns / 1e3,
                        r.read_p50_ns as f64 / 1e3,
                        r.read_p99_ns as f64 / 1e3,
                        r.read_p99_99_ns as f64 / 1e3,
                        r.read_max_ns as f64 / 1e3,
                        f(r.cmt_hit_ratio, 3),
                        r.translation_reads,
                        r.translation_writes,
                        r.read_path_programs,
                        opt(r.max_nand_reads_per_host_read),
                        r.gc_victims,
                    );
                }
            }
        }
        s
    }

    /// Where the time of a mixed-workload request goes, per variant and device state:
    /// NAND operations per request by cause, their array time, the die time.
    pub fn breakdown_markdown(&self) -> String {
        let mut s = String::from(
            "\n### Where the time goes (mixed 70/30, per host request)\n\n\
             NAND operations per host request by cause (data: the host's own; translation: CMT loads, write-backs, merges and the translation region's GC copies; GC: data GC copies; erases: both regions), their array time (tR, tPROG, erase; no transfers) and the dies' busy time (mean utilization × dies × run time / requests). When the dies are the bottleneck, IOPS ∝ 1 / die time.\n\n\
             | device state | variant | IOPS | × dftl | data reads | translation reads | GC reads | data programs | translation programs | GC programs | erases ‰ | data µs | translation µs | GC µs | array µs | die busy µs | die utilization |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for gc in [false, true] {
            for r in self
                .rows
                .iter()
                .filter(|r| r.gc == gc && r.workload == "mixed")
            {
                let b = &r.per_request;
                let x = self
                    .row("dftl", "mixed", gc)
                    .map_or(f64::NAN, |d| r.iops / d.iops);
                s += &format!(
                    "| {} | {} | {:.0} | {:.2} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2} |\n",
                    if gc { "GC" } else { "no GC" },
                    r.variant,
                    r.iops,
                    x,
                    b.data_reads,
                    b.translation_reads,
                    b.gc_reads,
                    b.data_programs,
                    b.translation_programs,
                    b.gc_programs,
                    b.erases * 1e3,
                    b.data_us,
                    b.translation_us,
                    b.gc_us,
                    b.array_us(),
                    b.die_busy_us,
                    b.die_utilization,
                );
            }
        }
        s
    }

    /// The mixed ratio's tolerance: ±15 % at the preset's timing; ±25 % at the paper's
    /// (its timing is inferred from one latency of its Fig. 1).
    pub fn mixed_tolerance(&self) -> f64 {
        match self.timing {
            DftlTiming::Preset => 0.15,
            DftlTiming::Paper => 0.25,
        }
    }

    /// Why a log / dftl ratio is off, in one line: the array time per request of both
    /// variants and its translation share (IOPS ∝ 1 / die time when the dies are busy);
    /// `above`: the ratio is above the paper's.
    fn ratio_why(&self, d: &DftlRow, l: &DftlRow, above: bool) -> String {
        let (bd, bl) = (&d.per_request, &l.per_request);
        format!(
            "array µs per request dftl {:.0} ({:.0} translation: {:.2} programs × {:.0} µs{}, {:.2} reads × {:.0} µs) vs log {:.0} ({:.0} translation) = {:.2}×: the data and GC work both pay (log {:.0} µs) dilutes dftl's translation work {}",
            bd.array_us(),
            bd.translation_us,
            bd.translation_programs,
            self.program_us,
            if d.relocation_programs > 0 {
                format!(
                    ", {:.2} of them GC's relocation merges",
                    d.relocation_programs as f64 / self.requests.max(1) as f64
                )
            } else {
                String::new()
            },
            bd.translation_reads,
            self.read_us,
            bl.array_us(),
            bl.translation_us,
            bd.array_us() / bl.array_us().max(1e-9),
            bl.data_us + bl.gc_us,
            if above {
                "too little"
            } else {
                "too much"
            },
        )
    }

    /// The paper's expected shape, per device state (`no GC`, `GC`): each check, whether
    /// it holds (`None`: a variant was not run) and the numbers.
    pub fn checks(&self) -> Vec<Check> {
        let mut out = Vec::new();
        for gc in [false, true] {
            let get = |v: &str, w: &str| self.row(v, w, gc);
            let group = if gc { "GC" } else { "no GC" };
            let mut add =
                |name: &str, ok: Option<bool>, d: String| out.push(Check::new(group, name, ok, d));
            let iops = |v: &str, w: &str| get(v, w).map(|r| r.iops);
            // 1–2: the paper's ratios, within ±25 % (write) and ±15 % (mixed).
            for (w, paper, tol) in [
                ("write", 1.65, 0.25),
                ("mixed", 1.15, self.mixed_tolerance()),
            ] {
                match (get("dftl-partitioned-log", w), get("dftl", w)) {
                    (Some(l), Some(d)) => {
                        let x = l.iops / d.iops;
                        let ok = (x / paper - 1.0).abs() <= tol;
                        add(
                            &format!(
                                "{w}: log / dftl IOPS ≈ {paper} (within ±{:.0} %)",
                                tol * 100.0
                            ),
                            Some(ok),
                            if ok {
                                format!("{x:.2}×")
                            } else {
                                format!("{x:.2}×; why: {}", self.ratio_why(d, l, x > paper))
                            },
                        );
                    }
                    _ => add(&format!("{w}: log / dftl"), None, "not run".into()),
                }
            }
            // 3: random write ordering (2 % slack on the ≤).
            match (
                iops("dftl-partitioned", "write"),
                iops("dftl", "write"),
                iops("dftl-partitioned-log", "write"),
                iops("page-map", "write"),
            ) {
                (Some(p), Some(d), Some(l), Some(m)) => add(
                    "write IOPS: partitioned ≤ dftl < log ≤ page-map",
                    Some(p <= d * 1.02 && d < l && l <= m * 1.02),
                    format!("{p:.0} / {d:.0} / {l:.0} / {m:.0}"),
                ),
                _ => add("write ordering", None, "not run".into()),
            }
            // 4: WAF of log ≈ page-map (±10 %) and below both page-granularity DFTLs.
            let waf = |v: &str| get(v, "write").and_then(|r| r.waf);
            match (
                waf("dftl-partitioned-log"),
                waf("page-map"),
                waf("dftl"),
                waf("dftl-partitioned"),
            ) {
                (Some(l), Some(m), Some(d), Some(p)) => add(
                    "write WAF: log within 10 % of page-map, below dftl and partitioned",
                    Some((l / m - 1.0).abs() <= 0.10 && l < d && l < p),
                    format!("log {l:.3}, page-map {m:.3}, dftl {d:.3}, partitioned {p:.3}"),
                ),
                _ => add("write WAF", None, "not run".into()),
            }
            // 5: read latency on the mixed workload: page-map fastest; the partitioned
            // variants bounded at two NAND reads with no program on a read's path; dftl
            // with programs on reads' paths and a longer tail than the partitioned ones.
            let mixed = |v: &str| get(v, "mixed");
            match (
                mixed("page-map"),
                mixed("dftl"),
                mixed("dftl-partitioned"),
                mixed("dftl-partitioned-log"),
            ) {
                (Some(m), Some(d), Some(p), Some(l)) => {
                    add(
                        "mixed read latency: page-map fastest (p50 and p99)",
                        Some(
                            [d, p, l].iter().all(|x| {
                                m.read_p50_ns <= x.read_p50_ns && m.read_p99_ns <= x.read_p99_ns
                            }),
                        ),
                        format!(
                            "p50 µs {:.0} / {:.0} / {:.0} / {:.0}, p99 µs {:.0} / {:.0} / {:.0} / {:.0} (page-map / dftl / partitioned / log)",
                            m.read_p50_ns as f64 / 1e3, d.read_p50_ns as f64 / 1e3, p.read_p50_ns as f64 / 1e3, l.read_p50_ns as f64 / 1e3,
                            m.read_p99_ns as f64 / 1e3, d.read_p99_ns as f64 / 1e3, p.read_p99_ns as f64 / 1e3, l.read_p99_ns as f64 / 1e3
                        ),
                    );
                    add(
                        "partitioned variants: ≤ 2 NAND reads and no program on every read's path",
                        Some([p, l].iter().all(|x| {
                            x.max_nand_reads_per_host_read.unwrap_or(0) <= 2
                                && x.read_path_programs == 0
                        })),
                        format!(
                            "max reads {} / {}, read-path programs {} / {}",
                            opt(p.max_nand_reads_per_host_read),
                            opt(l.max_nand_reads_per_host_read),
                            p.read_path_programs,
                            l.read_path_programs
                        ),
                    );
                    add(
                        "dftl: programs on reads' paths and a longer p99.99 than both partitioned variants",
                        Some(
                            d.read_path_programs > 0
                                && d.read_p99_99_ns > p.read_p99_99_ns
                                && d.read_p99_99_ns > l.read_p99_99_ns,
                        ),
                        {
                            let mut x = format!(
                                "{} read-path programs; p99.99 µs {:.0} vs {:.0} / {:.0}",
                                d.read_path_programs,
                                d.read_p99_99_ns as f64 / 1e3,
                                p.read_p99_99_ns as f64 / 1e3,
                                l.read_p99_99_ns as f64 / 1e3
                            );
                            if d.read_p99_99_ns <= p.read_p99_99_ns {
                                x += &format!(
                                    "; why: partitioned's reads (no program on their paths) queue on the dies behind its write path's {:.2} translation programs per request and its translation region's erases",
                                    p.per_request.translation_programs
                                );
                            }
                            x
                        },
                    );
                }
                _ => add("mixed read latency", None, "not run".into()),
            }
        }
        out
    }
}

/// `ssdlab reproduce dftl`.
pub struct Dftl;

/// `reproduce dftl`'s own flags.
#[derive(clap::Args)]
pub struct DftlArgs {
    /// Shrink the device by this divisor (its 32 chips / SCALE: a power of two ≤ 32, the
    /// data set shrinks with it); 1 = the 64 GiB data set.
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// Measured requests per run (each variant × workload × GC state).
    #[arg(long, default_value_t = 500_000)]
    requests: u64,
    /// Mapping variants to run.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "page-map,dftl,dftl-partitioned,dftl-partitioned-log"
    )]
    variants: Vec<String>,
    /// CMT size as a share of the full mapping table (the paper: 0.25).
    #[arg(long, default_value_t = 0.25)]
    cmt_share: f64,
    /// NAND timing: `preset` (configs/dftl-64g.toml: tR 50 µs) or `paper` (the paper's
    /// board, tR 400 µs from its Fig. 1: a CMT miss's two reads in 0.8 ms; docs/dftl.md).
    #[arg(long, value_enum, default_value_t = TimingArg::Preset)]
    timing: TimingArg,
}

/// `--timing`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum TimingArg {
    Preset,
    Paper,
}

impl Experiment for Dftl {
    const NAME: &'static str = "dftl";
    const ABOUT: &'static str = "Spec 04: demand-based FTL (page-map, dftl, dftl-partitioned, dftl-partitioned-log) on a 64 GiB TLC device: random reads, writes and a 70/30 mix, without and with GC";
    const DOC_TABLES: &'static [DocTable] = &[DocTable {
        name: "dftl",
        doc: "docs/dftl.md",
        fast: false,
        from: "### ",
        to: None,
    }];
    const REQUESTS_FLAG: Option<&'static str> = Some("--requests");
    type Args = DftlArgs;
    type Params = DftlParams;
    type Report = DftlReport;

    fn params(a: &DftlArgs, common: &Common) -> Result<DftlParams> {
        let p = DftlParams {
            variants: a.variants.clone(),
            requests: a.requests,
            scale: a.scale,
            cmt_share: a.cmt_share,
            seed: common.seed,
            sets: common.sets.clone(),
            timing: match a.timing {
                TimingArg::Preset => DftlTiming::Preset,
                TimingArg::Paper => DftlTiming::Paper,
            },
        };
        p.check()?;
        Ok(p)
    }

    fn banner(p: &DftlParams, threads: usize) -> String {
        // Measured on this project's 2-core VM (24 runs of 500k requests in 26 s): about 5 s
        // of preconditioning and 0.25 s per 100k requests of each of the 6 runs, per variant,
        // at scale 1.
        let per_variant = (5.0 + 6.0 * 0.25 * p.requests as f64 / 1e5) / p.scale.max(1) as f64;
        let est = per_variant * p.variants.len() as f64 / threads as f64;
        format!(
            "reproduce dftl: {} variants x 3 workloads x 2 device states, {} requests each, on {threads} threads (about {est:.0} s) ...",
            p.variants.len(),
            p.requests,
        )
    }

    fn run(p: &DftlParams, say: &dyn Say) -> Result<DftlReport> {
        run(p, &|rows: &[DftlRow]| {
            for r in rows {
                say.audit(&r.audit_warnings);
            }
            if let Some(r) = rows.first() {
                let wall: f64 = rows.iter().map(|r| r.wall_s).sum();
                say.progress(&format!(
                    "  {:<22} done ({:.1} s measured runs)",
                    r.variant, wall
                ));
            }
        })
    }

    fn csv(r: &DftlReport) -> String {
        r.csv()
    }

    fn checks(r: &DftlReport) -> Vec<Check> {
        r.checks()
    }

    fn markdown(r: &DftlReport, p: &DftlParams, _wall_s: f64) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "# Demand-based FTL with a partitioned mapping cache (spec 04)\n"
        );
        let _ = writeln!(
            o,
            "* Device (configs/dftl-64g.toml): TLC, {} planes (2 per chip), 16 KiB pages of 4 KiB units, 384 pages per block; 192 data blocks per plane at OP 12.5 % = a {} GiB data set{}; a 6-block-per-plane translation region; tR {:.0} µs{}, tPROG {:.0} µs, erase 11 ms; timed mode.",
            r.planes,
            r.planes,
            if p.scale > 1 { " (scaled down from 64 GiB)" } else { "" },
            r.read_us,
            match r.timing {
                DftlTiming::Paper => " (`--timing paper`: the paper's board, Fig. 1)",
                DftlTiming::Preset => "",
            },
            r.program_us,
        );
        let _ = writeln!(
            o,
            "{}",
            crate::experiment::gc_planes_line(
                false,
                "the paper's simulator (FlashSim) runs every flash operation on one plane, so the preset keeps GC single-plane."
            )
        );
        let _ = writeln!(
            o,
            "* Mapping: 4 B entries, 4,096 per 16 KiB translation page; CMT = {:.1} % of the full table (partitioned: half clean pages, half dirty pages or entry log); `dftl` at page granularity (the paper's baseline).",
            r.cmt_share * 100.0
        );
        let _ = writeln!(
            o,
            "* Workloads: uniform random 4 KiB reads, writes, and 70/30 reads/writes, queue depth 32, {} requests each; \"no GC\" runs right after a sequential fill of the whole logical space, \"GC in effect\" after one more capacity of random overwrites; every run starts from the same forked state. × dftl = IOPS over `dftl`'s on the same workload.",
            r.requests
        );
        o += &r.markdown();
        o += &r.breakdown_markdown();
        o += &crate::experiment::shape_section(
            Shape {
                title: "the paper's shape, spec 04",
                group: Some("device state"),
            },
            &r.checks(),
            r.rows.len(),
            r.wall_s,
        );
        o
    }

    /// Mixed workload read latency: CDF (top, the paper's Fig. 7) and CCDF (bottom, the
    /// tail), without GC (left) and with GC (right).
    fn plot(r: &DftlReport, svg: &mut String) -> PlotResult {
        use plotters::prelude::*;
        let root = SVGBackend::with_string(svg, (1400, 1000)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, bottom) = root.split_vertically(500);
        let (tl, tr) = top.split_horizontally(700);
        let (bl, br) = bottom.split_horizontally(700);
        for (gc, cdf_area, ccdf_area) in [(false, tl, bl), (true, tr, br)] {
            let state = if gc { "GC in effect" } else { "no GC" };
            let series: Vec<(&str, Vec<(f64, f64)>)> = r
                .rows
                .iter()
                .filter(|x| x.gc == gc && x.workload == "mixed")
                .map(|x| {
                    let pts = x
                        .read_ccdf
                        .iter()
                        .map(|&(ns, above)| (ns as f64 / 1e3, above))
                        .collect();
                    (x.variant.as_str(), pts)
                })
                .collect();
            cdf_panel(
                &cdf_area,
                &format!("mixed 70/30 read latency CDF, {state}"),
                &series,
            )?;
            let tail: Vec<(&str, Vec<(f64, f64)>)> = series
                .iter()
                .map(|(n, pts)| (*n, pts.iter().copied().filter(|p| p.1 > 0.0).collect()))
                .collect();
            crate::plot::ccdf_panel(
                &ccdf_area,
                &format!("read latency tail (CCDF), {state}"),
                &tail,
            )?;
        }
        root.present()?;
        Ok(())
    }
}

/// A CDF chart (latency µs on a log axis, P(latency ≤ x)) of CCDF points.
fn cdf_panel<DB: plotters::prelude::DrawingBackend>(
    area: &plotters::prelude::DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    series: &[(&str, Vec<(f64, f64)>)],
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    use crate::plot::COLORS;
    use plotters::prelude::*;
    let xs = series.iter().flat_map(|s| s.1.iter().map(|p| p.0));
    let x_lo = xs.clone().fold(f64::INFINITY, f64::min).max(1.0) / 1.5;
    let x_hi = xs.fold(0.0, f64::max).max(x_lo * 10.0) * 1.5;
    let mut c = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), 0f64..1.0)?;
    c.configure_mesh()
        .x_desc("read latency (us, log)")
        .y_desc("P(latency <= x)")
        .draw()?;
    for (k, (name, pts)) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        // A step function: the share stays until the next recorded latency.
        let mut cdf: Vec<(f64, f64)> = Vec::with_capacity(2 * pts.len());
        let mut prev = 0.0;
        for &(x, above) in pts {
            cdf.push((x, prev));
            prev = 1.0 - above;
            cdf.push((x, prev));
        }
        c.draw_series(LineSeries::new(cdf, color.stroke_width(2)))?
            .label(*name)
            .legend(move |(a, b)| {
                PathElement::new(vec![(a, b), (a + 20, b)], color.stroke_width(2))
            });
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
