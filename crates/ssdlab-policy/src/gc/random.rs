//! `random`: a uniformly random qualifying full block (seeded).

use crate::ids::BlockId;
use super::sets::FullSet;
use super::{IndexShape, SelectCtx, VictimPolicy};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

#[derive(Clone)]
pub struct Random {
    pub(super) set: FullSet,
}

/// A qualifying member of `plane`: a few random draws, then a scan from a random start so
/// the choice stays fair and bounded. Shared with `d-choices`' fallback.
pub(super) fn draw(set: &FullSet, ctx: &mut SelectCtx) -> Option<u32> {
    let m = &set.members[ctx.plane.idx()];
    if m.is_empty() {
        return None;
    }
    let ok = |b: u32| ctx.blocks.valid_units[b as usize] <= ctx.max_valid;
    for _ in 0..8 {
        let b = m[ctx.rng.gen_range(0..m.len())];
        if ok(b) {
            return Some(b);
        }
    }
    let start = ctx.rng.gen_range(0..m.len());
    (0..m.len()).map(|i| m[(start + i) % m.len()]).find(|&b| ok(b))
}

impl VictimPolicy for Random {
    type Params = Params;

    fn new(_: &Params, s: &IndexShape) -> Random {
        Random {
            set: FullSet::new(s.planes, s.blocks),
        }
    }

    super::sets::full_set_membership!();

    fn select(&mut self, ctx: &mut SelectCtx) -> Option<BlockId> {
        let victim = draw(&self.set, ctx)?;
        self.set.remove(ctx.plane.0, victim);
        Some(BlockId(victim))
    }
}
