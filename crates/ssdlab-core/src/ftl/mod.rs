//! Flash translation layer: mapping, block allocation, garbage collection and wear leveling.
//!
//! The FTL makes every decision and keeps the logical state (which slot holds which unit);
//! it never reads a clock. Each NAND operation it decides on is handed to a [`NandSink`]:
//! the functional mode's sink adds the operation's latency to one serial clock, the timed
//! mode's sink queues it on its die. State changes are applied when the operation is
//! issued, except that an erased block rejoins its free pool only when the sink reports
//! the erase finished ([`Ftl::erase_done`]); that is what makes GC back-pressure host
//! writes in the timed mode.

pub mod alloc;
pub mod gc;
pub mod mapping;
pub mod wear;

use crate::config::{Config, Derived, Geometry};
use crate::error::{Result, SimError};
use crate::flash::{BlockState, BlockTable, Cause, NandOp, Oob, OpKind, TimingModel, NONE};
use crate::integrity::{Found, Integrity};
use crate::MAX_SLOTS_PER_PAGE;
use alloc::{Allocator, Stream};
use gc::VictimIndex;
use mapping::PageMap;
use ssdlab_workload::rng::{stream, SimRng};
use wear::{WearAction, WearLeveler};

/// Receiver of the NAND operations the FTL issues.
pub trait NandSink {
    /// True when erases finish later (timed mode): the sink calls [`Ftl::erase_done`].
    const DEFERRED_ERASE: bool;
    fn issue(&mut self, op: NandOp);
}

/// Operation counts by kind and cause, counted when issued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NandCounts {
    pub ops: [[u64; crate::flash::Cause::COUNT]; 3],
}

impl NandCounts {
    pub fn get(&self, kind: OpKind, cause: Cause) -> u64 {
        self.ops[kind as usize][cause as usize]
    }
    pub fn total(&self, kind: OpKind) -> u64 {
        self.ops[kind as usize].iter().sum()
    }
    pub fn since(&self, earlier: &NandCounts) -> NandCounts {
        let mut d = *self;
        for k in 0..3 {
            for c in 0..Cause::COUNT {
                d.ops[k][c] -= earlier.ops[k][c];
            }
        }
        d
    }
}

/// What a host read of a run of units needed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOutcome {
    pub nand_reads: u32,
    pub buffer_hits: u32,
    pub unmapped: u32,
}

/// FTL event counters (monotone; phases are measured as differences).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FtlCounters {
    pub nand: NandCounts,
    /// Units written by the host into pages (after buffer merging).
    pub host_units_programmed: u64,
    /// Units relocated by GC.
    pub gc_copied_units: u64,
    /// Victims collected.
    pub gc_invocations: u64,
    /// Empty slots programmed because a page was flushed before it was full.
    pub padding_units: u64,
    pub trimmed_units: u64,
    pub blocks_retired: u64,
}

/// The FTL state of one device.
#[derive(Clone)]
pub struct Ftl {
    pub geo: Geometry,
    pub timing: TimingModel,
    pub map: PageMap,
    pub blocks: BlockTable,
    pub oob: Oob,
    pub alloc: Allocator,
    pub victims: VictimIndex,
    pub wear: WearLeveler,
    pub integrity: Option<Integrity>,
    pub counters: FtlCounters,
    /// Background GC threshold (free blocks per plane).
    pub gc_soft_free_blocks: u32,
    /// Urgent GC threshold.
    pub gc_hard_free_blocks: u32,
    /// Pages programmed so far: the age clock of cost-benefit GC (mode-independent).
    program_seq: u64,
    rng: SimRng,
    logical_units: u32,
    /// Valid units held by each plane.
    plane_valid_units: Vec<u64>,
    /// Host writes skip a plane holding more than this many valid units (its fair share
    /// of the logical space plus one block), so no plane fills up with data that is never
    /// invalidated while the others keep the spare space.
    plane_valid_cap_units: u64,
    /// Planes whose GC victim's erase is still pending (timed mode).
    gc_in_progress: Vec<bool>,
}

impl Ftl {
    pub fn new(cfg: &Config, d: &Derived) -> Ftl {
        let g = d.geometry;
        let mut blocks = BlockTable::new(g.blocks, cfg.device.cell_mode);
        let mut alloc = Allocator::new(
            cfg.ftl.free_block_allocation,
            g.planes,
            d.stripe_planes.clone(),
            cfg.ftl.gc_hard_free_blocks,
        );
        for b in 0..g.blocks {
            blocks.state[b as usize] = BlockState::Free;
            alloc.planes[g.plane_of_block(b) as usize].free.push(b, 0);
        }
        Ftl {
            geo: g,
            timing: TimingModel::new(cfg),
            map: PageMap::new(d.logical_units),
            blocks,
            oob: Oob::new(g.slots, cfg.integrity),
            alloc,
            victims: VictimIndex::new(cfg.ftl.gc_victim, g.planes, g.blocks, g.units_per_block),
            wear: WearLeveler::new(cfg.ftl.wear_leveling),
            integrity: cfg
                .integrity
                .then(|| Integrity::new(d.logical_units, g.unit_bytes)),
            counters: FtlCounters::default(),
            gc_soft_free_blocks: cfg.ftl.gc_soft_free_blocks,
            gc_hard_free_blocks: cfg.ftl.gc_hard_free_blocks,
            program_seq: 0,
            rng: stream(cfg.seed, 0x6763),
            logical_units: d.logical_units,
            plane_valid_units: vec![0; g.planes as usize],
            plane_valid_cap_units: d.logical_units as u64 / g.planes as u64
                + g.units_per_block as u64,
            gc_in_progress: vec![false; g.planes as usize],
        }
    }

    pub fn logical_units(&self) -> u32 {
        self.logical_units
    }

    /// Count `op`, fill in its block's cell mode and erase loops, and hand it to `sink`.
    #[inline]
    fn issue<S: NandSink>(&mut self, sink: &mut S, mut op: NandOp) {
        self.counters.nand.ops[op.kind as usize][op.cause as usize] += 1;
        let b = op.block as usize;
        op.mode = self.blocks.cell_mode[b];
        if op.kind == OpKind::Erase {
            op.loops = self.timing.erase_loops(op.mode, self.blocks.erase_count[b]) as u16;
        }
        sink.issue(op);
    }

    /// Mark `slot` invalid (its unit was overwritten, trimmed or moved).
    #[inline]
    fn invalidate(&mut self, slot: u32) {
        self.oob.lpn[slot as usize] = NONE;
        let b = self.geo.block_of_slot(slot);
        let v = &mut self.blocks.valid_units[b as usize];
        *v -= 1;
        let v = *v;
        let plane = self.geo.plane_of_block(b);
        self.plane_valid_units[plane as usize] -= 1;
        if self.blocks.state[b as usize] == BlockState::Full {
            self.victims.on_invalidate(plane, b, v);
        }
    }

    /// Next free page of `plane`'s `stream` frontier, opening a block when needed.
    /// Host writes may not take the plane's last `gc_hard_free_blocks` free blocks.
    #[inline]
    fn take_page(&mut self, plane: u32, stream: Stream) -> Option<(u32, u32)> {
        let pa = &mut self.alloc.planes[plane as usize];
        let mut b = pa.open[stream as usize];
        if b == NONE {
            let reserve = if stream == Stream::Host {
                self.alloc.host_reserve_blocks
            } else {
                0
            };
            if pa.free.len() <= reserve {
                return None;
            }
            b = pa.free.pop()?;
            pa.open[stream as usize] = b;
            self.blocks.state[b as usize] = BlockState::Open;
            self.blocks.next_page[b as usize] = 0;
        }
        let page = self.blocks.next_page[b as usize];
        self.blocks.next_page[b as usize] = page + 1;
        Some((b, page))
    }

    /// Close `block` if its last page was just written.
    #[inline]
    fn after_page(&mut self, plane: u32, stream: Stream, block: u32) {
        self.program_seq += 1;
        if self.blocks.next_page[block as usize] == self.geo.pages_per_block {
            self.alloc.planes[plane as usize].open[stream as usize] = NONE;
            self.blocks.state[block as usize] = BlockState::Full;
            self.blocks.closed_seq[block as usize] = self.program_seq;
            self.victims
                .on_full(plane, block, self.blocks.valid_units[block as usize]);
        }
    }

    /// Store `lpns` (with their integrity `versions`, empty when off) in the slots of `page`.
    #[inline]
    fn fill_page(&mut self, block: u32, page: u32, lpns: &[u32], versions: &[u32]) {
        let first = self.geo.first_slot_of_block(block) + page * self.geo.slots_per_page;
        for (i, &lpn) in lpns.iter().enumerate() {
            let slot = first + i as u32;
            let old = self.map.update(lpn, slot);
            if old != NONE {
                self.invalidate(old);
            }
            self.oob.lpn[slot as usize] = lpn;
            if let Some(&v) = versions.get(i) {
                self.oob.version[slot as usize] = v;
                if let Some(check) = self.integrity.as_mut() {
                    check.on_place(lpn, old, slot, v);
                }
            }
        }
        self.blocks.valid_units[block as usize] += lpns.len() as u32;
        self.plane_valid_units[self.geo.plane_of_block(block) as usize] += lpns.len() as u64;
        self.counters.padding_units += (self.geo.slots_per_page as usize - lpns.len()) as u64;
    }

    /// Program one host page holding `lpns` (at most a page's worth; fewer = padded) on the
    /// next plane in stripe order that can take it; `tag` travels with the program. Returns
    /// the plane, or `None` when no plane has a free page outside its GC reserve (the caller
    /// waits for GC). Planes that are collecting or hold more than their share of valid
    /// data are used only when no other plane can take the page; planes for which `accept`
    /// says no (the timed mode's per-die limit of queued host programs) are never used.
    pub fn write_host_page<S: NandSink, A: Fn(u32) -> bool>(
        &mut self,
        lpns: &[u32],
        versions: &[u32],
        tag: u32,
        sink: &mut S,
        accept: A,
    ) -> Option<u32> {
        debug_assert!(!lpns.is_empty() && lpns.len() <= self.geo.slots_per_page as usize);
        // First pass: planes not collecting and within their share of valid data; second:
        // any plane with room.
        for pass in 0..2 {
            for _ in 0..self.alloc.stripe_len() {
                let plane = self.alloc.next_stripe_plane();
                if !accept(plane) {
                    continue;
                }
                if pass == 0
                    && (self.gc_in_progress[plane as usize]
                        || self.plane_valid_units[plane as usize] + lpns.len() as u64
                            > self.plane_valid_cap_units)
                {
                    continue;
                }
                if let Some(placed) = self.place_host_page(plane, lpns, versions, tag, sink) {
                    return Some(placed);
                }
            }
        }
        None
    }

    #[inline]
    fn place_host_page<S: NandSink>(
        &mut self,
        plane: u32,
        lpns: &[u32],
        versions: &[u32],
        tag: u32,
        sink: &mut S,
    ) -> Option<u32> {
        let (block, page) = self.take_page(plane, Stream::Host)?;
        self.fill_page(block, page, lpns, versions);
        self.counters.host_units_programmed += lpns.len() as u64;
        self.issue(
            sink,
            NandOp::new(
                OpKind::Program,
                Cause::Host,
                block,
                page,
                lpns.len() as u32,
                tag,
            ),
        );
        self.after_page(plane, Stream::Host, block);
        Some(plane)
    }

    /// Whether `plane` is below the background GC threshold.
    #[inline]
    pub fn wants_gc(&self, plane: u32) -> bool {
        self.alloc.free_blocks(plane) < self.gc_soft_free_blocks
    }

    /// Whether `plane` is down to its GC reserve (host writes can no longer open a block
    /// there) and GC has work.
    #[inline]
    pub fn gc_pressing(&self, plane: u32) -> bool {
        self.alloc.free_blocks(plane) <= self.gc_hard_free_blocks
    }

    /// Whether `plane` is below the urgent GC threshold. Host writes stop opening blocks on
    /// a plane at the threshold, so only GC's own frontier can take it below: GC has eaten
    /// into its reserve and must not wait behind host I/O any more.
    #[inline]
    pub fn gc_urgent(&self, plane: u32) -> bool {
        self.alloc.free_blocks(plane) < self.gc_hard_free_blocks
    }

    /// Collect one victim of `plane`: read its valid units page by page, program them into
    /// the plane's GC frontier, erase it. Only blocks with at least a page's worth of
    /// invalid units qualify, so every collection frees space even with the last partial
    /// page padded. Returns `Ok(false)` when no full block of the plane qualifies.
    pub fn collect<S: NandSink>(&mut self, plane: u32, cause: Cause, sink: &mut S) -> Result<bool> {
        let max_valid = self.geo.units_per_block - self.geo.slots_per_page;
        let victim = match self.victims.take_victim(
            plane,
            &self.blocks,
            self.geo.units_per_block,
            max_valid,
            self.program_seq,
            &mut self.rng,
        ) {
            Some(v) => v,
            None => return Ok(false),
        };
        self.relocate_and_erase(plane, victim, cause, sink)?;
        self.counters.gc_invocations += 1;
        self.gc_in_progress[plane as usize] = S::DEFERRED_ERASE;
        Ok(true)
    }

    /// Whether `plane` has collected a victim whose erase has not finished yet.
    #[inline]
    pub fn gc_in_progress(&self, plane: u32) -> bool {
        self.gc_in_progress[plane as usize]
    }

    /// Move every valid unit of `victim` (already removed from the victim index) to the
    /// plane's GC frontier and erase it.
    fn relocate_and_erase<S: NandSink>(
        &mut self,
        plane: u32,
        victim: u32,
        cause: Cause,
        sink: &mut S,
    ) -> Result<()> {
        self.blocks.state[victim as usize] = BlockState::Erasing;
        let spp = self.geo.slots_per_page as usize;
        let integrity = self.integrity.is_some();
        let mut pack = [0u32; MAX_SLOTS_PER_PAGE];
        let mut vers = [0u32; MAX_SLOTS_PER_PAGE];
        let mut n = 0usize;
        let base = self.geo.first_slot_of_block(victim) as usize;
        for page in 0..self.geo.pages_per_block {
            let first = base + page as usize * spp;
            let valid = self.oob.lpn[first..first + spp]
                .iter()
                .filter(|&&l| l != NONE)
                .count() as u32;
            if valid == 0 {
                continue;
            }
            self.issue(
                sink,
                NandOp::new(OpKind::Read, cause, victim, page, valid, NONE),
            );
            for s in first..first + spp {
                let lpn = self.oob.lpn[s];
                if lpn == NONE {
                    continue;
                }
                pack[n] = lpn;
                if integrity {
                    vers[n] = self.oob.version[s];
                }
                n += 1;
                if n == spp {
                    self.program_copy(
                        plane,
                        &pack[..n],
                        if integrity { &vers[..n] } else { &[] },
                        cause,
                        sink,
                    )?;
                    n = 0;
                }
            }
        }
        if n > 0 {
            self.program_copy(
                plane,
                &pack[..n],
                if integrity { &vers[..n] } else { &[] },
                cause,
                sink,
            )?;
        }
        debug_assert_eq!(self.blocks.valid_units[victim as usize], 0);
        self.issue(sink, NandOp::new(OpKind::Erase, cause, victim, 0, 0, NONE));
        if !S::DEFERRED_ERASE {
            self.erase_done(victim, sink)?;
        }
        Ok(())
    }

    fn program_copy<S: NandSink>(
        &mut self,
        plane: u32,
        lpns: &[u32],
        versions: &[u32],
        cause: Cause,
        sink: &mut S,
    ) -> Result<()> {
        let (block, page) =
            self.take_page(plane, Stream::Gc).ok_or_else(|| {
                SimError::DeviceFull(format!(
                "plane {plane} has no free block for GC copies ({} blocks retired as bad so far{})",
                self.counters.blocks_retired,
                if self.counters.blocks_retired > 0 { ": the device is worn out" } else { "" }
            ))
            })?;
        self.fill_page(block, page, lpns, versions);
        self.counters.gc_copied_units += lpns.len() as u64;
        self.issue(
            sink,
            NandOp::new(OpKind::Program, cause, block, page, lpns.len() as u32, NONE),
        );
        self.after_page(plane, Stream::Gc, block);
        Ok(())
    }

    /// The erase of `block` has finished: count the wear, retire or free the block, and let
    /// the wear leveler react.
    pub fn erase_done<S: NandSink>(&mut self, block: u32, sink: &mut S) -> Result<()> {
        let b = block as usize;
        debug_assert_eq!(self.blocks.state[b], BlockState::Erasing);
        self.blocks.erase_count[b] += 1;
        self.blocks.valid_units[b] = 0;
        self.blocks.next_page[b] = 0;
        let plane = self.geo.plane_of_block(block);
        self.gc_in_progress[plane as usize] = false;
        let endurance = self.timing.endurance_pe_cycles[self.blocks.cell_mode[b].index()];
        if self.blocks.erase_count[b] >= endurance {
            self.blocks.state[b] = BlockState::Bad;
            self.counters.blocks_retired += 1;
        } else {
            self.blocks.state[b] = BlockState::Free;
            self.alloc.planes[plane as usize]
                .free
                .push(block, self.blocks.erase_count[b]);
        }
        match self.wear.after_erase(block) {
            WearAction::Idle => {}
            WearAction::Migrate { cold_block } => {
                if self.blocks.state[cold_block as usize] == BlockState::Full {
                    self.victims.remove(
                        self.geo.plane_of_block(cold_block),
                        cold_block,
                        &self.blocks,
                    );
                    self.relocate_and_erase(plane, cold_block, Cause::WearLeveling, sink)?;
                }
            }
        }
        Ok(())
    }

    /// Read the units `lpns` for the host: units that `buffered` finds (with their version)
    /// need no NAND access; the rest cost one NAND read per distinct physical page, tagged
    /// with `tag`. In integrity mode every unit is checked against its last version.
    pub fn read_units<S: NandSink, B: Fn(u32) -> Option<u32>>(
        &mut self,
        lpns: std::ops::Range<u32>,
        buffered: B,
        tag: u32,
        sink: &mut S,
    ) -> Result<ReadOutcome> {
        let spp = self.geo.slots_per_page;
        let mut out = ReadOutcome::default();
        let (mut cur_page, mut cur_units) = (u64::MAX, 0u32);
        for lpn in lpns {
            if let Some(v) = buffered(lpn) {
                out.buffer_hits += 1;
                self.check(lpn, Found::Buffer(v))?;
                continue;
            }
            let slot = self.map.lookup(lpn);
            if slot == NONE {
                out.unmapped += 1;
                self.check(lpn, Found::Unmapped)?;
                continue;
            }
            if self.integrity.is_some() {
                let version = if self.oob.lpn[slot as usize] == lpn {
                    self.oob.version[slot as usize]
                } else {
                    0
                };
                self.check(lpn, Found::Flash { slot, version })?;
            }
            let page_id = (slot / spp) as u64;
            if page_id != cur_page {
                self.issue_host_read(sink, cur_page, cur_units, tag, &mut out);
                cur_page = page_id;
                cur_units = 0;
            }
            cur_units += 1;
        }
        self.issue_host_read(sink, cur_page, cur_units, tag, &mut out);
        Ok(out)
    }

    /// One NAND read of `units` units of global page `page_id` for a host request.
    #[inline]
    fn issue_host_read<S: NandSink>(
        &mut self,
        sink: &mut S,
        page_id: u64,
        units: u32,
        tag: u32,
        out: &mut ReadOutcome,
    ) {
        if units == 0 {
            return;
        }
        let ppb = self.geo.pages_per_block as u64;
        let (block, page) = ((page_id / ppb) as u32, (page_id % ppb) as u32);
        self.issue(
            sink,
            NandOp::new(OpKind::Read, Cause::Host, block, page, units, tag),
        );
        out.nand_reads += 1;
    }

    #[inline]
    fn check(&mut self, lpn: u32, found: Found) -> Result<()> {
        match self.integrity.as_mut() {
            Some(i) => i.check_read(lpn, found).map_err(SimError::Integrity),
            None => Ok(()),
        }
    }

    /// A new version of `lpn` from the host (0 when integrity mode is off).
    #[inline]
    pub fn new_version(&mut self, lpn: u32) -> u32 {
        match self.integrity.as_mut() {
            Some(i) => i.on_write(lpn),
            None => 0,
        }
    }

    /// Deallocate `lpn`.
    pub fn trim(&mut self, lpn: u32) {
        if let Some(i) = self.integrity.as_mut() {
            i.on_trim(lpn);
        }
        let old = self.map.update(lpn, NONE);
        if old != NONE {
            self.invalidate(old);
            self.counters.trimmed_units += 1;
        }
    }

    /// Version stored on flash for `lpn` (integrity mode), `None` when unmapped.
    pub fn flash_version(&self, lpn: u32) -> Option<u32> {
        let slot = self.map.lookup(lpn);
        (slot != NONE).then(|| self.oob.version.get(slot as usize).copied().unwrap_or(0))
    }

    /// Total free blocks over all planes.
    pub fn free_blocks_total(&self) -> u64 {
        (0..self.geo.planes)
            .map(|p| self.alloc.free_blocks(p) as u64)
            .sum()
    }

    /// Check the FTL's internal consistency (tests and debug runs): valid counts match the
    /// out-of-band area, the map and the OOB agree, pool sizes add up.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let g = &self.geo;
        let mut valid = vec![0u32; g.blocks as usize];
        for (slot, &lpn) in self.oob.lpn.iter().enumerate() {
            if lpn != NONE {
                if self.map.lookup(lpn) != slot as u32 {
                    return Err(format!(
                        "slot {slot} claims unit {lpn}, which maps to {}",
                        self.map.lookup(lpn)
                    ));
                }
                valid[g.block_of_slot(slot as u32) as usize] += 1;
            }
        }
        for (b, (&counted, &recorded)) in valid.iter().zip(&self.blocks.valid_units).enumerate() {
            if counted != recorded {
                return Err(format!(
                    "block {b}: valid count {recorded} but {counted} valid slots"
                ));
            }
        }
        for lpn in 0..self.logical_units {
            let s = self.map.lookup(lpn);
            if s != NONE && self.oob.lpn[s as usize] != lpn {
                return Err(format!(
                    "unit {lpn} maps to slot {s} holding {}",
                    self.oob.lpn[s as usize]
                ));
            }
        }
        let free: u64 = self.free_blocks_total();
        let in_state = self
            .blocks
            .state
            .iter()
            .filter(|&&s| s == BlockState::Free)
            .count() as u64;
        if free != in_state {
            return Err(format!(
                "{free} blocks in free pools but {in_state} in state Free"
            ));
        }
        Ok(())
    }
}
