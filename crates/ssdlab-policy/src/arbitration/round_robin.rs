//! `round-robin`: NVMe's default arbitration. Queues are served in turn, up to `burst`
//! commands from a queue before moving on; priority classes are ignored.

use super::{check_burst, round_robin_in, Arbiter, ArbiterCtx};
use crate::SwarmCtx;
use rand::Rng;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::SimRng;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Commands taken from one queue per turn (NVMe's arbitration burst): 1, 2, 4, … 64.
    pub burst: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params { burst: 1 }
    }
}

impl super::ArbitrationParams for Params {}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, _: &SwarmCtx) -> Params {
        Params {
            burst: [1, 2, 64][rng.gen_range(0..3)],
        }
    }

    fn check(&self) -> Result<(), (&'static str, String)> {
        check_burst(self.burst)
    }
}

#[derive(Clone, Debug)]
pub struct RoundRobin {
    queues: Vec<u32>,
    at: usize,
    taken: u32,
    burst: u32,
}

impl Arbiter for RoundRobin {
    type Params = Params;

    fn new(p: &Params, ctx: &ArbiterCtx) -> RoundRobin {
        RoundRobin {
            queues: (0..ctx.classes.len() as u32).collect(),
            at: 0,
            taken: 0,
            burst: p.burst,
        }
    }

    #[inline]
    fn pick(&mut self, waiting: &[u32]) -> Option<u32> {
        round_robin_in(&self.queues, waiting, &mut self.at, &mut self.taken, self.burst)
    }
}
