//! `oracle`: every read starts at its first good step (no hard retry; a read only the
//! soft decoder corrects still pays the soft-decode step): a lower bound for any policy.

use super::{ReadRetry, RetryCtx};
use crate::ids::BlockId;
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

#[derive(Clone, Copy, Debug, Default)]
pub struct Oracle {
    max: u32,
}

impl ReadRetry for Oracle {
    type Params = Params;

    fn new(_: &Params, ctx: &RetryCtx) -> Oracle {
        Oracle {
            max: ctx.retry_steps,
        }
    }

    #[inline]
    fn start(&self, _: BlockId, _: u32, optimal: impl FnOnce() -> u32) -> u32 {
        optimal().min(self.max)
    }
}
