//! `none` (baseline): a read waits until the erase completes.

use super::{EraseSuspend, EraseView, Guard};
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

#[derive(Clone, Copy, Debug, Default)]
pub struct NoSuspend;

impl EraseSuspend for NoSuspend {
    type Params = Params;

    fn new(_: &Params, _: &()) -> NoSuspend {
        NoSuspend
    }

    #[inline]
    fn next_point(&self, _v: &EraseView) -> Option<u64> {
        None
    }

    fn points_per_loop(&self, _pe_cycles: u32) -> u32 {
        0
    }

    fn suspends(&self) -> bool {
        false
    }

    fn guard(&self) -> Option<Guard> {
        Some(Guard::default())
    }
}
