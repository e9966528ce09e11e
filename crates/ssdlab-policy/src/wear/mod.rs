//! Wear leveling. A policy sees every GC victim scan (`on_gc_scan`) and every completed
//! erase (`on_erase`), and may answer an erase with [`WearAction::Migrate`]: move the
//! valid data of block `from` (a cold block of the same region and plane) into block
//! `into` (the block just erased, or `NONE` for a block of the region's wear stream),
//! then erase `from` so that it takes its share of future writes. The background engine
//! runs the migration as a relocation job (cause `wear_leveling`).
//!
//! A new policy is one file here (a `Params` struct and a type implementing
//! [`WearPolicy`]) plus one registration line below.

use crate::flash::{BlockState, BlockTable};
use crate::ids::{BlockId, PlaneId};

super::policy_registry! {
    $
    /// `[ftl.wear_leveling]`: the wear-leveling policy (`policy = "…"` + parameters).
    config WearConfig default None;
    /// The wear leveler of one region.
    runtime WearLeveler: WearPolicy(WearShape);
    params WearParams;
    /// No wear leveling.
    "none" => None(none::NoWearLeveling),
    /// Block Erasing Table: move a cold set's data when erases concentrate (Chang et al. 2007).
    "bet" => Bet(bet::Bet),
    /// Hot and cold pools; a dirty swap when wear differs by a threshold (Chang 2007).
    "dual-pool" => DualPool(dual_pool::DualPool),
    /// An erase-count bound that adapts to the write pattern (Liao et al. 2015).
    "adaptive" => Adaptive(adaptive::Adaptive),
    /// Prediction of Elapsed Time from invalidation rates (Kim & Kwak 2016).
    "pet" => Pet(pet::Pet),
    /// Enhanced PET: block levels from elapsed-time-weighted invalid pages (spec 03).
    "epet" => Epet(epet::Epet),
}

/// What a wear-leveling policy's parameters tell the rest of the device.
pub trait WearParams: super::PolicyParams {
    /// Whether the policy migrates data (the data region then keeps an open block per plane
    /// for its wear stream).
    fn migrates(&self) -> bool {
        true
    }
}

impl WearConfig {
    /// Whether the policy migrates data ([`WearParams::migrates`]).
    pub fn migrates(&self) -> bool {
        self.params().migrates()
    }
}

/// `th_percent` must be a share in percent.
pub(super) fn check_th_percent(th: f64) -> Result<(), (&'static str, String)> {
    if !(0.0..=100.0).contains(&th) {
        return Err((
            "th_percent",
            format!("{th} must be a percentage from 0 to 100"),
        ));
    }
    Ok(())
}

/// What a wear leveler asks the FTL to do after an erase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WearAction {
    Idle,
    /// Move `from`'s valid units into `into` (or a wear-stream block when `NONE`), then
    /// erase `from`.
    Migrate {
        from: BlockId,
        into: BlockId,
    },
}

/// Where a region's blocks are: in every plane, block ids
/// `plane · blocks_per_plane + first_index .. + region_blocks_per_plane`.
#[derive(Clone, Copy, Debug)]
pub struct WearShape {
    pub region: u8,
    pub planes: u32,
    pub blocks_per_plane: u32,
    pub first_index: u32,
    pub region_blocks_per_plane: u32,
    /// Units (mapping units) a block of the region holds.
    pub units_per_block: u32,
    /// Seed stream of the policy's randomness.
    pub seed: u64,
}

impl WearShape {
    /// Block ids of the region in `plane`.
    pub fn plane_blocks(&self, plane: u32) -> std::ops::Range<u32> {
        let first = plane * self.blocks_per_plane + self.first_index;
        first..first + self.region_blocks_per_plane
    }

    pub fn blocks(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.planes).flat_map(|p| self.plane_blocks(p))
    }
}

/// What a wear-leveling decision sees.
pub struct WearCtx<'a> {
    pub blocks: &'a BlockTable,
    pub shape: &'a WearShape,
    /// Plane of the event (a migration stays within it).
    pub plane: PlaneId,
    /// `on_erase`: the erase ended a GC job (not a wear-leveling migration or a retirement).
    pub after_gc: bool,
}

impl WearCtx<'_> {
    /// Whether `block` can be migrated now: a full block with data, not being collected.
    pub fn migratable(&self, block: u32) -> bool {
        self.blocks.state[block as usize] == BlockState::Full
    }

    /// The migratable block of `ctx.plane` with the fewest erases (ties: lower id),
    /// skipping `except`.
    pub fn least_worn(&self, except: u32) -> Option<u32> {
        self.shape
            .plane_blocks(self.plane.0)
            .filter(|&b| b != except && self.migratable(b))
            .min_by_key(|&b| (self.blocks.erase_count[b as usize], b))
    }

    /// Invalid units of `block` (programmed units no longer mapped); 0 unless full.
    pub fn invalid_units(&self, block: u32) -> u32 {
        let b = block as usize;
        match self.blocks.state[b] {
            BlockState::Full | BlockState::Victim => {
                self.shape.units_per_block - self.blocks.valid_units[b]
            }
            _ => 0,
        }
    }
}

/// A wear-leveling policy of one region.
pub trait WearPolicy: Sized {
    type Params;
    fn new(params: &Self::Params, shape: &WearShape) -> Self;
    /// GC just chose a victim in `ctx.plane`.
    #[inline]
    fn on_gc_scan(&mut self, _ctx: &WearCtx) {}
    /// `block` (of `ctx.plane`) finished an erase (its erase count is already raised).
    fn on_erase(&mut self, block: BlockId, ctx: &WearCtx) -> WearAction;
    /// Whether the policy never acts, so the FTL need not build its context.
    #[inline]
    fn never_acts(&self) -> bool {
        false
    }
}

impl WearLeveler {
    #[inline]
    pub fn on_gc_scan(&mut self, ctx: &WearCtx) {
        dispatch!(self, p => p.on_gc_scan(ctx))
    }

    #[inline]
    pub fn on_erase(&mut self, block: BlockId, ctx: &WearCtx) -> WearAction {
        dispatch!(self, p => p.on_erase(block, ctx))
    }

    /// Whether the policy never acts (no context needs to be built).
    #[inline]
    pub fn is_none(&self) -> bool {
        dispatch!(self, p => p.never_acts())
    }
}

#[cfg(test)]
pub(super) mod tests_util {
    use super::{PlaneId, WearCtx, WearShape};
    use crate::base::CellMode;
    use crate::flash::{BlockState, BlockTable};

    /// One plane of `n` full blocks of 8 units.
    pub fn setup(n: u32) -> (WearShape, BlockTable) {
        let shape = WearShape {
            region: 0,
            planes: 1,
            blocks_per_plane: n,
            first_index: 0,
            region_blocks_per_plane: n,
            units_per_block: 8,
            seed: 1,
        };
        let mut blocks = BlockTable::new(n, CellMode::Tlc);
        blocks.state.fill(BlockState::Full);
        blocks.valid_units.fill(8);
        (shape, blocks)
    }

    pub fn ctx<'a>(blocks: &'a BlockTable, shape: &'a WearShape, after_gc: bool) -> WearCtx<'a> {
        WearCtx {
            blocks,
            shape,
            plane: PlaneId(0),
            after_gc,
        }
    }
}

/// Share of recent erases that hit hot blocks, over a window that halves both counts when
/// it fills (so the share follows the workload; PET and EPET compare it with TH).
#[derive(Clone, Debug)]
pub struct HotShare {
    hot: u64,
    total: u64,
    window: u64,
}

impl HotShare {
    pub fn new(window: u64) -> HotShare {
        HotShare {
            hot: 0,
            total: 0,
            window: window.max(2),
        }
    }

    pub fn count(&mut self, hot: bool) {
        self.hot += hot as u64;
        self.total += 1;
        if self.total >= self.window {
            self.hot /= 2;
            self.total /= 2;
        }
    }

    /// Hot erases as a percentage of the window's erases (0 before any).
    pub fn percent(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            100.0 * self.hot as f64 / self.total as f64
        }
    }
}
