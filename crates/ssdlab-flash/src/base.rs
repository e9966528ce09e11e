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

/// A unit's integrity version: the sequence number of one unit write (the OOB's, with the
/// unit; 0 without integrity mode), unique over the device's life. 64 bits: at 10^6 unit writes a second they last over
/// half a million years, so "the newest version wins" never meets a wrap (32 bits wrapped
/// after 2^32 writes, ~12 h at 100k IOPS, and a recovery would then have taken stale
/// copies for new).
pub type Version = u64;

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

/// Most write lanes: host streams of their own per plane (the active zones of a zoned
/// device, the reclaim-unit handles of an FDP device). Lane 0 is the plain host stream.
pub const MAX_LANES: usize = 32;

/// A write frontier of a region: each stream has its own open block per plane, so data of
/// different origin (and lifetime) is not mixed in one block. Host pages (lane 0), GC
/// copies, wear-leveling migrations and copies from another region; with lanes, a host
/// stream and a GC stream per lane.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Stream(u8);

/// Write streams per region and plane.
pub const STREAMS: usize = 4 + 2 * (MAX_LANES - 1);

impl Stream {
    /// Host pages (lane 0).
    pub const HOST: Stream = Stream(0);
    /// GC copies (and retirement copies) of lane 0.
    pub const GC: Stream = Stream(1);
    /// Wear-leveling migrations (cold data).
    pub const WEAR: Stream = Stream(2);
    /// Copies relocated here from another region (e.g. a cache draining into data).
    pub const INBOUND: Stream = Stream(3);

    /// Host pages of `lane` (< [`MAX_LANES`]).
    #[inline]
    pub fn host(lane: u8) -> Stream {
        if lane == 0 {
            Stream::HOST
        } else {
            Stream(3 + lane)
        }
    }

    /// GC copies of blocks written by `lane`.
    #[inline]
    pub fn gc(lane: u8) -> Stream {
        if lane == 0 {
            Stream::GC
        } else {
            Stream(3 + MAX_LANES as u8 - 1 + lane)
        }
    }

    /// The lane a block opened by this stream belongs to (0 for wear and inbound).
    #[inline]
    pub fn lane(self) -> u8 {
        match self.0 {
            0..=3 => 0,
            s if s < 3 + MAX_LANES as u8 => s - 3,
            s => s - 3 - (MAX_LANES as u8 - 1),
        }
    }

    /// Index into a plane's open blocks.
    #[inline(always)]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The stream of open-block index `i`.
    pub fn from_index(i: usize) -> Stream {
        Stream(i as u8)
    }

    /// Whether the stream may take a plane's last GC-reserve blocks. Only the region's own
    /// relocation streams may: they are what frees space.
    #[inline]
    pub fn uses_reserve(self) -> bool {
        self == Stream::WEAR || self == Stream::GC || self.0 >= 3 + MAX_LANES as u8
    }
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            0 => f.write_str("Host"),
            1 => f.write_str("Gc"),
            2 => f.write_str("Wear"),
            3 => f.write_str("Inbound"),
            s if s < 3 + MAX_LANES as u8 => write!(f, "Host(lane {})", self.lane()),
            _ => write!(f, "Gc(lane {})", self.lane()),
        }
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
