//! `ssr-dynamic`, SSR(d): as SSR(s), with N taken from the erased block's P/E cycles through
//! a step table (paper, Fig. 8(b): 30 safe points while the block is young, 10 from 1,000
//! P/E cycles on; fewer as wear grows, following the safe limit of Fig. 7).

use super::{next_grid_point, EraseView};
use crate::config::step_lookup;

#[derive(Clone, Debug)]
pub struct SsrDynamic {
    table: Vec<(u32, u32)>,
}

impl SsrDynamic {
    /// `table`: [from_pe_cycles, points per loop], validated by the config.
    pub fn new(table: Vec<(u32, u32)>) -> SsrDynamic {
        SsrDynamic { table }
    }

    pub fn points_per_loop(&self, pe_cycles: u32) -> u32 {
        step_lookup(&self.table, pe_cycles).max(1)
    }

    #[inline]
    pub fn next_point(&self, v: &EraseView) -> Option<u64> {
        next_grid_point(v, self.points_per_loop(v.pe_cycles))
    }
}
