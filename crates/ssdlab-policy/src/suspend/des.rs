//! `des`, deferred erase suspension (Kim et al., USENIX ATC'19): finish the current erase
//! loop, suspend, serve the reads queued at that moment, resume with the next loop. At
//! most one suspension per loop boundary, so at most loops − 1 per erase.

use super::{next_grid_point, EraseSuspend, EraseView, Guard, Preempt};
use crate::SwarmCtx;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::SimRng;

/// The starvation guard and `programs_preempt`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    #[serde(flatten)]
    pub guard: Guard,
    #[serde(flatten)]
    pub preempt: Preempt,
}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, _: &SwarmCtx) -> Params {
        Params {
            guard: Guard::swarm(rng),
            preempt: Preempt::swarm(rng),
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Des {
    guard: Guard,
    programs_preempt: bool,
}

impl EraseSuspend for Des {
    type Params = Params;

    fn new(p: &Params, _: &()) -> Des {
        Des {
            guard: p.guard,
            programs_preempt: p.preempt.programs_preempt,
        }
    }

    #[inline]
    fn next_point(&self, v: &EraseView) -> Option<u64> {
        next_grid_point(v, 1)
    }

    fn points_per_loop(&self, _pe_cycles: u32) -> u32 {
        1
    }

    fn programs_preempt(&self) -> bool {
        self.programs_preempt
    }

    fn guard(&self) -> Option<Guard> {
        Some(self.guard)
    }
}
