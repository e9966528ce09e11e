//! `epet`: Enhanced Prediction of Elapsed Time wear leveling (the paper of spec 03, seed
//! 002), with the corrections of its re-read (docs/wear-leveling.md).
//!
//! * **EwIP** (elapsed-time weight of invalid pages): at every GC scan, for every block of
//!   the plane, `C_EwIP = (I + EwIP) · β` with `I` its invalid units and `β = 0.5`.
//! * **BaL** (block level, 0..=`max_bal`, 0–1 cold, 2–3 hot): raised when the block's
//!   C_EwIP is at or above the plane's average, lowered when below (the paper's text; its
//!   pseudo-code says the opposite, which would call frequently invalidated blocks cold).
//! * **h_ratio**: by default the share of recent erases that hit blocks at hot levels
//!   (the paper's BaL Count table counts wear per level); `hot_share = "blocks"` uses the
//!   share of blocks at hot levels instead.
//! * After a GC erase, when `h_ratio` **exceeds** `th_percent` (the text; Table 4's trend
//!   confirms the direction): the cold block is the migratable block of minimum
//!   `bal / max_bal + ewip / units_per_block`, the block chosen last time costing
//!   `max_cost / max_bal` (> 2, so it is never picked twice in a row), ties going to the
//!   block with fewer erases (our choice: the paper's cost ignores wear, and many blocks
//!   cost 0, so a tie-break by id would shuttle the same data between two blocks); its
//!   valid data moves
//!   into the block the GC just erased (`v_blk`), then it is erased and freed.
//! * Free blocks are allocated by lowest erase count (`[ftl.allocation] policy =
//!   "min-erase"`; a separate setting, as for every algorithm).

use crate::ids::BlockId;
use super::{HotShare, WearAction, WearCtx, WearPolicy, WearShape};
use crate::flash::NONE;
use serde::{Deserialize, Serialize};

/// What h_ratio is a share of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HotShareBasis {
    /// Recent erases at hot levels (default; the corrected reading of the paper).
    #[default]
    Erases,
    /// Blocks at hot levels (the literal reading).
    Blocks,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// TH: wear leveling runs when h_ratio exceeds this percentage.
    pub th_percent: f64,
    pub beta: f64,
    pub max_bal: u8,
    /// Cost of the cold block chosen last time, times `max_bal`; raised to
    /// `2 · max_bal + 1` if smaller (it must exceed `2 · max_bal`).
    pub max_cost: f64,
    pub hot_share: HotShareBasis,
    /// Erases over which the hot share is measured (0 = the region's block count).
    pub window_erases: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            th_percent: 90.0,
            beta: 0.5,
            max_bal: 3,
            max_cost: 7.0,
            hot_share: HotShareBasis::Erases,
            window_erases: 0,
        }
    }
}

impl super::WearParams for Params {}

impl crate::PolicyParams for Params {
    fn check(&self) -> Result<(), (&'static str, String)> {
        super::check_th_percent(self.th_percent)?;
        if !(self.beta.is_finite() && self.beta >= 0.0) {
            return Err(("beta", format!("{} must be a finite number >= 0", self.beta)));
        }
        if !self.max_cost.is_finite() {
            return Err(("max_cost", format!("{} must be a finite number", self.max_cost)));
        }
        Ok(())
    }
}

#[derive(Clone)]
pub struct Epet {
    p: Params,
    ewip: Vec<f32>,
    bal: Vec<u8>,
    share: HotShare,
    last_cold: u32,
    units_per_block: f32,
    /// Migrations chosen so far (tests).
    pub migrations: u64,
}

impl Epet {
    fn hot(&self, block: u32) -> bool {
        2 * self.bal[block as usize] > self.p.max_bal
    }

    fn h_ratio_percent(&self, ctx: &WearCtx) -> f64 {
        match self.p.hot_share {
            HotShareBasis::Erases => self.share.percent(),
            HotShareBasis::Blocks => {
                let blocks = ctx.shape.plane_blocks(ctx.plane.0);
                let n = blocks.len().max(1) as f64;
                100.0 * blocks.filter(|&b| self.hot(b)).count() as f64 / n
            }
        }
    }

    fn cost(&self, block: u32) -> f64 {
        let max_bal = self.p.max_bal.max(1) as f64;
        if block == self.last_cold {
            return self.p.max_cost.max(2.0 * max_bal + 1.0) / max_bal;
        }
        let b = block as usize;
        self.bal[b] as f64 / max_bal + self.ewip[b] as f64 / self.units_per_block as f64
    }

    fn cold_block(&self, except: u32, ctx: &WearCtx) -> Option<u32> {
        ctx.shape
            .plane_blocks(ctx.plane.0)
            .filter(|&b| b != except && ctx.migratable(b))
            .min_by(|&a, &b| {
                let ec = |x: u32| ctx.blocks.erase_count[x as usize];
                self.cost(a)
                    .total_cmp(&self.cost(b))
                    .then(ec(a).cmp(&ec(b)))
                    .then(a.cmp(&b))
            })
    }
}

impl WearPolicy for Epet {
    type Params = Params;

    fn new(p: &Params, s: &WearShape) -> Epet {
        let n = (s.planes * s.blocks_per_plane) as usize;
        let window = match p.window_erases {
            0 => (s.planes * s.region_blocks_per_plane) as u64,
            w => w as u64,
        };
        Epet {
            p: p.clone(),
            ewip: vec![0.0; n],
            bal: vec![0; n],
            share: HotShare::new(window),
            last_cold: NONE,
            units_per_block: s.units_per_block.max(1) as f32,
            migrations: 0,
        }
    }

    fn on_gc_scan(&mut self, ctx: &WearCtx) {
        let beta = self.p.beta as f32;
        let blocks = ctx.shape.plane_blocks(ctx.plane.0);
        let mut sum = 0.0f64;
        for b in blocks.clone() {
            let e = &mut self.ewip[b as usize];
            *e = (ctx.invalid_units(b) as f32 + *e) * beta;
            sum += *e as f64;
        }
        let avg = (sum / blocks.len().max(1) as f64) as f32;
        for b in blocks {
            let (e, l) = (self.ewip[b as usize], &mut self.bal[b as usize]);
            *l = if e >= avg {
                (*l + 1).min(self.p.max_bal)
            } else {
                l.saturating_sub(1)
            };
        }
    }

    fn on_erase(&mut self, block: BlockId, ctx: &WearCtx) -> WearAction {
        let block = block.0;
        self.share.count(self.hot(block));
        if !ctx.after_gc || self.h_ratio_percent(ctx) <= self.p.th_percent {
            return WearAction::Idle;
        }
        match self.cold_block(block, ctx) {
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
    fn levels_follow_invalidation_and_cold_blocks_alternate() {
        let (shape, mut blocks) = setup(4);
        let p = Params {
            th_percent: 50.0,
            ..Params::default()
        };
        let mut e = Epet::new(&p, &shape);
        // Blocks 0 and 1 keep getting invalidated, 2 and 3 hold cold data.
        blocks.valid_units = vec![2, 3, 8, 8];
        for _ in 0..3 {
            e.on_gc_scan(&ctx(&blocks, &shape, false));
        }
        assert_eq!(e.bal, vec![3, 3, 0, 0]);
        // EwIP after three scans: (6·.5 + 6)·.5 ... = 5.25 for block 0.
        assert!((e.ewip[0] - 5.25).abs() < 1e-6, "{}", e.ewip[0]);
        // Hot erases push h_ratio above 50 %: the first GC erase of block 0 migrates the
        // cheapest cold block (2) into block 0 ...
        let a = e.on_erase(BlockId(0), &ctx(&blocks, &shape, true));
        assert_eq!(a, WearAction::Migrate { from: BlockId(2), into: BlockId(0) });
        // ... and the next one picks 3, not 2 again, though their costs are equal.
        let a = e.on_erase(BlockId(1), &ctx(&blocks, &shape, true));
        assert_eq!(a, WearAction::Migrate { from: BlockId(3), into: BlockId(1) });
        let a = e.on_erase(BlockId(0), &ctx(&blocks, &shape, true));
        assert_eq!(a, WearAction::Migrate { from: BlockId(2), into: BlockId(0) });
    }

    #[test]
    fn no_leveling_while_hot_erases_stay_below_th() {
        let (shape, blocks) = setup(4);
        let mut e = Epet::new(&Params::default(), &shape);
        // All blocks at level 0 (cold): h_ratio 0 %.
        for b in 0..4 {
            assert_eq!(e.on_erase(BlockId(b), &ctx(&blocks, &shape, true)), WearAction::Idle);
        }
        assert_eq!(e.migrations, 0);
    }
}
