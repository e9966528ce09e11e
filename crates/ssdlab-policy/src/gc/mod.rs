//! Garbage-collection victim selection. Each region keeps one index of its full blocks per
//! plane, in the form its policy needs, updated on three events: a block becomes full, a
//! unit in a full block is invalidated, a block leaves the index (chosen as a victim, or
//! taken by wear leveling). `select` chooses among the plane's full blocks with at most
//! `max_valid` valid units (so collecting one frees at least a page) and removes it.
//!
//! A new policy is one file here (a `Params` struct and a type implementing
//! [`VictimPolicy`]) plus one registration line below.

use crate::flash::BlockTable;
use crate::ids::{BlockId, PlaneId};
use ssdlab_workload::rng::SimRng;

mod sets;

super::policy_registry! {
    $
    /// `[ftl.gc]`: the GC victim policy (`policy = "…"` plus its parameters).
    config GcConfig default Greedy;
    /// The victim index of one region.
    runtime VictimIndex: VictimPolicy(IndexShape);
    params super::PolicyParams;
    /// The full block with the fewest valid units (O(1) buckets).
    "greedy" => Greedy(greedy::Greedy),
    /// Maximise (1 − u) · age / (1 + u) (Kawaguchi et al. 1995).
    "cost-benefit" => CostBenefit(cost_benefit::CostBenefit),
    /// The oldest full block, in the order blocks became full.
    "fifo" => Fifo(fifo::Fifo),
    /// A uniformly random qualifying full block (seeded).
    "random" => Random(random::Random),
    /// The fewest valid units among d random full blocks (Van Houdt 2013).
    "d-choices" => DChoices(d_choices::DChoices),
}

/// Size of a region's index.
#[derive(Clone, Copy, Debug)]
pub struct IndexShape {
    /// Planes of the device (indexes are per plane, by global plane id).
    pub planes: u32,
    /// Blocks of the device (per-block arrays are indexed by global block id).
    pub blocks: u32,
    /// Mapping units per block of the region.
    pub units_per_block: u32,
}

/// What a selection sees.
pub struct SelectCtx<'a> {
    pub blocks: &'a BlockTable,
    pub plane: PlaneId,
    /// Only blocks with at most this many valid units qualify.
    pub max_valid: u32,
    pub units_per_block: u32,
    /// The FTL's program sequence now (the age clock of cost-benefit).
    pub now_seq: u64,
    pub rng: &'a mut SimRng,
}

/// A victim-selection policy over the full blocks of one region.
pub trait VictimPolicy: Sized {
    type Params;
    fn new(params: &Self::Params, shape: &IndexShape) -> Self;
    /// `block` of `plane` has just become full with `valid` valid units.
    fn on_full(&mut self, plane: PlaneId, block: BlockId, valid: u32);
    /// A unit of full `block` was invalidated: its count went from `valid + 1` to `valid`.
    #[inline]
    fn on_invalidate(&mut self, _plane: PlaneId, _block: BlockId, _valid: u32) {}
    /// A unit of `block` will soon be invalidated: ask for what `on_invalidate` reads
    /// (large devices, whose indexes outgrow the caches).
    #[inline]
    fn prefetch(&self, _block: BlockId) {}
    /// Take full `block` (holding `valid` units) out of the index.
    fn remove(&mut self, plane: PlaneId, block: BlockId, valid: u32);
    /// Choose a victim of `ctx.plane` and remove it from the index.
    fn select(&mut self, ctx: &mut SelectCtx) -> Option<BlockId>;
    /// Whether full `block` of `plane`, holding `valid` units, is in the index where it
    /// should be (invariant checker).
    fn holds(&self, plane: PlaneId, block: BlockId, valid: u32) -> bool;
    /// Blocks of `plane` in the index (invariant checker).
    fn count(&self, plane: PlaneId) -> usize;
}

impl VictimIndex {
    #[inline]
    pub fn on_full(&mut self, plane: PlaneId, block: BlockId, valid: u32) {
        dispatch!(self, p => p.on_full(plane, block, valid))
    }

    #[inline]
    pub fn on_invalidate(&mut self, plane: PlaneId, block: BlockId, valid: u32) {
        dispatch!(self, p => p.on_invalidate(plane, block, valid))
    }

    #[inline]
    pub fn prefetch(&self, block: BlockId) {
        dispatch!(self, p => p.prefetch(block))
    }

    #[inline]
    pub fn remove(&mut self, plane: PlaneId, block: BlockId, valid: u32) {
        dispatch!(self, p => p.remove(plane, block, valid))
    }

    #[inline]
    pub fn select(&mut self, ctx: &mut SelectCtx) -> Option<BlockId> {
        dispatch!(self, p => p.select(ctx))
    }

    pub fn holds(&self, plane: PlaneId, block: BlockId, valid: u32) -> bool {
        dispatch!(self, p => p.holds(plane, block, valid))
    }

    pub fn count(&self, plane: PlaneId) -> usize {
        dispatch!(self, p => p.count(plane))
    }
}
