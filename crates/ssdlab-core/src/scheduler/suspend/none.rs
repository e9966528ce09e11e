//! `none` (baseline): a read waits until the erase completes.

use super::EraseView;

#[derive(Clone, Copy, Debug, Default)]
pub struct NoSuspend;

impl NoSuspend {
    #[inline]
    pub fn next_point(&self, _v: &EraseView) -> Option<u64> {
        None
    }
}
