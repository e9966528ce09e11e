//! `cost-benefit`: maximise (1 − u) · age / (1 + u) (Kawaguchi et al. 1995, after
//! Rosenblum's LFS cleaner), u = valid share, age = pages programmed since the block
//! closed. Scans the plane's full blocks (the score changes with time, so no static order
//! exists); compared exactly in integers.

use crate::ids::BlockId;
use super::sets::FullSet;
use super::{IndexShape, SelectCtx, VictimPolicy};
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

#[derive(Clone)]
pub struct CostBenefit {
    pub(super) set: FullSet,
}

impl VictimPolicy for CostBenefit {
    type Params = Params;

    fn new(_: &Params, s: &IndexShape) -> CostBenefit {
        CostBenefit {
            set: FullSet::new(s.planes, s.blocks),
        }
    }

    super::sets::full_set_membership!();

    fn select(&mut self, ctx: &mut SelectCtx) -> Option<BlockId> {
        // (U − v) · age / (U + v), cross-multiplied; ties by lower block id.
        let u = ctx.units_per_block as u128;
        let mut best: Option<(u32, u128, u128)> = None;
        for &b in &self.set.members[ctx.plane.idx()] {
            let v = ctx.blocks.valid_units[b as usize] as u128;
            if v > ctx.max_valid as u128 {
                continue;
            }
            let age = (ctx.now_seq - ctx.blocks.closed_seq[b as usize]) as u128 + 1;
            let (num, den) = ((u - v) * age, u + v);
            let better = match best {
                None => true,
                Some((bb, bn, bd)) => num * bd > bn * den || (num * bd == bn * den && b < bb),
            };
            if better {
                best = Some((b, num, den));
            }
        }
        let (victim, _, _) = best?;
        self.set.remove(ctx.plane.0, victim);
        Some(BlockId(victim))
    }
}
