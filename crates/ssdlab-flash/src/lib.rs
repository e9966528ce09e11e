//! Flash back end: per-block state in structure-of-arrays form, the per-slot out-of-band
//! area (which logical unit and version a slot holds, and whether it is still valid), the timing model, and the channel
//! buses of the timed mode. The flash layer stores what it is told; it makes no decisions.
//!
//! Beside it, the ground floor every higher layer shares: [`base`] (constants, `CellMode`,
//! `Stream`, step tables) and [`ids`] (the typed ids).

pub mod base;
pub mod ids;

mod blocks;
mod bus;
mod data;
mod oob;
pub mod reliability;
mod timing;

use crate::base::CellMode;
use crate::ids::{BlockId, JobId};
use ssdlab_engine::prefetch;

pub use blocks::{BlockState, BlockTable};
pub use bus::Channels;
pub use data::SlotData;
pub use oob::{Oob, OobWord};
pub use timing::{
    split_penalty_reason, ArrayTime, CellState, CellTiming, SplitKey, TimingModel, TimingTable,
};

/// Marker for "no unit" / "unmapped" in dense `u32` tables.
pub const NONE: u32 = u32::MAX;

/// Kind of a NAND array operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum OpKind {
    Read = 0,
    Program = 1,
    Erase = 2,
}

/// Why a NAND operation was issued (results break counts down by this).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Cause {
    Host = 0,
    Gc = 1,
    WearLeveling = 2,
    Mapping = 3,
    Migration = 4,
    /// Read reclaim: a block relocated for its reads since its erase (read disturb).
    Reclaim = 5,
    /// Retention refresh: a block relocated for its data's age.
    Refresh = 6,
}

impl Cause {
    pub const COUNT: usize = 7;
    pub const ALL: [Cause; 7] = [
        Cause::Host,
        Cause::Gc,
        Cause::WearLeveling,
        Cause::Mapping,
        Cause::Migration,
        Cause::Reclaim,
        Cause::Refresh,
    ];
    pub fn name(self) -> &'static str {
        [
            "host",
            "gc",
            "wear_leveling",
            "mapping",
            "migration",
            "reclaim",
            "refresh",
        ][self as usize]
    }
}

/// Who waits for a NAND operation: the FTL is told of every completion and routes it by
/// this typed owner (no shared integer tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Nobody (e.g. a program attempt that failed and was re-placed at once).
    None,
    /// A host read (or the read half of a read-modify-write) of request slot `req`.
    HostRead { req: u32 },
    /// The program of write-buffer page `token`.
    HostProgram { token: u32 },
    /// A relocation job (GC, wear leveling, migration, retirement) of the FTL.
    Job { job: JobId },
    /// A translation-page operation of the mapping layer for request `req` (or `NONE`).
    Mapping { req: u32 },
    /// The program of a page of trim records (durable trims), the `seq`-th (low 32 bits).
    TrimRecord { seq: u32 },
}

impl Owner {
    /// A translation operation that a host read's staged plan waits on.
    #[inline]
    pub fn host_read_path(self) -> bool {
        matches!(self, Owner::Mapping { req } if req != NONE)
    }
}

/// `NandOp::flags`: the operation fails (program: the page holds nothing; erase: the
/// block is retired). Drawn when the operation is issued (seeded).
pub const OP_FAILS: u8 = 1;
/// `NandOp::flags`: a program appending units to a page already partly programmed
/// (partial-page programs, `partial_programs_per_page`): the page was counted once, by the
/// program that opened it.
pub const OP_APPEND: u8 = 2;
/// `NandOp::flags` of a read: its retry ladder ended with the soft-decode step (its
/// `loops` retries include it; [`TimingModel::op_array`]).
pub const OP_SOFT_DECODE: u8 = 4;

/// One NAND operation as the FTL issues it. Small and `Copy`: it travels through the
/// scheduler's queues by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NandOp {
    pub kind: OpKind,
    pub cause: Cause,
    /// Cell mode of the block (selects the latencies).
    pub mode: CellMode,
    /// Bit set of `OP_*` flags.
    pub flags: u8,
    /// Stage of a staged plan (e.g. translation read = 0, data read = 1): the timed
    /// driver starts stage k + 1 of an owner when its stage-k operations have completed;
    /// the functional driver sums them.
    pub stage: u8,
    /// Erase: ISPE loops this erase takes (from the block's P/E cycles). Read: its read
    /// retries (drawn at issue from the reliability model; `OP_FAILS`: uncorrectable,
    /// `OP_SOFT_DECODE`: the last retry was the soft-decode step). Otherwise 0.
    pub loops: u16,
    pub block: BlockId,
    /// Page within the block (0 for erases).
    pub page: u32,
    /// Mapping units moved over the channel (reads: units requested; programs: the page).
    pub units: u32,
    pub owner: Owner,
}

impl NandOp {
    /// An operation on `block`; the FTL fills in the cell mode and erase loops when it issues it.
    #[inline]
    pub fn new(
        kind: OpKind,
        cause: Cause,
        block: BlockId,
        page: u32,
        units: u32,
        owner: Owner,
    ) -> NandOp {
        NandOp {
            kind,
            cause,
            mode: CellMode::Tlc,
            flags: 0,
            stage: 0,
            loops: 0,
            block,
            page,
            units,
            owner,
        }
    }

    #[inline]
    pub fn fails(&self) -> bool {
        self.flags & OP_FAILS != 0
    }
}
