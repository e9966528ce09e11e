//! Durable trims (crash consistency: on with `hold_overwritten_until_durable` and integrity
//! versions, as `ssdlab serve` runs): a trim is recorded on flash, as a controller's
//! mapping journal records it, so that after a power cut a trimmed unit comes back
//! unmapped — never as an older copy GC had not erased yet.
//!
//! * A trim takes a version, as a write does (consecutive units trimmed with no write
//!   between share one): "unmapped as of this version". Each unit trimmed with a copy on
//!   flash (or on its way) joins the open batch (DRAM), and the copy's block is pinned
//!   against GC's erase, as an overwritten version is held: until the record is durable,
//!   that copy keeps every older copy of the unit shadowed.
//! * The batch is written as trim records — a slot each, up to [`RANGE_BYTES`]-byte ranges
//!   (start, length, version) per mapping unit — in a page of their own (cause `mapping`):
//!   when a flush arrives (on a host page outside the GC reserve; the flush completes once
//!   the page's program has, as well as its buffered units'), when the batch fills a page,
//!   before a host page that rewrites a unit of the batch is placed, when a job finds
//!   its source pinned by the batch (in the job's destination, which may use the reserve:
//!   the victim waits for the record; a wear-leveling migration's only while its open
//!   block still holds the rest of its source after the record, else as a flush's), and
//!   when the device settles. With no page anywhere,
//!   the batch waits for the next erase. Each record slot carries [`TRIM_TAG`]` | id` and
//!   its newest range's version in its OOB.
//! * A record stays valid (GC copies it) while some unit it trimmed has not been written
//!   again; a unit written again leaves it when its new page is placed, the record's block
//!   held until that program completes (as an overwritten version's block is).
//! * Recovery (`recover.rs`): the newest of a unit's copies and of the record ranges
//!   covering it wins; a record winning leaves the unit unmapped.

use super::region::Stream;
use super::translation::TRANS_TAG;
use super::{Ftl, NandSink};
use crate::base::Version;
use crate::error::Result;
use crate::flash::{BlockState, Cause, NandOp, OpKind, Owner, NONE, OP_FAILS};
use crate::ids::{BlockId, JobId, PlaneId, SlotId};
use std::collections::BTreeMap;

/// OOB tag of a trim record's slot (`TRIM_TAG | id`): a tagged slot (like a translation
/// page's, [`TRANS_TAG`]) whose second-highest bit is set too.
pub const TRIM_TAG: u32 = TRANS_TAG | 1 << 30;

/// Bytes of one range of a record: start and length of the units (4 bytes each) and the
/// trim's version (8).
pub const RANGE_BYTES: u32 = 16;

/// Whether OOB entry `lpn` is a trim record's tag.
#[inline(always)]
pub fn is_record(lpn: u32) -> bool {
    lpn != NONE && lpn & TRIM_TAG == TRIM_TAG
}

/// Ranges a record of `unit_bytes` holds.
pub fn ranges_per_unit(unit_bytes: u32) -> usize {
    (unit_bytes / RANGE_BYTES).max(1) as usize
}

/// A range of trimmed units: start, end (exclusive), and the version they are unmapped as of.
pub type TrimRange = (u32, u32, Version);

/// One trim record: its ranges (the page's data; the simulator keeps it here), and the
/// newest of their versions (its OOB's).
#[derive(Clone, Debug, Default)]
pub struct Record {
    pub version: Version,
    pub ranges: Vec<TrimRange>,
    /// The slot holding its current copy (valid while `live > 0`), or `SlotId::NONE`.
    pub slot: SlotId,
    /// Units it keeps unmapped (trimmed by it, not written since).
    pub live: u32,
    /// Slots on flash carrying its tag (current and stale copies, until erased): its id is
    /// reused only when none is left and it keeps nothing unmapped.
    pub on_flash: u32,
}

/// The trim journal's state (the FTL's `trims`).
#[derive(Clone)]
pub(super) struct TrimJournal {
    /// Units trimmed and not yet recorded, as ranges start → (end, version).
    open: BTreeMap<u32, (u32, Version)>,
    /// The last unit trimmed and its version (the next unit shares it while no write came).
    last_trim: (u32, Version),
    /// Blocks pinned for the open batch, and the flag per block that dedupes them.
    open_pins: Vec<BlockId>,
    open_pinned: Vec<bool>,
    /// Records by id (a slab; `free_ids` are reusable).
    pub(super) records: Vec<Record>,
    free_ids: Vec<u32>,
    /// Units a record keeps unmapped: start → (end, record id).
    live: BTreeMap<u32, (u32, u32)>,
    /// Record pages whose program has not completed: sequence number → the blocks it holds.
    in_flight: BTreeMap<u64, Vec<BlockId>>,
    /// Record pages written so far (the last one's sequence number).
    pages: u64,
    /// The open batch found no page: written when a block is freed.
    wanted: bool,
    /// Ranges a record holds.
    ranges_per_record: usize,
}

impl TrimJournal {
    pub(super) fn new(blocks: u32, unit_bytes: u32) -> TrimJournal {
        TrimJournal {
            open: BTreeMap::new(),
            last_trim: (NONE, 0),
            open_pins: Vec::new(),
            open_pinned: vec![false; blocks as usize],
            records: Vec::new(),
            free_ids: Vec::new(),
            live: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            pages: 0,
            wanted: false,
            ranges_per_record: ranges_per_unit(unit_bytes),
        }
    }

    /// Add `lpn`, trimmed as of `version`, to the open batch (a unit already in it takes
    /// the new version).
    fn open_add(&mut self, lpn: u32, version: Version) {
        // Trimmed again since the batch began: the newer version alone.
        Self::split_out(&mut self.open, lpn);
        let (mut s, mut e) = (lpn, lpn + 1);
        if let Some((&ps, &(pe, pv))) = self.open.range(..lpn).next_back() {
            if pe == lpn && pv == version {
                s = ps;
            }
        }
        if let Some(&(ne, nv)) = self.open.get(&e) {
            if nv == version {
                self.open.remove(&e);
                e = ne;
            }
        }
        self.open.insert(s, (e, version));
    }

    /// Whether `lpn` is in the open batch.
    fn in_open(&self, lpn: u32) -> bool {
        self.open
            .range(..=lpn)
            .next_back()
            .is_some_and(|(_, &(e, _))| e > lpn)
    }

    /// Take `lpn` out of the interval map `m` (start → (end, payload)); its payload.
    fn split_out<T: Copy>(m: &mut BTreeMap<u32, (u32, T)>, lpn: u32) -> Option<T> {
        let (&s, &(e, p)) = m.range(..=lpn).next_back()?;
        if e <= lpn {
            return None;
        }
        m.remove(&s);
        if s < lpn {
            m.insert(s, (lpn, p));
        }
        if lpn + 1 < e {
            m.insert(lpn + 1, (e, p));
        }
        Some(p)
    }

    /// A new record id.
    fn alloc(&mut self, r: Record) -> u32 {
        match self.free_ids.pop() {
            Some(id) => {
                self.records[id as usize] = r;
                id
            }
            None => {
                self.records.push(r);
                (self.records.len() - 1) as u32
            }
        }
    }

    /// Record `id` may be forgotten once it keeps nothing unmapped and no slot carries it.
    fn maybe_release(&mut self, id: u32) {
        let r = &self.records[id as usize];
        if r.live == 0 && r.on_flash == 0 && r.slot.is_none() {
            self.records[id as usize] = Record::default();
            self.free_ids.push(id);
        }
    }

    /// Whether `block` is pinned for the open batch.
    pub(super) fn pins_open(&self, block: BlockId) -> bool {
        self.open_pinned[block.idx()]
    }

    /// Whether every record page up to `ticket` has been written and programmed.
    pub(super) fn durable(&self, ticket: u64) -> bool {
        ticket <= self.pages && self.in_flight.keys().next().is_none_or(|&s| s > ticket)
    }

    /// Live units: (start, end, record id) in unit order (the invariant checker's).
    pub(super) fn live_ranges(&self) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        self.live.iter().map(|(&s, &(e, id))| (s, e, id))
    }

    /// Rebuilt by a recovery: `records` by id (those that left a slot on flash), and the
    /// units each keeps unmapped, in unit order.
    pub(super) fn restore(&mut self, records: Vec<Record>, live: Vec<(u32, u32, u32)>) {
        self.free_ids = (0..records.len() as u32)
            .rev()
            .filter(|&id| {
                let r = &records[id as usize];
                r.on_flash == 0 && r.live == 0 && r.slot.is_none()
            })
            .collect();
        self.records = records;
        for (s, e, id) in live {
            self.live.insert(s, (e, id));
        }
    }
}

impl Ftl {
    /// Durable trims: `lpn` was trimmed, its copy (if any) in `old`.
    pub(super) fn record_trim<S: NandSink>(
        &mut self,
        lpn: u32,
        old: SlotId,
        sink: &mut S,
    ) -> Result<()> {
        let next = self.integrity.as_ref().map_or(0, |i| i.next_version());
        let Some(t) = self.durable.trims.as_mut() else {
            return Ok(());
        };
        // Consecutive units trimmed with no version drawn between share one.
        let chained = match t.last_trim {
            (l, v) if l.wrapping_add(1) == lpn && v + 1 == next => Some(v),
            _ => None,
        };
        if old.is_none() {
            // Unmapped already: never written, or a record (sealed or open) keeps it so.
            if let Some(v) = chained {
                t.last_trim = (lpn, v);
            }
            return Ok(());
        }
        let version = match chained {
            Some(v) => v,
            None => self
                .integrity
                .as_mut()
                .map_or(0, |i| i.new_record_version()),
        };
        let t = self.durable.trims.as_mut().expect("trim journal");
        t.last_trim = (lpn, version);
        t.open_add(lpn, version);
        let b = self.media.geo.block_of_slot(old);
        if !t.open_pinned[b.idx()] {
            t.open_pinned[b.idx()] = true;
            t.open_pins.push(b);
            self.media.pin(&mut self.internal, b);
        }
        let t = self.durable.trims.as_ref().expect("trim journal");
        if t.open.len() >= t.ranges_per_record * self.media.geo.slots_per_page as usize {
            self.record_batch(sink, None)?;
        }
        Ok(())
    }

    /// Before a host page of `lpns` is placed: a unit trimmed since the last record and
    /// written again needs the trim recorded first (its record then holds until this
    /// page's program completes). False when the batch found no page (the host page waits).
    #[inline]
    pub(super) fn record_before_rewrite<S: NandSink>(
        &mut self,
        lpns: &[u32],
        sink: &mut S,
    ) -> Result<bool> {
        let Some(t) = self.durable.trims.as_ref() else {
            return Ok(true);
        };
        if t.open.is_empty() || !lpns.iter().any(|&l| t.in_open(l)) {
            return Ok(true);
        }
        self.record_batch(sink, None)?;
        Ok(self
            .durable
            .trims
            .as_ref()
            .is_none_or(|t| t.open.is_empty()))
    }

    /// Write the open batch of trims as records (durable trims; nothing else): returns the
    /// ticket a flush waits on ([`Ftl::trims_durable`]). The pages are host pages of the
    /// plane with the most free blocks; with no page anywhere now, the batch stays open
    /// and is written when a block is freed (the ticket waits for it). GC due where a record page opened a block starts now, as after a host page.
    pub fn record_trims<S: NandSink>(&mut self, sink: &mut S) -> Result<u64> {
        let ticket = self.record_batch(sink, None)?;
        self.run_background(sink)?;
        Ok(ticket)
    }

    /// [`Ftl::record_trims`], the pages first from job `job`'s destination when given.
    fn record_batch<S: NandSink>(&mut self, sink: &mut S, job: Option<JobId>) -> Result<u64> {
        let Some(t) = self.durable.trims.as_mut() else {
            return Ok(0);
        };
        if t.open.is_empty() {
            return Ok(t.pages);
        }
        let spp = self.media.geo.slots_per_page as usize;
        let page_ranges = t.ranges_per_record * spp;
        loop {
            let Some(dst) = self.record_destination(job, sink)? else {
                let t = self.durable.trims.as_mut().expect("trim journal");
                t.wanted = true;
                return Ok(t.pages + 1);
            };
            let t = self.durable.trims.as_mut().expect("trim journal");
            let mut page: Vec<TrimRange> = Vec::with_capacity(page_ranges.min(t.open.len()));
            while page.len() < page_ranges {
                let Some((s, (e, v))) = t.open.pop_first() else {
                    break;
                };
                page.push((s, e, v));
            }
            // The batch's pins go with its last page (the pages of one batch cover other
            // units each: the blocks wait for all of them).
            let pins = if t.open.is_empty() {
                for &b in &t.open_pins {
                    t.open_pinned[b.idx()] = false;
                }
                t.wanted = false;
                t.last_trim = (NONE, 0);
                std::mem::take(&mut t.open_pins)
            } else {
                Vec::new()
            };
            self.write_record_page(&page, pins, dst, sink)?;
            let t = self.durable.trims.as_ref().expect("trim journal");
            if t.open.is_empty() {
                return Ok(t.pages);
            }
        }
    }

    /// Whether every trim record a flush that got `ticket` waits on is durable.
    pub fn trims_durable(&self, ticket: u64) -> bool {
        self.durable
            .trims
            .as_ref()
            .is_none_or(|t| t.durable(ticket))
    }

    /// One page of records at `(block, page)` (at most a page's slots of ranges); its
    /// program holds `pins` until it completes.
    fn write_record_page<S: NandSink>(
        &mut self,
        ranges: &[TrimRange],
        pins: Vec<BlockId>,
        (block, page, queue_as): (BlockId, u32, Cause),
        sink: &mut S,
    ) -> Result<()> {
        let first = self.media.page_slot(block, page);
        let t = self.durable.trims.as_mut().expect("trim journal");
        let per = t.ranges_per_record;
        let n = ranges.len().div_ceil(per) as u32;
        t.pages += 1;
        let seq = t.pages;
        t.in_flight.insert(seq, pins);
        for (i, chunk) in ranges.chunks(per).enumerate() {
            let slot = first + i as u32;
            let version = chunk.iter().map(|r| r.2).max().unwrap_or(0);
            let id = t.alloc(Record {
                version,
                ranges: chunk.to_vec(),
                slot,
                live: chunk.iter().map(|&(s, e, _)| e - s).sum(),
                on_flash: 1,
            });
            for &(s, e, _) in chunk {
                t.live.insert(s, (e, id));
            }
            self.media.oob.store(slot.idx(), TRIM_TAG | id);
            self.media.oob.version[slot.idx()] = version;
        }
        self.media.blocks.valid_units[block.idx()] += n;
        let rp = self.media.blocks.rp[block.idx()] as usize;
        self.media.ps[rp].valid_units += n as u64;
        self.counters.trim_records += n as u64;
        self.counters.trim_record_pages += 1;
        self.counters.padding_units += (self.media.geo.slots_per_page - n) as u64;
        // Counted as a mapping program; queued with its block's other programs (host or
        // GC), so that the pages of a block are programmed in order.
        self.counters.nand.ops[OpKind::Program as usize][Cause::Mapping as usize] += 1;
        let op = NandOp::new(
            OpKind::Program,
            queue_as,
            block,
            page,
            n,
            Owner::TrimRecord { seq: seq as u32 },
        );
        self.issue_uncounted(sink, op)
    }

    /// A page for trim records, with the cause its block's other programs are queued as:
    /// job `job`'s next destination page when given (its GC stream, which may use the
    /// plane's reserve: the job's victim waits for the record; a migration's wear stream
    /// only when its open block holds the record and the rest of the source after it,
    /// [`Job::migration_fits`](super::jobs::Job::migration_fits)); otherwise a host page
    /// (outside the reserve) of the data region's plane with the most free blocks that has
    /// one. A failed program attempt (injected) is issued, dooms its block, and the next
    /// page is taken.
    fn record_destination<S: NandSink>(
        &mut self,
        job: Option<JobId>,
        sink: &mut S,
    ) -> Result<Option<(BlockId, u32, Cause)>> {
        let r = self.media.data_region;
        let mut planes: Vec<PlaneId> = (0..self.media.geo.planes).map(PlaneId).collect();
        planes.sort_by_key(|&p| std::cmp::Reverse(self.media.free_blocks(r, p)));
        loop {
            // A migration may hold the plane's GC reserve on the promise that its open
            // block takes the rest of its source (`reserve_for`, `block_coming`): a record
            // page goes there only when the promise still holds after it (swarm seed
            // 1303903: a full cold block and a record overflowed it, GC had no block).
            let via_job = job.filter(|&j| {
                let job = self.jobs.get(j);
                !job.moves_cold() || job.migration_fits(&self.media, 1)
            });
            let (page, cause) = match via_job {
                Some(j) => {
                    let (dst, plane, stream) = self.jobs.get(j).record_destination();
                    (self.take_page(dst, plane, stream), Cause::Gc)
                }
                None => {
                    let mut page = None;
                    for &plane in &planes {
                        if let Some(p) = self.take_page(r, plane, Stream::HOST) {
                            // A host page: it may have opened the plane's last block
                            // above the GC threshold, and GC must hear of it as it does
                            // of any host page (swarm seed 2007706: a record took the
                            // block, no host page came after it, GC never woke).
                            self.after_host_page(r, plane);
                            page = Some(p);
                            break;
                        }
                    }
                    (page, Cause::Host)
                }
            };
            let Some((block, page)) = page else {
                return Ok(None);
            };
            self.media.program_seq += 1;
            if !self.health.draw_program_failure() {
                return Ok(Some((block, page, cause)));
            }
            self.doom(block);
            let mut op = NandOp::new(OpKind::Program, cause, block, page, 0, Owner::None);
            op.flags = OP_FAILS;
            self.issue(sink, op)?;
        }
    }

    /// The program of record page `seq` (its low 32 bits) completed: its pins go.
    pub(super) fn record_page_done(&mut self, seq: u32) {
        let Some(t) = self.durable.trims.as_mut() else {
            return;
        };
        let Some(&key) = t.in_flight.keys().find(|&&k| k as u32 == seq) else {
            return;
        };
        let pins = t.in_flight.remove(&key).unwrap_or_default();
        for b in pins {
            self.media.unpin(&mut self.internal, b);
            if self.media.blocks.pins[b.idx()] == 0
                && self.media.blocks.state[b.idx()] == BlockState::Victim
            {
                self.jobs.wake_block(b);
            }
        }
    }

    /// Host unit `lpn`, unmapped, gets a slot again: if a record kept it unmapped, the unit
    /// leaves it, the record's block held until this page's program completes (the
    /// record's last unit gone, its slot is garbage).
    #[inline]
    pub(super) fn record_rewritten(&mut self, lpn: u32) {
        let Some(t) = self.durable.trims.as_mut() else {
            return;
        };
        if t.live.is_empty() {
            return;
        }
        let Some(id) = TrimJournal::split_out(&mut t.live, lpn) else {
            return;
        };
        let rec = &mut t.records[id as usize];
        rec.live -= 1;
        let (slot, dead) = (rec.slot, rec.live == 0);
        if let Some(h) = self.durable.held.as_mut() {
            h.page.push(self.media.geo.block_of_slot(slot));
        }
        if dead {
            self.media.invalidate(&mut self.jobs, slot);
            let t = self.durable.trims.as_mut().expect("trim journal");
            t.records[id as usize].slot = SlotId::NONE;
            t.maybe_release(id);
        }
    }

    /// GC moved record `tagged` from `src` to `dst` (its copy's program completed).
    pub(super) fn record_relocated(&mut self, tagged: u32, src: SlotId, dst: SlotId) {
        let id = (tagged & !TRIM_TAG) as usize;
        self.media.oob.version[dst.idx()] = self.media.oob.version[src.idx()];
        if let Some(t) = self.durable.trims.as_mut() {
            t.records[id].slot = dst;
            t.records[id].on_flash += 1;
        }
    }

    /// `block` is being erased: the record slots on it are gone.
    pub(super) fn records_erased(&mut self, block: BlockId) {
        let Some(t) = self.durable.trims.as_mut() else {
            return;
        };
        let first = self.media.geo.first_slot_of_block(block).idx();
        for lpn in self.media.oob.lpn[first..first + self.media.geo.units_per_block as usize]
            .iter()
            .map(|w| w.get())
        {
            if is_record(lpn) {
                let id = lpn & !TRIM_TAG;
                t.records[id as usize].on_flash -= 1;
                t.maybe_release(id);
            }
        }
    }

    /// Job `j`'s source `block` is pinned: if the open batch pins it, write the batch now,
    /// into the job's destination first (GC must not wait for a flush to free space).
    pub(super) fn unpin_for_gc<S: NandSink>(
        &mut self,
        j: JobId,
        block: BlockId,
        sink: &mut S,
    ) -> Result<()> {
        if self
            .durable
            .trims
            .as_ref()
            .is_some_and(|t| t.pins_open(block))
        {
            self.record_batch(sink, Some(j))?;
        }
        Ok(())
    }

    /// A block was freed: a batch that found no page is written now.
    pub(super) fn record_wanted<S: NandSink>(&mut self, sink: &mut S) -> Result<()> {
        if self.durable.trims.as_ref().is_some_and(|t| t.wanted) {
            self.record_batch(sink, None)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(t: &TrimJournal) -> Vec<(u32, u32, Version)> {
        t.open.iter().map(|(&s, &(e, v))| (s, e, v)).collect()
    }

    /// The open batch keeps one range per run of units trimmed at one version: neighbours of
    /// the same version merge, another version splits, a unit trimmed again moves to the
    /// newer version.
    #[test]
    fn open_batch_ranges_merge_by_version_and_split() {
        let mut t = TrimJournal::new(4, 4096);
        for u in [5, 6, 4, 8] {
            t.open_add(u, 10);
        }
        assert_eq!(open(&t), [(4, 7, 10), (8, 9, 10)]);
        t.open_add(7, 10);
        assert_eq!(open(&t), [(4, 9, 10)]);
        t.open_add(6, 12);
        assert_eq!(open(&t), [(4, 6, 10), (6, 7, 12), (7, 9, 10)]);
        assert!(t.in_open(8) && !t.in_open(9) && !t.in_open(3));
        assert_eq!(TrimJournal::split_out(&mut t.open, 4), Some(10));
        assert_eq!(open(&t), [(5, 6, 10), (6, 7, 12), (7, 9, 10)]);
        assert_eq!(ranges_per_unit(4096), 256);
    }
}
