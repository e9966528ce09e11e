//! The reliability jobs: read reclaim (`ftl.read_reclaim`) and retention refresh
//! (`ftl.refresh`), the FTL's answers to read disturb and retention loss. Each policy
//! (`crate::policy::reliability`) says when a full block is due; the block then becomes
//! the source of a relocation job (`JobKind::Reclaim` / `JobKind::Refresh`) that copies
//! its valid units into its region's GC stream and erases it, as GC does, its operations
//! counted under cause `reclaim` / `refresh`.
//!
//! **When a block is asked about.** Reclaim: on every read of a block whose reads since
//! its erase reached the policy's [`read limit`](ReadReclaim::read_limit) (one compare on
//! the read path), and when such a block fills. Refresh: a scan of every full block each
//! `scan_interval_ms` of the driver's simulated time (checked at the host's next command
//! to the FTL: host page or read; none once the workload is over). A due block waits in [`Reliability::pending`] (once) until its plane
//! takes it.
//!
//! **Triggers.** [`Ftl::relocation_due`] is the one entry: anything that finds a full
//! block unsafe calls it with a [`Trigger`] (mapped to its cause by [`Trigger::cause`]):
//! a read count, an age, or the block's modelled RBER reaching a margin of the ECC's
//! hard-decode limit (the `rber` policies; the RBER, [`ReadRetry::block_rber`], is
//! computed only when one of them is configured).
//!
//! **Urgency.** Host reads go first on a die, so a job queued behind a read-saturated die
//! never runs. A policy may name a second mark ([`RelocationPolicy::urgent`]:
//! `urgent_read_count`, `urgent_margin`): once the source of a running job passes it
//! (asked when the job starts, on each read of the source past the read limit and at each
//! refresh scan), the job is urgent until it ends (its erase included) and its plane's
//! GC pressure ranks at least `Pressing` (`pressure.rs`): the die gives host reads and
//! background work every other batch, GC's mechanism at its hard threshold.
//!
//! [`RelocationPolicy::urgent`]: crate::policy::reliability::RelocationPolicy::urgent
//!
//! **How many, where.** Data-region blocks only. Like a wear-leveling migration, a job
//! copies into the plane's `wear` stream (validation keeps a block per plane for it),
//! one such job (migration or reliability) per plane at a time, started when the plane
//! has more free blocks than its GC reserve; it never opens a block from the reserve (it
//! waits for GC to free one), so GC's guarantee of room holds beside it.

use super::jobs::JobKind;
use super::retry::ReadRetry;
use super::Ftl;
use crate::config::Config;
use crate::flash::{BlockState, BlockTable};
use crate::ids::{BlockId, JobId, PlaneId};
use crate::policy::reclaim::ReadReclaim;
use crate::policy::refresh::Refresh;
use crate::policy::reliability::{BlockView, RelocationShape, Trigger};

/// The reliability policies and the blocks due (see the module documentation).
#[derive(Clone)]
pub(super) struct Reliability {
    reclaim: ReadReclaim,
    refresh: Refresh,
    /// Either policy relocates anything.
    pub(super) on: bool,
    /// Either policy reads the block's RBER ([`BlockView::rber`]).
    needs_rber: bool,
    /// Either policy can find a job urgent.
    urgent_on: bool,
    /// Reads of a block since its erase from which a read asks the reclaim policy
    /// (`u32::MAX`: never).
    pub(super) read_limit: u32,
    /// Simulated time between refresh scans (0: none), and when the next one is due
    /// (`u64::MAX`: never).
    scan_ns: u64,
    pub(super) next_scan_ns: u64,
    /// Blocks due and not started, with why, in the order found.
    pending: Vec<(BlockId, Trigger)>,
    /// Per block: in `pending` (empty while both policies are off).
    queued: Vec<bool>,
}

impl Reliability {
    pub(super) fn new(cfg: &Config, blocks: u32, page_bytes: u32) -> Reliability {
        let shape = RelocationShape {
            hard_limit_rber: cfg.device.reliability.hard_limit_rber(page_bytes),
        };
        let reclaim = ReadReclaim::new(&cfg.ftl.read_reclaim, &shape);
        let refresh = Refresh::new(&cfg.ftl.refresh, &shape);
        let on = cfg.ftl.read_reclaim.relocates() || cfg.ftl.refresh.relocates();
        let scan_ns = refresh.scan_interval_ns();
        Reliability {
            read_limit: reclaim.read_limit().min(refresh.read_limit()),
            scan_ns,
            next_scan_ns: if scan_ns == 0 { u64::MAX } else { scan_ns },
            needs_rber: reclaim.needs_rber() || refresh.needs_rber(),
            urgent_on: reclaim.can_be_urgent() || refresh.can_be_urgent(),
            reclaim,
            refresh,
            on,
            pending: Vec::new(),
            queued: if on {
                vec![false; blocks as usize]
            } else {
                Vec::new()
            },
        }
    }

    /// The driver's clock restarted at 0 (a new measured phase): scans restart with it.
    pub(super) fn restart_clock(&mut self) {
        if self.scan_ns != 0 {
            self.next_scan_ns = self.scan_ns;
        }
    }

    /// What the policies see of `block` at `now_ns` (its RBER only when a policy needs it).
    fn view(
        &self,
        blocks: &BlockTable,
        retry: &ReadRetry,
        block: BlockId,
        now_ns: u64,
    ) -> BlockView {
        BlockView {
            reads_since_erase: blocks.reads_since_erase[block.idx()],
            data_age_ns: blocks.data_age_ns(block, now_ns),
            erase_count: blocks.erase_count[block.idx()],
            rber: if self.needs_rber {
                retry.block_rber(blocks, block, now_ns)
            } else {
                0.0
            },
        }
    }

    /// Whether either policy finds `block` due, and why (reclaim first).
    fn due(
        &self,
        blocks: &BlockTable,
        retry: &ReadRetry,
        block: BlockId,
        now_ns: u64,
    ) -> Option<Trigger> {
        let v = self.view(blocks, retry, block, now_ns);
        self.reclaim.due(&v).or_else(|| self.refresh.due(&v))
    }

    /// Whether either policy finds the relocation of `block` urgent.
    fn urgent(&self, blocks: &BlockTable, retry: &ReadRetry, block: BlockId, now_ns: u64) -> bool {
        let v = self.view(blocks, retry, block, now_ns);
        self.reclaim.urgent(&v) || self.refresh.urgent(&v)
    }
}

impl JobKind {
    /// The relocation kind a trigger starts.
    fn of(t: Trigger) -> JobKind {
        match t {
            Trigger::ReadCount | Trigger::ReclaimRber => JobKind::Reclaim,
            Trigger::Age | Trigger::RefreshRber => JobKind::Refresh,
        }
    }
}

impl Ftl {
    /// A read took `block`'s reads since its erase to the reclaim policy's limit or past
    /// it (out of line: the read path only compares): a full block may be due; the source
    /// of a running job may have become urgent.
    #[cold]
    #[inline(never)]
    pub(super) fn read_limit_reached(&mut self, block: BlockId, now_ns: u64) {
        match self.media.blocks.state[block.idx()] {
            BlockState::Full => {
                if let Some(t) = self
                    .reliab
                    .due(&self.media.blocks, &self.retry, block, now_ns)
                {
                    self.relocation_due(block, t);
                }
            }
            BlockState::Victim if self.reliab.urgent_on => self.urgent_if_due(block, now_ns),
            _ => {}
        }
    }

    /// `block` is a job's source: if the job is a reliability job, not yet urgent, and a
    /// policy now finds it urgent, make it so (its plane's pressure ranks again).
    fn urgent_if_due(&mut self, block: BlockId, now_ns: u64) {
        let Some(&j) = self.jobs.live().iter().find(|&&j| {
            let job = self.jobs.get(j);
            job.src == block && (job.is(JobKind::Reclaim) || job.is(JobKind::Refresh))
        }) else {
            return;
        };
        let job = self.jobs.get(j);
        let rp = self.media.rp(job.src_region, job.plane);
        if self.media.ps[rp].urgent_relocation
            || !self
                .reliab
                .urgent(&self.media.blocks, &self.retry, block, now_ns)
        {
            return;
        }
        self.media.ps[rp].urgent_relocation = true;
        self.counters.urgent_relocations += 1;
        self.refresh_pressure(rp);
    }

    /// Reliability job `j` ends: its plane's urgency (if any) ends with it.
    pub(super) fn reliability_job_ended(&mut self, j: JobId) {
        let job = self.jobs.get(j);
        if !(job.is(JobKind::Reclaim) || job.is(JobKind::Refresh)) {
            return;
        }
        let rp = self.media.rp(job.src_region, job.plane);
        if self.media.ps[rp].urgent_relocation {
            self.media.ps[rp].urgent_relocation = false;
            self.refresh_pressure(rp);
        }
    }

    /// Full `block` must be relocated for `why`: queue it (once) and wake its plane. A
    /// block not full is left alone (a block being written is asked again when it fills;
    /// a GC victim is erased anyway), and so is one outside the data region (translation
    /// pages, an SLC cache or journal: not modelled) or of a zoned device (no device GC).
    pub(super) fn relocation_due(&mut self, block: BlockId, why: Trigger) {
        let b = block.idx();
        if !self.reliab.on
            || self.reliab.queued[b]
            || self.media.blocks.state[b] != BlockState::Full
        {
            return;
        }
        let r = self.media.blocks.region[b];
        if r != self.media.data_region || !self.media.regions[r as usize].device_gc {
            return;
        }
        self.reliab.queued[b] = true;
        self.reliab.pending.push((block, why));
        let plane = self.media.geo.plane_of_block(block);
        self.jobs.wake(&mut self.media, r, plane);
    }

    /// A host command reached the FTL: the refresh scan runs when due. Scans follow the
    /// host's commands (and stop with them, so a device settling after its workload
    /// cannot refresh forever).
    #[inline(always)]
    pub(super) fn host_turn<S: super::NandSink>(&mut self, sink: &S) {
        let now = sink.now_ns();
        if now >= self.reliab.next_scan_ns {
            self.reliability_scan(now);
        }
    }

    /// The refresh scan at `now_ns`: every full block asked.
    #[cold]
    #[inline(never)]
    pub(super) fn reliability_scan(&mut self, now_ns: u64) {
        self.reliab.next_scan_ns = now_ns.saturating_add(self.reliab.scan_ns);
        for b in 0..self.media.blocks.len() as u32 {
            let block = BlockId(b);
            match self.media.blocks.state[b as usize] {
                BlockState::Full => {
                    if let Some(t) = self
                        .reliab
                        .due(&self.media.blocks, &self.retry, block, now_ns)
                    {
                        self.relocation_due(block, t);
                    }
                }
                BlockState::Victim if self.reliab.urgent_on => self.urgent_if_due(block, now_ns),
                _ => {}
            }
        }
    }

    /// (Region `r`, `plane`) is stepped: start a reliability job on its first due block
    /// when no other job copies into its `wear` stream and it has more free blocks than
    /// its GC reserve. A queued block no longer full (collected meanwhile) or no longer
    /// due is dropped.
    #[cold]
    #[inline(never)]
    pub(super) fn start_reliability_job(&mut self, r: u8, plane: PlaneId, now_ns: u64) {
        let ps = &self.media.ps[self.media.rp(r, plane)];
        if self.jobs.migrating(r, plane, crate::ids::JobId::NONE)
            || ps.free.len() + ps.erasing <= ps.gc_hard_free_blocks
            || self.worn_out()
        {
            return;
        }
        let geo = &self.media.geo;
        let blocks = &self.media.blocks;
        let mut i = 0;
        while i < self.reliab.pending.len() {
            let (block, _) = self.reliab.pending[i];
            if blocks.region[block.idx()] != r || geo.plane_of_block(block) != plane {
                i += 1;
                continue;
            }
            self.reliab.pending.remove(i);
            self.reliab.queued[block.idx()] = false;
            if self.media.blocks.state[block.idx()] != BlockState::Full {
                return self.start_reliability_job(r, plane, now_ns);
            }
            let Some(why) = self
                .reliab
                .due(&self.media.blocks, &self.retry, block, now_ns)
            else {
                return self.start_reliability_job(r, plane, now_ns);
            };
            let kind = JobKind::of(why);
            let valid = self.media.blocks.valid_units[block.idx()];
            let region = &mut self.media.regions[r as usize];
            let dst = region.geo.relocate_to;
            region.victims.remove(plane, block, valid);
            match kind {
                JobKind::Reclaim => self.counters.reclaimed_blocks += 1,
                _ => self.counters.refreshed_blocks += 1,
            }
            match why {
                Trigger::ReclaimRber => self.counters.reclaimed_blocks_rber += 1,
                Trigger::RefreshRber => self.counters.refreshed_blocks_rber += 1,
                Trigger::ReadCount | Trigger::Age => {}
            }
            let j = self
                .jobs
                .start_job(&mut self.media, &mut self.internal, kind, block, r, dst);
            if self.reliab.urgent_on {
                self.urgent_if_due(block, now_ns);
            }
            self.jobs.wake_job(j);
            return;
        }
    }

    /// Whether a reliability policy is on (reads then take a background turn).
    #[inline(always)]
    pub(super) fn reliability_on(&self) -> bool {
        self.reliab.on
    }
}
