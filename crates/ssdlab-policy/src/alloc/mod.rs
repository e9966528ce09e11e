//! Free-block allocation: each region keeps one pool of erased blocks per plane and hands
//! them out by its policy when a write stream opens a block.
//!
//! A new policy is one file here (a `Params` struct and a type implementing
//! [`FreePolicy`]) plus one registration line below.

use crate::ids::BlockId;

super::policy_registry! {
    $
    /// `[ftl.allocation]`: which free block a stream opens next.
    config AllocConfig default Fifo;
    /// The free pool of one (region, plane).
    runtime FreePool: FreePolicy(());
    params super::PolicyParams;
    /// Free blocks in the order they were erased.
    "fifo" => Fifo(fifo::Fifo),
    /// The free block with the fewest erases (ties: lowest id).
    "min-erase" => MinErase(min_erase::MinErase),
}

/// A pool of erased blocks.
pub trait FreePolicy: Sized {
    type Params;
    fn new(params: &Self::Params, ctx: &()) -> Self;
    fn push(&mut self, block: BlockId, erase_count: u32);
    fn pop(&mut self) -> Option<BlockId>;
    fn len(&self) -> u32;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The blocks in the pool, in no particular order (invariant checker).
    fn blocks(&self) -> Vec<BlockId>;
}

impl FreePool {
    #[inline]
    pub fn push(&mut self, block: BlockId, erase_count: u32) {
        dispatch!(self, p => p.push(block, erase_count))
    }

    #[inline]
    pub fn pop(&mut self) -> Option<BlockId> {
        dispatch!(self, p => p.pop())
    }

    #[inline]
    pub fn len(&self) -> u32 {
        dispatch!(self, p => p.len())
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn blocks(&self) -> Vec<BlockId> {
        dispatch!(self, p => p.blocks())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_hand_out_blocks_by_policy() {
        let fill = |cfg: AllocConfig| {
            let mut p = FreePool::new(&cfg, &());
            for (block, erase_count) in [(10, 5), (11, 1), (12, 3), (13, 1)] {
                p.push(BlockId(block), erase_count);
            }
            std::iter::from_fn(move || p.pop().map(|b| b.0)).collect::<Vec<u32>>()
        };
        assert_eq!(fill(AllocConfig::default()), vec![10, 11, 12, 13]);
        assert_eq!(
            fill(AllocConfig::MinErase(Default::default())),
            vec![11, 13, 12, 10],
            "lowest erase count, ties by id"
        );
    }
}
