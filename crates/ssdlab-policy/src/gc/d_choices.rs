//! `d-choices`: draw `d` full blocks uniformly at random (with replacement) and collect the
//! one with the fewest valid units (Van Houdt, "A mean field model for a class of garbage
//! collection algorithms in flash-based solid state drives", SIGMETRICS 2013). d = 1 is
//! `random`; as d grows it approaches `greedy` at O(d) per selection and no per-write
//! index upkeep. Draws that do not qualify (too few invalid units) are skipped; if none of
//! the d qualifies, a random qualifying block is taken as `random` would.

use crate::ids::BlockId;
use super::sets::FullSet;
use super::{IndexShape, SelectCtx, VictimPolicy};
use crate::SwarmCtx;
use rand::Rng;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::SimRng;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Candidates drawn per selection (≥ 1).
    pub d: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params { d: 10 }
    }
}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, _: &SwarmCtx) -> Params {
        Params {
            d: rng.gen_range(1..=12),
        }
    }

    fn check(&self) -> Result<(), (&'static str, String)> {
        if self.d == 0 {
            return Err(("d", "must be >= 1 (candidates drawn per selection)".into()));
        }
        Ok(())
    }
}

#[derive(Clone)]
pub struct DChoices {
    d: u32,
    pub(super) set: FullSet,
}

impl VictimPolicy for DChoices {
    type Params = Params;

    fn new(p: &Params, s: &IndexShape) -> DChoices {
        DChoices {
            d: p.d.max(1),
            set: FullSet::new(s.planes, s.blocks),
        }
    }

    super::sets::full_set_membership!();

    fn select(&mut self, ctx: &mut SelectCtx) -> Option<BlockId> {
        let m = &self.set.members[ctx.plane.idx()];
        if m.is_empty() {
            return None;
        }
        let mut best: Option<(u32, u32)> = None;
        for _ in 0..self.d {
            let b = m[ctx.rng.gen_range(0..m.len())];
            let v = ctx.blocks.valid_units[b as usize];
            if v <= ctx.max_valid && best.is_none_or(|(_, bv)| v < bv) {
                best = Some((b, v));
            }
        }
        let victim = match best {
            Some((b, _)) => b,
            None => super::random::draw(&self.set, ctx)?,
        };
        self.set.remove(ctx.plane.0, victim);
        Some(BlockId(victim))
    }
}
