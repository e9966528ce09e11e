//! `[device.zns]` (NVMe Zoned Namespace) and `[device.fdp]` (NVMe Flexible Data
//! Placement): what the host may tell the device about where data goes (docs/zns.md).

use crate::error::{Result, SimError};
use serde::{Deserialize, Serialize};

/// Most write lanes a device may keep open per plane: the active zones of a zoned device,
/// the reclaim-unit handles of an FDP device (each lane has its own open block per plane,
/// and an FDP handle its own GC block too).
pub const MAX_LANES: u32 = crate::base::MAX_LANES as u32;

/// Most active zones: the write lanes less a few that a zone just filled keeps until its
/// last page is placed.
pub const MAX_ACTIVE_ZONES: u32 = MAX_LANES - 8;

/// `[device.zns]`: the device is zoned. The logical space is `zones · zone size`; zone `z`
/// stripes page by page over every plane of its die group (group `z mod groups`, the dies
/// split into groups of `zone_dies`); each of those planes gives the zone
/// `blocks_per_plane` erase blocks, taken from the plane's free pool as the zone fills.
/// There is no device GC: a zone reset erases the zone's blocks.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ZnsConfig {
    /// Dies a zone stripes over (all their planes): its bandwidth, and which zones share
    /// dies (interference). 0 = every die. Must divide the die count.
    pub zone_dies: u32,
    /// Erase blocks each of the zone's planes gives it (zone size = zone dies × planes per
    /// die × this × block bytes).
    pub blocks_per_plane: u32,
    /// Writable bytes of a zone (NVMe Zone Capacity), a multiple of the mapping unit, at most
    /// the zone size; 0 = the zone size.
    pub zone_capacity_bytes: u64,
    /// Most zones open (implicitly or explicitly) at once.
    pub max_open_zones: u32,
    /// Most zones open or closed at once (each holds an open block per plane).
    pub max_active_zones: u32,
    /// Blocks per plane left out of every zone: replacements for factory-bad and worn-out
    /// blocks. A zone whose die group can no longer give every zone its blocks goes
    /// offline at its next reset.
    pub spare_blocks_per_plane: u32,
}

impl Default for ZnsConfig {
    fn default() -> Self {
        ZnsConfig {
            zone_dies: 0,
            blocks_per_plane: 1,
            zone_capacity_bytes: 0,
            max_open_zones: 14,
            max_active_zones: 14,
            spare_blocks_per_plane: 2,
        }
    }
}

impl ZnsConfig {
    /// Check the keys that need no geometry (called by [`super::Config::validate`]).
    pub fn validate(&self) -> Result<()> {
        let bad = |k: &str, why: String| Err(SimError::config(format!("device.zns.{k}"), why));
        if self.blocks_per_plane == 0 {
            return bad("blocks_per_plane", "must be at least 1".into());
        }
        if self.max_active_zones == 0 || self.max_active_zones > MAX_ACTIVE_ZONES {
            return bad(
                "max_active_zones",
                format!(
                    "{}: 1 to {MAX_ACTIVE_ZONES} (each active zone keeps an open block per plane)",
                    self.max_active_zones
                ),
            );
        }
        if self.max_open_zones == 0 || self.max_open_zones > self.max_active_zones {
            return bad(
                "max_open_zones",
                format!(
                    "{}: 1 to max_active_zones ({}) (an open zone is active)",
                    self.max_open_zones, self.max_active_zones
                ),
            );
        }
        Ok(())
    }
}

/// `[device.fdp]`: Flexible Data Placement. A write's placement identifier selects a
/// reclaim-unit handle; each handle has its own open block per plane (the reclaim unit
/// is one erase block) and its own GC block (persistently isolated: GC never mixes
/// handles). GC still runs per plane (the reclaim group).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FdpConfig {
    /// Reclaim-unit handles, 1 to [`MAX_LANES`].
    pub handles: u32,
    /// Handle of each placement identifier (index = identifier); empty = identifier `i`
    /// on handle `i` for `i < handles`.
    pub placement_handles: Vec<u32>,
}

impl Default for FdpConfig {
    fn default() -> Self {
        FdpConfig {
            handles: 2,
            placement_handles: Vec::new(),
        }
    }
}

impl FdpConfig {
    /// Check every key (called by [`super::Config::validate`]).
    pub fn validate(&self) -> Result<()> {
        let bad = |k: &str, why: String| Err(SimError::config(format!("device.fdp.{k}"), why));
        if self.handles == 0 || self.handles > MAX_LANES {
            return bad("handles", format!("{}: 1 to {MAX_LANES}", self.handles));
        }
        if self.placement_handles.len() > u16::MAX as usize {
            return bad(
                "placement_handles",
                "more placement identifiers than NVMe's 16 bits name".into(),
            );
        }
        if let Some((i, h)) = self
            .placement_handles
            .iter()
            .enumerate()
            .find(|(_, &h)| h >= self.handles)
        {
            return bad(
                "placement_handles",
                format!(
                    "placement identifier {i} names handle {h}, but there are {} handles (0 to {})",
                    self.handles,
                    self.handles - 1
                ),
            );
        }
        Ok(())
    }

    /// Placement identifiers the device accepts.
    pub fn placement_ids(&self) -> u16 {
        if self.placement_handles.is_empty() {
            self.handles as u16
        } else {
            self.placement_handles.len() as u16
        }
    }

    /// Handle of placement identifier `pid`, `None` when the device has no such identifier.
    #[inline]
    pub fn handle_of(&self, pid: u16) -> Option<u32> {
        if self.placement_handles.is_empty() {
            ((pid as u32) < self.handles).then_some(pid as u32)
        } else {
            self.placement_handles.get(pid as usize).copied()
        }
    }
}

/// A zoned device's shape, worked out from its configuration and geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneGeo {
    pub zone_dies: u32,
    pub zone_units: u32,
    pub cap_units: u32,
    pub zones: u32,
}

/// The zones of `cfg` on geometry `g` with `blocks_per_plane` data blocks per plane.
pub fn zone_geometry(cfg: &ZnsConfig, g: &super::Geometry, blocks_per_plane: u32) -> ZoneGeo {
    let zd = if cfg.zone_dies == 0 {
        g.dies
    } else {
        cfg.zone_dies
    };
    let planes = zd * g.planes_per_die;
    let zone_units = planes * cfg.blocks_per_plane * g.pages_per_block * g.slots_per_page;
    let cap_units = if cfg.zone_capacity_bytes == 0 {
        zone_units
    } else {
        (cfg.zone_capacity_bytes / g.unit_bytes as u64) as u32
    };
    let per_group =
        blocks_per_plane.saturating_sub(cfg.spare_blocks_per_plane) / cfg.blocks_per_plane;
    ZoneGeo {
        zone_dies: zd,
        zone_units,
        cap_units,
        zones: per_group * (g.dies / zd.max(1)),
    }
}
