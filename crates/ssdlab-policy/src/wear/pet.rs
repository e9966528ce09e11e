//! `pet`: Prediction of Elapsed Time wear leveling (Kim & Kwak, 2016), the predecessor
//! EPET improves on.
//!
//! At every GC scan each block of the plane updates its **invalidation rate**, the change
//! of its invalid units since the previous scan smoothed as `rate ← (rate + ΔI) / 2`; a
//! block whose rate is at least the plane's average is predicted to become a victim soon
//! (short elapsed time: hot), the others are cold. The share of recent erases that hit hot
//! blocks is compared with `th_percent`; after a GC erase, when it exceeds TH, the cold
//! block with the lowest rate (then fewest invalid units, then fewest erases) — never the
//! one chosen last time — has its data moved into the block the GC just erased, and is
//! erased.
//!
//! Choices (the EPET paper gives none of PET's internals): one-bit classification on the
//! smoothed change of invalid units (EPET's EwIP smooths the invalid units themselves and
//! adds the BaL levels), the same erase-share measure and window as EPET, FIFO allocation
//! unless configured otherwise.

use crate::ids::BlockId;
use super::{HotShare, WearAction, WearCtx, WearPolicy, WearShape};
use crate::flash::NONE;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// TH: wear leveling runs when the hot share of recent erases exceeds this percentage.
    pub th_percent: f64,
    /// Erases over which the hot share is measured (0 = the region's block count).
    pub window_erases: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            th_percent: 90.0,
            window_erases: 0,
        }
    }
}

impl super::WearParams for Params {}

impl crate::PolicyParams for Params {
    fn check(&self) -> Result<(), (&'static str, String)> {
        super::check_th_percent(self.th_percent)
    }
}

#[derive(Clone)]
pub struct Pet {
    th_percent: f64,
    last_invalid: Vec<u32>,
    /// Invalidation rate per scan, smoothed (`(rate + ΔI) / 2`), scaled by 2^8.
    delta: Vec<u32>,
    hot: Vec<bool>,
    share: HotShare,
    last_cold: u32,
    /// Migrations chosen so far (tests).
    pub migrations: u64,
}

impl WearPolicy for Pet {
    type Params = Params;

    fn new(p: &Params, s: &WearShape) -> Pet {
        let n = (s.planes * s.blocks_per_plane) as usize;
        let window = match p.window_erases {
            0 => (s.planes * s.region_blocks_per_plane) as u64,
            w => w as u64,
        };
        Pet {
            th_percent: p.th_percent,
            last_invalid: vec![0; n],
            delta: vec![0; n],
            hot: vec![false; n],
            share: HotShare::new(window),
            last_cold: NONE,
            migrations: 0,
        }
    }

    fn on_gc_scan(&mut self, ctx: &WearCtx) {
        let blocks = ctx.shape.plane_blocks(ctx.plane.0);
        let mut sum = 0u64;
        for b in blocks.clone() {
            let (i, b) = (ctx.invalid_units(b), b as usize);
            // A block erased since the last scan starts counting again.
            let d = i.checked_sub(self.last_invalid[b]).unwrap_or(i);
            self.delta[b] = (self.delta[b] + (d << 8)) / 2;
            self.last_invalid[b] = i;
            sum += self.delta[b] as u64;
        }
        let n = blocks.len().max(1) as u64;
        for b in blocks {
            self.hot[b as usize] = self.delta[b as usize] as u64 * n >= sum.max(1);
        }
    }

    fn on_erase(&mut self, block: BlockId, ctx: &WearCtx) -> WearAction {
        let block = block.0;
        self.share.count(self.hot[block as usize]);
        if !ctx.after_gc || self.share.percent() <= self.th_percent {
            return WearAction::Idle;
        }
        let last = self.last_cold;
        let cold = ctx
            .shape
            .plane_blocks(ctx.plane.0)
            .filter(|&b| b != block && b != last && ctx.migratable(b))
            .min_by_key(|&b| {
                let ec = ctx.blocks.erase_count[b as usize];
                (self.delta[b as usize], ctx.invalid_units(b), ec, b)
            });
        match cold {
            Some(from) => {
                self.last_cold = from;
                self.migrations += 1;
                WearAction::Migrate {
                    from: BlockId(from),
                    into: BlockId(block),
                }
            }
            None => WearAction::Idle,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests_util::{ctx, setup};
    use super::*;

    #[test]
    fn classifies_by_invalidation_and_never_repeats_the_cold_block() {
        let (shape, mut blocks) = setup(4);
        let p = Params {
            th_percent: 50.0,
            window_erases: 0,
        };
        let mut pet = Pet::new(&p, &shape);
        blocks.valid_units = vec![8, 8, 8, 8];
        pet.on_gc_scan(&ctx(&blocks, &shape, false));
        // Blocks 0 and 1 lose 4 and 2 units, block 2 one, block 3 none: mean ΔI 1.75.
        blocks.valid_units = vec![4, 6, 7, 8];
        pet.on_gc_scan(&ctx(&blocks, &shape, false));
        assert_eq!(pet.hot, vec![true, true, false, false]);
        let a = pet.on_erase(BlockId(0), &ctx(&blocks, &shape, true));
        assert_eq!(a, WearAction::Migrate { from: BlockId(3), into: BlockId(0) });
        // Block 3 again would be the coldest; PET takes the next one.
        let a = pet.on_erase(BlockId(1), &ctx(&blocks, &shape, true));
        assert_eq!(a, WearAction::Migrate { from: BlockId(2), into: BlockId(1) });
    }
}
