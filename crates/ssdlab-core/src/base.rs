//! The ground floor: constants and small shared types every layer may use. It imports
//! nothing from the crate (the layering test, `tests/it/layers.rs`, keeps it so).

use serde::{Deserialize, Serialize};

/// Most mapping units one page may hold (page size / mapping unit).
pub const MAX_SLOTS_PER_PAGE: usize = 64;

/// Most planes per die a multi-plane operation can span.
pub const MAX_PLANES_PER_DIE: usize = 8;

/// Regions a device may have.
pub const MAX_REGIONS: usize = 8;

/// Most erase loops an erase may take (per-loop suspension counters are fixed arrays).
pub const MAX_ERASE_LOOPS: u32 = 64;

/// OOB tag of a translation page's slots (`TRANS_TAG | tpn`); logical units stay below it.
pub const TRANS_TAG: u32 = 1 << 31;

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
    /// Bits stored per cell.
    pub fn bits(self) -> u32 {
        self as u32 + 1
    }
}

/// A write frontier of a region: each stream has its own open block per plane, so data of
/// different origin (and lifetime) is not mixed in one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Stream {
    /// Host pages.
    Host = 0,
    /// GC copies (and retirement copies).
    Gc = 1,
    /// Wear-leveling migrations (cold data).
    Wear = 2,
    /// Copies relocated here from another region (e.g. a cache draining into data).
    Inbound = 3,
}

/// Write streams per region and plane.
pub const STREAMS: usize = 4;

impl Stream {
    pub const ALL: [Stream; STREAMS] = [Stream::Host, Stream::Gc, Stream::Wear, Stream::Inbound];
    /// Whether the stream may take a plane's last GC-reserve blocks. Only the region's own
    /// relocation streams may: they are what frees space.
    #[inline]
    pub fn uses_reserve(self) -> bool {
        matches!(self, Stream::Gc | Stream::Wear)
    }
}

/// Value of a step table [from, value] (first entry from 0) at `x`.
#[inline]
pub fn step_lookup(table: &[(u32, u32)], x: u32) -> u32 {
    let i = table.partition_point(|e| e.0 <= x);
    table[i.saturating_sub(1)].1
}

/// Why a step table [from, value] is malformed: its first entry must start at 0 and its
/// thresholds increase.
pub fn check_step_table(table: &[(u32, u32)]) -> Result<(), &'static str> {
    if table.first().map(|e| e.0) != Some(0) {
        return Err("the first entry must start at 0 P/E cycles");
    }
    if table.windows(2).any(|w| w[1].0 <= w[0].0) {
        return Err("P/E thresholds must increase");
    }
    Ok(())
}
