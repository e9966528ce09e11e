//! GC pressure: how GC shares a die with host programs, named per plane from its free
//! blocks, blocks being erased and GC job, and kept per die for the timed scheduler.
//! [`Pressure`] is this module's state; only the methods here change it.

use super::jobs::Jobs;
use super::region::PlaneState;
use super::{Ftl, Media};
use crate::ids::{DieId, PlaneId};
use crate::scheduler::GcPressure;

/// Per die: the GC pressure rank of its most pressing plane, kept current by
/// [`Pressure::refresh`] wherever an input changes (free blocks,
/// blocks being erased, the plane's GC job) once a timed driver asked for it
/// ([`Ftl::keep_pressure`]; the functional mode has no scheduler and skips the work).
#[derive(Clone)]
pub(super) struct Pressure {
    die_rank: Vec<u64>,
    kept: bool,
}

impl Pressure {
    pub(super) fn new(dies: u32) -> Pressure {
        Pressure {
            die_rank: vec![0; dies as usize],
            kept: false,
        }
    }

    #[inline]
    fn rank(&self, die: DieId) -> u64 {
        debug_assert!(self.kept, "GC pressure read but not kept");
        self.die_rank[die.idx()]
    }

    /// Keep every die's GC pressure current from now on (the timed drivers ask for it).
    pub(super) fn keep(&mut self, media: &Media, jobs: &Jobs) {
        self.kept = true;
        for die in 0..media.geo.dies {
            self.die_rank[die as usize] = die_rank(media, jobs, die);
        }
    }

    /// An input of (region, plane) `rp`'s GC pressure changed: rank its die again.
    #[inline]
    pub(super) fn refresh(&mut self, media: &Media, jobs: &Jobs, rp: usize) {
        if self.kept {
            self.rank_die_of(media, jobs, rp);
        }
    }

    /// Out of line: the hot paths that change a plane's inputs stay compact.
    #[inline(never)]
    fn rank_die_of(&mut self, media: &Media, jobs: &Jobs, rp: usize) {
        let die = media.geo.die_of_plane(media.ps[rp].plane.0);
        self.die_rank[die as usize] = die_rank(media, jobs, die);
    }
}

/// The most pressing rank of the planes of `die`, computed afresh.
fn die_rank(media: &Media, jobs: &Jobs, die: u32) -> u64 {
    let (ppd, planes) = (media.geo.planes_per_die as usize, media.geo.planes as usize);
    let mut rank = 0;
    for r in 0..media.regions.len() {
        let first = r * planes + die as usize * ppd;
        for ps in &media.ps[first..first + ppd] {
            rank = rank.max(plane_rank(jobs, ps));
        }
    }
    rank
}

/// One (region, plane)'s GC pressure as an integer in the order of [`GcPressure`]
/// (variant, then `k`), so that the most pressing of several is a maximum: 0 `Normal`,
/// `1 << 32 | k` `Behind(k)`, `2 << 32 | k` `Pressing(k)`, `3 << 32` `Urgent`.
/// An urgent reliability job (`reliability.rs`) makes its plane at least `Pressing`: host
/// reads and background batches take turns on its die, as at GC's hard threshold (GC's
/// own `k` kept: `Normal` → `Pressing(1)`, `Behind(k)` → `Pressing(k)`).
#[inline(always)]
fn plane_rank(jobs: &Jobs, ps: &PlaneState) -> u64 {
    let rank = gc_rank(jobs, ps);
    if ps.urgent_relocation && rank >> 32 < 2 {
        2 << 32 | (rank & 0xffff_ffff).max(1)
    } else {
        rank
    }
}

/// [`plane_rank`] of GC alone (free blocks, erasing ones, the plane's GC job).
#[inline(always)]
fn gc_rank(jobs: &Jobs, ps: &PlaneState) -> u64 {
    if ps.drain_when_idle {
        return 0; // drained while idle only: never presses host I/O
    }
    let (f, hard, soft) = (
        ps.free.len(),
        ps.gc_hard_free_blocks,
        ps.gc_soft_free_blocks,
    );
    // Urgency counts blocks being erased: their erase will return them (the next
    // victim is collected meanwhile, into blocks the erase gives back).
    if f + ps.erasing < hard {
        return 3 << 32;
    }
    if f > hard && f >= soft {
        return 0;
    }
    let ratio = match ps.gc_job {
        j if j.is_none() => 16,
        j => jobs.gc_ratio_x16(j),
    };
    let k = (ratio * (soft + 1 - f.min(soft))).div_ceil(16).max(1);
    (if f <= hard { 2u64 } else { 1 }) << 32 | k as u64
}

/// The GC pressure of the device's planes and dies, read where the scheduler decides
/// ([`Ftl::pressure`]).
pub struct PressureView<'a> {
    pub(super) pressure: &'a Pressure,
    pub(super) media: &'a Media,
    pub(super) jobs: &'a Jobs,
}

impl PressureView<'_> {
    /// How GC shares `plane`'s die with host programs (the scheduler applies it): below a
    /// region's hard threshold → `Urgent`; at it → `Pressing` (host writes can no longer
    /// open blocks there); below the soft threshold → `Behind(k)`, `k` GC program batches
    /// per host-program batch (see `jobs/`); otherwise `Normal` (a job finishing takes
    /// turns 1:1).
    pub fn gc_pressure(&self, plane: u32) -> GcPressure {
        let mut rank = 0;
        for r in 0..self.media.regions.len() as u8 {
            rank = rank.max(plane_rank(
                self.jobs,
                self.media.plane_state(r, PlaneId(plane)),
            ));
        }
        pressure_of_rank(rank)
    }

    /// The most pressing [`PressureView::gc_pressure`] of the planes of `die` (what the
    /// die's scheduler applies).
    #[inline]
    pub fn die_gc_pressure(&self, die: u32) -> GcPressure {
        let rank = self.pressure.rank(DieId(die));
        debug_assert_eq!(
            rank,
            die_rank(self.media, self.jobs, die),
            "stale GC pressure of die {die}"
        );
        pressure_of_rank(rank)
    }

    /// Whether any plane of `die` has urgent GC.
    pub fn die_urgent(&self, die: u32) -> bool {
        let ppd = self.media.geo.planes_per_die;
        (die * ppd..(die + 1) * ppd).any(|p| self.gc_pressure(p) == GcPressure::Urgent)
    }

    /// Whether GC has unfinished work on `plane` (a job, or a plane below its threshold).
    pub fn gc_active(&self, plane: u32) -> bool {
        (0..self.media.regions.len() as u8).any(|r| {
            let ps = self.media.plane_state(r, PlaneId(plane));
            !ps.gc_job.is_none()
                || if ps.drain_when_idle {
                    ps.needs_gc(self.jobs.host_idle())
                } else {
                    ps.free.len() < ps.gc_soft_free_blocks
                }
        })
    }
}

impl Ftl {
    /// The GC pressure of the device's planes and dies.
    #[inline]
    pub fn pressure(&self) -> PressureView<'_> {
        PressureView {
            pressure: &self.pressure,
            media: &self.media,
            jobs: &self.jobs,
        }
    }

    /// Keep every die's GC pressure current from now on (the timed drivers ask for it).
    pub fn keep_pressure(&mut self) {
        self.pressure.keep(&self.media, &self.jobs);
    }

    /// An input of (region, plane) `rp`'s GC pressure changed: rank its die again.
    #[inline]
    pub(crate) fn refresh_pressure(&mut self, rp: usize) {
        self.pressure.refresh(&self.media, &self.jobs, rp);
    }
}

/// The [`GcPressure`] of a rank from [`plane_rank`].
#[inline(always)]
fn pressure_of_rank(rank: u64) -> GcPressure {
    match rank >> 32 {
        0 => GcPressure::Normal,
        1 => GcPressure::Behind(rank as u32),
        2 => GcPressure::Pressing(rank as u32),
        _ => GcPressure::Urgent,
    }
}
