//! Spec 05: SLC write buffer with a journal region (`ssdlab reproduce slc`,
//! docs/slc-journal.md). `slc-buffer` (768 MiB of SLC buffer) against `slc-journal` (the
//! same SLC split into a buffer and a journal region, by default by planes: the 24 SLC
//! blocks of 7 planes are the journal region (168 MiB), those of the other 25 the buffer
//! (600 MiB), `journal_planes`; or on every plane, 13 + 11 blocks per plane,
//! `journal_blocks_per_plane`), SLC pages taking 4 partial programs (NOP), on the 64 GiB TLC
//! device of `configs/slc-journal-64g.toml`, under the ext4 model: fio 8 KiB random writes
//! with an fsync every 2 … 128 writes (app data = 2 × the SLC, 1.5 GiB) in both journal
//! modes, and the four Filebench personalities.

use crate::experiment::{Check, Common, DocTable, Experiment, PlotResult, Say, Shape};
use crate::{ExperimentError, Result};
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::config::RegionContent;
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_workload::ext4::{App, JournalMode};
use ssdlab_workload::WorkloadConfig;
use std::fmt::Write as _;
use std::time::Instant;

pub const SLC_TOML: &str = include_str!("../../../configs/slc-journal-64g.toml");

pub const POLICIES: [&str; 2] = ["slc-buffer", "slc-journal"];
pub const FSYNC_EVERY: [u32; 7] = [2, 4, 8, 16, 32, 64, 128];
pub const FILEBENCH: [App; 4] = [
    App::Fileserver,
    App::Varmail,
    App::Webserver,
    App::Proxyserver,
];

/// SLC blocks per plane of both policies (768 MiB over the 32 planes of scale 1).
pub const SLC_BLOCKS_PER_PLANE: u32 = 24;

/// Journal region blocks per plane of `slc-journal` by default: the least at which the
/// padded journal ring (up to 2 × the journal: ordered mode, fsync every 2) fits beside
/// the region's reserve (docs/slc-journal.md, "Journal region size").
pub const JOURNAL_BLOCKS_PER_PLANE: u32 = 11;

/// The SLC regions of each policy (blocks per plane): the baseline's 24-block buffer, or
/// a buffer and a journal region sharing the 24 blocks ([`journal_regions`]).
const BASELINE_REGIONS: &str = r#"regions = [{ name = "data", content = "data" }, { name = "slc", content = "cache", cell_mode = "slc", blocks_per_plane = 24, drain_when_idle = true, gc_soft_free_blocks = 1, gc_hard_free_blocks = 1 }]"#;

/// `slc-journal`'s regions on every plane: `24 − journal` blocks per plane of buffer,
/// `journal` of journal region (the thresholds of `configs/slc-journal-64g.toml`), its
/// pages on the stripe cursor the regions share or on its own (`own_stripe`).
fn journal_regions(journal: u32, own_stripe: bool) -> String {
    format!(
        r#"regions = [{{ name = "data", content = "data" }}, {{ name = "slc", content = "cache", cell_mode = "slc", blocks_per_plane = {}, drain_when_idle = true, gc_soft_free_blocks = 1, gc_hard_free_blocks = 1 }}, {{ name = "journal", content = "journal", cell_mode = "slc", blocks_per_plane = {journal}, gc_soft_free_blocks = 2, gc_hard_free_blocks = 1, own_stripe = {own_stripe} }}]"#,
        SLC_BLOCKS_PER_PLANE - journal
    )
}

/// `slc-journal`'s regions on plane subsets (region key `planes`): the journal region
/// takes the 24 SLC blocks of `journal` planes, the buffer the 24 of the others (each on
/// a stripe cursor of its own over its planes).
fn subset_regions(journal: &[u32], buffer: &[u32]) -> String {
    format!(
        r#"regions = [{{ name = "data", content = "data" }}, {{ name = "slc", content = "cache", cell_mode = "slc", blocks_per_plane = {SLC_BLOCKS_PER_PLANE}, drain_when_idle = true, gc_soft_free_blocks = 1, gc_hard_free_blocks = 1, planes = {buffer:?} }}, {{ name = "journal", content = "journal", cell_mode = "slc", blocks_per_plane = {SLC_BLOCKS_PER_PLANE}, gc_soft_free_blocks = 2, gc_hard_free_blocks = 1, planes = {journal:?} }}]"#
    )
}

/// Planes of the journal region by default at scale 1: 7 × 24 SLC blocks = 168 MiB, the
/// least whole planes that hold the paper's 128 MiB journal beside the region's reserve
/// (3 blocks per plane: 7 × 21 = 147 MiB hold journal data; 6 planes hold 126 MiB, less
/// than the journal, and the region copies: docs/slc-journal.md), on 7 channels; at scale
/// `s`, 7 / s rounded (at least 1).
pub const JOURNAL_PLANES: u32 = 7;

/// Partial programs per SLC page by default (NOP 4, as SLC NAND datasheets give it:
/// Micron MT29F4G08ABADA, Kioxia TC58NVG2S0H): a commit's partial page is appended to by
/// the next, not padded.
pub const SLC_PARTIAL_PROGRAMS: u32 = 4;

/// Journal region sizes (blocks per plane) the regions' reserves allow: the journal
/// region and the buffer each keep 2 blocks per plane back and need 2 more to hold data.
pub const JOURNAL_BLOCKS_RANGE: std::ops::RangeInclusive<u32> = 4..=SLC_BLOCKS_PER_PLANE - 4;

#[derive(Clone, Debug)]
pub struct SlcParams {
    /// Divide the device's chips (16) by this power of two ≤ 16; the SLC sizes, journal and
    /// app data shrink with it.
    pub scale: u32,
    pub fsync_every: Vec<u32>,
    /// Requests per Filebench run.
    pub filebench_requests: u64,
    /// `slc-journal`'s journal region in SLC blocks per plane (1 MiB each at 16 KiB
    /// pages); its buffer keeps the rest of the 24.
    pub journal_blocks_per_plane: u32,
    /// The journal region's pages take planes from a stripe cursor of its own (region key
    /// `own_stripe`): no GC copies where pages per commit alias with the stripe.
    pub journal_own_stripe: bool,
    /// Planes the journal region takes (all 24 SLC blocks of each; the buffer takes the
    /// other planes' 24) at scale 1, divided by the scale (at least 1); 0: the journal
    /// region on every plane with `journal_blocks_per_plane` of the 24 (issue 36's layout).
    pub journal_planes: u32,
    /// `[device.timing.slc] partial_programs_per_page` of the device (both policies).
    pub slc_partial_programs: u32,
    pub seed: Option<u64>,
    pub sets: Vec<String>,
}

impl SlcParams {
    pub fn paper() -> SlcParams {
        SlcParams {
            scale: 1,
            fsync_every: FSYNC_EVERY.to_vec(),
            filebench_requests: 400_000,
            journal_blocks_per_plane: JOURNAL_BLOCKS_PER_PLANE,
            journal_own_stripe: false,
            journal_planes: JOURNAL_PLANES,
            slc_partial_programs: SLC_PARTIAL_PROGRAMS,
            seed: None,
            sets: Vec::new(),
        }
    }

    /// The journal region's planes and the buffer's (`journal_planes` > 0) on a device of
    /// `channels` × `chips_per_channel` chips of 2 planes: the journal's are the first in
    /// the device's stripe order (CWDP: a plane on each channel first).
    fn plane_split(&self, channels: u32, chips_per_channel: u32) -> (Vec<u32>, Vec<u32>) {
        let planes = 2 * channels * chips_per_channel;
        let n = ((self.journal_planes + self.scale / 2) / self.scale).clamp(1, planes - 1);
        let plane = |i: u32| {
            let (ch, chip, p) = (
                i % channels,
                (i / channels) % chips_per_channel,
                i / (channels * chips_per_channel),
            );
            (ch * chips_per_channel + chip) * 2 + p
        };
        let mut journal: Vec<u32> = (0..n).map(plane).collect();
        journal.sort_unstable();
        let buffer = (0..planes).filter(|p| !journal.contains(p)).collect();
        (journal, buffer)
    }

    /// Every run: (policy, app, journal mode, fsync interval of fio).
    fn jobs(&self) -> Vec<(&'static str, App, JournalMode, Option<u32>)> {
        let mut jobs = Vec::new();
        for mode in [JournalMode::Data, JournalMode::Ordered] {
            for &f in &self.fsync_every {
                for pol in POLICIES {
                    jobs.push((pol, App::Fio, mode, Some(f)));
                }
            }
            for app in FILEBENCH {
                for pol in POLICIES {
                    jobs.push((pol, app, mode, None));
                }
            }
        }
        jobs
    }

    /// Every run's configuration is valid (scale, overrides): call before announcing the
    /// runs; [`run`] calls it before any long work.
    pub fn check(&self) -> Result<()> {
        for (pol, app, mode, f) in self.jobs() {
            self.config(pol, app, mode, f.unwrap_or(16))?;
        }
        Ok(())
    }

    /// The configuration of `policy` running `app` in `mode`.
    pub fn config(&self, policy: &str, app: App, mode: JournalMode, fsync: u32) -> Result<Config> {
        if !(self.scale.is_power_of_two() && self.scale <= 16) {
            return Err(ExperimentError::invalid(
                "scale",
                format!(
                    "{}: a power of two up to 16 (the device's 16 chips / scale)",
                    self.scale
                ),
            ));
        }
        if !JOURNAL_BLOCKS_RANGE.contains(&self.journal_blocks_per_plane) {
            return Err(ExperimentError::invalid(
                "--journal-blocks-per-plane",
                format!(
                    "{}: must be {}..={} SLC blocks per plane (the journal region and the buffer share {SLC_BLOCKS_PER_PLANE}; each keeps 2 back and needs 2 more)",
                    self.journal_blocks_per_plane,
                    JOURNAL_BLOCKS_RANGE.start(),
                    JOURNAL_BLOCKS_RANGE.end()
                ),
            ));
        }
        let chips = 16 / self.scale;
        let channels = chips.min(8);
        let app_name = format!("{app:?}").to_lowercase();
        let mode_name = format!("{mode:?}").to_lowercase();
        // App data = 2 × the SLC (768 MiB per 32 planes).
        let app_bytes = 2 * 768u64 * (1 << 20) / self.scale as u64;
        let journal = 128u64 * (1 << 20) / self.scale as u64;
        let mut text = String::new();
        let mut in_regions = false;
        for line in SLC_TOML.lines() {
            let key = line.split('=').next().unwrap_or("").trim();
            if in_regions {
                in_regions = line.trim() != "]";
                continue;
            }
            let l = match key {
                "channels" => format!("channels = {channels}"),
                "chips_per_channel" => format!("chips_per_channel = {}", chips / channels),
                "placement" => format!("placement = {{ policy = \"{policy}\" }}"),
                "regions" => {
                    in_regions = !line.trim_end().ends_with(']');
                    if policy == "slc-buffer" {
                        BASELINE_REGIONS.to_string()
                    } else if self.journal_planes > 0 {
                        let (journal, buffer) = self.plane_split(channels, chips / channels);
                        subset_regions(&journal, &buffer)
                    } else {
                        journal_regions(self.journal_blocks_per_plane, self.journal_own_stripe)
                    }
                }
                "mode" if line.contains('"') && !line.contains("timed") => {
                    format!("mode = \"{mode_name}\"")
                }
                "app" => format!("app = \"{app_name}\""),
                "fsync_every" => format!("fsync_every = {fsync}"),
                "app_write_bytes" if app == App::Fio => format!("app_write_bytes = {app_bytes}"),
                "app_write_bytes" => "app_write_bytes = 0".to_string(),
                "requests" if app != App::Fio => format!("requests = {}", self.filebench_requests),
                _ => line.to_string(),
            };
            text.push_str(&l);
            text.push('\n');
        }
        text.push_str(&format!("journal_bytes = {journal}\n"));
        if self.slc_partial_programs != 1 {
            text = text.replacen(
                "[device.timing.slc]\n",
                &format!(
                    "[device.timing.slc]\npartial_programs_per_page = {}\n",
                    self.slc_partial_programs
                ),
                1,
            );
        }
        let text = ssdlab_core::config::apply_overrides(&text, &self.sets)?;
        let mut c =
            Config::from_toml_str(&text, &format!("configs/slc-journal-64g.toml ({policy})"))
                .map_err(|e| ExperimentError::invalid("policy", format!("{policy}: {e}")))?;
        if let Some(s) = self.seed {
            c.seed = s;
        }
        c.validate()?;
        if !matches!(c.workload, WorkloadConfig::Ext4(_)) {
            return Err(ExperimentError::invalid(
                "workload.kind",
                "must stay \"ext4\"",
            ));
        }
        Ok(c)
    }
}

/// The device and workload sizes the runs use (the scaled device, `--set` applied), read
/// from the two policies' configurations: what the report's header states.
#[derive(Clone, Debug, Serialize)]
pub struct SlcDevice {
    pub cell_mode: &'static str,
    pub dies: u32,
    pub planes: u32,
    pub logical_bytes: u64,
    pub page_size_bytes: u32,
    /// `slc-buffer`: its SLC buffer (blocks per plane, bytes over every plane).
    pub buffer_blocks_per_plane: u32,
    pub buffer_bytes: u64,
    /// `slc-journal`: its SLC buffer and journal region.
    pub split_buffer_blocks_per_plane: u32,
    pub split_buffer_bytes: u64,
    pub journal_region_blocks_per_plane: u32,
    pub journal_region_bytes: u64,
    /// Planes the journal region and slc-journal's buffer take blocks on.
    pub journal_region_planes: u32,
    pub split_buffer_planes: u32,
    /// `[device.timing.slc] partial_programs_per_page`.
    pub slc_partial_programs: u32,
    /// The ext4 journal.
    pub journal_bytes: u64,
    /// Application data of each fio run.
    pub fio_app_write_bytes: u64,
}

/// `n` planes as a person reads it: `1 plane`, `7 planes`.
fn planes_text(n: u32) -> String {
    match n {
        1 => "1 plane".to_string(),
        n => format!("{n} planes"),
    }
}

/// `bytes` as a person reads it: `64 GiB`, `768 MiB`, `1.5 GiB`, `24 KiB`.
pub fn size_text(bytes: u64) -> String {
    let units = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (u, name) in units {
        if bytes >= u {
            let v = bytes as f64 / u as f64;
            return if bytes.is_multiple_of(u) {
                format!("{} {name}", bytes / u)
            } else {
                format!("{v:.1} {name}")
            };
        }
    }
    format!("{bytes} B")
}

impl SlcParams {
    /// The sizes of the device and workload as the runs use them.
    pub fn device(&self) -> Result<SlcDevice> {
        let region = |d: &ssdlab_core::config::Derived, content: RegionContent| {
            d.regions
                .iter()
                .find(|r| r.content == content)
                .map_or((0, 0), |r| (r.blocks_per_plane, r.physical_bytes))
        };
        let planes = |d: &ssdlab_core::config::Derived, content: RegionContent| {
            d.regions
                .iter()
                .find(|r| r.content == content)
                .map_or(0, |r| r.plane_count(&d.geometry))
        };
        let base = self.config("slc-buffer", App::Fio, JournalMode::Ordered, 16)?;
        let bd = base.validate()?;
        let split = self.config("slc-journal", App::Fio, JournalMode::Ordered, 16)?;
        let sd = split.validate()?;
        let (journal_bytes, fio_app_write_bytes) = match &split.workload {
            WorkloadConfig::Ext4(e) => (e.journal_bytes, e.app_write_bytes),
            _ => (0, 0),
        };
        let (buffer_blocks_per_plane, buffer_bytes) = region(&bd, RegionContent::Cache);
        let (split_buffer_blocks_per_plane, split_buffer_bytes) = region(&sd, RegionContent::Cache);
        let (journal_region_blocks_per_plane, journal_region_bytes) =
            region(&sd, RegionContent::Journal);
        Ok(SlcDevice {
            cell_mode: split.device.cell_mode.name(),
            dies: sd.geometry.dies,
            planes: sd.geometry.planes,
            logical_bytes: sd.logical_bytes,
            page_size_bytes: split.device.geometry.page_size_bytes,
            buffer_blocks_per_plane,
            buffer_bytes,
            split_buffer_blocks_per_plane,
            split_buffer_bytes,
            journal_region_blocks_per_plane,
            journal_region_bytes,
            journal_region_planes: planes(&sd, RegionContent::Journal),
            split_buffer_planes: planes(&sd, RegionContent::Cache),
            slc_partial_programs: split.device.timing.slc.partial_programs_per_page,
            journal_bytes,
            fio_app_write_bytes,
        })
    }
}

/// One policy on one workload.
#[derive(Clone, Debug, Serialize)]
pub struct SlcRun {
    pub experiment: &'static str,
    pub app: String,
    pub mode: String,
    pub fsync_every: Option<u32>,
    pub policy: &'static str,
    pub sim_s: f64,
    /// Application data written per simulated second (fio), MB/s.
    pub app_mb_per_s: f64,
    /// Host requests per simulated second.
    pub iops: f64,
    pub journal_latency_mean_ns: f64,
    pub journal_latency_p99_ns: u64,
    pub flush_latency_mean_ns: f64,
    pub flush_latency_p99_ns: u64,
    pub tlc_direct_bytes: u64,
    pub tlc_migrated_bytes: u64,
    pub journal_bytes_migrated: u64,
    pub journal_region_bytes: u64,
    /// Bytes GC copied out of the journal region (zero when whole blocks expire).
    pub journal_region_copied_bytes: u64,
    pub detector_precision: Option<f64>,
    pub detector_recall: Option<f64>,
    pub journal_share: Option<f64>,
    /// NAND pages programmed for the host, and host flushes (a commit has two): pages per
    /// commit set how many program rounds a commit's flushes wait (docs/slc-journal.md).
    pub host_pages: u64,
    pub flushes: u64,
    pub wall_s: f64,
    /// Warnings of the point's results audit (shares a reader of its figures must know).
    pub audit_warnings: Vec<crate::AuditWarning>,
}

fn run_one(
    p: &SlcParams,
    policy: &'static str,
    app: App,
    mode: JournalMode,
    fsync: Option<u32>,
) -> Result<SlcRun> {
    let t = Instant::now();
    let cfg = p.config(policy, app, mode, fsync.unwrap_or(16))?;
    let app_bytes = match &cfg.workload {
        WorkloadConfig::Ext4(e) => e.app_write_bytes,
        _ => 0,
    };
    let mut sim = Simulation::new(cfg)?;
    let r = sim.run_workload(&mut NoProgress)?;
    let j = r.journal.as_ref().ok_or_else(|| {
        ExperimentError::invalid("ftl.placement", "the run reported no journal section")
    })?;
    let lat = r.latency_ns.as_ref();
    let jl = j.journal_write_latency_ns.as_ref();
    let sim_s = r.host.sim_time_ns as f64 / 1e9;
    Ok(SlcRun {
        experiment: if app == App::Fio { "fio" } else { "filebench" },
        app: format!("{app:?}").to_lowercase(),
        mode: format!("{mode:?}").to_lowercase(),
        fsync_every: fsync,
        policy,
        sim_s,
        app_mb_per_s: if app_bytes > 0 {
            app_bytes as f64 / 1e6 / sim_s.max(1e-9)
        } else {
            0.0
        },
        iops: r.host.iops,
        journal_latency_mean_ns: jl.map_or(0.0, |l| l.mean),
        journal_latency_p99_ns: jl.map_or(0, |l| l.p99),
        flush_latency_mean_ns: lat.map_or(0.0, |l| l.flush.mean),
        flush_latency_p99_ns: lat.map_or(0, |l| l.flush.p99),
        tlc_direct_bytes: j.data_region_direct_bytes,
        tlc_migrated_bytes: j.data_region_migrated_bytes,
        journal_bytes_migrated: j.journal_bytes_migrated,
        journal_region_bytes: j
            .host_bytes_by_region
            .iter()
            .find(|b| b.region == "journal")
            .map_or(0, |b| b.host_bytes),
        journal_region_copied_bytes: j
            .host_bytes_by_region
            .iter()
            .find(|b| b.region == "journal")
            .map_or(0, |b| b.relocated_bytes),
        detector_precision: j.detector.as_ref().and_then(|d| d.precision),
        detector_recall: j.detector.as_ref().and_then(|d| d.recall),
        journal_share: j.journal_share_of_written_bytes,
        host_pages: r.nand.programs.host,
        flushes: r.host.counters.flushes,
        wall_s: t.elapsed().as_secs_f64(),
        audit_warnings: crate::AuditWarning::of(
            &r,
            format!(
                "{policy} {app:?} {mode:?}{}",
                fsync.map_or(String::new(), |f| format!(" fsync {f}"))
            )
            .to_lowercase(),
        ),
    })
}

impl SlcRun {
    /// NAND pages programmed for the host per commit (two flushes each).
    pub fn pages_per_commit(&self) -> f64 {
        if self.flushes < 2 {
            return 0.0;
        }
        self.host_pages as f64 / (self.flushes / 2) as f64
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct SlcReport {
    pub scale: u32,
    pub device: SlcDevice,
    pub runs: Vec<SlcRun>,
    pub wall_s: f64,
}

/// Every run, in parallel (rayon's pool).
pub fn run(p: &SlcParams, on_run: &(dyn Fn(&SlcRun) + Sync)) -> Result<SlcReport> {
    let t = Instant::now();
    p.check()?;
    let device = p.device()?;
    let runs = p
        .jobs()
        .par_iter()
        .map(|&(pol, app, mode, f)| {
            let r = run_one(p, pol, app, mode, f)?;
            on_run(&r);
            Ok(r)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(SlcReport {
        scale: p.scale,
        device,
        runs,
        wall_s: t.elapsed().as_secs_f64(),
    })
}

pub const CSV_HEADER: &str = "experiment,app,mode,fsync_every,policy,sim_s,app_mb_per_s,iops,journal_latency_mean_ns,journal_latency_p99_ns,flush_latency_mean_ns,flush_latency_p99_ns,tlc_direct_bytes,tlc_migrated_bytes,journal_bytes_migrated,journal_region_bytes,journal_region_copied_bytes,detector_precision,detector_recall,journal_share,host_pages,flushes";

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |x| format!("{x:.4}"))
}

/// A detector ratio in the report: `n/a` when it is undefined (precision when the detector
/// flagged nothing, recall without journal writes).
fn ratio_md(v: Option<f64>) -> String {
    v.map_or("n/a".to_string(), |x| format!("{x:.4}"))
}

/// A share (0…1) in the report as a percentage, `n/a` when undefined.
fn percent_md(v: Option<f64>) -> String {
    v.map_or("n/a".to_string(), |x| format!("{:.1} %", 100.0 * x))
}

impl SlcReport {
    pub fn find(&self, app: &str, mode: &str, fsync: Option<u32>, policy: &str) -> Option<&SlcRun> {
        self.runs.iter().find(|r| {
            r.app == app && r.mode == mode && r.fsync_every == fsync && r.policy == policy
        })
    }

    pub fn csv(&self) -> String {
        let mut s = String::from(CSV_HEADER);
        s.push('\n');
        for r in &self.runs {
            s += &format!(
                "{},{},{},{},{},{:.4},{:.3},{:.1},{:.0},{},{:.0},{},{},{},{},{},{},{},{},{},{},{}\n",
                r.experiment,
                r.app,
                r.mode,
                r.fsync_every.map_or(String::new(), |f| f.to_string()),
                r.policy,
                r.sim_s,
                r.app_mb_per_s,
                r.iops,
                r.journal_latency_mean_ns,
                r.journal_latency_p99_ns,
                r.flush_latency_mean_ns,
                r.flush_latency_p99_ns,
                r.tlc_direct_bytes,
                r.tlc_migrated_bytes,
                r.journal_bytes_migrated,
                r.journal_region_bytes,
                r.journal_region_copied_bytes,
                opt(r.detector_precision),
                opt(r.detector_recall),
                opt(r.journal_share),
                r.host_pages,
                r.flushes,
            );
        }
        s
    }

    /// slc-journal over slc-buffer: throughput gain (%) of a fio point or Filebench run
    /// (same request stream: the ratio of simulated times).
    pub fn gain_pct(&self, app: &str, mode: &str, fsync: Option<u32>) -> Option<f64> {
        let b = self.find(app, mode, fsync, "slc-buffer")?;
        let j = self.find(app, mode, fsync, "slc-journal")?;
        Some(100.0 * (b.sim_s / j.sim_s - 1.0))
    }

    /// Journal write latency change (%) of slc-journal vs slc-buffer: (mean, p99).
    pub fn latency_change_pct(&self, mode: &str, fsync: u32) -> Option<(f64, f64)> {
        let b = self.find("fio", mode, Some(fsync), "slc-buffer")?;
        let j = self.find("fio", mode, Some(fsync), "slc-journal")?;
        Some((
            100.0 * (j.journal_latency_mean_ns / b.journal_latency_mean_ns - 1.0),
            100.0 * (j.journal_latency_p99_ns as f64 / b.journal_latency_p99_ns as f64 - 1.0),
        ))
    }

    pub fn markdown(&self) -> String {
        let mut s = String::new();
        s += "\n### fio: 8 KiB random writes, fsync every N\n\n";
        s += "| mode | N | slc-buffer MB/s | slc-journal MB/s | gain | journal write latency mean µs (buffer → journal) | p99 µs | flush mean µs | TLC bytes buffer / journal (direct + migrated) | NAND pages per commit buffer / journal | journal region copied MiB | detector precision / recall |\n";
        s += "|---|---:|---:|---:|---:|---|---|---|---|---|---:|---|\n";
        for mode in ["data", "ordered"] {
            for r in self
                .runs
                .iter()
                .filter(|r| r.app == "fio" && r.mode == mode && r.policy == "slc-buffer")
            {
                let Some(j) = self.find("fio", mode, r.fsync_every, "slc-journal") else {
                    continue;
                };
                s += &format!(
                    "| {mode} | {} | {:.1} | {:.1} | {:+.0} % | {:.0} → {:.0} | {:.0} → {:.0} | {:.0} → {:.0} | {} / {} MiB | {:.1} / {:.1} | {} | {} / {} |\n",
                    r.fsync_every.unwrap_or(0),
                    r.app_mb_per_s,
                    j.app_mb_per_s,
                    100.0 * (r.sim_s / j.sim_s - 1.0),
                    r.journal_latency_mean_ns / 1e3,
                    j.journal_latency_mean_ns / 1e3,
                    r.journal_latency_p99_ns as f64 / 1e3,
                    j.journal_latency_p99_ns as f64 / 1e3,
                    r.flush_latency_mean_ns / 1e3,
                    j.flush_latency_mean_ns / 1e3,
                    (r.tlc_direct_bytes + r.tlc_migrated_bytes) >> 20,
                    (j.tlc_direct_bytes + j.tlc_migrated_bytes) >> 20,
                    r.pages_per_commit(),
                    j.pages_per_commit(),
                    j.journal_region_copied_bytes >> 20,
                    ratio_md(j.detector_precision),
                    ratio_md(j.detector_recall),
                );
            }
        }
        s += "\n### Filebench (block-level models)\n\n";
        s += "| mode | personality | journal share of writes | normalized throughput (slc-journal / slc-buffer) | TLC bytes buffer → journal | journal bytes migrated (journal policy) | detector precision / recall |\n";
        s += "|---|---|---:|---:|---|---:|---|\n";
        for mode in ["data", "ordered"] {
            for app in FILEBENCH {
                let a = format!("{app:?}").to_lowercase();
                let (Some(b), Some(j)) = (
                    self.find(&a, mode, None, "slc-buffer"),
                    self.find(&a, mode, None, "slc-journal"),
                ) else {
                    continue;
                };
                s += &format!(
                    "| {mode} | {a} | {} | {:.2} | {} → {} MiB | {} | {} / {} |\n",
                    percent_md(j.journal_share),
                    b.sim_s / j.sim_s,
                    (b.tlc_direct_bytes + b.tlc_migrated_bytes) >> 20,
                    (j.tlc_direct_bytes + j.tlc_migrated_bytes) >> 20,
                    j.journal_bytes_migrated,
                    ratio_md(j.detector_precision),
                    ratio_md(j.detector_recall),
                );
            }
        }
        s
    }

    /// Why the fio gain is not the paper's shape, in one line (docs/slc-journal.md): a
    /// commit's two flushes wait whole NAND program rounds on the dies, so each policy's
    /// time per commit is a staircase in its pages per commit (slc-buffer's all TLC once
    /// its buffer is full; slc-journal's journal pages in SLC), and the gain is their ratio;
    /// plus GC copies in the journal region where its pages fall on a subset of planes.
    fn fio_why(&self, mode: &str, fs: &[u32]) -> String {
        let pages: Vec<String> = fs
            .iter()
            .filter_map(|&f| {
                let b = self.find("fio", mode, Some(f), "slc-buffer")?;
                let j = self.find("fio", mode, Some(f), "slc-journal")?;
                Some(format!(
                    "{f}: {:.0}/{:.0} pages, {:.2}/{:.2} ms",
                    b.pages_per_commit(),
                    j.pages_per_commit(),
                    2e3 * b.sim_s / b.flushes.max(1) as f64,
                    2e3 * j.sim_s / j.flushes.max(1) as f64,
                ))
            })
            .collect();
        let copied: Vec<String> = fs
            .iter()
            .filter_map(|&f| self.find("fio", mode, Some(f), "slc-journal"))
            .filter(|j| j.journal_region_copied_bytes > 0)
            .map(|j| {
                format!(
                    "{}: {} MiB",
                    j.fsync_every.unwrap_or(0),
                    j.journal_region_copied_bytes >> 20
                )
            })
            .collect();
        let dies = match self.device.dies {
            1 => "the die".to_string(),
            d => format!("the {d} dies"),
        };
        let mut s = format!(
            " — why: a commit waits whole program rounds on {dies}, so time per commit steps with pages per commit (buffer/journal: {})",
            pages.join("; ")
        );
        if !copied.is_empty() {
            s += &format!(
                "; journal region GC copies where pages per commit alias with the stripe ({})",
                copied.join(", ")
            );
        }
        s
    }

    /// Why a workload pays for the split: the journal region comes out of the buffer.
    fn buffer_why(&self) -> String {
        let d = &self.device;
        format!(
            "their data overflows slc-journal's {} buffer (slc-buffer {}; the journal region takes {})",
            size_text(d.split_buffer_bytes),
            size_text(d.buffer_bytes),
            size_text(d.journal_region_bytes)
        )
    }

    /// The paper's expected shape: each check, whether it holds and the numbers.
    pub fn checks(&self) -> Vec<Check> {
        let mut out = Vec::new();
        let fs = {
            let mut v: Vec<u32> = self.runs.iter().filter_map(|r| r.fsync_every).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        for (mode, paper) in [("data", 102.0), ("ordered", 97.0)] {
            let gains: Vec<(u32, f64)> = fs
                .iter()
                .filter_map(|&f| Some((f, self.gain_pct("fio", mode, Some(f))?)))
                .collect();
            let first = gains.first().map_or(0.0, |g| g.1);
            // Issue 48 (J1): at least 1.5 × at the shortest interval.
            let ok = gains.len() >= 2
                && first >= 50.0
                && gains.iter().all(|g| g.1 > 0.0 && g.1 <= first)
                && first >= gains.last().map_or(0.0, |g| g.1);
            let mut numbers = gains
                .iter()
                .map(|(f, g)| format!("{f}: {g:+.0} %"))
                .collect::<Vec<_>>()
                .join(", ");
            if !ok && !gains.is_empty() {
                numbers += &self.fio_why(mode, &fs);
            }
            out.push(Check::new(
                "",
                format!("fio {mode}: gain positive, ≥ +50 % and largest at the shortest interval, shrinking toward the longest (paper +{paper:.0} % at 2)"),
                (!gains.is_empty()).then_some(ok),
                numbers,
            ));
        }
        for (mode, pm, pp) in [("data", -48.0, -56.0), ("ordered", -62.0, -41.0)] {
            let f = fs.first().copied().unwrap_or(2);
            let c = self.latency_change_pct(mode, f);
            let runs = self.find("fio", mode, Some(f), "slc-buffer").zip(self.find(
                "fio",
                mode,
                Some(f),
                "slc-journal",
            ));
            let numbers = match (c, runs) {
                (Some((m, p)), Some((b, j))) => format!(
                    "mean {:.0} → {:.0} µs ({m:+.0} %), p99 {:.0} → {:.0} µs ({p:+.0} %)",
                    b.journal_latency_mean_ns / 1e3,
                    j.journal_latency_mean_ns / 1e3,
                    b.journal_latency_p99_ns as f64 / 1e3,
                    j.journal_latency_p99_ns as f64 / 1e3
                ),
                _ => "not run".into(),
            };
            let ok = c.map(|(m, p)| m < 0.0 && p < 0.0);
            let why = match (ok, runs) {
                (Some(false), Some((_, j))) => format!(
                    " — why: slc-journal's journal-write p99 is {:.0} µs, one TLC program: a journal write is durable only when everything written before it is, and checkpoint writes of the previous transaction go to TLC under both policies",
                    j.journal_latency_p99_ns as f64 / 1e3
                ),
                _ => String::new(),
            };
            out.push(Check::new(
                "",
                format!("fio {mode}, N = {f}: journal write latency lower, mean and p99 (paper {pm:.0} % / {pp:.0} %)"),
                ok,
                numbers + &why,
            ));
        }
        let fb: Vec<(String, f64)> = ["data", "ordered"]
            .iter()
            .flat_map(|m| {
                FILEBENCH.iter().filter_map(move |a| {
                    let a = format!("{a:?}").to_lowercase();
                    Some((format!("{a}-{m}"), self.gain_pct(&a, m, None)?))
                })
            })
            .collect();
        if !fb.is_empty() {
            let best = fb
                .iter()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|b| b.0.clone())
                .unwrap_or_default();
            let list = fb
                .iter()
                .map(|(n, g)| format!("{n} {g:+.0} %"))
                .collect::<Vec<_>>()
                .join(", ");
            let why = if best == "varmail-data" {
                String::new()
            } else {
                format!(
                    " — why: {best} gains most; with erase suspension in the preset (reads and host programs suspend erases under both policies) a read-heavy personality's reads no longer wait behind the journal region's erases"
                )
            };
            out.push(Check::new(
                "",
                "Filebench: varmail-data the largest gain (paper +65 %; fileserver-data +30 %, fileserver-ordered +13 %, varmail-ordered +10 %)"
                ,Some(best == "varmail-data"),
                list.clone() + &why,
            ));
            let below: Vec<String> = fb
                .iter()
                .filter(|x| x.1 <= -2.0)
                .map(|x| x.0.clone())
                .collect();
            let why = if below.is_empty() {
                String::new()
            } else {
                format!(" — why: {}; {}", below.join(", "), self.buffer_why())
            };
            out.push(Check::new(
                "",
                "Filebench: none below the baseline (within 2 %)",
                Some(below.is_empty()),
                list + &why,
            ));
        }
        let pairs: Vec<(&SlcRun, &SlcRun)> = self
            .runs
            .iter()
            .filter(|r| r.policy == "slc-buffer")
            .filter_map(|b| Some((b, self.find(&b.app, &b.mode, b.fsync_every, "slc-journal")?)))
            .collect();
        let tlc = |r: &SlcRun| r.tlc_direct_bytes + r.tlc_migrated_bytes;
        let more: Vec<String> = pairs
            .iter()
            .filter(|(b, j)| tlc(j) > tlc(b))
            .map(|(b, j)| {
                format!(
                    "{}-{}{} +{} MiB",
                    b.app,
                    b.mode,
                    b.fsync_every.map_or(String::new(), |f| format!(" N = {f}")),
                    (tlc(j) - tlc(b)) >> 20
                )
            })
            .collect();
        let mut numbers = format!("{} of {} runs", pairs.len() - more.len(), pairs.len());
        if !more.is_empty() {
            numbers += &format!(" — why: {}; {}", more.join(", "), self.buffer_why());
        }
        out.push(Check::new(
            "",
            "fewer bytes to TLC with slc-journal for every workload",
            (!pairs.is_empty()).then_some(more.is_empty()),
            numbers,
        ));
        let migrated: u64 = self
            .runs
            .iter()
            .filter(|r| r.policy == "slc-journal")
            .map(|r| r.journal_bytes_migrated)
            .sum();
        out.push(Check::new(
            "",
            "zero journal bytes migrated to TLC (slc-journal)",
            Some(migrated == 0),
            format!("{migrated} B"),
        ));
        out
    }
}

/// `ssdlab reproduce slc`.
pub struct Slc;

/// `reproduce slc`'s own flags.
#[derive(clap::Args)]
pub struct SlcArgs {
    /// Shrink the device by this divisor (its 16 chips / SCALE, a power of two ≤ 16; the
    /// SLC, journal and data written shrink with it); 1 = the 64 GiB device.
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// fsync intervals of the fio runs.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16,32,64,128")]
    fsync_every: Vec<u32>,
    /// Requests per Filebench run.
    #[arg(long, default_value_t = 400_000)]
    filebench_requests: u64,
    /// `slc-journal`'s journal region in SLC blocks per plane (4 ..= 20; the buffer keeps
    /// the rest of the 24). Below 11 the padded journal ring no longer fits and the
    /// region's GC copies (docs/slc-journal.md).
    #[arg(long, default_value_t = JOURNAL_BLOCKS_PER_PLANE)]
    journal_blocks_per_plane: u32,
    /// The journal region's pages take planes from a stripe cursor of their own (region key
    /// `own_stripe`) instead of the one all host pages share: no GC copies where a commit's
    /// pages alias with the 32-plane stripe (docs/slc-journal.md).
    #[arg(long)]
    journal_own_stripe: bool,
    /// Planes the journal region takes at scale 1 (all 24 SLC blocks of each, the buffer
    /// the other planes'; divided by the scale, at least 1): 7 = the paper's 128 MiB
    /// journal beside the region's reserve. 0: the journal region on every plane, sized by
    /// --journal-blocks-per-plane (issue 36's layout).
    #[arg(long, default_value_t = JOURNAL_PLANES)]
    journal_planes: u32,
    /// SLC partial-page programs (NOP) of the device, both policies; 1 = a flushed
    /// partial page is padded.
    #[arg(long, default_value_t = SLC_PARTIAL_PROGRAMS)]
    slc_partial_programs: u32,
}

impl Experiment for Slc {
    const NAME: &'static str = "slc";
    const ABOUT: &'static str = "Spec 05: SLC write buffer (slc-buffer) vs SLC buffer + journal region (slc-journal) on a 64 GiB TLC device under the ext4 model: fio with fsync 2…128, Filebench";
    const DOC_TABLES: &'static [DocTable] = &[DocTable {
        name: "slc",
        doc: "docs/slc-journal.md",
        fast: false,
        from: "### ",
        to: None,
    }];
    const REQUESTS_FLAG: Option<&'static str> = Some("--filebench-requests");
    type Args = SlcArgs;
    type Params = SlcParams;
    type Report = SlcReport;

    fn params(a: &SlcArgs, common: &Common) -> Result<SlcParams> {
        let p = SlcParams {
            scale: a.scale,
            fsync_every: a.fsync_every.clone(),
            filebench_requests: a.filebench_requests,
            journal_blocks_per_plane: a.journal_blocks_per_plane,
            journal_own_stripe: a.journal_own_stripe,
            journal_planes: a.journal_planes,
            slc_partial_programs: a.slc_partial_programs,
            seed: common.seed,
            sets: common.sets.clone(),
        };
        p.check()?;
        Ok(p)
    }

    fn banner(p: &SlcParams, threads: usize) -> String {
        let runs = 2 * 2 * (p.fsync_every.len() + FILEBENCH.len());
        // Measured on this project's 2-core VM: 44 runs in 6 s at scale 1 (0.28 s per run).
        let est = runs as f64 * 0.28 / p.scale.max(1) as f64 / threads as f64;
        format!(
            "reproduce slc: {runs} runs (2 policies x 2 journal modes x ({} fsync intervals + 4 Filebench personalities)) on {threads} threads (about {est:.0} s) ...",
            p.fsync_every.len(),
        )
    }

    fn run(p: &SlcParams, say: &dyn Say) -> Result<SlcReport> {
        run(p, &|r: &SlcRun| {
            say.progress(&format!(
                "  {:<11} {:<11} {:<7} {:>4} {:>8.2} s simulated, {:.1} s wall",
                r.policy,
                r.app,
                r.mode,
                r.fsync_every.map_or(String::new(), |f| f.to_string()),
                r.sim_s,
                r.wall_s
            ));
            say.audit(&r.audit_warnings);
        })
    }

    fn csv(r: &SlcReport) -> String {
        r.csv()
    }

    fn checks(r: &SlcReport) -> Vec<Check> {
        r.checks()
    }

    fn markdown(r: &SlcReport, _p: &SlcParams, _wall_s: f64) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "# SLC write buffer with a journal region (spec 05)\n");
        let d = &r.device;
        let layout = if d.journal_region_planes < d.planes {
            format!(
                "`slc-buffer` {} SLC blocks of buffer on every plane ({} in all), `slc-journal` the same SLC split by planes: {} blocks of buffer on {} ({}) and {} blocks of journal region on {} ({} for the {} journal: the journal and the region's reserve of 3 blocks per plane; region key `planes`)",
                d.buffer_blocks_per_plane,
                size_text(d.buffer_bytes),
                d.split_buffer_blocks_per_plane,
                planes_text(d.split_buffer_planes),
                size_text(d.split_buffer_bytes),
                d.journal_region_blocks_per_plane,
                planes_text(d.journal_region_planes),
                size_text(d.journal_region_bytes),
                size_text(d.journal_bytes),
            )
        } else {
            format!(
                "SLC per plane: `slc-buffer` {} blocks of buffer ({} in all), `slc-journal` {} blocks of buffer ({}) + {} of journal region ({} for the {} journal: its ring, up to 2 × when commits pad, + the region's reserve)",
                d.buffer_blocks_per_plane,
                size_text(d.buffer_bytes),
                d.split_buffer_blocks_per_plane,
                size_text(d.split_buffer_bytes),
                d.journal_region_blocks_per_plane,
                size_text(d.journal_region_bytes),
                size_text(d.journal_bytes),
            )
        };
        let nop = if d.slc_partial_programs > 1 {
            format!(
                "; SLC pages take {} partial programs (NOP, `partial_programs_per_page`: a commit's partial page is appended to by the next commit, each append a whole tPROG, instead of padded)",
                d.slc_partial_programs
            )
        } else {
            "; SLC pages are programmed whole (a commit's partial page is padded)".to_string()
        };
        let _ = writeln!(
            o,
            "* Device (configs/slc-journal-64g.toml{}): {} {} logical, {} pages, {} planes; {layout}{nop}; SLC 20/200/2000 µs, TLC 5× slower; migration only after 100 ms of host idle time; timed mode, no power-loss protection (a flush waits for NAND).",
            if r.scale > 1 { format!(", scaled down by {}", r.scale) } else { String::new() },
            d.cell_mode.to_uppercase(),
            size_text(d.logical_bytes),
            size_text(d.page_size_bytes as u64),
            d.planes,
        );
        let _ = writeln!(
            o,
            "{}",
            crate::experiment::gc_planes_line(
                true,
                "the paper measures a real drive, whose controller runs GC multi-plane (the default)."
            )
        );
        let _ = writeln!(
            o,
            "* Workload: the ext4 model (journal of {} at mid-volume, commits = descriptor + blocks, flush, commit block, flush); fio = 8 KiB random writes with an fsync every N, {} of application data (2 × the SLC), queue depth 1; Filebench personalities at block level. Gain = slc-buffer's simulated time / slc-journal's − 1 (same request stream). Journal write latency = a journal write's time until durable.",
            size_text(d.journal_bytes),
            size_text(d.fio_app_write_bytes),
        );
        o += &r.markdown();
        o += &crate::experiment::shape_section(
            Shape {
                title: "the paper's shape, spec 05",
                group: None,
            },
            &r.checks(),
            r.runs.len(),
            r.wall_s,
        );
        o
    }

    /// Top: fio throughput vs fsync interval (log2 axis, a tick at every interval run),
    /// both modes and policies. Bottom: Filebench throughput of slc-journal over
    /// slc-buffer, a bar per journal mode under each personality's name, against the 1.0 of
    /// slc-buffer. Legends beside the charts.
    fn plot(r: &SlcReport, svg: &mut String) -> PlotResult {
        use crate::plot::{side_legend, Mark, COLORS};
        use plotters::prelude::*;
        use plotters::style::text_anchor::{HPos, Pos, VPos};
        let root = SVGBackend::with_string(svg, (1100, 900)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, bottom) = root.split_vertically(480);
        let (top, top_legend) = top.split_horizontally(850);
        let (bottom, bottom_legend) = bottom.split_horizontally(850);
        let fio: Vec<&SlcRun> = r.runs.iter().filter(|x| x.app == "fio").collect();
        let mut intervals: Vec<u32> = fio.iter().filter_map(|x| x.fsync_every).collect();
        intervals.sort_unstable();
        intervals.dedup();
        let log2 = |f: u32| (f.max(1) as f64).log2();
        let x_lo = intervals.first().map_or(0.0, |&f| log2(f)) - 0.5;
        let x_hi = intervals.last().map_or(1.0, |&f| log2(f)) + 0.5;
        let y_hi = fio.iter().map(|x| x.app_mb_per_s).fold(1.0, f64::max) * 1.15;
        let mut c = ChartBuilder::on(&top)
            .caption(
                "fio 8 KiB random writes: throughput vs fsync interval",
                ("sans-serif", 20),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x_lo..x_hi, 0f64..y_hi)?;
        // Ticks at whole log2 values (the default intervals 2 … 128), labelled as intervals.
        c.configure_mesh()
            .x_desc("writes per fsync (log2 scale)")
            .y_desc("application MB/s")
            .x_labels((x_hi - x_lo).ceil() as usize + 1)
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() < 1e-9 {
                    format!("{}", v.exp2().round())
                } else {
                    String::new()
                }
            })
            .draw()?;
        let mut k = 0;
        let mut entries = Vec::new();
        for mode in ["data", "ordered"] {
            for pol in POLICIES {
                let mut pts: Vec<(f64, f64)> = fio
                    .iter()
                    .filter(|x| x.mode == mode && x.policy == pol)
                    .filter_map(|x| Some((log2(x.fsync_every?), x.app_mb_per_s)))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let color = COLORS[k % COLORS.len()];
                k += 1;
                c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
                c.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
                entries.push((format!("{pol}, {mode} mode"), color, Mark::Line));
            }
        }
        side_legend(&top_legend, 60, &entries)?;

        let apps: Vec<String> = FILEBENCH
            .iter()
            .map(|a| format!("{a:?}").to_lowercase())
            .collect();
        let modes = ["data", "ordered"];
        let mode_colors = [COLORS[2], COLORS[4]];
        let ratio = |app: &str, mode: &str| r.gain_pct(app, mode, None).map(|g| 1.0 + g / 100.0);
        let y_hi = apps
            .iter()
            .flat_map(|a| modes.iter().filter_map(move |m| ratio(a, m)))
            .fold(1.2, f64::max)
            * 1.1;
        let n = apps.len().max(1);
        let mut c = ChartBuilder::on(&bottom)
            .caption(
                "Filebench: slc-journal throughput / slc-buffer",
                ("sans-serif", 20),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n as f64, 0f64..y_hi)?;
        c.configure_mesh()
            .y_desc("normalized throughput")
            .x_labels(0)
            .disable_x_mesh()
            .draw()?;
        // Each personality's name under its pair of bars, as a tick label would be.
        let centred = ("sans-serif", 15)
            .into_font()
            .into_text_style(&root)
            .pos(Pos::new(HPos::Center, VPos::Top));
        for (i, app) in apps.iter().enumerate() {
            let (x, y) = c.backend_coord(&(i as f64 + 0.5, 0.0));
            root.draw(&Text::new(app.clone(), (x, y + 8), centred.clone()))?;
        }
        for (i, app) in apps.iter().enumerate() {
            for (m, mode) in modes.iter().enumerate() {
                if let Some(v) = ratio(app, mode) {
                    let x = i as f64 + 0.1 + 0.4 * m as f64;
                    c.draw_series([Rectangle::new(
                        [(x, 0.0), (x + 0.38, v)],
                        mode_colors[m].filled(),
                    )])?;
                }
            }
        }
        // The reference over the bars (no text near it: bar names are tick labels).
        c.draw_series([PathElement::new(
            vec![(0.0, 1.0), (n as f64, 1.0)],
            BLACK.stroke_width(2),
        )])?;
        let mut entries: Vec<(String, RGBColor, Mark)> = modes
            .iter()
            .zip(mode_colors)
            .map(|(m, c)| (format!("{m} mode"), c, Mark::Bar))
            .collect();
        entries.push(("1.0 = slc-buffer".into(), BLACK, Mark::Line));
        side_legend(&bottom_legend, 60, &entries)?;
        root.present()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(app: &str, policy: &'static str, precision: Option<f64>) -> SlcRun {
        SlcRun {
            experiment: "filebench",
            app: app.into(),
            mode: "ordered".into(),
            fsync_every: None,
            policy,
            sim_s: 1.0,
            app_mb_per_s: 0.0,
            iops: 1.0,
            journal_latency_mean_ns: 1.0,
            journal_latency_p99_ns: 1,
            flush_latency_mean_ns: 1.0,
            flush_latency_p99_ns: 1,
            tlc_direct_bytes: 0,
            tlc_migrated_bytes: 0,
            journal_bytes_migrated: 0,
            journal_region_bytes: 0,
            journal_region_copied_bytes: 0,
            detector_precision: precision,
            detector_recall: Some(0.0),
            journal_share: Some(0.001864),
            host_pages: 0,
            flushes: 0,
            wall_s: 0.0,
            audit_warnings: Vec::new(),
        }
    }

    /// The Filebench table gives the journal share as a percentage and an undefined
    /// precision (the detector flagged nothing) as `n/a`, not a blank.
    #[test]
    fn filebench_table_prints_percent_and_undefined_precision() {
        let r = SlcReport {
            scale: 16,
            device: SlcParams {
                scale: 16,
                ..SlcParams::paper()
            }
            .device()
            .unwrap(),
            runs: vec![
                run("webserver", "slc-buffer", None),
                run("webserver", "slc-journal", None),
            ],
            wall_s: 0.0,
        };
        let md = r.markdown();
        let row = md
            .lines()
            .find(|l| l.starts_with("| ordered | webserver |"))
            .unwrap();
        assert_eq!(
            row,
            "| ordered | webserver | 0.2 % | 1.00 | 0 → 0 MiB | 0 | n/a / 0.0000 |"
        );
    }

    /// `journal_blocks_per_plane` splits the 24 SLC blocks per plane between slc-journal's
    /// buffer and journal region (the baseline keeps all 24); sizes outside 4..=20 are
    /// refused naming the flag, before any run.
    #[test]
    fn journal_region_size_splits_the_slc() {
        // The default: the journal region on 7 planes (one a channel first), the buffer on
        // the other 25, 24 SLC blocks each; at scale 16 (2 planes) one each.
        let d = SlcParams::paper().device().unwrap();
        assert_eq!(
            (
                d.journal_region_planes,
                d.split_buffer_planes,
                d.slc_partial_programs
            ),
            (7, 25, 4)
        );
        assert_eq!(size_text(d.journal_region_bytes), "168 MiB");
        assert_eq!(size_text(d.split_buffer_bytes), "600 MiB");
        assert_eq!(
            SlcParams::paper().plane_split(8, 2).0,
            vec![0, 4, 8, 12, 16, 20, 24]
        );
        let small = SlcParams {
            scale: 16,
            ..SlcParams::paper()
        };
        assert_eq!(small.plane_split(1, 1), (vec![0], vec![1]));
        let d = SlcParams {
            journal_planes: 0,
            ..SlcParams::paper()
        }
        .device()
        .unwrap();
        assert_eq!(
            (
                d.split_buffer_blocks_per_plane,
                d.journal_region_blocks_per_plane
            ),
            (13, 11)
        );
        let p = SlcParams {
            journal_blocks_per_plane: 8,
            journal_planes: 0,
            ..SlcParams::paper()
        };
        let d = p.device().unwrap();
        assert_eq!(
            (
                d.buffer_blocks_per_plane,
                d.split_buffer_blocks_per_plane,
                d.journal_region_blocks_per_plane
            ),
            (24, 16, 8)
        );
        assert_eq!(size_text(d.split_buffer_bytes), "512 MiB");
        assert_eq!(size_text(d.journal_region_bytes), "256 MiB");
        assert_eq!(size_text(d.buffer_bytes), "768 MiB");
        for bad in [3, 21] {
            let e = SlcParams {
                journal_blocks_per_plane: bad,
                ..SlcParams::paper()
            }
            .check()
            .unwrap_err()
            .to_string();
            assert!(
                e.starts_with(&format!(
                    "--journal-blocks-per-plane: {bad}: must be 4..=20"
                )),
                "{e}"
            );
        }
    }

    /// The Filebench and TLC-bytes checks name the runs that fail them, with the MiB, and
    /// the buffer sizes that explain it.
    #[test]
    fn failing_checks_say_why() {
        let mut b = run("webserver", "slc-buffer", None);
        let mut j = run("webserver", "slc-journal", None);
        b.sim_s = 1.0;
        j.sim_s = 2.0;
        j.tlc_direct_bytes = 184 << 20;
        let r = SlcReport {
            scale: 1,
            device: SlcParams::paper().device().unwrap(),
            runs: vec![b, j],
            wall_s: 0.0,
        };
        let shape = r.checks();
        let get = |prefix: &str| {
            shape
                .iter()
                .find(|c| c.claim.starts_with(prefix))
                .map(|c| (c.holds, c.detail.clone()))
                .unwrap()
        };
        let why = "their data overflows slc-journal's 600 MiB buffer (slc-buffer 768 MiB; the journal region takes 168 MiB)";
        let (ok, numbers) = get("Filebench: none below");
        assert_eq!(ok, Some(false));
        assert_eq!(
            numbers,
            format!("webserver-ordered -50 % — why: webserver-ordered; {why}")
        );
        let (ok, numbers) = get("fewer bytes to TLC");
        assert_eq!(ok, Some(false));
        assert_eq!(
            numbers,
            format!("0 of 1 runs — why: webserver-ordered +184 MiB; {why}")
        );
    }

    /// Every check of the shape is decided by the runs: one change makes it hold, another
    /// makes it fail.
    #[test]
    fn every_shape_check_can_hold_and_fail() {
        // fio at N = 2 and 4 (gains +100 % and +50 %), Filebench varmail and fileserver
        // (+100 % and +10 %); slc-journal: lower journal latency, fewer TLC bytes.
        let mut runs = Vec::new();
        let mut pair = |app: &str, mode: &str, fsync: Option<u32>, buffer_s: f64| {
            for (policy, sim_s, lat, tlc) in [
                ("slc-buffer", buffer_s, 100.0, 100),
                ("slc-journal", 1.0, 50.0, 50),
            ] {
                let mut r = run(app, policy, None);
                (r.mode, r.fsync_every, r.sim_s) = (mode.into(), fsync, sim_s);
                (r.journal_latency_mean_ns, r.journal_latency_p99_ns) = (lat, 2 * lat as u64);
                r.tlc_direct_bytes = tlc;
                runs.push(r);
            }
        };
        for mode in ["data", "ordered"] {
            pair("fio", mode, Some(2), 2.0);
            pair("fio", mode, Some(4), 1.5);
            pair(
                "varmail",
                mode,
                None,
                if mode == "data" { 2.0 } else { 1.1 },
            );
            pair("fileserver", mode, None, 1.1);
        }
        let base = SlcReport {
            scale: 16,
            device: SlcParams::paper().device().unwrap(),
            runs,
            wall_s: 0.0,
        };
        type Change = Box<dyn Fn(&mut SlcReport)>;
        fn at<'a>(
            r: &'a mut SlcReport,
            app: &str,
            mode: &str,
            fsync: Option<u32>,
            policy: &str,
        ) -> &'a mut SlcRun {
            r.runs
                .iter_mut()
                .find(|x| {
                    x.app == app && x.mode == mode && x.fsync_every == fsync && x.policy == policy
                })
                .unwrap()
        }
        let mut cases: Vec<(String, Change, Change)> = Vec::new();
        for mode in ["data", "ordered"] {
            cases.push((
                format!("fio {mode}: gain positive"),
                Box::new(|_| {}),
                Box::new(move |r| at(r, "fio", mode, Some(4), "slc-journal").sim_s = 2.0),
            ));
            cases.push((
                format!("fio {mode}, N = 2: journal write latency lower"),
                Box::new(|_| {}),
                Box::new(move |r| {
                    at(r, "fio", mode, Some(2), "slc-journal").journal_latency_p99_ns = 300
                }),
            ));
        }
        cases.push((
            "Filebench: varmail-data the largest gain".into(),
            Box::new(|_| {}),
            Box::new(|r| at(r, "fileserver", "data", None, "slc-buffer").sim_s = 3.0),
        ));
        cases.push((
            "Filebench: none below the baseline".into(),
            Box::new(|_| {}),
            Box::new(|r| at(r, "fileserver", "ordered", None, "slc-journal").sim_s = 1.2),
        ));
        cases.push((
            "fewer bytes to TLC".into(),
            Box::new(|_| {}),
            Box::new(|r| at(r, "varmail", "ordered", None, "slc-journal").tlc_direct_bytes = 200),
        ));
        cases.push((
            "zero journal bytes migrated".into(),
            Box::new(|_| {}),
            Box::new(|r| {
                at(r, "fio", "data", Some(2), "slc-journal").journal_bytes_migrated = 4096
            }),
        ));
        assert_eq!(cases.len(), base.checks().len(), "every check has its case");
        for (check, good, bad) in &cases {
            for (change, want) in [(good, true), (bad, false)] {
                let mut r = base.clone();
                change(&mut r);
                let shape = r.checks();
                let c = shape
                    .iter()
                    .find(|c| c.claim.starts_with(check.as_str()))
                    .unwrap_or_else(|| panic!("{check}: {shape:?}"));
                assert_eq!(c.holds, Some(want), "{check}: {c:?}");
            }
        }
    }

    /// The sizes the header prints are the scaled device's: scale 16 has 2 planes, a
    /// sixteenth of the 64 GiB, 48 MiB of SLC buffer (slc-journal: a plane of buffer and
    /// a plane of journal region) and an 8 MiB journal.
    #[test]
    fn device_figures_follow_the_scale() {
        let d = SlcParams::paper().device().unwrap();
        assert_eq!((d.planes, d.buffer_blocks_per_plane), (32, 24));
        assert_eq!(size_text(d.logical_bytes), "64.0 GiB");
        assert_eq!(size_text(d.buffer_bytes), "768 MiB");
        assert_eq!(size_text(d.journal_bytes), "128 MiB");
        assert_eq!(size_text(d.fio_app_write_bytes), "1.5 GiB");
        let d = SlcParams {
            scale: 16,
            ..SlcParams::paper()
        }
        .device()
        .unwrap();
        assert_eq!(d.planes, 2);
        assert_eq!(size_text(d.logical_bytes), "4.0 GiB");
        assert_eq!(size_text(d.buffer_bytes), "48 MiB");
        // One plane of 24 SLC blocks each (1 MiB).
        assert_eq!(size_text(d.split_buffer_bytes), "24 MiB");
        assert_eq!(size_text(d.journal_region_bytes), "24 MiB");
        assert_eq!(size_text(d.journal_bytes), "8 MiB");
        assert_eq!(size_text(d.fio_app_write_bytes), "96 MiB");
    }
}
