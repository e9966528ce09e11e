//! `des`, deferred erase suspension (Kim et al., USENIX ATC'19): finish the current erase
//! loop, suspend, serve the reads queued at that moment, resume with the next loop. At
//! most one suspension per loop boundary, so at most loops − 1 per erase.

use super::{next_grid_point, EraseSuspend, EraseView, Guard};
use serde::{Deserialize, Serialize};

/// The starvation guard (0 = no limit).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// An erase is not suspended again after this many suspensions.
    pub max_suspensions_per_erase: u32,
    /// An erase is not suspended again once postponed this long in total (penalties included).
    pub max_erase_postponement_ns: u64,
    /// Waiting host programs (the journal's too) may suspend an erase as reads do, at the
    /// same positions and under the same guard (default false: only reads do).
    pub programs_preempt: bool,
}

impl crate::policy::PolicyParams for Params {}

#[derive(Clone, Copy, Debug, Default)]
pub struct Des {
    guard: Guard,
    programs_preempt: bool,
}

impl EraseSuspend for Des {
    type Params = Params;

    fn new(p: &Params, _: &()) -> Des {
        Des {
            guard: Guard {
                max_suspensions_per_erase: p.max_suspensions_per_erase,
                max_erase_postponement_ns: p.max_erase_postponement_ns,
            },
            programs_preempt: p.programs_preempt,
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
