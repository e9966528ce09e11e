//! Spec 04: demand-based FTL with a partitioned mapping cache (`ssdlab reproduce dftl`,
//! docs/dftl.md). Every mapping variant runs uniform random 4 KiB reads, writes and a
//! 70/30 mix on the 64 GiB TLC device of `configs/dftl-64g.toml`, once right after a
//! sequential fill (free space left: no GC) and once after one capacity of random
//! overwrites (GC in effect). Each workload starts from the same forked device state.

use crate::{ExperimentError, Result};
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::stats::hdr;
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::WorkloadConfig;
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
        let text = ssdlab_core::config::apply_overrides(&text, &self.sets)?;
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
    pub max_nand_reads_per_host_read: Option<u32>,
    /// Data GC victims during the measured run.
    pub gc_victims: u64,
    pub sim_s: f64,
    pub wall_s: f64,
    /// Read latency CCDF (ns, share above), for the plot.
    #[serde(skip)]
    pub read_ccdf: Vec<(u64, f64)>,
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
        max_nand_reads_per_host_read: match m {
            Some(m) => m.max_nand_reads_per_host_read,
            // page-map: one read per data page (4 KiB reads: 1).
            None => read.map(|_| 1),
        },
        gc_victims: r.gc.invocations,
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
    Ok(DftlReport {
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

    /// The paper's expected shape (issue 11, item 6), per device state: each check, whether
    /// it holds (`None`: a variant was not run) and the numbers.
    pub fn shape(&self) -> Vec<(bool, String, Option<bool>, String)> {
        let mut out = Vec::new();
        for gc in [false, true] {
            let get = |v: &str, w: &str| self.row(v, w, gc);
            let mut add =
                |name: &str, ok: Option<bool>, d: String| out.push((gc, name.to_string(), ok, d));
            let iops = |v: &str, w: &str| get(v, w).map(|r| r.iops);
            // 1–2: the paper's ratios, within ±25 % (write) and ±15 % (mixed).
            for (w, paper, tol) in [("write", 1.65, 0.25), ("mixed", 1.15, 0.15)] {
                match (iops("dftl-partitioned-log", w), iops("dftl", w)) {
                    (Some(l), Some(d)) => {
                        let x = l / d;
                        add(
                            &format!(
                                "{w}: log / dftl IOPS ≈ {paper} (within ±{:.0} %)",
                                tol * 100.0
                            ),
                            Some((x / paper - 1.0).abs() <= tol),
                            format!("{x:.2}×"),
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
                        format!(
                            "{} read-path programs; p99.99 µs {:.0} vs {:.0} / {:.0}",
                            d.read_path_programs,
                            d.read_p99_99_ns as f64 / 1e3,
                            p.read_p99_99_ns as f64 / 1e3,
                            l.read_p99_99_ns as f64 / 1e3
                        ),
                    );
                }
                _ => add("mixed read latency", None, "not run".into()),
            }
        }
        out
    }
}
