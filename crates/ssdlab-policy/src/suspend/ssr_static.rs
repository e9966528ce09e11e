//! `ssr-static`, SSR(s): N evenly spaced safe points per erase loop (paper: N = 10, one
//! every 500 µs of a 5 ms loop). A read runs the erase to the next unused safe point, which
//! bounds the read delay an erase causes by loop time / N + the suspend penalty, and the
//! suspensions per loop by N.

use super::{next_grid_point, EraseSuspend, EraseView, Guard, Preempt};
use crate::SwarmCtx;
use rand::Rng;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::SimRng;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Safe points per erase loop, evenly spaced (N > 0; paper: 10).
    pub points_per_loop: u32,
    /// The starvation guard.
    #[serde(flatten)]
    pub guard: Guard,
    #[serde(flatten)]
    pub preempt: Preempt,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            points_per_loop: 10,
            guard: Guard::default(),
            preempt: Preempt::default(),
        }
    }
}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, _: &SwarmCtx) -> Params {
        Params {
            points_per_loop: rng.gen_range(1..=12),
            guard: Guard::swarm(rng),
            preempt: Preempt::swarm(rng),
        }
    }

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
            guard: p.guard,
            programs_preempt: p.preempt.programs_preempt,
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
