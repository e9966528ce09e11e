//! `ies`, immediate erase suspension (Wu et al., JSA 2014): suspend at the current position,
//! pay the penalty, serve every read (also those arriving while suspended), resume exactly
//! where the erase stopped. No bound on suspensions and no starvation guard: erases, and
//! the writes waiting for the blocks they free, can starve.

use super::{EraseSuspend, EraseView, Guard, Preempt};
use crate::SwarmCtx;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::SimRng;

/// No starvation guard by definition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    #[serde(flatten)]
    pub preempt: Preempt,
}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, _: &SwarmCtx) -> Params {
        Params {
            preempt: Preempt::swarm(rng),
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Ies {
    programs_preempt: bool,
}

impl EraseSuspend for Ies {
    type Params = Params;

    fn new(p: &Params, _: &()) -> Ies {
        Ies {
            programs_preempt: p.preempt.programs_preempt,
        }
    }

    #[inline]
    fn next_point(&self, v: &EraseView) -> Option<u64> {
        (v.pos_ns < v.total_ns()).then_some(v.pos_ns)
    }

    fn points_per_loop(&self, _pe_cycles: u32) -> u32 {
        u32::MAX
    }

    fn serves_late_reads(&self) -> bool {
        true
    }

    fn programs_preempt(&self) -> bool {
        self.programs_preempt
    }

    fn guard(&self) -> Option<Guard> {
        None
    }
}
