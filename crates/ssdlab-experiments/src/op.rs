//! Spec 02 — over-provisioning: measure (functional simulation) and predict
//! (`ssdlab-model`) write amplification and its costs as a function of OP.
//!
//! Building blocks:
//!
//! * [`device_with_blocks`] — a copy of a config with `blocks_per_plane` replaced and
//!   `device.over_provisioning_ratio` set so that the logical capacity stays exactly the
//!   requested number of mapping units (OP is varied by adding physical blocks, never by
//!   shrinking the user space).
//! * [`run_overwrites`] — one functional experiment: sequential fill, optional warm-up,
//!   then measured random unit overwrites; the fill and the warm-up are excluded from the
//!   counts.
//! * [`model_point`] — the analytic prediction for the same device.
//! * [`sweep`] — the paper's experiment ([`OpSweepParams::paper`]), all points in parallel.
//! * [`advise`] / [`confirm`] — the OP advisor (`ssdlab op-advise`) and its check by
//!   simulation.
//!
//! ## Model of this FTL
//!
//! The simulator's FTL (functional mode) keeps, per plane, **separate open blocks for host
//! writes and GC copies** and, right after a host write takes a plane's free block, cleans
//! that plane until it has `ftl.gc_soft_free_blocks` free blocks again. Time-averaged over
//! host writes, the pages of a plane that hold no data are therefore
//!
//! * `gc_soft_free_blocks` erased blocks,
//! * half of the host open block (`b/2`: it fills at one page per host write), and
//! * `b/(2·WAF)` of the GC open block: GC runs in one burst per host block and stops right
//!   after a victim whose copies did not cross into a new block, so the GC block is always
//!   at least one victim's valid pages (`b(1 − 1/WAF)`) full; its unwritten part is
//!   uniform on `[0, b/WAF]`.
//!
//! That is `ssdlab_model::waf_for_device(policy, traffic, U, P, b,
//! reserve_free_blocks = gc_soft_free_blocks + 1/2, FrontierLayout::Shared)` for one plane
//! (`Shared` contributes exactly the `b/(2·WAF)` term), and the same small fixed point with
//! every term multiplied by the number of planes in general ([`model_waf`]); `b` = mapping
//! units per block, `U`, `P` in mapping units. Counting a full block for the two open
//! blocks instead (`FrontierLayout::Separate`) over-predicts the WAF by 2.5 % at the
//! paper's "0 %" point and 0.45 % at 10 %.

use crate::experiment::{Check, Common, Experiment, PlotResult, Say, Shape};
use crate::{ExperimentError, Result};
use rand::Rng;
use rayon::prelude::*;
use serde::Serialize;
use ssdlab_core::config::{CellMode, Derived, GcConfig, Mode};
use ssdlab_core::flash::{CellState, OpKind};
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::sim::stop;
use ssdlab_core::{Config, Simulation};
use ssdlab_model::{
    die_ns_per_host_unit, effective_op_ratio, waf, AdvisorInput, AdvisorRow, DieModel,
    GcPolicyModel, ModelError, NandTiming, OpGrid, Requirement, Traffic,
};
use ssdlab_workload::rng::{stream, tag};
use ssdlab_workload::synthetic::AddressPattern;
use ssdlab_workload::WorkloadConfig;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// The bundled spec-02 preset (`configs/op-paper.toml`): 880 blocks × 128 pages × 1 KiB at
/// OP 10 %, greedy GC, SLC timing 10/100/1000 µs, functional mode.
pub const OP_PAPER_TOML: &str = include_str!("../../../configs/op-paper.toml");

/// User blocks of the paper's device (100 MiB of 1 KiB pages in 128-page blocks).
pub const PAPER_USER_BLOCKS: u32 = 800;

/// The paper's overwrite volume: 100 GiB (= 1024 × the 100 MiB user capacity).
pub const PAPER_VOLUME_BYTES: u64 = 100 << 30;

/// Spare blocks per plane used for the paper's "OP 0 %" point (see [`OpSweepParams`]),
/// 2 % of the user space: 3 blocks the FTL needs to make progress (2 open blocks +
/// `gc_hard_free_blocks` = 1) and 13 blocks of data spare, so the point costs about as
/// much simulation time as the other ten together (WAF ≈ 25 instead of ≈ 98 with the
/// bare minimum of 4 spare blocks the simulator accepts).
pub const PAPER_ZERO_OP_SPARE_BLOCKS: u32 = 16;

/// The paper's preset, parsed.
pub fn paper_base_config() -> Result<Config> {
    Ok(Config::from_toml_str(
        OP_PAPER_TOML,
        "configs/op-paper.toml",
    )?)
}

/// The model's victim policy for `cfg.ftl.gc` (`greedy` and `fifo` are modelled).
pub fn model_policy(cfg: &Config) -> Result<GcPolicyModel> {
    match cfg.ftl.gc {
        GcConfig::Greedy(_) => Ok(GcPolicyModel::Greedy),
        GcConfig::Fifo(_) => Ok(GcPolicyModel::Fifo),
        ref other => Err(ExperimentError::invalid(
            "ftl.gc.policy",
            format!(
                "{:?} has no analytic model; use \"greedy\" or \"fifo\"",
                other.name()
            ),
        )),
    }
}

/// The write traffic of `cfg`'s workload, for the model and the overwrite runs: a
/// synthetic `pattern = "hot-cold"` gives [`Traffic::HotCold`] with its
/// `hot_io_percent` / `hot_space_percent`; everything else is treated as uniform and the
/// second value is a note saying so (`None` when the workload is uniform already).
pub fn traffic_of(cfg: &Config) -> Result<(Traffic, Option<String>)> {
    match &cfg.workload {
        WorkloadConfig::Synthetic(s) => match s.pattern {
            AddressPattern::Uniform => Ok((Traffic::Uniform, None)),
            AddressPattern::HotCold => {
                let r = s.hot_io_percent / 100.0;
                let f = s.hot_space_percent / 100.0;
                if !(r > 0.0 && r < 1.0) {
                    return Err(ExperimentError::invalid(
                        "workload.hot_io_percent",
                        format!("{} must be in (0, 100) for the model", s.hot_io_percent),
                    ));
                }
                if !(f > 0.0 && f < 1.0) {
                    return Err(ExperimentError::invalid(
                        "workload.hot_space_percent",
                        format!("{} must be in (0, 100) for the model", s.hot_space_percent),
                    ));
                }
                Ok((
                    Traffic::HotCold {
                        hot_io_fraction: r,
                        hot_space_fraction: f,
                    },
                    None,
                ))
            }
            other => Ok((
                Traffic::Uniform,
                Some(format!(
                    "workload pattern {other:?} is not modelled; using uniform random writes"
                )),
            )),
        },
        WorkloadConfig::Fio(_) => Ok((
            Traffic::Uniform,
            Some("fio workloads are not modelled; using uniform random writes".into()),
        )),
        WorkloadConfig::Trace(_) => Ok((
            Traffic::Uniform,
            Some("trace workloads are not modelled; using uniform random writes".into()),
        )),
        WorkloadConfig::Tpcc(_) => Ok((
            Traffic::Uniform,
            Some("tpcc workloads are not modelled; using uniform random writes".into()),
        )),
        WorkloadConfig::Ext4(_) => Ok((
            Traffic::Uniform,
            Some("ext4 workloads are not modelled; using uniform random writes".into()),
        )),
        WorkloadConfig::LogStructured(_) => Ok((
            Traffic::Uniform,
            Some("log-structured workloads are not modelled; using uniform random writes".into()),
        )),
        WorkloadConfig::FlashCache(_) => Ok((
            Traffic::Uniform,
            Some("flash-cache workloads are not modelled; using uniform random writes".into()),
        )),
        WorkloadConfig::Lsm(_) => Ok((
            Traffic::Uniform,
            Some("lsm workloads are not modelled; using uniform random writes".into()),
        )),
    }
}

fn op_ratio_for(slots: u64, logical_units: u64) -> Option<f64> {
    let target = logical_units;
    let floor = |op: f64| (slots as f64 / (1.0 + op)).floor() as u64;
    let exact = (slots - logical_units) as f64 / logical_units as f64;
    if floor(exact) == target {
        return Some(exact);
    }
    // Floating error cost a unit: step down by ulps, then fall back to the midpoint
    // slots / (1 + op) = L + 1/2, which is far from both neighbours.
    let mut op = exact;
    for _ in 0..64 {
        op = f64::from_bits(op.to_bits().saturating_sub(1)).max(0.0);
        if floor(op) == target {
            return Some(op);
        }
    }
    let mid = slots as f64 / (logical_units as f64 + 0.5) - 1.0;
    (floor(mid) == target).then_some(mid.max(0.0))
}

/// A copy of `base` for the OP experiments with `blocks_per_plane` blocks per plane and
/// `device.over_provisioning_ratio` chosen so that exactly `logical_units` mapping units are
/// user visible. The copy runs in functional mode without integrity checking and with
/// block retirement disabled (`endurance_pe_cycles = u32::MAX` for every cell mode), so
/// that long runs measure steady-state write amplification, not wear-out.
///
/// # Errors
/// `device.geometry.blocks_per_plane` when the blocks cannot hold the logical units, and
/// the simulator's own validation error (naming `device.over_provisioning_ratio` and the
/// minimum) when the spare is below the GC reserve.
pub fn device_with_blocks(
    base: &Config,
    blocks_per_plane: u32,
    logical_units: u32,
) -> Result<(Config, Derived)> {
    let mut cfg = base.clone();
    cfg.mode = Mode::Functional;
    cfg.integrity = false;
    cfg.precondition.enabled = false;
    for m in CellMode::ALL {
        let t = match m {
            CellMode::Slc => &mut cfg.device.timing.slc,
            CellMode::Mlc => &mut cfg.device.timing.mlc,
            CellMode::Tlc => &mut cfg.device.timing.tlc,
            CellMode::Qlc => &mut cfg.device.timing.qlc,
        };
        t.endurance_pe_cycles = u32::MAX;
    }
    cfg.device.geometry.blocks_per_plane = blocks_per_plane;
    // Geometry errors (zero fields, too many slots) come from the simulator's validation,
    // run first with a generous OP that any usable geometry accepts.
    cfg.device.over_provisioning_ratio = 1.0;
    let d0 = match cfg.validate() {
        Ok(d) => d,
        Err(ssdlab_core::SimError::Config { key, .. })
            if key == "device.over_provisioning_ratio" =>
        {
            // Validation got past the geometry (tiny planes); count the slots ourselves.
            let g = &cfg.device.geometry;
            let slots = g.channels as u64
                * g.chips_per_channel as u64
                * g.dies_per_chip as u64
                * g.planes_per_die as u64
                * blocks_per_plane as u64
                * g.pages_per_block as u64
                * (g.page_size_bytes / g.mapping_unit_bytes.max(1)) as u64;
            return finish(cfg, slots, logical_units);
        }
        Err(e) => return Err(e.into()),
    };
    let slots = d0.geometry.slots;
    finish(cfg, slots, logical_units)
}

fn finish(mut cfg: Config, slots: u64, logical_units: u32) -> Result<(Config, Derived)> {
    if logical_units == 0 {
        return Err(ExperimentError::invalid("logical_units", "must be > 0"));
    }
    if slots < logical_units as u64 {
        return Err(ExperimentError::invalid(
            "device.geometry.blocks_per_plane",
            format!(
                "{} blocks per plane hold {slots} mapping units, fewer than the {logical_units} logical units",
                cfg.device.geometry.blocks_per_plane
            ),
        ));
    }
    let op = op_ratio_for(slots, logical_units as u64).ok_or_else(|| {
        ExperimentError::invalid(
            "device.over_provisioning_ratio",
            format!("no ratio gives exactly {logical_units} logical units out of {slots}"),
        )
    })?;
    cfg.device.over_provisioning_ratio = op;
    let d = cfg.validate()?;
    if d.logical_units != logical_units {
        return Err(ExperimentError::invalid(
            "device.over_provisioning_ratio",
            format!(
                "{op} gives {} logical units instead of {logical_units}",
                d.logical_units
            ),
        ));
    }
    Ok((cfg, d))
}

/// Non-data blocks per plane the model subtracts from the physical space at write
/// amplification `waf`: `gc_soft_free_blocks` erased blocks, half the host open block and
/// `1/(2·waf)` of the GC open block (see the module docs).
pub fn non_data_blocks_per_plane(cfg: &Config, waf: f64) -> f64 {
    cfg.ftl.gc_soft_free_blocks as f64 + 0.5 + 0.5 / waf.max(1.0)
}

/// Steady-state WAF and effective OP ratio of `cfg`'s device (see the module docs): the
/// fixed point between the WAF and the GC open block's unwritten part, started from the
/// conservative `WAF = 1`.
///
/// # Errors
/// `ftl.gc_victim` without a model, or a [`ssdlab_model::ModelError`] (e.g.
/// `physical_pages` when no data-holding spare is left).
pub fn model_waf(cfg: &Config, d: &Derived, traffic: Traffic) -> Result<(f64, f64)> {
    let policy = model_policy(cfg)?;
    let g = &d.geometry;
    let b = g.units_per_block;
    let per_plane_pages = g.planes as f64 * b as f64;
    let logical = d.logical_units as u64;
    let eff_for = |w: f64| {
        effective_op_ratio(
            logical,
            g.slots,
            per_plane_pages * non_data_blocks_per_plane(cfg, w),
        )
    };
    let mut eff = eff_for(1.0)?;
    if eff <= 0.0 {
        return Err(ModelError::InvalidArgument {
            name: "physical_pages",
            value: g.slots as f64,
            reason: "leaves no data-holding spare after the GC reserve and open blocks",
        }
        .into());
    }
    let mut w = waf(policy, traffic, eff, b)?;
    for _ in 0..100 {
        eff = eff_for(w)?;
        let next = waf(policy, traffic, eff, b)?;
        let converged = (next - w).abs() <= 1e-12 * w;
        w = next;
        if converged {
            break;
        }
    }
    Ok((w, eff))
}

/// Serial-resource timing of one mapping unit for the model (page times divided by the
/// units per page; erase time at 0 P/E cycles) of the config's `device.cell_mode`: the
/// simulator's timing model's array times of a fresh block.
pub fn unit_timing(cfg: &Config, d: &Derived) -> NandTiming {
    let tm = cfg.device.timing_model();
    let ns = |kind| tm.array_ns(kind, CellState::fresh(cfg.device.cell_mode)) as f64;
    let spp = d.geometry.slots_per_page as f64;
    NandTiming {
        t_read_ns: ns(OpKind::Read) / spp,
        t_prog_ns: ns(OpKind::Program) / spp,
        t_erase_ns: ns(OpKind::Erase),
        page_bytes: d.geometry.unit_bytes,
    }
}

/// A die of `cfg` for the throughput model: its planes (host programs run on all of them
/// at once when writes keep it busy: `engine.host_program_planes_mean` 2.0 on two-plane
/// dies), command overhead and channel transfer per unit.
pub fn die_model(cfg: &Config, d: &Derived) -> DieModel {
    let g = &d.geometry;
    DieModel {
        planes: g.planes_per_die,
        gc_planes: gc_planes(cfg, g.planes_per_die),
        units_per_page: g.slots_per_page,
        command_ns: cfg.device.command_overhead_ns as f64,
        unit_transfer_ns: g.unit_bytes as f64 * 1e3 / cfg.device.channel_rate_mb_per_s as f64,
    }
}

/// Planes GC's operations run on at once in the die model: all of the die's with
/// `[scheduler] multi_plane_gc` (writing flat out, every plane of a die is collecting, and
/// its queue holds a victim's copies, so each other plane's first operation is of the
/// head's kind), else 1.
fn gc_planes(cfg: &Config, planes_per_die: u32) -> f64 {
    if cfg.scheduler.multi_plane_gc {
        planes_per_die as f64
    } else {
        1.0
    }
}

/// Sustained host write MB/s (10^6 B/s) of `cfg`'s dies at `waf`: the die model's busy
/// time per host unit, the dies in parallel.
pub fn die_write_mb_per_s(cfg: &Config, d: &Derived, waf: f64) -> Result<f64> {
    let t = unit_timing(cfg, d);
    let per = die_ns_per_host_unit(
        waf,
        d.geometry.units_per_block,
        t.t_read_ns,
        t.t_prog_ns,
        t.t_erase_ns,
        &die_model(cfg, d),
    )?;
    Ok(t.page_bytes as f64 * 1e3 / per * d.geometry.dies as f64)
}

/// The analytic prediction for one device.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModelPoint {
    /// Steady-state WAF (NAND programs per host unit write).
    pub waf: f64,
    /// Effective OP ratio fed to the model (data-holding spare only).
    pub effective_op_ratio: f64,
    /// Predicted NAND page reads (GC copies) for the measured host writes.
    pub nand_reads: f64,
    /// Predicted NAND page programs.
    pub nand_programs: f64,
    /// Predicted block erases.
    pub nand_erases: f64,
    /// Predicted serial time (ns).
    pub time_ns: f64,
    /// Predicted sustained write throughput (10^6 bytes/s).
    pub write_mb_per_s: f64,
}

/// The model of `cfg` (as built by [`device_with_blocks`]) for `host_writes` unit writes.
pub fn model_point(
    cfg: &Config,
    d: &Derived,
    traffic: Traffic,
    host_writes: u64,
) -> Result<ModelPoint> {
    let g = &d.geometry;
    let b = g.units_per_block;
    let (waf, eff) = model_waf(cfg, d, traffic)?;
    let t = unit_timing(cfg, d);
    let c = ssdlab_model::predict_costs(
        waf,
        host_writes.max(1),
        b,
        t.t_read_ns,
        t.t_prog_ns,
        t.t_erase_ns,
    )?;
    let scale = if host_writes == 0 { 0.0 } else { 1.0 };
    let spp = g.slots_per_page as f64;
    // The dies work in parallel, each as the die model has it.
    let mbps = die_write_mb_per_s(cfg, d, waf)?;
    Ok(ModelPoint {
        waf,
        effective_op_ratio: eff,
        nand_reads: scale * c.nand_reads / spp,
        nand_programs: scale * c.nand_programs / spp,
        nand_erases: scale * c.nand_erases,
        time_ns: scale * c.time_ns,
        write_mb_per_s: mbps,
    })
}

/// Counts of the measured phase of one functional overwrite run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OverwriteRun {
    /// Measured host unit writes.
    pub host_writes: u64,
    /// NAND page reads (GC copies; there are no host reads).
    pub nand_reads: u64,
    /// NAND page programs (host + GC).
    pub nand_programs: u64,
    /// Block erases.
    pub nand_erases: u64,
    /// Serial time of the measured phase (sum of operation latencies), ns.
    pub time_ns: u64,
    /// Programmed units per host unit write (`programs · units_per_page / host_writes`).
    pub waf: f64,
    /// Wall-clock seconds of the whole run (fill included).
    pub wall_s: f64,
}

/// Draws logical units for [`Traffic`]: uniform, or hot/cold with the hot part the first
/// `hot_space_fraction` of the logical space.
struct Sampler {
    units: u32,
    hot: Option<(f64, u32)>,
}

impl Sampler {
    fn new(traffic: Traffic, units: u32) -> Result<Sampler> {
        let hot = match traffic {
            Traffic::Uniform => None,
            Traffic::HotCold {
                hot_io_fraction: r,
                hot_space_fraction: f,
            } => {
                if !(r > 0.0 && r < 1.0) {
                    return Err(ExperimentError::invalid(
                        "hot_io_fraction",
                        format!("{r} must be in (0, 1)"),
                    ));
                }
                if !(f > 0.0 && f < 1.0) {
                    return Err(ExperimentError::invalid(
                        "hot_space_fraction",
                        format!("{f} must be in (0, 1)"),
                    ));
                }
                let hot_units = ((f * units as f64).round() as u32).clamp(1, units - 1);
                Some((r, hot_units))
            }
        };
        Ok(Sampler { units, hot })
    }

    #[inline]
    fn next<R: Rng>(&self, rng: &mut R) -> u32 {
        match self.hot {
            None => rng.gen_range(0..self.units),
            Some((r, hot)) => {
                if rng.gen::<f64>() < r {
                    rng.gen_range(0..hot)
                } else {
                    rng.gen_range(hot..self.units)
                }
            }
        }
    }
}

/// One functional overwrite experiment on `cfg` (use [`device_with_blocks`]): sequential
/// fill of the whole logical space, `warmup_writes` random unit overwrites, then
/// `host_writes` measured random unit overwrites drawn from `traffic` (seeded by
/// `cfg.seed`). Only the measured phase is counted.
///
/// # Errors
/// `host_writes` = 0, a traffic fraction out of range, or a simulator error.
pub fn run_overwrites(
    cfg: &Config,
    traffic: Traffic,
    warmup_writes: u64,
    host_writes: u64,
) -> Result<OverwriteRun> {
    if host_writes == 0 {
        return Err(ExperimentError::invalid("host_writes", "must be > 0"));
    }
    let t0 = Instant::now();
    let mut sim = Simulation::new(cfg.clone())?;
    let units = sim.derived.logical_units;
    let spp = sim.derived.geometry.slots_per_page;
    let sampler = Sampler::new(traffic, units)?;
    let mut rng = stream(cfg.seed, tag::OP_SWEEP);
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    // Every 64 Ki writes: a stop requested (Ctrl-C) ends the run (`SimError::Interrupted`).
    let poll = |i: u64| {
        if i & 0xFFFF == 0 {
            stop::check()
        } else {
            Ok(())
        }
    };
    for lpn in 0..units {
        poll(lpn as u64)?;
        d.write_unit(lpn)?;
    }
    d.flush()?;
    for i in 0..warmup_writes {
        poll(i)?;
        d.write_unit(sampler.next(&mut rng))?;
    }
    let before = *d.ftl.nand_counts();
    let time_before = d.clock.time_ns;
    for i in 0..host_writes {
        poll(i)?;
        d.write_unit(sampler.next(&mut rng))?;
    }
    d.flush()?;
    let c = d.ftl.nand_counts().since(&before);
    let programs = c.total(OpKind::Program);
    Ok(OverwriteRun {
        host_writes,
        nand_reads: c.total(OpKind::Read),
        nand_programs: programs,
        nand_erases: c.total(OpKind::Erase),
        time_ns: d.clock.time_ns - time_before,
        waf: programs as f64 * spp as f64 / host_writes as f64,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

/// Relative error `(model − sim) / sim` (0 when both are 0).
pub fn rel_err(model: f64, sim: f64) -> f64 {
    if sim == 0.0 {
        if model == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (model - sim) / sim
    }
}

// ---------------------------------------------------------------------------------------
// The sweep (`ssdlab reproduce op`).

/// Parameters of an OP sweep.
#[derive(Debug, Clone)]
pub struct OpSweepParams {
    /// Device, timing, GC policy and seed; `blocks_per_plane` and
    /// `over_provisioning_ratio` are replaced per point.
    pub base: Config,
    /// User (logical) blocks per plane; the logical capacity is
    /// `user_blocks_per_plane · planes · units_per_block` units at every point.
    pub user_blocks_per_plane: u32,
    /// Nominal OP ratios; a point gets `round(user_blocks_per_plane · op)` spare blocks per
    /// plane, at least [`OpSweepParams::min_spare_blocks_per_plane`].
    pub op_ratios: Vec<f64>,
    /// Spare blocks per plane used where the nominal OP gives fewer (the "OP 0 %" point):
    /// the GC reserve. Must exceed `2 + gc_hard_free_blocks` (the simulator refuses less).
    pub min_spare_blocks_per_plane: u32,
    /// Host unit writes excluded from the counts after the fill (0 for the paper).
    pub warmup_writes: u64,
    /// Measured host unit writes per point.
    pub host_writes: u64,
    /// Write traffic.
    pub traffic: Traffic,
}

impl OpSweepParams {
    /// The paper's experiment: OP 0…100 % in steps of 10 %, [`PAPER_ZERO_OP_SPARE_BLOCKS`]
    /// spare blocks at "0 %", uniform random 1 KiB overwrites of `scale` × 100 GiB after
    /// the fill.
    pub fn paper(scale: f64) -> Result<OpSweepParams> {
        if !(scale > 0.0 && scale.is_finite()) {
            return Err(ExperimentError::invalid(
                "--scale",
                format!("{scale} must be a finite number > 0"),
            ));
        }
        let base = paper_base_config()?;
        let unit = base.device.geometry.mapping_unit_bytes as f64;
        let host_writes = (PAPER_VOLUME_BYTES as f64 * scale / unit).round() as u64;
        if host_writes == 0 {
            return Err(ExperimentError::invalid(
                "--scale",
                format!("{scale} leaves no host writes"),
            ));
        }
        Ok(OpSweepParams {
            base,
            user_blocks_per_plane: PAPER_USER_BLOCKS,
            op_ratios: (0..=10).map(|i| i as f64 / 10.0).collect(),
            min_spare_blocks_per_plane: PAPER_ZERO_OP_SPARE_BLOCKS,
            warmup_writes: 0,
            host_writes,
            traffic: Traffic::Uniform,
        })
    }
}

/// One point of the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct OpPoint {
    /// Nominal OP ratio.
    pub op_ratio: f64,
    /// Spare blocks per plane actually used (`round(user · op)`, or the minimum).
    pub spare_blocks_per_plane: u32,
    /// `spare_blocks_per_plane / user_blocks_per_plane`.
    pub actual_op_ratio: f64,
    /// Physical blocks per plane.
    pub blocks_per_plane: u32,
    /// Logical (user) mapping units.
    pub logical_units: u32,
    /// Simulated counts of the measured phase.
    pub sim: OverwriteRun,
    /// Serial time of the measured phase (s).
    pub time_s: f64,
    /// The model's prediction for this device and volume.
    pub model: ModelPoint,
    /// `(model − sim)/sim` of the WAF.
    pub waf_rel_err: f64,
    /// `(model − sim)/sim` of the time.
    pub time_rel_err: f64,
    /// `(1 − time / time of the first point) · 100` (simulation).
    pub improvement_pct: f64,
    /// The same from the model.
    pub model_improvement_pct: f64,
}

/// Result of [`sweep`].
#[derive(Debug, Clone, Serialize)]
pub struct OpSweep {
    /// Points in the order of [`OpSweepParams::op_ratios`].
    pub points: Vec<OpPoint>,
    /// User blocks per plane.
    pub user_blocks_per_plane: u32,
    /// Spare blocks per plane used where the nominal OP gives fewer.
    pub min_spare_blocks_per_plane: u32,
    /// `ftl.gc_soft_free_blocks`: the erased blocks per plane the FTL keeps (no data).
    pub gc_soft_free_blocks: u32,
    /// Measured host unit writes per point.
    pub host_writes: u64,
    /// Model policy and layout used, for the output.
    pub model_description: String,
    /// Wall-clock seconds of the whole sweep.
    pub wall_s: f64,
    /// Worker threads used.
    pub threads: usize,
}

/// The model's WAF counts as matching the simulation within this share under uniform
/// traffic (docs/reproduce-op.md: within 0.06 % at the paper's volume, 0.35 % at
/// `--scale 20`; 1.3 % on a 96-block device after 20 capacities).
pub const MODEL_WAF_TOLERANCE: f64 = 0.03;

impl OpSweep {
    /// The expected shape (the paper's trend; the model's accuracy); a check's `holds` is
    /// `None` with too few points to judge.
    pub fn checks(&self) -> Vec<Check> {
        let p = &self.points;
        let pc = |x: f64| format!("{:.0} %", x * 100.0);
        let mut out = Vec::new();
        // 1: more OP, less write amplification, at every step.
        let rises: Vec<String> = p
            .windows(2)
            .filter(|w| w[1].sim.waf >= w[0].sim.waf)
            .map(|w| {
                format!(
                    "{} → {}: {:.4} → {:.4}",
                    pc(w[0].op_ratio),
                    pc(w[1].op_ratio),
                    w[0].sim.waf,
                    w[1].sim.waf
                )
            })
            .collect();
        out.push(Check::new(
            "",
            "WAF falls at every step of OP".to_string(),
            (p.len() >= 2).then_some(rises.is_empty()),
            if rises.is_empty() {
                p.iter()
                    .map(|x| format!("{:.3}", x.sim.waf))
                    .collect::<Vec<_>>()
                    .join(" > ")
            } else {
                format!("rises: {}", rises.join(", "))
            },
        ));
        // 2: the time saved grows with OP, each step (per unit of OP) less than the one
        // before (the paper's diminishing returns).
        let gains: Vec<f64> = p
            .windows(2)
            .map(|w| {
                (w[1].improvement_pct - w[0].improvement_pct)
                    / (w[1].actual_op_ratio - w[0].actual_op_ratio).max(1e-12)
            })
            .collect();
        let ok = gains.iter().all(|&g| g > 0.0) && gains.windows(2).all(|w| w[1] < w[0]);
        out.push(Check::new(
            "",
            "improvement grows with OP, with diminishing returns (less per unit of OP at each step)".to_string(),
            (gains.len() >= 2).then_some(ok),
            format!(
                "{} (points per unit of OP: {})",
                p.iter()
                    .map(|x| format!("{:.2} %", x.improvement_pct))
                    .collect::<Vec<_>>()
                    .join(", "),
                gains
                    .iter()
                    .map(|g| format!("{g:.1}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
        // 3: the model predicts the simulation.
        let worst = p
            .iter()
            .max_by(|a, b| a.waf_rel_err.abs().total_cmp(&b.waf_rel_err.abs()));
        out.push(Check::new(
            "",
            format!(
                "model WAF within {:.0} % of the simulation at every point",
                MODEL_WAF_TOLERANCE * 100.0
            ),
            worst.map(|w| w.waf_rel_err.abs() <= MODEL_WAF_TOLERANCE),
            worst.map_or("not run".into(), |w| {
                format!(
                    "largest error {:+.2} % at OP {}",
                    w.waf_rel_err * 100.0,
                    pc(w.op_ratio)
                )
            }),
        ));
        out
    }

    /// The table as CSV: `op_ratio,nand_reads,nand_programs,nand_erases,time_s,waf,model_waf,improvement_pct`.
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "op_ratio,nand_reads,nand_programs,nand_erases,time_s,waf,model_waf,improvement_pct\n",
        );
        for pt in &self.points {
            let _ = writeln!(
                out,
                "{:.2},{},{},{},{:.6},{:.6},{:.6},{:.4}",
                pt.op_ratio,
                pt.sim.nand_reads,
                pt.sim.nand_programs,
                pt.sim.nand_erases,
                pt.time_s,
                pt.sim.waf,
                pt.model.waf,
                pt.improvement_pct
            );
        }
        out
    }
}

/// Build the config of one sweep point.
pub fn sweep_point_config(p: &OpSweepParams, op: f64) -> Result<(Config, Derived, u32)> {
    if !(op >= 0.0 && op.is_finite()) {
        return Err(ExperimentError::invalid(
            "op_ratio",
            format!("{op} must be a finite number >= 0"),
        ));
    }
    let spare =
        ((p.user_blocks_per_plane as f64 * op).round() as u32).max(p.min_spare_blocks_per_plane);
    let g = &p.base.device.geometry;
    let planes = g.channels as u64
        * g.chips_per_channel as u64
        * g.dies_per_chip as u64
        * g.planes_per_die as u64;
    let upb = g.pages_per_block as u64 * (g.page_size_bytes / g.mapping_unit_bytes.max(1)) as u64;
    let logical = planes * p.user_blocks_per_plane as u64 * upb;
    if logical == 0 || logical >= u32::MAX as u64 {
        return Err(ExperimentError::invalid(
            "user_blocks_per_plane",
            format!("gives {logical} logical units; must be in 1..2^32-1"),
        ));
    }
    let bpp = p
        .user_blocks_per_plane
        .checked_add(spare)
        .ok_or_else(|| ExperimentError::invalid("op_ratio", format!("{op} is too large")))?;
    let (cfg, d) = device_with_blocks(&p.base, bpp, logical as u32)?;
    Ok((cfg, d, spare))
}

/// Run every point of `p` in parallel on rayon's current pool, most expensive (highest
/// model WAF) first. Each point is seeded from `base.seed` alone, so results do not depend
/// on scheduling. `on_done` is called as each
/// point finishes (from worker threads, in completion order).
///
/// # Errors
/// The first invalid point (checked before anything runs) or simulation error.
pub fn sweep(p: &OpSweepParams, on_done: &(dyn Fn(&OpPoint) + Sync)) -> Result<OpSweep> {
    if p.op_ratios.is_empty() {
        return Err(ExperimentError::invalid("op_ratios", "must not be empty"));
    }
    if p.host_writes == 0 {
        return Err(ExperimentError::invalid("host_writes", "must be > 0"));
    }
    let policy = model_policy(&p.base)?;
    // Build (and validate) all points before spending time on any.
    let mut jobs = Vec::with_capacity(p.op_ratios.len());
    for &op in &p.op_ratios {
        let (cfg, d, spare) = sweep_point_config(p, op)?;
        let model = model_point(&cfg, &d, p.traffic, p.host_writes)?;
        jobs.push((op, cfg, d, spare, model));
    }
    let soft = p.base.ftl.gc_soft_free_blocks;
    // Most expensive (highest predicted WAF) first, for load balance; results are put back
    // in input order afterwards.
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| jobs[b].4.waf.total_cmp(&jobs[a].4.waf));
    let t0 = Instant::now();
    // Longest-first list scheduling: every worker pulls the next most expensive point.
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Result<OpPoint>)>> = Mutex::new(Vec::with_capacity(jobs.len()));
    let workers = rayon::current_num_threads().min(jobs.len()).max(1);
    rayon::scope(|s| {
        for _ in 0..workers {
            s.spawn(|_| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let (op, cfg, d, spare, model) = &jobs[i];
                let r = run_overwrites(cfg, p.traffic, p.warmup_writes, p.host_writes).map(|sim| {
                    let pt = OpPoint {
                        op_ratio: *op,
                        spare_blocks_per_plane: *spare,
                        actual_op_ratio: *spare as f64 / p.user_blocks_per_plane as f64,
                        blocks_per_plane: d.geometry.blocks_per_plane,
                        logical_units: d.logical_units,
                        time_s: sim.time_ns as f64 / 1e9,
                        waf_rel_err: rel_err(model.waf, sim.waf),
                        time_rel_err: rel_err(model.time_ns, sim.time_ns as f64),
                        sim,
                        model: *model,
                        improvement_pct: 0.0,
                        model_improvement_pct: 0.0,
                    };
                    on_done(&pt);
                    pt
                });
                let failed = r.is_err();
                done.lock().unwrap_or_else(|e| e.into_inner()).push((i, r));
                if failed {
                    // Stop handing out work; the error is reported below.
                    next.store(order.len(), Ordering::Relaxed);
                }
            });
        }
    });
    let runs = done.into_inner().unwrap_or_else(|e| e.into_inner());
    let wall_s = t0.elapsed().as_secs_f64();
    let mut slots: Vec<Option<OpPoint>> = vec![None; jobs.len()];
    for (i, r) in runs {
        slots[i] = Some(r?);
    }
    let mut points: Vec<OpPoint> = slots.into_iter().flatten().collect();
    if points.len() != jobs.len() {
        return Err(ExperimentError::invalid(
            "op_ratios",
            "a sweep point did not run (worker stopped)",
        ));
    }
    let t_ref = points[0].sim.time_ns as f64;
    let m_ref = points[0].model.time_ns;
    for pt in &mut points {
        pt.improvement_pct = if t_ref > 0.0 {
            (1.0 - pt.sim.time_ns as f64 / t_ref) * 100.0
        } else {
            0.0
        };
        pt.model_improvement_pct = if m_ref > 0.0 {
            (1.0 - pt.model.time_ns / m_ref) * 100.0
        } else {
            0.0
        };
    }
    Ok(OpSweep {
        points,
        user_blocks_per_plane: p.user_blocks_per_plane,
        min_spare_blocks_per_plane: p.min_spare_blocks_per_plane,
        gc_soft_free_blocks: soft,
        host_writes: p.host_writes,
        model_description: format!(
            "{policy:?} cleaning, {} traffic; non-data space per plane = {soft} free blocks + 1/2 host open block + 1/(2 WAF) GC open block (waf_for_device with reserve {}, FrontierLayout::Shared)",
            traffic_name(p.traffic),
            soft as f64 + 0.5
        ),
        wall_s,
        threads: rayon::current_num_threads(),
    })
}

/// Short description of a traffic.
pub fn traffic_name(t: Traffic) -> String {
    match t {
        Traffic::Uniform => "uniform random".into(),
        Traffic::HotCold {
            hot_io_fraction: r,
            hot_space_fraction: f,
        } => format!("hot/cold {:.0}/{:.0}", r * 100.0, f * 100.0),
    }
}

// ---------------------------------------------------------------------------------------
// The advisor (`ssdlab op-advise`).

/// What [`advise`] needs besides the config.
#[derive(Debug, Clone, Copy)]
pub struct AdviseParams {
    /// The requirement.
    pub requirement: Requirement,
    /// Flash price per GB (10^9 bytes) of physical capacity.
    pub cost_per_gb: f64,
    /// OP grid (nominal ratios).
    pub op_grid: OpGrid,
}

/// The advisor's table and pick for a config.
#[derive(Debug, Clone, Serialize)]
pub struct OpAdvice {
    /// Model policy.
    pub policy: GcPolicyModel,
    /// Modelled traffic.
    pub traffic: Traffic,
    /// Why the traffic was approximated, if it was.
    pub traffic_note: Option<String>,
    /// Logical mapping units (kept fixed over the grid).
    pub logical_units: u32,
    /// Logical capacity in GB (10^9 bytes).
    pub logical_gb: f64,
    /// Non-data spare as an OP ratio (GC free blocks + open blocks at WAF = 1, i.e.
    /// `planes · (gc_soft_free_blocks + 1) · b / U`), subtracted from each point.
    pub reserve_op: f64,
    /// Mapping units per block (the model's `b`).
    pub units_per_block: u32,
    /// Per-unit serial timing used.
    pub timing: NandTiming,
    /// The requirement evaluated.
    pub requirement: Requirement,
    /// One row per grid point.
    pub rows: Vec<AdvisorRow>,
    /// Index of the smallest OP meeting the requirement.
    pub best: Option<usize>,
}

impl OpAdvice {
    /// The chosen row, or [`ExperimentError::RequirementUnmet`] describing the best the
    /// grid reaches.
    pub fn pick(&self, requirement_text: &str, grid: &OpGrid) -> Result<&AdvisorRow> {
        if let Some(i) = self.best {
            return Ok(&self.rows[i]);
        }
        let best = self.rows.iter().rev().find(|r| r.waf.is_some());
        let detail = match best {
            Some(r) => format!(
                "the largest OP {:.2} gives model WAF {:.3}, {:.3} MB/s sustained{}",
                r.op_ratio,
                r.waf.unwrap_or(f64::NAN),
                r.write_mb_per_s,
                match (self.requirement, r.time_ns) {
                    (Requirement::MaxTotalTime { .. }, Some(t)) =>
                        format!(", {:.3} s for the volume", t / 1e9),
                    _ => String::new(),
                }
            ),
            None => "no grid point leaves data-holding spare after the GC reserve".into(),
        };
        Err(ExperimentError::RequirementUnmet {
            requirement: requirement_text.into(),
            grid: format!("{:.2}..={:.2} step {:.2}", grid.min, grid.max, grid.step),
            detail,
        })
    }
}

/// Cost/performance table over OP for `cfg`'s device and workload (model only). The
/// logical capacity of `cfg` is kept; OP adds physical capacity.
pub fn advise(cfg: &Config, p: &AdviseParams) -> Result<OpAdvice> {
    if cfg.device.zns.is_some() {
        return Err(ExperimentError::invalid(
            "device.zns",
            "op-advise sizes the over-provisioning a conventional device's GC needs; a zoned device has no device GC and no over-provisioning (its spare is the host's: with the log-structured layer, workload.spare_ratio; compare values with `ssdlab sweep CONFIG --grid workload.spare_ratio=0.07,0.14,0.28`)",
        ));
    }
    let d = cfg.validate()?;
    let policy = model_policy(cfg)?;
    let (traffic, traffic_note) = traffic_of(cfg)?;
    let b = d.geometry.units_per_block;
    let timing = unit_timing(cfg, &d);
    let logical_gb = d.logical_bytes as f64 / 1e9;
    // Constant reserve for the grid scan: the non-data space at WAF = 1 (at most b/2 per
    // plane more than the exact value; conservative). The confirmation uses the exact
    // fixed point of [`model_waf`].
    let reserve_op = d.geometry.planes as f64 * non_data_blocks_per_plane(cfg, 1.0) * b as f64
        / d.logical_units as f64;
    let input = AdvisorInput {
        parallel_units: d.geometry.dies,
        die: Some(die_model(cfg, &d)),
        policy,
        traffic,
        pages_per_block: b,
        timing,
        logical_gb,
        cost_per_gb: p.cost_per_gb,
        reserve_op,
        requirement: p.requirement,
        op_grid: p.op_grid,
    };
    let a = ssdlab_model::advise(&input)?;
    Ok(OpAdvice {
        policy,
        traffic,
        traffic_note,
        logical_units: d.logical_units,
        logical_gb,
        reserve_op,
        units_per_block: b,
        timing,
        requirement: p.requirement,
        rows: a.rows,
        best: a.best,
    })
}

/// Blocks per plane that give `cfg`'s logical capacity the nominal OP `op`
/// (`round(logical_units · (1 + op) / (planes · units_per_block))`).
pub fn blocks_per_plane_for_op(d: &Derived, op: f64) -> u32 {
    let per_plane = d.geometry.planes as f64 * d.geometry.units_per_block as f64;
    (d.logical_units as f64 * (1.0 + op) / per_plane)
        .round()
        .min(u32::MAX as f64) as u32
}

/// Simulation check of one OP point.
#[derive(Debug, Clone, Serialize)]
pub struct ConfirmRow {
    /// Nominal OP ratio of the grid point.
    pub op_ratio: f64,
    /// Blocks per plane simulated.
    pub blocks_per_plane: u32,
    /// OP ratio of the simulated device (whole blocks).
    pub device_op_ratio: f64,
    /// Model of the simulated device.
    pub model: Option<ModelPoint>,
    /// Simulated counts.
    pub sim: Option<OverwriteRun>,
    /// Simulated sustained write throughput, 10^6 bytes/s.
    pub sim_write_mb_per_s: Option<f64>,
    /// `(model − sim)/sim` of the WAF.
    pub waf_rel_err: Option<f64>,
    /// Whether the simulated point meets the requirement.
    pub sim_meets: Option<bool>,
    /// Why the point could not be simulated.
    pub error: Option<String>,
}

/// Simulate the grid points `ops` of `cfg` (logical capacity kept) in parallel: fill,
/// `warmup_capacity_multiple` × capacity of warm-up overwrites, then
/// `measured_capacity_multiple` × capacity measured, with the config's traffic; compare
/// with the model of the simulated device and check the requirement on the simulation.
/// Points that cannot be built (spare below the GC reserve) carry an `error`.
pub fn confirm(
    cfg: &Config,
    ops: &[f64],
    requirement: Requirement,
    warmup_capacity_multiple: f64,
    measured_capacity_multiple: f64,
) -> Result<Vec<ConfirmRow>> {
    for (key, v, min) in [
        ("--warmup-capacity", warmup_capacity_multiple, 0.0),
        ("--confirm-capacity", measured_capacity_multiple, 1e-9),
    ] {
        if !(v >= min && v.is_finite()) {
            return Err(ExperimentError::invalid(
                key,
                format!("{v} must be a finite number >= {min}"),
            ));
        }
    }
    let d = cfg.validate()?;
    let (traffic, _) = traffic_of(cfg)?;
    model_policy(cfg)?;
    let units = d.logical_units;
    let warmup = (warmup_capacity_multiple * units as f64).round() as u64;
    let measured = ((measured_capacity_multiple * units as f64).round() as u64).max(1);
    let unit_bytes = d.geometry.unit_bytes as f64;
    let rows = ops
        .par_iter()
        .with_max_len(1)
        .map(|&op| {
            let bpp = blocks_per_plane_for_op(&d, op);
            let mut row = ConfirmRow {
                op_ratio: op,
                blocks_per_plane: bpp,
                device_op_ratio: f64::NAN,
                model: None,
                sim: None,
                sim_write_mb_per_s: None,
                waf_rel_err: None,
                sim_meets: None,
                error: None,
            };
            let built = device_with_blocks(cfg, bpp, units).and_then(|(c, dd)| {
                let m = model_point(&c, &dd, traffic, measured)?;
                Ok((c, dd, m))
            });
            let (c, dd, m) = match built {
                Ok(x) => x,
                Err(e) => {
                    row.error = Some(e.to_string());
                    return row;
                }
            };
            row.device_op_ratio = c.device.over_provisioning_ratio;
            // The simulated WAF through the model's dies.
            row.model = Some(m);
            match run_overwrites(&c, traffic, warmup, measured) {
                Ok(s) => {
                    let mbps = match die_write_mb_per_s(&c, &dd, s.waf.max(1.0)) {
                        Ok(x) => x,
                        Err(e) => {
                            row.error = Some(e.to_string());
                            return row;
                        }
                    };
                    row.sim_write_mb_per_s = Some(mbps);
                    row.waf_rel_err = Some(rel_err(m.waf, s.waf));
                    row.sim_meets = Some(match requirement {
                        Requirement::MaxWaf(w) => s.waf <= w,
                        Requirement::MinWriteMBps(x) => mbps >= x,
                        Requirement::MaxTotalTime {
                            host_writes,
                            max_time_ns,
                        } => host_writes as f64 * unit_bytes / (mbps * 1e6) * 1e9 <= max_time_ns,
                    });
                    row.sim = Some(s);
                }
                Err(e) => row.error = Some(e.to_string()),
            }
            row
        })
        .collect();
    Ok(rows)
}

/// `ssdlab reproduce op`.
pub struct Op;

/// `reproduce op`'s own flags.
#[derive(clap::Args)]
pub struct OpArgs {
    /// Divide the paper's 100 GiB overwrite volume per OP point by this (1 = the paper's;
    /// 20 ≈ 51 capacities, seconds). Like every `--scale`, a divisor ≥ 1.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Spare blocks used at "OP 0 %" (the GC reserve): 3 the FTL needs (2 open blocks +
    /// gc_hard_free_blocks) plus data spare; at least 4.
    #[arg(long, default_value_t = PAPER_ZERO_OP_SPARE_BLOCKS)]
    zero_op_spare_blocks: u32,
}

/// The parameters of `reproduce op`: the sweep and the `--scale` divisor it was made with.
pub struct OpReproduce {
    pub sweep: OpSweepParams,
    pub scale: f64,
}

impl Experiment for Op {
    const NAME: &'static str = "op";
    const ABOUT: &'static str = "Spec 02: OP 0…100 % sweep on the 800-block × 128-page × 1 KiB device (greedy GC, uniform random 1 KiB overwrites of 100 GiB), simulation vs analytic model";
    const DEFAULT_JOBS: usize = 0;
    const DOC_TABLES: &'static [crate::experiment::DocTable] = &[crate::experiment::DocTable {
        name: "op",
        doc: "docs/reproduce-op.md",
        fast: false,
        from: "| OP |",
        to: None,
    }];
    type Args = OpArgs;
    type Params = OpReproduce;
    type Report = OpSweep;

    fn params(a: &OpArgs, common: &Common) -> Result<OpReproduce> {
        if !(a.scale >= 1.0 && a.scale.is_finite()) {
            return Err(ExperimentError::invalid(
                format!("--scale {}", a.scale),
                "must be a divisor >= 1 (it divides the 100 GiB volume; before 2026-11-23 it was a fraction: --scale 0.05 is now --scale 20)",
            ));
        }
        let mut p = OpSweepParams::paper(1.0 / a.scale)?;
        p.base = crate::run::with_overrides(&p.base, &common.sets, "configs/op-paper.toml")?;
        if a.zero_op_spare_blocks < 4 {
            return Err(ExperimentError::invalid(
                "--zero-op-spare-blocks",
                format!(
                    "{} is below the minimum 4 (2 open blocks + gc_hard_free_blocks = 1 + at least one block of data spare so GC can make progress)",
                    a.zero_op_spare_blocks
                ),
            ));
        }
        p.min_spare_blocks_per_plane = a.zero_op_spare_blocks;
        if let Some(s) = common.seed {
            p.base.seed = s;
        }
        Ok(OpReproduce {
            sweep: p,
            scale: a.scale,
        })
    }

    fn banner(p: &OpReproduce, threads: usize) -> String {
        format!(
            "reproduce op: {} OP points x {} host writes on {threads} threads ...",
            p.sweep.op_ratios.len(),
            p.sweep.host_writes,
        )
    }

    fn run(p: &OpReproduce, say: &dyn Say) -> Result<OpSweep> {
        sweep(&p.sweep, &|pt: &OpPoint| {
            say.progress(&format!(
                "  OP {:>5.1} %: WAF {:.4} (model {:.4}), {:.1} s wall",
                pt.op_ratio * 100.0,
                pt.sim.waf,
                pt.model.waf,
                pt.sim.wall_s
            ));
        })
    }

    fn csv(r: &OpSweep) -> String {
        r.csv()
    }

    fn checks(r: &OpSweep) -> Vec<Check> {
        r.checks()
    }

    fn markdown(s: &OpSweep, r: &OpReproduce, _wall_s: f64) -> String {
        let p = &r.sweep;
        let g = &p.base.device.geometry;
        let t = crate::experiment::FreshTimes::of(&p.base);
        let zero = &s.points[0];
        let gc_hard = p.base.ftl.gc_hard_free_blocks;
        let mut o = String::new();
        let _ = writeln!(o, "# Over-provisioning sweep (spec 02)\n");
        let _ = writeln!(
            o,
            "* Device: {} user blocks x {} pages x {} B (page-mapped, {} GC, functional mode: one serial resource), seed {}.",
            s.user_blocks_per_plane, g.pages_per_block, g.page_size_bytes, p.base.ftl.gc.name(), p.base.seed
        );
        let _ = writeln!(
            o,
            "{}",
            crate::experiment::gc_planes_line(
                p.base.scheduler.multi_plane_gc,
                "the sweep runs in functional mode (no dies), so WAF does not depend on it; `op-advise`'s die model follows the key."
            )
        );
        let _ = writeln!(
            o,
            "* Workload: sequential fill (not counted), then {} uniform random {} B overwrites ({:.3} GiB = the paper's 100 GiB / {}) per OP point.",
            s.host_writes,
            g.mapping_unit_bytes,
            s.host_writes as f64 * g.mapping_unit_bytes as f64 / (1u64 << 30) as f64,
            r.scale
        );
        let _ = writeln!(
            o,
            "* Cost read : program : erase = {} : {} : {} us.",
            t.read_ns as f64 / 1e3,
            t.program_ns as f64 / 1e3,
            t.erase_ns() as f64 / 1e3
        );
        let _ = writeln!(
            o,
            "* OP x % = round(x % x {}) spare blocks. **\"OP 0 %\" uses a minimum GC reserve of {} spare blocks** ({:.2} % of the user space): 3 the FTL cannot run without (2 open blocks for host and GC writes + gc_hard_free_blocks = {gc_hard}) and {} more (the bare minimum the simulator accepts is 4 spare blocks: model WAF {}).",
            s.user_blocks_per_plane,
            s.min_spare_blocks_per_plane,
            s.min_spare_blocks_per_plane as f64 / s.user_blocks_per_plane as f64 * 100.0,
            s.min_spare_blocks_per_plane.saturating_sub(3),
            bare_minimum_waf(p)
        );
        let _ = writeln!(
            o,
            "* Model: {}; counts and time from the WAF by `ssdlab_model::predict_costs`; err = (model - sim) / sim.",
            s.model_description
        );
        let _ = writeln!(
            o,
            "* Improvement = 1 - time / time at OP {:.0} % ({} spare blocks).\n",
            zero.op_ratio * 100.0,
            zero.spare_blocks_per_plane
        );
        let _ = writeln!(o, "| OP | spare blocks | NAND reads | NAND programs | NAND erases | time (s) | WAF | model WAF | WAF err | model time (s) | time err | improvement | model improvement |");
        let _ = writeln!(
            o,
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for pt in &s.points {
            let _ = writeln!(
                o,
                "| {:.0} % | {} | {} | {} | {} | {:.1} | {:.4} | {:.4} | {:+.2} % | {:.1} | {:+.2} % | {:.2} % | {:.2} % |",
                pt.op_ratio * 100.0,
                pt.spare_blocks_per_plane,
                pt.sim.nand_reads,
                pt.sim.nand_programs,
                pt.sim.nand_erases,
                pt.time_s,
                pt.sim.waf,
                pt.model.waf,
                pt.waf_rel_err * 100.0,
                pt.model.time_ns / 1e9,
                pt.time_rel_err * 100.0,
                pt.improvement_pct,
                pt.model_improvement_pct
            );
        }
        let max_err = s
            .points
            .iter()
            .map(|p| p.waf_rel_err.abs())
            .fold(0.0, f64::max);
        o += &crate::experiment::shape_section(
            Shape {
                title: "the paper's trend; the model",
                group: None,
            },
            &s.checks(),
            s.points.len(),
            s.wall_s,
        );
        let _ = writeln!(
            o,
            "\nLargest |WAF error| {:.2} %. Sweep wall time {:.1} s on {} threads (per point: {}).",
            max_err * 100.0,
            s.wall_s,
            s.threads,
            s.points
                .iter()
                .map(|p| format!("{:.0}", p.sim.wall_s))
                .collect::<Vec<_>>()
                .join("/")
        );
        o
    }

    /// Two panels: NAND counts (log scale) and consumed time vs OP, simulation (markers)
    /// and model (lines), so a model line under matching simulation points stays visible.
    fn plot(s: &OpSweep, svg: &mut String) -> PlotResult {
        use plotters::prelude::*;
        let root = SVGBackend::with_string(svg, (960, 900)).into_drawing_area();
        root.fill(&WHITE)?;
        let (top, bottom) = root.split_vertically(470);
        let x_max = s
            .points
            .iter()
            .map(|p| p.op_ratio)
            .fold(0.0, f64::max)
            .max(0.1)
            * 100.0;
        let counts: Vec<f64> = s
            .points
            .iter()
            .flat_map(|p| {
                [
                    p.sim.nand_reads as f64,
                    p.sim.nand_programs as f64,
                    p.sim.nand_erases as f64,
                    p.model.nand_reads,
                    p.model.nand_programs,
                    p.model.nand_erases,
                ]
            })
            .filter(|v| *v > 0.0)
            .collect();
        let lo = counts
            .iter()
            .cloned()
            .fold(f64::INFINITY, f64::min)
            .max(1.0)
            / 2.0;
        let hi = counts.iter().cloned().fold(1.0, f64::max) * 2.0;
        let mut c = ChartBuilder::on(&top)
            .caption("NAND operations vs over-provisioning", ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(-2f64..x_max + 2.0, (lo..hi).log_scale())?;
        c.configure_mesh()
            .x_desc("OP (%)")
            .y_desc("count (log)")
            .y_labels(6)
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()?;
        /// (simulated, model) value of one count of a point.
        type Pick = fn(&OpPoint) -> (f64, f64);
        let series: [(&str, RGBColor, Pick); 3] = [
            ("reads (GC copies)", BLUE, |p| {
                (p.sim.nand_reads as f64, p.model.nand_reads)
            }),
            ("programs", RED, |p| {
                (p.sim.nand_programs as f64, p.model.nand_programs)
            }),
            ("erases", GREEN, |p| {
                (p.sim.nand_erases as f64, p.model.nand_erases)
            }),
        ];
        for (name, color, f) in series {
            let sim: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|p| (p.op_ratio * 100.0, f(p).0.max(lo)))
                .collect();
            let model: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|p| (p.op_ratio * 100.0, f(p).1.max(lo)))
                .collect();
            c.draw_series(LineSeries::new(model, color.stroke_width(2)))?
                .label(format!("{name}, model"))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            c.draw_series(
                sim.iter()
                    .map(|&p| Circle::new(p, 5, color.stroke_width(2))),
            )?
            .label(format!("{name}, simulated"))
            .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.stroke_width(2)));
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;

        let times = s
            .points
            .iter()
            .flat_map(|p| [p.time_s, p.model.time_ns / 1e9]);
        let t_max = times.clone().fold(1e-9, f64::max);
        let t_min = times.filter(|t| *t > 0.0).fold(t_max, f64::min);
        let mut c = ChartBuilder::on(&bottom)
            .caption("Consumed time vs over-provisioning", ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(-2f64..x_max + 2.0, (t_min / 2.0..t_max * 2.0).log_scale())?;
        c.configure_mesh()
            .x_desc("OP (%)")
            .y_desc("serial time (s, log)")
            .y_labels(6)
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .draw()?;
        let sim: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|p| (p.op_ratio * 100.0, p.time_s.max(t_min / 2.0)))
            .collect();
        c.draw_series(
            sim.iter()
                .map(|&p| Circle::new(p, 5, BLACK.stroke_width(2))),
        )?
        .label("time, simulated")
        .legend(|(x, y)| Circle::new((x + 10, y), 5, BLACK.stroke_width(2)));
        let model: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|p| (p.op_ratio * 100.0, (p.model.time_ns / 1e9).max(t_min / 2.0)))
            .collect();
        c.draw_series(LineSeries::new(model, MAGENTA.stroke_width(2)))?
            .label("time, model")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], MAGENTA.stroke_width(2)));
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    }
}

/// Model WAF of the sweep's device with the bare minimum of 4 spare blocks.
fn bare_minimum_waf(p: &OpSweepParams) -> String {
    let mut q = p.clone();
    q.min_spare_blocks_per_plane = 4;
    sweep_point_config(&q, 0.0)
        .and_then(|(c, d, _)| model_waf(&c, &d, q.traffic))
        .map_or_else(|e| format!("n/a: {e}"), |(w, _)| format!("{w:.0}"))
}
