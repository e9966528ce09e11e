//! `fifo`: first erased, first reused.

use super::FreePolicy;
use crate::ids::BlockId;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

#[derive(Clone, Default)]
pub struct Fifo(VecDeque<BlockId>);

impl FreePolicy for Fifo {
    type Params = Params;
    fn new(_: &Params, _: &()) -> Fifo {
        Fifo::default()
    }
    #[inline]
    fn push(&mut self, block: BlockId, _: u32) {
        self.0.push_back(block);
    }
    #[inline]
    fn pop(&mut self) -> Option<BlockId> {
        self.0.pop_front()
    }
    #[inline]
    fn len(&self) -> u32 {
        self.0.len() as u32
    }
    fn blocks(&self) -> Vec<BlockId> {
        self.0.iter().copied().collect()
    }
}
