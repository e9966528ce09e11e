//! `slc-buffer` (spec 05 baseline, as in commercial drives): host pages go to the SLC
//! `cache` region while it has room, else straight to the (TLC) data region. With
//! `drain_when_idle = true` on the cache region its data migrates to TLC only while the
//! host is idle (and then all of it); the same placement as `cache-first`.
//!
//! A TurboWrite-style cache (Samsung's Intelligent TurboWrite, docs/calibration.md): with
//! `static_cache_bytes` or `dynamic_cache_bytes` set the cache takes host pages only while
//! it holds less than its current size, `static + min(dynamic, free / k)` bytes, where
//! `free` is the logical space not mapped (the space a drive lends its cache) and `k` the
//! data region's bits per cell over the cache's (3 for SLC on TLC): the dynamic part
//! shrinks as the drive fills, the static part stays. The cache region's blocks bound it
//! (the FTL applies the size per plane, in whole blocks: [`CacheSize::blocks_per_plane`]).

use super::cache_first::CacheFirst;
use super::{PlacementPolicy, PlacementShape, Targets};
use crate::SwarmCtx;
use rand::Rng;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::SimRng;

/// Both sizes 0 (the default): the whole cache region.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// The cache's part that is always there (bytes of host data in the cache).
    pub static_cache_bytes: u64,
    /// The part lent from free space, at most this many bytes; shrinks as the drive fills.
    pub dynamic_cache_bytes: u64,
}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, ctx: &SwarmCtx) -> Params {
        if rng.gen_bool(0.5) {
            return Params::default();
        }
        let page = ctx.page_bytes as u64;
        Params {
            static_cache_bytes: page * rng.gen_range(0..=64),
            dynamic_cache_bytes: page * rng.gen_range(1..=256),
        }
    }
}

impl super::PlacementParams for Params {
    fn cache_regions(&self) -> super::RegionNeed {
        super::RegionNeed::One
    }
    fn cache_size(&self) -> Option<CacheSize> {
        (self.static_cache_bytes > 0 || self.dynamic_cache_bytes > 0).then_some(CacheSize {
            static_bytes: self.static_cache_bytes,
            dynamic_bytes: self.dynamic_cache_bytes,
        })
    }
}

/// A cache whose size follows the drive's free space (Samsung's Intelligent TurboWrite):
/// a static part plus a dynamic part of at most `dynamic_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSize {
    pub static_bytes: u64,
    pub dynamic_bytes: u64,
}

impl CacheSize {
    /// The cache's size in bytes when `free_bytes` of the logical space are unmapped and
    /// the cache holds `1 / density` of what the data region's cells would.
    #[inline]
    pub fn bytes(&self, free_bytes: u64, density: u64) -> u64 {
        self.static_bytes + self.dynamic_bytes.min(free_bytes / density.max(1))
    }

    /// [`CacheSize::bytes`] in whole blocks of `block_bytes` on each of `planes` planes
    /// (rounded up: a plane fills the block it opened).
    #[inline]
    pub fn blocks_per_plane(&self, free_bytes: u64, density: u64, planes: u64, block_bytes: u64) -> u64 {
        self.bytes(free_bytes, density).div_ceil(planes * block_bytes)
    }
}

#[derive(Clone)]
pub struct SlcBuffer(CacheFirst);

impl PlacementPolicy for SlcBuffer {
    type Params = Params;
    fn new(_: &Params, s: &PlacementShape) -> SlcBuffer {
        SlcBuffer(CacheFirst::new(&Default::default(), s))
    }
    #[inline]
    fn host_targets(&mut self, lane: u8, lpns: &[u32]) -> Targets {
        self.0.host_targets(lane, lpns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 6 GB static + at most 36 GB dynamic, SLC on TLC (density 3): the dynamic part is a
    /// third of the free space until that exceeds 36 GB; a full drive keeps the static part.
    #[test]
    fn the_dynamic_part_shrinks_as_the_drive_fills() {
        const G: u64 = 1_000_000_000;
        let c = CacheSize {
            static_bytes: 6 * G,
            dynamic_bytes: 36 * G,
        };
        assert_eq!(c.bytes(1000 * G, 3), 42 * G);
        assert_eq!(c.bytes(108 * G, 3), 42 * G);
        assert_eq!(c.bytes(60 * G, 3), 26 * G);
        assert_eq!(c.bytes(0, 3), 6 * G);
        // 42 GB over 4 planes of 2 GB blocks: 5.25 → 6 blocks each.
        assert_eq!(c.blocks_per_plane(1000 * G, 3, 4, 2 * G), 6);
        assert_eq!(c.blocks_per_plane(0, 3, 4, 2 * G), 1);
    }
}
