//! Flexible Data Placement (`[device.fdp]`, docs/zns.md): a write's placement identifier
//! names a reclaim-unit handle, a write lane of its own (an open block per plane, and a GC
//! stream of its own: GC never mixes handles).

use super::{Ftl, Lanes};
use crate::config::FdpConfig;
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

/// The FDP state the FTL keeps.
#[derive(Clone, Debug)]
pub struct Fdp {
    /// Lane of each placement identifier.
    lanes: Vec<u8>,
    sum: FdpSummary,
}

impl Fdp {
    pub fn new(cfg: &FdpConfig) -> Fdp {
        let ids = cfg.placement_ids();
        Fdp {
            lanes: (0..ids)
                .map(|pid| cfg.handle_of(pid).unwrap_or(0) as u8)
                .collect(),
            sum: FdpSummary {
                handles: cfg.handles,
                placement_ids: ids,
                host_units_per_handle: vec![0; cfg.handles as usize],
                invalid_placement_ids: 0,
            },
        }
    }
}

impl Ftl {
    /// Write lane of placement identifier `pid`: its handle with FDP, 0 without (where only
    /// 0 is valid). `None`: no such identifier (the write fails, counted).
    #[inline]
    pub fn lane_of_placement(&mut self, pid: u16) -> Option<u8> {
        match &mut self.lanes {
            Lanes::Plain | Lanes::Zoned(_) if pid == 0 => Some(0),
            Lanes::Plain | Lanes::Zoned(_) => None,
            Lanes::Fdp(f) => match f.lanes.get(pid as usize) {
                Some(&l) => Some(l),
                None => {
                    f.sum.invalid_placement_ids += 1;
                    None
                }
            },
        }
    }

    /// `units` host units were written through lane `lane`.
    #[inline]
    pub fn count_lane_units(&mut self, lane: u8, units: u32) {
        if let Lanes::Fdp(f) = &mut self.lanes {
            f.sum.host_units_per_handle[lane as usize] += units as u64;
        }
    }

    /// Write lanes the host path keeps: FDP handles, or a zoned device's lanes, or 1.
    pub fn lanes(&self) -> usize {
        match &self.lanes {
            Lanes::Fdp(f) => f.sum.handles as usize,
            Lanes::Zoned(_) => crate::base::MAX_LANES,
            Lanes::Plain => 1,
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
