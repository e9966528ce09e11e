//! Validated configuration and the values derived from it, computed once.

use super::{CellMode, Config, Mode};
use crate::error::{Result, SimError};
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
    pub fn plane_of_block(&self, block: u32) -> u32 {
        self.blocks_per_plane_div.div(block)
    }
    #[inline]
    pub fn die_of_plane(&self, plane: u32) -> u32 {
        plane / self.planes_per_die
    }
    #[inline]
    pub fn die_of_block(&self, block: u32) -> u32 {
        self.die_of_plane(self.plane_of_block(block))
    }
    #[inline]
    pub fn channel_of_die(&self, die: u32) -> u32 {
        die / (self.chips_per_channel * self.dies_per_chip)
    }
    #[inline]
    pub fn block_of_slot(&self, slot: u32) -> u32 {
        self.units_per_block_div.div(slot)
    }
    #[inline]
    pub fn first_slot_of_block(&self, block: u32) -> u32 {
        block * self.units_per_block
    }
}

/// Everything the simulator needs, validated.
#[derive(Clone, Debug, Serialize)]
pub struct Derived {
    pub geometry: Geometry,
    pub logical_units: u32,
    pub logical_bytes: u64,
    pub physical_bytes: u64,
    /// Blocks per plane kept back from host writes: 2 open blocks (host, GC) + the urgent
    /// GC threshold. Host writes may not take a plane's last `gc_hard_free_blocks` blocks.
    /// The minimum OP also leaves one block per plane of slack for uneven plane occupancy.
    pub reserve_blocks_per_plane: u32,
    /// Smallest OP ratio this geometry and GC thresholds accept.
    pub min_over_provisioning_ratio: f64,
    /// Plane ids in the order consecutive pages stripe over them.
    pub stripe_planes: Vec<u32>,
    /// Page-level table: 4 bytes per mapping unit.
    pub mapping_table_bytes: u64,
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
        if planes_per_die as usize > crate::scheduler::MAX_PLANES_PER_DIE {
            return Err(err(
                &k("planes_per_die"),
                format!(
                    "{planes_per_die} exceeds the supported {}",
                    crate::scheduler::MAX_PLANES_PER_DIE
                ),
            ));
        }
        let slots_per_page = page_bytes / unit_bytes;
        if slots_per_page > crate::MAX_SLOTS_PER_PAGE as u32 {
            return Err(err(
                &k("mapping_unit_bytes"),
                format!(
                    "a page may hold at most {} mapping units, this one holds {slots_per_page}",
                    crate::MAX_SLOTS_PER_PAGE
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
        };

        let f = &c.ftl;
        if f.gc_hard_free_blocks == 0 {
            return Err(err(
                "ftl.gc_hard_free_blocks",
                "must be >= 1: GC needs a free block to copy into",
            ));
        }
        if f.gc_soft_free_blocks < f.gc_hard_free_blocks {
            return Err(err(
                "ftl.gc_soft_free_blocks",
                format!(
                    "{} is below gc_hard_free_blocks {}",
                    f.gc_soft_free_blocks, f.gc_hard_free_blocks
                ),
            ));
        }
        let reserve = 2 + f.gc_hard_free_blocks;
        if blocks_per_plane <= reserve + 1 {
            return Err(err(&k("blocks_per_plane"), format!("{blocks_per_plane} leaves no room: each plane keeps {reserve} blocks back (2 open + gc_hard_free_blocks)")));
        }
        let op = c.device.over_provisioning_ratio;
        if !(op.is_finite() && op >= 0.0) {
            return Err(err(
                "device.over_provisioning_ratio",
                format!("{op} must be a finite number >= 0"),
            ));
        }
        // The epsilon keeps exact ratios (e.g. 880/800 blocks at OP 0.1) from losing a unit to rounding.
        let logical_units = (slots as f64 / (1.0 + op) + 1e-6).floor() as u64;
        // With several planes, each may hold its share of the logical space plus one block
        // and one page (host writes skip a plane beyond that). GC only takes a victim with a
        // page's worth of garbage (so padding its last page still frees space): when a plane
        // is full but for its reserve, its F = blocks − reserve blocks must hold more than
        // F · (slots_per_page − 1) invalid units, so one of them has a page's worth.
        let slack_units = if planes > 1 {
            units_per_block as u64 + slots_per_page as u64
        } else {
            0
        };
        let data_blocks = (blocks_per_plane - reserve) as u64;
        let per_plane_room = data_blocks * units_per_block as u64;
        let needed_garbage = data_blocks * (slots_per_page as u64 - 1) + 1;
        if per_plane_room <= slack_units + needed_garbage {
            return Err(err(&k("blocks_per_plane"), format!("{blocks_per_plane} leaves no room: each plane keeps {reserve} blocks back (2 open + gc_hard_free_blocks) and one block of balance slack")));
        }
        let max_logical_units = planes * (per_plane_room - slack_units - needed_garbage);
        let min_op = slots as f64 / max_logical_units as f64 - 1.0;
        if logical_units > max_logical_units {
            return Err(err(
                "device.over_provisioning_ratio",
                format!(
                    "{op} leaves GC no room: each plane needs {reserve} reserve blocks (2 open + gc_hard_free_blocks), one block of balance slack when there are several planes, and some spare space; the minimum for this geometry is {:.6}",
                    min_op
                ),
            ));
        }
        if logical_units == 0 {
            return Err(err(
                "device.over_provisioning_ratio",
                "leaves no logical capacity",
            ));
        }
        let logical_units = logical_units as u32;

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

        if c.device.channel_rate_mb_per_s == 0 {
            return Err(err("device.channel_rate_mb_per_s", "must be > 0"));
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

        Ok(Derived {
            geometry,
            logical_units,
            logical_bytes: logical_units as u64 * unit_bytes as u64,
            physical_bytes: slots * unit_bytes as u64,
            reserve_blocks_per_plane: reserve,
            min_over_provisioning_ratio: min_op,
            stripe_planes,
            mapping_table_bytes: logical_units as u64 * 4,
            write_buffer_units,
        })
    }
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
