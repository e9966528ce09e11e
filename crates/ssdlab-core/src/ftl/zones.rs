//! A zoned namespace (NVMe ZNS, `[device.zns]`, docs/zns.md): the zone state machine, its
//! errors, and where a zone's pages go. The logical space is `zones · zone_units`; zone `z`
//! stripes page by page over the planes of die group `z mod groups`; each zone that holds
//! data has an active-zone slot, a write lane (its own host stream, so an open block per
//! plane). There is no device GC: a reset unmaps the zone and erases its blocks.

use super::health::Health;
use super::jobs::Jobs;
use super::region::Stream;
use super::{note_cold, Ftl, Lanes, Media, NandSink};
use crate::base::MAX_LANES;
use crate::config::zoned::zone_geometry;
use crate::config::ZnsConfig;
use crate::error::Result;
use crate::flash::{BlockState, NONE};
use crate::ids::{BlockId, PlaneId};
use serde::Serialize;

/// A zone's state (NVMe ZNS 2.1, Zone State Machine).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ZoneState {
    Empty,
    ImplicitlyOpened,
    ExplicitlyOpened,
    Closed,
    Full,
    ReadOnly,
    Offline,
}

impl ZoneState {
    fn is_open(self) -> bool {
        matches!(
            self,
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened
        )
    }

    fn is_active(self) -> bool {
        self.is_open() || self == ZoneState::Closed
    }
}

/// Why a zone command failed (the NVMe status it returns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneError {
    /// Zone Invalid Write: a write not at the write pointer (or not unit-aligned).
    InvalidWrite,
    /// Zone Is Full.
    ZoneFull,
    /// Zone Boundary Error: the request crosses the zone's end (or its capacity).
    Boundary,
    /// Too Many Open Zones.
    TooManyOpen,
    /// Too Many Active Zones.
    TooManyActive,
    /// Invalid Zone State Transition.
    InvalidTransition,
    /// Invalid Field in Command (a management or append address that is not a zone start).
    InvalidField,
    /// Zone Is Read Only.
    ReadOnly,
    /// Zone Is Offline.
    Offline,
    /// Invalid Command Opcode (a trim on a zoned namespace: use a zone reset).
    InvalidCommand,
    /// Unrecovered Read Error (NVMe generic media status 0x81): a NAND read of the
    /// request no read-retry step corrected (`[device.reliability]`; any device).
    UnrecoveredRead,
}

impl ZoneError {
    pub const ALL: [ZoneError; 11] = [
        ZoneError::InvalidWrite,
        ZoneError::ZoneFull,
        ZoneError::Boundary,
        ZoneError::TooManyOpen,
        ZoneError::TooManyActive,
        ZoneError::InvalidTransition,
        ZoneError::InvalidField,
        ZoneError::ReadOnly,
        ZoneError::Offline,
        ZoneError::InvalidCommand,
        ZoneError::UnrecoveredRead,
    ];

    /// The status's name in results.json.
    pub fn name(self) -> &'static str {
        match self {
            ZoneError::InvalidWrite => "zone_invalid_write",
            ZoneError::ZoneFull => "zone_is_full",
            ZoneError::Boundary => "zone_boundary_error",
            ZoneError::TooManyOpen => "too_many_open_zones",
            ZoneError::TooManyActive => "too_many_active_zones",
            ZoneError::InvalidTransition => "invalid_zone_state_transition",
            ZoneError::InvalidField => "invalid_field",
            ZoneError::ReadOnly => "zone_is_read_only",
            ZoneError::Offline => "zone_is_offline",
            ZoneError::InvalidCommand => "invalid_command_opcode",
            ZoneError::UnrecoveredRead => "unrecovered_read_error",
        }
    }
}

/// What a zoned device counted (results.json `zns`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ZnsSummary {
    pub zones: u32,
    pub zone_bytes: u64,
    pub zone_capacity_bytes: u64,
    pub max_open_zones: u32,
    pub max_active_zones: u32,
    /// Zone resets done (each erases the zone's blocks), finishes, explicit opens, closes.
    pub resets: u64,
    pub finishes: u64,
    pub explicit_opens: u64,
    pub closes: u64,
    /// Implicitly opened zones the device closed to open another (NVMe allows it).
    pub implicit_closes: u64,
    pub appends: u64,
    pub reports: u64,
    /// Blocks the resets erased.
    pub reset_erased_blocks: u64,
    /// Units written but dropped by a reset of their zone before any page held them
    /// (still in the write buffer): they never reach NAND, so the device WAF can be
    /// below 1 by their share.
    pub dropped_units: u64,
    /// Zones offline now (their die group ran out of usable blocks).
    pub offline_zones: u32,
    /// Zones per state at the end.
    pub states: std::collections::BTreeMap<&'static str, u32>,
    /// Requests that failed, by NVMe status.
    pub errors: std::collections::BTreeMap<&'static str, u64>,
}

#[derive(Clone, Debug)]
struct Zone {
    state: ZoneState,
    /// Write pointer: units written from the zone's start.
    wp: u32,
    /// Units placed in pages (≤ `wp`).
    placed: u32,
    /// Pages placed.
    pages: u32,
    /// Write lane while the zone holds one, else [`NO_LANE`] (none, or an active zone
    /// waiting for one: [`Zones::acquire_lane`]).
    lane: u8,
    /// When it was (implicitly) opened: the oldest implicitly opened zone is closed first.
    opened_seq: u64,
    /// Blocks holding its pages.
    blocks: Vec<BlockId>,
}

/// No write lane: a zone holding none, or one waiting for one (every lane was held when it
/// opened: by active zones and by full zones whose last pages wait for placement).
pub const NO_LANE: u8 = u8::MAX;

/// The zones of a zoned device; owned by the FTL ([`Ftl::zones`]).
#[derive(Clone)]
pub struct Zones {
    pub zone_units: u32,
    pub cap_units: u32,
    max_open: u32,
    max_active: u32,
    blocks_per_plane: u32,
    /// Planes of each die group, in the order a zone's pages visit them.
    group_planes: Vec<Vec<u32>>,
    zone: Vec<Zone>,
    open: u32,
    active: u32,
    /// Lanes free to give a zone (a stack; lane 0 is never given: it is the plain host
    /// stream).
    free_lanes: Vec<u8>,
    /// Zone holding each lane (`NONE` when free).
    lane_zone: [u32; MAX_LANES],
    /// Zones waiting for a lane ([`Zones::acquire_lane`]): they get lanes in the order
    /// they opened, so while any waits a newly opened zone waits too.
    lane_waiters: u32,
    /// A reset is waiting for this block's programs to complete before its erase.
    erase_when_closed: Vec<bool>,
    seq: u64,
    sum: ZnsSummary,
}

/// What a zone write or append decoded to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneWrite {
    /// The write lane of the zone, or [`NO_LANE`]: every lane is held and the write's
    /// units wait for one ([`Zones::acquire_lane`]) before they enter the buffer (a
    /// device resource, not a host-visible error).
    pub lane: u8,
    /// First unit written (the write pointer, for an append).
    pub first: u32,
    /// The zone filled: its last partial page must go out now.
    pub filled: bool,
}

impl Zones {
    /// The zones of `cfg` on `planes` planes (`planes_per_die` each) of `dies` dies, with
    /// `blocks_per_plane` data blocks per plane and `units_per_block` units per block.
    pub fn new(
        cfg: &ZnsConfig,
        g: &crate::config::Geometry,
        blocks_per_plane: u32,
        unit_bytes: u64,
    ) -> Zones {
        let geo = zone_geometry(cfg, g, blocks_per_plane);
        let zd = geo.zone_dies;
        let groups = g.dies / zd;
        let group_planes = (0..groups)
            .map(|grp| {
                // Page k of a zone goes to die (k mod zd) of the group, plane
                // (k / zd) mod planes-per-die: dies first, so consecutive pages overlap.
                let mut v = Vec::new();
                for p in 0..g.planes_per_die {
                    for d in 0..zd {
                        v.push((grp * zd + d) * g.planes_per_die + p);
                    }
                }
                v
            })
            .collect();
        let zone = Zone {
            state: ZoneState::Empty,
            wp: 0,
            placed: 0,
            pages: 0,
            lane: NO_LANE,
            opened_seq: 0,
            blocks: Vec::new(),
        };
        Zones {
            zone_units: geo.zone_units,
            cap_units: geo.cap_units,
            max_open: cfg.max_open_zones,
            max_active: cfg.max_active_zones,
            blocks_per_plane: cfg.blocks_per_plane,
            group_planes,
            zone: vec![zone; geo.zones as usize],
            open: 0,
            active: 0,
            free_lanes: (1..MAX_LANES as u8).rev().collect(),
            lane_zone: [NONE; MAX_LANES],
            lane_waiters: 0,
            erase_when_closed: vec![false; g.blocks as usize],
            seq: 0,
            sum: ZnsSummary {
                zones: geo.zones,
                zone_bytes: geo.zone_units as u64 * unit_bytes,
                zone_capacity_bytes: geo.cap_units as u64 * unit_bytes,
                max_open_zones: cfg.max_open_zones,
                max_active_zones: cfg.max_active_zones,
                ..Default::default()
            },
        }
    }

    pub fn count(&self) -> u32 {
        self.zone.len() as u32
    }

    /// Zone holding unit `lpn`.
    #[inline]
    pub fn zone_of(&self, lpn: u32) -> u32 {
        lpn / self.zone_units
    }

    pub fn state(&self, z: u32) -> ZoneState {
        self.zone[z as usize].state
    }

    /// Write pointer of zone `z` in units from its start.
    pub fn write_pointer(&self, z: u32) -> u32 {
        self.zone[z as usize].wp
    }

    /// Lane of zone `z`, if it holds one.
    pub fn lane(&self, z: u32) -> Option<u8> {
        let l = self.zone[z as usize].lane;
        (l != NO_LANE).then_some(l)
    }

    /// Count a failed request.
    pub fn count_error(&mut self, e: ZoneError) {
        *self.sum.errors.entry(e.name()).or_default() += 1;
    }

    /// Count a report.
    pub fn count_report(&mut self) {
        self.sum.reports += 1;
    }

    /// The counters, with the zones per state now.
    pub fn summary(&self) -> ZnsSummary {
        let mut s = self.sum.clone();
        s.states.clear();
        for z in &self.zone {
            *s.states.entry(state_name(z.state)).or_default() += 1;
        }
        s.offline_zones = s.states.get("offline").copied().unwrap_or(0);
        s
    }

    /// The zone a request at `first` units for `count` units touches, or the error: a
    /// request must stay inside one zone.
    fn zone_of_span(&self, first: u32, count: u32) -> std::result::Result<u32, ZoneError> {
        let z = self.zone_of(first);
        if count == 0 || self.zone_of(first + count - 1) != z {
            return Err(ZoneError::Boundary);
        }
        Ok(z)
    }

    /// Make zone `z` (empty or closed) implicitly or explicitly open: close an implicitly
    /// opened zone when the open limit is reached (NVMe lets the controller do so).
    fn open_zone(&mut self, z: u32, to: ZoneState) -> std::result::Result<(), ZoneError> {
        let st = self.zone[z as usize].state;
        if st.is_open() {
            if to == ZoneState::ExplicitlyOpened {
                self.zone[z as usize].state = to;
            }
            return Ok(());
        }
        if st == ZoneState::Empty && self.active >= self.max_active {
            return Err(ZoneError::TooManyActive);
        }
        if self.open >= self.max_open {
            let victim = (0..self.zone.len())
                .filter(|&i| self.zone[i].state == ZoneState::ImplicitlyOpened)
                .min_by_key(|&i| self.zone[i].opened_seq);
            match victim {
                Some(v) => {
                    self.zone[v].state = ZoneState::Closed;
                    self.open -= 1;
                    self.sum.implicit_closes += 1;
                }
                None => return Err(ZoneError::TooManyOpen),
            }
        }
        if st == ZoneState::Empty {
            self.active += 1;
            // Lanes go to zones in the order they opened: none while another zone waits.
            // Every lane held (active zones, and full zones whose last pages wait for
            // placement) is the device's shortage, not the host's error: the zone's
            // writes wait for a lane before entering the buffer.
            if self.lane_waiters > 0 || self.take_lane(z).is_none() {
                self.lane_waiters += 1;
            }
        }
        self.open += 1;
        self.seq += 1;
        let zone = &mut self.zone[z as usize];
        zone.state = to;
        zone.opened_seq = self.seq;
        Ok(())
    }

    /// Give zone `z` a free lane, if there is one.
    fn take_lane(&mut self, z: u32) -> Option<u8> {
        let lane = self.free_lanes.pop()?;
        self.zone[z as usize].lane = lane;
        self.lane_zone[lane as usize] = z;
        Some(lane)
    }

    /// The lane of zone `z`, taking a free one if the zone waits for one (the oldest
    /// waiting zone's writes come first: the drivers ask in submission order); `None`
    /// while every lane is held (one frees when a full zone's last page is placed).
    pub fn acquire_lane(&mut self, z: u32) -> Option<u8> {
        let l = self.zone[z as usize].lane;
        if l != NO_LANE {
            return Some(l);
        }
        let lane = self.take_lane(z)?;
        self.lane_waiters -= 1;
        Some(lane)
    }

    /// Whether zone `z` waits for a lane: active or holding units not placed, without one.
    fn waits_for_lane(&self, z: u32) -> bool {
        let zone = &self.zone[z as usize];
        zone.lane == NO_LANE && (zone.state.is_active() || zone.placed < zone.wp)
    }

    /// Zone `z` leaves the open/closed states for `to` (full, empty, offline).
    fn deactivate(&mut self, z: u32, to: ZoneState) {
        let st = self.zone[z as usize].state;
        let waited = self.waits_for_lane(z);
        if st.is_open() {
            self.open -= 1;
        }
        if st.is_active() {
            self.active -= 1;
        }
        self.zone[z as usize].state = to;
        self.stop_waiting_if_done(z, waited);
    }

    /// Zone `z` waited for a lane (`waited`); if it no longer needs one (nothing left to
    /// place, not active), it leaves the waiters.
    fn stop_waiting_if_done(&mut self, z: u32, waited: bool) {
        if waited && !self.waits_for_lane(z) {
            self.lane_waiters -= 1;
        }
    }

    /// A write (or, with `append`, a zone append whose `first` is the zone's start) of
    /// `count` units: where it lands, or why it fails.
    pub fn write(
        &mut self,
        first: u32,
        count: u32,
        aligned: bool,
        append: bool,
    ) -> std::result::Result<ZoneWrite, ZoneError> {
        let z = self.zone_of_span(first, count)?;
        let start = z * self.zone_units;
        if append && first != start {
            return Err(ZoneError::InvalidField);
        }
        let zone = &self.zone[z as usize];
        match zone.state {
            ZoneState::Full => return Err(ZoneError::ZoneFull),
            ZoneState::ReadOnly => return Err(ZoneError::ReadOnly),
            ZoneState::Offline => return Err(ZoneError::Offline),
            _ => {}
        }
        let at = start + zone.wp;
        if !aligned || (!append && first != at) {
            return Err(ZoneError::InvalidWrite);
        }
        if zone.wp + count > self.cap_units {
            return Err(ZoneError::Boundary);
        }
        self.open_zone(z, ZoneState::ImplicitlyOpened)?;
        let zone = &mut self.zone[z as usize];
        zone.wp += count;
        let lane = zone.lane;
        let filled = zone.wp == self.cap_units;
        if filled {
            self.deactivate(z, ZoneState::Full);
        }
        if append {
            self.sum.appends += 1;
        }
        Ok(ZoneWrite {
            lane,
            first: at,
            filled,
        })
    }

    /// A read of `count` units from `first`: it must stay inside one zone (reads across
    /// zone boundaries are not supported); an offline zone cannot be read.
    pub fn read(&self, first: u32, count: u32) -> std::result::Result<(), ZoneError> {
        if count == 0 {
            return Ok(());
        }
        let z = self.zone_of_span(first, count)?;
        if self.zone[z as usize].state == ZoneState::Offline {
            return Err(ZoneError::Offline);
        }
        Ok(())
    }

    /// Zone of a management command addressed at unit `lpn` (it must be a zone start).
    pub fn managed_zone(&self, lpn: u32, aligned: bool) -> std::result::Result<u32, ZoneError> {
        let z = self.zone_of(lpn);
        if !aligned || lpn != z * self.zone_units || z >= self.count() {
            return Err(ZoneError::InvalidField);
        }
        Ok(z)
    }

    /// Explicit open.
    pub fn open(&mut self, z: u32) -> std::result::Result<(), ZoneError> {
        match self.zone[z as usize].state {
            ZoneState::Full => Err(ZoneError::InvalidTransition),
            ZoneState::ReadOnly => Err(ZoneError::ReadOnly),
            ZoneState::Offline => Err(ZoneError::Offline),
            _ => {
                self.open_zone(z, ZoneState::ExplicitlyOpened)?;
                self.sum.explicit_opens += 1;
                Ok(())
            }
        }
    }

    /// Close: an open zone becomes closed (empty when nothing was written).
    pub fn close(&mut self, z: u32) -> std::result::Result<(), ZoneError> {
        match self.zone[z as usize].state {
            ZoneState::Closed => Ok(()),
            s if s.is_open() => {
                self.sum.closes += 1;
                if self.zone[z as usize].wp == 0 {
                    self.deactivate(z, ZoneState::Empty);
                    self.release_lane_if_idle(z);
                } else {
                    self.open -= 1;
                    self.zone[z as usize].state = ZoneState::Closed;
                }
                Ok(())
            }
            ZoneState::ReadOnly => Err(ZoneError::ReadOnly),
            ZoneState::Offline => Err(ZoneError::Offline),
            _ => Err(ZoneError::InvalidTransition),
        }
    }

    /// Finish: the zone becomes full where its write pointer is. Returns its lane when its
    /// last partial page must go out.
    pub fn finish(&mut self, z: u32) -> std::result::Result<Option<u8>, ZoneError> {
        match self.zone[z as usize].state {
            ZoneState::Full => Ok(None),
            ZoneState::ReadOnly => Err(ZoneError::ReadOnly),
            ZoneState::Offline => Err(ZoneError::Offline),
            _ => {
                self.sum.finishes += 1;
                if !self.zone[z as usize].state.is_active() {
                    // Empty: full at once, no lane, nothing written.
                    self.zone[z as usize].state = ZoneState::Full;
                    return Ok(None);
                }
                self.deactivate(z, ZoneState::Full);
                // Its lane goes back once its last units are placed
                // ([`Ftl::release_zone_lane`]).
                Ok(self.lane(z))
            }
        }
    }

    /// Give zone `z`'s lane back when every unit it holds is placed and it is no longer
    /// active.
    fn release_lane_if_idle(&mut self, z: u32) -> bool {
        let zone = &mut self.zone[z as usize];
        if zone.lane == NO_LANE || zone.state.is_active() || zone.placed < zone.wp {
            return false;
        }
        self.lane_zone[zone.lane as usize] = NONE;
        self.free_lanes.push(zone.lane);
        zone.lane = NO_LANE;
        true
    }

    /// Whether zone `z` may be reset.
    pub fn check_reset(&self, z: u32) -> std::result::Result<(), ZoneError> {
        match self.zone[z as usize].state {
            ZoneState::ReadOnly => Err(ZoneError::ReadOnly),
            ZoneState::Offline => Err(ZoneError::Offline),
            _ => Ok(()),
        }
    }

    /// Whether zone `z` is full (written to its capacity, or finished).
    pub fn is_full(&self, z: u32) -> bool {
        self.zone[z as usize].state == ZoneState::Full
    }

    /// Whether unit `lpn` of a write accepted in lane `lane` still belongs to its zone's
    /// written space (a reset in between drops the rest of the write).
    #[inline]
    pub fn still_written(&self, lpn: u32, lane: u8) -> bool {
        let z = self.zone_of(lpn);
        let zone = &self.zone[z as usize];
        zone.lane == lane && lpn - z * self.zone_units < zone.wp
    }

    /// Units of zone `z` written so far (its start and write pointer).
    pub fn written(&self, z: u32) -> std::ops::Range<u32> {
        let s = z * self.zone_units;
        s..s + self.zone[z as usize].wp
    }

    /// Whether a write lane is free (a new zone can be opened).
    pub fn lanes_free(&self) -> usize {
        self.free_lanes.len()
    }
}

fn state_name(s: ZoneState) -> &'static str {
    match s {
        ZoneState::Empty => "empty",
        ZoneState::ImplicitlyOpened => "implicitly_opened",
        ZoneState::ExplicitlyOpened => "explicitly_opened",
        ZoneState::Closed => "closed",
        ZoneState::Full => "full",
        ZoneState::ReadOnly => "read_only",
        ZoneState::Offline => "offline",
    }
}

/// A zoned device's zones with the parts a zone operation changes, borrowed together
/// ([`Ftl::zoned`]): the media (plane states, blocks), the jobs (a reset's erases), the
/// device's health (no zone left) and the control-plane error record.
pub(super) struct ZonedView<'a> {
    pub(super) zones: &'a mut Zones,
    pub(super) media: &'a mut Media,
    pub(super) jobs: &'a mut Jobs,
    pub(super) health: &'a mut Health,
    pub(super) internal: &'a mut Option<String>,
}

impl ZonedView<'_> {
    /// Where the next page of the zone holding `first` (its first unit) goes: (zone,
    /// plane, lane).
    fn next_page(&self, first: u32) -> Result<(u32, u32, u8)> {
        let zs = &*self.zones;
        let z = zs.zone_of(first);
        let zone = &zs.zone[z as usize];
        let group = &zs.group_planes[z as usize % zs.group_planes.len()];
        let plane = group[zone.pages as usize % group.len()];
        if zone.lane == NO_LANE {
            return Err(crate::error::SimError::Internal {
                what: format!("a page of zone {z} without a write lane"),
            });
        }
        Ok((z, plane, zone.lane))
    }

    /// A page of `units` units of zone `z` went to `block` (the stream's open block was
    /// `open_before`, [`BlockId::NONE`] when the page opened `block`).
    fn page_placed(&mut self, z: u32, block: BlockId, open_before: BlockId, units: u32) {
        let zone = &mut self.zones.zone[z as usize];
        if open_before.is_none() {
            // The page opened a block (full again already when it has one page).
            zone.blocks.push(block);
        } else if !zone.blocks.contains(&open_before) {
            let what = format!("zone {z}'s page went to block {open_before} of another zone");
            note_cold(self.internal, what);
        }
        zone.pages += 1;
        zone.placed += units;
        self.release_lane(z);
    }

    /// Give zone `z`'s lane back if it is done with it (not active, every unit placed),
    /// sealing its open blocks.
    fn release_lane(&mut self, z: u32) {
        let lane = self.zones.zone[z as usize].lane;
        if self.zones.release_lane_if_idle(z) {
            self.seal_lane(lane, z);
        }
    }

    /// Zone `z` gave up lane `lane`: its open blocks on the zone's planes close as they
    /// are (sealed: their unwritten pages stay unused until the erase).
    fn seal_lane(&mut self, lane: u8, z: u32) {
        let g = z as usize % self.zones.group_planes.len();
        let stream = Stream::host(lane);
        for i in 0..self.zones.group_planes[g].len() {
            let plane = PlaneId(self.zones.group_planes[g][i]);
            let rp = self.media.rp(self.media.data_region, plane);
            let b = self.media.ps[rp].open.get(stream);
            if b.is_none() {
                continue;
            }
            self.media.ps[rp].open.set(stream, BlockId::NONE);
            self.media.blocks.sealed[b.idx()] = true;
            if self.media.close_if_full(self.internal, b, true) {
                self.block_closed(b);
            }
        }
    }

    /// A reset of zone `z` begins: counted, the zone empty. Returns the units to unmap.
    fn begin_reset(&mut self, z: u32) -> std::ops::Range<u32> {
        let zs = &mut *self.zones;
        zs.sum.resets += 1;
        let written = zs.written(z);
        zs.deactivate(z, ZoneState::Empty);
        written
    }

    /// A reset of zone `z` after its units were unmapped: its lane given back, and its
    /// blocks erased (each once its programs completed).
    fn finish_reset(&mut self, z: u32) {
        let zs = &mut *self.zones;
        let waited = zs.waits_for_lane(z);
        let zone = &mut zs.zone[z as usize];
        // Every unit counts as placed now: units still buffered were dropped.
        zs.sum.dropped_units += (zone.wp - zone.placed) as u64;
        zone.placed = zone.wp;
        zs.stop_waiting_if_done(z, waited);
        self.release_lane(z);
        let zs = &mut *self.zones;
        let zone = &mut zs.zone[z as usize];
        zone.wp = 0;
        zone.placed = 0;
        zone.pages = 0;
        let blocks = std::mem::take(&mut zone.blocks);
        zs.sum.reset_erased_blocks += blocks.len() as u64;
        for b in blocks {
            if self.media.blocks.state[b.idx()] == BlockState::Full {
                self.erase_block(b);
            } else {
                // Programs still in flight: erased when the last completes.
                self.zones.erase_when_closed[b.idx()] = true;
            }
        }
        self.check_blocks(z);
    }

    /// A zone's block closed: erase it now if its zone was reset meanwhile.
    pub(super) fn block_closed(&mut self, block: BlockId) {
        if std::mem::take(&mut self.zones.erase_when_closed[block.idx()]) {
            self.erase_block(block);
        }
    }

    /// Start the erase of `block` (full, no valid unit) as a job of its own.
    fn erase_block(&mut self, block: BlockId) {
        let j = self
            .jobs
            .start_reset(self.media, self.internal, block, self.media.data_region);
        self.jobs.wake_job(j);
    }

    /// Live (not offline) zones of die group `g`.
    fn live_zones(&self, g: usize) -> u32 {
        let zs = &*self.zones;
        let groups = zs.group_planes.len();
        (0..zs.zone.len())
            .filter(|&i| i % groups == g && zs.zone[i].state != ZoneState::Offline)
            .count() as u32
    }

    /// After a reset: zone `z` goes offline when its die group's planes no longer have the
    /// blocks every zone of the group needs (wear-out retired too many).
    fn check_blocks(&mut self, z: u32) {
        let g = z as usize % self.zones.group_planes.len();
        let need = self.live_zones(g) * self.zones.blocks_per_plane;
        let media = &*self.media;
        let short = self.zones.group_planes[g]
            .iter()
            .any(|&p| media.ps[media.rp(media.data_region, PlaneId(p))].usable_blocks < need);
        if short {
            self.zones.zone[z as usize].state = ZoneState::Offline;
            self.fail_if_no_zone_left();
        }
    }

    /// A block of `plane` retired: while the plane's die group cannot give each of its live
    /// zones its blocks, an empty zone of the group goes offline (a zone holding data goes
    /// at its next reset instead); the device fails when no zone is left.
    pub(super) fn block_retired(&mut self, plane: u32) {
        let groups = self.zones.group_planes.len();
        let Some(g) = self
            .zones
            .group_planes
            .iter()
            .position(|p| p.contains(&plane))
        else {
            return;
        };
        loop {
            let usable = self
                .media
                .plane_state(self.media.data_region, PlaneId(plane))
                .usable_blocks;
            if usable >= self.live_zones(g) * self.zones.blocks_per_plane {
                return;
            }
            let zs = &mut *self.zones;
            let empty = (0..zs.zone.len())
                .rev()
                .find(|&i| i % groups == g && zs.zone[i].state == ZoneState::Empty);
            let Some(z) = empty else { return };
            zs.zone[z].state = ZoneState::Offline;
            self.fail_if_no_zone_left();
        }
    }

    /// The device fails when every zone is offline.
    fn fail_if_no_zone_left(&mut self) {
        if self
            .zones
            .zone
            .iter()
            .all(|z| z.state == ZoneState::Offline)
        {
            self.health
                .fail("every zone is offline: the device's blocks are worn out".into());
        }
    }
}

/// A zone operation on a device without zones (the host path decodes zone commands only
/// on a zoned device).
#[cold]
pub fn not_zoned() -> crate::error::SimError {
    crate::error::SimError::Internal {
        what: "a zone operation on a device without zones".into(),
    }
}

impl Ftl {
    /// The zones, on a zoned device.
    pub fn zones(&self) -> Option<&Zones> {
        self.lanes.zones()
    }

    pub fn zones_mut(&mut self) -> Option<&mut Zones> {
        self.lanes.zones_mut()
    }

    /// The zoned view of this device: its zones with the parts zone operations change
    /// (`None` on a device without zones).
    pub(super) fn zoned(&mut self) -> Option<ZonedView<'_>> {
        let Ftl {
            lanes,
            media,
            jobs,
            health,
            internal,
            ..
        } = self;
        match lanes {
            Lanes::Zoned(zones) => Some(ZonedView {
                zones,
                media,
                jobs,
                health,
                internal,
            }),
            _ => None,
        }
    }

    /// Program one page of a zone (its units `lpns`, in write-pointer order, all of one
    /// zone): on the zone's next plane, in its lane's open block there. `None` when that
    /// plane cannot take it now (`accept` refused it, or no free block: a reset's erase
    /// frees one).
    pub(super) fn write_zone_page<S: NandSink, A: Fn(u32) -> bool>(
        &mut self,
        lpns: &[u32],
        versions: &[crate::base::Version],
        token: u32,
        sink: &mut S,
        accept: A,
    ) -> Result<Option<u32>> {
        let (z, plane, lane) = self.zoned().ok_or_else(not_zoned)?.next_page(lpns[0])?;
        if !accept(plane) {
            return Ok(None);
        }
        let r = self.media.data_region;
        let stream = Stream::host(lane);
        let at = (r, PlaneId(plane), stream);
        let open_before = self.media.plane_state(r, at.1).open.get(stream);
        let placed = self.place_host_page_general(at, lpns, versions, token, sink)?;
        let Some(block) = placed else {
            return Ok(None);
        };
        let units = lpns.len() as u32;
        self.zoned()
            .ok_or_else(not_zoned)?
            .page_placed(z, block, open_before, units);
        self.run_background(sink)?;
        Ok(Some(plane))
    }

    /// Give zone `z`'s lane back if it is done with it (not active, every unit placed),
    /// sealing its open blocks (nothing on a device without zones).
    pub fn release_zone_lane(&mut self, z: u32) {
        if let Some(mut zv) = self.zoned() {
            zv.release_lane(z);
        }
    }

    /// Reset zone `z`: its units are unmapped (the caller dropped them from its buffer),
    /// its lane given back, and its blocks erased (each once its programs completed).
    /// (The caller checked it with [`Zones::check_reset`].)
    pub fn reset_zone<S: NandSink>(&mut self, z: u32, sink: &mut S) -> Result<()> {
        let written = self.zoned().ok_or_else(not_zoned)?.begin_reset(z);
        for lpn in written {
            self.trim(lpn, sink)?;
        }
        self.zoned().ok_or_else(not_zoned)?.finish_reset(z);
        self.run_background(sink)
    }

    /// A zone's page found no free block on its plane and none will come (the functional
    /// mode cannot wait for a reset): the device has failed.
    pub fn zone_out_of_blocks(&mut self) {
        self.health.fail(
            "a zone found no free block: its die group's blocks are worn out or held by other zones"
                .into(),
        );
    }
}
