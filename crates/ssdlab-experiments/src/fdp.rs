//! A flash cache on an FDP SSD (`ssdlab reproduce fdp`, docs/reproduce-fdp.md): Allison
//! et al., "Towards Efficient Flash Caches with Emerging NVMe Flexible Data Placement
//! SSDs" (EuroSys 2025, arXiv 2503.11665). CacheLib's flash cache — a large-object cache
//! (LOC) of regions written sequentially and evicted FIFO, a small-object cache (SOC) of
//! 4 KiB buckets rewritten at random over 4 % of the cache — runs at utilizations (cache
//! size / device capacity) 50 % … 100 %, on a conventional device and on the same device
//! with FDP, the SOC's writes on a reclaim-unit handle of their own
//! (`ssdlab_workload::flash_cache`). The paper: without FDP the device WAF rises from
//! ~1.3 at 50 % to ~3.5 at 100 %; with FDP it stays ~1.03.
//!
//! The device is `configs/zns.toml`'s flash with [`BLOCKS_PER_PLANE`] blocks per plane
//! (4 GiB of TLC, 4 channels × 2 planes × 1024 blocks of 512 KiB) as a conventional device with 4 KiB mapping units, greedy GC
//! and [`PAPER_OP`] over-provisioning; a LOC region is one erase block on every plane
//! (the device's reclaim unit, as the paper sizes regions). Each run: the cache written
//! [`WARMUP_CACHE_MULTIPLE`] times over (functional mode, to steady state), then
//! [`MEASURE_CACHE_MULTIPLE`] times measured (device WAF of that phase), in the
//! cache's own writes.

use crate::experiment::{Check, Common, DocTable, Experiment, PlotResult, Say, Shape};
use crate::{ExperimentError, Result};
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::config::{FdpConfig, Mode};
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::flash_cache::{FlashCacheConfig, FlashCacheSource, Layout};
use ssdlab_workload::{Arrival, Flow, HostRequest, RequestSource, Workload, WorkloadError};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

const ZNS_TOML: &str = include_str!("../../../configs/zns.toml");

/// The device's over-provisioning: 7 %, a data-center TLC drive's usual spare (the
/// paper's FDP SSD is a data-center drive; the searched text of the paper does not
/// state its spare, so this is the common 7 % of such drives).
pub const PAPER_OP: f64 = 0.07;
/// Blocks per plane of the study's device (configs/zns.toml has 256).
pub const BLOCKS_PER_PLANE: u32 = 1024;
/// Utilizations run, in percent (the paper sweeps 50 % … 100 %).
pub const UTILIZATIONS: [f64; 6] = [50.0, 60.0, 70.0, 80.0, 90.0, 100.0];
/// Cache writes of the warm-up and of the measured phase, in multiples of the cache size.
pub const WARMUP_CACHE_MULTIPLE: f64 = 3.0;
pub const MEASURE_CACHE_MULTIPLE: f64 = 2.0;
/// The paper's device WAF with FDP (~1.03) and the bound the check allows.
pub const FDP_WAF_MAX: f64 = 1.1;
/// The no-FDP device WAF at 100 % the check asks for (paper ~3.5).
pub const NO_FDP_WAF_AT_FULL_MIN: f64 = 2.0;
/// A fall between neighbouring utilizations up to this counts as noise, not a fall.
pub const RISE_TOLERANCE: f64 = 0.02;

/// Parameters of the study.
#[derive(Clone, Debug)]
pub struct FdpParams {
    pub base: Config,
    /// Divisor of the 4 channels (1, 2, 4): the device and each run's writes.
    pub scale: u32,
    pub utilizations: Vec<f64>,
    pub op: f64,
    /// The cache's parameters (utilization, region size and FDP are set per run).
    pub cache: FlashCacheConfig,
    pub warmup_cache_multiple: f64,
    pub measure_cache_multiple: f64,
}

impl FdpParams {
    pub fn paper(scale: u32) -> Result<FdpParams> {
        if !(scale.is_power_of_two() && scale <= 4) {
            return Err(ExperimentError::invalid(
                "scale",
                format!("{scale}: 1, 2 or 4 (it divides the 4 channels)"),
            ));
        }
        let mut base = Config::from_toml_str(ZNS_TOML, "configs/zns.toml")?;
        base.device.zns = None;
        base.device.geometry.channels /= scale;
        base.device.geometry.mapping_unit_bytes = 4096;
        // 4x the blocks per plane (4 GiB raw): the per-plane reserve (each handle's open
        // blocks, the GC thresholds) then takes a small share of the 7 % OP, as on a real
        // drive; at 256 blocks it ate a third of it.
        base.device.geometry.blocks_per_plane = BLOCKS_PER_PLANE;
        base.ftl.write_buffer_bytes /= scale as u64;
        base.precondition.enabled = false;
        base.mode = Mode::Functional;
        Ok(FdpParams {
            base,
            scale,
            utilizations: UTILIZATIONS.to_vec(),
            op: PAPER_OP,
            cache: FlashCacheConfig {
                requests: 0,
                duration_ns: u64::MAX / 2,
                ..FlashCacheConfig::default()
            },
            warmup_cache_multiple: WARMUP_CACHE_MULTIPLE,
            measure_cache_multiple: MEASURE_CACHE_MULTIPLE,
        })
    }

    /// The device of a run.
    pub fn config(&self, fdp: bool) -> Result<Config> {
        let mut c = self.base.clone();
        c.device.over_provisioning_ratio = self.op;
        c.device.fdp = fdp.then(|| FdpConfig {
            handles: 2,
            placement_handles: Vec::new(),
        });
        c.validate()?;
        Ok(c)
    }

    /// A LOC region: an erase block on every plane (the device's reclaim unit).
    pub fn region_bytes(&self) -> u64 {
        let g = &self.base.device.geometry;
        let planes = (g.channels * g.chips_per_channel * g.dies_per_chip * g.planes_per_die) as u64;
        planes * g.pages_per_block as u64 * g.page_size_bytes as u64
    }

    /// The cache of a run.
    pub fn cache(&self, utilization: f64, fdp: bool) -> FlashCacheConfig {
        FlashCacheConfig {
            utilization_percent: utilization,
            region_bytes: self.region_bytes(),
            fdp,
            ..self.cache.clone()
        }
    }

    /// Every (utilization, fdp) run.
    pub fn jobs(&self) -> Vec<(f64, bool)> {
        let mut out = Vec::new();
        for fdp in [false, true] {
            for &u in &self.utilizations {
                out.push((u, fdp));
            }
        }
        out
    }

    /// Every run's device and cache are valid.
    pub fn check(&self) -> Result<()> {
        if self.utilizations.is_empty() {
            return Err(ExperimentError::invalid("utilizations", "none to run"));
        }
        for (k, v) in [
            ("--warmup", self.warmup_cache_multiple),
            ("--measure", self.measure_cache_multiple),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(ExperimentError::invalid(k, format!("{v}: must be > 0")));
            }
        }
        for (u, fdp) in self.jobs() {
            let sim = Simulation::new(self.config(fdp)?)?;
            self.cache(u, fdp)
                .layout(&sim.workload_context())
                .map_err(|e| ExperimentError::invalid("workload", e.to_string()))?;
        }
        Ok(())
    }
}

/// The cache's source shared by the phases; each phase ends when its write budget is spent.
struct Phased {
    source: Arc<Mutex<FlashCacheSource>>,
    budget: Arc<AtomicI64>,
    soc_first: u64,
    soc_write_bytes: Arc<AtomicU64>,
}

impl RequestSource for Phased {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        if self.budget.load(Ordering::Relaxed) <= 0 {
            return Ok(None);
        }
        let r = self
            .source
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next_request()?;
        if let Some(r) = r.as_ref().filter(|r| r.op.writes_data()) {
            self.budget
                .fetch_sub(r.size_bytes as i64, Ordering::Relaxed);
            if r.offset_bytes >= self.soc_first {
                self.soc_write_bytes
                    .fetch_add(r.size_bytes, Ordering::Relaxed);
            }
        }
        Ok(r)
    }
}

/// One run.
#[derive(Clone, Debug, Serialize)]
pub struct FdpRun {
    pub utilization: f64,
    pub fdp: bool,
    pub cache_bytes: u64,
    pub soc_bytes: u64,
    pub regions: u64,
    pub region_bytes: u64,
    /// Host writes of the measured phase, and the SOC's share of them.
    pub write_bytes: u64,
    pub soc_write_share: f64,
    pub device_waf: f64,
    pub warmup_device_waf: f64,
    pub gc_victims: u64,
    pub wall_s: f64,
    pub audit_warnings: Vec<crate::AuditWarning>,
}

/// The whole study.
#[derive(Clone, Debug, Serialize)]
pub struct FdpReport {
    pub scale: u32,
    pub op: f64,
    pub logical_bytes: u64,
    pub warmup_cache_multiple: f64,
    pub measure_cache_multiple: f64,
    pub runs: Vec<FdpRun>,
    pub wall_s: f64,
}

fn measure(p: &FdpParams, utilization: f64, fdp: bool) -> Result<(FdpRun, u64)> {
    let t = Instant::now();
    let mut sim = Simulation::new(p.config(fdp)?)?;
    let ctx = sim.workload_context();
    let bad = |e: WorkloadError| ExperimentError::invalid("workload", e.to_string());
    let cache = p.cache(utilization, fdp);
    let source = FlashCacheSource::new(&cache, &ctx).map_err(bad)?;
    let layout: Layout = source.layout();
    let source = Arc::new(Mutex::new(source));
    let budget = Arc::new(AtomicI64::new(0));
    let soc = Arc::new(AtomicU64::new(0));
    let phase = |bytes: f64| {
        budget.store(bytes as i64, Ordering::Relaxed);
        soc.store(0, Ordering::Relaxed);
        Workload {
            flows: vec![Flow {
                name: "flash-cache".into(),
                arrival: Arrival::Closed {
                    queue_depth: cache.queue_depth,
                },
                source: Box::new(Phased {
                    source: source.clone(),
                    budget: budget.clone(),
                    soc_first: layout.soc_first,
                    soc_write_bytes: soc.clone(),
                }),
            }],
            duration_ns: None,
            stats: Default::default(),
        }
    };
    let c = layout.cache_bytes() as f64;
    let w0 = sim.run_workload_with(phase(p.warmup_cache_multiple * c), &mut NoProgress)?;
    let r = sim.run_workload_with(phase(p.measure_cache_multiple * c), &mut NoProgress)?;
    let write_bytes = r.host.counters.write_bytes;
    let point = format!("{utilization:.0} % {}", if fdp { "fdp" } else { "no-fdp" });
    Ok((
        FdpRun {
            utilization,
            fdp,
            cache_bytes: layout.cache_bytes(),
            soc_bytes: layout.buckets * layout.bucket_bytes,
            regions: layout.regions(),
            region_bytes: layout.region_bytes,
            write_bytes,
            soc_write_share: soc.load(Ordering::Relaxed) as f64 / write_bytes.max(1) as f64,
            device_waf: r.waf,
            warmup_device_waf: w0.waf,
            gc_victims: r.gc.invocations,
            wall_s: t.elapsed().as_secs_f64(),
            audit_warnings: crate::AuditWarning::of(&r, point),
        },
        ctx.logical_bytes,
    ))
}

/// Every run, in parallel on the caller's rayon pool.
pub fn run(p: &FdpParams, on_run: &(dyn Fn(&FdpRun) + Sync)) -> Result<FdpReport> {
    let t0 = Instant::now();
    p.check()?;
    let done: Vec<(FdpRun, u64)> = p
        .jobs()
        .par_iter()
        .map(|&(u, f)| {
            let r = measure(p, u, f)?;
            on_run(&r.0);
            Ok(r)
        })
        .collect::<Result<_>>()?;
    let logical_bytes = done.first().map_or(0, |d| d.1);
    Ok(FdpReport {
        scale: p.scale,
        op: p.op,
        logical_bytes,
        warmup_cache_multiple: p.warmup_cache_multiple,
        measure_cache_multiple: p.measure_cache_multiple,
        runs: done.into_iter().map(|d| d.0).collect(),
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

pub const CSV_HEADER: &str = "utilization,fdp,device_waf,warmup_device_waf,cache_bytes,soc_bytes,regions,region_bytes,write_bytes,soc_write_share,gc_victims";

/// The expected shape from (utilization %, fdp, device WAF) points: the no-FDP WAF rises
/// with utilization (each point at least its lower neighbour's − [`RISE_TOLERANCE`], the
/// last above the first) to ≥ [`NO_FDP_WAF_AT_FULL_MIN`] at 100 %; the FDP WAF ≤
/// [`FDP_WAF_MAX`] at every point.
pub fn shape_checks(points: &[(f64, bool, f64)]) -> Vec<Check> {
    let mut out = Vec::new();
    let line = |fdp: bool| {
        let mut v: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| p.1 == fdp)
            .map(|p| (p.0, p.2))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    let no = line(false);
    let yes = line(true);
    let text = |v: &[(f64, f64)]| {
        v.iter()
            .map(|(u, w)| format!("{u:.0} %: {w:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let rise = "no-FDP device WAF rises with utilization (paper ~1.3 at 50 % to ~3.5 at 100 %)";
    if no.len() < 2 {
        out.push(Check::missing("no FDP", rise));
    } else {
        let falls: Vec<String> = no
            .windows(2)
            .filter(|w| w[1].1 < w[0].1 - RISE_TOLERANCE)
            .map(|w| format!("{:.0} % → {:.0} %", w[0].0, w[1].0))
            .collect();
        let ok = falls.is_empty() && no[no.len() - 1].1 > no[0].1;
        let mut d = text(&no);
        if !ok {
            d += &format!("; it falls at {}", falls.join(", "));
            if falls.is_empty() {
                d += "; not above its first point at the last";
            }
        }
        out.push(Check::new("no FDP", rise, Some(ok), d));
    }
    let full =
        format!("no-FDP device WAF ≥ {NO_FDP_WAF_AT_FULL_MIN} at 100 % utilization (paper ~3.5)");
    match no.iter().find(|p| p.0 == 100.0) {
        Some(&(_, w)) => {
            let ok = w >= NO_FDP_WAF_AT_FULL_MIN;
            let mut d = format!("{w:.3}");
            if !ok {
                d += "; the SOC's random bucket writes mixed into the LOC's blocks cost GC less than the paper's device";
            }
            out.push(Check::new("no FDP", full, Some(ok), d));
        }
        None => out.push(Check::missing("no FDP", full)),
    }
    let low = format!("FDP device WAF ≤ {FDP_WAF_MAX} at every utilization (paper ~1.03)");
    if yes.is_empty() {
        out.push(Check::missing("FDP", low));
    } else {
        let over: Vec<String> = yes
            .iter()
            .filter(|p| p.1 > FDP_WAF_MAX)
            .map(|p| format!("{:.0} %", p.0))
            .collect();
        let ok = over.is_empty();
        let mut d = text(&yes);
        if !ok {
            d += &format!(
                "; above at {}: the SOC's handle did not keep its garbage out of the LOC's blocks",
                over.join(", ")
            );
        }
        out.push(Check::new("FDP", low, Some(ok), d));
    }
    out
}

impl FdpReport {
    pub fn csv(&self) -> String {
        let mut s = String::from(CSV_HEADER);
        s.push('\n');
        for r in &self.runs {
            let _ = writeln!(
                s,
                "{},{},{:.4},{:.4},{},{},{},{},{},{:.4},{}",
                r.utilization,
                r.fdp,
                r.device_waf,
                r.warmup_device_waf,
                r.cache_bytes,
                r.soc_bytes,
                r.regions,
                r.region_bytes,
                r.write_bytes,
                r.soc_write_share,
                r.gc_victims
            );
        }
        s
    }

    fn run_of(&self, u: f64, fdp: bool) -> Option<&FdpRun> {
        self.runs
            .iter()
            .find(|r| r.utilization == u && r.fdp == fdp)
    }

    fn utilizations(&self) -> Vec<f64> {
        let mut v: Vec<f64> = Vec::new();
        for r in &self.runs {
            if !v.contains(&r.utilization) {
                v.push(r.utilization);
            }
        }
        v.sort_by(f64::total_cmp);
        v
    }

    pub fn checks(&self) -> Vec<Check> {
        let pts: Vec<(f64, bool, f64)> = self
            .runs
            .iter()
            .map(|r| (r.utilization, r.fdp, r.device_waf))
            .collect();
        shape_checks(&pts)
    }

    /// The table: one row per utilization.
    pub fn table(&self) -> String {
        let mut s = String::from("| utilization | device WAF, no FDP | device WAF, FDP | cache MiB | SOC MiB | LOC regions | SOC share of writes |\n|---:|---:|---:|---:|---:|---:|---:|\n");
        let f =
            |r: Option<&FdpRun>| r.map_or("–".to_string(), |r| format!("{:.3}", r.device_waf));
        for u in self.utilizations() {
            let any = self.run_of(u, false).or(self.run_of(u, true));
            let Some(a) = any else { continue };
            let _ = writeln!(
                s,
                "| {u:.0} % | {} | {} | {:.0} | {:.1} | {} | {:.1} % |",
                f(self.run_of(u, false)),
                f(self.run_of(u, true)),
                a.cache_bytes as f64 / (1 << 20) as f64,
                a.soc_bytes as f64 / (1 << 20) as f64,
                a.regions,
                a.soc_write_share * 100.0
            );
        }
        s
    }
}

/// `ssdlab reproduce fdp`.
pub struct Fdp;

/// `reproduce fdp`'s own flags.
#[derive(clap::Args)]
pub struct FdpArgs {
    /// Divide the 4 channels by 1, 2 or 4: the device and each run's writes shrink with it
    /// (1 = the study as documented).
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// Cache writes of the functional warm-up, in multiples of the cache size.
    #[arg(long, default_value_t = WARMUP_CACHE_MULTIPLE)]
    warmup: f64,
    /// Cache writes of the measured phase, in multiples of the cache size.
    #[arg(long, default_value_t = MEASURE_CACHE_MULTIPLE)]
    measure: f64,
    /// Share of the cache's objects that are small (SOC), in percent: it sets the SOC's
    /// share of the bytes written (default: the workload's).
    #[arg(long)]
    small_object_percent: Option<f64>,
}

impl Experiment for Fdp {
    const NAME: &'static str = "fdp";
    const ABOUT: &'static str = "A flash cache on FDP SSDs (Allison et al., EuroSys 2025): a CacheLib-like cache (LOC regions written sequentially, SOC buckets rewritten at random over 4 %) at utilizations 50-100 %, with and without FDP: device WAF";
    const DOC_TABLES: &'static [DocTable] = &[DocTable {
        name: "fdp",
        doc: "docs/reproduce-fdp.md",
        fast: false,
        from: "| utilization |",
        to: Some("## Expected"),
    }];
    type Args = FdpArgs;
    type Params = FdpParams;
    type Report = FdpReport;

    fn params(a: &FdpArgs, common: &Common) -> Result<FdpParams> {
        let mut p = FdpParams::paper(a.scale)?;
        p.base = crate::run::with_overrides(&p.base, &common.sets, "configs/zns.toml")?;
        if let Some(s) = common.seed {
            p.base.seed = s;
        }
        p.warmup_cache_multiple = a.warmup;
        p.measure_cache_multiple = a.measure;
        if let Some(v) = a.small_object_percent {
            p.cache.small_object_percent = v;
        }
        p.check()?;
        Ok(p)
    }

    fn banner(p: &FdpParams, threads: usize) -> String {
        format!(
            "reproduce fdp: {} runs (no FDP, FDP) x utilization {} %, each the cache written {}x (functional warm-up) then {}x measured, at {:.0} % OP, on {threads} threads ...",
            p.jobs().len(),
            p.utilizations
                .iter()
                .map(|u| format!("{u:.0}"))
                .collect::<Vec<_>>()
                .join(", "),
            p.warmup_cache_multiple,
            p.measure_cache_multiple,
            p.op * 100.0
        )
    }

    fn run(p: &FdpParams, say: &dyn Say) -> Result<FdpReport> {
        run(p, &|r: &FdpRun| {
            say.progress(&format!(
                "  {:>3.0} % {:<6}: device WAF {:.3}, {:.1} s wall",
                r.utilization,
                if r.fdp { "fdp" } else { "no-fdp" },
                r.device_waf,
                r.wall_s
            ));
            say.audit(&r.audit_warnings);
        })
    }

    fn csv(r: &FdpReport) -> String {
        r.csv()
    }

    fn checks(r: &FdpReport) -> Vec<Check> {
        r.checks()
    }

    fn markdown(r: &FdpReport, p: &FdpParams, _wall_s: f64) -> String {
        let c = &p.base;
        let g = &c.device.geometry;
        let mut o = String::new();
        o += "# A flash cache on FDP SSDs (Allison et al., EuroSys 2025)\n\n";
        let _ = writeln!(
            o,
            "* Device (configs/zns.toml's raw flash, conventional): TLC, {} channels x {} planes/die x {} blocks/plane x {} pages of {} KiB, 4 KiB mapping units, greedy GC, {:.0} % OP: {} MiB logical; FDP runs: `[device.fdp] handles = 2`; seed {}.",
            g.channels,
            g.planes_per_die,
            g.blocks_per_plane,
            g.pages_per_block,
            g.page_size_bytes >> 10,
            r.op * 100.0,
            r.logical_bytes >> 20,
            c.seed
        );
        let k = &p.cache;
        let _ = writeln!(
            o,
            "* Cache (`kind = \"flash-cache\"`): utilization = cache / logical capacity; SOC {:.0} % of the cache in {} B buckets, LOC regions of {} MiB (an erase block on every plane) written sequentially, FIFO; {:.0} % sets, {:.0} % small objects ({}..={} B), large {}..={} KiB; FDP: SOC writes on placement id 1, LOC on 0. Each run writes the cache {}x (warm-up) then {}x (measured: the device WAF below).\n",
            k.soc_percent,
            k.bucket_bytes,
            p.region_bytes() >> 20,
            k.set_percent,
            k.small_object_percent,
            k.small_object_min_bytes,
            k.small_object_max_bytes,
            k.large_object_min_bytes >> 10,
            k.large_object_max_bytes >> 10,
            r.warmup_cache_multiple,
            r.measure_cache_multiple
        );
        o += &r.table();
        o += &crate::experiment::shape_section(
            Shape {
                title: "Allison et al., EuroSys 2025",
                group: Some("device"),
            },
            &r.checks(),
            r.runs.len(),
            r.wall_s,
        );
        o
    }

    /// Device WAF against utilization, a line with and one without FDP.
    fn plot(r: &FdpReport, svg: &mut String) -> PlotResult {
        use crate::plot::COLORS;
        use plotters::prelude::*;
        let root = SVGBackend::with_string(svg, (900, 600)).into_drawing_area();
        root.fill(&WHITE)?;
        let y_hi = r.runs.iter().map(|x| x.device_waf).fold(1.0f64, f64::max) * 1.15;
        let mut c = ChartBuilder::on(&root)
            .caption(
                "Flash cache device WAF vs utilization (Allison et al., EuroSys 2025)",
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(45f64..105f64, 0f64..y_hi)?;
        c.configure_mesh()
            .x_desc("utilization (cache size / device capacity), %")
            .y_desc("device WAF")
            .draw()?;
        for (k, fdp) in [false, true].into_iter().enumerate() {
            let color = COLORS[k + 1];
            let mut pts: Vec<(f64, f64)> = r
                .runs
                .iter()
                .filter(|x| x.fdp == fdp)
                .map(|x| (x.utilization, x.device_waf))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let name = if fdp {
                "FDP (SOC on its own handle)"
            } else {
                "no FDP"
            };
            c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2))
                });
            c.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(no: &[f64], yes: &[f64]) -> Vec<(f64, bool, f64)> {
        let mut v = Vec::new();
        for (i, w) in no.iter().enumerate() {
            v.push((UTILIZATIONS[i], false, *w));
        }
        for (i, w) in yes.iter().enumerate() {
            v.push((UTILIZATIONS[i], true, *w));
        }
        v
    }

    fn holds(c: &[Check]) -> Vec<Option<bool>> {
        c.iter().map(|c| c.holds).collect()
    }

    /// The paper's shape passes; each perturbation fails its own check.
    #[test]
    fn the_checks_fail_on_perturbed_numbers() {
        let good_no = [1.3, 1.6, 2.0, 2.5, 3.0, 3.5];
        let good_yes = [1.0, 1.01, 1.02, 1.03, 1.03, 1.04];
        assert_eq!(
            holds(&shape_checks(&pts(&good_no, &good_yes))),
            [Some(true); 3]
        );
        // A fall in the middle.
        let fall = [1.3, 1.6, 1.4, 2.5, 3.0, 3.5];
        assert_eq!(
            holds(&shape_checks(&pts(&fall, &good_yes))),
            [Some(false), Some(true), Some(true)]
        );
        // Too low at 100 %.
        let low = [1.1, 1.2, 1.3, 1.4, 1.5, 1.9];
        assert_eq!(
            holds(&shape_checks(&pts(&low, &good_yes))),
            [Some(true), Some(false), Some(true)]
        );
        // FDP above 1.1 at one point.
        let bad_yes = [1.0, 1.01, 1.02, 1.2, 1.03, 1.04];
        let c = shape_checks(&pts(&good_no, &bad_yes));
        assert_eq!(holds(&c), [Some(true), Some(true), Some(false)]);
        assert!(c[2].detail.contains("above at 80 %"), "{}", c[2].detail);
        // Flat: no rise.
        let flat = [2.0; 6];
        assert_eq!(holds(&shape_checks(&pts(&flat, &good_yes)))[0], Some(false));
        // Missing runs.
        assert_eq!(holds(&shape_checks(&[])), [None, None, None]);
    }

    /// The study's runs are valid at the smallest scale, and the region is the reclaim
    /// unit: one 512 KiB block on each of the 2 planes of the 1 channel.
    #[test]
    fn the_study_is_valid_and_a_region_is_a_block_per_plane() {
        let p = FdpParams::paper(4).unwrap();
        assert_eq!(p.region_bytes(), 2 * 512 * 1024);
        p.check().unwrap();
        assert_eq!(p.jobs().len(), 12);
        assert!(FdpParams::paper(3).is_err());
    }
}
