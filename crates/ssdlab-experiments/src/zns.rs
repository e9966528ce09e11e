//! The block-interface tax (`ssdlab reproduce zns`, docs/zns.md). The same
//! random-write workloads — `uniform` and a `hot-cold` mix (80 % of the writes to 20 % of
//! the space) of 16 KiB requests (one page, one mapping unit), 80 % writes and 20 % reads — on three devices of the same
//! raw flash (the geometry of `configs/zns.toml`):
//!
//! * `conventional`: page mapping, greedy device GC, at 7 % and 28 % over-provisioning;
//! * `zns`: the zoned device (no device GC, no OP) under the host log-structured layer
//!   whose spare space is the same 7 % and 28 % (its `spare_ratio`);
//! * `fdp`: the conventional device with `[device.fdp] handles = 2`, hot writes tagged with
//!   placement identifier 1 (the synthetic `placement_by_temperature`), 7 % and 28 % OP.
//!
//! Each run fills its user space sequentially (128 KiB writes), then writes at random: the
//! fill and [`WARMUP_CAPACITY_MULTIPLE`] times its user space in the functional mode (the
//! device — and the host layer — reach steady state), then [`MEASURE_CAPACITY_MULTIPLE`]
//! times it in the timed mode on the same device state and request stream, both counted
//! in user writes (the host layer's relocations come on top): device WAF, host-layer WAF,
//! total WAF, user throughput, the user's read and write p99 / p99.99 (on ZNS the host
//! layer's relocation reads and writes apart: results.json `latency_ns.by_origin`), zone
//! resets per GB written.

use crate::experiment::{Check, Common, DocTable, Experiment, PlotResult, Say, Shape};
use crate::{ExperimentError, Result};
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::config::{FdpConfig, Mode};
use ssdlab_core::stats::LatencySummary;
use ssdlab_core::{Config, NoProgress, Results, Simulation};
use ssdlab_workload::log_structured::{
    self, LayerParams, LogStructuredConfig, LogStructuredSource,
};
use ssdlab_workload::synthetic::{AddressPattern, SyntheticConfig};
use ssdlab_workload::{
    Flow, HostRequest, RequestSource, Workload, WorkloadConfig, WorkloadContext, WorkloadError,
};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub mod raw;

pub const ZNS_TOML: &str = include_str!("../../../configs/zns.toml");

/// User writes of the functional warm-up (after the fill), in multiples of the user space.
pub const WARMUP_CAPACITY_MULTIPLE: f64 = 3.0;
/// User writes of the timed, measured phase, in multiples of the user space.
pub const MEASURE_CAPACITY_MULTIPLE: f64 = 2.0;

/// The spare space of both sides: conventional and FDP over-provisioning, the host
/// layer's `spare_ratio` on the zoned device.
pub const SPARE: [f64; 2] = [0.07, 0.28];

/// Share of the requests that are reads.
pub const READ_PERCENT: f64 = 20.0;
/// Request size (reads and writes), and the queue depth of the one flow.
pub const BLOCK_BYTES: u64 = 16384;
pub const QUEUE_DEPTH: u32 = 16;
/// Request size of the fill (one sequential pass over the user space before the mix).
pub const FILL_BLOCK_BYTES: u64 = 128 << 10;
/// The hot/cold mix: this share of the I/O goes to `HOT_SPACE_PERCENT` of the space.
pub const HOT_IO_PERCENT: f64 = 80.0;
pub const HOT_SPACE_PERCENT: f64 = 20.0;

/// Device WAF of the zoned device counts as 1 within this (the write buffer pads a
/// partial page when a zone finishes or the run ends).
pub const ZNS_WAF_TOLERANCE: f64 = 0.01;

/// A lower value counts only when it is at least this share lower (run-to-run noise).
pub const MATERIAL: f64 = 0.01;

/// The three devices of the study.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Device {
    Conventional,
    Zns,
    Fdp,
}

impl Device {
    pub const ALL: [Device; 3] = [Device::Conventional, Device::Zns, Device::Fdp];
    pub fn name(self) -> &'static str {
        match self {
            Device::Conventional => "conventional",
            Device::Zns => "zns",
            Device::Fdp => "fdp",
        }
    }
}

/// The two workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mix {
    Uniform,
    HotCold,
}

impl Mix {
    pub const ALL: [Mix; 2] = [Mix::Uniform, Mix::HotCold];
    pub fn name(self) -> &'static str {
        match self {
            Mix::Uniform => "uniform",
            Mix::HotCold => "hot-cold",
        }
    }
}

/// Parameters of the study.
#[derive(Clone, Debug)]
pub struct ZnsParams {
    /// The zoned device of `configs/zns.toml` (scaled); the conventional and FDP devices
    /// are it without `[device.zns]`.
    pub base: Config,
    /// Divisor of the channels (4, one die each): the device, and with it each run's
    /// writes.
    pub scale: u32,
    pub spare: Vec<f64>,
    /// The devices run (all three by default).
    pub devices: Vec<Device>,
    /// `[device.fdp]` of the FDP runs: 2 handles, placement identifier `i` on handle `i`.
    pub fdp: FdpConfig,
    pub warmup_capacity_multiple: f64,
    pub measure_capacity_multiple: f64,
    /// Run the §5.1 raw workload's rows too ([`raw`]).
    pub raw: bool,
    /// Run the `mix = lsm` rows ([`run_lsm`]).
    pub lsm: bool,
}

impl ZnsParams {
    /// The study at `scale`: 1, 2 or 4, dividing the 4 channels (one die each). The blocks
    /// keep their size and count per plane (the spare each OP leaves GC depends on both),
    /// zones keep striping over every die.
    pub fn paper(scale: u32) -> Result<ZnsParams> {
        if !(scale.is_power_of_two() && scale <= 4) {
            return Err(ExperimentError::invalid(
                "scale",
                format!("{scale}: 1, 2 or 4 (it divides the 4 channels)"),
            ));
        }
        let mut base = Config::from_toml_str(ZNS_TOML, "configs/zns.toml")?;
        base.device.geometry.channels /= scale;
        // The write buffer keeps the same share of the (smaller) device.
        base.ftl.write_buffer_bytes /= scale as u64;
        Ok(ZnsParams {
            base,
            scale,
            spare: SPARE.to_vec(),
            devices: Device::ALL.to_vec(),
            fdp: FdpConfig {
                handles: 2,
                placement_handles: Vec::new(),
            },
            warmup_capacity_multiple: WARMUP_CAPACITY_MULTIPLE,
            measure_capacity_multiple: MEASURE_CAPACITY_MULTIPLE,
            raw: true,
            lsm: true,
        })
    }

    /// The device of `device` at `spare` (over-provisioning of the conventional and FDP
    /// devices; the zoned device has none, its spare is the host layer's).
    pub fn config(&self, device: Device, spare: f64) -> Result<Config> {
        let mut c = self.base.clone();
        c.precondition.enabled = false;
        c.mode = Mode::Timed;
        match device {
            Device::Zns => {
                if c.device.zns.is_none() {
                    return Err(ExperimentError::invalid(
                        "device.zns",
                        "the study's base device must be zoned (configs/zns.toml)",
                    ));
                }
            }
            Device::Conventional | Device::Fdp => {
                c.device.zns = None;
                c.device.over_provisioning_ratio = spare;
                c.device.fdp = (device == Device::Fdp).then(|| self.fdp.clone());
            }
        }
        c.validate()?;
        Ok(c)
    }

    /// The random-write generator of `mix` (unlimited: the phases end it).
    pub fn synthetic(&self, mix: Mix, device: Device) -> SyntheticConfig {
        // Hot writes carry placement identifier 1 where someone uses it: FDP's handles, the
        // host layer's zones (lifetime separation).
        let tag = mix == Mix::HotCold && device != Device::Conventional;
        SyntheticConfig {
            read_percent: READ_PERCENT,
            block_size_bytes: BLOCK_BYTES,
            queue_depth: QUEUE_DEPTH,
            pattern: match mix {
                Mix::Uniform => AddressPattern::Uniform,
                Mix::HotCold => AddressPattern::HotCold,
            },
            hot_io_percent: HOT_IO_PERCENT,
            hot_space_percent: HOT_SPACE_PERCENT,
            placement_by_temperature: tag,
            // The phases stop the stream; this only bounds it.
            requests: 0,
            total_bytes: u64::MAX / 4,
            ..Default::default()
        }
    }

    /// The host log-structured layer of the zoned runs at `spare` (its `spare_ratio`): the
    /// defaults of `kind = "log-structured"`, hot and cold (placement ids 1 and 0) in
    /// separate zones on the hot/cold mix.
    pub fn layer(&self, mix: Mix, spare: f64, ctx: &WorkloadContext) -> Result<LayerParams> {
        let geometry = ctx.zones.ok_or_else(|| {
            ExperimentError::invalid("device.zns", "the zoned device reports no zones")
        })?;
        let d = LogStructuredConfig::default();
        let p = LayerParams {
            unit_bytes: ctx.unit_bytes,
            geometry,
            user_units: log_structured::user_units(&geometry, ctx.unit_bytes, spare),
            placement_ids: if mix == Mix::HotCold { 2 } else { 1 },
            separate_by_placement: true,
            gc_free_zones: d.gc_free_zones,
            gc_request_bytes: d.gc_request_bytes,
        };
        p.check()
            .map_err(|e| ExperimentError::invalid("workload", e.to_string()))?;
        Ok(p)
    }

    /// The fill: one sequential pass of 128 KiB writes over the whole user space.
    pub fn fill(&self) -> SyntheticConfig {
        SyntheticConfig {
            read_percent: 0.0,
            block_size_bytes: FILL_BLOCK_BYTES,
            queue_depth: QUEUE_DEPTH,
            pattern: AddressPattern::Sequential,
            requests: 0,
            total_bytes: 0,
            ..Default::default()
        }
    }

    /// The request stream of one run on `device` at `spare` (one flow): the fill, then the
    /// random mix, as long as `budget` lasts (the phases refill it).
    pub fn workload(
        &self,
        device: Device,
        mix: Mix,
        spare: f64,
        ctx: &WorkloadContext,
        budget: &Budget,
    ) -> Result<Workload> {
        let build = |c: SyntheticConfig, ctx: &WorkloadContext, what: &str| {
            WorkloadConfig::Synthetic(c)
                .build(ctx)
                .map_err(|e| ExperimentError::invalid(format!("workload.{what}"), e.to_string()))
        };
        let inner = |ctx: &WorkloadContext| -> Result<Workload> {
            let mut fill = self.fill();
            fill.total_bytes = ctx.logical_bytes;
            let mut fill = build(fill, ctx, "fill")?;
            let mut random = build(self.synthetic(mix, device), ctx, mix.name())?;
            let (Some(f), Some(r)) = (fill.flows.pop(), random.flows.pop()) else {
                return Err(ExperimentError::invalid("workload", "a flow is missing"));
            };
            Ok(Workload {
                flows: vec![Flow {
                    name: r.name,
                    arrival: r.arrival,
                    source: Box::new(Budgeted {
                        source: Box::new(Chain(vec![f.source, r.source].into())),
                        budget: budget.clone(),
                    }),
                }],
                duration_ns: None,
                stats: random.stats,
            })
        };
        match device {
            Device::Fdp if mix == Mix::Uniform => {
                // Nothing hot to tag: the writes go to the handles by address instead
                // (a separation that says nothing of lifetime), so the FDP runs differ
                // from the conventional device's and the check compares something.
                let mut w = inner(ctx)?;
                for f in &mut w.flows {
                    let source =
                        std::mem::replace(&mut f.source, Box::new(Chain(Default::default())));
                    f.source = Box::new(ByAddress {
                        source,
                        handles: self.fdp.placement_ids(),
                    });
                }
                Ok(w)
            }
            Device::Conventional | Device::Fdp => inner(ctx),
            Device::Zns => {
                let params = self.layer(mix, spare, ctx)?;
                let inner_ctx = WorkloadContext {
                    logical_bytes: params.user_units * ctx.unit_bytes,
                    zones: None,
                    placement_ids: params.placement_ids,
                    ..ctx.clone()
                };
                let mut w = inner(&inner_ctx)?;
                let Some(f) = w.flows.pop() else {
                    return Err(ExperimentError::invalid("workload", "a flow is missing"));
                };
                let source = LogStructuredSource::new(f.source, &params, w.stats.clone())
                    .map_err(|e| ExperimentError::invalid("workload", e.to_string()))?;
                Ok(Workload {
                    flows: vec![Flow {
                        name: f.name,
                        arrival: f.arrival,
                        source: Box::new(source),
                    }],
                    duration_ns: None,
                    stats: w.stats,
                })
            }
        }
    }

    /// Every run's configuration and workload are valid: call before announcing the runs;
    /// [`run`] calls it before any long work.
    pub fn check(&self) -> Result<()> {
        if self.spare.is_empty() {
            return Err(ExperimentError::invalid("spare", "no spare ratio to run"));
        }
        for (k, v) in [
            ("warmup_capacity_multiple", self.warmup_capacity_multiple),
            ("measure_capacity_multiple", self.measure_capacity_multiple),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(ExperimentError::invalid(k, format!("{v}: must be > 0")));
            }
        }
        for (device, mix, spare) in self.jobs() {
            let sim = Simulation::new(self.config(device, spare)?)?;
            let mut w = self.workload(
                device,
                mix,
                spare,
                &sim.workload_context(),
                &Budget::unlimited(),
            )?;
            for f in &mut w.flows {
                f.source
                    .next_request()
                    .map_err(|e| ExperimentError::invalid("workload", e.to_string()))?;
            }
        }
        Ok(())
    }

    /// Every (device, mix, spare) run in report order.
    pub fn jobs(&self) -> Vec<(Device, Mix, f64)> {
        let mut out = Vec::new();
        for mix in Mix::ALL {
            for &spare in &self.spare {
                for &device in &self.devices {
                    out.push((device, mix, spare));
                }
            }
        }
        out
    }
}

/// Sources one after the other.
struct Chain(std::collections::VecDeque<Box<dyn RequestSource>>);

impl RequestSource for Chain {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        while let Some(s) = self.0.front_mut() {
            if let Some(r) = s.next_request()? {
                return Ok(Some(r));
            }
            self.0.pop_front();
        }
        Ok(None)
    }
}

/// Writes tagged with placement identifier (16 KiB block number mod `handles`): FDP's
/// handles split by address, not by lifetime.
struct ByAddress {
    source: Box<dyn RequestSource>,
    handles: u16,
}

impl RequestSource for ByAddress {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        let mut r = self.source.next_request()?;
        if let Some(r) = r.as_mut().filter(|r| r.op.writes_data()) {
            r.placement_id = ((r.offset_bytes / BLOCK_BYTES) % self.handles.max(1) as u64) as u16;
        }
        Ok(r)
    }
}

/// The user workload's writes left in the current phase (bytes), shared by its source
/// and the phases: the source ends when it is spent, the next phase refills it and the
/// same source goes on where it stopped (the host layer, when there is one, sits on top
/// of it, so relocations do not count).
#[derive(Clone, Default)]
pub struct Budget(Arc<AtomicI64>);

impl Budget {
    /// A budget that never runs out.
    pub fn unlimited() -> Budget {
        Budget(Arc::new(AtomicI64::new(i64::MAX)))
    }

    fn set(&self, bytes: u64) {
        self.0
            .store(bytes.min(i64::MAX as u64) as i64, Ordering::Relaxed);
    }
}

/// A source that stops when its budget is spent.
struct Budgeted {
    source: Box<dyn RequestSource>,
    budget: Budget,
}

impl RequestSource for Budgeted {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        if self.budget.0.load(Ordering::Relaxed) <= 0 {
            return Ok(None);
        }
        let r = self.source.next_request()?;
        if let Some(r) = &r {
            if r.op.writes_data() {
                self.budget
                    .0
                    .fetch_sub(r.size_bytes as i64, Ordering::Relaxed);
            }
        }
        Ok(r)
    }
}

/// One source drawn from by successive phases' workloads.
struct Shared(Arc<Mutex<Box<dyn RequestSource>>>);

impl RequestSource for Shared {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next_request()
    }

    fn request_failed(&mut self, r: &HostRequest, status: &str) -> Result<(), WorkloadError> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .request_failed(r, status)
    }
}

/// The flow of a run's workload, kept across its phases.
struct Stream {
    name: String,
    arrival: ssdlab_workload::Arrival,
    source: Arc<Mutex<Box<dyn RequestSource>>>,
    stats: ssdlab_workload::stats::WorkloadStats,
    budget: Budget,
}

impl Stream {
    fn new(mut w: Workload, budget: Budget) -> Result<Stream> {
        let (Some(f), true) = (w.flows.pop(), w.flows.is_empty()) else {
            return Err(ExperimentError::invalid("workload", "one flow expected"));
        };
        Ok(Stream {
            name: f.name,
            arrival: f.arrival,
            source: Arc::new(Mutex::new(f.source)),
            stats: w.stats,
            budget,
        })
    }

    /// The next `user_write_bytes` of the user workload's writes as a workload.
    fn phase(&self, user_write_bytes: u64) -> Workload {
        self.budget.set(user_write_bytes);
        Workload {
            flows: vec![Flow {
                name: self.name.clone(),
                arrival: self.arrival,
                source: Box::new(Shared(self.source.clone())),
            }],
            duration_ns: None,
            stats: self.stats.clone(),
        }
    }
}

/// One run: a device, a workload, a spare.
#[derive(Clone, Debug, Serialize)]
pub struct ZnsRun {
    pub device: Device,
    pub mix: Mix,
    /// OP of the conventional and FDP devices; the host layer's spare ratio on ZNS.
    pub spare: f64,
    /// Bytes the host may address: the device's logical space (conventional, FDP), the
    /// layer's user space (ZNS).
    pub user_capacity_bytes: u64,
    /// Bytes written to the device in the warm-up and the measured phase.
    pub warmup_write_bytes: u64,
    pub write_bytes: u64,
    /// Of the measured phase's writes, those of the user workload (the rest the host
    /// layer's relocations).
    pub user_write_bytes: u64,
    pub user_read_bytes: u64,
    pub sim_time_ns: u64,
    /// NAND programs / host writes reaching the device.
    pub device_waf: f64,
    /// Device writes / user writes (1 without the host layer).
    pub host_waf: f64,
    pub total_waf: f64,
    /// User reads + writes per simulated second (10⁶ bytes).
    pub user_mb_per_s: f64,
    /// The user's reads and writes: the device's requests without a host layer; on ZNS
    /// the layer's requests of origin `user` (the inner workload's reads of written
    /// units, its writes).
    pub read: LatencySummary,
    pub write: LatencySummary,
    /// ZNS: the host layer's relocation reads and writes (origin `relocation`); `None`
    /// without a host layer.
    pub relocation_read: Option<LatencySummary>,
    pub relocation_write: Option<LatencySummary>,
    pub gc_victims: u64,
    /// Zone resets in the measured phase (ZNS), and per 10⁹ bytes written to the device.
    pub zone_resets: Option<u64>,
    pub zone_resets_per_gb: Option<f64>,
    /// Request errors the device reported in the measured phase (ZNS: zone errors).
    pub request_errors: u64,
    /// Device WAF of the warm-up phase.
    pub warmup_device_waf: f64,
    pub wall_s: f64,
    /// Warnings of the point's results audit (shares a reader of its figures must know).
    pub audit_warnings: Vec<crate::AuditWarning>,
}

/// The whole study.
#[derive(Clone, Debug, Serialize)]
pub struct ZnsReport {
    pub scale: u32,
    pub raw_bytes: u64,
    pub zone_bytes: u64,
    pub zones: u64,
    pub warmup_capacity_multiple: f64,
    pub measure_capacity_multiple: f64,
    pub read_percent: f64,
    pub block_bytes: u64,
    pub queue_depth: u32,
    pub hot_io_percent: f64,
    pub hot_space_percent: f64,
    pub runs: Vec<ZnsRun>,
    /// The §5.1 raw workload's rows ([`raw`]; empty when not run).
    pub raw: Vec<raw::RawRun>,
    /// `mix = lsm`: the LSM-tree store's rows.
    pub lsm_runs: Vec<LsmRun>,
    pub wall_s: f64,
}

/// Zone resets so far (since the device was built).
fn zone_resets(r: &Results) -> Option<u64> {
    r.zns.as_ref().map(|z| z.resets)
}

/// Failed requests so far (zone errors, unknown placement identifiers).
fn request_errors(r: &Results) -> u64 {
    r.zns.as_ref().map_or(0, |z| z.errors.values().sum::<u64>())
        + r.fdp.as_ref().map_or(0, |f| f.invalid_placement_ids)
}

fn measure(p: &ZnsParams, device: Device, mix: Mix, spare: f64) -> Result<ZnsRun> {
    let t = Instant::now();
    let cfg = p.config(device, spare)?;
    let mut sim = Simulation::new(cfg)?;
    let ctx = sim.workload_context();
    let capacity = ctx.logical_bytes;
    let budget = Budget::default();
    let w = p.workload(device, mix, spare, &ctx, &budget)?;
    let user_capacity_bytes = match device {
        Device::Zns => p.layer(mix, spare, &ctx)?.user_units * ctx.unit_bytes,
        _ => capacity,
    };
    let stream = Stream::new(w, budget)?;
    // In user writes: the fill, then the warm-up's random writes; then the measured ones.
    let user = user_capacity_bytes as f64;
    let warm = user_capacity_bytes + (p.warmup_capacity_multiple * user) as u64;
    let meas = (p.measure_capacity_multiple * user) as u64;
    // Warm-up: functional (no latency to keep), same device state and request stream.
    sim.config.mode = Mode::Functional;
    let w0 = sim.run_workload_with(stream.phase(warm), &mut NoProgress)?;
    sim.config.mode = Mode::Timed;
    let r = sim.run_workload_with(stream.phase(meas), &mut NoProgress)?;
    let lat = r
        .latency_ns
        .as_ref()
        .ok_or_else(|| ExperimentError::invalid("mode", "the study needs the timed mode"))?;
    let write_bytes = r.host.counters.write_bytes;
    // The user's latencies apart from the host layer's relocations (by origin); without
    // a layer the device's requests are the user's.
    let origin = |name: &str| lat.by_origin.iter().find(|o| o.origin == name);
    let (read, write) = match origin(log_structured::ORIGINS[0]) {
        Some(u) => (u.latency.read.clone(), u.latency.write.clone()),
        None => (lat.read.clone(), lat.write.clone()),
    };
    let relocation = origin(log_structured::ORIGINS[1]);
    // The user's figures: the host layer's counters of the measured phase (results count
    // a phase's own), the device's without a layer.
    let user = r.user_figures();
    let resets = zone_resets(&r).map(|n| n - zone_resets(&w0).unwrap_or(0));
    Ok(ZnsRun {
        device,
        mix,
        spare,
        user_capacity_bytes,
        warmup_write_bytes: w0.host.counters.write_bytes,
        write_bytes,
        user_write_bytes: user.write_bytes,
        user_read_bytes: user.read_bytes,
        sim_time_ns: r.host.sim_time_ns,
        device_waf: r.waf,
        host_waf: user.host_waf,
        total_waf: user.total_waf,
        user_mb_per_s: user.mb_per_s,
        read,
        write,
        relocation_read: relocation.map(|o| o.latency.read.clone()),
        relocation_write: relocation.map(|o| o.latency.write.clone()),
        gc_victims: r.gc.invocations,
        zone_resets: resets,
        zone_resets_per_gb: resets.map(|n| n as f64 / (write_bytes.max(1) as f64 / 1e9)),
        request_errors: request_errors(&r) - request_errors(&w0),
        warmup_device_waf: w0.waf,
        wall_s: t.elapsed().as_secs_f64(),
        audit_warnings: crate::AuditWarning::of(
            &r,
            format!("{} {:.0} % {}", mix.name(), spare * 100.0, device.name()),
        ),
    })
}

/// Every run, in parallel on the caller's rayon pool; `on_run` is called after each
/// (progress).
pub fn run(p: &ZnsParams, on_run: &(dyn Fn(&ZnsRun) + Sync)) -> Result<ZnsReport> {
    run_with(p, on_run, &|_| {}, &|_| {})
}

/// [`run`], with `on_raw` called after each raw row and `on_lsm` after each LSM row.
pub fn run_with(
    p: &ZnsParams,
    on_run: &(dyn Fn(&ZnsRun) + Sync),
    on_raw: &(dyn Fn(&raw::RawRun) + Sync),
    on_lsm: &(dyn Fn(&LsmRun) + Sync),
) -> Result<ZnsReport> {
    let t0 = Instant::now();
    p.check()?;
    let (runs, raw_rows) = rayon::join(
        || -> Result<Vec<ZnsRun>> {
            p.jobs()
                .par_iter()
                .map(|&(d, m, s)| {
                    let r = measure(p, d, m, s)?;
                    on_run(&r);
                    Ok(r)
                })
                .collect()
        },
        || match p.raw {
            true => raw::run(p, on_raw),
            false => Ok(Vec::new()),
        },
    );
    let (runs, raw_rows) = (runs?, raw_rows?);
    let lsm_runs = if p.lsm {
        run_lsm(p, on_lsm)?
    } else {
        Vec::new()
    };
    let g = &p.base.device.geometry;
    let planes = (g.channels * g.chips_per_channel * g.dies_per_chip * g.planes_per_die) as u64;
    let block = g.pages_per_block as u64 * g.page_size_bytes as u64;
    let (zone_bytes, zones) = p.base.device.zns.as_ref().map_or((0, 0), |z| {
        let dies = g.channels * g.chips_per_channel * g.dies_per_chip;
        let zd = if z.zone_dies == 0 { dies } else { z.zone_dies };
        let groups = (dies / zd.max(1)) as u64;
        let per_group = (g.blocks_per_plane.saturating_sub(z.spare_blocks_per_plane)
            / z.blocks_per_plane.max(1)) as u64;
        (
            zd as u64 * g.planes_per_die as u64 * z.blocks_per_plane as u64 * block,
            groups * per_group,
        )
    });
    Ok(ZnsReport {
        scale: p.scale,
        raw_bytes: planes * g.blocks_per_plane as u64 * block,
        zone_bytes,
        zones,
        warmup_capacity_multiple: p.warmup_capacity_multiple,
        measure_capacity_multiple: p.measure_capacity_multiple,
        read_percent: READ_PERCENT,
        block_bytes: BLOCK_BYTES,
        queue_depth: QUEUE_DEPTH,
        hot_io_percent: HOT_IO_PERCENT,
        hot_space_percent: HOT_SPACE_PERCENT,
        runs,
        raw: raw_rows,
        lsm_runs,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

pub const CSV_HEADER: &str = "mix,spare,device,user_capacity_bytes,write_bytes,user_write_bytes,device_waf,host_waf,total_waf,user_mb_per_s,read_p99_ns,read_p99_99_ns,write_p99_ns,write_p99_99_ns,gc_victims,zone_resets,zone_resets_per_gb,request_errors,warmup_device_waf,user_reads,user_writes,relocation_reads,relocation_read_p99_ns,relocation_read_p99_99_ns,relocation_writes,relocation_write_p99_ns,relocation_write_p99_99_ns";

impl ZnsReport {
    pub fn run_of(&self, device: Device, mix: Mix, spare: f64) -> Option<&ZnsRun> {
        self.runs
            .iter()
            .find(|r| r.device == device && r.mix == mix && r.spare == spare)
    }

    fn spares(&self) -> Vec<f64> {
        let mut s: Vec<f64> = Vec::new();
        for r in &self.runs {
            if !s.contains(&r.spare) {
                s.push(r.spare);
            }
        }
        s
    }

    pub fn csv(&self) -> String {
        let mut s = String::from(CSV_HEADER);
        s.push('\n');
        let opt_u = |v: Option<u64>| v.map_or(String::new(), |x| x.to_string());
        let opt_f = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
        for r in &self.runs {
            s += &format!(
                "{},{},{},{},{},{},{:.4},{:.4},{:.4},{:.2},{},{},{},{},{},{},{},{},{:.4},{},{},{},{},{},{},{},{}\n",
                r.mix.name(),
                r.spare,
                r.device.name(),
                r.user_capacity_bytes,
                r.write_bytes,
                r.user_write_bytes,
                r.device_waf,
                r.host_waf,
                r.total_waf,
                r.user_mb_per_s,
                r.read.p99,
                r.read.p99_99,
                r.write.p99,
                r.write.p99_99,
                r.gc_victims,
                opt_u(r.zone_resets),
                opt_f(r.zone_resets_per_gb),
                r.request_errors,
                r.warmup_device_waf,
                r.read.count,
                r.write.count,
                opt_u(r.relocation_read.as_ref().map(|l| l.count)),
                opt_u(r.relocation_read.as_ref().map(|l| l.p99)),
                opt_u(r.relocation_read.as_ref().map(|l| l.p99_99)),
                opt_u(r.relocation_write.as_ref().map(|l| l.count)),
                opt_u(r.relocation_write.as_ref().map(|l| l.p99)),
                opt_u(r.relocation_write.as_ref().map(|l| l.p99_99)),
            );
        }
        s
    }

    /// One table per workload.
    pub fn markdown(&self) -> String {
        let us = |ns: u64| format!("{:.0}", ns as f64 / 1e3);
        let mut s = String::new();
        for mix in Mix::ALL {
            s += &format!(
                "\n### {}\n\n",
                match mix {
                    Mix::Uniform => "Uniform random writes".to_string(),
                    Mix::HotCold => format!(
                        "Hot/cold: {:.0} % of the writes to {:.0} % of the space",
                        self.hot_io_percent, self.hot_space_percent
                    ),
                }
            );
            s += "| spare | device | device WAF | host WAF | total WAF | user MB/s | read p99 µs | read p99.99 µs | write p99 µs | write p99.99 µs | relocation reads / user reads | relocation read p99 µs | relocation write p99 µs | zone resets / GB | errors |\n";
            s += "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
            for r in self.runs.iter().filter(|r| r.mix == mix) {
                let reloc = |l: &Option<LatencySummary>| l.as_ref().map(|l| us(l.p99));
                s += &format!(
                    "| {:.0} % | {} | {:.3} | {:.3} | {:.3} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                    r.spare * 100.0,
                    r.device.name(),
                    r.device_waf,
                    r.host_waf,
                    r.total_waf,
                    r.user_mb_per_s,
                    us(r.read.p99),
                    us(r.read.p99_99),
                    us(r.write.p99),
                    us(r.write.p99_99),
                    r.relocation_read.as_ref().map_or("–".to_string(), |l| format!(
                        "{:.2}",
                        l.count as f64 / r.read.count.max(1) as f64
                    )),
                    reloc(&r.relocation_read).unwrap_or_else(|| "–".into()),
                    reloc(&r.relocation_write).unwrap_or_else(|| "–".into()),
                    r.zone_resets_per_gb
                        .map_or("–".to_string(), |x| format!("{x:.1}")),
                    r.request_errors,
                );
            }
        }
        let thin: Vec<String> = self
            .runs
            .iter()
            .filter(|r| r.read.count < 100_000)
            .map(|r| {
                format!(
                    "{}/{:.0} %/{} {:.1}",
                    r.mix.name(),
                    r.spare * 100.0,
                    r.device.name(),
                    r.read.count as f64 * 1e-4
                )
            })
            .collect();
        if !thin.is_empty() {
            s += &format!(
                "\nNote: the read p99.99 figures rest on fewer than 10 samples beyond them (samples): {}.\n",
                thin.join(", ")
            );
        }
        s
    }

    /// The expected shape (ZNS, USENIX ATC 2021; FDP's published results), per workload.
    pub fn checks(&self) -> Vec<Check> {
        let mut out = Vec::new();
        let spares = self.spares();
        let pc = |s: f64| format!("{:.0} %", s * 100.0);
        // 1: device WAF = 1 on ZNS.
        let zns: Vec<&ZnsRun> = self
            .runs
            .iter()
            .filter(|r| r.device == Device::Zns)
            .collect();
        if zns.is_empty() {
            out.push(Check::missing("all", "device WAF = 1 on ZNS"));
        } else {
            let ok = zns
                .iter()
                .all(|r| (r.device_waf - 1.0).abs() <= ZNS_WAF_TOLERANCE);
            out.push(Check {
                group: "all".into(),
                claim: format!("device WAF = 1 on ZNS (within {ZNS_WAF_TOLERANCE})"),
                holds: Some(ok),
                detail: zns
                    .iter()
                    .map(|r| format!("{} {} {:.3}", r.mix.name(), pc(r.spare), r.device_waf))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        for mix in Mix::ALL {
            let group = mix.name();
            for &sp in &spares {
                let conv = self.run_of(Device::Conventional, mix, sp);
                // 2: total WAF on ZNS ≤ conventional at equal spare (hot/cold: the host
                // separates by lifetime).
                if mix == Mix::HotCold {
                    let check = format!("total WAF on ZNS ≤ conventional at {} spare", pc(sp));
                    match (self.run_of(Device::Zns, mix, sp), conv) {
                        (Some(z), Some(c)) => {
                            let ok = z.total_waf <= c.total_waf;
                            let mut d = format!(
                                "ZNS {:.3} (host {:.3} × device {:.3}) vs conventional {:.3}",
                                z.total_waf, z.host_waf, z.device_waf, c.total_waf
                            );
                            if !ok {
                                d += "; the host layer's greedy zone GC copies more than the device's block GC";
                            }
                            out.push(Check {
                                group: group.into(),
                                claim: check,
                                holds: Some(ok),
                                detail: d,
                            });
                        }
                        _ => out.push(Check::missing(group, &check)),
                    }
                }
                // 3: FDP vs conventional device WAF.
                let fdp = self.run_of(Device::Fdp, mix, sp);
                match mix {
                    Mix::HotCold => {
                        let check = format!(
                            "FDP device WAF < conventional's at {} OP (by > {:.0} %)",
                            pc(sp),
                            MATERIAL * 100.0
                        );
                        match (fdp, conv) {
                            (Some(f), Some(c)) => {
                                let ok = f.device_waf < c.device_waf * (1.0 - MATERIAL);
                                let mut d = format!(
                                    "FDP {:.3} vs conventional {:.3} ({:+.1} %)",
                                    f.device_waf,
                                    c.device_waf,
                                    (f.device_waf / c.device_waf - 1.0) * 100.0
                                );
                                if !ok {
                                    d += "; separating hot from cold did not lower GC copies";
                                }
                                out.push(Check {
                                    group: group.into(),
                                    claim: check,
                                    holds: Some(ok),
                                    detail: d,
                                });
                            }
                            _ => out.push(Check::missing(group, &check)),
                        }
                    }
                    Mix::Uniform => {
                        let check = format!(
                            "FDP device WAF not below conventional's at {} OP (writes split by address, not lifetime; > −{:.0} %)",
                            pc(sp),
                            MATERIAL * 100.0
                        );
                        match (fdp, conv) {
                            (Some(f), Some(c)) => {
                                let rel = f.device_waf / c.device_waf - 1.0;
                                let ok = rel > -MATERIAL;
                                let mut d = format!(
                                    "FDP {:.3} vs conventional {:.3} ({:+.1} %)",
                                    f.device_waf,
                                    c.device_waf,
                                    rel * 100.0
                                );
                                if !ok {
                                    d += "; handles that separate nothing by lifetime lowered GC copies: FDP's gain on hot/cold would not be lifetime separation's";
                                }
                                out.push(Check {
                                    group: group.into(),
                                    claim: check,
                                    holds: Some(ok),
                                    detail: d,
                                });
                            }
                            _ => out.push(Check::missing(group, &check)),
                        }
                    }
                }
            }
        }
        out.extend(raw::checks(&self.raw));
        out
    }
}

/// `ssdlab reproduce zns`.
pub struct Zns;

/// `reproduce zns`'s own flags.
#[derive(clap::Args)]
pub struct ZnsArgs {
    /// Divide the 4 channels (one die each) by 1, 2 or 4: the device and each run's writes
    /// shrink with it (1 = the study as documented).
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// User writes of the functional warm-up after the fill, in multiples of the user space.
    #[arg(long, default_value_t = WARMUP_CAPACITY_MULTIPLE)]
    warmup: f64,
    /// User writes of the timed, measured phase, in multiples of the user space.
    #[arg(long, default_value_t = MEASURE_CAPACITY_MULTIPLE)]
    measure: f64,
}

impl Experiment for Zns {
    const NAME: &'static str = "zns";
    const ABOUT: &'static str = "The block-interface tax (ZNS, USENIX ATC 2021): random writes (uniform, hot/cold) on a conventional device, a zoned one under the host log-structured layer and an FDP one, at 7 % and 28 % spare: device, host and total WAF, tails, resets";
    const DOC_TABLES: &'static [DocTable] = &[DocTable {
        name: "zns",
        doc: "docs/zns.md",
        fast: true,
        from: "### ",
        to: None,
    }];
    const EXTRA_FILES: &'static [&'static str] = &["zns-raw.csv", "zns-lsm.csv"];
    type Args = ZnsArgs;
    type Params = ZnsParams;
    type Report = ZnsReport;

    fn params(a: &ZnsArgs, common: &Common) -> Result<ZnsParams> {
        let mut p = ZnsParams::paper(a.scale)?;
        p.base = crate::run::with_overrides(&p.base, &common.sets, "configs/zns.toml")?;
        if let Some(s) = common.seed {
            p.base.seed = s;
        }
        for (flag, v) in [("--warmup", a.warmup), ("--measure", a.measure)] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(ExperimentError::invalid(
                    flag,
                    format!("{v}: must be a positive multiple of the device's capacity"),
                ));
            }
        }
        p.warmup_capacity_multiple = a.warmup;
        p.measure_capacity_multiple = a.measure;
        p.check()?;
        Ok(p)
    }

    fn banner(p: &ZnsParams, threads: usize) -> String {
        format!(
            "reproduce zns: {} runs (conventional, zns + host layer, fdp) x (uniform, hot-cold) x spare {}, each a fill, {}x its user space at random (functional), then {}x measured (timed), on {threads} threads ...",
            p.jobs().len(),
            p.spare
                .iter()
                .map(|s| format!("{:.0} %", s * 100.0))
                .collect::<Vec<_>>()
                .join(", "),
            p.warmup_capacity_multiple,
            p.measure_capacity_multiple,
        )
    }

    fn run(p: &ZnsParams, say: &dyn Say) -> Result<ZnsReport> {
        run_with(
            p,
            &|r: &ZnsRun| {
                say.progress(&format!(
                    "  {:<8} {:>3.0} % {:<12}: total WAF {:.3}, {:.1} s wall",
                    r.mix.name(),
                    r.spare * 100.0,
                    r.device.name(),
                    r.total_waf,
                    r.wall_s
                ));
                say.audit(&r.audit_warnings);
            },
            &|r: &raw::RawRun| {
                say.progress(&format!(
                    "  raw §5.1 {:<18} {:<16}: {:.1} MiB/s written, device WAF {:.3}{}, {:.1} s wall",
                    match r.kind {
                        raw::Kind::Throughput => "throughput".to_string(),
                        raw::Kind::Latency(l) => format!("{:.0} % write load", l * 100.0),
                    },
                    r.label(),
                    r.write_mib_per_s,
                    r.device_waf,
                    r.read
                        .as_ref()
                        .map_or(String::new(), |x| format!(", read mean {:.1} µs", x.mean / 1e3)),
                    r.wall_s
                ));
                say.audit(&r.audit_warnings);
            },
            &|r: &LsmRun| {
                say.progress(&format!(
                    "  lsm      {:<20}: total WAF {:.2} (app {:.2}, device {:.3}), {:.0} puts/s{}, {:.1} s wall",
                    lsm_name(r.device, r.op),
                    r.total_waf,
                    r.app_waf,
                    r.device_waf,
                    r.puts_per_s,
                    r.rww.as_ref().map_or(String::new(), |x| format!(
                        "; rate-limited: get p99 {:.2} ms, p99.9 {:.2} ms",
                        x.get.p99 as f64 / 1e6,
                        x.get.p99_9 as f64 / 1e6
                    )),
                    r.wall_s
                ));
                say.audit(&r.audit_warnings);
            },
        )
    }

    fn extra_files(r: &ZnsReport) -> Result<Vec<(&'static str, String)>> {
        let mut files = Vec::new();
        if !r.raw.is_empty() {
            files.push(("zns-raw.csv", raw::csv(&r.raw)));
        }
        if !r.lsm_runs.is_empty() {
            files.push(("zns-lsm.csv", lsm_csv(&r.lsm_runs)));
        }
        Ok(files)
    }

    fn csv(r: &ZnsReport) -> String {
        r.csv()
    }

    fn checks(r: &ZnsReport) -> Vec<Check> {
        let mut c = r.checks();
        if !r.lsm_runs.is_empty() {
            c.extend(lsm_checks(&r.lsm_runs));
        }
        c
    }

    fn markdown(r: &ZnsReport, p: &ZnsParams, _wall_s: f64) -> String {
        let c = &p.base;
        let g = &c.device.geometry;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "# The block-interface tax: conventional vs ZNS vs FDP (ZNS, USENIX ATC 2021)\n"
        );
        let _ = writeln!(
            o,
            "* Raw flash (configs/zns.toml): {}, {} channels{} x {} chips x {} dies x {} planes, {} blocks/plane, {} pages/block, {} KiB pages: {} MiB; seed {}.",
            format!("{:?}", c.device.cell_mode).to_uppercase(),
            g.channels,
            if r.scale > 1 {
                format!(" (4 / scale {})", r.scale)
            } else {
                String::new()
            },
            g.chips_per_channel,
            g.dies_per_chip,
            g.planes_per_die,
            g.blocks_per_plane,
            g.pages_per_block,
            g.page_size_bytes >> 10,
            r.raw_bytes >> 20,
            c.seed
        );
        let _ = writeln!(
            o,
            "{}",
            crate::experiment::gc_planes_line(
                c.scheduler.multi_plane_gc,
                "a real conventional SSD runs device GC multi-plane, as the host layer's relocations already were (host programs); single-plane GC tilted the comparison to ZNS."
            )
        );
        if let Some(z) = &c.device.zns {
            let _ = writeln!(
                o,
                "* ZNS: {} zones of {} MiB (zone_dies = {} (0 = all), {} block(s) per plane), max {} open / {} active zones, {} spare blocks per plane; the host log-structured layer (greedy zone GC) with spare ratio = the spare column. Conventional and FDP: greedy GC at OP = the spare column; FDP with 2 reclaim-unit handles, hot writes on placement id 1.",
                r.zones,
                r.zone_bytes >> 20,
                z.zone_dies,
                z.blocks_per_plane,
                z.max_open_zones,
                z.max_active_zones,
                z.spare_blocks_per_plane
            );
        }
        let _ = writeln!(
            o,
            "* Workload: {} KiB requests (one page, one mapping unit) at QD {}, {:.0} % reads, the rest writes. Each run fills its user space sequentially, writes {}x it at random in the functional mode (steady state), then {}x in the timed mode (measured), in user writes. Host WAF = device writes / user writes; total = host x device; user MB/s = user reads + writes per simulated second; latencies are the user's requests (on ZNS the reads of written units and the writes the host layer issues for the user; its GC relocation reads and writes in their own columns: results.json `latency_ns.by_origin`, the relocation reads counted per user read). Zone resets per GB of device writes.",
            r.block_bytes >> 10,
            r.queue_depth,
            r.read_percent,
            r.warmup_capacity_multiple,
            r.measure_capacity_multiple
        );
        o += &r.markdown();
        o += &raw::markdown(&r.raw);
        if !r.lsm_runs.is_empty() {
            o += &lsm_intro(p, &r.lsm_runs);
            o += &lsm_markdown(&r.lsm_runs);
        }
        o += &crate::experiment::shape_section(
            Shape {
                title: "ZNS, USENIX ATC 2021; FDP",
                group: Some("workload"),
            },
            &<Zns as Experiment>::checks(r),
            r.runs.len() + r.raw.len() + r.lsm_runs.len(),
            r.wall_s,
        );
        o
    }

    /// The three write amplifications (device, host layer, total = host × device) per
    /// device and spare: a row of panels per workload, one panel per figure on a shared
    /// scale.
    fn plot(r: &ZnsReport, svg: &mut String) -> PlotResult {
        use crate::plot::COLORS;
        use plotters::prelude::*;
        let root = SVGBackend::with_string(svg, (1500, 900)).into_drawing_area();
        root.fill(&WHITE)?;
        let spares = r.spares();
        let y_hi = r
            .runs
            .iter()
            .flat_map(|x| [x.total_waf, x.host_waf, x.device_waf])
            .fold(1.0f64, f64::max)
            * 1.2;
        let n = spares.len() as f64;
        type Figure = fn(&ZnsRun) -> f64;
        let figures: [(&str, &str, Figure); 3] = [
            ("device WAF", "NAND writes / device writes", |x| {
                x.device_waf
            }),
            ("host WAF", "device writes / user writes", |x| x.host_waf),
            ("total WAF", "host WAF x device WAF", |x| x.total_waf),
        ];
        let rows = root.split_evenly((2, 3));
        for (m, mix) in [Mix::Uniform, Mix::HotCold].into_iter().enumerate() {
            for (f, (name, desc, value)) in figures.iter().enumerate() {
                let area = &rows[m * 3 + f];
                let mut c = ChartBuilder::on(area)
                    .caption(format!("{name}, {}", mix.name()), ("sans-serif", 18))
                    .margin(12)
                    .x_label_area_size(35)
                    .y_label_area_size(50)
                    .build_cartesian_2d(-0.5f64..n - 0.5, 0f64..y_hi)?;
                let labels = spares.clone();
                c.configure_mesh()
                    .x_labels(spares.len())
                    .x_label_formatter(&|x| {
                        let i = x.round();
                        if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                            format!("spare {:.0} %", labels[i as usize] * 100.0)
                        } else {
                            String::new()
                        }
                    })
                    .y_desc(*desc)
                    .draw()?;
                for (k, d) in Device::ALL.iter().enumerate() {
                    let color = COLORS[(k + 1) % COLORS.len()];
                    let w = 0.25;
                    let x0 = |i: usize| i as f64 - 0.375 + k as f64 * w;
                    let bars: Vec<_> = spares
                        .iter()
                        .enumerate()
                        .filter_map(|(i, s)| {
                            r.run_of(*d, mix, *s).map(|x| {
                                Rectangle::new(
                                    [(x0(i), 0.0), (x0(i) + w, value(x))],
                                    color.filled(),
                                )
                            })
                        })
                        .collect();
                    c.draw_series(bars)?.label(d.name()).legend(move |(a, b)| {
                        Rectangle::new([(a, b - 5), (a + 15, b + 5)], color.filled())
                    });
                }
                c.configure_series_labels()
                    .position(SeriesLabelPosition::UpperRight)
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .draw()?;
            }
        }
        root.present()?;
        Ok(())
    }
}

// ---- mix = lsm: RocksDB-like store on the three devices (issue 49 item 3) -----------

/// Conventional device OPs of the LSM rows (the paper's block SSD and a 28 % one); the
/// FDP device takes the first.
pub const LSM_OP: [f64; 2] = [0.07, 0.28];
/// RocksDB's sizes are divided by this at scale 1 (write buffer 2 MiB, L1 8 MiB, files
/// 2 MiB on the 1 GiB device: RocksDB's shape 1/32 the size); × scale below.
pub const LSM_SIZE_DIVISOR: u64 = 32;
/// The store's keys fill this share of the smallest logical space of the rows (the
/// conventional device at 28 % OP), the same keys on every device.
pub const LSM_DB_SHARE: f64 = 0.6;
/// Value bytes per key (keys: db_bench's 16 bytes).
pub const LSM_VALUE_BYTES: u64 = 1000;
/// Puts per phase, in multiples of the keys: a random load and overwrites (functional),
/// then measured overwrites with gets beside them (timed).
pub const LSM_LOAD: f64 = 1.0;
pub const LSM_WARMUP: f64 = 2.0;
pub const LSM_MEASURE: f64 = 0.5;
/// Queue depths: the store's writer (WAL and background I/O) and its gets.
pub const LSM_QUEUE_DEPTH: u32 = 8;
pub const LSM_GET_QUEUE_DEPTH: u32 = 4;
/// The paper's lowest throughput gain of ZNS over the block SSD (1.7–2.7×, §5.2) and
/// the margin the check asks for.
pub const LSM_THROUGHPUT_GAIN: f64 = 1.3;
/// The conventional rows' file system issues no online discard (XFS's and f2fs's default
/// mounts; see [`ZnsParams::lsm`]).
pub const LSM_CONVENTIONAL_NO_DISCARD: bool = true;
/// Conventional device WAF the check asks for (paper: 2.0 under XFS, 2.4 under f2fs).
pub const LSM_CONVENTIONAL_WAF: f64 = 1.5;
/// The readwhilewriting phase (the paper's read-latency runs, §5.2: db_bench
/// `readwhilewriting` with `--benchmark_write_rate_limit` = 20 MiB/s, 32 reader threads;
/// westerndigitalcorporation/zbdbench, `benchs/usenix_atc_2021_zns_eval.py`, the
/// paper's artifact): after the unlimited rows, every device's store goes on with puts
/// limited to the same rate, this share of the slowest device's unlimited put bytes/s
/// measured in the same study (a rate every device sustains: 20 MiB/s is an absolute
/// figure of a 2 TB drive, not of this one), with the gets beside them as before.
pub const LSM_RWW_SHARE: f64 = 0.5;
/// Puts of the readwhilewriting phase, in multiples of the keys.
pub const LSM_RWW_PUTS: f64 = 0.05;
/// The paper's random-read tail under the rate-limited writer: ZNS p99.9 2–4× lower.
pub const LSM_RWW_PAPER: &str = "p99.9 2–4× lower";

/// The readwhilewriting phase of an LSM row: puts at a limited rate, gets beside them.
#[derive(Clone, Debug, Serialize)]
pub struct LsmRww {
    /// The put rate limit (key + value bytes per second, the same on every device) and
    /// the rate achieved (results.json `workload.lsm`).
    pub put_rate_limit_bytes_per_s: u64,
    pub put_rate_bytes_per_s: u64,
    pub puts: u64,
    pub gets: u64,
    pub sim_time_ns: u64,
    pub device_waf: f64,
    /// The gets' device reads (flow `lsm-gets`).
    pub get: LatencySummary,
}

/// One LSM run.
#[derive(Clone, Debug, Serialize)]
pub struct LsmRun {
    pub device: Device,
    /// Over-provisioning of the conventional and FDP devices (`None` on ZNS).
    pub op: Option<f64>,
    pub keys: u64,
    /// Measured phase: puts, gets, simulated time.
    pub puts: u64,
    pub gets: u64,
    pub sim_time_ns: u64,
    pub user_bytes: u64,
    /// (WAL + flush + compaction) / user bytes; flush + compaction only.
    pub app_waf: f64,
    pub compaction_waf: f64,
    /// ZenFS-like GC: device writes / the store's own writes (1 without relocation).
    pub host_waf: f64,
    pub device_waf: f64,
    /// NAND writes / user bytes = app × host × device.
    pub total_waf: f64,
    pub puts_per_s: f64,
    pub gets_per_s: f64,
    /// Latency of the gets' device reads (flow `lsm-gets`), and of the writer's reads
    /// (compaction and relocation, reported apart) and writes.
    pub get: LatencySummary,
    pub background_read: LatencySummary,
    pub write: LatencySummary,
    pub zone_resets: u64,
    pub gc_bytes: u64,
    pub trim_bytes: u64,
    pub device_gc_victims: u64,
    pub level_bytes: Vec<u64>,
    /// The readwhilewriting phase ([`LSM_RWW_SHARE`]), when it ran.
    pub rww: Option<LsmRww>,
    pub wall_s: f64,
    pub audit_warnings: Vec<crate::AuditWarning>,
}

/// The devices of the LSM rows: conventional at each OP, ZNS, FDP at the first OP.
pub fn lsm_jobs() -> Vec<(Device, Option<f64>)> {
    let mut j: Vec<_> = LSM_OP
        .iter()
        .map(|&op| (Device::Conventional, Some(op)))
        .collect();
    j.push((Device::Zns, None));
    j.push((Device::Fdp, Some(LSM_OP[0])));
    j
}

impl ZnsParams {
    /// The device of an LSM row (FDP: 4 handles, one per lifetime class; ZNS: each zone
    /// striped over every die, `zone_dies = 0`, as the paper's WD ZN540 stripes its
    /// 1077 MiB zones (Bjørling et al., ATC 2021, §5; ZenFS keeps few zones open, so
    /// one-die zones would leave most dies idle).
    pub fn lsm_config(&self, device: Device, op: Option<f64>) -> Result<Config> {
        let mut c = self.config(device, op.unwrap_or(0.0))?;
        if let Some(z) = c.device.zns.as_mut() {
            z.zone_dies = 0;
            c.validate()?;
        }
        if device == Device::Fdp {
            c.device.fdp = Some(FdpConfig {
                handles: 4,
                placement_handles: Vec::new(),
            });
            c.validate()?;
        }
        Ok(c)
    }

    /// The store's keys: [`LSM_DB_SHARE`] of the smallest logical space of the rows.
    pub fn lsm_keys(&self) -> Result<u64> {
        let mut min = u64::MAX;
        for (d, op) in lsm_jobs() {
            let sim = Simulation::new(self.lsm_config(d, op)?)?;
            min = min.min(sim.workload_context().logical_bytes);
        }
        Ok((min as f64 * LSM_DB_SHARE / (16 + LSM_VALUE_BYTES) as f64) as u64)
    }

    /// The store's options on `device`.
    pub fn lsm(&self, device: Device, keys: u64) -> ssdlab_workload::lsm::LsmConfig {
        ssdlab_workload::lsm::LsmConfig {
            keys,
            key_bytes: 16,
            value_bytes: LSM_VALUE_BYTES,
            puts: 1,
            size_divisor: LSM_SIZE_DIVISOR * self.scale as u64,
            fdp: device == Device::Fdp,
            // 1 MiB extents at scale 1 (half a file), shrinking with the files.
            extent_bytes: (1 << 20) / self.scale as u64,
            // The paper's block-SSD rows ran RocksDB on XFS and f2fs with their default
            // mounts, which issue no online discard (XFS: `nodiscard` is the default,
            // xfs(5); trims come from a periodic fstrim): a deleted file's LBAs stay
            // valid on the device until overwritten. Not trimming is that default.
            trim: !LSM_CONVENTIONAL_NO_DISCARD || device != Device::Conventional,
            queue_depth: LSM_QUEUE_DEPTH,
            get_queue_depth: LSM_GET_QUEUE_DEPTH,
            ..Default::default()
        }
    }
}

/// A store and its device after the unlimited phase, for the readwhilewriting phase.
struct LsmState {
    sim: Simulation,
    db: ssdlab_workload::lsm::LsmDb,
    stats: ssdlab_workload::stats::WorkloadStats,
    keys: u64,
    queue_depth: u32,
    get_queue_depth: u32,
}

fn measure_lsm(
    p: &ZnsParams,
    device: Device,
    op: Option<f64>,
    keys: u64,
) -> Result<(LsmRun, LsmState)> {
    use ssdlab_workload::lsm::LsmDb;
    let t = Instant::now();
    let mut sim = Simulation::new(p.lsm_config(device, op)?)?;
    let ctx = sim.workload_context();
    let c = p.lsm(device, keys);
    let stats = ssdlab_workload::stats::WorkloadStats::default();
    let db = LsmDb::new(&c, &ctx, stats.clone())
        .map_err(|e| ExperimentError::invalid("workload", e.to_string()))?;
    let phase = |puts: f64, gets: u32| {
        db.add_puts((puts * keys as f64) as u64);
        Workload {
            flows: db.flows(c.queue_depth, gets),
            duration_ns: None,
            stats: stats.clone(),
        }
    };
    sim.config.mode = Mode::Functional;
    sim.run_workload_with(phase(LSM_LOAD, 0), &mut NoProgress)?;
    let w0 = sim.run_workload_with(phase(LSM_WARMUP, 0), &mut NoProgress)?;
    sim.config.mode = Mode::Timed;
    let r = sim.run_workload_with(phase(LSM_MEASURE, c.get_queue_depth), &mut NoProgress)?;
    let lat = r
        .latency_ns
        .as_ref()
        .ok_or_else(|| ExperimentError::invalid("mode", "the study needs the timed mode"))?;
    let flow = |name: &str| {
        lat.per_flow
            .iter()
            .find(|f| f.flow == name)
            .map(|f| f.latency.clone())
            .ok_or_else(|| ExperimentError::invalid("workload", format!("no flow {name}")))
    };
    let (writer, getter) = (flow("lsm-writes")?, flow("lsm-gets")?);
    let l = r.workload.lsm;
    let secs = r.host.sim_time_ns as f64 / 1e9;
    let app = l.app_waf().unwrap_or(0.0);
    let host = l.host_waf().unwrap_or(1.0);
    let _ = w0;
    let run = LsmRun {
        device,
        op,
        keys,
        puts: l.puts,
        gets: l.gets,
        sim_time_ns: r.host.sim_time_ns,
        user_bytes: l.user_bytes,
        app_waf: app,
        compaction_waf: l.compaction_waf().unwrap_or(0.0),
        host_waf: host,
        device_waf: r.waf,
        total_waf: app * host * r.waf,
        puts_per_s: l.puts as f64 / secs,
        gets_per_s: l.gets as f64 / secs,
        get: getter.read,
        background_read: writer.read,
        write: writer.write,
        zone_resets: l.zone_resets,
        gc_bytes: l.gc_write_bytes,
        trim_bytes: l.trim_bytes,
        device_gc_victims: r.gc.invocations,
        level_bytes: db.level_bytes(),
        rww: None,
        wall_s: t.elapsed().as_secs_f64(),
        audit_warnings: crate::AuditWarning::of(&r, format!("lsm {}", lsm_name(device, op))),
    };
    let state = LsmState {
        sim,
        db,
        stats,
        keys,
        queue_depth: c.queue_depth,
        get_queue_depth: c.get_queue_depth,
    };
    Ok((run, state))
}

/// The readwhilewriting phase on a store left by [`measure_lsm`]: [`LSM_RWW_PUTS`] × the
/// keys at `rate` key + value bytes per second, the gets beside them (timed).
fn measure_rww(run: &mut LsmRun, mut st: LsmState, rate: u64) -> Result<()> {
    let t = Instant::now();
    st.db.set_put_rate_limit(rate);
    st.db.add_puts((LSM_RWW_PUTS * st.keys as f64) as u64);
    let w = Workload {
        flows: st.db.flows(st.queue_depth, st.get_queue_depth),
        duration_ns: None,
        stats: st.stats.clone(),
    };
    let r = st.sim.run_workload_with(w, &mut NoProgress)?;
    let lat = r
        .latency_ns
        .as_ref()
        .ok_or_else(|| ExperimentError::invalid("mode", "the study needs the timed mode"))?;
    let get = lat
        .per_flow
        .iter()
        .find(|f| f.flow == "lsm-gets")
        .map(|f| f.latency.read.clone())
        .ok_or_else(|| ExperimentError::invalid("workload", "no flow lsm-gets"))?;
    let l = r.workload.lsm;
    run.rww = Some(LsmRww {
        put_rate_limit_bytes_per_s: l.put_rate_limit_bytes_per_s,
        put_rate_bytes_per_s: l.put_rate_bytes_per_s,
        puts: l.puts,
        gets: l.gets,
        sim_time_ns: r.host.sim_time_ns,
        device_waf: r.waf,
        get,
    });
    run.wall_s += t.elapsed().as_secs_f64();
    run.audit_warnings.extend(crate::AuditWarning::of(
        &r,
        format!("lsm readwhilewriting {}", lsm_name(run.device, run.op)),
    ));
    Ok(())
}

/// The put rate of the readwhilewriting phase: [`LSM_RWW_SHARE`] of the slowest row's
/// unlimited put bytes per second.
pub fn lsm_rww_rate(runs: &[LsmRun]) -> u64 {
    let slowest = runs
        .iter()
        .map(|r| r.user_bytes as f64 * 1e9 / r.sim_time_ns.max(1) as f64)
        .fold(f64::INFINITY, f64::min);
    if slowest.is_finite() {
        ((slowest * LSM_RWW_SHARE) as u64).max(1)
    } else {
        0
    }
}

fn lsm_name(device: Device, op: Option<f64>) -> String {
    match op {
        Some(op) => format!("{} {:.0} % OP", device.name(), op * 100.0),
        None => device.name().to_string(),
    }
}

/// Every LSM row, in parallel on the caller's rayon pool: the unlimited phases, then
/// the readwhilewriting phase on each store at the rate they give ([`lsm_rww_rate`]).
pub fn run_lsm(p: &ZnsParams, on_run: &(dyn Fn(&LsmRun) + Sync)) -> Result<Vec<LsmRun>> {
    let keys = p.lsm_keys()?;
    let first: Vec<(LsmRun, LsmState)> = lsm_jobs()
        .par_iter()
        .map(|&(d, op)| measure_lsm(p, d, op, keys))
        .collect::<Result<_>>()?;
    let (mut runs, states): (Vec<LsmRun>, Vec<LsmState>) = first.into_iter().unzip();
    let rate = lsm_rww_rate(&runs);
    runs.par_iter_mut()
        .zip(states)
        .map(|(r, st)| {
            measure_rww(r, st, rate)?;
            on_run(r);
            Ok(())
        })
        .collect::<Result<Vec<()>>>()?;
    Ok(runs)
}

/// The LSM rows as CSV lines in the study's columns (`mix = lsm`; host WAF = the store's
/// writes and relocations per user byte, so total = host × device; read = gets, write =
/// the writer's writes).
pub fn lsm_csv(runs: &[LsmRun]) -> String {
    let mut s = String::from(
        "device,spare,keys,puts,gets,sim_time_ns,user_bytes,app_waf,compaction_waf,host_waf,device_waf,total_waf,puts_per_s,gets_per_s,get_p99_ns,get_p99_99_ns,background_read_p99_ns,write_p99_ns,zone_resets,relocated_bytes,trimmed_bytes,device_gc_victims,rww_put_rate_limit_bytes_per_s,rww_put_rate_bytes_per_s,rww_puts,rww_gets,rww_sim_time_ns,rww_device_waf,rww_get_mean_ns,rww_get_p99_ns,rww_get_p99_9_ns\n",
    );
    for r in runs {
        let op = r.op.map_or(String::new(), |o| o.to_string());
        let resets = match r.device {
            Device::Zns => r.zone_resets.to_string(),
            _ => String::new(),
        };
        let rww = r.rww.as_ref().map_or(",,,,,,,,".to_string(), |x| {
            format!(
                "{},{},{},{},{},{:.4},{:.0},{},{}",
                x.put_rate_limit_bytes_per_s,
                x.put_rate_bytes_per_s,
                x.puts,
                x.gets,
                x.sim_time_ns,
                x.device_waf,
                x.get.mean,
                x.get.p99,
                x.get.p99_9
            )
        });
        s += &format!(
            "{},{op},{},{},{},{},{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.1},{:.1},{},{},{},{},{resets},{},{},{},{rww}\n",
            r.device.name(),
            r.keys,
            r.puts,
            r.gets,
            r.sim_time_ns,
            r.user_bytes,
            r.app_waf,
            r.compaction_waf,
            r.host_waf,
            r.device_waf,
            r.total_waf,
            r.puts_per_s,
            r.gets_per_s,
            r.get.p99,
            r.get.p99_99,
            r.background_read.p99,
            r.write.p99,
            r.gc_bytes,
            r.trim_bytes,
            r.device_gc_victims,
        );
    }
    s
}

/// The LSM table.
pub fn lsm_markdown(runs: &[LsmRun]) -> String {
    let us = |ns: u64| format!("{:.0}", ns as f64 / 1e3);
    let mut s = String::from("\n### LSM-tree store (RocksDB-like, `kind = \"lsm\"`)\n\n");
    s += "| device | app WA | of it compaction | host WA | device WAF | total WAF | puts/s | gets/s | get p99 µs | get p99.9 µs | compaction read p99 µs | zone resets | relocated MiB | trimmed MiB |\n";
    s += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for r in runs {
        s += &format!(
            "| {} | {:.2} | {:.2} | {:.3} | {:.3} | {:.2} | {:.0} | {:.0} | {} | {} | {} | {} | {:.1} | {:.0} |\n",
            lsm_name(r.device, r.op),
            r.app_waf,
            r.compaction_waf,
            r.host_waf,
            r.device_waf,
            r.total_waf,
            r.puts_per_s,
            r.gets_per_s,
            us(r.get.p99),
            us(r.get.p99_9),
            us(r.background_read.p99),
            r.zone_resets,
            r.gc_bytes as f64 / (1 << 20) as f64,
            r.trim_bytes as f64 / (1 << 20) as f64,
        );
    }
    if runs.iter().any(|r| r.rww.is_some()) {
        s += "\n### LSM readwhilewriting: puts at the same limited rate, gets beside them\n\n";
        s += "| device | put limit kB/s | puts kB/s | puts | gets | simulated s | device WAF | get mean µs | get p99 µs | get p99.9 µs |\n";
        s += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
        for r in runs {
            let Some(x) = &r.rww else { continue };
            s += &format!(
                "| {} | {:.1} | {:.1} | {} | {} | {:.1} | {:.3} | {:.0} | {} | {} |\n",
                lsm_name(r.device, r.op),
                x.put_rate_limit_bytes_per_s as f64 / 1e3,
                x.put_rate_bytes_per_s as f64 / 1e3,
                x.puts,
                x.gets,
                x.sim_time_ns as f64 / 1e9,
                x.device_waf,
                x.get.mean / 1e3,
                us(x.get.p99),
                us(x.get.p99_9),
            );
        }
    }
    s
}

/// The LSM shape (Bjørling et al., ATC 2021, §5.2), against the conventional device at
/// the first OP (the paper's block SSD); the others' numbers in the detail.
pub fn lsm_checks(runs: &[LsmRun]) -> Vec<Check> {
    let group = "lsm";
    let find = |d: Device, op: Option<f64>| runs.iter().find(|r| r.device == d && r.op == op);
    let zns = find(Device::Zns, None);
    let conv = find(Device::Conventional, Some(LSM_OP[0]));
    let convs: Vec<&LsmRun> = runs
        .iter()
        .filter(|r| r.device == Device::Conventional)
        .collect();
    let pc = |r: &LsmRun| format!("{:.0} %", r.op.unwrap_or(0.0) * 100.0);
    let mut out = Vec::new();
    let mut push = |claim: String, holds: Option<bool>, detail: String| {
        out.push(Check {
            group: group.into(),
            claim,
            holds,
            detail,
        })
    };
    let claim = format!("ZNS device WAF = 1.0 (within {ZNS_WAF_TOLERANCE}; paper 1.0)");
    match zns {
        Some(z) => {
            let ok = (z.device_waf - 1.0).abs() <= ZNS_WAF_TOLERANCE;
            let mut d = format!("{:.3}", z.device_waf);
            if !ok {
                d += "; below 1: zone resets dropped units still in the write buffer (a deleted WAL's last pages), which never reach NAND";
            }
            push(claim, Some(ok), d)
        }
        None => push(claim, None, "no ZNS run".into()),
    }
    let claim = format!(
        "conventional device WAF ≥ {LSM_CONVENTIONAL_WAF} at {:.0} % OP (paper 2.0 XFS, 2.4 f2fs)",
        LSM_OP[0] * 100.0
    );
    match conv {
        Some(c) => {
            let ok = c.device_waf >= LSM_CONVENTIONAL_WAF;
            let mut d = convs
                .iter()
                .map(|r| format!("{} {:.3}", pc(r), r.device_waf))
                .collect::<Vec<_>>()
                .join(", ");
            if !ok {
                d += if LSM_CONVENTIONAL_NO_DISCARD {
                    "; the device's GC copies little: the store's next-fit allocator rewrites freed extents whole, so victims hold few live pages"
                } else {
                    "; the device's GC copies almost nothing: files die whole, their trims reach the device (online discard), so victims are nearly empty"
                };
            }
            push(claim, Some(ok), d)
        }
        None => push(claim, None, "no conventional run".into()),
    }
    let claim =
        "ZNS total WAF below conventional's (paper: device 1.0 vs 2.0–2.4 at the same RocksDB WA)"
            .to_string();
    match (zns, convs.is_empty()) {
        (Some(z), false) => {
            let ok = convs.iter().all(|c| z.total_waf < c.total_waf);
            let mut d = format!(
                "ZNS {:.2} (app {:.2} × host {:.3} × device {:.3}) vs {}",
                z.total_waf,
                z.app_waf,
                z.host_waf,
                z.device_waf,
                convs
                    .iter()
                    .map(|c| format!("conventional {} {:.2}", pc(c), c.total_waf))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if !ok {
                d += "; zone GC relocated more than the device's GC copied";
            }
            push(claim, Some(ok), d)
        }
        _ => push(claim, None, "a run is missing".into()),
    }
    let claim = format!(
        "ZNS puts/s ≥ {LSM_THROUGHPUT_GAIN}× conventional's at {:.0} % OP (paper 1.7–2.7×)",
        LSM_OP[0] * 100.0
    );
    match (zns, conv) {
        (Some(z), Some(c)) => {
            let gain = z.puts_per_s / c.puts_per_s.max(1e-9);
            let ok = gain >= LSM_THROUGHPUT_GAIN;
            let mut d = format!(
                "{:.2}× ({:.0} vs {:.0}); vs {}",
                gain,
                z.puts_per_s,
                c.puts_per_s,
                convs
                    .iter()
                    .map(|c| format!("{} {:.2}×", pc(c), z.puts_per_s / c.puts_per_s.max(1e-9)))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if !ok {
                d += "; the conventional device's GC costs it little here (its device WAF above), so there is little for ZNS to save";
            }
            push(claim, Some(ok), d)
        }
        _ => push(claim, None, "a run is missing".into()),
    }
    let claim = format!(
        "readwhilewriting: ZNS get p99 and p99.9 below conventional's at {:.0} % OP under the same rate-limited puts (paper: {LSM_RWW_PAPER})",
        LSM_OP[0] * 100.0
    );
    match (
        zns.and_then(|z| z.rww.as_ref()),
        conv.and_then(|c| c.rww.as_ref()),
    ) {
        (Some(z), Some(c)) => push(claim, Some(rww_holds(z, c)), rww_detail(runs, z, c)),
        _ => push(claim, None, "a readwhilewriting run is missing".into()),
    }
    out
}

/// Whether ZNS's get tail is below the conventional device's at the same put rate.
fn rww_holds(z: &LsmRww, c: &LsmRww) -> bool {
    z.get.p99 < c.get.p99 && z.get.p99_9 < c.get.p99_9
}

/// The readwhilewriting numbers behind the check: each device's p99 / p99.9 and
/// conventional's over ZNS's, the rates achieved, and why when the shape misses.
fn rww_detail(runs: &[LsmRun], z: &LsmRww, c: &LsmRww) -> String {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut d = format!(
        "ZNS p99 {:.2} ms, p99.9 {:.2} ms vs conventional {:.0} % OP {:.2} / {:.2} ms ({:.1}× / {:.1}× lower)",
        ms(z.get.p99),
        ms(z.get.p99_9),
        LSM_OP[0] * 100.0,
        ms(c.get.p99),
        ms(c.get.p99_9),
        c.get.p99 as f64 / z.get.p99.max(1) as f64,
        c.get.p99_9 as f64 / z.get.p99_9.max(1) as f64,
    );
    for r in runs {
        if let (Some(x), false) = (&r.rww, r.device == Device::Zns) {
            if r.device == Device::Conventional && r.op == Some(LSM_OP[0]) {
                continue;
            }
            d += &format!(
                "; {} {:.2} / {:.2} ms",
                lsm_name(r.device, r.op),
                ms(x.get.p99),
                ms(x.get.p99_9)
            );
        }
    }
    let rates: Vec<String> = runs
        .iter()
        .filter_map(|r| r.rww.as_ref())
        .map(|x| format!("{:.0}", x.put_rate_bytes_per_s as f64 / 1e3))
        .collect();
    d += &format!(
        "; puts at {:.0} kB/s limit (achieved {} kB/s)",
        z.put_rate_limit_bytes_per_s as f64 / 1e3,
        rates.join(" / ")
    );
    if !rww_holds(z, c) {
        let behind = c.put_rate_bytes_per_s < c.put_rate_limit_bytes_per_s * 95 / 100;
        d += if behind {
            "; the conventional store fell behind the limit, so the write loads differ"
        } else {
            "; at the same put rate the ZNS store's writes (no device GC, but zone resets' erases on every die) delay its gets more than the conventional device's GC does"
        };
    }
    d
}

/// What the LSM rows ran.
fn lsm_intro(p: &ZnsParams, runs: &[LsmRun]) -> String {
    let keys = runs.first().map_or(0, |r| r.keys);
    let c = p.lsm(Device::Conventional, keys);
    let d = LSM_SIZE_DIVISOR * p.scale as u64;
    format!(
        "\n* LSM rows (`mix = lsm`): the RocksDB-like store of `kind = \"lsm\"` with RocksDB's defaults / {d} (write buffer {} MiB, L1 {} MiB, files {} MiB, multiplier {}, L0 trigger {}), {} keys of {} + {} bytes ({:.0} % of the conventional 28 % OP device's logical space), the same on every device: a random load ({LSM_LOAD}× the keys) and overwrites ({LSM_WARMUP}×) functional, then {LSM_MEASURE}× measured (timed) with gets beside them (QD {LSM_GET_QUEUE_DEPTH}; the writer QD {LSM_QUEUE_DEPTH}). Conventional: extents of 1 MiB (next fit), deleted files {} (XFS's default mount has no online discard); ZNS: ZenFS-like zones by level, each zone striped over every die (`zone_dies = 0`, as the paper's ZN540), resets when dead, GC below {}% empty zones; FDP (deleted files trimmed): 4 handles by lifetime class at {:.0} % OP. App WA = (WAL + flush + compaction) / user bytes; host WA = ZenFS GC's; total = app × host × device. Get latency: the gets' reads only (compaction reads apart). Then readwhilewriting (the paper's read-latency runs: db_bench with `--benchmark_write_rate_limit`, 20 MiB/s on its 2 TB drive): each store goes on with {LSM_RWW_PUTS}× the keys of puts limited to {:.0} % of the slowest row's unlimited put rate, {:.1} kB/s on every device (`put_rate_limit_bytes_per_s`, a paced writer), the gets beside them as before.\n",
        (c.write_buffer_bytes / d) >> 20,
        (c.level_base_bytes / d) >> 20,
        (c.target_file_bytes / d) >> 20,
        c.level_multiplier,
        c.l0_compaction_trigger,
        keys,
        c.key_bytes,
        c.value_bytes,
        LSM_DB_SHARE * 100.0,
        if c.trim { "trimmed" } else { "not trimmed" },
        c.gc_free_zones_percent,
        LSM_OP[0] * 100.0,
        LSM_RWW_SHARE * 100.0,
        runs.iter()
            .find_map(|r| r.rww.as_ref())
            .map_or(0.0, |x| x.put_rate_limit_bytes_per_s as f64 / 1e3),
    )
}

#[cfg(test)]
mod lsm_tests {
    use super::*;

    fn lat(p99: u64, p99_9: u64) -> LatencySummary {
        LatencySummary {
            count: 1000,
            mean: p99 as f64 / 3.0,
            min: 1,
            p50: 1,
            p90: 1,
            p95: 1,
            p99,
            p99_9,
            p99_99: p99_9,
            p99_999: p99_9,
            p99_9999: p99_9,
            max: p99_9,
        }
    }

    /// A row whose readwhilewriting gets have these tails (the rest plausible).
    fn row(device: Device, op: Option<f64>, p99: u64, p99_9: u64) -> LsmRun {
        LsmRun {
            device,
            op,
            keys: 1000,
            puts: 1000,
            gets: 100,
            sim_time_ns: 1_000_000_000,
            user_bytes: 1_016_000,
            app_waf: 12.0,
            compaction_waf: 11.0,
            host_waf: 1.0,
            device_waf: if device == Device::Conventional {
                2.5
            } else {
                1.0
            },
            total_waf: 12.0,
            puts_per_s: 1000.0,
            gets_per_s: 100.0,
            get: lat(p99, p99_9),
            background_read: lat(p99, p99_9),
            write: lat(p99, p99_9),
            zone_resets: 0,
            gc_bytes: 0,
            trim_bytes: 0,
            device_gc_victims: 0,
            level_bytes: Vec::new(),
            rww: Some(LsmRww {
                put_rate_limit_bytes_per_s: 500_000,
                put_rate_bytes_per_s: 500_000,
                puts: 500,
                gets: 10_000,
                sim_time_ns: 1_000_000_000,
                device_waf: 1.0,
                get: lat(p99, p99_9),
            }),
            wall_s: 0.0,
            audit_warnings: Vec::new(),
        }
    }

    fn rww_check(runs: &[LsmRun]) -> Check {
        lsm_checks(runs)
            .into_iter()
            .find(|c| c.claim.starts_with("readwhilewriting"))
            .unwrap()
    }

    /// The readwhilewriting check holds on the shape and fails on perturbed rows: the
    /// ZNS and conventional rows' tails swapped, or only the p99.9 swapped.
    #[test]
    fn the_readwhilewriting_check_fails_on_perturbed_rows() {
        let runs = vec![
            row(Device::Conventional, Some(LSM_OP[0]), 6_000_000, 25_000_000),
            row(Device::Conventional, Some(LSM_OP[1]), 700_000, 24_000_000),
            row(Device::Zns, None, 200_000, 800_000),
            row(Device::Fdp, Some(LSM_OP[0]), 220_000, 4_000_000),
        ];
        let c = rww_check(&runs);
        assert_eq!(c.holds, Some(true), "{}", c.detail);
        assert!(c.detail.contains("30.0× / 31.2× lower"), "{}", c.detail);
        let mut swapped = runs.clone();
        let (a, b) = (swapped[0].rww.clone(), swapped[2].rww.clone());
        swapped[0].rww = b;
        swapped[2].rww = a;
        let c = rww_check(&swapped);
        assert_eq!(c.holds, Some(false), "{}", c.detail);
        assert!(c.detail.contains("delay its gets"), "{}", c.detail);
        let mut tail = runs.clone();
        tail[2].rww.as_mut().unwrap().get.p99_9 = 30_000_000;
        assert_eq!(rww_check(&tail).holds, Some(false));
        // The unlimited rows' tails do not enter it.
        let mut unlimited = runs.clone();
        unlimited[2].get = lat(100_000_000, 200_000_000);
        assert_eq!(rww_check(&unlimited).holds, Some(true));
        // No readwhilewriting run: not decided.
        let mut none = runs;
        none[2].rww = None;
        assert_eq!(rww_check(&none).holds, None);
        // The rate: half the slowest row's unlimited put bytes/s.
        assert_eq!(lsm_rww_rate(&swapped), 508_000);
    }
}
