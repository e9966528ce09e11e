//! `min-erase`: the free block with the lowest erase count, ties by block id (the
//! allocation of EPET, spec 03; it narrows the gap between the first bad block and device
//! failure).

use super::FreePolicy;
use crate::ids::BlockId;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

/// Min-heap on (erase count, block id).
#[derive(Clone, Default)]
pub struct MinErase(BinaryHeap<Reverse<(u32, BlockId)>>);

impl FreePolicy for MinErase {
    type Params = Params;
    fn new(_: &Params, _: &()) -> MinErase {
        MinErase::default()
    }
    #[inline]
    fn push(&mut self, block: BlockId, erase_count: u32) {
        self.0.push(Reverse((erase_count, block)));
    }
    #[inline]
    fn pop(&mut self) -> Option<BlockId> {
        self.0.pop().map(|Reverse((_, b))| b)
    }
    #[inline]
    fn len(&self) -> u32 {
        self.0.len() as u32
    }
    fn blocks(&self) -> Vec<BlockId> {
        self.0.iter().map(|Reverse((_, b))| *b).collect()
    }
}
