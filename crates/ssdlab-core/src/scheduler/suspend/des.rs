//! `des`, deferred erase suspension (Kim et al., USENIX ATC'19): finish the current erase
//! loop, suspend, serve the reads queued at that moment, resume with the next loop. At
//! most one suspension per loop boundary, so at most loops − 1 per erase.

use super::{next_grid_point, EraseView};

#[derive(Clone, Copy, Debug, Default)]
pub struct Des;

impl Des {
    #[inline]
    pub fn next_point(&self, v: &EraseView) -> Option<u64> {
        next_grid_point(v, 1)
    }
}
