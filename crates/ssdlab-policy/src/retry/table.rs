//! `table`: every read starts at step 0 of the chip's predefined read-retry table.

use super::{ReadRetry, RetryCtx};
use crate::ids::BlockId;
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

#[derive(Clone, Copy, Debug, Default)]
pub struct Table;

impl ReadRetry for Table {
    type Params = Params;

    fn new(_: &Params, _: &RetryCtx) -> Table {
        Table
    }

    #[inline]
    fn start(&self, _: BlockId, _: u32, _: impl FnOnce() -> u32) -> u32 {
        0
    }
}
