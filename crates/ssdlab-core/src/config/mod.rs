//! Run configuration: raw TOML structs (serde, units in every field name, unknown keys
//! rejected) → [`Config::validate`] → [`Derived`] parameters computed once.
//!
//! Every field is documented in `docs/config.md`; keep the two in step.

mod derived;
pub use derived::{Derived, Geometry};

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

/// NAND cell mode of a block.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CellMode {
    Slc,
    Mlc,
    #[default]
    Tlc,
    Qlc,
}

impl CellMode {
    pub const ALL: [CellMode; 4] = [CellMode::Slc, CellMode::Mlc, CellMode::Tlc, CellMode::Qlc];
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn name(self) -> &'static str {
        ["slc", "mlc", "tlc", "qlc"][self as usize]
    }
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

/// Latencies and wear of one cell mode.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CellTiming {
    /// Array read time tR.
    pub read_ns: u64,
    /// Array program time tPROG.
    pub program_ns: u64,
    /// ISPP program loops making up `program_ns` (program-suspend granularity).
    #[serde(default = "default_program_loops")]
    pub program_loops: u32,
    /// Duration of one ISPE erase loop (pulse + verify).
    pub erase_loop_ns: u64,
    /// Erase loops as a step table of [from_pe_cycles, loops], first entry from 0.
    pub erase_loops: Vec<(u32, u32)>,
    /// Cost of suspending an erase or program (voltage recovery + re-ramp on resume).
    #[serde(default)]
    pub suspend_penalty_ns: u64,
    /// Erase count at which a block is retired as bad.
    pub endurance_pe_cycles: u32,
}

fn default_program_loops() -> u32 {
    10
}

/// The cell modes a device may use; absent ones take the built-in defaults.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TimingTable {
    pub slc: CellTiming,
    pub mlc: CellTiming,
    pub tlc: CellTiming,
    pub qlc: CellTiming,
}

impl Default for TimingTable {
    fn default() -> Self {
        let t = |read_us: u64, prog_us: u64, loop_us: u64, loops: u32, endurance: u32| CellTiming {
            read_ns: read_us * 1000,
            program_ns: prog_us * 1000,
            program_loops: 10,
            erase_loop_ns: loop_us * 1000,
            erase_loops: vec![(0, loops)],
            suspend_penalty_ns: 100_000,
            endurance_pe_cycles: endurance,
        };
        TimingTable {
            slc: t(25, 200, 1_000, 2, 50_000),
            mlc: t(60, 800, 1_500, 1, 10_000),
            tlc: t(40, 660, 5_000, 5, 3_000),
            qlc: t(120, 2_000, 6_000, 5, 1_000),
        }
    }
}

impl TimingTable {
    pub fn get(&self, mode: CellMode) -> &CellTiming {
        match mode {
            CellMode::Slc => &self.slc,
            CellMode::Mlc => &self.mlc,
            CellMode::Tlc => &self.tlc,
            CellMode::Qlc => &self.qlc,
        }
    }
}

/// `[device]`: geometry, timing, interface and spare space.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    pub geometry: GeometryConfig,
    /// Cell mode every block starts in.
    #[serde(default)]
    pub cell_mode: CellMode,
    /// (physical − logical) / logical.
    pub over_provisioning_ratio: f64,
    /// Channel (bus) rate in MB/s (10^6 bytes per second).
    #[serde(default = "default_channel_rate")]
    pub channel_rate_mb_per_s: u64,
    /// Command and address cycles of each NAND operation, charged to the die.
    #[serde(default)]
    pub command_overhead_ns: u64,
    #[serde(default)]
    pub timing: TimingTable,
}

fn default_channel_rate() -> u64 {
    800
}

/// Garbage-collection victim policy.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum GcVictimPolicy {
    /// Fewest valid units (O(1) through buckets by valid count).
    #[default]
    Greedy,
    /// Max (1 − u) · age / (1 + u) (Kawaguchi et al. 1995 / Rosenblum LFS).
    CostBenefit,
    /// Oldest full block first.
    Fifo,
    /// A uniformly random full block with at least one invalid unit.
    Random,
}

/// How a plane hands out free blocks.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FreeBlockAllocation {
    /// First erased, first reused.
    #[default]
    Fifo,
    /// Lowest erase count first (spec 03).
    MinWear,
}

/// Wear-leveling policy (spec 03 adds the others).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WearLevelingPolicy {
    /// No wear leveling (spec 03's `greedy` baseline).
    #[default]
    None,
}

/// `[ftl]`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FtlConfig {
    /// Address mapping; `page` = full page-level table in DRAM.
    pub mapping: MappingKind,
    pub gc_victim: GcVictimPolicy,
    /// Background (preemptible) GC starts when a plane has fewer free blocks than this.
    pub gc_soft_free_blocks: u32,
    /// Free blocks per plane kept for GC: host writes may not open a block when only this
    /// many are left, and GC becomes urgent (served before host I/O on its die) below it.
    pub gc_hard_free_blocks: u32,
    pub free_block_allocation: FreeBlockAllocation,
    pub wear_leveling: WearLevelingPolicy,
    /// Order in which consecutive pages stripe over the parallel units, fastest first:
    /// a permutation of C (channel), W (chip/way), D (die), P (plane).
    pub stripe_order: String,
    /// DRAM write buffer size; must hold at least one page per plane of a die.
    pub write_buffer_bytes: u64,
    /// Time to move a request's data into or out of the DRAM buffer.
    pub buffer_access_ns: u64,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MappingKind {
    #[default]
    Page,
}

impl Default for FtlConfig {
    fn default() -> Self {
        FtlConfig {
            mapping: MappingKind::Page,
            gc_victim: GcVictimPolicy::Greedy,
            gc_soft_free_blocks: 3,
            gc_hard_free_blocks: 1,
            free_block_allocation: FreeBlockAllocation::Fifo,
            wear_leveling: WearLevelingPolicy::None,
            stripe_order: "CWDP".into(),
            write_buffer_bytes: 16 << 20,
            buffer_access_ns: 1_000,
        }
    }
}

/// Erase-suspend policy (spec 01 adds the others).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SuspendPolicyKind {
    /// Reads wait for a running erase or program.
    #[default]
    None,
}

/// `[scheduler]`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// Serve queued host reads before host writes and GC on a die.
    pub read_priority: bool,
    pub erase_suspend: SuspendPolicyKind,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig { read_priority: true, erase_suspend: SuspendPolicyKind::None }
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
        toml::from_str(text).map_err(|e| SimError::ConfigFile { file: file.to_string(), reason: e.to_string() })
    }

    pub fn from_file(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path).map_err(|e| SimError::Io { path: path.display().to_string(), source: e })?;
        Config::from_toml_str(&text, &path.display().to_string())
    }

    pub fn to_toml_string(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# could not serialise config: {e}\n"))
    }

    /// Validate every value and compute the derived parameters.
    pub fn validate(&self) -> Result<Derived> {
        Derived::new(self)
    }
}
