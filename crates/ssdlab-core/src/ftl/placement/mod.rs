//! Placement: which region (and write stream) a host page goes to. A policy returns the
//! regions to try in order of preference; the FTL places the page in the first one with a
//! free page outside its GC reserve.
//!
//! A new policy is one file here (a `Params` struct and a type implementing
//! [`PlacementPolicy`]) plus one registration line below.

use super::region::Stream;

super::registry::policy_registry! {
    $
    /// `[ftl.placement]`: where host pages go.
    config PlacementConfig default Direct;
    /// The placement policy of the device.
    runtime Placement: PlacementPolicy(PlacementShape);
    "direct" => Direct(direct::Direct),
    "cache-first" => CacheFirst(cache_first::CacheFirst),
}

/// The regions a placement policy can choose from.
#[derive(Clone, Copy, Debug)]
pub struct PlacementShape {
    /// The region holding the logical capacity.
    pub data_region: u8,
    /// The region whose content is `cache`, if any.
    pub cache_region: Option<u8>,
}

/// A region and stream to write into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub region: u8,
    pub stream: Stream,
}

/// Up to two targets in order of preference.
#[derive(Clone, Copy, Debug)]
pub struct Targets {
    pub list: [Target; 2],
    pub len: usize,
}

impl Targets {
    pub fn one(t: Target) -> Targets {
        Targets {
            list: [t; 2],
            len: 1,
        }
    }
    pub fn as_slice(&self) -> &[Target] {
        &self.list[..self.len]
    }
}

/// A host-page placement policy.
pub trait PlacementPolicy: Sized {
    type Params;
    fn new(params: &Self::Params, shape: &PlacementShape) -> Self;
    /// Where the host page holding `lpns` should go, in order of preference.
    fn host_targets(&mut self, lpns: &[u32]) -> Targets;
}

impl Placement {
    #[inline]
    pub fn host_targets(&mut self, lpns: &[u32]) -> Targets {
        dispatch!(self, p => p.host_targets(lpns))
    }
}
