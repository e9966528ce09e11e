//! The copy machinery of relocation jobs: scanning a source for valid units, gathering
//! them into pages, copy runs (general, and the functional mode's bulk run), choosing the
//! destination, the copies in flight ([`InFlight`]) and their completion-time re-mapping.
//! The job lifecycle (when a job starts, advances, ends) is `jobs/mod.rs`.

use super::{Job, JobKind, Relocation};
use crate::config::FastDiv;
use crate::error::{Result, SimError};
use crate::flash::{BlockState, Cause, NandOp, Oob, OpKind, Owner, OP_FAILS};
use crate::ftl::prefetch_pays;
use crate::ftl::region::Stream;
use crate::ftl::translation::TRANS_TAG;
use crate::ftl::{Ftl, FtlCounters, Media, NandSink};
use crate::ids::{BlockId, JobId, Lpn, SlotId};
use crate::policy::mapping::MapEntry;

/// The source slots of a job's copies whose program has not completed: a bit per slot
/// offset of the source block (a job scans its source forward and its copies complete in
/// issue order, so the set bits in offset order are the copies in order). A copy's
/// destination follows from its program (page slot + its place in the page) and its unit
/// from the source's OOB entry at completion: a source is a job's, never programmed
/// again before its erase, so its slot still names the unit unless the unit was rewritten
/// or trimmed since (then its valid bit is clear). A few hundred bytes per job where a record per copy
/// (written when a victim's copies are queued, read a program time later) streamed tens
/// of KiB per victim through the caches.
#[derive(Clone, Debug, Default)]
pub struct InFlight {
    words: Vec<u64>,
    /// First word that may hold a set bit (bits below are clear: taken in order).
    next_word: u32,
    len: u32,
}

impl InFlight {
    /// Empty, for a source of `slots` slots.
    pub(super) fn reset(&mut self, slots: u32) {
        self.words.clear();
        self.words.resize(slots.div_ceil(64) as usize, 0);
        self.next_word = 0;
        self.len = 0;
    }

    /// A copy of the unit at slot offset `offset` was issued (after every offset pushed
    /// before).
    #[inline(always)]
    fn push(&mut self, offset: u32) {
        self.words[(offset >> 6) as usize] |= 1 << (offset & 63);
        self.len += 1;
    }

    /// The oldest copy's slot offset, taken.
    #[inline(always)]
    fn pop(&mut self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let mut w = self.next_word as usize;
        while self.words[w] == 0 {
            w += 1;
        }
        let bit = self.words[w].trailing_zeros();
        self.words[w] &= self.words[w] - 1;
        self.next_word = w as u32;
        self.len -= 1;
        Some(w as u32 * 64 + bit)
    }

    /// Call `f(i, offset)` for the `n` oldest copies (fewer when fewer are in flight),
    /// `i` counting from 0, in order (not taken).
    #[inline(always)]
    fn for_oldest(&self, n: usize, mut f: impl FnMut(usize, u32)) {
        let n = n.min(self.len as usize);
        let mut i = 0;
        let mut w = self.next_word as usize;
        while i < n {
            let mut bits = self.words[w];
            while bits != 0 && i < n {
                f(i, w as u32 * 64 + bits.trailing_zeros());
                bits &= bits - 1;
                i += 1;
            }
            w += 1;
        }
    }

    /// Copies whose program has not completed.
    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Up to a page of a source's next valid units: offsets in the block and units.
struct Gathered {
    n: usize,
    offsets: [u32; crate::MAX_SLOTS_PER_PAGE],
    lpns: [Lpn; crate::MAX_SLOTS_PER_PAGE],
}

impl Default for Gathered {
    fn default() -> Self {
        Gathered {
            n: 0,
            offsets: [0; crate::MAX_SLOTS_PER_PAGE],
            lpns: [Lpn(0); crate::MAX_SLOTS_PER_PAGE],
        }
    }
}

impl Gathered {
    /// Gather up to `spp` valid units of the block at `base` from slot offset `scan`
    /// (before `end`); returns the offset after the last one taken (`end` when fewer).
    #[inline(always)]
    fn gather(&mut self, oob: &Oob, base: usize, scan: u32, end: u32, spp: u32) -> u32 {
        self.n = 0;
        let spp = spp as usize;
        let end = base + end as usize;
        let mut slot = base + scan as usize;
        while slot < end {
            let (w, mut bits) = oob.valid_bits_from(slot, end);
            while bits != 0 {
                let s = Oob::slot_of(w, bits.trailing_zeros());
                bits &= bits - 1;
                self.offsets[self.n] = (s - base) as u32;
                self.lpns[self.n] = Lpn(oob.lpn[s].get());
                self.n += 1;
                if self.n == spp {
                    return (s + 1 - base) as u32;
                }
            }
            slot = Oob::slot_of(w + 1, 0);
        }
        (end - base) as u32
    }
}

/// A job's scan state, held in locals while it copies.
struct Cursor {
    src: BlockId,
    scan: u32,
    end: u32,
    read_page: u32,
    kind: JobKind,
    cause: Cause,
    /// Copies that may still be issued in this run (the window's room).
    room: u32,
    /// The source is a translation block.
    translation: bool,
    /// The job moves units into another region (a migration).
    cross: bool,
    /// (Region, plane) index of the source, and units moved in this run.
    src_rp: u32,
    moved: u64,
}

impl Cursor {
    fn of(job: &Job, reloc: &Relocation, room: u32, translation_region: u8, planes: u32) -> Cursor {
        Cursor {
            translation: job.src_region == translation_region,
            cross: job.src_region != reloc.dst_region,
            src_rp: job.src_region as u32 * planes + job.plane.0,
            moved: 0,
            src: job.src,
            scan: reloc.scan_slot,
            end: reloc.scan_end,
            read_page: reloc.last_read_page,
            kind: reloc.kind,
            cause: reloc.kind.cause(),
            room,
        }
    }

    /// Count `n` units moved by this job in a page of `spp` slots.
    #[inline]
    fn count(&mut self, counters: &mut FtlCounters, n: u32, spp: u32) {
        self.moved += n as u64;
        match self.kind {
            _ if self.translation => {
                counters.translation.gc_copied_units += n as u64;
                counters.translation.gc_programs += 1;
            }
            JobKind::Gc => counters.gc_copied_units += n as u64,
            JobKind::WearLeveling => counters.wear_leveling_units += n as u64,
            JobKind::Retire => counters.retired_units_moved += n as u64,
        }
        counters.padding_units += (spp - n) as u64;
    }
}

/// Mapping tables of more units than this (16 MiB) outgrow the caches: loops prefetch.
pub const PREFETCH_MIN_UNITS: usize = 1 << 22;

/// The scan of a plain copy run ([`Ftl::copy_run_plain`]) over the OOB slots of its source.
struct PlainRun {
    /// Next slot to look at and the end of the source's programmed slots (absolute).
    scan: usize,
    end: usize,
    /// First slot of the source, and slots per page.
    base: usize,
    spp: usize,
    spp_div: FastDiv,
    /// Source page last read, and pages read in this run.
    read_page: u32,
    reads: u64,
    /// Prefetch mapping entries ahead (a table larger than the caches).
    prefetch: bool,
}

impl PlainRun {
    /// How far ahead in the source the copy loop prefetches mapping entries.
    const PREFETCH_SLOTS: usize = 16;

    /// Move the next `n` valid units into slots `dst..dst + n`: OOB and mapping; every
    /// source page is read once, when its first unit is taken. Not inlined into the job
    /// step: measured faster that way (functional bench, alternating runs).
    #[inline(never)]
    fn copy(&mut self, oob: &mut Oob, l2p: &mut [MapEntry], dst: usize, n: usize) {
        if self.prefetch {
            self.copy_prefetching(oob, l2p, dst, n);
        } else {
            self.copy_words(oob, l2p, dst, n);
        }
        oob.set_valid(dst, n);
    }

    /// [`PlainRun::copy`] for a table that fits the caches: a word of valid bits at a
    /// time, taking its set bits in order (no test per slot; a branch per valid unit
    /// that the CPU predicts but for a word's last).
    #[inline(always)]
    fn copy_words(&mut self, oob: &mut Oob, l2p: &mut [MapEntry], dst: usize, n: usize) {
        // The loop state in locals (registers), written back once.
        let (mut slot, mut reads, mut read_page) = (self.scan, self.reads, self.read_page);
        let (base, src_end, spp, spp_div) = (self.base, self.end, self.spp, self.spp_div);
        let end = dst + n;
        let mut d = dst;
        while d < end {
            debug_assert!(slot < src_end, "fewer valid units than the block's count");
            let (w, all) = oob.valid_bits_from(slot, src_end);
            let mut bits = all;
            while bits != 0 && d < end {
                let s = Oob::slot_of(w, bits.trailing_zeros());
                bits &= bits - 1;
                let lpn = oob.lpn[s];
                l2p[lpn.get() as usize].set(SlotId(d as u32));
                oob.lpn[d] = lpn;
                let page = if spp == 1 {
                    (s - base) as u32
                } else {
                    spp_div.div((s - base) as u32)
                };
                reads += (page != read_page) as u64;
                read_page = page;
                d += 1;
                slot = s + 1;
            }
            oob.clear_bits(w, all ^ bits);
            if bits == 0 && d < end {
                slot = Oob::slot_of(w + 1, 0);
            }
        }
        (self.scan, self.reads, self.read_page) = (slot, reads, read_page);
    }

    /// [`PlainRun::copy`] for a table larger than the caches: one pass that asks for the
    /// mapping entries of the units a few slots on (the loop waits on memory, not on
    /// branches).
    #[inline(always)]
    fn copy_prefetching(&mut self, oob: &mut Oob, l2p: &mut [MapEntry], dst: usize, n: usize) {
        let (mut slot, mut reads, mut read_page) = (self.scan, self.reads, self.read_page);
        let (base, spp, spp_div) = (self.base, self.spp, self.spp_div);
        let end = dst + n;
        let mut d = dst;
        while d < end {
            let ahead = slot + Self::PREFETCH_SLOTS;
            if ahead < self.end && oob.is_valid(ahead) {
                crate::prefetch::prefetch(l2p, oob.lpn[ahead].get() as usize);
            }
            if oob.is_valid(slot) {
                let lpn = oob.lpn[slot];
                let page = spp_div.div((slot - base) as u32);
                reads += (spp == 1 || page != read_page) as u64;
                read_page = page;
                l2p[lpn.get() as usize].set(SlotId(d as u32));
                oob.clear(slot);
                oob.lpn[d] = lpn;
                d += 1;
            }
            slot += 1;
        }
        (self.scan, self.reads, self.read_page) = (slot, reads, read_page);
    }
}

/// Why a copy run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Copy {
    /// Nothing valid left to copy.
    Done,
    /// Units wait, but the window of copies in flight is full.
    WindowFull,
    /// The destination has no free page now.
    NoRoom,
}

impl Ftl {
    /// Copy job `j`'s source page by page while its window and the destination allow.
    /// The job's scan state lives in `c` for the run and is written back at its end.
    pub(super) fn copy_run<S: NandSink>(&mut self, j: JobId, sink: &mut S) -> Result<Copy> {
        if S::IMMEDIATE && self.plain_copies(j) && self.copy_run_plain(j, sink)? == Copy::Done {
            return Ok(Copy::Done);
        }
        let mut c = Cursor::of(
            self.jobs.get(j),
            self.jobs.reloc(j),
            self.jobs.window_room::<S>(j),
            self.trans.region,
            self.media.geo.planes,
        );
        let base = self.media.geo.first_slot_of_block(c.src).idx();
        let mut page = Gathered::default();
        let stop = loop {
            // Look ahead (no side effects yet): up to a page of the next valid units.
            let next = page.gather(
                &self.media.oob,
                base,
                c.scan,
                c.end,
                self.media.geo.slots_per_page,
            );
            if page.n == 0 {
                c.scan = c.end;
                break Copy::Done;
            }
            if c.room == 0 {
                break Copy::WindowFull;
            }
            let Some(dst) = self.copy_target(j, &c, sink)? else {
                break Copy::NoRoom;
            };
            self.move_units(j, &mut c, &page, dst, sink)?;
            c.scan = next;
            if !S::IMMEDIATE && prefetch_pays(self.media.logical_units) {
                // The next copy's look-ahead, a program time on, reads on from here.
                crate::prefetch::prefetch(&self.media.oob.lpn, base + next as usize + 8);
            }
            let n = page.n as u32;
            c.room -= 1;
            c.count(&mut self.counters, n, self.media.geo.slots_per_page);
            let op = NandOp::new(
                OpKind::Program,
                c.cause,
                dst.0,
                dst.1,
                n,
                Owner::Job { job: j },
            );
            if !S::IMMEDIATE {
                self.jobs.reloc_mut(j).copies_in_flight += 1;
            }
            self.issue(sink, op)?;
        };
        let job = self.jobs.reloc_mut(j);
        job.scan_slot = c.scan;
        job.last_read_page = c.read_page;
        self.media.ps[c.src_rp as usize].relocated_units += c.moved;
        if c.cross {
            self.counters.journal.migrated_units += c.moved;
        }
        Ok(stop)
    }

    /// Whether job `j`'s copies need no work per unit beyond the re-mapping: the bulk
    /// paths may run ([`Ftl::per_unit_features`]) and the job stays in its region (a
    /// migration counts its units); [`Ftl::copy_run_plain`] applies.
    #[inline]
    fn plain_copies(&self, j: JobId) -> bool {
        self.bulk && self.jobs.get(j).src_region == self.jobs.reloc(j).dst_region
    }

    /// `copy_run` for an immediate sink and a plain job ([`Ftl::plain_copies`]): the same
    /// copies, pages and counts, done a destination block at a time — every destination
    /// page but a job's last holds a full page of units, so the pages a run needs follow
    /// from the source's valid count — with the reads and programs handed to the sink in
    /// bulk (functional mode's hot loop). Stops when the source is done or the destination
    /// has no free page; the general loop then decides what the latter means.
    fn copy_run_plain<S: NandSink>(&mut self, j: JobId, sink: &mut S) -> Result<Copy> {
        let (src, plane) = (self.jobs.get(j).src, self.jobs.get(j).plane);
        let job = self.jobs.reloc(j);
        let (dst_r, stream, kind) = (job.dst_region, job.dst_stream, job.kind);
        let spp = self.media.geo.slots_per_page;
        let base = self.media.geo.first_slot_of_block(src).idx();
        let mut run = PlainRun {
            scan: base + job.scan_slot as usize,
            end: base + job.scan_end as usize,
            base,
            spp: spp as usize,
            spp_div: FastDiv::new(spp),
            read_page: job.last_read_page,
            reads: 0,
            prefetch: prefetch_pays(self.media.logical_units),
        };
        let mut units = 0u64;
        let stop = loop {
            let left = self.media.blocks.valid_units[src.idx()];
            if left == 0 {
                run.scan = run.end;
                break Copy::Done;
            }
            let Some((db, page, pages)) = self.take_pages(dst_r, plane, stream, left.div_ceil(spp))
            else {
                break Copy::NoRoom;
            };
            self.media.program_seq += pages as u64;
            let dst = self.media.page_slot(db, page).idx();
            let n = (pages * spp).min(left);
            run.copy(
                &mut self.media.oob,
                self.media.table.slots_mut(),
                dst,
                n as usize,
            );
            transfer_valid(&mut self.media, src, db, n);
            self.counters.padding_units += (pages * spp - n) as u64;
            units += n as u64;
            let op = NandOp::new(
                OpKind::Program,
                kind.cause(),
                db,
                page,
                spp,
                Owner::Job { job: j },
            );
            self.issue_times(sink, op, pages as u64);
            self.pages_programmed(db, pages, sink.now_ns());
        };
        let read = NandOp::new(OpKind::Read, kind.cause(), src, 0, 0, Owner::Job { job: j });
        self.issue_times(sink, read, run.reads);
        match kind {
            JobKind::Gc => self.counters.gc_copied_units += units,
            JobKind::WearLeveling => self.counters.wear_leveling_units += units,
            JobKind::Retire => self.counters.retired_units_moved += units,
        }
        let rp = self.media.blocks.rp[src.idx()] as usize;
        self.media.ps[rp].relocated_units += units;
        let job = self.jobs.reloc_mut(j);
        job.scan_slot = (run.scan - base) as u32;
        job.last_read_page = run.read_page;
        Ok(stop)
    }

    /// A destination page for the next copy of job `j`; injected program failures are
    /// drawn here: a failing attempt is issued (it costs its time), its block is doomed,
    /// and the next page is taken.
    #[inline(always)]
    fn copy_target<S: NandSink>(
        &mut self,
        j: JobId,
        c: &Cursor,
        sink: &mut S,
    ) -> Result<Option<(BlockId, u32)>> {
        loop {
            let Some((block, page)) = self.copy_destination(j)? else {
                return Ok(None);
            };
            self.media.program_seq += 1;
            if !self.health.draw_program_failure() {
                return Ok(Some((block, page)));
            }
            self.doom(block);
            let mut op = NandOp::new(
                OpKind::Program,
                c.cause,
                block,
                page,
                0,
                Owner::Job { job: j },
            );
            op.flags = OP_FAILS;
            if !S::IMMEDIATE {
                self.jobs.reloc_mut(j).copies_in_flight += 1;
            }
            self.issue(sink, op)?;
        }
    }

    /// Read and relocate the gathered units `g` of the source into page `dpage` of block
    /// `db`: each source page is read when its first unit is taken; units are re-mapped
    /// now (immediate sink) or when the program completes.
    #[inline(always)]
    fn move_units<S: NandSink>(
        &mut self,
        j: JobId,
        c: &mut Cursor,
        g: &Gathered,
        (db, dpage): (BlockId, u32),
        sink: &mut S,
    ) -> Result<()> {
        let base = self.media.geo.first_slot_of_block(c.src);
        self.read_sources(j, c, g, sink)?;
        let dst = self.media.page_slot(db, dpage);
        if S::IMMEDIATE {
            for k in 0..g.n {
                let (src, dst) = (base + g.offsets[k], dst + k as u32);
                self.remap_unit(j, src, dst, g.lpns[k]);
            }
            transfer_valid(&mut self.media, c.src, db, g.n as u32);
            return Ok(());
        }
        let copies = &mut self.jobs.reloc_mut(j).copies;
        for &offset in &g.offsets[..g.n] {
            copies.push(offset);
        }
        Ok(())
    }

    /// Issue the reads of the source pages the gathered units `g` lie in, each page once
    /// (when its first unit is taken); count migrated journal units.
    #[inline(always)]
    fn read_sources<S: NandSink>(
        &mut self,
        j: JobId,
        c: &mut Cursor,
        g: &Gathered,
        sink: &mut S,
    ) -> Result<()> {
        let spp = self.media.geo.slots_per_page;
        let base = self.media.geo.first_slot_of_block(c.src);
        let mut page_end = 0;
        for k in 0..g.n {
            let offset = g.offsets[k];
            if offset >= page_end {
                let page = self.media.geo.div_slots_per_page(offset);
                page_end = (page + 1) * spp;
                if page != c.read_page {
                    c.read_page = page;
                    let first = (base + page * spp).idx();
                    let valid = self.media.oob.count_valid(first, spp as usize);
                    let op = NandOp::new(
                        OpKind::Read,
                        c.cause,
                        c.src,
                        page,
                        valid,
                        Owner::Job { job: j },
                    );
                    self.issue(sink, op)?;
                }
            }
            if c.cross {
                self.count_journal_migration(base + offset);
            }
        }
        Ok(())
    }

    /// Point the still-valid unit `lpn` in slot `src` at `dst` (mapping or GTD, OOB,
    /// integrity); the block and plane counts move per page ([`transfer_valid`]).
    #[inline(always)]
    fn remap_unit(&mut self, j: JobId, src: SlotId, dst: SlotId, lpn: Lpn) {
        let tagged = lpn.0;
        if tagged & TRANS_TAG == 0 {
            let old = self.media.table.update(lpn, dst);
            debug_assert_eq!(old, src);
            if self.trans.active() {
                self.note_moved(j, tagged);
            }
            if let Some(check) = self.integrity.as_mut() {
                let v = self.media.oob.version[src.idx()];
                self.media.oob.version[dst.idx()] = v;
                check.on_place(tagged, src.0, dst.0, v);
                if let Some(d) = self.durable.data.as_mut() {
                    d.copy(src.0, dst.0);
                }
            }
        } else if super::super::is_record(tagged) {
            self.record_relocated(tagged, src, dst);
        } else {
            self.relocate_tpage(tagged, dst);
        }
        self.media.oob.clear(src.idx());
        self.media.oob.store(dst.idx(), tagged);
    }

    /// A migration moves the unit in `slot`: count it when it lies in the workload's
    /// journal range.
    #[cold]
    fn count_journal_migration(&mut self, slot: SlotId) {
        if let Some((lo, hi)) = self.placer.journal_truth {
            let lpn = self.media.oob.lpn[slot.idx()].get();
            if lpn >= lo && lpn < hi {
                self.counters.journal.journal_units_migrated += 1;
            }
        }
    }

    /// The next destination page of job `j`, or `None` when its region has no room now.
    #[inline(always)]
    fn copy_destination(&mut self, j: JobId) -> Result<Option<(BlockId, u32)>> {
        let (plane, src_region) = (self.jobs.get(j).plane, self.jobs.get(j).src_region);
        let job = self.jobs.reloc(j);
        let (dst, stream) = (job.dst_region, job.dst_stream);
        match self.take_page(dst, plane, stream) {
            Some(p) => Ok(Some(p)),
            None if dst != src_region => {
                // The destination region must collect first; it wakes this job when it has.
                self.jobs.wake(&mut self.media, dst, plane);
                Ok(None)
            }
            // A migration leaves the GC reserve to a running GC job: it waits until a
            // block is freed (`end_job` wakes the plane's jobs then).
            None if stream == Stream::WEAR => Ok(None),
            None if self.jobs.block_coming(&self.media, dst, plane, j) => {
                // An erase under way here returns a block; `end_job` wakes this job then.
                Ok(None)
            }
            None => {
                // Blocks lost to wear: retired, or doomed by a failed program and waiting
                // for their retirement (a failed copy closes its block: the retry took the
                // plane's last block; swarm seeds 3081, 7931).
                if self.counters.blocks_retired > 0 || self.counters.program_failures > 0 {
                    let ps = &self.media.ps[self.media.rp(dst, plane)];
                    let why = format!(
                        "plane {plane} has no free block left for GC copies ({} usable blocks, {} valid units)",
                        ps.usable_blocks, ps.valid_units
                    );
                    self.health.fail(why);
                    Ok(None)
                } else {
                    Err(SimError::DeviceFull(format!(
                        "plane {plane} of region {:?} has no free block for GC copies",
                        self.media.regions[dst as usize].geo.name
                    )))
                }
            }
        }
    }

    /// A copy program `op` of job `j` completed (timed mode; failed attempts too): its
    /// units are re-mapped, and the job woken when it may have work.
    #[inline(always)]
    pub(in crate::ftl) fn copy_programmed(&mut self, j: JobId, op: &NandOp) {
        if !op.fails() {
            self.apply_copies(j, op);
        }
        let job = self.jobs.reloc_mut(j);
        job.copies_in_flight -= 1;
        // A job that has issued every copy and still has some in flight has nothing to do
        // until its last one completes (its step would return).
        if job.copies_in_flight == 0 || job.scan_slot < job.scan_end {
            self.jobs.wake_job(j);
        }
    }

    /// The copy program `op` of job `j` completed: re-map its units. A unit rewritten or
    /// trimmed since its copy was issued (its source slot's valid bit cleared) stays where
    /// the host put it; the others are re-mapped, and the valid counts of source and
    /// destination move once for the page (the source is a job's, in no victim index: a
    /// plain transfer of validity, without the general invalidation path).
    fn apply_copies(&mut self, j: JobId, op: &NandOp) {
        let src_block = self.jobs.get(j).src;
        let base = self.media.geo.first_slot_of_block(src_block);
        let dst = self.media.page_slot(op.block, op.page);
        // The page's copies, oldest first (taken before any is applied: re-mapping does
        // not touch them).
        let mut offsets = [0u32; crate::MAX_SLOTS_PER_PAGE];
        let copies = &mut self.jobs.reloc_mut(j).copies;
        let mut n = 0;
        while n < op.units as usize {
            let Some(offset) = copies.pop() else {
                break;
            };
            offsets[n] = offset;
            n += 1;
        }
        let mut moved = 0;
        for (k, &offset) in offsets[..n].iter().enumerate() {
            let k = k as u32;
            let src = base + offset;
            let Some(lpn) = self.media.oob.unit(src.idx()) else {
                continue; // rewritten or trimmed since the copy was issued
            };
            debug_assert!(lpn & TRANS_TAG != 0 || self.media.table.lookup(Lpn(lpn)) == src);
            debug_assert_eq!(self.media.blocks.state[src_block.idx()], BlockState::Victim);
            self.remap_unit(j, src, dst + k, Lpn(lpn));
            moved += 1;
        }
        if moved > 0 {
            transfer_valid(&mut self.media, src_block, op.block, moved);
        }
        if prefetch_pays(self.media.logical_units) {
            self.jobs
                .reloc(j)
                .prefetch_copies(&self.media, base.0, dst.0);
        }
    }
}

impl Relocation {
    /// Large tables: prepare the copies that complete next (a job's copies complete in
    /// order, a program time apart; between a copy's issue and its completion the caches
    /// turn over), once the copy whose program completed into the page at `dst` is
    /// applied; `base` is the source's first slot. For the next copy: its mapping
    /// entries, named by their source OOB entries (whose lines were asked for a completion
    /// ago), so the misses overlap; for the copy after that, its source OOB lines; and the
    /// destination OOB line two pages on.
    #[inline(always)]
    fn prefetch_copies(&self, media: &Media, base: u32, dst: u32) {
        let l2p = media.table.slots();
        let oob = &media.oob.lpn;
        let spp = media.geo.slots_per_page as usize;
        self.copies.for_oldest(2 * spp, |i, offset| {
            let src = (base + offset) as usize;
            if i >= spp {
                crate::prefetch::prefetch(oob, src);
                return;
            }
            // A data unit (`NONE` carries the tag bit too); a stale one only wastes a prefetch.
            let lpn = oob[src].get();
            if lpn & TRANS_TAG == 0 {
                crate::prefetch::prefetch(l2p, lpn as usize);
            }
        });
        crate::prefetch::prefetch(oob, dst as usize + 2 * spp);
    }
}

/// `n` valid units moved from block `sb` to block `db` (the blocks' and, across
/// regions, the region-planes' counts).
#[inline(always)]
fn transfer_valid(media: &mut Media, sb: BlockId, db: BlockId, n: u32) {
    media.blocks.valid_units[sb.idx()] -= n;
    media.blocks.valid_units[db.idx()] += n;
    let (rs, rd) = (media.blocks.rp[sb.idx()], media.blocks.rp[db.idx()]);
    if rs != rd {
        media.ps[rs as usize].valid_units -= n as u64;
        media.ps[rd as usize].valid_units += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::InFlight;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    proptest! {
        /// The bit set gives the offsets pushed, oldest first, exactly as a queue of them
        /// would (offsets pushed in increasing order, as a job's scan gathers them).
        #[test]
        fn in_flight_copies_come_back_in_order(
            steps in proptest::collection::vec((1u32..200, 0u32..6, any::<bool>()), 1..300),
        ) {
            let slots = 40_000;
            let mut bits = InFlight::default();
            bits.reset(slots);
            let mut queue = VecDeque::new();
            let mut next = 0u32;
            for (gap, pops, peek) in steps {
                let peek_n = (gap % 12) as usize;
                if next + gap < slots {
                    next += gap;
                    bits.push(next);
                    queue.push_back(next);
                }
                if peek {
                    let mut seen = Vec::new();
                    bits.for_oldest(peek_n, |i, offset| {
                        assert_eq!(i, seen.len());
                        seen.push(offset);
                    });
                    let want: Vec<u32> = queue.iter().copied().take(peek_n).collect();
                    prop_assert_eq!(seen, want);
                }
                for _ in 0..pops {
                    prop_assert_eq!(bits.pop(), queue.pop_front());
                }
                prop_assert_eq!(bits.len() as usize, queue.len());
            }
            bits.reset(slots);
            prop_assert_eq!(bits.pop(), None);
        }
    }
}
