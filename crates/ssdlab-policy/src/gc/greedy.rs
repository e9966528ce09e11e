//! `greedy`: the full block with the fewest valid units (Rosenblum & Ousterhout's cleaner
//! without age; optimal for uniform traffic among single-victim policies). O(1) per event
//! through per-plane buckets by valid count (as in Cosmos+ OpenSSD's GreedyFTL).

use crate::ids::{BlockId, PlaneId};
use super::sets::Buckets;
use super::{IndexShape, SelectCtx, VictimPolicy};
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

#[derive(Clone)]
pub struct Greedy {
    pub(super) buckets: Buckets,
}

impl VictimPolicy for Greedy {
    type Params = Params;

    fn new(_: &Params, s: &IndexShape) -> Greedy {
        Greedy {
            buckets: Buckets::new(s.planes, s.blocks, s.units_per_block),
        }
    }

    #[inline]
    fn on_full(&mut self, plane: PlaneId, block: BlockId, valid: u32) {
        let (plane, block) = (plane.0, block.0);
        self.buckets.insert(plane, block, valid);
    }

    #[inline]
    fn on_invalidate(&mut self, plane: PlaneId, block: BlockId, valid: u32) {
        let (plane, block) = (plane.0, block.0);
        self.buckets.remove(block);
        self.buckets.insert(plane, block, valid);
    }

    #[inline]
    fn prefetch(&self, block: BlockId) {
        let block = block.0;
        self.buckets.prefetch(block);
    }

    #[inline]
    fn remove(&mut self, _plane: PlaneId, block: BlockId, _valid: u32) {
        let block = block.0;
        self.buckets.remove(block);
    }

    #[inline]
    fn select(&mut self, ctx: &mut SelectCtx) -> Option<BlockId> {
        let v = self.buckets.min(ctx.plane.0, ctx.max_valid)?;
        self.buckets.remove(v);
        Some(BlockId(v))
    }

    fn holds(&self, plane: PlaneId, block: BlockId, valid: u32) -> bool {
        let (plane, block) = (plane.0, block.0);
        self.buckets.members(plane, valid).any(|b| b == block)
    }

    fn count(&self, plane: PlaneId) -> usize {
        let plane = plane.0;
        (0..=self.buckets.units_per_block())
            .map(|v| self.buckets.members(plane, v).count())
            .sum()
    }
}
