//! `ssr-static`, SSR(s): N evenly spaced safe points per erase loop (paper: N = 10, one
//! every 500 µs of a 5 ms loop). A read runs the erase to the next unused safe point, which
//! bounds the read delay an erase causes by loop time / N + the suspend penalty, and the
//! suspensions per loop by N.

use super::{next_grid_point, EraseView};

#[derive(Clone, Copy, Debug)]
pub struct SsrStatic {
    n: u32,
}

impl SsrStatic {
    pub fn new(points_per_loop: u32) -> SsrStatic {
        SsrStatic {
            n: points_per_loop.max(1),
        }
    }

    pub fn points_per_loop(&self) -> u32 {
        self.n
    }

    #[inline]
    pub fn next_point(&self, v: &EraseView) -> Option<u64> {
        next_grid_point(v, self.n)
    }
}
