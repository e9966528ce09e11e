//! `ssr-dynamic`, SSR(d): as SSR(s), with N taken from the erased block's P/E cycles through
//! a step table (paper, Fig. 8(b): 30 safe points while the block is young, 10 from 1,000
//! P/E cycles on; fewer as wear grows, following the safe limit of Fig. 7).

use super::{next_grid_point, EraseSuspend, EraseView, Guard};
use crate::base::step_lookup;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Step table [from_pe_cycles, safe points per loop], first entry from 0, points > 0
    /// (paper, Fig. 8: 30 for young blocks, 10 from 1,000 P/E cycles).
    pub safe_points: Vec<(u32, u32)>,
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
            safe_points: vec![(0, 30), (1000, 10)],
            max_suspensions_per_erase: 0,
            max_erase_postponement_ns: 0,
            programs_preempt: false,
        }
    }
}

impl crate::policy::PolicyParams for Params {
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
            guard: Guard {
                max_suspensions_per_erase: p.max_suspensions_per_erase,
                max_erase_postponement_ns: p.max_erase_postponement_ns,
            },
            programs_preempt: p.programs_preempt,
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
