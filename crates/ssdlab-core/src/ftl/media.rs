//! The media: what is on the device and where each unit lives. Blocks (`BlockTable`), the
//! OOB of every slot, the ground-truth mapping table, the regions and their per-plane
//! states, and the timing model of the NAND. The FTL's parts decide over it through
//! explicit borrows; [`Ftl::media`](super::Ftl::media) lends it out read-only (tests,
//! checks, summaries, prefetching).

use super::jobs::Jobs;
use super::region::{PlaneState, Region};
use super::{note, note_cold};
use crate::config::Geometry;
use crate::flash::{BlockState, BlockTable, Oob, TimingModel};
use crate::ids::{BlockId, Lpn, PlaneId, SlotId};
use crate::policy::mapping::MappingTable;

/// The device's media state (see the module documentation).
#[derive(Clone)]
pub struct Media {
    pub(super) geo: Geometry,
    pub(super) timing: TimingModel,
    /// The ground truth of where each unit lives.
    pub(super) table: MappingTable,
    pub(super) blocks: BlockTable,
    pub(super) oob: Oob,
    pub(super) regions: Vec<Region>,
    /// Per (region, plane) state, index `region · planes + plane`.
    pub(super) ps: Vec<PlaneState>,
    /// The region holding the logical capacity.
    pub(super) data_region: u8,
    pub(super) logical_units: u32,
    /// Pages programmed so far: the age clock of cost-benefit GC (mode-independent).
    pub(super) program_seq: u64,
}

impl Media {
    /// The device geometry.
    #[inline]
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// The NAND timing model.
    #[inline]
    pub fn timing(&self) -> &TimingModel {
        &self.timing
    }

    /// Every block's state, counts and erase count (read-only).
    #[inline]
    pub fn blocks(&self) -> &BlockTable {
        &self.blocks
    }

    /// Every slot's OOB (read-only).
    #[inline]
    pub fn oob(&self) -> &Oob {
        &self.oob
    }

    /// The regions, in region id order.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// Erase count of every block, by block id.
    #[inline]
    pub fn erase_counts(&self) -> &[u32] {
        &self.blocks.erase_count
    }

    pub fn logical_units(&self) -> u32 {
        self.logical_units
    }

    /// Index of (region, plane) in the plane-state array.
    #[inline]
    pub(super) fn rp(&self, r: u8, plane: PlaneId) -> usize {
        r as usize * self.geo.planes as usize + plane.idx()
    }

    /// The state of region `r` in `plane`.
    #[inline]
    pub fn plane_state(&self, r: u8, plane: PlaneId) -> &PlaneState {
        &self.ps[self.rp(r, plane)]
    }

    /// Free blocks of region `r` in `plane`.
    #[inline]
    pub fn free_blocks(&self, r: u8, plane: PlaneId) -> u32 {
        self.ps[self.rp(r, plane)].free.len()
    }

    /// Free blocks of the data region over all planes.
    pub fn free_blocks_total(&self) -> u64 {
        (0..self.geo.planes)
            .map(|p| self.free_blocks(self.data_region, PlaneId(p)) as u64)
            .sum()
    }

    /// The region holding the logical capacity.
    pub fn data_region(&self) -> &Region {
        &self.regions[self.data_region as usize]
    }

    /// Slot holding `lpn`, or `SlotId::NONE` (the mapping's ground truth, without any cost:
    /// tests, checks and summaries; host reads go through
    /// [`Ftl::read_units`](super::Ftl::read_units)).
    #[inline]
    pub fn slot_of(&self, lpn: Lpn) -> SlotId {
        self.table.lookup(lpn)
    }

    /// Whether `lpn` holds data on flash (read-modify-write decisions).
    #[inline]
    pub fn is_mapped(&self, lpn: Lpn) -> bool {
        !self.table.lookup(lpn).is_none()
    }

    /// Units mapped to flash.
    pub fn mapped_units(&self) -> u64 {
        self.table.mapped_units()
    }

    /// Move `block` from `from` to `to` ([`BlockTable::set_state`]), recording a
    /// violation in `internal`.
    #[inline]
    pub(super) fn set_block_state(
        &mut self,
        internal: &mut Option<String>,
        block: BlockId,
        from: BlockState,
        to: BlockState,
    ) {
        note(internal, self.blocks.set_state(block, from, to));
    }

    /// `block` has had its last page programmed (or, on a `zoned` device, the last
    /// program in flight of a block sealed meanwhile): it is full, a GC candidate. Returns
    /// whether it closed.
    #[inline(always)]
    pub(super) fn close_if_full(
        &mut self,
        internal: &mut Option<String>,
        block: BlockId,
        zoned: bool,
    ) -> bool {
        let b = block.idx();
        let ps = &self.ps[self.blocks.rp[b] as usize];
        let p = self.blocks.programmed[b];
        // A zone's block sealed while programs were in flight closes at its last one.
        let sealed = || self.blocks.sealed[b] && p == self.blocks.next_page[b];
        if p == ps.pages_per_block || (zoned && sealed()) {
            note(
                internal,
                self.blocks
                    .set_state(block, BlockState::Open, BlockState::Full),
            );
            self.blocks.closed_seq[b] = self.program_seq;
            let (r, plane) = (ps.region as usize, ps.plane);
            self.regions[r]
                .victims
                .on_full(plane, block, self.blocks.valid_units[b]);
            return true;
        }
        false
    }

    /// A read of `block` was queued: pin the block against its erase. Only a block
    /// holding data can be read.
    #[inline]
    pub(super) fn pin(&mut self, internal: &mut Option<String>, block: BlockId) {
        let b = block.idx();
        let (pins, state) = (self.blocks.pins[b], self.blocks.state[b]);
        if pins == u16::MAX
            || matches!(
                state,
                BlockState::Free | BlockState::Erasing | BlockState::Bad
            )
        {
            pin_violation(internal, block, "queued", state, pins);
        }
        self.blocks.pins[b] = pins.wrapping_add(1);
    }

    /// A read of `block` completed: unpin it.
    #[inline]
    pub(super) fn unpin(&mut self, internal: &mut Option<String>, block: BlockId) {
        let b = block.idx();
        let pins = self.blocks.pins[b];
        if pins == 0 {
            let state = self.blocks.state[b];
            pin_violation(internal, block, "completed", state, pins);
        }
        self.blocks.pins[b] = pins.saturating_sub(1);
    }

    /// Mark `slot` invalid (its unit was overwritten, trimmed or moved); a plane waiting
    /// for a victim is woken in `jobs` when the block now qualifies.
    #[inline(always)]
    pub(super) fn invalidate(&mut self, jobs: &mut Jobs, slot: SlotId) {
        self.oob.clear(slot.idx());
        let b = self.geo.block_of_slot(slot);
        let v = &mut self.blocks.valid_units[b.idx()];
        *v -= 1;
        let v = *v;
        let ps = &mut self.ps[self.blocks.rp[b.idx()] as usize];
        ps.valid_units -= 1;
        if self.blocks.state[b.idx()] == BlockState::Full {
            let (r, plane) = (ps.region, ps.plane);
            let region = &mut self.regions[r as usize];
            region.victims.on_invalidate(plane, b, v);
            if ps.starved && v <= region.max_victim_valid {
                ps.starved = false;
                jobs.wake(self, r, plane);
            }
        }
    }

    /// Spread the logical capacity over the data region's planes by their usable room
    /// (each plane's cap on valid units); an error when the room no longer holds it.
    pub(super) fn update_capacity(&mut self) -> std::result::Result<(), String> {
        if !self.data_region().device_gc {
            // A zoned device: zones go offline one by one instead (`Ftl::reset_zone`).
            return Ok(());
        }
        let spp = self.geo.slots_per_page;
        let logical = self.logical_units as u64;
        let region = &self.regions[self.data_region as usize];
        let planes = self.geo.planes as u64;
        let upb = region.geo.units_per_block as u64;
        // Several planes: each may hold its share plus one block and a page of slack.
        let slack = if planes > 1 { upb + spp as u64 } else { 0 };
        let first = self.rp(self.data_region, PlaneId(0));
        let states = &mut self.ps[first..first + planes as usize];
        let rooms: Vec<u64> = states
            .iter()
            .map(|p| {
                region
                    .room_units(p.usable_blocks, spp)
                    .saturating_sub(slack)
            })
            .collect();
        let total: u64 = rooms.iter().sum();
        if total < logical {
            return Err(format!(
                "the data region's usable blocks hold {total} units, fewer than the logical capacity of {logical} units with each plane's GC reserve"
            ));
        }
        let even = rooms.iter().all(|&r| r == rooms[0]);
        for (p, room) in states.iter_mut().zip(&rooms) {
            let share = if even {
                logical / planes
            } else {
                (logical as u128 * *room as u128 / total as u128) as u64
            };
            p.valid_cap_units = share + upb;
        }
        Ok(())
    }

    /// First slot of `page` of `block`.
    #[inline]
    pub(super) fn page_slot(&self, block: BlockId, page: u32) -> SlotId {
        self.geo.first_slot_of_block(block) + page * self.geo.slots_per_page
    }

    /// A host request at `offset_bytes` comes soon: prefetch its first unit's mapping entry.
    #[inline]
    pub fn prefetch_offset(&self, offset_bytes: u64) {
        let lpn = self.unit_of(offset_bytes);
        crate::prefetch::prefetch(self.table.slots(), lpn as usize);
    }

    /// A host read at `offset_bytes` comes next, its mapping entry asked for a few
    /// requests ago ([`Media::prefetch_offset`]): prefetch what issuing and completing its
    /// NAND read touch in its block's state (cell mode, read pins, state).
    #[inline]
    pub fn prefetch_read_block(&self, offset_bytes: u64) {
        let lpn = self.unit_of(offset_bytes) as usize;
        let Some(slot) = self.table.slots().get(lpn).map(|e| e.get()) else {
            return;
        };
        if !slot.is_none() {
            let b = self.geo.block_of_slot(slot).idx();
            crate::prefetch::prefetch(&self.blocks.pins, b);
            crate::prefetch::prefetch(&self.blocks.cell_mode, b);
            crate::prefetch::prefetch(&self.blocks.state, b);
        }
    }

    /// The mapping unit holding byte `offset_bytes`.
    #[inline(always)]
    fn unit_of(&self, offset_bytes: u64) -> u64 {
        let unit = self.geo.unit_bytes as u64;
        if unit.is_power_of_two() {
            offset_bytes >> unit.trailing_zeros()
        } else {
            offset_bytes / unit
        }
    }

    /// A host write of `lpn` comes soon: prefetch its mapping entry (`near` = false, well
    /// ahead) or, once that entry is cached, what overwriting it touches (`near` = true:
    /// the old slot's valid-bit word, its block's valid count, plane, state and victim-index
    /// links).
    #[inline]
    pub fn prefetch_unit(&self, lpn: u32, near: bool) {
        let l2p = self.table.slots();
        if !near {
            crate::prefetch::prefetch(l2p, lpn as usize);
            return;
        }
        match l2p.get(lpn as usize).map(|e| e.get()) {
            Some(old) if !old.is_none() => {
                self.oob.prefetch_valid(old.idx());
                let b = self.geo.block_of_slot(old);
                crate::prefetch::prefetch(&self.blocks.valid_units, b.idx());
                crate::prefetch::prefetch(&self.blocks.rp, b.idx());
                crate::prefetch::prefetch(&self.blocks.state, b.idx());
                // One region (the large devices this is for): its victim index.
                if let [region] = &self.regions[..] {
                    region.victims.prefetch(b);
                }
            }
            _ => {}
        }
    }
}

/// A read pinned or unpinned `block` against the rules: recorded (kept off the hot path).
#[cold]
#[inline(never)]
fn pin_violation(
    internal: &mut Option<String>,
    block: BlockId,
    event: &str,
    state: BlockState,
    pins: u16,
) {
    note_cold(
        internal,
        format!("read of block {block} {event} in state {state:?} with {pins} reads pinned"),
    );
}
