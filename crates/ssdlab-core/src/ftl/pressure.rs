//! GC pressure: how GC shares a die with host programs, named per plane from its free
//! blocks, blocks being erased and GC job, and kept per die for the timed scheduler.
//! [`Pressure`] is this module's state; only the methods here change it.

use super::region::PlaneState;
use super::Ftl;
use crate::ids::DieId;
use crate::scheduler::GcPressure;

/// Per die: the GC pressure rank of its most pressing plane ([`Ftl::pressure_rank`]),
/// kept current by [`Ftl::refresh_pressure`] wherever an input changes (free blocks,
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

    #[inline]
    fn set(&mut self, die: DieId, rank: u64) {
        self.die_rank[die.idx()] = rank;
    }
}

impl Ftl {
    /// How GC shares `plane`'s die with host programs (the scheduler applies it): below a
    /// region's hard threshold → `Urgent`; at it → `Pressing` (host writes can no longer
    /// open blocks there); below the soft threshold → `Behind(k)`, `k` GC program batches
    /// per host-program batch (see `jobs/`); otherwise `Normal` (a job finishing takes
    /// turns 1:1).
    pub fn gc_pressure(&self, plane: u32) -> GcPressure {
        let mut rank = 0;
        for r in 0..self.media.regions.len() as u8 {
            rank = rank.max(self.pressure_rank(self.media.plane_state(r, plane)));
        }
        pressure_of_rank(rank)
    }

    /// The most pressing [`Ftl::gc_pressure`] of the planes of `die` (what the die's
    /// scheduler applies).
    #[inline]
    pub fn die_gc_pressure(&self, die: u32) -> GcPressure {
        let rank = self.pressure.rank(DieId(die));
        debug_assert_eq!(
            rank,
            self.compute_die_rank(die),
            "stale GC pressure of die {die}"
        );
        pressure_of_rank(rank)
    }

    /// Keep every die's GC pressure current from now on (the timed drivers ask for it).
    pub fn keep_pressure(&mut self) {
        self.pressure.kept = true;
        for die in 0..self.media.geo.dies {
            self.pressure.set(DieId(die), self.compute_die_rank(die));
        }
    }

    /// An input of (region, plane) `rp`'s GC pressure changed: rank its die again.
    #[inline]
    pub(crate) fn refresh_pressure(&mut self, rp: usize) {
        if self.pressure.kept {
            self.rank_die_of(rp);
        }
    }

    /// Out of line: the hot paths that change a plane's inputs stay compact.
    #[inline(never)]
    fn rank_die_of(&mut self, rp: usize) {
        let die = self.media.geo.die_of_plane(self.media.ps[rp].plane);
        self.pressure.set(DieId(die), self.compute_die_rank(die));
    }

    fn compute_die_rank(&self, die: u32) -> u64 {
        let (ppd, planes) = (
            self.media.geo.planes_per_die as usize,
            self.media.geo.planes as usize,
        );
        let mut rank = 0;
        for r in 0..self.media.regions.len() {
            let first = r * planes + die as usize * ppd;
            for ps in &self.media.ps[first..first + ppd] {
                rank = rank.max(self.pressure_rank(ps));
            }
        }
        rank
    }

    /// One (region, plane)'s GC pressure as an integer in the order of
    /// [`GcPressure`] (variant, then `k`), so that the most pressing of
    /// several is a maximum: 0 `Normal`, `1 << 32 | k` `Behind(k)`, `2 << 32 | k`
    /// `Pressing(k)`, `3 << 32` `Urgent`.
    #[inline(always)]
    fn pressure_rank(&self, ps: &PlaneState) -> u64 {
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
            j => self.jobs.get(j).ratio_x16,
        };
        let k = (ratio * (soft + 1 - f.min(soft))).div_ceil(16).max(1);
        (if f <= hard { 2u64 } else { 1 }) << 32 | k as u64
    }

    /// Whether any plane of `die` has urgent GC.
    pub fn die_urgent(&self, die: u32) -> bool {
        let ppd = self.media.geo.planes_per_die;
        (die * ppd..(die + 1) * ppd).any(|p| self.gc_pressure(p) == GcPressure::Urgent)
    }

    /// Whether GC has unfinished work on `plane` (a job, or a plane below its threshold).
    pub fn gc_active(&self, plane: u32) -> bool {
        (0..self.media.regions.len() as u8).any(|r| {
            let ps = self.media.plane_state(r, plane);
            !ps.gc_job.is_none()
                || if ps.drain_when_idle {
                    ps.needs_gc(self.host_idle())
                } else {
                    ps.free.len() < ps.gc_soft_free_blocks
                }
        })
    }
}

/// The [`GcPressure`] of a rank from [`Ftl::pressure_rank`].
#[inline(always)]
fn pressure_of_rank(rank: u64) -> GcPressure {
    match rank >> 32 {
        0 => GcPressure::Normal,
        1 => GcPressure::Behind(rank as u32),
        2 => GcPressure::Pressing(rank as u32),
        _ => GcPressure::Urgent,
    }
}
