//! Erase (and program) suspension: the policies of spec 01 and the arithmetic they share.
//!
//! The timed engine runs an erase as `loops` ISPE loops of `loop_ns` each, after the
//! command cycles. Its progress is a *work position* in `0..=loops · loop_ns` nanoseconds of
//! array work; suspending stops the die at a position, resuming continues from exactly that
//! position (the remaining work is `total − position`, never more, never less). When a host
//! read waits on a die whose erase runs, the engine asks the configured [`SuspendPolicy`]
//! for the position at which to suspend ([`SuspendPolicy::decide`]); each policy lives in its
//! own file, with its parameters (`[scheduler] erase_suspend = { policy = "…", … }`):
//!
//! | policy | file | suspension position |
//! |---|---|---|
//! | `none` | [`none`] | never (the read waits for the erase) |
//! | `ies` | [`ies`] | the current position (at once) |
//! | `des` | [`des`] | the end of the current loop |
//! | `ssr-static` | [`ssr_static`] | the next of N evenly spaced safe points of the loop (`points_per_loop`) |
//! | `ssr-dynamic` | [`ssr_dynamic`] | as `ssr-static`, N from the block's P/E cycles (`safe_points`) |
//!
//! `des`, `ssr-static` and `ssr-dynamic` honour a starvation guard ([`Guard`]: parameters
//! `max_suspensions_per_erase`, `max_erase_postponement_ns`); `ies` has none by definition.
//! With the parameter `programs_preempt = true` (every policy but `none`) a waiting host
//! program suspends an erase as a read does: same positions, same guard; the die then
//! serves the programs (and reads) queued at the suspension (`ies`: also later ones).
//!
//! Programs are suspended (option `program_suspend`) at ISPP program-loop boundaries with
//! the same grid arithmetic ([`next_grid_point`] with one "loop" of `program_loops` points).
//! [`Reliability`] turns the per-loop suspension counts of an erase into the safe-limit
//! check and the extra-RBER figure of the model in `docs/erase-suspend.md`.

use crate::base::step_lookup;
use rand::Rng;
use ssdlab_workload::rng::SimRng;

super::policy_registry! {
    $
    /// `[scheduler] erase_suspend`: the erase-suspend policy (`policy = "…"` + parameters).
    config SuspendConfig default None;
    /// The erase-suspend policy of the device.
    runtime SuspendPolicy: EraseSuspend(());
    params super::PolicyParams;
    /// Baseline: reads wait for a running erase.
    "none" => None(none::NoSuspend),
    /// I-ES (Wu et al. 2014): suspend at once; reads arriving while suspended are served too.
    "ies" => Ies(ies::Ies),
    /// D-ES (Kim et al., ATC'19): suspend at the end of the current erase loop.
    "des" => Des(des::Des),
    /// SSR(s): the next of `points_per_loop` evenly spaced safe points of the loop.
    "ssr-static" => SsrStatic(ssr_static::SsrStatic),
    /// SSR(d): as ssr-static, safe points per loop from the block's P/E cycles.
    "ssr-dynamic" => SsrDynamic(ssr_dynamic::SsrDynamic),
}

/// The starvation guard of a policy that has one (0 = no limit): an erase is not suspended
/// again after `max_suspensions_per_erase` suspensions or once it has been postponed
/// `max_erase_postponement_ns` in total (time suspended, penalties included); nor while
/// its die runs urgent GC. A guarded policy's `Params` take these keys by flattening it
/// (`#[serde(flatten)] guard: Guard`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Guard {
    /// An erase is not suspended again after this many suspensions (0 = no limit).
    pub max_suspensions_per_erase: u32,
    /// An erase is not suspended again once postponed this long in total, penalties
    /// included (0 = no limit).
    pub max_erase_postponement_ns: u64,
}

impl Guard {
    /// The guard for a swarm case: each limit set in 3 of 10 cases.
    pub fn swarm(rng: &mut SimRng) -> Guard {
        Guard {
            max_suspensions_per_erase: if rng.gen_bool(0.3) {
                rng.gen_range(1..=4)
            } else {
                0
            },
            max_erase_postponement_ns: if rng.gen_bool(0.3) {
                rng.gen_range(1..=20) * 100_000
            } else {
                0
            },
        }
    }
}

/// The key `programs_preempt` of a policy whose erase suspensions may serve host programs
/// too: its `Params` flatten it (`#[serde(flatten)] preempt: Preempt`); a policy without
/// it takes no such key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Preempt {
    /// Waiting host programs (the journal's too) may suspend an erase as reads do, at the
    /// same positions and under the same guard (default false: only reads do).
    pub programs_preempt: bool,
}

/// An erase-suspend policy.
pub trait EraseSuspend: Sized {
    type Params;
    fn new(params: &Self::Params, ctx: &()) -> Self;
    /// The work position at which to suspend the erase at `v` (`None`: keep running).
    fn next_point(&self, v: &EraseView) -> Option<u64>;
    /// Safe points per loop for a block at `pe_cycles` (0: never suspends, `u32::MAX`: any
    /// position).
    fn points_per_loop(&self, pe_cycles: u32) -> u32;
    /// Whether the policy ever suspends an erase.
    fn suspends(&self) -> bool {
        true
    }
    /// Whether reads that arrive while the erase is suspended are served in the same
    /// suspension; otherwise only the reads queued at the suspension moment are.
    fn serves_late_reads(&self) -> bool {
        false
    }
    /// Whether a waiting host program may suspend an erase too (parameter
    /// `programs_preempt`); otherwise only reads do.
    fn programs_preempt(&self) -> bool {
        false
    }
    /// The starvation guard; `None`: unguarded (suspends even during urgent GC).
    fn guard(&self) -> Option<Guard>;
}

/// What the policy asks of the running erase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuspendDecision {
    /// Keep running; the read waits.
    Continue,
    /// Suspend when the erase reaches work position `pos_ns` (≥ the current position),
    /// serve reads, then resume.
    SuspendAt { pos_ns: u64 },
}

/// The state of a running erase a policy decides on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EraseView {
    /// Array work done so far (ns), `0..total`.
    pub pos_ns: u64,
    /// Work position of the erase's last suspension, if any: a safe point is used once.
    pub last_suspend_pos_ns: Option<u64>,
    pub loop_ns: u64,
    pub loops: u32,
    /// P/E cycles of the erased block (the most worn block of a multi-plane erase).
    pub pe_cycles: u32,
}

impl EraseView {
    pub fn total_ns(&self) -> u64 {
        self.loop_ns * self.loops as u64
    }
}

/// The smallest point of the grid "N points per loop" that is at or after `v.pos_ns`,
/// strictly after the last suspension, and strictly inside the erase (not its start, not
/// its end). Point k (1 ≤ k ≤ N) of loop j lies at `j·L + ⌊k·L/N⌋`; point N of a loop is
/// the loop's end (= the start of the next loop).
pub fn next_grid_point(v: &EraseView, points_per_loop: u32) -> Option<u64> {
    let (l, n, total) = (v.loop_ns, points_per_loop as u64, v.total_ns());
    if l == 0 || n == 0 {
        return None;
    }
    // Candidates must be >= from.
    let from = match v.last_suspend_pos_ns {
        Some(last) => v.pos_ns.max(last + 1),
        None => v.pos_ns.max(1),
    };
    if from >= total {
        return None;
    }
    let j = from / l;
    let o = from - j * l;
    // Smallest k with floor(k·L/N) >= o, i.e. k = ceil(o·N/L); k = 0 is loop j's start,
    // which is point N of loop j − 1 (from >= 1 makes it the end of a previous loop).
    let k = (o as u128 * n as u128).div_ceil(l as u128) as u64;
    let g = j * l + (k as u128 * l as u128 / n as u128) as u64;
    (g < total).then_some(g)
}

/// Index of the loop a suspension at work position `pos_ns` belongs to: a point at the end
/// of a loop belongs to that loop; position 0 to the first loop.
#[inline]
pub fn loop_of_position(pos_ns: u64, loop_ns: u64) -> usize {
    (pos_ns.saturating_sub(1) / loop_ns.max(1)) as usize
}

impl SuspendPolicy {
    /// Whether the policy ever suspends an erase.
    #[inline]
    pub fn suspends(&self) -> bool {
        dispatch!(self, p => p.suspends())
    }

    /// Whether reads that arrive while the erase is suspended are served in the same
    /// suspension (I-ES); otherwise only the reads queued at the suspension moment are.
    #[inline]
    pub fn serves_late_reads(&self) -> bool {
        dispatch!(self, p => p.serves_late_reads())
    }

    /// The starvation guard (`None` for I-ES, which has none).
    #[inline]
    pub fn guard(&self) -> Option<Guard> {
        dispatch!(self, p => p.guard())
    }

    /// Whether waiting host programs may suspend an erase too (`programs_preempt`).
    #[inline]
    pub fn programs_preempt(&self) -> bool {
        dispatch!(self, p => p.programs_preempt())
    }

    /// Whether the starvation guard applies (every policy but I-ES, which has none).
    #[inline]
    pub fn guarded(&self) -> bool {
        self.guard().is_some()
    }

    /// Safe points per loop the policy uses for a block at `pe_cycles` (0 for `none`,
    /// `u32::MAX` for `ies`: any position).
    pub fn points_per_loop(&self, pe_cycles: u32) -> u32 {
        dispatch!(self, p => p.points_per_loop(pe_cycles))
    }

    /// A host read waits on a die whose erase is at `v`: where to suspend.
    #[inline]
    pub fn decide(&self, v: &EraseView) -> SuspendDecision {
        match dispatch!(self, p => p.next_point(v)) {
            Some(pos_ns) => SuspendDecision::SuspendAt { pos_ns },
            None => SuspendDecision::Continue,
        }
    }
}

impl Preempt {
    /// Programs preempt in half the swarm's cases.
    pub fn swarm(rng: &mut SimRng) -> Preempt {
        Preempt {
            programs_preempt: rng.gen_bool(0.5),
        }
    }
}

/// The suspension side of the reliability model: N_safe(PE) and the extra RBER of loops
/// suspended more often (the RBER model's erase-suspension term,
/// [`crate::flash::reliability::suspension_excess`]).
#[derive(Clone, Debug)]
pub struct Reliability {
    safe: Vec<(u32, u32)>,
    coefficient: f64,
    exponent: f64,
}

impl Reliability {
    /// N_safe(PE) as the step table `safe` [from_pe_cycles, suspensions]; extra RBER of a
    /// loop = `coefficient` × (suspensions − N_safe)^`exponent` (the `[scheduler]` keys
    /// `safe_suspensions_per_loop`, `extra_rber_per_excess_suspension`,
    /// `extra_rber_exponent`).
    pub fn new(safe: Vec<(u32, u32)>, coefficient: f64, exponent: f64) -> Reliability {
        Reliability {
            safe,
            coefficient,
            exponent,
        }
    }

    /// N_safe for a block at `pe_cycles`.
    pub fn safe_limit(&self, pe_cycles: u32) -> u32 {
        step_lookup(&self.safe, pe_cycles)
    }

    /// Whether an erase with these per-loop suspension counts exceeded the safe limit, and
    /// its extra RBER: Σ over loops of k · (count − N_safe)^e for counts above N_safe.
    pub fn assess(&self, per_loop: &[u16], pe_cycles: u32) -> (bool, f64) {
        crate::flash::reliability::suspension_excess(
            per_loop,
            self.safe_limit(pe_cycles),
            self.coefficient,
            self.exponent,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(pos: u64, last: Option<u64>) -> EraseView {
        EraseView {
            pos_ns: pos,
            last_suspend_pos_ns: last,
            loop_ns: 5000,
            loops: 5,
            pe_cycles: 0,
        }
    }

    #[test]
    fn grid_points() {
        // 10 points per 5000 ns loop: every 500 ns.
        assert_eq!(next_grid_point(&view(0, None), 10), Some(500));
        assert_eq!(next_grid_point(&view(500, None), 10), Some(500));
        assert_eq!(next_grid_point(&view(500, Some(500)), 10), Some(1000));
        assert_eq!(next_grid_point(&view(4999, None), 10), Some(5000));
        assert_eq!(next_grid_point(&view(5001, None), 10), Some(5500));
        assert_eq!(
            next_grid_point(&view(24_600, None), 10),
            None,
            "the erase's end is no suspension point"
        );
        // One point per loop (D-ES): loop ends, never the last one.
        assert_eq!(next_grid_point(&view(1, None), 1), Some(5000));
        assert_eq!(next_grid_point(&view(5000, Some(5000)), 1), Some(10_000));
        assert_eq!(next_grid_point(&view(20_001, None), 1), None);
        // Uneven spacing: 3 points in a 1000 ns loop at 333, 666, 1000.
        let v = EraseView {
            pos_ns: 334,
            last_suspend_pos_ns: None,
            loop_ns: 1000,
            loops: 2,
            pe_cycles: 0,
        };
        assert_eq!(next_grid_point(&v, 3), Some(666));
    }

    #[test]
    fn loop_attribution() {
        assert_eq!(loop_of_position(0, 5000), 0);
        assert_eq!(loop_of_position(5000, 5000), 0);
        assert_eq!(loop_of_position(5001, 5000), 1);
    }

    #[test]
    fn reliability_model() {
        let r = Reliability::new(vec![(0, 3), (100, 1)], 1e-6, 2.0);
        assert_eq!(r.assess(&[3, 2, 0], 0), (false, 0.0));
        let (ex, extra) = r.assess(&[5, 4], 0);
        assert!(ex);
        assert!((extra - 5e-6).abs() < 1e-15, "{extra}");
        assert!(r.assess(&[2], 100).0);
    }
}
