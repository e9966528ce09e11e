//! `none`: no wear leveling (spec 03's `greedy` baseline: GC alone decides which blocks
//! are erased).

use crate::ids::BlockId;
use super::{WearAction, WearCtx, WearPolicy, WearShape};
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

impl super::WearParams for Params {
    fn migrates(&self) -> bool {
        false
    }
}

#[derive(Clone)]
pub struct NoWearLeveling;

impl WearPolicy for NoWearLeveling {
    type Params = Params;
    fn new(_: &Params, _: &WearShape) -> Self {
        NoWearLeveling
    }
    #[inline]
    fn on_erase(&mut self, _: BlockId, _: &WearCtx) -> WearAction {
        WearAction::Idle
    }
    #[inline]
    fn never_acts(&self) -> bool {
        true
    }
}
