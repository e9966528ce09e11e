//! The composition root: builds the layers from a validated config, runs preconditioning
//! (functional) and the measured workload (timed or functional), and assembles the
//! results document.

pub mod audit;
pub mod functional;
pub(crate) mod lookahead;
pub mod serve;
pub mod stop;
pub mod timed;

use crate::config::{Config, Derived, Mode};
use crate::error::{Result, SimError};
use crate::ftl::{Ftl, FtlCounters};
use crate::stats::{
    self, EraseRecord, FlowLatency, GcSummary, HostCounters, NandSummary, OpLatency,
    SuspendSummary, WearSummary,
};
use functional::FunctionalDriver;
use lookahead::Lookahead;
use rand::Rng;
use serde::Serialize;
use ssdlab_workload::rng::{stream, tag};
use ssdlab_workload::WorkloadContext;
use std::path::PathBuf;

/// Progress reports from a running simulation (the CLI draws a bar from them).
pub trait Progress {
    /// A new phase started; `total_requests` when known.
    fn phase(&mut self, _name: &str, _total_requests: Option<u64>) {}
    /// `requests_done` requests submitted so far in this phase, at simulated time `sim_time_ns`.
    fn update(&mut self, _requests_done: u64, _sim_time_ns: u64) {}
}

/// Progress sink that ignores everything.
pub struct NoProgress;
impl Progress for NoProgress {}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct DeviceSummary {
    pub logical_bytes: u64,
    pub physical_bytes: u64,
    pub over_provisioning_ratio: f64,
    pub logical_units: u32,
    pub channels: u32,
    pub dies: u32,
    pub planes: u32,
    pub blocks: u32,
    pub pages_per_block: u32,
    pub page_bytes: u32,
    pub unit_bytes: u32,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct HostSummary {
    #[serde(flatten)]
    pub counters: HostCounters,
    pub requests: u64,
    /// Simulated time of the phase: last completion (timed) or serial NAND time (functional).
    pub sim_time_ns: u64,
    pub iops: f64,
    pub read_mb_per_s: f64,
    pub write_mb_per_s: f64,
    pub mb_per_s: f64,
}

impl HostSummary {
    fn new(c: HostCounters, sim_time_ns: u64) -> HostSummary {
        let s = sim_time_ns as f64 / 1e9;
        let rate = |x: f64| {
            if sim_time_ns == 0 {
                0.0
            } else {
                stats::round6(x / s)
            }
        };
        HostSummary {
            requests: c.requests(),
            sim_time_ns,
            // Failed requests are not served.
            iops: rate((c.requests() - c.failed_requests) as f64),
            read_mb_per_s: rate(c.read_bytes as f64 / 1e6),
            write_mb_per_s: rate(c.write_bytes as f64 / 1e6),
            mb_per_s: rate((c.read_bytes + c.write_bytes) as f64 / 1e6),
            counters: c,
        }
    }
}

/// What the user's workload got, apart from a host layer's own I/O (results.json `user`,
/// present with the host log-structured layer; without one every figure is the device's:
/// [`Results::user_figures`]). With the layer and no failed request: `host.write_bytes =
/// write_bytes + workload.host_gc_write_bytes`, `host.read_bytes = read_bytes −
/// unmapped_read_bytes + workload.host_gc_write_bytes` (relocations are read once and
/// written once), `total_waf = host_waf × waf`, `host_waf ≥ 1`.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct UserSummary {
    /// Bytes the user's reads asked for (all of them, as a device counts reads of units
    /// never written).
    pub read_bytes: u64,
    /// Of them, bytes of units the host layer never wrote: zeros, read without device I/O
    /// (0 without a layer: the device counts such reads in `host.unmapped_read_units`).
    pub unmapped_read_bytes: u64,
    /// Bytes the user wrote (a host layer: whole mapping units).
    pub write_bytes: u64,
    /// User reads and writes per simulated second (10⁶ bytes).
    pub mb_per_s: f64,
    /// Bytes written to the device per user byte written (1 without a host layer).
    pub host_waf: f64,
    /// NAND writes per user byte written: `host_waf × waf`.
    pub total_waf: f64,
}

/// Latency percentiles of the timed mode (the functional mode does not model latency).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct LatencyBlock {
    pub read: stats::LatencySummary,
    pub write: stats::LatencySummary,
    /// Flushes: from submission until every unit written before them is on NAND.
    pub flush: stats::LatencySummary,
    pub per_flow: Vec<FlowLatency>,
    /// By origin, when the workload names its requests' origins (the host log-structured
    /// layer: the user's requests and its relocations); their counts add up to the
    /// ones above (the audit's `origin_counts`). Left out otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_origin: Vec<stats::OriginLatency>,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct IntegritySummary {
    pub checked_reads: u64,
    pub errors: u64,
}

/// What preconditioning did (reported apart from the measured workload).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct PreconditionSummary {
    pub sequential_fill_units: u64,
    pub random_overwrite_units: u64,
    /// Whether the WAF of two consecutive windows agreed within the tolerance (present
    /// only when `steady_state_waf_tolerance` is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state_reached: Option<bool>,
    pub sim_time_ns: u64,
    pub waf: f64,
    pub nand: NandSummary,
    pub gc: GcSummary,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct EngineSummary {
    pub events: u64,
    /// Share of the phase each die was busy, averaged over dies.
    pub die_utilization_mean: f64,
    pub channel_utilization_mean: f64,
    /// Host programs per host-program batch: the planes a host program runs on at once.
    pub host_program_planes_mean: f64,
    /// Background (GC, wear-leveling, retirement) programs per background program batch
    /// (`[scheduler] multi_plane_gc`; 0 when none ran).
    pub gc_program_planes_mean: f64,
    /// Background erases per background erase batch (0 when none ran).
    pub gc_erase_planes_mean: f64,
}

/// The deterministic results document (`results.json`).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Results {
    pub ssdlab_version: &'static str,
    pub mode: Mode,
    pub seed: u64,
    pub status: RunStatus,
    pub device: DeviceSummary,
    pub host: HostSummary,
    /// The user's figures, with a host layer between the workload and the device (the
    /// host log-structured layer): [`UserSummary`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<UserSummary>,
    /// Timed mode only (`null` in the functional mode, which does not model latency).
    pub latency_ns: Option<LatencyBlock>,
    pub nand: NandSummary,
    pub waf: f64,
    pub wear: WearSummary,
    pub gc: GcSummary,
    pub lifetime: LifetimeSummary,
    pub regions: Vec<RegionSummary>,
    pub precondition: Option<PreconditionSummary>,
    pub integrity: Option<IntegritySummary>,
    pub engine: Option<EngineSummary>,
    /// Erase/program suspension statistics (timed mode).
    pub suspend: Option<SuspendSummary>,
    /// Read retries (`[device.reliability]`, docs/reliability.md): present when a read
    /// retried or failed, or the device is aged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reliability: Option<crate::ftl::retry::ReliabilitySummary>,
    /// What the workload source skipped or adjusted (trace and fio inputs).
    pub workload: ssdlab_workload::stats::WorkloadStatsSnapshot,
    /// Demand-based mappings only (spec 04): CMT hits, translation traffic, NAND
    /// operations per host read, WAF without translation writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapping: Option<stats::MappingSummary>,
    /// SLC placements and workloads with a journal (spec 05): detector, bytes by region,
    /// migration, journal write latency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal: Option<JournalSummary>,
    /// `[device.host_interface]` (timed mode): the link's traffic, commands, per-flow
    /// throughput and link bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_interface: Option<timed::HostInterfaceSummary>,
    /// A zoned device's zones and zone commands (`[device.zns]`), since the device was built.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zns: Option<crate::ftl::zones::ZnsSummary>,
    /// An FDP device's handles (`[device.fdp]`), since the device was built.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fdp: Option<crate::ftl::fdp::FdpSummary>,
    /// Durable trims (`ftl.hold_overwritten_until_durable` with integrity versions, as
    /// `ssdlab serve` runs): what the trim records cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trims: Option<TrimSummary>,
    /// The run's check of its own figures ([`audit`]): conservation, physical bounds,
    /// shares a reader must know.
    pub audit: audit::Audit,
}

/// Trims recorded on flash (`results.json` → `trims`).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct TrimSummary {
    /// Units a trim unmapped (they held data).
    pub trimmed_units: u64,
    /// Trim records written: a mapping unit's slot each, holding ranges of trimmed units.
    pub record_slots: u64,
    /// The pages that held them: NAND programs, counted in `nand.programs.mapping` (and so
    /// in the WAF); their other slots are in `gc.padding_units`.
    pub record_pages: u64,
}

impl Results {
    /// The user's figures: results.json `user` with a host layer, else the device's own
    /// (user = host bytes, host WAF 1, total WAF = `waf`).
    pub fn user_figures(&self) -> UserSummary {
        self.user.clone().unwrap_or(UserSummary {
            read_bytes: self.host.counters.read_bytes,
            unmapped_read_bytes: 0,
            write_bytes: self.host.counters.write_bytes,
            mb_per_s: self.host.mb_per_s,
            host_waf: 1.0,
            total_waf: self.waf,
        })
    }
}

/// The user's figures with a host layer between the workload and the device: its
/// counters `w` of this phase, the device's `waf`, over `sim_time_ns`.
fn user_summary(
    w: &ssdlab_workload::stats::WorkloadStatsSnapshot,
    waf: f64,
    sim_time_ns: u64,
) -> Option<UserSummary> {
    if !w.has_host_layer() {
        return None;
    }
    // Unrounded: `total_waf = host_waf × waf` exactly.
    let host_waf = w.host_waf().unwrap_or(1.0);
    let bytes = (w.host_user_read_bytes + w.host_user_write_bytes) as f64;
    Some(UserSummary {
        read_bytes: w.host_user_read_bytes,
        unmapped_read_bytes: w.host_user_unmapped_read_bytes,
        write_bytes: w.host_user_write_bytes,
        mb_per_s: if sim_time_ns == 0 {
            0.0
        } else {
            stats::round6(bytes / 1e6 / (sim_time_ns as f64 / 1e9))
        },
        host_waf,
        total_waf: host_waf * waf,
    })
}

/// Detector decisions against the workload's truth.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct DetectorSummary {
    pub true_positive: u64,
    pub false_positive: u64,
    pub false_negative: u64,
    pub true_negative: u64,
    /// Of the writes classed journal, the share that were (`null`: none classed).
    pub precision: Option<f64>,
    /// Of the journal's writes, the share classed journal (`null`: no journal writes).
    pub recall: Option<f64>,
}

/// Bytes the host wrote into one region, and bytes relocated out of it.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RegionBytes {
    pub region: String,
    pub host_bytes: u64,
    pub relocated_bytes: u64,
}

/// Spec 05: where host data went and what the journal placement did.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct JournalSummary {
    pub placement: &'static str,
    /// The workload's journal range in bytes (ground truth), `null` without one.
    pub journal_range_bytes: Option<[u64; 2]>,
    /// The range the detector learned (bytes), `null` if none.
    pub learned_range_bytes: Option<[u64; 2]>,
    /// Per write request; `null` without ground truth (a journal range or labelled
    /// requests, e.g. blkparse `journal_process`).
    pub detector: Option<DetectorSummary>,
    /// The journal's share of the bytes the workload wrote (`null` without ground truth).
    pub journal_share_of_written_bytes: Option<f64>,
    pub host_bytes_by_region: Vec<RegionBytes>,
    /// Bytes programmed into the data region: host pages placed there directly, and units
    /// migrated into it from other regions.
    pub data_region_direct_bytes: u64,
    pub data_region_migrated_bytes: u64,
    /// Of the migrated bytes, those of the workload's journal range.
    pub journal_bytes_migrated: u64,
    /// Journal writes' latency until durable (timed mode with a journal workload).
    pub journal_write_latency_ns: Option<stats::LatencySummary>,
    /// `slc-buffer` with TurboWrite sizes: the cache's size and what went through it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slc_cache: Option<SlcCacheSummary>,
}

/// An SLC cache whose size follows the drive's free space (`slc-buffer`'s
/// `static_cache_bytes` + `dynamic_cache_bytes`; docs/calibration.md), over the phase.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct SlcCacheSummary {
    pub static_bytes: u64,
    pub dynamic_max_bytes: u64,
    /// The cache's size at the end (static + the dynamic part the free space allows), and
    /// that size in whole blocks per plane of the cache region (what the FTL applies).
    pub size_bytes: u64,
    pub size_blocks_per_plane: u32,
    /// The cache region's blocks per plane (the size can take no more).
    pub region_blocks_per_plane: u32,
    /// Host bytes programmed into the cache, straight into the data region, and drained
    /// (relocated out of the cache) in the phase.
    pub cached_bytes: u64,
    pub direct_bytes: u64,
    pub drained_bytes: u64,
    /// Host pages the cache's size sent past it, to the data region.
    pub bypassed_pages: u64,
    /// Bytes of valid data the cache holds at the end.
    pub held_bytes: u64,
}

fn gc_summary(c: &FtlCounters) -> GcSummary {
    GcSummary {
        invocations: c.gc_invocations,
        copied_units: c.gc_copied_units,
        padding_units: c.padding_units,
        partial_programs: c.partial_programs,
        reclaimed_blocks: c.reclaimed_blocks,
        reclaimed_units: c.reclaimed_units,
        refreshed_blocks: c.refreshed_blocks,
        refreshed_units: c.refreshed_units,
        reclaimed_blocks_by_rber: c.reclaimed_blocks_rber,
        refreshed_blocks_by_rber: c.refreshed_blocks_rber,
        urgent_relocations: c.urgent_relocations,
    }
}

fn diff(a: &FtlCounters, b: &FtlCounters) -> FtlCounters {
    a.since(b)
}

/// How a run ended.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The workload ran to its end.
    Completed,
    /// The device could no longer hold its logical capacity; the figures cover the run up
    /// to that point (requests in flight then are not counted).
    WornOut,
    /// `ssdlab serve` is still serving: the figures so far.
    Serving,
    /// `ssdlab serve`: power was cut; the figures up to the cut.
    PowerCut,
    /// `ssdlab serve` stopped before the device settled (its drain at the end timed out):
    /// the figures up to the stop.
    Stopped,
}

/// Bad blocks and lifetime events.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct LifetimeSummary {
    /// Blocks bad from the factory (`device.bad_block_ratio`).
    pub factory_bad_blocks: u64,
    /// Blocks retired during this phase (worn out, or a failed program or erase).
    pub retired_blocks: u64,
    pub program_failures: u64,
    pub erase_failures: u64,
    /// First block retired during the device's life so far (simulated ns and host write
    /// units of the phase that saw it), `null` if none.
    pub first_bad_block: Option<crate::ftl::LifeEvent>,
    /// When the device failed, `null` if it has not.
    pub failure: Option<crate::ftl::LifeEvent>,
    pub failure_reason: Option<String>,
}

/// Per-region figures.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RegionSummary {
    pub name: String,
    pub content: &'static str,
    pub cell_mode: &'static str,
    pub blocks: u64,
    pub physical_bytes: u64,
    pub free_blocks: u64,
    pub valid_units: u64,
    pub bad_blocks: u64,
}

/// One simulated device with its configuration (cloning it forks the device state, e.g.
/// to run several workloads from one preconditioned state).
#[derive(Clone)]
pub struct Simulation {
    pub config: Config,
    pub derived: Derived,
    pub ftl: Ftl,
    /// Directory relative workload paths resolve against.
    pub base_dir: Option<PathBuf>,
    /// Keep every completion of the next timed run in [`Simulation::completions`] (tests,
    /// debugging; memory grows with the number of requests).
    pub trace_completions: bool,
    pub completions: Vec<timed::Completion>,
    /// Every erase of the last timed run, when `trace_completions` is on.
    pub erase_trace: Vec<EraseRecord>,
    /// Latency histograms of the last timed run (for tail plots; the results hold only
    /// the percentiles).
    pub last_latency: Option<stats::Latency>,
    /// Time series of the last timed run (`output.timeseries_interval_ns`).
    pub last_timeseries: Vec<stats::TimeSeriesRow>,
    /// A run whose results audit finds a broken conservation or bound (a bug) ends with
    /// [`SimError::Internal`] (default); off, the results come back with the finding in
    /// `audit` (`ssdlab run` writes them marked, then reports the error).
    pub audit_strict: bool,
    /// Flows whose source may be drawn on a thread of its own (trace replay; results are
    /// the same either way): [`ssdlab_workload::threaded::max_workers`] by default (the
    /// process runs no more than that many at once).
    pub workload_threads: usize,
    precondition: Option<PreconditionSummary>,
    /// The request log of the next timed run (not inherited by clones).
    pending_sink: SinkSlot,
}

/// A completion sink waiting for the next timed run; a cloned simulation gets none.
#[derive(Default)]
struct SinkSlot(Option<timed::CompletionSink>);

impl Clone for SinkSlot {
    fn clone(&self) -> SinkSlot {
        SinkSlot(None)
    }
}

impl SinkSlot {
    fn take(&mut self) -> Option<timed::CompletionSink> {
        self.0.take()
    }
}

impl Simulation {
    pub fn new(config: Config) -> Result<Simulation> {
        let derived = config.validate()?;
        let ftl = Ftl::new(&config, &derived)?;
        Ok(Simulation {
            config,
            derived,
            ftl,
            base_dir: None,
            trace_completions: false,
            completions: Vec::new(),
            erase_trace: Vec::new(),
            last_latency: None,
            last_timeseries: Vec::new(),
            audit_strict: true,
            workload_threads: ssdlab_workload::threaded::max_workers(),
            precondition: None,
            pending_sink: SinkSlot::default(),
        })
    }

    /// A simulation of `config` starting from `base`'s device state (e.g. one functional
    /// preconditioning reused by several timed runs that differ in their scheduler).
    /// The device geometry and over-provisioning must be the same.
    pub fn from_state(config: Config, base: &Simulation) -> Result<Simulation> {
        let derived = config.validate()?;
        if derived.geometry != base.derived.geometry
            || derived.logical_units != base.derived.logical_units
        {
            return Err(SimError::config(
                "device",
                "the device differs from the one whose state is reused",
            ));
        }
        Ok(Simulation {
            config,
            derived,
            ftl: base.ftl.clone(),
            base_dir: base.base_dir.clone(),
            trace_completions: false,
            completions: Vec::new(),
            erase_trace: Vec::new(),
            last_latency: None,
            last_timeseries: Vec::new(),
            audit_strict: base.audit_strict,
            workload_threads: base.workload_threads,
            precondition: base.precondition.clone(),
            pending_sink: SinkSlot::default(),
        })
    }

    /// What preconditioning did, once it has run.
    pub fn precondition_summary(&self) -> Option<&PreconditionSummary> {
        self.precondition.as_ref()
    }

    pub fn workload_context(&self) -> WorkloadContext {
        WorkloadContext {
            logical_bytes: self.derived.logical_bytes,
            unit_bytes: self.derived.geometry.unit_bytes as u64,
            seed: self.config.seed,
            base_dir: self.base_dir.clone(),
            zones: self.config.host_zones(&self.derived),
            placement_ids: self
                .config
                .device
                .fdp
                .as_ref()
                .map_or(0, |f| f.placement_ids()),
        }
    }

    /// Functional preconditioning as configured (sequential fill, then random overwrites).
    pub fn precondition(&mut self, progress: &mut dyn Progress) -> Result<()> {
        let pc = self.config.precondition.clone();
        if !pc.enabled {
            return Ok(());
        }
        let units = self.ftl.logical_units() as u64;
        if pc.sequential_fill {
            // The fill writes every mapping entry (and as many OOB words): fault the
            // tables in at once rather than page by page.
            self.ftl.populate_tables();
        }
        let before = *self.ftl.counters();
        let spp = self.derived.geometry.slots_per_page;
        let mut d = FunctionalDriver::new(&mut self.ftl).in_phase("precondition");
        let seq = if pc.sequential_fill {
            sequential_fill(&mut d, units, progress)?
        } else {
            0
        };
        let random_total = (pc.random_overwrite_capacity_multiple * units as f64) as u64;
        let mut steady =
            (pc.steady_state_waf_tolerance > 0.0).then(|| SteadyState::new(&pc, units, spp, d.ftl));
        let mut rng = stream(self.config.seed, tag::PRECONDITION);
        let mut done = 0u64;
        progress.phase("precondition: random overwrite", Some(random_total));
        // Units are drawn AHEAD writes early (the same sequence), so their mapping entries
        // and then what overwriting them touches can be prefetched.
        const AHEAD: usize = 16;
        let mut next = [0u32; AHEAD];
        for u in next.iter_mut() {
            *u = rng.gen_range(0..units as u32);
        }
        while done < random_total && !d.worn_out() {
            let k = done as usize % AHEAD;
            let lpn = next[k];
            next[k] = rng.gen_range(0..units as u32);
            d.ftl.media().prefetch_unit(next[k], false);
            d.ftl
                .media()
                .prefetch_unit(next[(k + AHEAD / 2) % AHEAD], true);
            d.write_unit(lpn)?;
            done += 1;
            if done & 0xFFFF == 0 {
                stop::check()?;
                if done & 0xF_FFFF == 0 {
                    progress.update(done, d.clock.time_ns);
                }
            }
            if steady.as_mut().is_some_and(|s| s.observe(done, d.ftl)) {
                break;
            }
        }
        d.flush()?;
        let time = d.clock.time_ns;
        // The measured phase's clock starts at 0: preconditioned data is programmed then.
        self.ftl.restart_program_clock();
        let c = diff(self.ftl.counters(), &before);
        self.precondition = Some(PreconditionSummary {
            sequential_fill_units: seq,
            random_overwrite_units: done,
            steady_state_reached: steady.map(|s| s.reached),
            sim_time_ns: time,
            waf: stats::waf(&c, seq + done, spp),
            nand: NandSummary::of(&c.nand),
            gc: gc_summary(&c),
        });
        Ok(())
    }

    /// Build the configured workload and read its first `requests` requests per flow, so a
    /// bad trace line or fio option fails before any long work (preconditioning).
    pub fn check_workload(&self, requests: usize) -> Result<()> {
        Ok(self
            .config
            .workload
            .check_first(&self.workload_context(), requests)?)
    }

    /// Run the configured workload in the configured mode and assemble the results.
    pub fn run_workload(&mut self, progress: &mut dyn Progress) -> Result<Results> {
        let workload = self.config.workload.build(&self.workload_context())?;
        self.run_workload_with(workload, progress)
    }

    /// Hand every completion of the next timed run to `sink` as it happens.
    pub fn set_completion_sink(&mut self, sink: timed::CompletionSink) {
        self.pending_sink = SinkSlot(Some(sink));
    }

    /// Run the configured workload (timed mode) handing every completion to `sink` as it
    /// happens (a request log: submit, complete, op, offset, size, flow).
    pub fn run_workload_logging(
        &mut self,
        progress: &mut dyn Progress,
        sink: timed::CompletionSink,
    ) -> Result<Results> {
        if self.config.mode != Mode::Timed {
            return Err(SimError::config(
                "mode",
                "a request log needs the timed mode (the functional mode has no completion times)",
            ));
        }
        self.pending_sink = SinkSlot(Some(sink));
        let r = self.run_workload(progress);
        self.pending_sink = SinkSlot(None);
        r
    }

    /// Run `workload` (instead of the configured one) and assemble the results.
    pub fn run_workload_with(
        &mut self,
        workload: ssdlab_workload::Workload,
        progress: &mut dyn Progress,
    ) -> Result<Results> {
        if workload.flows.len() > ssdlab_workload::MAX_FLOWS as usize {
            return Err(SimError::config(
                "workload",
                format!(
                    "{} flows: at most {} (NVMe's most I/O queues)",
                    workload.flows.len(),
                    ssdlab_workload::MAX_FLOWS
                ),
            ));
        }
        if let Some(h) = &self.config.device.host_interface {
            h.classes(workload.flows.len())?;
        }
        self.ftl.give_up_partial_pages();
        let before = self.ftl.counters_now();
        let workload_stats = workload.stats.clone();
        // The workload's counters may span phases (one source run in several): results
        // count this one's.
        let workload_before = workload_stats.snapshot();
        let unit = self.derived.geometry.unit_bytes as u64;
        let truth = workload_stats.journal_range();
        self.ftl.set_journal_truth(
            truth.map(|(lo, hi)| ((lo / unit) as u32, hi.div_ceil(unit) as u32)),
        );
        let mut phase = match self.config.mode {
            Mode::Timed => self.run_timed(workload, progress)?,
            Mode::Functional => self.run_functional(workload, progress)?,
        };
        // A broken control-plane rule the run's last calls did not report yet.
        self.ftl.check_internal()?;
        phase.journal_truth = truth;
        phase.journal_written = workload_stats.journal_write_bytes();
        let c = diff(&self.ftl.counters_now(), &before);
        let workload = workload_stats.snapshot().since(&workload_before);
        let r = self.view().assemble(phase, &c, workload);
        match r.audit.internal_error() {
            Some(e) if self.audit_strict => Err(e),
            _ => Ok(r),
        }
    }

    /// The measured phase in the timed mode.
    fn run_timed(
        &mut self,
        workload: ssdlab_workload::Workload,
        progress: &mut dyn Progress,
    ) -> Result<PhaseOutcome> {
        progress.phase("workload (timed)", self.config.workload.request_total());
        let mut sim = timed::TimedSim::new(
            &self.config,
            &self.derived,
            &mut self.ftl,
            workload,
            self.workload_threads,
        );
        if self.trace_completions {
            sim.trace_completions();
        }
        if let Some(sink) = self.pending_sink.take() {
            sim.set_completion_sink(sink);
        }
        let mut o = sim.run(progress)?;
        self.completions = std::mem::take(&mut o.completions);
        self.erase_trace = std::mem::take(&mut o.erases);
        let phase = timed_phase(&mut o);
        self.last_latency = Some(o.latency);
        self.last_timeseries = std::mem::take(&mut o.series);
        Ok(phase)
    }

    /// The measured phase in the functional mode: the flows round-robin, one request at a
    /// time, on one serial resource. Latency is not modelled.
    fn run_functional(
        &mut self,
        workload: ssdlab_workload::Workload,
        progress: &mut dyn Progress,
    ) -> Result<PhaseOutcome> {
        progress.phase(
            "workload (functional)",
            self.config.workload.request_total(),
        );
        let mut d = FunctionalDriver::new(&mut self.ftl)
            .with_idle_gc(self.config.ftl.idle_gc_after_ns)
            .with_power_loss_protection(self.config.ftl.power_loss_protection);
        let prefetch = d.ftl.prefetches();
        let mut threads = self.workload_threads;
        let mut ahead: Vec<Lookahead> = workload
            .flows
            .into_iter()
            .map(|f| Lookahead::new(f.source, prefetch, &mut threads))
            .collect();
        let mut live: Vec<bool> = vec![!d.worn_out(); ahead.len()];
        let mut live_flows = if d.worn_out() { 0 } else { ahead.len() };
        let mut submitted = 0u64;
        // Flows take turns, one request each, until every flow is done.
        'turns: while live_flows > 0 {
            for f in 0..ahead.len() {
                if !live[f] {
                    continue;
                }
                let past_duration = workload
                    .duration_ns
                    .is_some_and(|lim| d.clock.time_ns >= lim);
                // Past the duration the flow draws no more (a source error there is moot).
                let next = if past_duration {
                    None
                } else {
                    ahead[f].next_ref(d.ftl)?
                };
                let Some(&req) = next else {
                    live[f] = false;
                    live_flows -= 1;
                    continue;
                };
                d.submit(&req)?;
                if let Some(e) = d.last_error() {
                    // The source hears of it (the host log-structured layer stops the run).
                    ahead[f].request_failed(&req, e.name())?;
                }
                if d.worn_out() {
                    break 'turns;
                }
                submitted += 1;
                if submitted & 0xFFFF == 0 {
                    stop::check()?;
                    progress.update(submitted, d.clock.time_ns);
                }
            }
        }
        // As the timed mode settles after its last completion: the partial page still in
        // the packer is programmed (padded), so no write is lost to a later phase and
        // the counts include it (a run of 3 unit writes programs a page: WAF 4 with 4
        // units per page, not 0). The simulated time ends with the last request.
        let mut phase = functional_phase(&d);
        if !d.worn_out() {
            d.flush()?;
        }
        phase.worn_out = d.worn_out();
        Ok(phase)
    }

    /// What the results document is assembled from, borrowed field by field.
    fn view(&self) -> View<'_> {
        View {
            config: &self.config,
            derived: &self.derived,
            ftl: &self.ftl,
            precondition: &self.precondition,
        }
    }

    /// Per-region figures now.
    pub fn region_summaries(&self) -> Vec<RegionSummary> {
        self.view().region_summaries()
    }
}

/// What the results document is assembled from: a simulation's parts, borrowed apart so a
/// phase running on its FTL can assemble them too (`sim::serve`).
pub(crate) struct View<'a> {
    pub config: &'a Config,
    pub derived: &'a Derived,
    pub ftl: &'a Ftl,
    pub precondition: &'a Option<PreconditionSummary>,
}

impl View<'_> {
    /// The results document of a measured phase whose FTL counters changed by `c`.
    fn assemble(
        &self,
        phase: PhaseOutcome,
        c: &FtlCounters,
        workload: ssdlab_workload::stats::WorkloadStatsSnapshot,
    ) -> Results {
        let d = &self.derived;
        let g = &d.geometry;
        let lt = self.ftl.lifetime();
        let lifetime = LifetimeSummary {
            factory_bad_blocks: self.ftl.factory_bad_blocks(),
            retired_blocks: c.blocks_retired,
            program_failures: c.program_failures,
            erase_failures: c.erase_failures,
            first_bad_block: lt.first_bad_block,
            failure: lt.failure,
            failure_reason: lt.failure_reason.clone(),
        };
        let mut workload = workload;
        if !workload.lsm.is_empty() {
            workload.lsm.set_put_rate(phase.sim_time_ns);
        }
        let journal = self.journal_summary(&phase, c);
        let facts = self.audit_facts(&phase, c);
        let waf = stats::waf(c, phase.host.write_units, g.slots_per_page);
        let mut r = Results {
            ssdlab_version: env!("CARGO_PKG_VERSION"),
            mode: self.config.mode,
            seed: self.config.seed,
            status: if phase.worn_out {
                RunStatus::WornOut
            } else {
                RunStatus::Completed
            },
            device: DeviceSummary {
                logical_bytes: d.logical_bytes,
                physical_bytes: d.physical_bytes,
                over_provisioning_ratio: self.config.device.over_provisioning_ratio,
                logical_units: d.logical_units,
                channels: g.channels,
                dies: g.dies,
                planes: g.planes,
                blocks: g.blocks,
                pages_per_block: g.pages_per_block,
                page_bytes: g.page_bytes,
                unit_bytes: g.unit_bytes,
            },
            waf,
            host: HostSummary::new(phase.host, phase.sim_time_ns),
            user: user_summary(&workload, waf, phase.sim_time_ns),
            latency_ns: phase.latency,
            nand: NandSummary::of(&c.nand),
            wear: WearSummary::of(self.ftl.media().blocks()),
            gc: gc_summary(c),
            lifetime,
            regions: self.region_summaries(),
            precondition: self.precondition.clone(),
            integrity: self.ftl.integrity().map(|i| IntegritySummary {
                checked_reads: i.checked_reads,
                errors: 0,
            }),
            engine: phase.engine,
            suspend: phase.suspend,
            reliability: (c.reliability.retries > 0
                || c.reliability.uncorrectable > 0
                || self.ftl.reliability_aged())
            .then(|| {
                crate::ftl::retry::ReliabilitySummary::of(
                    &self.config.device.reliability,
                    &c.reliability,
                )
            }),
            workload,
            journal,
            host_interface: phase.host_interface,
            zns: self.ftl.zones().map(|z| z.summary()),
            fdp: self.ftl.fdp_summary(),
            trims: self.ftl.durable_trims().then_some(TrimSummary {
                trimmed_units: c.trimmed_units,
                record_slots: c.trim_records,
                record_pages: c.trim_record_pages,
            }),
            mapping: self.ftl.mapping_is_demand().then(|| {
                stats::MappingSummary::of(
                    self.config.ftl.mapping.name(),
                    self.ftl.mapping_dram_bytes(),
                    self.config.ftl.mapping.entries_per_tpage(g.page_bytes),
                    d.logical_units,
                    c,
                    phase.host.write_units,
                    g.slots_per_page,
                )
            }),
            audit: audit::Audit::default(),
        };
        r.audit = audit::audit(&r, &facts);
        r
    }

    /// What the audit knows beyond the results document of a phase whose FTL counters
    /// changed by `c`.
    fn audit_facts(&self, phase: &PhaseOutcome, c: &FtlCounters) -> audit::Facts {
        let g = &self.derived.geometry;
        let t = self.ftl.timing();
        // The fastest NAND read there is: one unit of a fresh block of the fastest region.
        let read = |mode| {
            let cell = crate::flash::CellState::fresh(mode);
            t.op_ns(crate::flash::OpKind::Read, cell, g.unit_bytes as u64)
        };
        let fastest_read = self.derived.regions.iter().map(|r| read(r.cell_mode)).min();
        let link = self
            .config
            .device
            .host_interface
            .as_ref()
            .filter(|_| self.config.mode == Mode::Timed);
        audit::Facts {
            timed: phase.timed_facts.clone(),
            host_units_programmed: c.host_units_programmed,
            padding_units: c.padding_units,
            slots_per_page: g.slots_per_page,
            nand_read_floor_ns: fastest_read.unwrap_or(0), // a device has a data region
            data_path: match link {
                Some(h) => audit::DataPath {
                    bound: "device.host_interface",
                    mb_per_s: stats::round6(
                        (64 * h.generation_factor() * h.lanes as u64) as f64 / 65.0 * 1000.0,
                    ),
                    full_duplex: true,
                },
                None => audit::DataPath {
                    bound: "device.host_transfer_mb_per_s",
                    mb_per_s: t.host_transfer_mb_per_s() as f64,
                    full_duplex: false,
                },
            },
        }
    }
}

/// The measured figures of a functional phase (no latency; the simulated time so far).
fn functional_phase(d: &FunctionalDriver) -> PhaseOutcome {
    PhaseOutcome {
        host: d.host,
        latency: None,
        sim_time_ns: d.clock.time_ns,
        engine: None,
        suspend: None,
        worn_out: d.worn_out(),
        journal_latency: None,
        journal_truth: None,
        journal_written: (0, 0),
        host_interface: None,
        timed_facts: None,
    }
}

/// The measured figures of a timed phase (its latencies and time series stay in `o`).
fn timed_phase(o: &mut timed::TimedOutcome) -> PhaseOutcome {
    let t = o.sim_time_ns.max(1) as f64;
    let mean = |v: &[u64]| {
        if v.is_empty() {
            0.0
        } else {
            stats::round6(v.iter().sum::<u64>() as f64 / v.len() as f64 / t)
        }
    };
    let per_flow = o
        .per_flow
        .iter()
        .map(|(name, l)| FlowLatency {
            flow: name.clone(),
            latency: OpLatency::of(l),
        })
        .collect();
    let ops = OpLatency::of(&o.latency);
    PhaseOutcome {
        host: o.host,
        latency: Some(LatencyBlock {
            read: ops.read,
            write: ops.write,
            flush: ops.flush,
            per_flow,
            by_origin: o
                .by_origin
                .iter()
                .map(|(origin, l)| stats::OriginLatency {
                    origin,
                    latency: OpLatency::of(l),
                })
                .collect(),
        }),
        sim_time_ns: o.sim_time_ns,
        engine: Some(EngineSummary {
            events: o.events,
            die_utilization_mean: mean(&o.die_busy_ns),
            channel_utilization_mean: mean(&o.channel_busy_ns),
            host_program_planes_mean: stats::round6(
                o.host_programs as f64 / o.host_program_batches.max(1) as f64,
            ),
            gc_program_planes_mean: planes_mean(o.gc_batches[0]),
            gc_erase_planes_mean: planes_mean(o.gc_batches[1]),
        }),
        suspend: Some(o.suspend.clone()),
        worn_out: o.worn_out,
        journal_latency: o.journal_latency.as_ref().map(stats::LatencySummary::of),
        journal_truth: None,
        journal_written: (0, 0),
        host_interface: o.host_interface.take(),
        timed_facts: Some(timed_facts(o)),
    }
}

/// Operations per batch, rounded (0 when no batch ran).
fn planes_mean((batches, ops): (u64, u64)) -> f64 {
    stats::round6(ops as f64 / batches.max(1) as f64)
}

/// What the audit knows of a timed phase beyond its figures.
fn timed_facts(o: &timed::TimedOutcome) -> audit::TimedFacts {
    let a = &o.audit;
    audit::TimedFacts {
        completed: a.completed,
        in_flight: a.in_flight,
        write_units_submitted: a.write_units_submitted,
        end_ns: a.end_ns,
        series: a.series_closed.then(|| audit::SeriesSums::of(&o.series)),
        die_busy_max_ns: o.die_busy_ns.iter().copied().max().unwrap_or(0),
        channels: o
            .channel_busy_ns
            .iter()
            .copied()
            .zip(a.channel_free_at_ns.iter().copied())
            .collect(),
        nand_read_min_ns: (a.nand_read_min_ns != u64::MAX).then_some(a.nand_read_min_ns),
        data_path_busy_ns: a.data_path_busy_ns,
        gc_batches: o.gc_batches,
    }
}

/// What a measured phase produced, before the results document is assembled.
struct PhaseOutcome {
    host: HostCounters,
    latency: Option<LatencyBlock>,
    sim_time_ns: u64,
    engine: Option<EngineSummary>,
    suspend: Option<SuspendSummary>,
    worn_out: bool,
    journal_latency: Option<stats::LatencySummary>,
    /// The workload's ground truth (journal range in bytes; bytes written to it and in all).
    journal_truth: Option<(u64, u64)>,
    journal_written: (u64, u64),
    host_interface: Option<timed::HostInterfaceSummary>,
    /// Timed mode: what the audit knows beyond the figures.
    timed_facts: Option<audit::TimedFacts>,
}

impl View<'_> {
    /// The `journal` section: with an SLC placement or a journal in the workload.
    fn journal_summary(&self, phase: &PhaseOutcome, c: &FtlCounters) -> Option<JournalSummary> {
        use crate::ftl::placement::PlacementConfig as P;
        let placement = &self.config.ftl.placement;
        let slc = matches!(placement, P::SlcBuffer(_) | P::SlcJournal(_));
        let j = &c.journal;
        let judged = j.true_positive + j.false_positive + j.false_negative + j.true_negative;
        if !slc && phase.journal_truth.is_none() && judged == 0 {
            return None;
        }
        let unit = self.derived.geometry.unit_bytes as u64;
        let ratio = |a: u64, b: u64| (b > 0).then(|| stats::round6(a as f64 / b as f64));
        Some(JournalSummary {
            placement: placement.name(),
            journal_range_bytes: phase.journal_truth.map(|(a, b)| [a, b]),
            learned_range_bytes: self
                .ftl
                .learned_journal()
                .map(|(a, b)| [a as u64 * unit, b as u64 * unit]),
            detector: (judged > 0).then(|| DetectorSummary {
                true_positive: j.true_positive,
                false_positive: j.false_positive,
                false_negative: j.false_negative,
                true_negative: j.true_negative,
                precision: ratio(j.true_positive, j.true_positive + j.false_positive),
                recall: ratio(j.true_positive, j.true_positive + j.false_negative),
            }),
            journal_share_of_written_bytes: phase
                .journal_truth
                .and_then(|_| ratio(phase.journal_written.0, phase.journal_written.1)),
            host_bytes_by_region: self
                .ftl
                .media()
                .regions()
                .iter()
                .map(|r| RegionBytes {
                    region: r.geo.name.clone(),
                    host_bytes: c.host_units_by_region[r.id() as usize] * unit,
                    relocated_bytes: c.relocated_units_by_region[r.id() as usize] * unit,
                })
                .collect(),
            data_region_direct_bytes: c.host_units_by_region[self.derived.data_region as usize]
                * unit,
            data_region_migrated_bytes: j.migrated_units * unit,
            journal_bytes_migrated: j.journal_units_migrated * unit,
            journal_write_latency_ns: phase.journal_latency.clone(),
            slc_cache: self.slc_cache_summary(c),
        })
    }

    /// The `journal.slc_cache` section (`slc-buffer` with TurboWrite sizes).
    fn slc_cache_summary(&self, c: &FtlCounters) -> Option<SlcCacheSummary> {
        let (size_bytes, size_blocks_per_plane) = self.ftl.cache_size_now()?;
        let sizes = self.config.ftl.placement.params().cache_size()?;
        let cache = self
            .derived
            .regions
            .iter()
            .find(|r| r.content == crate::config::RegionContent::Cache)?;
        let unit = self.derived.geometry.unit_bytes as u64;
        let media = self.ftl.media();
        let held = (0..self.derived.geometry.planes)
            .map(|p| {
                media
                    .plane_state(cache.id, crate::ids::PlaneId(p))
                    .valid_units
            })
            .sum::<u64>();
        Some(SlcCacheSummary {
            static_bytes: sizes.static_bytes,
            dynamic_max_bytes: sizes.dynamic_bytes,
            size_bytes,
            size_blocks_per_plane,
            region_blocks_per_plane: cache.blocks_per_plane,
            cached_bytes: c.host_units_by_region[cache.id as usize] * unit,
            direct_bytes: c.host_units_by_region[self.derived.data_region as usize] * unit,
            drained_bytes: c.relocated_units_by_region[cache.id as usize] * unit,
            bypassed_pages: c.journal.cache_bypassed_pages,
            held_bytes: held * unit,
        })
    }

    /// The regions' current figures.
    pub fn region_summaries(&self) -> Vec<RegionSummary> {
        let g = &self.derived.geometry;
        self.ftl
            .media()
            .regions()
            .iter()
            .map(|r| {
                let states = || {
                    (0..g.planes)
                        .map(|p| self.ftl.media().plane_state(r.id(), crate::ids::PlaneId(p)))
                };
                RegionSummary {
                    name: r.geo.name.clone(),
                    content: r.geo.content.name(),
                    cell_mode: r.geo.cell_mode.name(),
                    blocks: r.geo.blocks,
                    physical_bytes: r.geo.physical_bytes,
                    free_blocks: states().map(|p| p.free.len() as u64).sum(),
                    valid_units: states().map(|p| p.valid_units).sum(),
                    bad_blocks: r.geo.blocks
                        - states().map(|p| p.usable_blocks as u64).sum::<u64>(),
                }
            })
            .collect()
    }
}

/// Write every logical unit once, in order; returns the units written.
fn sequential_fill(
    d: &mut FunctionalDriver,
    units: u64,
    progress: &mut dyn Progress,
) -> Result<u64> {
    progress.phase("precondition: sequential fill", Some(units));
    let mut written = 0;
    while written < units && !d.worn_out() {
        d.write_unit(written as u32)?;
        written += 1;
        if written & 0xFFFF == 0 {
            stop::check()?;
            if written & 0xF_FFFF == 0 {
                progress.update(written, d.clock.time_ns);
            }
        }
    }
    d.flush()?;
    Ok(written)
}

/// The steady-state stop of preconditioning: the WAF of consecutive windows of random
/// overwrites agrees within the tolerance. Detection starts only once the device is
/// past its transient: at least one capacity of overwrites, and GC has erased a block on
/// every plane of the data region (before that, WAF is 1 and two windows agree trivially).
struct SteadyState {
    tolerance: f64,
    window: u64,
    min_overwrites: u64,
    spp: u32,
    erases_at_start: Vec<u64>,
    armed: bool,
    last_waf: Option<f64>,
    programs_at: u64,
    reached: bool,
}

impl SteadyState {
    fn new(pc: &crate::config::PreconditionConfig, units: u64, spp: u32, ftl: &Ftl) -> Self {
        SteadyState {
            tolerance: pc.steady_state_waf_tolerance,
            window: ((pc.steady_state_window_capacity_multiple * units as f64) as u64).max(1),
            min_overwrites: units,
            spp,
            erases_at_start: Self::erases_per_plane(ftl),
            armed: false,
            last_waf: None,
            programs_at: 0,
            reached: false,
        }
    }

    /// Erases so far, per plane of the data region.
    fn erases_per_plane(ftl: &Ftl) -> Vec<u64> {
        let r = ftl.media().data_region();
        (0..ftl.geometry().planes)
            .map(|p| {
                r.plane_blocks(p)
                    .map(|b| ftl.erase_counts()[b as usize] as u64)
                    .sum()
            })
            .collect()
    }

    /// `done` overwrites so far: true once steady.
    fn observe(&mut self, done: u64, ftl: &Ftl) -> bool {
        if !done.is_multiple_of(self.window) {
            return false;
        }
        let programs = ftl.nand_counts().total(crate::flash::OpKind::Program);
        if !self.armed {
            let gc_everywhere = Self::erases_per_plane(ftl)
                .iter()
                .zip(&self.erases_at_start)
                .all(|(now, start)| now > start);
            self.armed = done >= self.min_overwrites && gc_everywhere;
            self.programs_at = programs;
            return false;
        }
        let waf = (programs - self.programs_at) as f64 * self.spp as f64 / self.window as f64;
        self.programs_at = programs;
        if let Some(prev) = self.last_waf {
            if ((waf - prev) / prev).abs() < self.tolerance {
                self.reached = true;
                return true;
            }
        }
        self.last_waf = Some(waf);
        false
    }
}

/// Build, precondition and run in one call.
pub fn run(config: Config, progress: &mut dyn Progress) -> Result<Results> {
    let mut sim = Simulation::new(config)?;
    sim.precondition(progress)?;
    sim.run_workload(progress)
}
