//! `cache-first`: host pages go to the `cache` region (e.g. SLC blocks in front of TLC)
//! while it has room outside its GC reserve, else straight to the data region. The cache
//! region's GC relocates what is still valid into its `relocate_to` region (the data
//! region by default), so the cache acts as a write buffer that drains under GC.

use super::{PlacementPolicy, PlacementShape, Targets};
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

impl super::PlacementParams for Params {
    fn cache_regions(&self) -> super::RegionNeed {
        super::RegionNeed::One
    }
}

#[derive(Clone)]
pub struct CacheFirst(Targets);

impl PlacementPolicy for CacheFirst {
    type Params = Params;
    fn new(_: &Params, s: &PlacementShape) -> CacheFirst {
        CacheFirst(match s.cache_region {
            Some(c) => Targets::of(&[c, s.data_region]),
            None => Targets::of(&[s.data_region]),
        })
    }
    #[inline]
    fn host_targets(&mut self, lane: u8, _: &[u32]) -> Targets {
        self.0.in_lane(lane)
    }
}
