//! `dual-pool`: the dual-pool wear leveler of Chang ("On efficient wear leveling for
//! large-scale flash-memory storage systems", SAC 2007), as the EPET paper uses it for
//! comparison.
//!
//! Blocks are in a hot or a cold pool. When a GC victim has just been erased and its erase
//! count exceeds the least-worn cold-pool block's by more than `threshold`, a **dirty swap**
//! moves that cold block's data into the worn block just erased, which joins the cold pool
//! (cold data rests on it), and the cold block, once erased, joins the hot pool (it takes
//! the hot writes). Pool adjustment: a cold-pool block that GC collects (its data was not
//! cold after all) moves to the hot pool.
//!
//! Choices (the EPET paper gives no parameters; Chang's pools are kept per plane here):
//! every block starts in the cold pool, so a block the workload never rewrites stays cold;
//! the worn side of the comparison is the block just erased (the block being worn now)
//! rather than the most-worn hot-pool block; `threshold` defaults to 16 erases.

use crate::ids::BlockId;
use super::{WearAction, WearCtx, WearPolicy, WearShape};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Erase-count gap between the worn block and the least-worn cold block that triggers
    /// a dirty swap (Chang's TH).
    pub threshold: u32,
}

impl super::WearParams for Params {}

impl crate::PolicyParams for Params {}

impl Default for Params {
    fn default() -> Self {
        Params { threshold: 16 }
    }
}

#[derive(Clone)]
pub struct DualPool {
    threshold: u32,
    /// Pool of each block (by block id): `true` = cold.
    cold: Vec<bool>,
    /// Dirty swaps so far (tests).
    pub swaps: u64,
}

impl WearPolicy for DualPool {
    type Params = Params;

    fn new(p: &Params, s: &WearShape) -> DualPool {
        let mut cold = vec![false; (s.planes * s.blocks_per_plane) as usize];
        for b in s.blocks() {
            cold[b as usize] = true;
        }
        DualPool {
            threshold: p.threshold,
            cold,
            swaps: 0,
        }
    }

    fn on_erase(&mut self, block: BlockId, ctx: &WearCtx) -> WearAction {
        let block = block.0;
        // An erased block is hot until cold data is swapped onto it.
        self.cold[block as usize] = false;
        if !ctx.after_gc {
            return WearAction::Idle;
        }
        let worn = ctx.blocks.erase_count[block as usize];
        let coldest = ctx
            .shape
            .plane_blocks(ctx.plane.0)
            .filter(|&b| self.cold[b as usize] && ctx.migratable(b))
            .min_by_key(|&b| (ctx.blocks.erase_count[b as usize], b));
        match coldest {
            Some(c) if worn > ctx.blocks.erase_count[c as usize] + self.threshold => {
                self.cold[c as usize] = false;
                self.cold[block as usize] = true;
                self.swaps += 1;
                WearAction::Migrate {
                    from: BlockId(c),
                    into: BlockId(block),
                }
            }
            _ => WearAction::Idle,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests_util::{ctx, setup};
    use super::*;

    #[test]
    fn swaps_when_the_gap_exceeds_the_threshold() {
        let (shape, mut blocks) = setup(4);
        let mut dp = DualPool::new(&Params { threshold: 2 }, &shape);
        blocks.erase_count = vec![5, 1, 2, 3];
        // Block 0 erased with 5 erases: coldest cold block is 1 (1 erase), gap 4 > 2.
        let a = dp.on_erase(BlockId(0), &ctx(&blocks, &shape, true));
        assert_eq!(a, WearAction::Migrate { from: BlockId(1), into: BlockId(0) });
        // Block 0 now holds cold data; block 1 is hot. Block 3 erased (3 erases): coldest
        // cold block is 2 (2 erases), gap 1: no swap.
        assert_eq!(dp.on_erase(BlockId(3), &ctx(&blocks, &shape, true)), WearAction::Idle);
        // The migration's own erase never triggers another swap.
        blocks.erase_count[2] = 0;
        assert_eq!(dp.on_erase(BlockId(1), &ctx(&blocks, &shape, false)), WearAction::Idle);
        assert_eq!(dp.swaps, 1);
    }
}
