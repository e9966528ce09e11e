//! Logical-to-physical mapping (spec 04). The FTL keeps the whole page-level table as
//! the ground truth of where each unit lives ([`MappingTable`]); a mapping *policy* models
//! which part of it the controller's DRAM holds and what NAND traffic the rest costs:
//!
//! * `page-map`: the whole table in DRAM; every lookup is free;
//! * `dftl`: a cached mapping table (CMT) of whole translation pages or of single entries,
//!   one LRU; a miss may write a dirty victim back on the request's path;
//! * `dftl-partitioned`: clean and dirty regions of translation pages; a read miss evicts
//!   only clean pages, so no host read ever waits on a program;
//! * `dftl-partitioned-log`: clean pages plus a log of dirty entries per translation page,
//!   merged into flash greedily (the page with the most entries, one batch update).
//!
//! A policy answers each lookup with a [`TransOp`] plan (write back, load, merge); the
//! FTL carries the plan out on translation pages in the translation region
//! (`ftl/translation.rs`). Drivers never read the table.
//!
//! A new mapping is one file here (a `Params` struct and a type implementing
//! [`MappingPolicy`]) plus one registration line below.

use crate::ids::{Lpn, SlotId};

pub mod cmt;

super::policy_registry! {
    $
    /// `[ftl.mapping]`: the mapping scheme.
    config MappingConfig default PageMap;
    /// The mapping policy of the device.
    runtime Mapping: MappingPolicy(MappingShape);
    params MappingParams;
    /// The whole page-level table in DRAM; every lookup is free.
    "page-map" => PageMap(page::PageMap),
    /// Demand-based FTL: an LRU cache of translation pages or entries (Gupta et al. 2009).
    "dftl" => Dftl(dftl::Dftl),
    /// Clean and dirty regions of cached pages: no host read waits on a program.
    "dftl-partitioned" => Partitioned(dftl_partitioned::Partitioned),
    /// Clean pages plus a log of dirty entries merged greedily into flash.
    "dftl-partitioned-log" => PartitionedLog(dftl_partitioned_log::PartitionedLog),
}

/// What a mapping policy's parameters tell the rest of the device (config validation and
/// its memory model).
pub trait MappingParams: super::PolicyParams {
    /// Bytes of one entry in a translation page; `None`: the table lives in DRAM (no
    /// translation pages, no translation region).
    fn entry_bytes(&self) -> Option<u32> {
        None
    }
    /// What the simulator keeps per logical unit to model the cache (beyond 24 B per
    /// translation page), for the memory estimate.
    fn model_bytes_per_unit(&self) -> f64 {
        0.0
    }
    /// Check the parameters against the device; `Err((key, why))` names the bad key.
    fn check_device(&self, _shape: &MappingShape) -> Result<(), (&'static str, String)> {
        Ok(())
    }
}

/// What a mapping is built for.
#[derive(Clone, Copy, Debug)]
pub struct MappingShape {
    pub logical_units: u32,
    /// Bytes of a translation page (one flash page).
    pub page_bytes: u32,
}

/// One step of translation work a lookup needs, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransOp {
    /// Program translation page `tpn` from DRAM (a dirty cached page: one program).
    WriteBack(u32),
    /// Read translation page `tpn` into DRAM.
    Load(u32),
    /// Batch update of `tpn` whose page is not in DRAM: read it, merge, program it.
    Merge(u32),
}

/// A mapping policy: what the controller's DRAM holds of the table, and what a lookup or
/// an update costs in translation-page operations (appended to `plan`, in order).
pub trait MappingPolicy: Sized {
    type Params;
    fn new(params: &Self::Params, shape: &MappingShape) -> Self;
    /// Entries per translation page (0: the table lives in DRAM, no translation pages).
    fn entries_per_tpage(&self) -> u32;
    /// A host read needs the mapping of `lpn`; true when DRAM holds it (a CMT hit).
    fn on_read(&mut self, lpn: Lpn, plan: &mut Vec<TransOp>) -> bool;
    /// The host wrote (or trimmed) `lpn`: its entry changes; true when DRAM held it.
    fn on_write(&mut self, lpn: Lpn, plan: &mut Vec<TransOp>) -> bool;
    /// Background work moved the units `lpns` (all of translation page `tpn`, sorted).
    fn on_relocated(&mut self, tpn: u32, lpns: &[u32], plan: &mut Vec<TransOp>);
    /// DRAM the mapping keeps (bytes).
    fn dram_bytes(&self) -> u64;
    /// Whether host reads are promised at most one translation read per data page and no
    /// program on their path (the partitioned variants; checked in integrity mode).
    fn bounded_reads(&self) -> bool;
}

impl Mapping {
    #[inline]
    pub fn entries_per_tpage(&self) -> u32 {
        dispatch!(self, p => p.entries_per_tpage())
    }

    #[inline]
    pub fn on_read(&mut self, lpn: Lpn, plan: &mut Vec<TransOp>) -> bool {
        dispatch!(self, p => p.on_read(lpn, plan))
    }

    #[inline]
    pub fn on_write(&mut self, lpn: Lpn, plan: &mut Vec<TransOp>) -> bool {
        dispatch!(self, p => p.on_write(lpn, plan))
    }

    pub fn on_relocated(&mut self, tpn: u32, lpns: &[u32], plan: &mut Vec<TransOp>) {
        dispatch!(self, p => p.on_relocated(tpn, lpns, plan))
    }

    pub fn dram_bytes(&self) -> u64 {
        dispatch!(self, p => p.dram_bytes())
    }

    pub fn bounded_reads(&self) -> bool {
        dispatch!(self, p => p.bounded_reads())
    }

    /// Whether the mapping lives in translation pages on flash.
    pub fn is_demand(&self) -> bool {
        self.entries_per_tpage() > 0
    }
}

impl MappingConfig {
    /// Whether the mapping lives in translation pages on flash (a demand-based mapping:
    /// its params have an `entry_bytes`), not wholly in DRAM.
    pub fn is_demand(&self) -> bool {
        self.params().entry_bytes().is_some()
    }

    /// Check the parameters against the device; `Err((key, why))` names the bad key
    /// (relative to `[ftl.mapping]`).
    pub fn check_device(&self, shape: &MappingShape) -> Result<(), (&'static str, String)> {
        self.check()?;
        self.params().check_device(shape)
    }

    /// Entries per translation page (0 when the table lives in DRAM).
    pub fn entries_per_tpage(&self, page_bytes: u32) -> u32 {
        match self.params().entry_bytes() {
            None => 0,
            Some(e) => page_bytes / e.max(1),
        }
    }

    /// What the simulator keeps to model the cached mapping of `logical_units` units in
    /// `tpages` translation pages (bytes; 0 when the table lives in DRAM).
    pub fn model_bytes(&self, logical_units: u32, tpages: u32) -> u64 {
        if self.params().entry_bytes().is_none() {
            return 0;
        }
        tpages as u64 * 24 + (logical_units as f64 * self.params().model_bytes_per_unit()) as u64
    }
}

/// The ground truth: one slot id per mapping unit (`SlotId::NONE` when unmapped).
///
/// Entries are [`MapEntry`]s (a slot stored as its complement): the table starts as
/// zeroed memory ([`large_zeroed`](crate::prefetch::large_zeroed)) that reads as all
/// unmapped, so an empty device's table costs nothing until units are written.
pub struct MappingTable {
    l2p: Vec<MapEntry>,
}

/// One entry of [`MappingTable`]: a slot stored as its bitwise complement, so that zero
/// bits are [`SlotId::NONE`].
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapEntry(u32);

impl MapEntry {
    /// The slot this entry names (`SlotId::NONE` when unmapped).
    #[inline(always)]
    pub const fn get(self) -> SlotId {
        SlotId(!self.0)
    }

    /// Name `slot` (or `SlotId::NONE`).
    #[inline(always)]
    pub fn set(&mut self, slot: SlotId) {
        self.0 = !slot.0;
    }
}

// SAFETY: a `u32`; zero bits are the entry of `SlotId::NONE`.
unsafe impl crate::prefetch::Zeroable for MapEntry {}

impl Clone for MappingTable {
    fn clone(&self) -> Self {
        MappingTable {
            l2p: crate::prefetch::large_copy(&self.l2p),
        }
    }
}

impl MappingTable {
    /// Bytes of memory per logical unit.
    pub fn bytes_per_unit() -> u64 {
        crate::prefetch::elem_bytes(&MappingTable::new(0).l2p)
    }

    /// Every unit unmapped.
    pub fn new(logical_units: u32) -> MappingTable {
        MappingTable {
            l2p: crate::prefetch::large_zeroed(logical_units as usize),
        }
    }

    /// Slot holding `lpn`, or `SlotId::NONE` when unmapped.
    #[inline]
    pub fn lookup(&self, lpn: Lpn) -> SlotId {
        self.l2p[lpn.idx()].get()
    }

    /// Point `lpn` at `slot` (or `SlotId::NONE`); returns the previous slot.
    #[inline]
    pub fn update(&mut self, lpn: Lpn, slot: SlotId) -> SlotId {
        let e = &mut self.l2p[lpn.idx()];
        let old = e.get();
        e.set(slot);
        old
    }

    /// The table, entry by unit (index: `Lpn::idx`).
    #[inline]
    pub fn slots(&self) -> &[MapEntry] {
        &self.l2p
    }

    /// The table itself, entry by unit (bulk re-mapping of relocated units).
    #[inline]
    pub fn slots_mut(&mut self) -> &mut [MapEntry] {
        &mut self.l2p
    }

    /// Units currently mapped (a scan; tests and summaries).
    pub fn mapped_units(&self) -> u64 {
        self.l2p.iter().filter(|e| !e.get().is_none()).count() as u64
    }
}
