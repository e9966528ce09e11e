//! Block manager: per-plane free pools, the open (write-frontier) blocks for host and GC
//! writes, and the striping of consecutive host pages over the parallel units.

use crate::config::FreeBlockAllocation;
use crate::flash::NONE;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Free blocks of one plane, handed out by the configured policy.
#[derive(Clone)]
pub enum FreePool {
    Fifo(VecDeque<u32>),
    /// Min-heap on (erase count, block id): lowest wear first, ties by id.
    MinWear(BinaryHeap<Reverse<(u32, u32)>>),
}

impl FreePool {
    fn new(policy: FreeBlockAllocation) -> FreePool {
        match policy {
            FreeBlockAllocation::Fifo => FreePool::Fifo(VecDeque::new()),
            FreeBlockAllocation::MinWear => FreePool::MinWear(BinaryHeap::new()),
        }
    }

    #[inline]
    pub fn len(&self) -> u32 {
        match self {
            FreePool::Fifo(q) => q.len() as u32,
            FreePool::MinWear(h) => h.len() as u32,
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn push(&mut self, block: u32, erase_count: u32) {
        match self {
            FreePool::Fifo(q) => q.push_back(block),
            FreePool::MinWear(h) => h.push(Reverse((erase_count, block))),
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<u32> {
        match self {
            FreePool::Fifo(q) => q.pop_front(),
            FreePool::MinWear(h) => h.pop().map(|Reverse((_, b))| b),
        }
    }
}

/// Which write frontier of a plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Host = 0,
    Gc = 1,
}

#[derive(Clone)]
pub struct PlaneAlloc {
    pub free: FreePool,
    /// Open block per stream ([`NONE`] when none is open).
    pub open: [u32; 2],
}

#[derive(Clone)]
pub struct Allocator {
    pub planes: Vec<PlaneAlloc>,
    stripe: Vec<u32>,
    cursor: usize,
    /// Free blocks a plane keeps back from host writes for GC.
    pub host_reserve_blocks: u32,
}

impl Allocator {
    pub fn new(
        policy: FreeBlockAllocation,
        planes: u32,
        stripe: Vec<u32>,
        host_reserve_blocks: u32,
    ) -> Allocator {
        Allocator {
            planes: (0..planes)
                .map(|_| PlaneAlloc {
                    free: FreePool::new(policy),
                    open: [NONE; 2],
                })
                .collect(),
            stripe,
            cursor: 0,
            host_reserve_blocks,
        }
    }

    #[inline]
    pub fn free_blocks(&self, plane: u32) -> u32 {
        self.planes[plane as usize].free.len()
    }

    /// The next plane in stripe order, advancing the cursor.
    #[inline]
    pub fn next_stripe_plane(&mut self) -> u32 {
        let p = self.stripe[self.cursor];
        self.cursor += 1;
        if self.cursor == self.stripe.len() {
            self.cursor = 0;
        }
        p
    }

    pub fn stripe_len(&self) -> usize {
        self.stripe.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_hand_out_blocks_by_policy() {
        let fill = |policy| {
            let mut p = FreePool::new(policy);
            for (block, erase_count) in [(10, 5), (11, 1), (12, 3), (13, 1)] {
                p.push(block, erase_count);
            }
            std::iter::from_fn(move || p.pop()).collect::<Vec<u32>>()
        };
        assert_eq!(fill(FreeBlockAllocation::Fifo), vec![10, 11, 12, 13]);
        assert_eq!(
            fill(FreeBlockAllocation::MinWear),
            vec![11, 13, 12, 10],
            "lowest erase count, ties by id"
        );
    }
}
