//! `ssr-static`, SSR(s): N evenly spaced safe points per erase loop (paper: N = 10, one
//! every 500 µs of a 5 ms loop). A read runs the erase to the next unused safe point, which
//! bounds the read delay an erase causes by loop time / N + the suspend penalty, and the
//! suspensions per loop by N.

use super::{next_grid_point, EraseSuspend, EraseView, Guard};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Safe points per erase loop, evenly spaced (N > 0; paper: 10).
    pub points_per_loop: u32,
    /// Starvation guard: no suspension after this many per erase (0 = no limit).
    pub max_suspensions_per_erase: u32,
    /// Starvation guard: no suspension once postponed this long in total (0 = no limit).
    pub max_erase_postponement_ns: u64,
    /// Waiting host programs (the journal's too) may suspend an erase as reads do, at the
    /// same positions and under the same guard (default false: only reads do).
    pub programs_preempt: bool,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            points_per_loop: 10,
            max_suspensions_per_erase: 0,
            max_erase_postponement_ns: 0,
            programs_preempt: false,
        }
    }
}

impl crate::policy::PolicyParams for Params {
    fn check(&self) -> Result<(), (&'static str, String)> {
        if self.points_per_loop == 0 {
            return Err(("points_per_loop", "must be > 0".into()));
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
pub struct SsrStatic {
    n: u32,
    guard: Guard,
    programs_preempt: bool,
}

impl EraseSuspend for SsrStatic {
    type Params = Params;

    fn new(p: &Params, _: &()) -> SsrStatic {
        SsrStatic {
            n: p.points_per_loop.max(1),
            guard: Guard {
                max_suspensions_per_erase: p.max_suspensions_per_erase,
                max_erase_postponement_ns: p.max_erase_postponement_ns,
            },
            programs_preempt: p.programs_preempt,
        }
    }

    #[inline]
    fn next_point(&self, v: &EraseView) -> Option<u64> {
        next_grid_point(v, self.n)
    }

    fn points_per_loop(&self, _pe_cycles: u32) -> u32 {
        self.n
    }

    fn programs_preempt(&self) -> bool {
        self.programs_preempt
    }

    fn guard(&self) -> Option<Guard> {
        Some(self.guard)
    }
}
