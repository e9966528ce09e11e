//! Run configuration: raw TOML structs (serde, units in every field name, unknown keys
//! rejected) → [`Config::validate`] → [`Derived`] parameters computed once.
//!
//! Every field is documented in `docs/config.md`; keep the two in step.

mod derived;
pub mod host_interface;
pub use host_interface::HostInterfaceConfig;
pub mod locate;
mod overrides;
pub mod reliability;
pub use reliability::ReliabilityConfig;
pub mod zoned;
pub use derived::{Derived, FastDiv, Geometry, RegionGeometry};
pub use overrides::apply_overrides;
pub use zoned::{FdpConfig, ZnsConfig, MAX_LANES};

pub use crate::base::{step_lookup, CellMode, MAX_ERASE_LOOPS};
pub use crate::flash::{CellTiming, TimingTable};
pub use crate::policy::alloc::AllocConfig;
pub use crate::policy::gc::GcConfig;
pub use crate::policy::mapping::MappingConfig;
pub use crate::policy::placement::PlacementConfig;
pub use crate::policy::reclaim::ReclaimConfig;
pub use crate::policy::refresh::RefreshConfig;
pub use crate::policy::suspend::SuspendConfig;
pub use crate::policy::wear::WearConfig;

use crate::error::{Result, SimError};
use serde::{Deserialize, Serialize};
use ssdlab_workload::WorkloadConfig;
use std::path::Path;

/// Top-level run configuration.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Master seed; every random stream of the run derives from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// `timed` (discrete-event, latencies) or `functional` (operation counting, serial time).
    #[serde(default)]
    pub mode: Mode,
    /// Track a version per mapping unit and check every read against it.
    #[serde(default)]
    pub integrity: bool,
    pub device: DeviceConfig,
    #[serde(default)]
    pub ftl: FtlConfig,
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    #[serde(default)]
    pub workload: WorkloadConfig,
    #[serde(default)]
    pub precondition: PreconditionConfig,
    #[serde(default)]
    pub output: OutputConfig,
}

/// `[output]`: optional outputs of a run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OutputConfig {
    /// Timed mode: one `timeseries.csv` row per this much simulated time (0 = none).
    pub timeseries_interval_ns: u64,
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig {
            timeseries_interval_ns: 100_000_000,
        }
    }
}

fn default_seed() -> u64 {
    1
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    #[default]
    Timed,
    Functional,
}

/// Physical layout of the device.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GeometryConfig {
    pub channels: u32,
    pub chips_per_channel: u32,
    pub dies_per_chip: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_size_bytes: u32,
    /// Granularity of the logical-to-physical map; a page holds page_size / unit slots.
    #[serde(default = "default_unit")]
    pub mapping_unit_bytes: u32,
}

fn default_unit() -> u32 {
    4096
}

/// `[device]`: geometry, timing, interface and spare space.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    pub geometry: GeometryConfig,
    /// Cell mode every block starts in.
    #[serde(default)]
    pub cell_mode: CellMode,
    /// (physical − logical) / logical. Required but for a zoned device (0: its capacity is
    /// its zones).
    #[serde(default)]
    pub over_provisioning_ratio: f64,
    /// Channel (bus) rate in MB/s (10^6 bytes per second).
    #[serde(default = "default_channel_rate")]
    pub channel_rate_mb_per_s: u64,
    /// Command and address cycles of each NAND operation, charged to the die.
    #[serde(default)]
    pub command_overhead_ns: u64,
    /// The host data path without `[device.host_interface]` (MB/s, 10^6 bytes per
    /// second): every byte a request reads or writes crosses it, one transfer at a time
    /// (both directions share it). Default: PCIe 4.0 x4 after its line encoding.
    #[serde(default = "default_host_transfer_rate")]
    pub host_transfer_mb_per_s: u64,
    #[serde(default)]
    pub timing: TimingTable,
    /// Share of blocks that are bad from the factory (drawn from the seed, excluded from
    /// every pool before the run), 0 ≤ ratio < 1.
    #[serde(default)]
    pub bad_block_ratio: f64,
    /// Probability that a page program fails (drawn per program from the seed): the page
    /// holds nothing, its data is programmed elsewhere, the block is retired once its
    /// valid data has moved.
    #[serde(default)]
    pub program_fail_rate: f64,
    /// Probability that an erase fails (drawn per erase): the block is retired.
    #[serde(default)]
    pub erase_fail_rate: f64,
    /// `[device.host_interface]`: the PCIe link and NVMe front end (timed mode); absent =
    /// no link and no command cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_interface: Option<HostInterfaceConfig>,
    /// `[device.zns]`: a zoned namespace (docs/zns.md); absent = a conventional device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zns: Option<ZnsConfig>,
    /// `[device.fdp]`: flexible data placement handles (docs/zns.md); absent = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fdp: Option<FdpConfig>,
    /// Raw bit errors, ECC and read retry (`[device.reliability]`, docs/reliability.md).
    #[serde(default)]
    pub reliability: ReliabilityConfig,
}

impl DeviceConfig {
    /// The flash timing model of this device.
    pub fn timing_model(&self) -> crate::flash::TimingModel {
        let mut t = crate::flash::TimingModel::new(
            &self.timing,
            self.command_overhead_ns,
            self.channel_rate_mb_per_s,
            self.host_transfer_mb_per_s,
        );
        let r = &self.reliability;
        t.set_retry(
            r.hard_decode_ns,
            r.soft_decode_reads,
            r.soft_decode_ns,
            self.geometry.mapping_unit_bytes,
        );
        t
    }
}

fn default_channel_rate() -> u64 {
    800
}

/// PCIe 4.0 x4: 4 lanes of 16 GT/s with 128b/130b encoding, 7,877 MB/s before TLP
/// overhead (no faster than the link a typical NVMe SSD of the presets has).
pub const DEFAULT_HOST_TRANSFER_MB_PER_S: u64 = 7_877;

fn default_host_transfer_rate() -> u64 {
    DEFAULT_HOST_TRANSFER_MB_PER_S
}

/// What a region holds.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RegionContent {
    /// Host data; its physical size (with the OP ratio) sets the logical capacity.
    #[default]
    Data,
    /// Host data held temporarily (e.g. an SLC write cache); GC drains it into its
    /// `relocate_to` region. Adds no logical capacity.
    Cache,
    /// Translation pages of a demand-paged mapping (spec 04).
    Translation,
    /// A detected file-system journal (spec 05).
    Journal,
}

impl RegionContent {
    pub fn name(self) -> &'static str {
        match self {
            RegionContent::Data => "data",
            RegionContent::Cache => "cache",
            RegionContent::Translation => "translation",
            RegionContent::Journal => "journal",
        }
    }
}

/// `[[ftl.regions]]`: a set of blocks in every plane with its own cell mode, write
/// streams, GC and reserve. Regions are laid out in the order given, from the start of
/// each plane. Without any, the device is one `data` region.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RegionConfig {
    pub name: String,
    #[serde(default)]
    pub content: RegionContent,
    /// Cell mode the region's blocks are programmed in (default `device.cell_mode`).
    pub cell_mode: Option<CellMode>,
    /// Blocks of the region in every plane. At most one region may give neither this nor
    /// `bytes`: it takes the blocks the others leave.
    pub blocks_per_plane: Option<u32>,
    /// Size of the region in bytes (in its own cell mode), rounded up to whole blocks per plane.
    pub bytes: Option<u64>,
    /// Pages per block in the region's cell mode (default: `pages_per_block` × its bits per
    /// cell / the device cell mode's bits per cell, e.g. a third for SLC on TLC).
    pub pages_per_block: Option<u32>,
    /// Region GC relocates valid units into (default: itself; for `cache`: the data region).
    pub relocate_to: Option<String>,
    /// Victim policy of this region (default `[ftl.gc]`).
    pub gc: Option<GcConfig>,
    /// GC thresholds of this region (default the `[ftl]` ones).
    pub gc_soft_free_blocks: Option<u32>,
    pub gc_hard_free_blocks: Option<u32>,
    /// Relocate out of this region only while the host is idle, and then all of it (an SLC
    /// write buffer migrating to TLC, spec 05); needs `relocate_to` another region.
    #[serde(default)]
    pub drain_when_idle: bool,
    /// Host pages of this region visit the planes in stripe order on a cursor of their own
    /// (a write stream with its own die rotation) instead of the one the other regions
    /// share, so they spread evenly over the planes whatever is written between them (a
    /// journal region: docs/slc-journal.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_stripe: bool,
    /// Plane ids (die-major: die · planes_per_die + plane in die) the region takes blocks
    /// on; default every plane. A region on some planes only has no blocks on the others
    /// (its `blocks_per_plane` on each plane it names; `bytes` divided over them), its host
    /// pages visit its planes in stripe order on a cursor of their own, and its GC stays on
    /// them (copies never leave their plane). Every plane's blocks must still add up: the
    /// region without a size takes the same rest on every plane (docs/config.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planes: Option<Vec<u32>>,
}

/// `[ftl]`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FtlConfig {
    /// `[ftl.mapping]`: address mapping policy (`ssdlab policies` lists them; default `page-map`).
    pub mapping: MappingConfig,
    /// `[ftl.gc]`: the victim policy (`policy = "greedy"`, …).
    pub gc: GcConfig,
    /// GC starts on a plane (of a region) with fewer free blocks than this; it is paced
    /// against host writes, faster the further below the threshold the plane is.
    pub gc_soft_free_blocks: u32,
    /// Free blocks per plane kept for GC: host writes may not open a block when only this
    /// many are left (GC then runs unpaced), and GC becomes urgent (served before host I/O
    /// on its die) below it.
    pub gc_hard_free_blocks: u32,
    /// `[ftl.allocation]`: which free block a stream opens (`fifo`, `min-erase`).
    pub allocation: AllocConfig,
    /// `[ftl.wear_leveling]`: the wear-leveling policy (`none`, `bet`, …).
    pub wear_leveling: WearConfig,
    /// `[ftl.placement]`: which region host pages go to (`direct`, `cache-first`).
    pub placement: PlacementConfig,
    /// `[ftl.read_reclaim]`: relocate a block read too often since its erase (`none`, the
    /// default; `threshold` with `read_count`). Its operations count under cause `reclaim`.
    #[serde(skip_serializing_if = "ReclaimConfig::is_default")]
    pub read_reclaim: ReclaimConfig,
    /// `[ftl.refresh]`: relocate a block whose data is old (`none`, the default; `age` with
    /// `age_ms` and `scan_interval_ms`). Its operations count under cause `refresh`.
    #[serde(skip_serializing_if = "RefreshConfig::is_default")]
    pub refresh: RefreshConfig,
    /// `[[ftl.regions]]`; empty = one data region over every block.
    pub regions: Vec<RegionConfig>,
    /// Order in which consecutive pages stripe over the parallel units, fastest first:
    /// a permutation of C (channel), W (chip/way), D (die), P (plane).
    pub stripe_order: String,
    /// Die-affine host writes: 0 (off) = a host page goes to the next plane in stripe
    /// order that can take it now, so a die held by an erase is written around; k ≥ 1 =
    /// the stripe's dies in groups of k (in stripe order), consecutive host pages of a
    /// stripe take the groups in turn and a page waits until a plane of its group can
    /// take it (k = 1: each page waits for its die, as a superpage-striping FTL's write
    /// does). Must divide the dies; k = dies is the same as 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub die_affine_group_dies: u32,
    /// DRAM write buffer size; must hold at least one page per plane of a die.
    pub write_buffer_bytes: u64,
    /// Time to move a request's data into or out of the DRAM buffer.
    pub buffer_access_ns: u64,
    /// The write buffer is power-loss protected (capacitor-backed, as on data-centre
    /// drives): a flush completes as soon as the buffer has it, with no NAND work and no
    /// padded partial page. Off (the default): a flush waits until every unit written
    /// before it is programmed.
    pub power_loss_protection: bool,
    /// Keep a unit's previous version (its block pinned against GC's erase) until the
    /// program of its overwrite completes, so a power cut never loses the last durable
    /// version of a unit whose rewrite is in flight (`ssdlab serve` turns it on).
    pub hold_overwritten_until_durable: bool,
    /// Copy programs a GC job keeps in flight (timed mode; 0 = no limit, the default: a
    /// victim's copies are queued at once and the scheduler interleaves them with host
    /// programs). A small window makes GC slower than the die could run it.
    pub gc_window_pages: u32,
    /// Host idle time after which GC collects up to `idle_gc_free_blocks` per plane
    /// (0 = never).
    pub idle_gc_after_ns: u64,
    /// Free blocks per plane GC collects up to while the host is idle (0 = the soft
    /// threshold: idle time adds nothing).
    pub idle_gc_free_blocks: u32,
}

impl Default for FtlConfig {
    fn default() -> Self {
        FtlConfig {
            mapping: MappingConfig::default(),
            gc: GcConfig::default(),
            gc_soft_free_blocks: 3,
            gc_hard_free_blocks: 1,
            allocation: AllocConfig::default(),
            wear_leveling: WearConfig::default(),
            placement: PlacementConfig::default(),
            read_reclaim: ReclaimConfig::default(),
            refresh: RefreshConfig::default(),
            regions: Vec::new(),
            stripe_order: "CWDP".into(),
            die_affine_group_dies: 0,
            write_buffer_bytes: 16 << 20,
            buffer_access_ns: 1_000,
            power_loss_protection: false,
            hold_overwritten_until_durable: false,
            gc_window_pages: 0,
            idle_gc_after_ns: 0,
            idle_gc_free_blocks: 0,
        }
    }
}

/// Serde: leave a zero (an option's "off") out of the resolved config.
fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// `[scheduler]`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// Serve queued host reads before host writes and GC on a die.
    pub read_priority: bool,
    /// What happens to a running erase when a host read arrives for its die: the policy
    /// and its own parameters, `erase_suspend = { policy = "ssr-static", points_per_loop
    /// = 10 }` (docs/erase-suspend.md).
    #[serde(deserialize_with = "erase_suspend_table")]
    pub erase_suspend: SuspendConfig,
    /// Moved into `erase_suspend` (`points_per_loop` of `ssr-static`): refused.
    #[doc(hidden)]
    #[serde(
        default,
        skip_serializing,
        rename = "safe_points_per_loop",
        deserialize_with = "moved_key::<_, 0>"
    )]
    pub moved_safe_points_per_loop: Moved,
    /// Moved into `erase_suspend` (`safe_points` of `ssr-dynamic`): refused.
    #[doc(hidden)]
    #[serde(
        default,
        skip_serializing,
        rename = "ssr_dynamic_safe_points",
        deserialize_with = "moved_key::<_, 1>"
    )]
    pub moved_ssr_dynamic_safe_points: Moved,
    /// Moved into `erase_suspend` (a guarded policy's parameter): refused.
    #[doc(hidden)]
    #[serde(
        default,
        skip_serializing,
        rename = "max_suspensions_per_erase",
        deserialize_with = "moved_key::<_, 2>"
    )]
    pub moved_max_suspensions_per_erase: Moved,
    /// Moved into `erase_suspend` (a guarded policy's parameter): refused.
    #[doc(hidden)]
    #[serde(
        default,
        skip_serializing,
        rename = "max_erase_postponement_ns",
        deserialize_with = "moved_key::<_, 3>"
    )]
    pub moved_max_erase_postponement_ns: Moved,
    /// Suspend programs at ISPP program-loop boundaries for waiting host reads.
    pub program_suspend: bool,
    /// GC, wear-leveling and retirement copies and erases run as multi-plane operations
    /// when the die's other planes have background work of the head's kind and cell mode
    /// first in their queues (as host programs do); false: one plane at a time.
    pub multi_plane_gc: bool,
    /// Reliability model: N_safe(PE), the suspensions per erase loop that do not raise
    /// RBER, as a step table [from_pe_cycles, suspensions], first entry from 0 (Fig. 7).
    pub safe_suspensions_per_loop: Vec<(u32, u32)>,
    /// Reliability model: extra RBER of a loop = this × (suspensions − N_safe)^exponent
    /// when the loop's suspensions exceed N_safe (a configurable model, not a measurement).
    pub extra_rber_per_excess_suspension: f64,
    /// Exponent of the extra-RBER model.
    pub extra_rber_exponent: f64,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            read_priority: true,
            erase_suspend: SuspendConfig::default(),
            moved_safe_points_per_loop: Moved,
            moved_ssr_dynamic_safe_points: Moved,
            moved_max_suspensions_per_erase: Moved,
            moved_max_erase_postponement_ns: Moved,
            program_suspend: false,
            multi_plane_gc: true,
            safe_suspensions_per_loop: vec![(0, 30), (1000, 10)],
            extra_rber_per_excess_suspension: 1e-6,
            extra_rber_exponent: 2.0,
        }
    }
}

fn check_step_table(key: &str, table: &[(u32, u32)]) -> Result<()> {
    crate::base::check_step_table(table).map_err(|why| SimError::config(key, why))
}

impl SchedulerConfig {
    /// Check the suspend settings (called by [`Config::validate`]).
    pub fn validate(&self, timing: &TimingTable) -> Result<()> {
        self.erase_suspend
            .check()
            .map_err(|(k, why)| SimError::config(format!("scheduler.erase_suspend.{k}"), why))?;
        check_step_table(
            "scheduler.safe_suspensions_per_loop",
            &self.safe_suspensions_per_loop,
        )?;
        finite_at_least_0(
            "scheduler.extra_rber_per_excess_suspension",
            self.extra_rber_per_excess_suspension,
        )?;
        let e = self.extra_rber_exponent;
        if !(e.is_finite() && e > 0.0) {
            return Err(SimError::config(
                "scheduler.extra_rber_exponent",
                format!("{e} must be a finite number > 0"),
            ));
        }
        for mode in CellMode::ALL {
            let t = timing.get(mode);
            if t.erase_loops.iter().any(|e| e.1 > MAX_ERASE_LOOPS) {
                return Err(SimError::config(
                    format!("device.timing.{}.erase_loops", mode.name()),
                    format!("at most {MAX_ERASE_LOOPS} loops per erase are supported"),
                ));
            }
            if t.program_loops > MAX_ERASE_LOOPS {
                return Err(SimError::config(
                    format!("device.timing.{}.program_loops", mode.name()),
                    format!("at most {MAX_ERASE_LOOPS} program loops are supported"),
                ));
            }
        }
        Ok(())
    }
}

/// `[precondition]`: functional-mode preparation before the measured workload.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PreconditionConfig {
    pub enabled: bool,
    /// Write the whole logical space once, sequentially.
    pub sequential_fill: bool,
    /// Then uniform random unit overwrites amounting to this multiple of logical capacity.
    pub random_overwrite_capacity_multiple: f64,
    /// Stop the random phase early once WAF over the last window changes by less than this
    /// relative amount between two windows (SNIA PTS style); 0 = off.
    pub steady_state_waf_tolerance: f64,
    /// Window of the steady-state test, as a share of logical capacity.
    pub steady_state_window_capacity_multiple: f64,
}

/// `v` at `key` must be a finite number >= 0.
pub(crate) fn finite_at_least_0(key: &str, v: f64) -> Result<()> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(SimError::config(
            key,
            format!("{v} must be a finite number >= 0"),
        ))
    }
}

impl PreconditionConfig {
    fn validate(&self) -> Result<()> {
        finite_at_least_0(
            "precondition.random_overwrite_capacity_multiple",
            self.random_overwrite_capacity_multiple,
        )?;
        finite_at_least_0(
            "precondition.steady_state_waf_tolerance",
            self.steady_state_waf_tolerance,
        )?;
        let w = self.steady_state_window_capacity_multiple;
        if self.steady_state_waf_tolerance > 0.0 && !(w.is_finite() && w > 0.0) {
            return Err(SimError::config(
                "precondition.steady_state_window_capacity_multiple",
                format!("{w} must be a finite number > 0"),
            ));
        }
        Ok(())
    }
}

impl Default for PreconditionConfig {
    fn default() -> Self {
        PreconditionConfig {
            enabled: false,
            sequential_fill: true,
            random_overwrite_capacity_multiple: 1.0,
            steady_state_waf_tolerance: 0.0,
            steady_state_window_capacity_multiple: 0.1,
        }
    }
}

impl Config {
    /// Parse TOML text; errors name the file, the line and the key.
    pub fn from_toml_str(text: &str, file: &str) -> Result<Config> {
        refuse_moved_keys(text, file)?;
        toml::from_str(text).map_err(|e| SimError::ConfigFile {
            file: file.to_string(),
            reason: workload_error_with_key_line(text)
                .filter(|_| e.span().is_some_and(|s| on_workload_header(text, s.start)))
                .unwrap_or_else(|| e.to_string()),
        })
    }

    pub fn from_file(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path).map_err(|e| SimError::Io {
            path: path.display().to_string(),
            err: e,
        })?;
        Config::from_toml_str(&text, &path.display().to_string())
    }

    /// The configuration as TOML, arrays inline (`erase_loops = [[0, 2]]`, one line each).
    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).unwrap_or_else(|e| format!("# could not serialise config: {e}\n"))
    }

    /// Validate every value and compute the derived parameters.
    pub fn validate(&self) -> Result<Derived> {
        if self.seed > i64::MAX as u64 {
            return Err(SimError::config(
                "seed",
                format!("{} is above {} (a TOML integer)", self.seed, i64::MAX),
            ));
        }
        self.precondition.validate()?;
        self.scheduler.validate(&self.device.timing)?;
        if let Some(h) = &self.device.host_interface {
            h.validate()?;
        }
        if let Some(z) = &self.device.zns {
            z.validate()?;
        }
        if let Some(f) = &self.device.fdp {
            f.validate()?;
        }
        if self.device.zns.is_some() && self.device.fdp.is_some() {
            return Err(SimError::config(
                "device.fdp",
                "a device is zoned ([device.zns]) or has placement handles ([device.fdp]), not both",
            ));
        }
        let d = Derived::new(self)?;
        self.device.reliability.validate()?;
        Ok(d)
    }

    /// The zones a zoned device shows the host (`None` on a conventional device).
    pub fn host_zones(&self, d: &Derived) -> Option<ssdlab_workload::ZoneGeometry> {
        let z = self.device.zns.as_ref()?;
        let data = &d.regions[d.data_region as usize];
        let geo = zoned::zone_geometry(z, &d.geometry, data.blocks_per_plane);
        let unit = d.geometry.unit_bytes as u64;
        Some(ssdlab_workload::ZoneGeometry {
            zone_bytes: geo.zone_units as u64 * unit,
            zone_capacity_bytes: geo.cap_units as u64 * unit,
            zones: geo.zones,
            max_open_zones: z.max_open_zones,
            max_active_zones: z.max_active_zones,
        })
    }

    /// [`Config::validate`] for a configuration read from `text` (file `file`): an error
    /// naming a key also names the key's line (`file:line: key: reason`).
    pub fn validate_in(&self, text: &str, file: &str) -> Result<Derived> {
        self.validate().map_err(|e| at_key_line(e, text, file))
    }
}

/// A `[scheduler]` key that moved into the erase-suspend policy's table; refused (its
/// value is never used).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moved;

/// The erase-suspend keys that moved from flat `[scheduler]` keys into the policy's own
/// table: (old key, the policy that reads it, its key there).
const MOVED_SUSPEND_KEYS: [(&str, &str, &str); 4] = [
    ("safe_points_per_loop", "ssr-static", "points_per_loop"),
    ("ssr_dynamic_safe_points", "ssr-dynamic", "safe_points"),
    (
        "max_suspensions_per_erase",
        "ssr-static",
        "max_suspensions_per_erase",
    ),
    (
        "max_erase_postponement_ns",
        "ssr-static",
        "max_erase_postponement_ns",
    ),
];

fn moved_reason(i: usize, value: &toml::Value, policy: Option<&str>) -> String {
    let (_, default_policy, new) = MOVED_SUSPEND_KEYS[i];
    let policy = policy.unwrap_or(default_policy);
    format!("moved into the erase-suspend policy's table: write scheduler.erase_suspend.{new}, e.g. erase_suspend = {{ policy = {policy:?}, {new} = {value} }} (docs/erase-suspend.md)")
}

fn string_policy_reason(p: &str) -> String {
    format!("a policy is now a table with its parameters: write erase_suspend = {{ policy = {p:?} }} (keys: scheduler.erase_suspend.policy and the policy's own, docs/erase-suspend.md)")
}

/// Serde side of [`MOVED_SUSPEND_KEYS`] (for text that does not come through
/// [`Config::from_toml_str`], e.g. `--set` overrides re-parsed to find the culprit).
fn moved_key<'de, D: serde::Deserializer<'de>, const I: usize>(
    d: D,
) -> std::result::Result<Moved, D::Error> {
    let v = toml::Value::deserialize(d)?;
    Err(serde::de::Error::custom(format!(
        "scheduler.{}: {}",
        MOVED_SUSPEND_KEYS[I].0,
        moved_reason(I, &v, None)
    )))
}

/// `erase_suspend` must be the policy's table; a bare name (the old form) is refused with
/// the form to write.
fn erase_suspend_table<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<SuspendConfig, D::Error> {
    match toml::Value::deserialize(d)? {
        toml::Value::String(p) => Err(serde::de::Error::custom(format!(
            "scheduler.erase_suspend: {}",
            string_policy_reason(&p)
        ))),
        v => SuspendConfig::deserialize(v.clone())
            .map_err(|e| serde::de::Error::custom(with_expected_keys(e.to_string(), &v))),
    }
}

/// serde names the expected keys of an unknown one, except in a table with flattened
/// parameters (the suspend guard's): name them there too, from the policy's defaults.
fn with_expected_keys(msg: String, table: &toml::Value) -> String {
    let field = msg.trim_end();
    if !(field.starts_with("unknown field `") && field.ends_with('`')) {
        return msg;
    }
    let policy = table.get("policy").and_then(|p| p.as_str());
    let Some(info) = SuspendConfig::describe()
        .into_iter()
        .find(|p| Some(p.name) == policy)
    else {
        return msg;
    };
    let keys: Vec<String> = info.params.iter().map(|(k, _)| format!("`{k}`")).collect();
    match keys.len() {
        0 => format!("{field}, there are no fields"),
        1 => format!("{field}, expected {}", keys[0]),
        _ => format!("{field}, expected one of {}", keys.join(", ")),
    }
}

/// Keys that moved: the erase-suspend parameters went from flat `[scheduler]` keys into the
/// policy's own table (`erase_suspend = { policy = "…", … }`), and a cell mode's
/// `suspend_penalty_ns` split into `erase_suspend_penalty_ns` and
/// `program_suspend_penalty_ns`. An old key is refused with an error naming its file, line
/// and the key(s) to write instead.
fn refuse_moved_keys(text: &str, file: &str) -> Result<()> {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return Ok(()); // the parser's own error follows
    };
    if let Some(toml::Value::Table(t)) = doc.get("device").and_then(|d| d.get("timing")) {
        for mode in CellMode::ALL {
            if let Some(v) = t.get(mode.name()).and_then(|m| m.get("suspend_penalty_ns")) {
                let key = format!("device.timing.{}.suspend_penalty_ns", mode.name());
                let e = SimError::config(key, crate::flash::split_penalty_reason(v));
                return Err(at_key_line(e, text, file));
            }
        }
    }
    let Some(toml::Value::Table(s)) = doc.get("scheduler") else {
        return Ok(());
    };
    let policy = match s.get("erase_suspend") {
        Some(toml::Value::String(p)) => {
            let e = SimError::config("scheduler.erase_suspend", string_policy_reason(p));
            return Err(at_key_line(e, text, file));
        }
        Some(toml::Value::Table(t)) => t.get("policy").and_then(|p| p.as_str()),
        _ => None,
    };
    for (i, (old, _, _)) in MOVED_SUSPEND_KEYS.iter().enumerate() {
        if let Some(v) = s.get(*old) {
            let e = SimError::config(format!("scheduler.{old}"), moved_reason(i, v, policy));
            return Err(at_key_line(e, text, file));
        }
    }
    Ok(())
}

/// `e` with the file and line of the key it names, when it names one found in `text`.
pub fn at_key_line(e: SimError, text: &str, file: &str) -> SimError {
    let (key, reason) = match &e {
        SimError::Config { key, reason } => (key.clone(), reason.clone()),
        SimError::Workload(ssdlab_workload::WorkloadError::Config { key, reason }) => {
            (format!("workload.{key}"), reason.clone())
        }
        _ => return e,
    };
    match locate::key_line(text, &key) {
        Some(line) => SimError::ConfigFile {
            file: format!("{file}:{line}"),
            reason: format!("{key}: {reason}"),
        },
        None => SimError::ConfigFile {
            file: file.to_string(),
            reason: format!("{key}: {reason}"),
        },
    }
}

impl Config {}

/// Whether byte `at` of `text` lies on the `[workload]` header line (where the toml crate
/// points errors inside the internally tagged `[workload]` table).
fn on_workload_header(text: &str, at: usize) -> bool {
    let start = text[..at.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    text[start..].trim_start().starts_with("[workload]")
}

/// The `[workload]` table's error again, found by deserializing that table alone as its
/// `kind`'s struct, so it points at the offending key's line (`None` if that finds none).
fn workload_error_with_key_line(text: &str) -> Option<String> {
    use ssdlab_workload::{fio, synthetic, tpcc, trace};
    let lines: Vec<&str> = text.lines().collect();
    let header = lines.iter().position(|l| l.trim() == "[workload]")?;
    let end = (header + 1..lines.len())
        .find(|&i| {
            let l = lines[i].trim_start();
            l.starts_with('[') && !l.starts_with("[workload.") && !l.starts_with("[[workload.")
        })
        .unwrap_or(lines.len());
    // The same lines, with `kind` blanked (not a field of the variant structs), so that
    // line numbers stay those of the file.
    let mut kind = None;
    let mut sub = String::new();
    for (i, l) in lines.iter().enumerate() {
        let in_table = i >= header && i < end;
        let key = l.split('=').next().unwrap_or("").trim();
        if in_table && i > header && key == "kind" {
            kind = l
                .split_once('=')
                .map(|(_, v)| v.trim().trim_matches('"').to_string());
            sub.push('\n');
        } else if in_table {
            sub.push_str(l);
            sub.push('\n');
        } else {
            sub.push('\n');
        }
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct W<T> {
        #[allow(dead_code)]
        workload: T,
    }
    fn check<T: serde::de::DeserializeOwned>(sub: &str) -> Option<String> {
        toml::from_str::<W<T>>(sub).err().map(|e| e.to_string())
    }
    match kind.as_deref()? {
        "synthetic" => check::<synthetic::SyntheticConfig>(&sub),
        "fio" => check::<fio::FioWorkloadConfig>(&sub),
        "trace" => check::<trace::TraceWorkloadConfig>(&sub),
        "tpcc" => check::<tpcc::TpccConfig>(&sub),
        "ext4" => check::<ssdlab_workload::ext4::Ext4Config>(&sub),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::Config;
    use crate::base::CellMode;

    /// The flash timing model a device's `[device.timing]` builds (the model lives in the
    /// flash crate, which knows no configuration).
    #[test]
    fn erase_loop_table_steps() {
        let mut c: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        c.device.timing.tlc.erase_loops = vec![(0, 3), (100, 4), (1000, 6)];
        let t = c.device.timing_model();
        assert_eq!(t.erase_loops(CellMode::Tlc, 0), 3);
        assert_eq!(t.erase_loops(CellMode::Tlc, 99), 3);
        assert_eq!(t.erase_loops(CellMode::Tlc, 100), 4);
        assert_eq!(t.erase_loops(CellMode::Tlc, 5000), 6);
        assert_eq!(t.transfer_ns(4096), 5120);
        assert_eq!(t.transfer_ns(4097), 5122, "rounded up");
    }
}
