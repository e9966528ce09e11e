//! `adaptive`: wear leveling whose trigger bound adapts to the write pattern, after Liao
//! et al. (2015), as the EPET paper uses it for comparison.
//!
//! The erase-count difference state is `D = EC(block just erased by GC) − EC(least-worn
//! full block of the plane)`. When `D > bound`, the least-worn block's data moves into the
//! block just erased (worn blocks get cold data) and the cold block rejoins the rotation.
//! The bound follows the write pattern: every `window_erases` GC erases it is recomputed as
//! `max(min_bound, max_bound · (1 − c))`, where `c` is the share of the region's usable
//! blocks whose erase count is at most half the mean — blocks the workload leaves alone.
//! Skewed writes (many such blocks) level eagerly; uniform writes hardly level at all.
//!
//! Choices (neither paper gives numbers): `max_bound` 100, `min_bound` 10,
//! `window_erases` 1024; the bound starts at `max_bound`.

use crate::ids::BlockId;
use super::{WearAction, WearCtx, WearPolicy, WearShape};
use crate::flash::BlockState;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    pub max_bound: u32,
    pub min_bound: u32,
    pub window_erases: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            max_bound: 100,
            min_bound: 10,
            window_erases: 1024,
        }
    }
}

impl super::WearParams for Params {}

impl crate::PolicyParams for Params {
    fn check(&self) -> Result<(), (&'static str, String)> {
        if self.min_bound > self.max_bound {
            return Err((
                "min_bound",
                format!("{} is above max_bound {}", self.min_bound, self.max_bound),
            ));
        }
        Ok(())
    }
}

#[derive(Clone)]
pub struct Adaptive {
    p: Params,
    /// Current trigger bound on the erase-count difference.
    pub bound: u32,
    erases: u32,
    shape: WearShape,
}

impl Adaptive {
    /// The bound for the current erase-count distribution of the region.
    fn adapt(&mut self, ctx: &WearCtx) {
        let counts = || {
            self.shape
                .blocks()
                .filter(|&b| ctx.blocks.state[b as usize] != BlockState::Bad)
                .map(|b| ctx.blocks.erase_count[b as usize] as u64)
        };
        let (n, sum) = counts().fold((0u64, 0u64), |(n, s), e| (n + 1, s + e));
        if n == 0 {
            return;
        }
        let idle = counts().filter(|&e| 2 * e * n <= sum).count() as f64 / n as f64;
        let b = (self.p.max_bound as f64 * (1.0 - idle)).round() as u32;
        self.bound = b.max(self.p.min_bound);
    }
}

impl WearPolicy for Adaptive {
    type Params = Params;

    fn new(p: &Params, s: &WearShape) -> Adaptive {
        Adaptive {
            p: p.clone(),
            bound: p.max_bound,
            erases: 0,
            shape: *s,
        }
    }

    fn on_erase(&mut self, block: BlockId, ctx: &WearCtx) -> WearAction {
        let block = block.0;
        if !ctx.after_gc {
            return WearAction::Idle;
        }
        self.erases += 1;
        if self.erases >= self.p.window_erases.max(1) {
            self.erases = 0;
            self.adapt(ctx);
        }
        let worn = ctx.blocks.erase_count[block as usize];
        match ctx.least_worn(block) {
            Some(c) if worn > ctx.blocks.erase_count[c as usize] + self.bound => {
                WearAction::Migrate {
                    from: BlockId(c),
                    into: BlockId(block),
                }
            }
            _ => WearAction::Idle,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests_util::{ctx, setup};
    use super::*;

    #[test]
    fn bound_shrinks_when_writes_leave_blocks_alone() {
        let (shape, mut blocks) = setup(4);
        let p = Params {
            max_bound: 100,
            min_bound: 10,
            window_erases: 1,
        };
        let mut a = Adaptive::new(&p, &shape);
        // Even wear: no idle blocks, bound stays at max; a gap of 50 does not trigger.
        blocks.erase_count = vec![60, 50, 55, 58];
        assert_eq!(a.on_erase(BlockId(0), &ctx(&blocks, &shape, true)), WearAction::Idle);
        assert_eq!(a.bound, 100);
        // Skewed: two of four blocks at most half the mean: bound 50; gap 80 > 50.
        blocks.erase_count = vec![200, 5, 10, 180];
        let act = a.on_erase(BlockId(0), &ctx(&blocks, &shape, true));
        assert_eq!(a.bound, 50);
        assert_eq!(act, WearAction::Migrate { from: BlockId(1), into: BlockId(0) });
    }
}
