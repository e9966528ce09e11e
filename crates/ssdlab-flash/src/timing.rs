use crate::base::CellMode;
use serde::{Deserialize, Serialize};

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
    /// Cost of suspending an erase, paid when it is suspended, before the first read (or
    /// program) can start (voltage recovery; Table 1 of the SSR paper: 100 µs).
    #[serde(default)]
    pub erase_suspend_penalty_ns: u64,
    /// Cost of suspending a program (`[scheduler] program_suspend`), paid when it is
    /// suspended, before the first read can start.
    #[serde(default)]
    pub program_suspend_penalty_ns: u64,
    /// Split into `erase_suspend_penalty_ns` and `program_suspend_penalty_ns`: refused.
    #[doc(hidden)]
    #[serde(
        default,
        skip_serializing,
        rename = "suspend_penalty_ns",
        deserialize_with = "split_penalty_key"
    )]
    pub moved_suspend_penalty_ns: SplitKey,
    /// Cost of resuming a suspended erase or program, paid before its remaining work
    /// continues (voltage re-ramp). Default 0: Table 1's penalty is charged whole at suspend.
    #[serde(default)]
    pub resume_penalty_ns: u64,
    /// Erase count at which a block is retired as bad.
    pub endurance_pe_cycles: u32,
}

/// A key that was split in two (`suspend_penalty_ns`); refused, its value never used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitKey;

/// Why `suspend_penalty_ns` (value `value`) is refused, and what to write instead.
pub fn split_penalty_reason(value: &dyn std::fmt::Display) -> String {
    format!("split into erase_suspend_penalty_ns (suspending an erase) and program_suspend_penalty_ns (suspending a program): write both, e.g. erase_suspend_penalty_ns = {value} and program_suspend_penalty_ns = {value} (docs/erase-suspend.md)")
}

/// Serde side of the refusal (text that does not come through `Config::from_toml_str`,
/// which names the file and line).
fn split_penalty_key<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SplitKey, D::Error> {
    let v = toml::Value::deserialize(d)?;
    Err(serde::de::Error::custom(format!(
        "suspend_penalty_ns: {}",
        split_penalty_reason(&v)
    )))
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
            erase_suspend_penalty_ns: 100_000,
            program_suspend_penalty_ns: 100_000,
            moved_suspend_penalty_ns: SplitKey,
            resume_penalty_ns: 0,
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

/// Per-cell-mode operation latencies, resolved from the config once.
#[derive(Clone, Debug)]
pub struct TimingModel {
    pub read_ns: [u64; 4],
    pub program_ns: [u64; 4],
    pub program_loops: [u32; 4],
    pub erase_loop_ns: [u64; 4],
    erase_loops: [Vec<(u32, u32)>; 4],
    pub erase_suspend_penalty_ns: [u64; 4],
    pub program_suspend_penalty_ns: [u64; 4],
    pub endurance_pe_cycles: [u32; 4],
    pub command_overhead_ns: u64,
    channel_rate_mb_per_s: u64,
    host_transfer_mb_per_s: u64,
}

impl TimingModel {
    /// The model of `timing` with `command_overhead_ns` per operation, a channel of
    /// `channel_rate_mb_per_s` and a host data path of `host_transfer_mb_per_s` (the
    /// `[device]` keys of the same names).
    pub fn new(
        timing: &TimingTable,
        command_overhead_ns: u64,
        channel_rate_mb_per_s: u64,
        host_transfer_mb_per_s: u64,
    ) -> TimingModel {
        let t = |m: CellMode| timing.get(m);
        let each = |f: &dyn Fn(CellMode) -> u64| CellMode::ALL.map(f);
        TimingModel {
            read_ns: each(&|m| t(m).read_ns),
            program_ns: each(&|m| t(m).program_ns),
            program_loops: CellMode::ALL.map(|m| t(m).program_loops),
            erase_loop_ns: each(&|m| t(m).erase_loop_ns),
            erase_loops: CellMode::ALL.map(|m| t(m).erase_loops.clone()),
            erase_suspend_penalty_ns: each(&|m| t(m).erase_suspend_penalty_ns),
            program_suspend_penalty_ns: each(&|m| t(m).program_suspend_penalty_ns),
            endurance_pe_cycles: CellMode::ALL.map(|m| t(m).endurance_pe_cycles),
            command_overhead_ns,
            channel_rate_mb_per_s,
            host_transfer_mb_per_s,
        }
    }

    /// Time to move `bytes` of a request's data between host and device without a
    /// modelled link (`device.host_transfer_mb_per_s`), rounded up.
    #[inline]
    pub fn host_transfer_ns(&self, bytes: u64) -> u64 {
        (bytes * 1000).div_ceil(self.host_transfer_mb_per_s.max(1))
    }

    /// The host data path's rate without a modelled link (MB/s).
    pub fn host_transfer_mb_per_s(&self) -> u64 {
        self.host_transfer_mb_per_s
    }

    /// Bus time to move `bytes` over a channel (1 MB/s = 1 byte/µs), rounded up.
    #[inline]
    pub fn transfer_ns(&self, bytes: u64) -> u64 {
        (bytes * 1000).div_ceil(self.channel_rate_mb_per_s)
    }

    /// ISPE loops of an erase on a block that has been erased `pe_cycles` times.
    #[inline]
    pub fn erase_loops(&self, mode: CellMode, pe_cycles: u32) -> u32 {
        let table = &self.erase_loops[mode.index()];
        let i = table.partition_point(|e| e.0 <= pe_cycles);
        table[i.saturating_sub(1)].1
    }

    /// Whole erase time (all loops, no suspension).
    #[inline]
    pub fn erase_ns(&self, mode: CellMode, pe_cycles: u32) -> u64 {
        self.erase_loop_ns[mode.index()] * self.erase_loops(mode, pe_cycles) as u64
    }
}
