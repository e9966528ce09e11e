//! Flexible Data Placement (`[device.fdp]`, docs/zns.md): the FTL's side of it. Which
//! lane a write takes is the `fdp` placement policy's decision
//! (`ssdlab-policy/src/placement/fdp.rs`, through [`Ftl::write_lane`]); here are the
//! table it is built with and what the device counts (results.json `fdp`).

use super::{Ftl, Lanes};
use crate::config::FdpConfig;
use crate::policy::placement::WriteCtx;
use serde::Serialize;

/// What an FDP device counted (results.json `fdp`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct FdpSummary {
    pub handles: u32,
    pub placement_ids: u16,
    /// Host units written through each handle.
    pub host_units_per_handle: Vec<u64>,
    /// Writes refused for a placement identifier the device does not have.
    pub invalid_placement_ids: u64,
}

/// The device's placement table for the `fdp` placement policy
/// ([`crate::policy::placement::PlacementShape::placement_handles`]): the handle of each
/// placement identifier, and the handles.
pub fn placement_handles(cfg: &FdpConfig) -> (Vec<u8>, u8) {
    let lanes = (0..cfg.placement_ids())
        .map(|pid| cfg.handle_of(pid).unwrap_or(0) as u8)
        .collect();
    (lanes, cfg.handles as u8)
}

/// What the FTL counts on an FDP device (the lanes themselves are the `fdp` placement
/// policy's).
#[derive(Clone, Debug)]
pub struct Fdp {
    sum: FdpSummary,
}

impl Fdp {
    pub fn new(cfg: &FdpConfig) -> Fdp {
        Fdp {
            sum: FdpSummary {
                handles: cfg.handles,
                placement_ids: cfg.placement_ids(),
                host_units_per_handle: vec![0; cfg.handles as usize],
                invalid_placement_ids: 0,
            },
        }
    }
}

impl Ftl {
    /// The write lane of host write `w`, chosen by the placement policy (an FDP handle, a
    /// lane of a multi-stream policy; 0 otherwise). `None`: the policy refuses it (a
    /// placement identifier the device does not have; counted on an FDP device), the
    /// write fails. Not on a zoned device (its lanes are its zones').
    #[inline]
    pub fn write_lane(&mut self, w: &WriteCtx) -> Option<u8> {
        let lane = self.placer.policy.lane(w);
        if lane.is_none() {
            if let Lanes::Fdp(f) = &mut self.lanes {
                f.sum.invalid_placement_ids += 1;
            }
        }
        lane
    }

    /// `units` host units were written through lane `lane`.
    #[inline]
    pub fn count_lane_units(&mut self, lane: u8, units: u32) {
        if let Lanes::Fdp(f) = &mut self.lanes {
            f.sum.host_units_per_handle[lane as usize] += units as u64;
        }
    }

    /// Write lanes the host path keeps: the placement policy's (FDP handles, …), or a
    /// zoned device's lanes.
    pub fn lanes(&self) -> usize {
        match &self.lanes {
            Lanes::Zoned(_) => crate::base::MAX_LANES,
            Lanes::Fdp(_) | Lanes::Plain => self.placer.policy.lanes(),
        }
    }

    /// The FDP counters, on an FDP device.
    pub fn fdp_summary(&self) -> Option<FdpSummary> {
        match &self.lanes {
            Lanes::Fdp(f) => Some(f.sum.clone()),
            _ => None,
        }
    }
}
