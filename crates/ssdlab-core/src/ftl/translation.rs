//! Translation pages on flash (spec 04): the global translation directory (GTD), and the
//! NAND work a mapping policy's plan ([`TransOp`]) costs.
//!
//! A translation page is one flash page of the translation region holding
//! `page_bytes / entry_bytes` consecutive entries. Its slots carry `TRANS_TAG | tpn` in
//! the out-of-band area, so the region's GC relocates them like any unit (whole pages stay
//! whole: they are valid or invalid together) and re-points the GTD instead of the table.
//! Translation page `tpn` lives in plane `tpn mod planes` (a rewrite stays in its plane,
//! so a batch update's read and program queue on one die, in order).
//!
//! Who waits: on a host read's path the plan runs in stages (a write-back program, then
//! the load, then the data read); on the write path and for relocations nobody waits —
//! the operations cost die time (timed) or serial time (functional). A load of a page
//! whose program has not completed yet is served from DRAM (it was just written from
//! there), so no read waits on a program.

use super::mapping::TransOp;
use super::region::Stream;
use super::{Ftl, NandSink};
use crate::error::{Result, SimError};
use crate::flash::{Cause, NandOp, OpKind, Owner, NONE};
use crate::ids::{JobId, Lpn, PlaneId, SlotId};
use std::collections::VecDeque;

pub use crate::base::TRANS_TAG;

/// Who a plan runs for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    HostRead,
    HostWrite,
    Relocation,
}

/// Translation traffic (monotone counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransCounters {
    /// Host read lookups, and those DRAM answered (CMT hits).
    pub read_lookups: u64,
    pub read_hits: u64,
    /// Host write and trim updates, and those whose entry DRAM held.
    pub write_lookups: u64,
    pub write_hits: u64,
    /// Data units whose mapping relocation (GC, wear leveling, retirement) changed.
    pub relocation_updates: u64,
    /// Translation page reads and programs, by origin (host read, host write, relocation).
    pub reads: [u64; 3],
    pub programs: [u64; 3],
    /// Loads served from DRAM because the page's program had not completed.
    pub loads_in_flight: u64,
    /// Units (translation pages × slots) copied by the translation region's GC, and the
    /// copy programs.
    pub gc_copied_units: u64,
    pub gc_programs: u64,
    /// Host reads by NAND reads (translation + data) on their path: index n, last = more.
    pub reads_per_host_read: [u64; 8],
    /// Host reads by NAND programs on their path.
    pub programs_per_host_read: [u64; 4],
}

impl TransCounters {
    pub fn since(&self, b: &TransCounters) -> TransCounters {
        let sub = |a: &[u64], b: &[u64], out: &mut [u64]| {
            for i in 0..out.len() {
                out[i] = a[i] - b[i];
            }
        };
        let mut d = *self;
        sub(&self.reads, &b.reads, &mut d.reads);
        sub(&self.programs, &b.programs, &mut d.programs);
        sub(
            &self.reads_per_host_read,
            &b.reads_per_host_read,
            &mut d.reads_per_host_read,
        );
        sub(
            &self.programs_per_host_read,
            &b.programs_per_host_read,
            &mut d.programs_per_host_read,
        );
        d.read_lookups -= b.read_lookups;
        d.read_hits -= b.read_hits;
        d.write_lookups -= b.write_lookups;
        d.write_hits -= b.write_hits;
        d.relocation_updates -= b.relocation_updates;
        d.loads_in_flight -= b.loads_in_flight;
        d.gc_copied_units -= b.gc_copied_units;
        d.gc_programs -= b.gc_programs;
        d
    }
}

/// The translation pages of a demand-based mapping.
#[derive(Clone)]
pub struct Translation {
    /// The translation region (`u8::MAX` when the mapping keeps its table in DRAM).
    pub region: u8,
    pub entries_per_tpage: u32,
    /// GTD: translation page → first slot of the flash page holding it (`NONE`: never
    /// written; its entries are all unmapped).
    pub gtd: Vec<SlotId>,
    /// Translation work the mapping asked for, carried out by `run_plan` (reused).
    plan: Vec<TransOp>,
    /// Translation steps of the write path and of relocations, for the background loop.
    deferred: VecDeque<(TransOp, Origin)>,
}

impl Translation {
    /// The plan the mapping policy fills in (empty between plans).
    #[inline]
    pub(super) fn plan_mut(&mut self) -> &mut Vec<TransOp> {
        &mut self.plan
    }

    /// Whether translation steps wait for the background loop.
    #[inline]
    pub(super) fn has_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    pub fn new(region: Option<u8>, entries_per_tpage: u32, logical_units: u32) -> Translation {
        match (region, entries_per_tpage) {
            (Some(r), e) if e > 0 => Translation {
                region: r,
                entries_per_tpage: e,
                gtd: vec![SlotId::NONE; logical_units.div_ceil(e) as usize],
                plan: Vec::new(),
                deferred: VecDeque::new(),
            },
            _ => Translation {
                region: u8::MAX,
                entries_per_tpage: 0,
                gtd: Vec::new(),
                plan: Vec::new(),
                deferred: VecDeque::new(),
            },
        }
    }

    #[inline]
    pub fn active(&self) -> bool {
        self.entries_per_tpage > 0
    }
}

/// What carrying out a plan issued.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PlanDone {
    /// The next free stage (host reads: the data reads' stage).
    pub stage: u8,
    pub reads: u32,
    pub programs: u32,
    /// Operations at a stage > 0 (parked until the earlier stage completes).
    pub staged: u32,
}

impl PlanDone {
    /// An operation was issued at the current stage: count it as parked when that stage is
    /// a later one, and move to the next stage on a read's path (`staged`).
    #[inline]
    fn advance(&mut self, staged: bool) {
        self.staged += (self.stage > 0) as u32;
        self.stage += staged as u8;
    }
}

impl Ftl {
    /// Carry out the mapping policy's plan (`self.trans.plan`) for `origin`; on a host read's
    /// path (`staged`) every step takes its own stage, starting at 0.
    pub(super) fn run_plan<S: NandSink>(
        &mut self,
        sink: &mut S,
        req: u32,
        origin: Origin,
        staged: bool,
    ) -> Result<PlanDone> {
        let mut done = PlanDone::default();
        if self.trans.plan.is_empty() {
            return Ok(done);
        }
        let mut plan = std::mem::take(&mut self.trans.plan);
        for &op in &plan {
            match op {
                TransOp::WriteBack(t) => {
                    self.plan_program(t, req, origin, staged, &mut done, sink)?
                }
                TransOp::Load(t) => self.plan_read(t, req, origin, staged, &mut done, sink)?,
                TransOp::Merge(t) => {
                    self.plan_read(t, req, origin, staged, &mut done, sink)?;
                    self.plan_program(t, req, origin, staged, &mut done, sink)?;
                }
            }
        }
        plan.clear();
        if self.trans.plan.is_empty() {
            self.trans.plan = plan;
        }
        Ok(done)
    }

    fn plan_read<S: NandSink>(
        &mut self,
        t: u32,
        req: u32,
        origin: Origin,
        staged: bool,
        done: &mut PlanDone,
        sink: &mut S,
    ) -> Result<()> {
        if self.read_tpage(t, req, done.stage, sink)? {
            self.counters.translation.reads[origin as usize] += 1;
            done.reads += 1;
            done.advance(staged);
        }
        Ok(())
    }

    fn plan_program<S: NandSink>(
        &mut self,
        t: u32,
        req: u32,
        origin: Origin,
        staged: bool,
        done: &mut PlanDone,
        sink: &mut S,
    ) -> Result<()> {
        if origin == Origin::HostRead && !self.tpage_room(PlaneId(t % self.media.geo.planes)) {
            // A read's write-back when its plane has no page beyond the GC reserve (the
            // region's GC lags, timed mode): queued like the write path's, so the read goes
            // on. Taking the reserve instead left none for GC and, reads arriving faster
            // than the dies ran their write-backs, the next one found no page (swarm).
            self.trans
                .deferred
                .push_back((TransOp::WriteBack(t), origin));
            return Ok(());
        }
        if !self.program_tpage(t, req, done.stage, sink)? {
            return Ok(()); // the device wore out
        }
        self.counters.translation.programs[origin as usize] += 1;
        done.programs += 1;
        done.advance(staged);
        Ok(())
    }

    /// Read translation page `t` at plan `stage`; false when no read is needed (never
    /// written, or its program has not completed: the page is still in DRAM).
    fn read_tpage<S: NandSink>(
        &mut self,
        t: u32,
        req: u32,
        stage: u8,
        sink: &mut S,
    ) -> Result<bool> {
        let slot = self.trans.gtd[t as usize];
        if slot.is_none() {
            return Ok(false);
        }
        let block = self.media.geo.block_of_slot(slot);
        let page =
            (slot - self.media.geo.first_slot_of_block(block)) / self.media.geo.slots_per_page;
        if page >= self.media.blocks.programmed[block.idx()] {
            self.counters.translation.loads_in_flight += 1;
            return Ok(false);
        }
        let mut op = NandOp::new(
            OpKind::Read,
            Cause::Mapping,
            block,
            page,
            self.media.geo.slots_per_page,
            Owner::Mapping { req },
        );
        op.stage = stage;
        self.issue(sink, op)?;
        Ok(true)
    }

    /// Program translation page `t` (from DRAM) into a new page of its plane; the old
    /// copy becomes garbage. Injected program failures take the next page, as for host
    /// pages. False (nothing issued) when blocks lost to wear leave no page: the device
    /// has failed.
    fn program_tpage<S: NandSink>(
        &mut self,
        t: u32,
        req: u32,
        stage: u8,
        sink: &mut S,
    ) -> Result<bool> {
        let r = self.trans.region;
        let plane = PlaneId(t % self.media.geo.planes);
        let spp = self.media.geo.slots_per_page;
        let mut retry = false;
        loop {
            // A retry after a failed attempt (whose block is doomed: closed) may take the
            // GC reserve: the step had its page when it started.
            let taken = match self.take_page(r, plane, Stream::HOST) {
                None if retry => self.take_page(r, plane, Stream::GC),
                p => p,
            };
            let Some((block, page)) = taken else {
                let name = &self.media.regions[r as usize].geo.name;
                if self.counters.blocks_retired > 0 || self.counters.program_failures > 0 {
                    let why = format!(
                        "the translation region {name:?} has no free page left in plane {plane}"
                    );
                    self.health.fail(why);
                    return Ok(false);
                }
                return Err(SimError::DeviceFull(format!(
                    "the translation region {name:?} has no free page in plane {plane}: give it more blocks per plane"
                )));
            };
            self.media.program_seq += 1;
            let mut op = NandOp::new(
                OpKind::Program,
                Cause::Mapping,
                block,
                page,
                spp,
                Owner::Mapping { req },
            );
            op.stage = stage;
            if self.health.draw_program_failure() {
                self.doom(block);
                op.flags = crate::flash::OP_FAILS;
                op.owner = Owner::None;
                op.stage = 0;
                self.issue(sink, op)?;
                retry = true;
                continue;
            }
            let first = self.media.page_slot(block, page);
            let old = std::mem::replace(&mut self.trans.gtd[t as usize], first);
            if !old.is_none() {
                for k in 0..spp {
                    self.media.invalidate(&mut self.jobs, old + k);
                }
            }
            self.media
                .oob
                .store_range(first.idx(), spp as usize, TRANS_TAG | t);
            self.media.blocks.valid_units[block.idx()] += spp;
            let rp = self.media.rp(r, plane);
            self.media.ps[rp].valid_units += spp as u64;
            self.issue(sink, op)?;
            self.after_host_page(r, plane);
            return Ok(true);
        }
    }

    /// Whether `plane` of the translation region has a page for a translation program
    /// beyond its GC reserve (an open block, or a free block past the reserve).
    fn tpage_room(&self, plane: PlaneId) -> bool {
        let ps = &self.media.ps[self.media.rp(self.trans.region, plane)];
        !ps.open.get(Stream::HOST).is_none() || ps.free.len() > ps.gc_hard_free_blocks
    }

    /// A relocation job moved data unit `lpn`: its mapping changes when the job is done.
    #[cold]
    pub(super) fn note_moved(&mut self, j: JobId, lpn: u32) {
        self.jobs.reloc_mut(j).moved.push(lpn);
    }

    /// GC moved translation unit `lpn` (tagged) to `dst`: re-point the GTD at its page.
    #[cold]
    pub(super) fn relocate_tpage(&mut self, tagged: u32, dst: SlotId) {
        let t = (tagged & !TRANS_TAG) as usize;
        self.trans.gtd[t] = SlotId(dst.0 - dst.0 % self.media.geo.slots_per_page);
    }

    /// A relocation job is done: update the mappings of the data units it moved (the
    /// mapping policy decides: in the cache, or batch updates of translation pages).
    pub(super) fn relocation_updates(&mut self, j: JobId) -> Result<()> {
        let mut moved = std::mem::take(&mut self.jobs.reloc_mut(j).moved);
        if moved.is_empty() {
            return Ok(());
        }
        moved.sort_unstable();
        let per = self.trans.entries_per_tpage;
        let mut i = 0;
        while i < moved.len() {
            let t = moved[i] / per;
            let n = moved[i..].iter().take_while(|&&l| l / per == t).count();
            self.mapping
                .on_relocated(t, &moved[i..i + n], &mut self.trans.plan);
            i += n;
        }
        self.counters.translation.relocation_updates += moved.len() as u64;
        moved.clear();
        self.jobs.reloc_mut(j).moved = moved;
        self.defer_plan(Origin::Relocation);
        Ok(())
    }

    /// Queue the plan for the background loop (write path and relocations: nobody waits),
    /// which carries it out one step at a time, letting the translation region's GC run
    /// between steps and waiting while its plane has no free page.
    fn defer_plan(&mut self, origin: Origin) {
        for &op in &self.trans.plan {
            self.trans.deferred.push_back((op, origin));
        }
        self.trans.plan.clear();
    }

    /// Carry out the oldest deferred step if its translation page's plane has room; false
    /// when nothing was done (no step, or no room: an erase there will wake us).
    pub(super) fn run_deferred_step<S: NandSink>(&mut self, sink: &mut S) -> Result<bool> {
        let Some(&(op, origin)) = self.trans.deferred.front() else {
            return Ok(false);
        };
        let t = match op {
            TransOp::WriteBack(t) | TransOp::Load(t) | TransOp::Merge(t) => t,
        };
        if !self.tpage_room(PlaneId(t % self.media.geo.planes)) && !matches!(op, TransOp::Load(_)) {
            return Ok(false);
        }
        self.trans.deferred.pop_front();
        self.trans.plan.push(op);
        self.run_plan(sink, NONE, origin, false)?;
        Ok(true)
    }

    /// The mapping of the host units `lpns` changed (a host page was placed, or a trim);
    /// the translation work is queued for the background loop.
    #[inline]
    pub(super) fn host_updates(&mut self, lpns: &[u32]) {
        for &l in lpns {
            let hit = self.mapping.on_write(Lpn(l), &mut self.trans.plan);
            self.counters.translation.write_hits += hit as u64;
        }
        self.counters.translation.write_lookups += lpns.len() as u64;
        self.defer_plan(Origin::HostWrite);
    }
}
