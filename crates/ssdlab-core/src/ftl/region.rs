//! Block regions. A region owns a fixed range of block indexes in every plane (or in the
//! planes it names, key `planes`), programs
//! them in one cell mode with its own pages per block, keeps per plane a free pool and one
//! open block per write stream, and has its own victim index, GC thresholds and wear
//! leveler. Today's default device is one `data` region.

use super::alloc::FreePool;
use super::gc::{IndexShape, VictimIndex};
use super::wear::{WearLeveler, WearShape};
use crate::config::{AllocConfig, Config, Geometry, RegionContent, RegionGeometry, WearConfig};
use crate::ids::{BlockId, JobId, PlaneId};

pub use crate::base::{Stream, STREAMS};

/// The state of one region in one plane (the FTL keeps them in one dense array, indexed
/// by `region · planes + plane`, with the region's constants the hot paths need).
#[derive(Clone)]
pub struct PlaneState {
    pub region: u8,
    pub plane: PlaneId,
    pub pages_per_block: u32,
    pub gc_soft_free_blocks: u32,
    pub gc_hard_free_blocks: u32,
    /// GC target while the host is idle (≥ the soft threshold).
    pub idle_gc_free_blocks: u32,
    /// No relocation while the host is active; everything while it is idle.
    pub drain_when_idle: bool,
    pub free: FreePool,
    /// Open block per stream ([`BlockId::NONE`](crate::ids::BlockId::NONE) when none is open).
    pub open: OpenBlocks,
    /// Valid units held by the region's blocks in this plane.
    pub valid_units: u64,
    /// Host units programmed here, and units relocated out of here (monotone counters;
    /// [`crate::ftl::Ftl::counters_now`] adds them up per region).
    pub host_units: u64,
    pub relocated_units: u64,
    /// Host pages skip the plane while it holds more than this (its fair share of the
    /// logical space plus one block): no plane fills up with data that is never
    /// invalidated while others keep the spare space.
    pub valid_cap_units: u64,
    /// Blocks not retired.
    pub usable_blocks: u32,
    /// Blocks whose erase is under way (they count towards the GC target: the next victim
    /// is chosen while an erase runs, as it would be once the erase is done).
    pub erasing: u32,
    /// The plane's GC job, or [`JobId::NONE`].
    pub gc_job: JobId,
    /// GC is wanted but no block qualified as a victim: look again when units are
    /// invalidated here.
    pub starved: bool,
    /// Queued for a background step (deduplicates the wake list).
    pub woken: bool,
    /// The plane's reliability job is urgent (`reliability.rs`): its GC pressure ranks at
    /// least `Pressing(1)`, so its die gives background work every other batch.
    pub urgent_relocation: bool,
    /// Programs a page of the region may take (its cell mode's `partial_programs_per_page`).
    pub partial_programs_per_page: u32,
    /// The page a host page flushed before it was full left partly programmed, which the
    /// next host page of its stream here appends to (with `partial_programs_per_page > 1`).
    pub partial: PartialPage,
}

/// A partly programmed host page ([`PlaneState::partial`]); `block` is
/// [`BlockId::NONE`] when there is none.
#[derive(Clone, Copy, Debug)]
pub struct PartialPage {
    pub block: BlockId,
    pub page: u32,
    pub stream: Stream,
    /// Slots programmed so far, and programs so far.
    pub used: u32,
    pub programs: u32,
}

impl Default for PartialPage {
    fn default() -> Self {
        PartialPage {
            block: BlockId::NONE,
            page: 0,
            stream: Stream::HOST,
            used: 0,
            programs: 0,
        }
    }
}

impl PlaneState {
    /// Free blocks GC collects up to (the idle target while the host is idle).
    #[inline]
    pub fn gc_target_free_blocks(&self, host_idle: bool) -> u32 {
        match (host_idle, self.drain_when_idle) {
            (false, true) => 0,
            (true, true) => self.usable_blocks,
            (true, false) => self.idle_gc_free_blocks,
            (false, false) => self.gc_soft_free_blocks,
        }
    }

    /// Free blocks `stream` must leave in the pool when it opens a block. Host pages leave
    /// the GC reserve (`gc_hard_free_blocks`); GC copies may take it; so may a
    /// wear-leveling migration, but only while no GC job runs here: a migration frees no
    /// space, and a GC job that found the reserve taken had no block for its copies
    /// (swarm). A GC job started later waits for the migration instead (its fresh block
    /// holds the rest of its source).
    #[inline]
    pub fn reserve_for(&self, stream: Stream) -> u32 {
        match stream {
            Stream::WEAR if !self.gc_job.is_none() => self.gc_hard_free_blocks,
            _ if stream.uses_reserve() => 0,
            _ => self.gc_hard_free_blocks,
        }
    }

    /// Whether GC should collect another victim: free blocks, counting those being
    /// erased, below the target.
    #[inline]
    pub fn needs_gc(&self, host_idle: bool) -> bool {
        self.free.len() + self.erasing < self.gc_target_free_blocks(host_idle)
    }
}

/// A plane's open block per stream: the four plain streams inline (the hot path's), the
/// lanes' streams boxed, allocated when a lane first opens a block.
#[derive(Clone)]
pub struct OpenBlocks {
    base: [BlockId; 4],
    lanes: Option<Box<[BlockId; STREAMS - 4]>>,
}

impl Default for OpenBlocks {
    fn default() -> Self {
        OpenBlocks {
            base: [BlockId::NONE; 4],
            lanes: None,
        }
    }
}

impl OpenBlocks {
    /// The open block of `s` ([`BlockId::NONE`] when none is open).
    #[inline(always)]
    pub fn get(&self, s: Stream) -> BlockId {
        let i = s.index();
        if i < 4 {
            self.base[i]
        } else {
            self.lanes.as_ref().map_or(BlockId::NONE, |l| l[i - 4])
        }
    }

    /// Make `b` the open block of `s`.
    #[inline(always)]
    pub fn set(&mut self, s: Stream, b: BlockId) {
        let i = s.index();
        if i < 4 {
            self.base[i] = b;
        } else {
            self.lanes
                .get_or_insert_with(|| Box::new([BlockId::NONE; STREAMS - 4]))[i - 4] = b;
        }
    }

    /// Every stream with its open block (or [`BlockId::NONE`]).
    pub fn iter(&self) -> impl Iterator<Item = (Stream, BlockId)> + '_ {
        let lanes = self.lanes.as_deref().map_or(&[][..], |l| &l[..]);
        self.base
            .iter()
            .chain(lanes)
            .enumerate()
            .map(|(i, &b)| (Stream::from_index(i), b))
    }

    /// `block` is no stream's open block any more.
    pub fn forget(&mut self, block: BlockId) {
        for b in self
            .base
            .iter_mut()
            .chain(self.lanes.iter_mut().flat_map(|l| l.iter_mut()))
        {
            if *b == block {
                *b = BlockId::NONE;
            }
        }
    }
}

/// One region of the device.
#[derive(Clone)]
pub struct Region {
    pub geo: RegionGeometry,
    pub victims: VictimIndex,
    pub wear: WearLeveler,
    pub wear_shape: WearShape,
    /// A victim must hold at most this many valid units (a page's worth of garbage).
    pub max_victim_valid: u32,
    /// The device collects garbage here. Not on a zoned device: free blocks come back
    /// through zone resets only, so its planes have no GC thresholds and no reserve.
    pub device_gc: bool,
    /// Its cell mode's `partial_programs_per_page`.
    pub partial_programs_per_page: u32,
}

impl Region {
    pub fn new(g: &Geometry, r: &RegionGeometry, wear: &WearConfig, cfg: &Config) -> Region {
        let shape = IndexShape {
            planes: g.planes,
            blocks: g.blocks,
            units_per_block: r.units_per_block,
        };
        let wear_shape = WearShape {
            region: r.id,
            planes: g.planes,
            blocks_per_plane: g.blocks_per_plane,
            first_index: r.first_index,
            region_blocks_per_plane: r.blocks_per_plane,
            units_per_block: r.units_per_block,
            seed: cfg.seed,
        };
        // Wear leveling evens the data region's wear; a cache turns over by itself.
        let wear = if r.content == RegionContent::Data {
            wear.clone()
        } else {
            WearConfig::default()
        };
        Region {
            victims: VictimIndex::new(&r.gc, &shape),
            wear: WearLeveler::new(&wear, &wear_shape),
            wear_shape,
            // A region drained into another may give up a block full of valid data.
            max_victim_valid: if r.drain_when_idle {
                r.units_per_block
            } else {
                r.units_per_block - g.slots_per_page
            },
            geo: r.clone(),
            device_gc: cfg.device.zns.is_none(),
            partial_programs_per_page: cfg.device.timing.get(r.cell_mode).partial_programs_per_page,
        }
    }

    #[inline]
    pub fn id(&self) -> u8 {
        self.geo.id
    }

    #[inline]
    pub fn is_data(&self) -> bool {
        self.geo.content == RegionContent::Data
    }

    /// The region's state in `plane`, fresh (its GC thresholds 0 without device GC).
    /// On a plane where the region has no blocks (key `planes`) it has no thresholds either.
    pub fn plane_state(&self, plane: PlaneId, alloc: &AllocConfig) -> PlaneState {
        let on = self.geo.on_plane(plane.0);
        let gc = |threshold: u32| if self.device_gc && on { threshold } else { 0 };
        PlaneState {
            region: self.id(),
            plane,
            pages_per_block: self.geo.pages_per_block,
            gc_soft_free_blocks: gc(self.geo.gc_soft_free_blocks),
            gc_hard_free_blocks: gc(self.geo.gc_hard_free_blocks),
            idle_gc_free_blocks: gc(self.geo.idle_gc_free_blocks),
            drain_when_idle: self.geo.drain_when_idle,
            free: FreePool::new(alloc, &()),
            open: OpenBlocks::default(),
            valid_units: 0,
            host_units: 0,
            relocated_units: 0,
            valid_cap_units: u64::MAX,
            usable_blocks: if on { self.geo.blocks_per_plane } else { 0 },
            erasing: 0,
            gc_job: JobId::NONE,
            starved: false,
            woken: false,
            urgent_relocation: false,
            partial_programs_per_page: self.partial_programs_per_page,
            partial: PartialPage::default(),
        }
    }

    /// Blocks of the region in `plane`.
    pub fn plane_blocks(&self, plane: u32) -> std::ops::Range<u32> {
        let r = self.geo.plane_range(plane);
        let base = plane * self.wear_shape.blocks_per_plane;
        base + r.start..base + r.end
    }

    /// Units the region's blocks in `plane` can hold for data, given `usable` blocks: all
    /// but the reserve, less the garbage GC needs to find a victim (see `Derived`).
    pub fn room_units(&self, usable: u32, spp: u32) -> u64 {
        let data_blocks = usable.saturating_sub(self.geo.reserve_blocks_per_plane) as u64;
        let room = data_blocks * self.geo.units_per_block as u64;
        room.saturating_sub(data_blocks * (spp as u64 - 1) + 1)
    }
}
