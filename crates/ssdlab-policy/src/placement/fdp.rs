//! `fdp`: Flexible Data Placement (NVMe FDP, `[device.fdp]`, docs/zns.md). A write's
//! placement identifier names a reclaim-unit handle through the device's table
//! ([`PlacementShape::placement_handles`]); each handle is a write lane of its own (an open
//! block per plane, a GC stream of its own: GC never mixes handles). An identifier the
//! table lacks fails the write.
//!
//! The regions are another policy's: `direct` when the config names `fdp` itself, else the
//! policy the config names, run under `fdp` on a device with `[device.fdp]`
//! ([`Placement::build`]): an SLC cache or journal keeps its meaning, each handle has its
//! host stream in it.

use super::{Placement, PlacementPolicy, PlacementShape, Targets, WriteCtx};
use crate::ids::Lpn;
use serde::{Deserialize, Serialize};

/// No parameters: the handles and the placement-identifier table are `[device.fdp]`'s.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

impl super::PlacementParams for Params {
    fn reads_placement_ids(&self) -> bool {
        true
    }
}

#[derive(Clone)]
pub struct Fdp {
    /// Lane (handle) of each placement identifier.
    lanes: Box<[u8]>,
    handles: u8,
    /// The policy choosing the regions (boxed: it is a [`Placement`] itself).
    regions: Box<Placement>,
}

impl Fdp {
    /// `fdp` over `regions`, with the table of `shape` (one handle, identifier 0 only,
    /// without one).
    pub fn over(regions: Placement, shape: &PlacementShape) -> Fdp {
        let (lanes, handles) = match &shape.placement_handles {
            Some((lanes, handles)) => (lanes.clone().into_boxed_slice(), *handles),
            None => (Box::new([0u8]) as Box<[u8]>, 1),
        };
        Fdp {
            lanes,
            handles,
            regions: Box::new(regions),
        }
    }
}

impl PlacementPolicy for Fdp {
    type Params = Params;

    fn new(_: &Params, s: &PlacementShape) -> Fdp {
        let direct = super::PlacementConfig::Direct(Default::default());
        Fdp::over(Placement::new(&direct, s), s)
    }

    #[inline]
    fn lane(&mut self, w: &WriteCtx) -> Option<u8> {
        self.lanes.get(w.placement_id as usize).copied()
    }

    fn lanes(&self) -> usize {
        self.handles as usize
    }

    #[inline]
    fn host_targets(&mut self, lane: u8, lpns: &[u32]) -> Targets {
        self.regions.host_targets(lane, lpns)
    }

    fn observe_write(&mut self, lpn: Lpn, units: u32) -> bool {
        self.regions.observe_write(lpn, units)
    }

    #[inline]
    fn is_journal(&self, lpn: Lpn) -> bool {
        self.regions.is_journal(lpn)
    }

    fn journal_range(&self) -> Option<(u32, u32)> {
        self.regions.journal_range()
    }

    fn packs_journal_apart(&self) -> bool {
        self.regions.packs_journal_apart()
    }
}
