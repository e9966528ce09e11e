//! `weighted-round-robin`: NVMe's weighted round robin with urgent priority class. Urgent
//! queues are served first (round robin among them); otherwise the high, medium and low
//! classes take turns, each taking up to its weight in commands per turn, round robin
//! (with `burst`) among the queues of a class. A class with nothing waiting passes its turn.

use super::{check_burst, round_robin_in, Arbiter, ArbiterCtx, Priority};
use crate::SwarmCtx;
use rand::Rng;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::SimRng;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Commands taken from one queue per turn (NVMe's arbitration burst): 1, 2, 4, … 64.
    pub burst: u32,
    /// Commands per round of the high, medium and low classes (NVMe: 1 to 256).
    pub high_weight: u32,
    pub medium_weight: u32,
    pub low_weight: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            burst: 1,
            high_weight: 4,
            medium_weight: 2,
            low_weight: 1,
        }
    }
}

impl super::ArbitrationParams for Params {
    fn priority_classes(&self) -> bool {
        true
    }
}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, _: &SwarmCtx) -> Params {
        Params {
            burst: [1, 2, 4][rng.gen_range(0..3)],
            high_weight: rng.gen_range(1..=8),
            low_weight: rng.gen_range(1..=3),
            ..Params::default()
        }
    }

    fn check(&self) -> Result<(), (&'static str, String)> {
        check_burst(self.burst)?;
        for (k, w) in [
            ("high_weight", self.high_weight),
            ("medium_weight", self.medium_weight),
            ("low_weight", self.low_weight),
        ] {
            if w == 0 || w > 256 {
                return Err((k, format!("{w}: NVMe's weights are 1 to 256")));
            }
        }
        Ok(())
    }
}

/// One class's queues and its round-robin position.
#[derive(Clone, Debug, Default)]
struct Class {
    queues: Vec<u32>,
    at: usize,
    taken: u32,
}

#[derive(Clone, Debug)]
pub struct WeightedRoundRobin {
    /// Urgent, high, medium, low.
    classes: [Class; 4],
    weights: [u32; 4],
    burst: u32,
    /// The weighted class whose turn it is (1..=3) and the commands it took this turn.
    turn: usize,
    used: u32,
}

impl Arbiter for WeightedRoundRobin {
    type Params = Params;

    fn new(p: &Params, ctx: &ArbiterCtx) -> WeightedRoundRobin {
        let mut classes: [Class; 4] = Default::default();
        for (q, c) in ctx.classes.iter().enumerate() {
            let i = match c {
                Priority::Urgent => 0,
                Priority::High => 1,
                Priority::Medium => 2,
                Priority::Low => 3,
            };
            classes[i].queues.push(q as u32);
        }
        WeightedRoundRobin {
            classes,
            weights: [0, p.high_weight, p.medium_weight, p.low_weight],
            burst: p.burst,
            turn: 1,
            used: 0,
        }
    }

    fn pick(&mut self, waiting: &[u32]) -> Option<u32> {
        let burst = self.burst;
        let u = &mut self.classes[0];
        if let Some(q) = round_robin_in(&u.queues, waiting, &mut u.at, &mut u.taken, burst) {
            return Some(q);
        }
        // At most a full round of turns (each class once, the current one twice: its
        // remaining weight, then a fresh one).
        for _ in 0..4 {
            if self.used < self.weights[self.turn] {
                let c = &mut self.classes[self.turn];
                if let Some(q) = round_robin_in(&c.queues, waiting, &mut c.at, &mut c.taken, burst)
                {
                    self.used += 1;
                    return Some(q);
                }
            }
            self.turn = if self.turn == 3 { 1 } else { self.turn + 1 };
            self.used = 0;
        }
        None
    }
}
