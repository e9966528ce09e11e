//! The background-work engine: relocation jobs and their pacing, the same in both modes.
//!
//! A job moves the valid units of one source block into a destination stream (or block)
//! of the same plane, then erases the source (or retires it):
//!
//! | kind | source | destination | after |
//! |---|---|---|---|
//! | GC | the region's victim (its policy's choice) | `relocate_to` region: `gc` stream (same region) or `inbound` stream | erase |
//! | wear leveling | the cold block the policy names | the block just erased, or the `wear` stream | erase |
//! | retirement | a block whose program failed | the region's `gc` stream | retire |
//!
//! Copies stay in the plane, so a copy's reads and its program queue on one die in order.
//!
//! **When.** A plane of a region with fewer than `gc_soft_free_blocks` free blocks starts a
//! GC job, and GC goes on victim after victim until the plane is back at the threshold
//! (while the host is idle, at `idle_gc_free_blocks`). A job keeps at most
//! `gc_window_pages` copy programs in flight (0: no limit) and issues the next as they
//! complete; with an immediate sink (functional mode) a victim is collected at once.
//!
//! **How fast.** Die time is shared at the die: [`PressureView::gc_pressure`](super::PressureView::gc_pressure) gives the scheduler,
//! per plane, how many GC program batches may run for each host-program batch when both
//! wait: `k = ⌈r · (soft + 1 − free)⌉` with `r = v / (U − v)`, the copies per host page
//! that keep free space level while a victim with `v` of `U` valid units is collected —
//! so GC just keeps up one block below the soft threshold and catches up faster further
//! below; 1:1 at or above it (a job finishing); the same `k` at the hard threshold, where
//! host writes can no longer open blocks there and host reads take every other batch;
//! and GC first, not suspendable, below it (urgent). Host programs are never starved
//! outside urgency (docs/write-tails.md).
//!
//! **Completion.** With an immediate sink a copy re-maps its units when issued; otherwise
//! the job's copies in flight are a bit per source slot ([`InFlight`]: they complete in
//! issue order, so the k-th set bit is the k-th copy) and are applied when the copy's
//! program completes, unless the host rewrote or trimmed the unit meanwhile. The source is erased when every copy has completed and no read of it is
//! queued. The copy machinery (scan, gather, copy runs, completion-time re-mapping) is
//! `copy.rs`; this file is the job lifecycle.

use super::region::Stream;
use super::wear::{WearAction, WearCtx};
use super::{Ftl, Media, NandSink};
use crate::error::{Result, SimError};
use crate::flash::{BlockState, Cause, NandOp, OpKind, Owner, NONE, OP_FAILS};
use crate::ids::{BlockId, JobId, PlaneId};

mod copy;

use copy::Copy;
pub use copy::{InFlight, PREFETCH_MIN_UNITS};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    Gc,
    WearLeveling,
    Retire,
    /// The erase of a reset zone's block (no copies; a host command's erase).
    ZoneReset,
}

impl JobKind {
    fn cause(self) -> Cause {
        match self {
            JobKind::Gc | JobKind::Retire => Cause::Gc,
            JobKind::WearLeveling => Cause::WearLeveling,
            JobKind::ZoneReset => Cause::Host,
        }
    }
}

#[derive(Clone)]
pub struct Job {
    pub kind: JobKind,
    pub src: u32,
    pub plane: u32,
    pub src_region: u8,
    pub dst_region: u8,
    pub dst_stream: Stream,
    /// Next slot offset of the source to look at, and the end of its programmed slots.
    pub scan_slot: u32,
    pub scan_end: u32,
    /// Source page last read (a page is read once, when its first unit is taken).
    pub last_read_page: u32,
    pub copies_in_flight: u32,
    /// Source slots whose copy program has not completed, in copy order.
    pub copies: InFlight,
    /// Data units this job moved, whose mappings a demand-based mapping updates when the
    /// job is done (empty otherwise).
    pub moved: Vec<u32>,
    pub erase_issued: bool,
    pub woken: bool,
    /// GC copy pages per host page that keep the plane's free space level while this
    /// victim is collected, × 16: v / (U − v) for `v` valid of `U` units at selection.
    pub ratio_x16: u32,
}

/// The jobs in flight, in a slab of reusable slots (their pair queues keep their capacity).
#[derive(Clone, Default)]
pub struct Jobs {
    slab: Vec<Job>,
    free: Vec<JobId>,
    /// Ids of live jobs, in start order.
    live: Vec<JobId>,
    /// (region, plane) pairs waiting for a background step.
    woken: Vec<(u8, u32)>,
    /// Jobs waiting for a step.
    woken_jobs: Vec<JobId>,
    /// The host is idle: GC collects up to the idle target.
    host_idle: bool,
    /// Copy programs a job keeps in flight (0: no limit).
    gc_window_pages: u32,
}

impl Jobs {
    pub fn new(gc_window_pages: u32) -> Jobs {
        Jobs {
            gc_window_pages,
            ..Jobs::default()
        }
    }

    fn start(&mut self, job: Job) -> JobId {
        let id = match self.free.pop() {
            Some(id) => {
                let slot = &mut self.slab[id.idx()];
                let copies = std::mem::take(&mut slot.copies);
                let moved = std::mem::take(&mut slot.moved);
                *slot = Job {
                    copies,
                    moved,
                    ..job
                };
                id
            }
            None => {
                self.slab.push(job);
                JobId::from_slab(self.slab.len() - 1)
            }
        };
        let slot = &mut self.slab[id.idx()];
        slot.moved.clear();
        slot.copies.reset(slot.scan_end);
        self.live.push(id);
        id
    }

    /// End job `id`; false when it was not live (ended twice: a bug, nothing changes).
    fn end(&mut self, id: JobId) -> bool {
        let Some(i) = self.live.iter().position(|&j| j == id) else {
            return false;
        };
        self.live.remove(i);
        self.free.push(id);
        true
    }

    #[inline]
    pub fn get(&self, id: JobId) -> &Job {
        &self.slab[id.idx()]
    }

    #[inline]
    pub fn get_mut(&mut self, id: JobId) -> &mut Job {
        &mut self.slab[id.idx()]
    }

    pub fn active(&self) -> usize {
        self.live.len()
    }

    pub fn live(&self) -> &[JobId] {
        &self.live
    }

    /// Whether the host is idle ([`Ftl::set_host_idle`]).
    #[inline]
    pub fn host_idle(&self) -> bool {
        self.host_idle
    }

    /// Queue a background step of (region, plane).
    #[inline]
    pub(super) fn wake(&mut self, media: &mut Media, r: u8, plane: u32) {
        let rp = media.rp(r, plane);
        let ps = &mut media.ps[rp];
        if !ps.woken {
            ps.woken = true;
            self.woken.push((r, plane));
        }
    }

    /// Wake the job whose source is `block` (its erase may have been waiting for reads).
    pub(super) fn wake_block(&mut self, block: u32) {
        if let Some(&j) = self.live.iter().find(|&&j| self.get(j).src == block) {
            self.wake_job(j);
        }
    }

    /// Queue a step of job `j`.
    #[inline]
    pub(super) fn wake_job(&mut self, j: JobId) {
        let job = self.get_mut(j);
        if !job.woken {
            job.woken = true;
            self.woken_jobs.push(j);
        }
    }

    /// Start the erase of full `block` of region `r`, a reset zone's (no valid unit).
    pub(in crate::ftl) fn start_reset(
        &mut self,
        media: &mut Media,
        internal: &mut Option<String>,
        block: u32,
        r: u8,
    ) -> JobId {
        let plane = media.geo.plane_of_block(BlockId(block));
        let valid = media.blocks.valid_units[block as usize];
        media.regions[r as usize]
            .victims
            .remove(PlaneId(plane), BlockId(block), valid);
        self.start_job(media, internal, JobKind::ZoneReset, block, r, r)
    }

    /// Start a job moving `src`'s valid units into region `dst`.
    pub(in crate::ftl) fn start_job(
        &mut self,
        media: &mut Media,
        internal: &mut Option<String>,
        kind: JobKind,
        src: u32,
        r: u8,
        dst: u8,
    ) -> JobId {
        // A retirement's source is the open block whose program failed.
        let from = if kind == JobKind::Retire {
            BlockState::Open
        } else {
            BlockState::Full
        };
        media.set_block_state(internal, BlockId(src), from, BlockState::Victim);
        let dst_stream = match kind {
            JobKind::WearLeveling => Stream::WEAR,
            _ if dst == r => Stream::gc(media.blocks.lane[src as usize]),
            _ => Stream::INBOUND,
        };
        self.start(Job {
            kind,
            src,
            plane: media.geo.plane_of_block(BlockId(src)),
            src_region: r,
            dst_region: dst,
            dst_stream,
            scan_slot: 0,
            scan_end: media.blocks.programmed[src as usize] * media.geo.slots_per_page,
            last_read_page: NONE,
            copies_in_flight: 0,
            copies: InFlight::default(),
            moved: Vec::new(),
            erase_issued: false,
            woken: false,
            ratio_x16: 16,
        })
    }
}

impl Ftl {
    /// A host page went to `plane` of region `r`: GC may be due there.
    #[inline]
    pub(super) fn after_host_page(&mut self, r: u8, plane: u32) {
        let ps = &self.media.ps[self.media.rp(r, plane)];
        if ps.gc_job.is_none() && ps.needs_gc(self.jobs.host_idle) {
            self.jobs.wake(&mut self.media, r, plane);
        }
    }

    /// The host went idle (or active again): while idle, GC collects up to
    /// `idle_gc_free_blocks` per plane instead of `gc_soft_free_blocks`.
    pub fn set_host_idle<S: NandSink>(&mut self, idle: bool, sink: &mut S) -> Result<()> {
        if self.jobs.host_idle == idle {
            return Ok(());
        }
        self.jobs.host_idle = idle;
        if idle {
            return self.wake_all(sink);
        }
        Ok(())
    }

    /// Whether the host is idle (see [`Ftl::set_host_idle`]).
    pub fn host_idle(&self) -> bool {
        self.jobs.host_idle
    }

    /// Step every region of every plane (e.g. after a write found no room anywhere).
    pub fn wake_all<S: NandSink>(&mut self, sink: &mut S) -> Result<()> {
        for r in 0..self.media.regions.len() as u8 {
            for p in 0..self.media.geo.planes {
                self.jobs.wake(&mut self.media, r, p);
            }
        }
        self.run_background(sink)
    }

    /// Run the background steps queued while no driver ran (after a power-on recovery,
    /// every plane's): a driver calls it when it begins.
    pub fn run_pending<S: NandSink>(&mut self, sink: &mut S) -> Result<()> {
        self.run_background(sink)
    }

    /// Run every queued background step until none is left.
    #[inline(always)]
    pub(super) fn run_background<S: NandSink>(&mut self, sink: &mut S) -> Result<()> {
        if self.jobs.woken_jobs.is_empty()
            && self.jobs.woken.is_empty()
            && !self.trans.has_deferred()
        {
            return self.check_due();
        }
        self.run_background_steps(sink)
    }

    /// [`Ftl::run_background`] when something is queued (out of line: the common case,
    /// nothing queued, is the inlined check above).
    #[inline(never)]
    fn run_background_steps<S: NandSink>(&mut self, sink: &mut S) -> Result<()> {
        loop {
            if let Some(j) = self.jobs.woken_jobs.pop() {
                self.jobs.get_mut(j).woken = false;
                self.advance(j, sink)?;
            } else if let Some((r, p)) = self.jobs.woken.pop() {
                let rp = self.media.rp(r, p);
                self.media.ps[rp].woken = false;
                self.step_plane(r, p, sink)?;
            } else if !self.trans.has_deferred() || !self.run_deferred_step(sink)? {
                return self.check_due();
            }
        }
    }

    /// Start GC on (region, plane) if it needs it, and advance its job.
    fn step_plane<S: NandSink>(&mut self, r: u8, plane: u32, sink: &mut S) -> Result<()> {
        let ps = &self.media.ps[self.media.rp(r, plane)];
        if !ps.gc_job.is_none() {
            return self.advance(ps.gc_job, sink);
        }
        if !ps.needs_gc(self.jobs.host_idle) || self.worn_out() {
            return Ok(());
        }
        match self.start_gc(r, plane) {
            Some(j) => self.advance(j, sink),
            None => Ok(()),
        }
    }

    /// Choose a victim of (region, plane) and start its GC job.
    fn start_gc(&mut self, r: u8, plane: u32) -> Option<JobId> {
        let region = &mut self.media.regions[r as usize];
        let mut ctx = super::gc::SelectCtx {
            blocks: &self.media.blocks,
            plane: PlaneId(plane),
            max_valid: region.max_victim_valid,
            units_per_block: region.geo.units_per_block,
            now_seq: self.media.program_seq,
            rng: &mut self.rng,
        };
        let Some(BlockId(victim)) = region.victims.select(&mut ctx) else {
            let rp = self.media.rp(r, plane);
            self.media.ps[rp].starved = true;
            return None;
        };
        if !region.wear.is_none() {
            let ctx = WearCtx {
                blocks: &self.media.blocks,
                shape: &region.wear_shape,
                plane: PlaneId(plane),
                after_gc: false,
            };
            region.wear.on_gc_scan(&ctx);
        }
        let dst = region.geo.relocate_to;
        let upb = region.geo.units_per_block;
        let v = self.media.blocks.valid_units[victim as usize];
        self.counters.gc_invocations += 1;
        let j = self.jobs.start_job(
            &mut self.media,
            &mut self.internal,
            JobKind::Gc,
            victim,
            r,
            dst,
        );
        self.jobs.get_mut(j).ratio_x16 = (v * 16).div_ceil((upb - v).max(1)).max(1);
        let rp = self.media.rp(r, plane);
        self.media.ps[rp].gc_job = j;
        self.refresh_pressure(rp);
        Some(j)
    }

    /// Start GC on `victim` (a full block of region `r`, in no victim index): a recovery's
    /// first victim on a plane the cut left without a free block.
    pub(in crate::ftl) fn start_gc_on(&mut self, r: u8, victim: u32) {
        let upb = self.media.regions[r as usize].geo.units_per_block;
        let dst = self.media.regions[r as usize].geo.relocate_to;
        let v = self.media.blocks.valid_units[victim as usize];
        self.counters.gc_invocations += 1;
        let j = self.jobs.start_job(
            &mut self.media,
            &mut self.internal,
            JobKind::Gc,
            victim,
            r,
            dst,
        );
        self.jobs.get_mut(j).ratio_x16 = (v * 16).div_ceil((upb - v).max(1)).max(1);
        let rp = self.media.blocks.rp[victim as usize] as usize;
        self.media.ps[rp].gc_job = j;
    }

    /// Copies job `j` may issue now: the rest of its window (unlimited with an immediate
    /// sink or without a window).
    #[inline]
    fn window_room<S: NandSink>(&self, j: JobId) -> u32 {
        if S::IMMEDIATE || self.jobs.gc_window_pages == 0 {
            return u32::MAX;
        }
        self.jobs
            .gc_window_pages
            .saturating_sub(self.jobs.get(j).copies_in_flight)
    }

    /// Copy as far as the window and room allow; erase (or retire) the source when done.
    fn advance<S: NandSink>(&mut self, j: JobId, sink: &mut S) -> Result<()> {
        let job = self.jobs.get(j);
        if job.erase_issued {
            return Ok(());
        }
        if self.media.blocks.pins[job.src as usize] > 0 && self.durable.trims.is_some() {
            // Durable trims: a batch not yet recorded may pin the source; record it now,
            // in the job's destination (its first page, or the one after its copies).
            self.unpin_for_gc(j, BlockId(job.src), sink)?;
        }
        let job = self.jobs.get(j);
        if job.scan_slot < job.scan_end && self.copy_run(j, sink)? != Copy::Done {
            return Ok(());
        }
        let job = self.jobs.get(j);
        if job.copies_in_flight > 0 || self.media.blocks.pins[job.src as usize] > 0 {
            return Ok(());
        }
        self.finish_source(j, sink)
    }

    /// Every copy of job `j` is done and no read of its source is queued: erase it, or
    /// retire it.
    fn finish_source<S: NandSink>(&mut self, j: JobId, sink: &mut S) -> Result<()> {
        self.relocation_updates(j)?;
        let job = self.jobs.get_mut(j);
        job.erase_issued = true;
        let (src, kind) = (job.src, job.kind);
        debug_assert_eq!(
            self.media.blocks.valid_units[src as usize], 0,
            "source still holds data"
        );
        if kind == JobKind::Retire {
            self.retire(BlockId(src), BlockState::Victim);
            self.end_job(j);
            return Ok(());
        }
        if self.media.blocks.pins[src as usize] != 0 {
            self.internal_error(format!("erase of block {src} with a read pinned"));
        }
        self.media.set_block_state(
            &mut self.internal,
            BlockId(src),
            BlockState::Victim,
            BlockState::Erasing,
        );
        // The plane may choose its next victim while this erase runs (in the timed mode the
        // choice would otherwise lag the functional mode's by an erase time).
        let rp = self
            .media
            .rp(self.jobs.get(j).src_region, self.jobs.get(j).plane);
        self.media.ps[rp].erasing += 1;
        if self.media.ps[rp].gc_job == j {
            self.media.ps[rp].gc_job = JobId::NONE;
            let (r, plane) = (self.media.ps[rp].region, self.media.ps[rp].plane);
            self.jobs.wake(&mut self.media, r, plane);
        }
        self.refresh_pressure(rp);
        let mut op = NandOp::new(
            OpKind::Erase,
            kind.cause(),
            BlockId(src),
            0,
            0,
            Owner::Job { job: j },
        );
        if self.health.draw_erase_failure() {
            op.flags = OP_FAILS;
        }
        self.issue(sink, op)
    }

    /// Job `j` is over: free its slot and wake what may have waited for it.
    fn end_job(&mut self, j: JobId) {
        let job = self.jobs.get(j);
        debug_assert!(job.copies.is_empty(), "job {j} ends with copies in flight");
        let (r, plane) = (job.src_region, job.plane);
        let rp = self.media.rp(r, plane);
        let ps = &mut self.media.ps[rp];
        if ps.gc_job == j {
            ps.gc_job = JobId::NONE;
            self.refresh_pressure(rp);
        }
        if !self.jobs.end(j) {
            self.internal_error(format!("job {j} ended twice"));
        }
        self.wake_plane_all(plane);
    }

    /// Wake every region and job of `plane` (a block was freed there).
    fn wake_plane_all(&mut self, plane: u32) {
        for r in 0..self.media.regions.len() as u8 {
            self.jobs.wake(&mut self.media, r, plane);
        }
        for i in 0..self.jobs.active() {
            let j = self.jobs.live()[i];
            if self.jobs.get(j).plane == plane {
                self.jobs.wake_job(j);
            }
        }
    }

    /// The erase `op` completed: count the wear, retire or free the block, and let the
    /// wear leveler react.
    pub(super) fn erase_done<S: NandSink>(&mut self, op: &NandOp, sink: &mut S) -> Result<()> {
        let block = op.block;
        let b = block.idx();
        debug_assert_eq!(self.media.blocks.state[b], BlockState::Erasing);
        self.media.blocks.erase_count[b] += 1;
        if let Some(d) = self.durable.data.as_mut() {
            d.erase(block.0);
        }
        self.media.blocks.valid_units[b] = 0;
        self.media.blocks.next_page[b] = 0;
        self.media.blocks.programmed[b] = 0;
        self.media.blocks.doomed[b] = false;
        self.media.blocks.sealed[b] = false;
        if self.durable.trims.is_some() {
            self.records_erased(block);
        }
        if !self.media.oob.version.is_empty() {
            // The OOB of an erased page reads as empty: a slot this cycle leaves unwritten
            // (padding, a copy whose unit was rewritten meanwhile) must not show the unit
            // it held before, or a power-on scan would take that for data.
            let first = self.media.geo.first_slot_of_block(block).idx();
            let n = self.media.geo.units_per_block as usize;
            self.media.oob.version[first..first + n].fill(0);
            self.media.oob.lpn[first..first + n].fill(NONE);
        }
        let Owner::Job { job } = op.owner else {
            return Err(SimError::Internal {
                what: format!("erase of block {block} has no job"),
            });
        };
        let plane = self.media.geo.plane_of_block(block);
        let r = self.media.blocks.region[b] as usize;
        let after_gc = self.jobs.get(job).kind == JobKind::Gc;
        let rp = self.media.blocks.rp[b] as usize;
        self.media.ps[rp].erasing -= 1;
        self.refresh_pressure(rp);
        let endurance =
            self.media.timing.endurance_pe_cycles[self.media.blocks.cell_mode[b].index()];
        if op.fails() {
            self.counters.erase_failures += 1;
            self.retire(block, BlockState::Erasing);
        } else if self.media.blocks.erase_count[b] >= endurance {
            self.retire(block, BlockState::Erasing);
        } else {
            self.media.set_block_state(
                &mut self.internal,
                block,
                BlockState::Erasing,
                BlockState::Free,
            );
            let region = &mut self.media.regions[r];
            let action = if region.wear.is_none() {
                WearAction::Idle
            } else {
                let ctx = WearCtx {
                    blocks: &self.media.blocks,
                    shape: &region.wear_shape,
                    plane: PlaneId(plane),
                    after_gc,
                };
                region.wear.on_erase(block, &ctx)
            };
            match action {
                WearAction::Migrate {
                    from: BlockId(from),
                    into: BlockId(into),
                } if self.migratable(from, r as u8, plane)
                    && !self.migrating(r as u8, plane, job) =>
                {
                    self.start_migration(from, r as u8, into, block.0);
                }
                _ => self.free_block(block.0),
            }
        }
        self.end_job(job);
        if self.durable.trims.is_some() {
            self.record_wanted(sink)?;
        }
        Ok(())
    }

    /// Return erased `block` (its erase done: state `Free`) to its pool.
    fn free_block(&mut self, block: u32) {
        let b = block as usize;
        if self.media.blocks.state[b] != BlockState::Free {
            let s = self.media.blocks.state[b];
            self.internal_error(format!("block {block} joins its free pool in state {s:?}"));
        }
        let rp = self.media.blocks.rp[b] as usize;
        self.media.ps[rp]
            .free
            .push(BlockId(block), self.media.blocks.erase_count[b]);
        self.refresh_pressure(rp);
    }

    /// Whether wear leveling may migrate `block` (a full block of region `r` in `plane`).
    fn migratable(&self, block: u32, r: u8, plane: u32) -> bool {
        (block as usize) < self.media.blocks.len()
            && self.media.blocks.state[block as usize] == BlockState::Full
            && self.media.blocks.region[block as usize] == r
            && self.media.geo.plane_of_block(BlockId(block)) == plane
    }

    /// Whether a wear-leveling migration other than job `except` is under way in (region
    /// `r`, `plane`). One at a time: the plane's reserve holds one wear-stream block, and
    /// each migration keeps its source (full of data) out of GC's reach until it is done.
    fn migrating(&self, r: u8, plane: u32, except: JobId) -> bool {
        self.jobs.live().iter().any(|&o| {
            let job = self.jobs.get(o);
            o != except
                && job.kind == JobKind::WearLeveling
                && job.plane == plane
                && job.src_region == r
        })
    }

    /// Start a wear-leveling migration of `from`. When the policy names the block just
    /// erased (`into == erased`), the plane's wear stream has no open block and the stream
    /// could take a block from the pool ([`PlaneState::reserve_for`]), that block becomes
    /// the stream's open block, so the cold data lands in it; otherwise the erased block
    /// returns to the pool and the wear stream takes blocks as usual.
    fn start_migration(&mut self, from: u32, r: u8, into: u32, erased: u32) {
        let plane = self.media.geo.plane_of_block(BlockId(from));
        let rp = self.media.rp(r, plane);
        let ps = &mut self.media.ps[rp];
        if into == erased
            && ps.open.get(Stream::WEAR).is_none()
            && ps.free.len() >= ps.reserve_for(Stream::WEAR)
        {
            ps.open.set(Stream::WEAR, BlockId(erased));
            let b = erased as usize;
            self.media.set_block_state(
                &mut self.internal,
                BlockId(erased),
                BlockState::Free,
                BlockState::Open,
            );
            self.media.blocks.next_page[b] = 0;
            self.media.blocks.programmed[b] = 0;
        } else {
            self.free_block(erased);
        }
        let valid = self.media.blocks.valid_units[from as usize];
        self.media.regions[r as usize]
            .victims
            .remove(PlaneId(plane), BlockId(from), valid);
        self.counters.wear_leveling_migrations += 1;
        let j = self.jobs.start_job(
            &mut self.media,
            &mut self.internal,
            JobKind::WearLeveling,
            from,
            r,
            r,
        );
        self.jobs.wake_job(j);
    }

    /// A doomed block's programs have all completed: move its valid data out and retire it.
    pub(super) fn start_retire<S: NandSink>(&mut self, block: u32, _sink: &mut S) -> Result<()> {
        let r = self.media.blocks.region[block as usize];
        let dst = self.media.regions[r as usize].geo.relocate_to;
        let j = self.jobs.start_job(
            &mut self.media,
            &mut self.internal,
            JobKind::Retire,
            block,
            r,
            dst,
        );
        self.jobs.wake_job(j);
        Ok(())
    }
}
