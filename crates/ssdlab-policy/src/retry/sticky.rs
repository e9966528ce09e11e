//! `sticky`: a read starts at the step that last succeeded on its block since the block's
//! last erase (controllers keep such per-block read offsets; an erase forgets them).

use super::{ReadRetry, RetryCtx};
use crate::ids::BlockId;
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

#[derive(Clone, Debug, Default)]
pub struct Sticky {
    /// Per block: the last good step, and the block's erase count when it was recorded.
    step: Vec<u8>,
    erases: Vec<u32>,
    max: u32,
}

impl ReadRetry for Sticky {
    type Params = Params;

    fn new(_: &Params, ctx: &RetryCtx) -> Sticky {
        Sticky {
            step: vec![0; ctx.blocks as usize],
            erases: vec![0; ctx.blocks as usize],
            max: ctx.retry_steps,
        }
    }

    #[inline]
    fn start(&self, block: BlockId, erases: u32, _: impl FnOnce() -> u32) -> u32 {
        let b = block.idx();
        if self.erases[b] == erases {
            self.step[b] as u32
        } else {
            0
        }
    }

    #[inline]
    fn succeeded(&mut self, block: BlockId, erases: u32, step: u32) {
        let b = block.idx();
        self.step[b] = step.min(self.max) as u8;
        self.erases[b] = erases;
    }
}
