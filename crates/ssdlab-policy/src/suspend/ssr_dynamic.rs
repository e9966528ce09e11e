//! `ssr-dynamic`, SSR(d): as SSR(s), with N taken from the erased block's P/E cycles through
//! a step table (paper, Fig. 8(b): 30 safe points while the block is young, 10 from 1,000
//! P/E cycles on; fewer as wear grows, following the safe limit of Fig. 7).

use super::{next_grid_point, EraseSuspend, EraseView, Guard, Preempt};
use crate::base::step_lookup;
use crate::SwarmCtx;
use rand::Rng;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::SimRng;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Step table [from_pe_cycles, safe points per loop], first entry from 0, points > 0
    /// (paper, Fig. 8: 30 for young blocks, 10 from 1,000 P/E cycles).
    pub safe_points: Vec<(u32, u32)>,
    /// The starvation guard.
    #[serde(flatten)]
    pub guard: Guard,
    #[serde(flatten)]
    pub preempt: Preempt,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            safe_points: vec![(0, 30), (1000, 10)],
            guard: Guard::default(),
            preempt: Preempt::default(),
        }
    }
}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, _: &SwarmCtx) -> Params {
        let young = rng.gen_range(2..=30);
        let from = rng.gen_range(1..=20);
        Params {
            safe_points: vec![(0, young), (from, rng.gen_range(1..=10))],
            guard: Guard::swarm(rng),
            preempt: Preempt::swarm(rng),
        }
    }

    fn check(&self) -> Result<(), (&'static str, String)> {
        crate::base::check_step_table(&self.safe_points)
            .map_err(|why| ("safe_points", why.to_string()))?;
        if self.safe_points.iter().any(|e| e.1 == 0) {
            return Err(("safe_points", "safe points per loop must be > 0".into()));
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct SsrDynamic {
    table: Vec<(u32, u32)>,
    guard: Guard,
    programs_preempt: bool,
}

impl EraseSuspend for SsrDynamic {
    type Params = Params;

    fn new(p: &Params, _: &()) -> SsrDynamic {
        SsrDynamic {
            table: p.safe_points.clone(),
            guard: p.guard,
            programs_preempt: p.preempt.programs_preempt,
        }
    }

    fn points_per_loop(&self, pe_cycles: u32) -> u32 {
        step_lookup(&self.table, pe_cycles).max(1)
    }

    #[inline]
    fn next_point(&self, v: &EraseView) -> Option<u64> {
        next_grid_point(v, self.points_per_loop(v.pe_cycles))
    }

    fn programs_preempt(&self) -> bool {
        self.programs_preempt
    }

    fn guard(&self) -> Option<Guard> {
        Some(self.guard)
    }
}
