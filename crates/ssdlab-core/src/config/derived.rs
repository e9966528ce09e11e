//! Validated configuration and the values derived from it, computed once.

use super::{CellMode, Config, GcConfig, Mode, RegionConfig, RegionContent};
use crate::error::{Result, SimError};
use crate::flash::Oob;
use crate::ids::{BlockId, PlaneId, SlotId};
use crate::integrity::Integrity;
use crate::policy::mapping::MappingTable;
use serde::Serialize;

/// Device shape with the totals the hot paths need. All ids are dense `u32`s:
/// die = (channel · chips_per_channel + chip) · dies_per_chip + die_in_chip,
/// plane = die · planes_per_die + plane_in_die, block = plane · blocks_per_plane + index,
/// page = block · pages_per_block + index, slot = page · slots_per_page + index.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct Geometry {
    pub channels: u32,
    pub chips_per_channel: u32,
    pub dies_per_chip: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_bytes: u32,
    pub unit_bytes: u32,
    pub slots_per_page: u32,
    pub units_per_block: u32,
    pub dies: u32,
    pub planes: u32,
    pub blocks: u32,
    pub pages: u64,
    pub slots: u64,
    #[serde(skip)]
    blocks_per_plane_div: FastDiv,
    #[serde(skip)]
    units_per_block_div: FastDiv,
    #[serde(skip)]
    slots_per_page_div: FastDiv,
    #[serde(skip)]
    pages_per_block_div: FastDiv,
    #[serde(skip)]
    planes_per_die_div: FastDiv,
    #[serde(skip)]
    blocks_per_die_div: FastDiv,
    #[serde(skip)]
    dies_per_channel_div: FastDiv,
}

/// Division of a `u32` by a fixed divisor as one multiply-high (Lemire, Kaser & Kurz 2019:
/// M = ceil(2^64 / d) gives exact quotients for every 32-bit numerator). Hot paths turn
/// slot and block ids into block and plane ids on every operation; a hardware divide
/// there costs more than the rest of the update.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
pub struct FastDiv {
    magic: u64,
    divisor: u32,
}

impl FastDiv {
    pub fn new(divisor: u32) -> FastDiv {
        assert!(divisor > 0, "FastDiv by zero");
        FastDiv {
            magic: (u64::MAX / divisor as u64).wrapping_add(1),
            divisor,
        }
    }

    #[inline]
    pub fn div(&self, x: u32) -> u32 {
        if self.divisor == 1 {
            return x;
        }
        ((self.magic as u128 * x as u128) >> 64) as u32
    }
}

impl Geometry {
    #[inline]
    pub fn plane_of_block(&self, block: BlockId) -> PlaneId {
        PlaneId(self.blocks_per_plane_div.div(block.0))
    }
    #[inline]
    pub fn die_of_plane(&self, plane: u32) -> u32 {
        self.planes_per_die_div.div(plane)
    }
    /// `x / slots_per_page` (e.g. a slot's global page id).
    #[inline]
    pub fn div_slots_per_page(&self, x: u32) -> u32 {
        self.slots_per_page_div.div(x)
    }
    /// (block, page within it) of a global page id.
    #[inline]
    pub fn block_page_of(&self, page_id: u32) -> (BlockId, u32) {
        let block = self.pages_per_block_div.div(page_id);
        (BlockId(block), page_id - block * self.pages_per_block)
    }
    #[inline]
    pub fn die_of_block(&self, block: BlockId) -> u32 {
        // Block ids are die-major: ⌊⌊b / bpp⌋ / ppd⌋ = ⌊b / (bpp · ppd)⌋.
        self.blocks_per_die_div.div(block.0)
    }
    #[inline]
    pub fn channel_of_die(&self, die: u32) -> u32 {
        self.dies_per_channel_div.div(die)
    }
    #[inline]
    pub fn block_of_slot(&self, slot: SlotId) -> BlockId {
        BlockId(self.units_per_block_div.div(slot.0))
    }
    #[inline]
    pub fn first_slot_of_block(&self, block: BlockId) -> SlotId {
        SlotId(block.0 * self.units_per_block)
    }
}

/// Everything the simulator needs, validated.
#[derive(Clone, Debug, Serialize)]
pub struct Derived {
    pub geometry: Geometry,
    pub logical_units: u32,
    pub logical_bytes: u64,
    pub physical_bytes: u64,
    /// Blocks per plane the data region keeps back from data: its open blocks (host, GC,
    /// and inbound or wear-leveling streams when used) + its urgent GC threshold. Host
    /// writes may not take a plane's last `gc_hard_free_blocks` blocks. The minimum OP
    /// also leaves one block per plane of slack for uneven plane occupancy.
    pub reserve_blocks_per_plane: u32,
    /// Smallest OP ratio this geometry and GC thresholds accept.
    pub min_over_provisioning_ratio: f64,
    /// The block regions, in layout order (one `data` region unless `[[ftl.regions]]`).
    pub regions: Vec<RegionGeometry>,
    /// Id of the region holding the logical capacity.
    pub data_region: u8,
    /// Plane ids in the order consecutive pages stripe over them.
    pub stripe_planes: Vec<u32>,
    /// Page-level table: 4 bytes per mapping unit.
    pub mapping_table_bytes: u64,
    /// What the simulator keeps to model a cached mapping (LRU links, states, log bits,
    /// GTD); 0 for `page-map`.
    pub mapping_model_bytes: u64,
    pub write_buffer_units: u32,
}

fn err(key: &str, reason: impl Into<String>) -> SimError {
    SimError::config(key, reason)
}

fn nonzero(key: &str, v: u32) -> Result<u32> {
    if v == 0 {
        Err(err(key, "must be > 0"))
    } else {
        Ok(v)
    }
}

impl Derived {
    /// Approximate memory a run of this device holds (bytes): the page map (per logical
    /// unit), the out-of-band area (unit, valid bit and, with `integrity`, version per
    /// physical slot), per-block state, the write buffer's index and, with `integrity`, the
    /// last version written per unit; each from the size of the type the simulator keeps
    /// it in. Within a few percent of the peak RSS measured on the Table-1 device (518 MB
    /// estimated, 527 MB). The bytes `serve` stores come on top.
    pub fn estimated_memory_bytes(&self, integrity: bool) -> u64 {
        let g = &self.geometry;
        let units = self.logical_units as u64;
        let slots = g.pages * g.slots_per_page as u64;
        let per_block = 64;
        let per_unit = MappingTable::bytes_per_unit()
            + if integrity {
                Integrity::bytes_per_unit()
            } else {
                0
            };
        per_unit * units
            + (Oob::bits_per_slot(integrity) * slots).div_ceil(8)
            + per_block * g.blocks as u64
            + 64 * self.write_buffer_units as u64
            + self.mapping_model_bytes
    }

    pub fn new(c: &Config) -> Result<Derived> {
        let g = &c.device.geometry;
        let k = |f: &str| format!("device.geometry.{f}");
        let channels = nonzero(&k("channels"), g.channels)?;
        let chips = nonzero(&k("chips_per_channel"), g.chips_per_channel)?;
        let dies_per_chip = nonzero(&k("dies_per_chip"), g.dies_per_chip)?;
        let planes_per_die = nonzero(&k("planes_per_die"), g.planes_per_die)?;
        let blocks_per_plane = nonzero(&k("blocks_per_plane"), g.blocks_per_plane)?;
        let pages_per_block = nonzero(&k("pages_per_block"), g.pages_per_block)?;
        let page_bytes = nonzero(&k("page_size_bytes"), g.page_size_bytes)?;
        let unit_bytes = nonzero(&k("mapping_unit_bytes"), g.mapping_unit_bytes)?;
        if page_bytes % unit_bytes != 0 {
            return Err(err(
                &k("mapping_unit_bytes"),
                format!("{unit_bytes} does not divide page_size_bytes {page_bytes}"),
            ));
        }
        if planes_per_die as usize > crate::base::MAX_PLANES_PER_DIE {
            return Err(err(
                &k("planes_per_die"),
                format!(
                    "{planes_per_die} exceeds the supported {}",
                    crate::base::MAX_PLANES_PER_DIE
                ),
            ));
        }
        let slots_per_page = page_bytes / unit_bytes;
        if slots_per_page > crate::base::MAX_SLOTS_PER_PAGE as u32 {
            return Err(err(
                &k("mapping_unit_bytes"),
                format!(
                    "a page may hold at most {} mapping units, this one holds {slots_per_page}",
                    crate::base::MAX_SLOTS_PER_PAGE
                ),
            ));
        }
        let dies = channels as u64 * chips as u64 * dies_per_chip as u64;
        let planes = dies * planes_per_die as u64;
        let blocks = planes * blocks_per_plane as u64;
        let pages = blocks * pages_per_block as u64;
        let slots = pages * slots_per_page as u64;
        // u32::MAX is the "unmapped" marker.
        if slots >= u32::MAX as u64 || dies > u16::MAX as u64 {
            return Err(err("device.geometry", format!("{slots} mapping slots / {dies} dies exceed the supported 2^32-1 slots / 65535 dies")));
        }
        let units_per_block = pages_per_block * slots_per_page;
        let geometry = Geometry {
            channels,
            chips_per_channel: chips,
            dies_per_chip,
            planes_per_die,
            blocks_per_plane,
            pages_per_block,
            page_bytes,
            unit_bytes,
            slots_per_page,
            units_per_block,
            dies: dies as u32,
            planes: planes as u32,
            blocks: blocks as u32,
            pages,
            slots,
            blocks_per_plane_div: FastDiv::new(blocks_per_plane),
            units_per_block_div: FastDiv::new(units_per_block),
            slots_per_page_div: FastDiv::new(slots_per_page),
            pages_per_block_div: FastDiv::new(pages_per_block),
            planes_per_die_div: FastDiv::new(planes_per_die),
            blocks_per_die_div: FastDiv::new(blocks_per_plane * planes_per_die),
            dies_per_channel_div: FastDiv::new(chips * dies_per_chip),
        };

        let f = &c.ftl;
        check_placement_lanes(c)?;
        let regions = regions(c, &geometry)?;
        let data = regions
            .iter()
            .find(|r| r.content == RegionContent::Data)
            .ok_or_else(|| err("ftl.regions", "no region has content = \"data\""))?;
        let data_region = data.id;
        let (logical_units, min_op) = match &c.device.zns {
            Some(z) => (zoned_capacity(c, z, &geometry, data, regions.len())?, 0.0),
            None => data_capacity(c, &geometry, data)?,
        };
        let logical_units = logical_units as u32;
        let reserve = data.reserve_blocks_per_plane;
        for b in [
            ("device.bad_block_ratio", c.device.bad_block_ratio, 0.9),
            ("device.program_fail_rate", c.device.program_fail_rate, 1.0),
            ("device.erase_fail_rate", c.device.erase_fail_rate, 1.0),
        ] {
            if !(b.1.is_finite() && b.1 >= 0.0 && b.1 < b.2) {
                return Err(err(b.0, format!("{} must be >= 0 and < {}", b.1, b.2)));
            }
        }
        check_placement(c, &regions)?;
        let mapping_model_bytes = check_mapping(c, &geometry, &regions, logical_units)?;

        let order = f.stripe_order.to_ascii_uppercase();
        let mut sorted: Vec<char> = order.chars().collect();
        sorted.sort_unstable();
        if sorted != ['C', 'D', 'P', 'W'] {
            return Err(err(
                "ftl.stripe_order",
                format!("{:?} must be a permutation of C, W, D, P", f.stripe_order),
            ));
        }
        let stripe_planes = stripe_sequence(&geometry, &order);
        let k = f.die_affine_group_dies;
        if k > 0 {
            if c.device.zns.is_some() {
                return Err(err(
                    "ftl.die_affine_group_dies",
                    "a zoned device ([device.zns]) places a zone's pages on its die group (zone_dies); set 0 or leave it out",
                ));
            }
            if k > geometry.dies || !geometry.dies.is_multiple_of(k) {
                return Err(err(
                    "ftl.die_affine_group_dies",
                    format!(
                        "{k} must divide the device's {} dies (0 = off)",
                        geometry.dies
                    ),
                ));
            }
        }

        if c.device.channel_rate_mb_per_s == 0 {
            return Err(err("device.channel_rate_mb_per_s", "must be > 0"));
        }
        if c.device.host_transfer_mb_per_s == 0 {
            return Err(err(
                "device.host_transfer_mb_per_s",
                "must be > 0 (every byte a request moves crosses the host data path)",
            ));
        }
        for mode in CellMode::ALL {
            let t = c.device.timing.get(mode);
            let key = |f: &str| format!("device.timing.{}.{f}", mode.name());
            if t.read_ns == 0 || t.program_ns == 0 || t.erase_loop_ns == 0 {
                return Err(err(
                    &key("read_ns"),
                    "read_ns, program_ns and erase_loop_ns must be > 0",
                ));
            }
            if t.erase_loops.first().map(|e| e.0) != Some(0) {
                return Err(err(
                    &key("erase_loops"),
                    "the first entry must start at 0 P/E cycles",
                ));
            }
            if t.erase_loops.windows(2).any(|w| w[1].0 <= w[0].0)
                || t.erase_loops.iter().any(|e| e.1 == 0)
            {
                return Err(err(
                    &key("erase_loops"),
                    "P/E thresholds must increase and loop counts be > 0",
                ));
            }
            if t.program_loops == 0 {
                return Err(err(&key("program_loops"), "must be > 0"));
            }
            if t.endurance_pe_cycles == 0 {
                return Err(err(&key("endurance_pe_cycles"), "must be > 0"));
            }
            if t.partial_programs_per_page == 0 || t.partial_programs_per_page > slots_per_page {
                return Err(err(
                    &key("partial_programs_per_page"),
                    format!(
                        "{}: 1 (whole pages only) to the {slots_per_page} mapping units a page holds",
                        t.partial_programs_per_page
                    ),
                ));
            }
        }

        let write_buffer_units =
            (f.write_buffer_bytes / unit_bytes as u64).min(u32::MAX as u64) as u32;
        let min_buffer_units = slots_per_page * planes_per_die;
        if c.mode == Mode::Timed && write_buffer_units < min_buffer_units {
            return Err(err(
                "ftl.write_buffer_bytes",
                format!(
                    "{} holds fewer than one page per plane of a die ({} bytes)",
                    f.write_buffer_bytes,
                    min_buffer_units as u64 * unit_bytes as u64
                ),
            ));
        }
        if let (Some(z), Mode::Timed) = (&c.device.zns, c.mode) {
            // Each active zone may hold a partial page in the buffer, and a zone's page
            // packs only that zone's next units: a buffer full of partial pages would wait
            // for ever (FDP lanes pad one instead; a zone cannot).
            let need = z.max_active_zones as u64 * (slots_per_page as u64 - 1) + 1;
            if (write_buffer_units as u64) < need {
                return Err(err(
                    "ftl.write_buffer_bytes",
                    format!(
                        "{} can fill with a partial page of each of the {} active zones ([device.zns] max_active_zones), and no zone's page could then go out: a zoned device needs at least {} bytes (max_active_zones × (units per page − 1) + 1 units)",
                        f.write_buffer_bytes,
                        z.max_active_zones,
                        need * unit_bytes as u64
                    ),
                ));
            }
        }

        Ok(Derived {
            geometry,
            logical_units,
            logical_bytes: logical_units as u64 * unit_bytes as u64,
            physical_bytes: slots * unit_bytes as u64,
            reserve_blocks_per_plane: reserve,
            min_over_provisioning_ratio: min_op,
            regions,
            data_region,
            stripe_planes,
            mapping_table_bytes: logical_units as u64 * 4,
            mapping_model_bytes,
            write_buffer_units,
        })
    }
}

/// One region as laid out on the device.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RegionGeometry {
    pub id: u8,
    pub name: String,
    pub content: RegionContent,
    pub cell_mode: CellMode,
    /// In every plane the region owns block indexes `first_index .. first_index + blocks_per_plane`
    /// (a region on some planes only: `first_index` on its first plane, [`Self::plane_range`]).
    pub first_index: u32,
    /// Blocks of the region in each plane it takes blocks on.
    pub blocks_per_plane: u32,
    /// The plane ids the region takes blocks on (`planes`), ascending; empty: every plane.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub planes: Vec<u32>,
    /// A region on some planes only: its first block index in each plane, `u32::MAX` where
    /// it has no blocks (empty: `first_index` in every plane).
    #[serde(skip)]
    pub plane_first: Vec<u32>,
    pub pages_per_block: u32,
    pub units_per_block: u32,
    pub blocks: u64,
    pub physical_bytes: u64,
    /// What the region's blocks would hold in the device's native cell mode (its cost).
    pub native_bytes: u64,
    pub gc_soft_free_blocks: u32,
    pub gc_hard_free_blocks: u32,
    /// GC target while the host is idle.
    pub idle_gc_free_blocks: u32,
    /// Open (write-frontier) blocks per plane: one per stream writing into the region.
    pub open_blocks_per_plane: u32,
    /// Blocks per plane held back from data: the open blocks + gc_hard_free_blocks.
    pub reserve_blocks_per_plane: u32,
    /// Region GC copies go to.
    pub relocate_to: u8,
    /// Relocate only while the host is idle, and then everything (`drain_when_idle`).
    pub drain_when_idle: bool,
    /// Host pages take planes from a stripe cursor of the region's own (`own_stripe`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub own_stripe: bool,
    #[serde(skip)]
    pub gc: GcConfig,
}

impl RegionGeometry {
    /// Whether the region has blocks in `plane`.
    #[inline]
    pub fn on_plane(&self, plane: u32) -> bool {
        self.plane_first.is_empty() || self.plane_first[plane as usize] != u32::MAX
    }

    /// The region's block indexes within `plane` (empty where it has no blocks).
    pub fn plane_range(&self, plane: u32) -> std::ops::Range<u32> {
        match self.plane_first.get(plane as usize) {
            None => self.first_index..self.first_index + self.blocks_per_plane,
            Some(&u32::MAX) => 0..0,
            Some(&f) => f..f + self.blocks_per_plane,
        }
    }

    /// Planes the region has blocks in.
    pub fn plane_count(&self, g: &Geometry) -> u32 {
        if self.planes.is_empty() {
            g.planes
        } else {
            self.planes.len() as u32
        }
    }
}

fn region_key(i: usize, f: &str) -> String {
    format!("ftl.regions[{i}].{f}")
}

/// Lay the configured regions out (or the single default data region) and check them.
fn regions(c: &Config, g: &Geometry) -> Result<Vec<RegionGeometry>> {
    let f = &c.ftl;
    let default = [RegionConfig {
        name: "data".into(),
        content: RegionContent::Data,
        cell_mode: None,
        blocks_per_plane: None,
        bytes: None,
        pages_per_block: None,
        relocate_to: None,
        gc: None,
        gc_soft_free_blocks: None,
        gc_hard_free_blocks: None,
        drain_when_idle: false,
        own_stripe: false,
        planes: None,
    }];
    let list: &[RegionConfig] = if f.regions.is_empty() {
        &default
    } else {
        &f.regions
    };
    if list.len() > 16 {
        return Err(err("ftl.regions", "at most 16 regions are supported"));
    }
    let native = c.device.cell_mode;
    let mut out: Vec<RegionGeometry> = Vec::new();
    let mut rest_of: Option<usize> = None;
    for (i, r) in list.iter().enumerate() {
        let key = |f: &str| region_key(i, f);
        if out.iter().any(|o| o.name == r.name) || r.name.is_empty() {
            return Err(err(
                &key("name"),
                format!("{:?} is empty or used twice", r.name),
            ));
        }
        let mode = r.cell_mode.unwrap_or(native);
        if mode.bits() > native.bits() {
            return Err(err(
                &key("cell_mode"),
                format!(
                    "{} stores more bits per cell than the device's {}",
                    mode.name(),
                    native.name()
                ),
            ));
        }
        let ppb = match r.pages_per_block {
            Some(p) => p,
            None => {
                let p = g.pages_per_block * mode.bits();
                if !p.is_multiple_of(native.bits()) {
                    return Err(err(&key("pages_per_block"), format!("{} pages per {} block in {} mode is not a whole number; give pages_per_block", g.pages_per_block, native.name(), mode.name())));
                }
                p / native.bits()
            }
        };
        if ppb == 0 || ppb > g.pages_per_block {
            return Err(err(
                &key("pages_per_block"),
                format!("{ppb} must be in 1..={}", g.pages_per_block),
            ));
        }
        let bpp = match (r.blocks_per_plane, r.bytes) {
            (Some(_), Some(_)) => {
                return Err(err(
                    &key("bytes"),
                    "give blocks_per_plane or bytes, not both",
                ))
            }
            (Some(b), None) => b,
            (None, Some(bytes)) => {
                let on = r.planes.as_ref().map_or(g.planes, |p| p.len() as u32);
                let per_block_row = on.max(1) as u64 * ppb as u64 * g.page_bytes as u64;
                bytes.div_ceil(per_block_row).max(1) as u32
            }
            (None, None) => {
                if r.planes.is_some() {
                    return Err(err(
                        &key("planes"),
                        "a region on some planes only needs a size (blocks_per_plane or bytes); the region without one takes the rest of every plane",
                    ));
                }
                if rest_of.is_some() {
                    return Err(err(
                        &key("blocks_per_plane"),
                        "only one region may take the remaining blocks; size the others",
                    ));
                }
                rest_of = Some(i);
                0
            }
        };
        let soft = r.gc_soft_free_blocks.unwrap_or(f.gc_soft_free_blocks);
        let hard = r.gc_hard_free_blocks.unwrap_or(f.gc_hard_free_blocks);
        let (sk, hk) = if r.gc_hard_free_blocks.is_some() || r.gc_soft_free_blocks.is_some() {
            (key("gc_soft_free_blocks"), key("gc_hard_free_blocks"))
        } else {
            (
                "ftl.gc_soft_free_blocks".to_string(),
                "ftl.gc_hard_free_blocks".to_string(),
            )
        };
        if hard == 0 {
            return Err(err(&hk, "must be >= 1: GC needs a free block to copy into"));
        }
        if soft < hard {
            return Err(err(
                &sk,
                format!("{soft} is below gc_hard_free_blocks {hard}"),
            ));
        }
        if let Some(gc) = &r.gc {
            gc.check()
                .map_err(|(k, why)| err(&region_key(i, &format!("gc.{k}")), why))?;
        }
        let planes = match &r.planes {
            None => Vec::new(),
            Some(list) => {
                let mut p = list.clone();
                p.sort_unstable();
                let why = if p.is_empty() {
                    Some("names no plane".to_string())
                } else if p.windows(2).any(|w| w[0] == w[1]) {
                    Some("names a plane twice".to_string())
                } else if p[p.len() - 1] >= g.planes {
                    Some(format!(
                        "names plane {}: the device has planes 0..{}",
                        p[p.len() - 1],
                        g.planes
                    ))
                } else {
                    match r.content {
                        RegionContent::Data => Some("the data region takes blocks on every plane (host pages stripe over them all)".to_string()),
                        RegionContent::Translation => Some("the translation region takes blocks on every plane (translation page t lives on plane t mod planes)".to_string()),
                        _ => None,
                    }
                };
                if let Some(why) = why {
                    return Err(err(&key("planes"), format!("{list:?} {why}")));
                }
                if p.len() as u32 == g.planes {
                    Vec::new()
                } else {
                    p
                }
            }
        };
        out.push(RegionGeometry {
            id: i as u8,
            name: r.name.clone(),
            content: r.content,
            cell_mode: mode,
            first_index: 0,
            blocks_per_plane: bpp,
            planes,
            plane_first: Vec::new(),
            pages_per_block: ppb,
            units_per_block: ppb * g.slots_per_page,
            blocks: 0,
            physical_bytes: 0,
            native_bytes: 0,
            gc_soft_free_blocks: soft,
            gc_hard_free_blocks: hard,
            idle_gc_free_blocks: f.idle_gc_free_blocks.max(soft),
            open_blocks_per_plane: 0,
            reserve_blocks_per_plane: 0,
            relocate_to: i as u8,
            drain_when_idle: r.drain_when_idle,
            own_stripe: r.own_stripe,
            gc: r.gc.clone().unwrap_or_else(|| f.gc.clone()),
        });
    }
    // Regions on every plane come first in each plane (in configuration order), then the
    // regions on some planes only: every plane's subset regions must add up to the same
    // count, so the regions on every plane keep the same block indexes everywhere.
    let mut subset = vec![0u64; g.planes as usize];
    for r in out.iter().filter(|r| !r.planes.is_empty()) {
        for &p in &r.planes {
            subset[p as usize] += r.blocks_per_plane as u64;
        }
    }
    if let Some(p) = (0..subset.len()).find(|&p| subset[p] != subset[0]) {
        return Err(err(
            "ftl.regions",
            format!(
                "the regions on some planes only (key `planes`) take {} blocks of plane 0 and {} of plane {p}: they must take as many blocks of every plane (the other regions keep the same block indexes on every plane)",
                subset[0], subset[p]
            ),
        ));
    }
    let sized: u64 = out
        .iter()
        .filter(|r| r.planes.is_empty())
        .map(|r| r.blocks_per_plane as u64)
        .sum::<u64>()
        + subset[0];
    match rest_of {
        Some(i) => {
            if sized >= g.blocks_per_plane as u64 {
                return Err(err("ftl.regions", format!("the sized regions take {sized} of {} blocks per plane, leaving none for {:?}", g.blocks_per_plane, out[i].name)));
            }
            out[i].blocks_per_plane = g.blocks_per_plane - sized as u32;
        }
        None if sized != g.blocks_per_plane as u64 => {
            return Err(err("ftl.regions", format!("the regions take {sized} blocks per plane but a plane has {}; leave one region unsized to take the rest", g.blocks_per_plane)));
        }
        None => {}
    }
    let data_id = out
        .iter()
        .find(|r| r.content == RegionContent::Data)
        .map(|r| r.id);
    for (i, r) in list.iter().enumerate() {
        let target = match &r.relocate_to {
            Some(name) => out
                .iter()
                .find(|o| &o.name == name)
                .map(|o| o.id)
                .ok_or_else(|| {
                    err(
                        &region_key(i, "relocate_to"),
                        format!("no region is named {name:?}"),
                    )
                })?,
            None if r.content == RegionContent::Cache => data_id.unwrap_or(i as u8),
            None => i as u8,
        };
        if out[target as usize].content != out[i].content && out[i].content != RegionContent::Cache
        {
            return Err(err(
                &region_key(i, "relocate_to"),
                format!(
                    "a {} region cannot relocate into the {} region {:?}",
                    out[i].content.name(),
                    out[target as usize].content.name(),
                    out[target as usize].name
                ),
            ));
        }
        out[i].relocate_to = target;
        if r.drain_when_idle && target == i as u8 {
            return Err(err(
                &region_key(i, "drain_when_idle"),
                "a region drained while idle must relocate into another region (relocate_to)",
            ));
        }
    }
    // Open blocks per plane: one per stream that writes into the region (host pages, its
    // own GC copies, copies relocated in from another region, wear-leveling migrations),
    // plus the free blocks kept for GC.
    f.gc.check()
        .map_err(|(k, why)| err(&format!("ftl.gc.{k}"), why))?;
    f.wear_leveling
        .check()
        .map_err(|(k, why)| err(&format!("ftl.wear_leveling.{k}"), why))?;
    f.read_reclaim
        .check()
        .map_err(|(k, why)| err(&format!("ftl.read_reclaim.{k}"), why))?;
    f.refresh
        .check()
        .map_err(|(k, why)| err(&format!("ftl.refresh.{k}"), why))?;
    let wear = f.wear_leveling.migrates();
    let reliability = f.read_reclaim.relocates() || f.refresh.relocates();
    // Write lanes (FDP: every reclaim-unit handle; else the placement policy's own): each
    // has a host stream of its own in each region host pages reach, and a GC stream of its
    // own wherever its blocks are collected into their own region (GC never mixes lanes).
    let lanes = c
        .device
        .fdp
        .as_ref()
        .map_or(f.placement.params().write_lanes(), |f| f.handles);
    let relocations: Vec<u8> = out.iter().map(|r| r.relocate_to).collect();
    let mut first = 0;
    for (i, r) in out.iter_mut().enumerate() {
        // Translation pages are written through the region's host stream.
        let host = matches!(
            r.content,
            RegionContent::Data | RegionContent::Cache | RegionContent::Translation
        );
        let own_gc = r.relocate_to == r.id;
        let inbound = relocations
            .iter()
            .enumerate()
            .any(|(j, &t)| j != i && t == r.id);
        // Read reclaim and retention refresh copy into the data region's wear stream too.
        let wl = (wear || reliability) && r.content == RegionContent::Data;
        // Translation pages take lane 0's streams only.
        let lanes = if r.content == RegionContent::Translation {
            1
        } else {
            lanes
        };
        r.open_blocks_per_plane =
            lanes * (host as u32 + own_gc as u32) + inbound as u32 + wl as u32;
        r.reserve_blocks_per_plane = r.open_blocks_per_plane + r.gc_hard_free_blocks;
        let on = if r.planes.is_empty() {
            r.first_index = first;
            first += r.blocks_per_plane;
            g.planes
        } else {
            r.planes.len() as u32
        };
        r.blocks = r.blocks_per_plane as u64 * on as u64;
        r.physical_bytes = r.blocks * r.units_per_block as u64 * g.unit_bytes as u64;
        r.native_bytes = r.blocks * g.units_per_block as u64 * g.unit_bytes as u64;
        if r.blocks_per_plane <= r.reserve_blocks_per_plane + 1 {
            let key = if f.regions.is_empty() {
                "device.geometry.blocks_per_plane".to_string()
            } else {
                region_key(i, "blocks_per_plane")
            };
            return Err(err(&key, format!("{} leaves no room: each plane keeps {} blocks back ({} open + gc_hard_free_blocks)", r.blocks_per_plane, r.reserve_blocks_per_plane, r.open_blocks_per_plane)));
        }
        if r.gc_soft_free_blocks + r.open_blocks_per_plane >= r.blocks_per_plane {
            let over =
                list[i].gc_soft_free_blocks.is_some() || list[i].gc_hard_free_blocks.is_some();
            let key = if over {
                region_key(i, "gc_soft_free_blocks")
            } else {
                "ftl.gc_soft_free_blocks".to_string()
            };
            return Err(err(
                &key,
                format!(
                    "{} free blocks (with {} open) is the whole plane or more: it has {} blocks",
                    r.gc_soft_free_blocks, r.open_blocks_per_plane, r.blocks_per_plane
                ),
            ));
        }
    }
    let mut next = vec![first; g.planes as usize];
    for r in out.iter_mut().filter(|r| !r.planes.is_empty()) {
        r.plane_first = vec![u32::MAX; g.planes as usize];
        for &p in &r.planes {
            r.plane_first[p as usize] = next[p as usize];
            next[p as usize] += r.blocks_per_plane;
        }
        r.first_index = r.plane_first[r.planes[0] as usize];
    }
    if out
        .iter()
        .filter(|r| r.content == RegionContent::Data)
        .count()
        > 1
    {
        return Err(err(
            "ftl.regions",
            "exactly one region may hold data (content = \"data\")",
        ));
    }
    for (i, r) in out.iter().enumerate() {
        let why = match r.content {
            RegionContent::Translation if r.relocate_to != r.id => {
                Some("a translation region relocates into itself")
            }
            RegionContent::Journal if r.relocate_to != r.id => {
                Some("a journal region relocates into itself (journal data never migrates)")
            }
            _ => None,
        };
        if let Some(why) = why {
            return Err(err(&region_key(i, "content"), why));
        }
    }
    Ok(out)
}

/// Logical capacity (mapping units) of a zoned device: its zones. What the zoned model
/// needs of the rest of the configuration is checked here.
fn zoned_capacity(
    c: &Config,
    z: &super::ZnsConfig,
    g: &Geometry,
    data: &RegionGeometry,
    regions: usize,
) -> Result<u64> {
    let key = |k: &str| format!("device.zns.{k}");
    if c.device.over_provisioning_ratio != 0.0 {
        return Err(err(
            "device.over_provisioning_ratio",
            format!(
                "{}: a zoned device's capacity is its zones (spare space is the host's to keep); set 0 or leave it out",
                c.device.over_provisioning_ratio
            ),
        ));
    }
    let refuse = |k: &str, why: &str| Err(err(k, format!("a zoned device ([device.zns]) {why}")));
    if regions != 1 {
        return refuse("ftl.regions", "has one data region");
    }
    if c.ftl.wear_leveling.migrates() {
        return refuse(
            "ftl.wear_leveling",
            "moves no data on its own (no migrations): use policy = \"none\"; allocation (min-erase) levels wear as zones open",
        );
    }
    if c.ftl.mapping.is_demand() {
        return refuse("ftl.mapping", "is modelled with `page-map` only");
    }
    for (key, on) in [
        ("ftl.read_reclaim", c.ftl.read_reclaim.relocates()),
        ("ftl.refresh", c.ftl.refresh.relocates()),
    ] {
        if on {
            return refuse(
                key,
                "moves no data on its own (no device GC): use policy = \"none\"",
            );
        }
    }
    if !c.ftl.placement.params().is_direct() {
        return refuse("ftl.placement", "places by zone: use `direct`");
    }
    if c.precondition.enabled {
        return refuse(
            "precondition.enabled",
            "is written by its host through zone commands: fill it with the workload",
        );
    }
    if c.device.program_fail_rate > 0.0 {
        return refuse(
            "device.program_fail_rate",
            "cannot move a failed program's zone data (no device copies): set 0",
        );
    }
    let zd = if z.zone_dies == 0 {
        g.dies
    } else {
        z.zone_dies
    };
    if !g.dies.is_multiple_of(zd) {
        return Err(err(
            &key("zone_dies"),
            format!(
                "{zd} does not divide the device's {} dies (valid: {})",
                g.dies,
                (1..=g.dies)
                    .filter(|d| g.dies.is_multiple_of(*d))
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let geo = super::zoned::zone_geometry(z, g, data.blocks_per_plane);
    let unit = g.unit_bytes as u64;
    let zone_bytes = geo.zone_units as u64 * unit;
    if !z.zone_capacity_bytes.is_multiple_of(unit) || z.zone_capacity_bytes > zone_bytes {
        return Err(err(
            &key("zone_capacity_bytes"),
            format!(
                "{}: a multiple of the mapping unit ({unit} bytes) up to the zone size ({zone_bytes} bytes)",
                z.zone_capacity_bytes
            ),
        ));
    }
    if geo.zones == 0 {
        return Err(err(
            &key("blocks_per_plane"),
            format!(
                "no zone fits: {} blocks per plane less {} spare hold no zone of {} blocks per plane",
                data.blocks_per_plane, z.spare_blocks_per_plane, z.blocks_per_plane
            ),
        ));
    }
    Ok(geo.zones as u64 * geo.zone_units as u64)
}

/// Logical capacity (mapping units) and minimum OP of the data region.
fn data_capacity(c: &Config, g: &Geometry, r: &RegionGeometry) -> Result<(u64, f64)> {
    let k = |f: &str| format!("device.geometry.{f}");
    let reserve = r.reserve_blocks_per_plane;
    let upb = r.units_per_block as u64;
    let planes = g.planes as u64;
    let spp = g.slots_per_page as u64;
    let slots = r.blocks * upb;
    let op = c.device.over_provisioning_ratio;
    super::finite_at_least_0("device.over_provisioning_ratio", op)?;
    // The epsilon keeps exact ratios (e.g. 880/800 blocks at OP 0.1) from losing a unit to rounding.
    let logical_units = (slots as f64 / (1.0 + op) + 1e-6).floor() as u64;
    // With several planes, each may hold its share of the logical space plus one block
    // and one page (host writes skip a plane beyond that). GC only takes a victim with a
    // page's worth of garbage (so padding its last page still frees space): when a plane
    // is full but for its reserve, its F = blocks − reserve blocks must hold more than
    // F · (slots_per_page − 1) invalid units, so one of them has a page's worth.
    let slack_units = if planes > 1 { upb + spp } else { 0 };
    let data_blocks = (r.blocks_per_plane - reserve) as u64;
    let per_plane_room = data_blocks * upb;
    let needed_garbage = data_blocks * (spp - 1) + 1;
    if per_plane_room <= slack_units + needed_garbage {
        return Err(err(&k("blocks_per_plane"), format!("{} data blocks per plane leave no room: each plane keeps {reserve} blocks back (open blocks + gc_hard_free_blocks) and one block of balance slack", r.blocks_per_plane)));
    }
    let max_logical_units = planes * (per_plane_room - slack_units - needed_garbage);
    let min_op = slots as f64 / max_logical_units as f64 - 1.0;
    if logical_units > max_logical_units {
        let handles = match &c.device.fdp {
            Some(f) if f.handles > 1 => format!(
                " ([device.fdp] handles = {}: a host and a GC block open per handle)",
                f.handles
            ),
            _ => String::new(),
        };
        return Err(err(
            "device.over_provisioning_ratio",
            format!(
                "{op} leaves GC no room: each plane needs {reserve} reserve blocks (open blocks + gc_hard_free_blocks){handles}, one block of balance slack when there are several planes, and some spare space; the minimum for this geometry is {min_op:.6}"
            ),
        ));
    }
    // The other bound: the logical space fills at least one block of every plane (host
    // pages stripe over the planes), or no block ever holds data worth collecting and the
    // run measures an empty device (an OP of 10^6 made 8 KiB of a 10 GiB one).
    let min_logical_units = planes * upb;
    if logical_units < min_logical_units {
        let max_op = slots as f64 / min_logical_units as f64 - 1.0;
        return Err(err(
            "device.over_provisioning_ratio",
            format!(
                "{op} leaves {logical_units} logical units: the logical space must fill at least one block per plane ({planes} planes x {upb} units); the maximum for this geometry is {max_op:.6}"
            ),
        ));
    }
    Ok((logical_units, min_op))
}

/// A demand-based mapping needs one translation region with room for its translation
/// pages (page `t` lives in plane `t mod planes`) plus a block of slack per plane for GC;
/// the mapping's own parameters are checked by its policy.
fn check_mapping(
    c: &Config,
    g: &Geometry,
    regions: &[RegionGeometry],
    logical_units: u32,
) -> Result<u64> {
    let m = &c.ftl.mapping;
    let shape = crate::policy::mapping::MappingShape {
        logical_units,
        page_bytes: g.page_bytes,
    };
    m.check_device(&shape)
        .map_err(|(key, why)| err(&format!("ftl.mapping.{key}"), why))?;
    let per = m.entries_per_tpage(g.page_bytes);
    let trans: Vec<&RegionGeometry> = regions
        .iter()
        .filter(|r| r.content == RegionContent::Translation)
        .collect();
    if per == 0 {
        return Ok(0);
    }
    let tpages = logical_units.div_ceil(per);
    // Per translation page: GTD slot, LRU links, state/counters; entry caches and the log
    // add per-unit links or bits (the policy's `MappingParams::model_bytes_per_unit`).
    let model_bytes = m.model_bytes(logical_units, tpages);
    let per_plane = tpages.div_ceil(g.planes) as u64;
    let Some(r) = (match trans.len() {
        1 => Some(trans[0]),
        _ => None,
    }) else {
        return Err(err(
            "ftl.mapping",
            format!(
                "{:?} keeps its {tpages} translation pages in flash and needs exactly one [[ftl.regions]] entry with content = \"translation\" ({} given); e.g. {{ name = \"map\", content = \"translation\", blocks_per_plane = {} }}",
                m.name(),
                trans.len(),
                per_plane.div_ceil(g.pages_per_block as u64) * 2 + 6
            ),
        ));
    };
    let ppb = r.pages_per_block as u64;
    let room =
        (r.blocks_per_plane as u64).saturating_sub(r.reserve_blocks_per_plane as u64 + 1) * ppb;
    if room < per_plane {
        return Err(err(
            "ftl.regions",
            format!(
                "the translation region {:?} holds {room} pages per plane beyond its reserve and a block of GC slack; {per_plane} translation pages per plane need {} blocks per plane or more",
                r.name,
                per_plane.div_ceil(ppb) + r.reserve_blocks_per_plane as u64 + 1
            ),
        ));
    }
    Ok(model_bytes)
}

/// The placement policy's write lanes: a policy that follows placement identifiers needs
/// the device's table, one with lanes of its own takes no lanes from the host.
fn check_placement_lanes(c: &Config) -> Result<()> {
    let p = c.ftl.placement.params();
    let name = c.ftl.placement.name();
    if p.reads_placement_ids() && c.device.fdp.is_none() {
        return Err(err(
            "ftl.placement",
            format!("{name:?} follows the placement identifiers of [device.fdp], and the device has none: add [device.fdp] (docs/zns.md), or choose another placement"),
        ));
    }
    let lanes = p.write_lanes();
    if lanes == 0 || lanes as usize > crate::base::MAX_LANES {
        return Err(err(
            "ftl.placement",
            format!(
                "{name:?} writes in {lanes} lanes: 1 to {}",
                crate::base::MAX_LANES
            ),
        ));
    }
    if lanes > 1 && (c.device.fdp.is_some() || c.device.zns.is_some()) {
        return Err(err(
            "ftl.placement",
            format!("{name:?} chooses write lanes of its own: a device with [device.fdp] or [device.zns] takes its lanes from the host"),
        ));
    }
    Ok(())
}

/// The placement policy must find the regions it writes to.
fn check_placement(c: &Config, regions: &[RegionGeometry]) -> Result<()> {
    let count = |k: RegionContent| regions.iter().filter(|r| r.content == k).count();
    let (caches, journals) = (count(RegionContent::Cache), count(RegionContent::Journal));
    if regions.len() > crate::base::MAX_REGIONS {
        return Err(err(
            "ftl.regions",
            format!("at most {} regions", crate::base::MAX_REGIONS),
        ));
    }
    c.ftl
        .placement
        .check_regions(caches, journals)
        .map_err(|why| err("ftl.placement", why))
}

/// Plane ids in stripe order; `order[0]` varies fastest.
fn stripe_sequence(g: &Geometry, order: &str) -> Vec<u32> {
    let extent = |c: char| match c {
        'C' => g.channels,
        'W' => g.chips_per_channel,
        'D' => g.dies_per_chip,
        _ => g.planes_per_die,
    };
    let mut out = Vec::with_capacity(g.planes as usize);
    for i in 0..g.planes {
        let mut rest = i;
        let (mut ch, mut w, mut d, mut p) = (0, 0, 0, 0);
        for c in order.chars() {
            let n = extent(c);
            let v = rest % n;
            rest /= n;
            match c {
                'C' => ch = v,
                'W' => w = v,
                'D' => d = v,
                _ => p = v,
            }
        }
        let die = (ch * g.chips_per_channel + w) * g.dies_per_chip + d;
        out.push(die * g.planes_per_die + p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::FastDiv;

    #[test]
    fn fast_division_is_exact() {
        for d in [1u32, 2, 3, 7, 128, 683, 768, 3072, 65_537, u32::MAX] {
            let f = FastDiv::new(d);
            for x in [
                0u32,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                12_345_678,
                u32::MAX - 1,
                u32::MAX,
            ] {
                assert_eq!(f.div(x), x / d, "{x} / {d}");
            }
        }
    }
}
