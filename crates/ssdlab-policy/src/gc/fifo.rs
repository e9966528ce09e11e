//! `fifo`: the oldest full block (in the order blocks became full) that qualifies.

use crate::ids::{BlockId, PlaneId};
use super::{IndexShape, SelectCtx, VictimPolicy};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

#[derive(Clone)]
pub struct Fifo {
    pub(super) queues: Vec<VecDeque<u32>>,
}

impl VictimPolicy for Fifo {
    type Params = Params;

    fn new(_: &Params, s: &IndexShape) -> Fifo {
        Fifo {
            queues: (0..s.planes).map(|_| VecDeque::new()).collect(),
        }
    }

    fn on_full(&mut self, plane: PlaneId, block: BlockId, _: u32) {
        let (plane, block) = (plane.0, block.0);
        self.queues[plane as usize].push_back(block);
    }

    fn remove(&mut self, plane: PlaneId, block: BlockId, _: u32) {
        let (plane, block) = (plane.0, block.0);
        let q = &mut self.queues[plane as usize];
        if let Some(i) = q.iter().position(|&b| b == block) {
            q.remove(i);
        }
    }

    fn select(&mut self, ctx: &mut SelectCtx) -> Option<BlockId> {
        let q = &mut self.queues[ctx.plane.idx()];
        let i = q
            .iter()
            .position(|&b| ctx.blocks.valid_units[b as usize] <= ctx.max_valid)?;
        q.remove(i).map(BlockId)
    }

    fn holds(&self, plane: PlaneId, block: BlockId, _: u32) -> bool {
        let (plane, block) = (plane.0, block.0);
        self.queues[plane as usize].contains(&block)
    }

    fn count(&self, plane: PlaneId) -> usize {
        let plane = plane.0;
        self.queues[plane as usize].len()
    }
}
