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
//! | read reclaim, retention refresh | a full block its policy finds due (`reliability.rs`) | as GC | erase |
//! | zone reset | a reset zone's block (no valid unit) | — | erase |
//!
//! A [`Job`] is what every kind shares (source, plane, region, erase issued, woken) and
//! its own record, [`Work`]: a [`Relocation`] (kind, destination, scan cursor, copies in
//! flight, moved units, pacing ratio) or a [`ZoneReset`] (two fields). All kinds share
//! the slab's id space, `Owner::Job` on their operations and the wake queues, so they
//! step in one order. Job state that needs only the jobs and the media is on [`Jobs`]
//! and [`Job`] over an explicit `&Media` (window, migrations under way, a block coming
//! back, a migration's room, waking a plane); what issues NAND operations stays on
//! `Ftl`: with an immediate sink an issue completes at once and re-enters the FTL.
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
//! program completes, unless the host rewrote or trimmed the unit meanwhile. The source
//! is erased when every copy has completed and no read of it is queued. The copy machinery (scan, gather, copy runs, completion-time re-mapping) is
//! `copy.rs`; this file is the job lifecycle.

use super::region::Stream;
use super::wear::{WearAction, WearCtx};
use super::{Ftl, Media, NandSink};
use crate::error::{Result, SimError};
use crate::flash::{BlockState, Cause, NandOp, OobWord, OpKind, Owner, NONE, OP_FAILS};
use crate::ids::{BlockId, JobId, PlaneId};

mod copy;

use copy::Copy;
pub use copy::{InFlight, PREFETCH_MIN_UNITS};

/// What a relocation job moves a block's valid units for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    Gc,
    WearLeveling,
    Retire,
    /// Read reclaim: a block read too often since its erase.
    Reclaim,
    /// Retention refresh: a block whose data is too old.
    Refresh,
}

impl JobKind {
    /// A reliability job (read reclaim, retention refresh): like a wear-leveling
    /// migration it copies into the plane's `wear` stream (never GC's), one such job per
    /// plane at a time, and it never opens a block from the GC reserve — so GC's
    /// guarantee of room (a victim's copies fit the reserve) holds beside it.
    #[inline]
    pub(super) fn yields(self) -> bool {
        matches!(self, JobKind::Reclaim | JobKind::Refresh)
    }

    fn cause(self) -> Cause {
        match self {
            JobKind::Gc | JobKind::Retire => Cause::Gc,
            JobKind::WearLeveling => Cause::WearLeveling,
            JobKind::Reclaim => Cause::Reclaim,
            JobKind::Refresh => Cause::Refresh,
        }
    }
}

/// A job: the block it empties and erases (or retires), and what it does first.
#[derive(Clone)]
pub struct Job {
    pub src: BlockId,
    pub plane: PlaneId,
    pub src_region: u8,
    pub erase_issued: bool,
    pub woken: bool,
    pub work: Work,
}

/// A job's own record, by kind.
#[derive(Clone)]
pub enum Work {
    /// GC, wear leveling or retirement: copies, then erase (or retire).
    Relocation(Relocation),
    /// The erase of a reset zone's block (no copies; a host command's erase).
    ZoneReset(ZoneReset),
}

/// A relocation job's copy state.
#[derive(Clone)]
pub struct Relocation {
    pub kind: JobKind,
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
    /// job is done (empty otherwise). Raw unit numbers: what the mapping policy's
    /// `on_relocated` takes.
    pub moved: Vec<u32>,
    /// GC copy pages per host page that keep the plane's free space level while this
    /// victim is collected, × 16: v / (U − v) for `v` valid of `U` units at selection.
    pub ratio_x16: u32,
}

/// A zone reset's erase job: nothing to copy; it waits only for reads of its block.
#[derive(Clone)]
pub struct ZoneReset {
    /// It has stepped once: for [`Jobs::block_coming`] it has "copied everything" (as a
    /// relocation whose scan is done).
    pub stepped: bool,
    /// Where a trim-record batch that pins the block is written ([`Ftl::unpin_for_gc`]):
    /// its region's GC stream of the block's lane.
    pub record_stream: Stream,
}

impl Job {
    /// The cause its NAND operations are counted under.
    #[inline]
    fn cause(&self) -> Cause {
        match &self.work {
            Work::Relocation(r) => r.kind.cause(),
            Work::ZoneReset(_) => Cause::Host,
        }
    }

    /// Its relocation record (`None`: a zone reset).
    #[inline]
    pub fn relocation(&self) -> Option<&Relocation> {
        match &self.work {
            Work::Relocation(r) => Some(r),
            Work::ZoneReset(_) => None,
        }
    }

    /// Whether it is a relocation of `kind`.
    #[inline]
    pub fn is(&self, kind: JobKind) -> bool {
        matches!(&self.work, Work::Relocation(r) if r.kind == kind)
    }

    /// Whether it copies into the plane's `wear` stream (a wear-leveling migration, a
    /// reliability job): one at a time per plane.
    #[inline]
    pub(in crate::ftl) fn moves_cold(&self) -> bool {
        matches!(&self.work, Work::Relocation(r) if r.dst_stream == Stream::WEAR)
    }

    /// Whether it has nothing left to copy (only its copies in flight or reads of its
    /// source to wait for before its erase).
    #[inline]
    fn scanned(&self) -> bool {
        match &self.work {
            Work::Relocation(r) => r.scan_slot >= r.scan_end,
            Work::ZoneReset(z) => z.stepped,
        }
    }

    /// Where a trim-record page written for this job goes: (region, plane, stream) of its
    /// next copy's destination (a zone reset: its block's GC stream).
    pub(in crate::ftl) fn record_destination(&self) -> (u8, PlaneId, Stream) {
        match &self.work {
            Work::Relocation(r) => (r.dst_region, self.plane, r.dst_stream),
            Work::ZoneReset(z) => (self.src_region, self.plane, z.record_stream),
        }
    }

    /// Whether the wear stream's open block has a page for each page of units this
    /// migration has still to copy, and `extra_pages` more (it then finishes without
    /// another block).
    #[cold]
    pub(in crate::ftl) fn migration_fits(&self, media: &Media, extra_pages: u32) -> bool {
        let Some(r) = self.relocation() else {
            return true; // nothing to copy
        };
        let ps = &media.ps[media.rp(self.src_region, self.plane)];
        let open = ps.open.get(Stream::WEAR);
        let room = if open.is_none() {
            0
        } else {
            ps.pages_per_block - media.blocks.next_page[open.idx()]
        };
        let base = media.geo.first_slot_of_block(self.src) + r.scan_slot;
        let left = media
            .oob
            .count_valid(base.idx(), (r.scan_end - r.scan_slot) as usize);
        left.div_ceil(media.geo.slots_per_page) + extra_pages <= room
    }
}

/// A relocation's buffers, kept while its slab entry holds a zone reset.
type Buffers = (InFlight, Vec<u32>);

/// The jobs in flight, in a slab of reusable slots (a relocation's copy buffers keep
/// their capacity, also across a slot's zone resets).
#[derive(Clone, Default)]
pub struct Jobs {
    slab: Vec<Job>,
    free: Vec<JobId>,
    /// Buffers of relocations whose slots now hold zone resets.
    spare: Vec<Buffers>,
    /// Ids of live jobs, in start order.
    live: Vec<JobId>,
    /// (region, plane) pairs waiting for a background step.
    woken: Vec<(u8, PlaneId)>,
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

    fn start(&mut self, mut job: Job) -> JobId {
        let reuse = self.free.pop();
        if let Some(id) = reuse {
            if let Work::Relocation(old) = &mut self.slab[id.idx()].work {
                let copies = std::mem::take(&mut old.copies);
                let moved = std::mem::take(&mut old.moved);
                self.spare.push((copies, moved));
            }
        }
        if let Work::Relocation(r) = &mut job.work {
            if let Some((copies, moved)) = self.spare.pop() {
                (r.copies, r.moved) = (copies, moved);
            }
            r.moved.clear();
            r.copies.reset(r.scan_end);
        }
        let id = match reuse {
            Some(id) => {
                self.slab[id.idx()] = job;
                id
            }
            None => {
                self.slab.push(job);
                JobId::from_slab(self.slab.len() - 1)
            }
        };
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

    /// Relocation job `id`'s record (only relocations copy: a zone reset here is a bug).
    #[inline(always)]
    pub fn reloc(&self, id: JobId) -> &Relocation {
        match &self.slab[id.idx()].work {
            Work::Relocation(r) => r,
            Work::ZoneReset(_) => not_relocation(id),
        }
    }

    /// [`Jobs::reloc`], mutable.
    #[inline(always)]
    pub fn reloc_mut(&mut self, id: JobId) -> &mut Relocation {
        match &mut self.slab[id.idx()].work {
            Work::Relocation(r) => r,
            Work::ZoneReset(_) => not_relocation(id),
        }
    }

    /// The pacing ratio of GC job `id` ([`Relocation::ratio_x16`]).
    #[inline]
    pub fn gc_ratio_x16(&self, id: JobId) -> u32 {
        self.reloc(id).ratio_x16
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
    pub(super) fn wake(&mut self, media: &mut Media, r: u8, plane: PlaneId) {
        let rp = media.rp(r, plane);
        let ps = &mut media.ps[rp];
        if !ps.woken {
            ps.woken = true;
            self.woken.push((r, plane));
        }
    }

    /// Wake the job whose source is `block` (its erase may have been waiting for reads).
    pub(super) fn wake_block(&mut self, block: BlockId) {
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

    /// Wake every region and job of `plane` (a block was freed there).
    fn wake_plane_all(&mut self, media: &mut Media, plane: PlaneId) {
        for r in 0..media.regions.len() as u8 {
            self.wake(media, r, plane);
        }
        for i in 0..self.live.len() {
            let j = self.live[i];
            if self.get(j).plane == plane {
                self.wake_job(j);
            }
        }
    }

    /// Copies job `j` may issue now: the rest of its window (unlimited with an immediate
    /// sink or without a window).
    #[inline]
    fn window_room<S: NandSink>(&self, j: JobId) -> u32 {
        if S::IMMEDIATE || self.gc_window_pages == 0 {
            return u32::MAX;
        }
        self.gc_window_pages
            .saturating_sub(self.reloc(j).copies_in_flight)
    }

    /// Whether a wear-leveling migration or reliability job other than job `except` is
    /// under way in (region `r`, `plane`). One at a time: the plane's reserve holds one
    /// wear-stream block, and each keeps its source (full of data) out of GC's reach until
    /// it is done.
    pub(in crate::ftl) fn migrating(&self, r: u8, plane: PlaneId, except: JobId) -> bool {
        self.live.iter().any(|&o| {
            let job = self.get(o);
            o != except && job.moves_cold() && job.plane == plane && job.src_region == r
        })
    }

    /// Whether a block of (region `r`, `plane`) is on its way back to the free pool: an
    /// erase is running, or another job has copied everything and only waits for its
    /// copies or reads to finish before erasing, or a wear-leveling migration's open block
    /// holds the rest of its source (so waiting cannot deadlock).
    fn block_coming(&self, media: &Media, r: u8, plane: PlaneId, except: JobId) -> bool {
        media.ps[media.rp(r, plane)].erasing > 0
            || self.live.iter().any(|&o| {
                let job = self.get(o);
                o != except
                    && job.plane == plane
                    && job.src_region == r
                    && (job.scanned() || job.moves_cold() && job.migration_fits(media, 0))
            })
    }

    /// Start the erase of full `block` of region `r`, a reset zone's (no valid unit).
    pub(in crate::ftl) fn start_reset(
        &mut self,
        media: &mut Media,
        internal: &mut Option<String>,
        block: BlockId,
        r: u8,
    ) -> JobId {
        let plane = media.geo.plane_of_block(block);
        let valid = media.blocks.valid_units[block.idx()];
        media.regions[r as usize]
            .victims
            .remove(plane, block, valid);
        media.set_block_state(internal, block, BlockState::Full, BlockState::Victim);
        self.start(Job {
            src: block,
            plane,
            src_region: r,
            erase_issued: false,
            woken: false,
            work: Work::ZoneReset(ZoneReset {
                stepped: false,
                record_stream: Stream::gc(media.blocks.lane[block.idx()]),
            }),
        })
    }

    /// Start a job moving `src`'s valid units into region `dst`.
    pub(in crate::ftl) fn start_job(
        &mut self,
        media: &mut Media,
        internal: &mut Option<String>,
        kind: JobKind,
        src: BlockId,
        r: u8,
        dst: u8,
    ) -> JobId {
        // A retirement's source is the open block whose program failed.
        let from = if kind == JobKind::Retire {
            BlockState::Open
        } else {
            BlockState::Full
        };
        media.set_block_state(internal, src, from, BlockState::Victim);
        let dst_stream = match kind {
            JobKind::WearLeveling | JobKind::Reclaim | JobKind::Refresh => Stream::WEAR,
            _ if dst == r => Stream::gc(media.blocks.lane[src.idx()]),
            _ => Stream::INBOUND,
        };
        self.start(Job {
            src,
            plane: media.geo.plane_of_block(src),
            src_region: r,
            erase_issued: false,
            woken: false,
            work: Work::Relocation(Relocation {
                kind,
                dst_region: dst,
                dst_stream,
                scan_slot: 0,
                scan_end: media.blocks.programmed[src.idx()] * media.geo.slots_per_page,
                last_read_page: NONE,
                copies_in_flight: 0,
                copies: InFlight::default(),
                moved: Vec::new(),
                ratio_x16: 16,
            }),
        })
    }

    /// Start GC of `victim` (a full block of region `r`, out of its victim index) as
    /// its plane's GC job; the pacing ratio follows from its valid units.
    fn start_gc_job(
        &mut self,
        media: &mut Media,
        internal: &mut Option<String>,
        r: u8,
        victim: BlockId,
    ) -> (JobId, usize) {
        let region = &media.regions[r as usize];
        let (upb, dst) = (region.geo.units_per_block, region.geo.relocate_to);
        let v = media.blocks.valid_units[victim.idx()];
        let j = self.start_job(media, internal, JobKind::Gc, victim, r, dst);
        self.reloc_mut(j).ratio_x16 = (v * 16).div_ceil((upb - v).max(1)).max(1);
        let rp = media.blocks.rp[victim.idx()] as usize;
        media.ps[rp].gc_job = j;
        (j, rp)
    }
}

/// A relocation's record asked of a zone reset: a bug.
#[cold]
#[inline(never)]
fn not_relocation(id: JobId) -> ! {
    panic!("job {id} is a zone reset, not a relocation")
}

impl Ftl {
    /// A host page went to `plane` of region `r`: GC may be due there (inlined into every
    /// host-page search: a call per page costs more than its compares).
    #[inline(always)]
    pub(super) fn after_host_page(&mut self, r: u8, plane: PlaneId) {
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
            for p in (0..self.media.geo.planes).map(PlaneId) {
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
    fn step_plane<S: NandSink>(&mut self, r: u8, plane: PlaneId, sink: &mut S) -> Result<()> {
        if self.reliability_on() {
            self.start_reliability_job(r, plane, sink.now_ns());
        }
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
    fn start_gc(&mut self, r: u8, plane: PlaneId) -> Option<JobId> {
        let region = &mut self.media.regions[r as usize];
        let mut ctx = super::gc::SelectCtx {
            blocks: &self.media.blocks,
            plane,
            max_valid: region.max_victim_valid,
            units_per_block: region.geo.units_per_block,
            now_seq: self.media.program_seq,
            rng: &mut self.rng,
        };
        let Some(victim) = region.victims.select(&mut ctx) else {
            let rp = self.media.rp(r, plane);
            self.media.ps[rp].starved = true;
            return None;
        };
        if !region.wear.is_none() {
            let ctx = WearCtx {
                blocks: &self.media.blocks,
                shape: &region.wear_shape,
                plane,
                after_gc: false,
            };
            region.wear.on_gc_scan(&ctx);
        }
        self.counters.gc_invocations += 1;
        let (j, rp) = self
            .jobs
            .start_gc_job(&mut self.media, &mut self.internal, r, victim);
        self.refresh_pressure(rp);
        Some(j)
    }

    /// Start GC on `victim` (a full block of region `r`, in no victim index): a recovery's
    /// first victim on a plane the cut left without a free block.
    pub(in crate::ftl) fn start_gc_on(&mut self, r: u8, victim: u32) {
        self.counters.gc_invocations += 1;
        self.jobs
            .start_gc_job(&mut self.media, &mut self.internal, r, BlockId(victim));
    }

    /// Step job `j`: a relocation copies; then the source is erased (or retired) once
    /// nothing of it is in flight.
    fn advance<S: NandSink>(&mut self, j: JobId, sink: &mut S) -> Result<()> {
        let job = self.jobs.get(j);
        if job.erase_issued {
            return Ok(());
        }
        let src = job.src;
        if self.media.blocks.pins[src.idx()] > 0 && self.durable.trims.is_some() {
            // Durable trims: a batch not yet recorded may pin the source; record it now,
            // in the job's destination (its first page, or the one after its copies).
            self.unpin_for_gc(j, src, sink)?;
        }
        let kind = match &mut self.jobs.get_mut(j).work {
            Work::Relocation(r) => Some(r.kind),
            Work::ZoneReset(z) => {
                z.stepped = true;
                None
            }
        };
        if kind.is_some() {
            let r = self.jobs.reloc(j);
            if r.scan_slot < r.scan_end && self.copy_run(j, sink)? != Copy::Done {
                return Ok(());
            }
            if self.jobs.reloc(j).copies_in_flight > 0 {
                return Ok(());
            }
        }
        if self.media.blocks.pins[src.idx()] > 0 {
            return Ok(());
        }
        if let Some(kind) = kind {
            self.relocation_updates(j)?;
            if kind == JobKind::Retire {
                debug_assert_eq!(self.media.blocks.valid_units[src.idx()], 0);
                self.jobs.get_mut(j).erase_issued = true;
                self.retire(src, BlockState::Victim);
                self.end_job(j);
                return Ok(());
            }
        }
        self.erase_source(j, sink)
    }

    /// Every copy of job `j` is done and no read of its source is queued: erase it.
    fn erase_source<S: NandSink>(&mut self, j: JobId, sink: &mut S) -> Result<()> {
        let job = self.jobs.get_mut(j);
        job.erase_issued = true;
        let (src, cause) = (job.src, job.cause());
        let (r, plane) = (job.src_region, job.plane);
        debug_assert_eq!(
            self.media.blocks.valid_units[src.idx()],
            0,
            "source still holds data"
        );
        if self.media.blocks.pins[src.idx()] != 0 {
            self.internal_error(format!("erase of block {src} with a read pinned"));
        }
        self.media.set_block_state(
            &mut self.internal,
            src,
            BlockState::Victim,
            BlockState::Erasing,
        );
        // The plane may choose its next victim while this erase runs (in the timed mode the
        // choice would otherwise lag the functional mode's by an erase time).
        let rp = self.media.rp(r, plane);
        self.media.ps[rp].erasing += 1;
        if self.media.ps[rp].gc_job == j {
            self.media.ps[rp].gc_job = JobId::NONE;
            let (r, plane) = (self.media.ps[rp].region, self.media.ps[rp].plane);
            self.jobs.wake(&mut self.media, r, plane);
        }
        self.refresh_pressure(rp);
        let mut op = NandOp::new(OpKind::Erase, cause, src, 0, 0, Owner::Job { job: j });
        if self.health.draw_erase_failure() {
            op.flags = OP_FAILS;
        }
        self.issue(sink, op)
    }

    /// Job `j` is over: free its slot and wake what may have waited for it.
    fn end_job(&mut self, j: JobId) {
        let job = self.jobs.get(j);
        debug_assert!(
            job.relocation().is_none_or(|r| r.copies.is_empty()),
            "job {j} ends with copies in flight"
        );
        let (r, plane) = (job.src_region, job.plane);
        let rp = self.media.rp(r, plane);
        if self.media.ps[rp].urgent_relocation {
            self.reliability_job_ended(j);
        }
        let ps = &mut self.media.ps[rp];
        if ps.gc_job == j {
            ps.gc_job = JobId::NONE;
            self.refresh_pressure(rp);
        }
        if !self.jobs.end(j) {
            self.internal_error(format!("job {j} ended twice"));
        }
        self.jobs.wake_plane_all(&mut self.media, plane);
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
        self.media.blocks.note_erased(block);
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
            self.media.oob.lpn[first..first + n].fill(OobWord::NONE);
        }
        let Owner::Job { job } = op.owner else {
            return Err(SimError::Internal {
                what: format!("erase of block {block} has no job"),
            });
        };
        let plane = self.media.geo.plane_of_block(block);
        let r = self.media.blocks.region[b] as usize;
        let after_gc = self.jobs.get(job).is(JobKind::Gc);
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
                    plane,
                    after_gc,
                };
                region.wear.on_erase(block, &ctx)
            };
            match action {
                WearAction::Migrate { from, into }
                    if migratable(&self.media, from, r as u8, plane)
                        && !self.jobs.migrating(r as u8, plane, job) =>
                {
                    self.start_migration(from, r as u8, into, block);
                }
                _ => self.free_block(block),
            }
        }
        self.end_job(job);
        if self.durable.trims.is_some() {
            self.record_wanted(sink)?;
        }
        Ok(())
    }

    /// Return erased `block` (its erase done: state `Free`) to its pool.
    fn free_block(&mut self, block: BlockId) {
        let b = block.idx();
        if self.media.blocks.state[b] != BlockState::Free {
            let s = self.media.blocks.state[b];
            self.internal_error(format!("block {block} joins its free pool in state {s:?}"));
        }
        let rp = self.media.blocks.rp[b] as usize;
        self.media.ps[rp]
            .free
            .push(block, self.media.blocks.erase_count[b]);
        self.refresh_pressure(rp);
    }

    /// Start a wear-leveling migration of `from`. When the policy names the block just
    /// erased (`into == erased`), the plane's wear stream has no open block and the stream
    /// could take a block from the pool ([`PlaneState::reserve_for`]), that block becomes
    /// the stream's open block, so the cold data lands in it; otherwise the erased block
    /// returns to the pool and the wear stream takes blocks as usual.
    fn start_migration(&mut self, from: BlockId, r: u8, into: BlockId, erased: BlockId) {
        let plane = self.media.geo.plane_of_block(from);
        let rp = self.media.rp(r, plane);
        let ps = &mut self.media.ps[rp];
        if into == erased
            && ps.open.get(Stream::WEAR).is_none()
            && ps.free.len() >= ps.reserve_for(Stream::WEAR)
        {
            ps.open.set(Stream::WEAR, erased);
            let b = erased.idx();
            self.media.set_block_state(
                &mut self.internal,
                erased,
                BlockState::Free,
                BlockState::Open,
            );
            self.media.blocks.next_page[b] = 0;
            self.media.blocks.programmed[b] = 0;
        } else {
            self.free_block(erased);
        }
        let valid = self.media.blocks.valid_units[from.idx()];
        self.media.regions[r as usize]
            .victims
            .remove(plane, from, valid);
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
            BlockId(block),
            r,
            dst,
        );
        self.jobs.wake_job(j);
        Ok(())
    }
}

/// Whether wear leveling may migrate `block` (a full block of region `r` in `plane`).
fn migratable(media: &Media, block: BlockId, r: u8, plane: PlaneId) -> bool {
    block.idx() < media.blocks.len()
        && media.blocks.state[block.idx()] == BlockState::Full
        && media.blocks.region[block.idx()] == r
        && media.geo.plane_of_block(block) == plane
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job on block `src` of plane 0 doing `work`.
    fn job(src: u32, work: Work) -> Job {
        Job {
            src: BlockId(src),
            plane: PlaneId(0),
            src_region: 0,
            erase_issued: false,
            woken: false,
            work,
        }
    }

    fn relocation(src: u32, slots: u32) -> Job {
        job(
            src,
            Work::Relocation(Relocation {
                kind: JobKind::Gc,
                dst_region: 0,
                dst_stream: Stream::GC,
                scan_slot: 0,
                scan_end: slots,
                last_read_page: NONE,
                copies_in_flight: 0,
                copies: InFlight::default(),
                moved: Vec::new(),
                ratio_x16: 16,
            }),
        )
    }

    fn reset(src: u32) -> Job {
        job(
            src,
            Work::ZoneReset(ZoneReset {
                stepped: false,
                record_stream: Stream::GC,
            }),
        )
    }

    /// Zone resets and relocations share one id space; a relocation's buffers survive its
    /// slot's turn as a zone reset (no allocation per job once warm), and start empty.
    #[test]
    fn resets_share_ids_and_keep_relocation_buffers() {
        let mut jobs = Jobs::new(0);
        let a = jobs.start(relocation(1, 640));
        jobs.reloc_mut(a).moved.extend(0..100);
        let cap = jobs.reloc(a).moved.capacity();
        let b = jobs.start(reset(2));
        assert_ne!(a, b);
        assert!(jobs.get(b).relocation().is_none());
        assert!(jobs.end(a));
        let c = jobs.start(reset(3));
        assert_eq!(c, a, "the freed slot is reused by a reset");
        assert!(jobs.end(c) && jobs.end(b));
        let d = jobs.start(relocation(4, 640));
        let r = jobs.reloc(d);
        assert!(r.moved.is_empty() && r.copies.is_empty());
        assert_eq!(r.moved.capacity(), cap, "the buffers came back");
        assert_eq!(jobs.live(), &[d]);
        jobs.wake_block(BlockId(4));
        assert!(jobs.get(d).woken);
    }
}
