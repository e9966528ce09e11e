//! Host-side log-structured layer (`kind = "log-structured"`): turns a conventional
//! workload (random writes anywhere in a logical space) into zone writes for a zoned
//! device, with its own garbage collection, so the same workload runs on a conventional
//! device and on a zoned one (docs/zns.md).
//!
//! The model:
//!
//! * The layer's user capacity is `floor(zones · zone capacity / (1 + spare_ratio))`,
//!   rounded down to the mapping unit; the inner workload is built on a conventional
//!   device of that size and its requests are translated unit by unit (`unit_bytes`).
//! * A host L2P maps each logical unit to a physical unit (a zone and an offset in it).
//!   A write unmaps the units it overwrites (their zone's valid count drops) and appends
//!   them at the write pointer of an open zone, emitted as [`HostOp::Write`] requests at
//!   that write pointer, one per contiguous run in one zone. A sub-unit write writes its
//!   whole units (the host's read-modify-write is not modelled; counters count units).
//! * Lifetime separation: each placement identifier of the inner workload's writes has
//!   its own open zone (`separate_by_placement`; the host knows which of its data is
//!   hot), and GC relocations have theirs (data that survived a GC is colder), so at most
//!   `placement ids + 1` zones are written at once.
//! * Reads map to physical runs, one [`HostOp::Read`] per contiguous run (in the order of
//!   the logical units), byte-exact.
//!   Units never written (or trimmed) need no request: a read of nothing but such units
//!   emits nothing and the layer takes the next inner request (a file system returns
//!   zeros without I/O).
//! * Trims only unmap (the units they cover whole): the device hears of it when the zone
//!   is reset. Flushes pass through.
//! * GC is greedy over full zones (fewest valid units, the lowest zone on a tie). When a
//!   user stream needs a new zone and the free (empty) zones are `gc_free_zones` or fewer,
//!   the layer reclaims zones until there are more: it reads the victim's valid units
//!   (one read per contiguous run), writes them at the GC zone's write pointer, then
//!   resets the victim ([`HostOp::ZoneReset`], offset = the zone's first byte, size 0).
//!   The GC requests are issued before the rest of the user write that needed the zone,
//!   with its arrival time.
//!
//! * Each request carries its origin in its tag ([`ORIGINS`]): [`TAG_USER`] for the
//!   inner workload's reads, writes and flushes, [`TAG_RELOCATION`] for GC's reads,
//!   writes and zone resets; a timed run reports the latencies of each apart
//!   (results.json `latency_ns.by_origin`), so the user's latency is not the device's.
//!
//! What it simplifies: requests are pulled one at a time and the layer cannot wait for
//! a completion, so a relocation's write is issued right after its read and, at a queue
//! depth above 1, may be served before it: data dependence is not modelled, only the
//! I/O volume and its order. Zones are opened implicitly by their first write and become
//! full at their capacity (no explicit open, close or finish).

use crate::stats::WorkloadStats;
use crate::{
    Flow, HostOp, HostRequest, RequestSource, Workload, WorkloadConfig, WorkloadContext,
    WorkloadError, ZoneGeometry,
};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `[workload] kind = "log-structured"`: a host log-structured layer over another workload.
///
/// ```toml
/// [workload]
/// kind = "log-structured"
/// spare_ratio = 0.28
/// [workload.inner]
/// kind = "synthetic"
/// read_percent = 0
/// ```
///
/// One flow only: the layer writes each zone strictly at its write pointer, in the order
/// it emits the requests. Requests of two submission queues reach the device in no fixed
/// order, so two flows sharing the layer's zones (or one flow resetting a zone that
/// another then rewrites) would break that order; an inner workload with more flows is
/// refused. Raise the inner flow's queue depth for concurrency instead.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LogStructuredConfig {
    /// Host over-provisioning: zone capacity kept beyond the user data, as a ratio of the
    /// user capacity (user capacity = zones · zone capacity / (1 + spare_ratio)), > 0.
    pub spare_ratio: f64,
    /// GC runs when a user write needs a new zone and the empty zones are this many or
    /// fewer; it reclaims zones until there are more. At least 1 (GC's own reserve).
    pub gc_free_zones: u32,
    /// Each placement identifier of the inner workload's writes gets its own open zone
    /// (false: all user writes share one). GC relocations always have their own zone.
    pub separate_by_placement: bool,
    /// Placement identifiers the inner workload may use (0 .. this); 0 = 2 for a synthetic
    /// inner workload with `placement_by_temperature`, 1 otherwise. With
    /// `separate_by_placement` each is a zone written at once.
    pub placement_ids: u16,
    /// Largest read or write request of a relocation, in bytes (a multiple of the mapping
    /// unit is used, rounded down); 0 = one request per contiguous run.
    pub gc_request_bytes: u64,
    /// The workload whose requests the layer translates (one flow; not log-structured).
    pub inner: Box<WorkloadConfig>,
}

impl Default for LogStructuredConfig {
    fn default() -> Self {
        LogStructuredConfig {
            spare_ratio: 0.07,
            gc_free_zones: 2,
            separate_by_placement: true,
            placement_ids: 0,
            gc_request_bytes: 128 * 1024,
            inner: Box::default(),
        }
    }
}

fn bad(key: &str, reason: impl Into<String>) -> WorkloadError {
    WorkloadError::config(key, reason)
}

/// Most inner requests in a row that may become no device request (reads of units never
/// written, trims) before the layer gives up: an inner workload that never writes would
/// otherwise spin without end.
pub const MAX_SILENT_REQUESTS: u64 = 1 << 20;

/// The layer's user capacity in mapping units: `floor(zones · zone capacity /
/// (1 + spare_ratio))` rounded down to the unit.
pub fn user_units(geometry: &ZoneGeometry, unit_bytes: u64, spare_ratio: f64) -> u64 {
    let raw = geometry.zones as f64 * geometry.zone_capacity_bytes as f64;
    ((raw / (1.0 + spare_ratio)).floor() as u64) / unit_bytes
}

/// Everything the layer needs, checked by [`HostLayer::new`].
#[derive(Clone, Copy, Debug)]
pub struct LayerParams {
    pub unit_bytes: u64,
    pub geometry: ZoneGeometry,
    /// User capacity in mapping units.
    pub user_units: u64,
    /// Placement identifiers the inner workload may use.
    pub placement_ids: u16,
    pub separate_by_placement: bool,
    pub gc_free_zones: u32,
    /// 0 = no limit.
    pub gc_request_bytes: u64,
}

impl LayerParams {
    /// Zones written at once: one per user stream and one for GC.
    pub fn open_zones(&self) -> u32 {
        self.user_streams() as u32 + 1
    }

    fn user_streams(&self) -> u16 {
        if self.separate_by_placement {
            self.placement_ids.max(1)
        } else {
            1
        }
    }

    /// Check the parameters against the device (no allocation).
    pub fn check(&self) -> Result<(), WorkloadError> {
        let u = self.unit_bytes;
        let g = &self.geometry;
        if u == 0 {
            return Err(bad("kind", "the mapping unit is 0 bytes"));
        }
        if !g.zone_bytes.is_multiple_of(u)
            || !g.zone_capacity_bytes.is_multiple_of(u)
            || g.zone_capacity_bytes == 0
        {
            return Err(bad(
                "kind",
                format!(
                    "the zone size ({} bytes) and capacity ({} bytes) must be non-zero multiples of the mapping unit ({u} bytes)",
                    g.zone_bytes, g.zone_capacity_bytes
                ),
            ));
        }
        let cap = g.zone_capacity_bytes / u;
        if g.zones as u64 * cap >= u32::MAX as u64 {
            return Err(bad(
                "kind",
                format!(
                    "{} zones of {cap} units are more units than the layer maps (2^32 - 1)",
                    g.zones
                ),
            ));
        }
        if self.placement_ids == 0 {
            return Err(bad("placement_ids", "must be at least 1"));
        }
        if self.gc_free_zones == 0 {
            return Err(bad(
                "gc_free_zones",
                "must be at least 1 (GC needs a free zone to relocate into)",
            ));
        }
        if self.gc_request_bytes != 0 && self.gc_request_bytes < u {
            return Err(bad(
                "gc_request_bytes",
                format!(
                    "{} is less than the mapping unit ({u} bytes); 0 = no limit",
                    self.gc_request_bytes
                ),
            ));
        }
        let open = self.open_zones();
        let limit = g.max_open_zones.min(g.max_active_zones);
        if open > limit {
            return Err(bad(
                if self.separate_by_placement {
                    "placement_ids"
                } else {
                    "kind"
                },
                format!(
                    "the layer writes {open} zones at once ({} user zone(s){}, one for GC) but the device keeps at most {limit} open ([device.zns] max_open_zones / max_active_zones)",
                    open - 1,
                    if self.separate_by_placement {
                        ", one per placement id"
                    } else {
                        ""
                    }
                ),
            ));
        }
        // GC finds a victim with invalid data as long as the full zones hold more than the
        // user data: with at most `gc_free_zones` empty and `open` zones being written,
        // that needs this many zones (see `HostLayer::gc`).
        let data_zones = self.user_units.div_ceil(cap);
        let needed = data_zones + open as u64 + self.gc_free_zones as u64 + 1;
        if self.user_units == 0 || needed > g.zones as u64 {
            return Err(bad(
                "spare_ratio",
                format!(
                    "the user data ({} units) fills {data_zones} of the device's {} zones ({cap} units each); GC needs {} more: {open} written at once, gc_free_zones = {} and one so a full zone always holds invalid data. Raise spare_ratio, lower gc_free_zones or placement_ids, or use more zones",
                    self.user_units,
                    g.zones,
                    open as u64 + self.gc_free_zones as u64 + 1,
                    self.gc_free_zones,
                ),
            ));
        }
        Ok(())
    }
}

/// Unmapped (logical or physical) unit.
const NONE: u32 = u32::MAX;

/// The origins of the layer's requests, by tag ([`HostRequest::tag`]): the user's (the
/// inner workload's reads, writes, flushes) and GC's relocations (reads, writes, resets).
pub const ORIGINS: [&str; 2] = ["user", "relocation"];
/// Tag of a request the inner workload asked for.
pub const TAG_USER: u32 = 0;
/// Tag of a request of the layer's GC.
pub const TAG_RELOCATION: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ZoneState {
    Empty,
    Open,
    Full,
}

/// A run of consecutive units in one zone: (zone, first unit in the zone, units).
type Run = (u32, u32, u32);

/// The layer's mapping, zones and GC (no I/O of its own: it appends requests to a queue).
pub struct HostLayer {
    unit_bytes: u64,
    zone_bytes: u64,
    /// Zone capacity in units.
    cap: u32,
    user_units: u64,
    /// Logical unit → physical unit (`zone · cap + offset`), or [`NONE`].
    l2p: Vec<u32>,
    /// Physical unit → logical unit it holds valid data of, or [`NONE`].
    p2l: Vec<u32>,
    valid: Vec<u32>,
    /// Write pointer of each zone, in units from its start.
    wp: Vec<u32>,
    state: Vec<ZoneState>,
    /// Empty zones, in the order they became empty (the first fill takes 0, 1, 2…).
    free: VecDeque<u32>,
    /// Zone each stream writes (user streams by placement id, then GC).
    open: Vec<Option<u32>>,
    separate: bool,
    user_streams: u16,
    gc_free_zones: u32,
    /// Most units in one relocation request.
    gc_run_units: u32,
    stats: WorkloadStats,
    /// Valid (offset, logical unit) pairs of the victim being relocated (reused).
    scratch: Vec<(u32, u32)>,
}

impl HostLayer {
    /// An empty layer (every zone empty, nothing mapped); `stats` receives the counters.
    pub fn new(p: &LayerParams, stats: WorkloadStats) -> Result<HostLayer, WorkloadError> {
        p.check()?;
        let cap = (p.geometry.zone_capacity_bytes / p.unit_bytes) as u32;
        let zones = p.geometry.zones;
        let streams = p.user_streams();
        let gc_run_units = if p.gc_request_bytes == 0 {
            u32::MAX
        } else {
            (p.gc_request_bytes / p.unit_bytes).min(u32::MAX as u64) as u32
        };
        Ok(HostLayer {
            unit_bytes: p.unit_bytes,
            zone_bytes: p.geometry.zone_bytes,
            cap,
            user_units: p.user_units,
            l2p: vec![NONE; p.user_units as usize],
            p2l: vec![NONE; zones as usize * cap as usize],
            valid: vec![0; zones as usize],
            wp: vec![0; zones as usize],
            state: vec![ZoneState::Empty; zones as usize],
            free: (0..zones).collect(),
            open: vec![None; streams as usize + 1],
            separate: p.separate_by_placement,
            user_streams: streams,
            gc_free_zones: p.gc_free_zones,
            gc_run_units,
            stats,
            scratch: Vec::new(),
        })
    }

    /// User capacity in bytes.
    pub fn user_bytes(&self) -> u64 {
        self.user_units * self.unit_bytes
    }

    /// Append the device requests `r` becomes to `out`.
    pub fn translate(
        &mut self,
        r: &HostRequest,
        out: &mut VecDeque<HostRequest>,
    ) -> Result<(), WorkloadError> {
        let r = &HostRequest {
            tag: TAG_USER,
            ..*r
        };
        if r.op == HostOp::Flush {
            out.push_back(HostRequest {
                placement_id: 0,
                ..*r
            });
            return Ok(());
        }
        if r.op.is_zone_command() {
            return Err(bad(
                "inner",
                format!(
                    "a {} request: the inner workload addresses a conventional device (the layer owns the zones)",
                    r.op.name()
                ),
            ));
        }
        let end = r.offset_bytes.checked_add(r.size_bytes);
        if end.is_none_or(|e| e > self.user_bytes()) {
            return Err(bad(
                "inner",
                format!(
                    "a {} of {} bytes at byte {} goes beyond the layer's user capacity ({} bytes)",
                    r.op.name(),
                    r.size_bytes,
                    r.offset_bytes,
                    self.user_bytes()
                ),
            ));
        }
        match r.op {
            HostOp::Read => {
                let unmapped = self.read(r, out);
                self.stats.add_host_user_read(r.size_bytes, unmapped);
            }
            HostOp::Write => self.write(r, out)?,
            HostOp::Trim => self.trim(r),
            _ => unreachable!("flushes and zone commands are handled above"),
        }
        Ok(())
    }

    fn zone_of(&self, pu: u32) -> u32 {
        pu / self.cap
    }

    /// First byte of physical unit `pu`.
    fn pu_bytes(&self, pu: u32) -> u64 {
        let z = pu / self.cap;
        z as u64 * self.zone_bytes + (pu % self.cap) as u64 * self.unit_bytes
    }

    fn emit(&self, op: HostOp, run: Run, r: &HostRequest, out: &mut VecDeque<HostRequest>) {
        let (z, off, len) = run;
        out.push_back(HostRequest {
            arrival_ns: r.arrival_ns,
            op,
            offset_bytes: z as u64 * self.zone_bytes + off as u64 * self.unit_bytes,
            size_bytes: len as u64 * self.unit_bytes,
            journal: if op == HostOp::Write { r.journal } else { None },
            tag: r.tag,
            placement_id: 0,
        });
    }

    /// Add unit `off` of zone `z` to `run`, or emit `run` and start a new one.
    fn extend(
        &self,
        run: &mut Option<Run>,
        (z, off): (u32, u32),
        max_units: u32,
        op: HostOp,
        r: &HostRequest,
        out: &mut VecDeque<HostRequest>,
    ) {
        match run {
            Some((rz, ro, rl)) if *rz == z && *ro + *rl == off && *rl < max_units => *rl += 1,
            _ => {
                if let Some(done) = run.replace((z, off, 1)) {
                    self.emit(op, done, r, out);
                }
            }
        }
    }

    /// Forget where logical unit `l` is (its old copy becomes invalid).
    fn unmap(&mut self, l: u32) {
        let pu = self.l2p[l as usize];
        if pu != NONE {
            let z = self.zone_of(pu) as usize;
            self.valid[z] -= 1;
            self.p2l[pu as usize] = NONE;
            self.l2p[l as usize] = NONE;
        }
    }

    /// Give `stream` the oldest empty zone.
    fn open_zone(&mut self, stream: usize) -> Result<u32, WorkloadError> {
        let Some(z) = self.free.pop_front() else {
            return Err(bad(
                "spare_ratio",
                "the host layer ran out of empty zones (too little spare for its GC)",
            ));
        };
        self.state[z as usize] = ZoneState::Open;
        self.open[stream] = Some(z);
        Ok(z)
    }

    /// Write logical unit `l` at the write pointer of zone `z` (open for `stream`);
    /// returns its offset in the zone.
    fn append(&mut self, z: u32, stream: usize, l: u32) -> u32 {
        let zi = z as usize;
        let off = self.wp[zi];
        let pu = z * self.cap + off;
        self.p2l[pu as usize] = l;
        self.l2p[l as usize] = pu;
        self.valid[zi] += 1;
        self.wp[zi] += 1;
        if self.wp[zi] == self.cap {
            self.state[zi] = ZoneState::Full;
            self.open[stream] = None;
        }
        off
    }

    fn write(
        &mut self,
        r: &HostRequest,
        out: &mut VecDeque<HostRequest>,
    ) -> Result<(), WorkloadError> {
        let u = self.unit_bytes;
        let first = (r.offset_bytes / u) as u32;
        let end = (r.offset_bytes + r.size_bytes).div_ceil(u) as u32;
        if end == first {
            return Ok(());
        }
        let stream = if self.separate {
            if r.placement_id >= self.user_streams {
                return Err(bad(
                    "placement_ids",
                    format!(
                        "the inner workload wrote with placement id {}; the layer takes 0 to {}",
                        r.placement_id,
                        self.user_streams - 1
                    ),
                ));
            }
            r.placement_id as usize
        } else {
            0
        };
        // The old copies are dead before any GC this write may start: never relocated.
        for l in first..end {
            self.unmap(l);
        }
        let mut run = None;
        for l in first..end {
            let z = match self.open[stream] {
                Some(z) => z,
                None => {
                    if let Some(done) = run.take() {
                        self.emit(HostOp::Write, done, r, out);
                    }
                    self.gc(r, out)?;
                    self.open_zone(stream)?
                }
            };
            let off = self.append(z, stream, l);
            self.extend(&mut run, (z, off), u32::MAX, HostOp::Write, r, out);
        }
        if let Some(done) = run {
            self.emit(HostOp::Write, done, r, out);
        }
        self.stats.add_host_user_write((end - first) as u64 * u);
        Ok(())
    }

    /// Returns the bytes of units never written (or trimmed): read as zeros, no request.
    fn read(&self, r: &HostRequest, out: &mut VecDeque<HostRequest>) -> u64 {
        let u = self.unit_bytes;
        let (lo, hi) = (r.offset_bytes, r.offset_bytes + r.size_bytes);
        // (first byte, bytes, last physical unit)
        let mut run: Option<(u64, u64, u32)> = None;
        let flush = |run: &mut Option<(u64, u64, u32)>, out: &mut VecDeque<HostRequest>| {
            if let Some((at, len, _)) = run.take() {
                out.push_back(HostRequest {
                    op: HostOp::Read,
                    offset_bytes: at,
                    size_bytes: len,
                    placement_id: 0,
                    ..*r
                });
            }
        };
        let mut unmapped = 0;
        for l in lo / u..hi.div_ceil(u) {
            let pu = self.l2p[l as usize];
            let (blo, bhi) = (lo.max(l * u), hi.min((l + 1) * u));
            if pu == NONE {
                // Nothing to read; the units on either side may still be one run.
                unmapped += bhi - blo;
                continue;
            }
            let at = self.pu_bytes(pu) + (blo - l * u);
            match &mut run {
                Some((rat, rlen, last))
                    if pu == *last + 1
                        && self.zone_of(pu) == self.zone_of(*last)
                        && *rat + *rlen == at =>
                {
                    *rlen += bhi - blo;
                    *last = pu;
                }
                _ => {
                    flush(&mut run, out);
                    run = Some((at, bhi - blo, pu));
                }
            }
        }
        flush(&mut run, out);
        unmapped
    }

    /// Unmap the units the trim covers whole.
    fn trim(&mut self, r: &HostRequest) {
        let u = self.unit_bytes;
        let first = r.offset_bytes.div_ceil(u);
        let end = (r.offset_bytes + r.size_bytes) / u;
        for l in first..end.max(first) {
            self.unmap(l as u32);
        }
    }

    /// Greedy GC, when a user stream needs a zone and `gc_free_zones` or fewer are empty:
    /// reclaim full zones with the fewest valid units until more are.
    ///
    /// It always progresses ([`LayerParams::check`]): at the start of a reclaim at most
    /// `gc_free_zones` zones are empty and at most `open` are being written, so the full
    /// zones number at least `data zones + 1` and hold at most the user data: the victim
    /// has fewer valid units than a zone holds, and relocating them takes at most one
    /// empty zone (there are at least `gc_free_zones >= 1`) while the reset gives one back.
    fn gc(
        &mut self,
        r: &HostRequest,
        out: &mut VecDeque<HostRequest>,
    ) -> Result<(), WorkloadError> {
        if self.free.len() as u64 > self.gc_free_zones as u64 {
            return Ok(());
        }
        self.stats.add_host_gc_run();
        while self.free.len() as u64 <= self.gc_free_zones as u64 {
            let victim = (0..self.valid.len() as u32)
                .filter(|&z| self.state[z as usize] == ZoneState::Full)
                .min_by_key(|&z| self.valid[z as usize]);
            match victim {
                Some(v) if self.valid[v as usize] < self.cap => self.relocate(v, r, out)?,
                _ => return Err(bad(
                    "spare_ratio",
                    "the host layer's GC found no full zone with invalid data (too little spare)",
                )),
            }
        }
        Ok(())
    }

    /// Move zone `v`'s valid units to the GC zone, then reset `v`.
    fn relocate(
        &mut self,
        v: u32,
        r: &HostRequest,
        out: &mut VecDeque<HostRequest>,
    ) -> Result<(), WorkloadError> {
        let mut live = std::mem::take(&mut self.scratch);
        live.clear();
        let base = v * self.cap;
        for off in 0..self.wp[v as usize] {
            let l = self.p2l[(base + off) as usize];
            if l != NONE {
                live.push((off, l));
            }
        }
        let max = self.gc_run_units;
        let gc_req = HostRequest {
            journal: None,
            tag: TAG_RELOCATION,
            ..*r
        };
        let mut run = None;
        for &(off, _) in &live {
            self.extend(&mut run, (v, off), max, HostOp::Read, &gc_req, out);
        }
        if let Some(done) = run.take() {
            self.emit(HostOp::Read, done, &gc_req, out);
        }
        let gc = self.user_streams as usize;
        for &(_, l) in &live {
            self.unmap(l);
            let z = match self.open[gc] {
                Some(z) => z,
                None => {
                    if let Some(done) = run.take() {
                        self.emit(HostOp::Write, done, &gc_req, out);
                    }
                    self.open_zone(gc)?
                }
            };
            let off = self.append(z, gc, l);
            self.extend(&mut run, (z, off), max, HostOp::Write, &gc_req, out);
        }
        if let Some(done) = run {
            self.emit(HostOp::Write, done, &gc_req, out);
        }
        debug_assert_eq!(self.valid[v as usize], 0);
        self.wp[v as usize] = 0;
        self.state[v as usize] = ZoneState::Empty;
        self.free.push_back(v);
        out.push_back(HostRequest {
            op: HostOp::ZoneReset,
            offset_bytes: v as u64 * self.zone_bytes,
            size_bytes: 0,
            ..gc_req
        });
        self.stats
            .add_host_relocation(live.len() as u64 * self.unit_bytes);
        self.scratch = live;
        Ok(())
    }
}

/// One flow's requests through a [`HostLayer`].
pub struct LogStructuredSource {
    inner: Box<dyn RequestSource>,
    layer: HostLayer,
    queue: VecDeque<HostRequest>,
}

impl LogStructuredSource {
    /// The requests of `inner` (a conventional workload on `params.user_units` units)
    /// translated by a new layer counting into `stats` (which it tells the origins its
    /// tags name: [`ORIGINS`]).
    pub fn new(
        inner: Box<dyn RequestSource>,
        params: &LayerParams,
        stats: WorkloadStats,
    ) -> Result<LogStructuredSource, WorkloadError> {
        stats.set_origins(&ORIGINS)?;
        Ok(LogStructuredSource {
            inner,
            layer: HostLayer::new(params, stats)?,
            queue: VecDeque::new(),
        })
    }
}

impl RequestSource for LogStructuredSource {
    /// The layer's requests must never fail: its map, write pointers and GC assume each
    /// one did what it asked. One that failed stops the run, naming it.
    fn request_failed(&mut self, r: &HostRequest, status: &str) -> Result<(), WorkloadError> {
        Err(WorkloadError::Failed(format!(
            "the log-structured layer's {} of {} bytes at byte {} (zone {}) failed on the device with {status}: the layer's zones no longer match the device's, so the run stops (the layer's requests must never fail; docs/zns.md)",
            r.op.name(),
            r.size_bytes,
            r.offset_bytes,
            r.offset_bytes / self.layer.zone_bytes
        )))
    }

    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        let mut silent = 0u64;
        loop {
            if let Some(r) = self.queue.pop_front() {
                return Ok(Some(r));
            }
            let Some(r) = self.inner.next_request()? else {
                return Ok(None);
            };
            self.layer.translate(&r, &mut self.queue)?;
            if self.queue.is_empty() {
                silent += 1;
                if silent >= MAX_SILENT_REQUESTS {
                    return Err(bad(
                        "inner",
                        format!(
                            "{silent} requests in a row became no device request (reads of units never written, trims): the layer starts empty, so the inner workload must write"
                        ),
                    ));
                }
            }
        }
    }
}

/// Prefix a configuration error of the inner workload with `inner.`.
fn in_inner(e: WorkloadError) -> WorkloadError {
    match e {
        WorkloadError::Config { key, reason } => WorkloadError::Config {
            key: format!("inner.{key}"),
            reason,
        },
        other => other,
    }
}

/// Build the layer and its inner workload.
pub fn build(c: &LogStructuredConfig, ctx: &WorkloadContext) -> Result<Workload, WorkloadError> {
    let Some(geometry) = ctx.zones else {
        return Err(bad(
            "kind",
            "the log-structured host layer needs a zoned device ([device.zns])",
        ));
    };
    if !(c.spare_ratio.is_finite() && c.spare_ratio > 0.0) {
        return Err(bad(
            "spare_ratio",
            format!("{} must be a finite ratio > 0", c.spare_ratio),
        ));
    }
    if matches!(*c.inner, WorkloadConfig::LogStructured(_)) {
        return Err(bad(
            "inner.kind",
            "the inner workload of a log-structured layer cannot be another one",
        ));
    }
    let placement_ids = match (c.placement_ids, &*c.inner) {
        (0, WorkloadConfig::Synthetic(s)) if s.placement_by_temperature => 2,
        (0, _) => 1,
        (n, _) => n,
    };
    let params = LayerParams {
        unit_bytes: ctx.unit_bytes,
        geometry,
        user_units: if ctx.unit_bytes == 0 {
            0
        } else {
            user_units(&geometry, ctx.unit_bytes, c.spare_ratio)
        },
        placement_ids,
        separate_by_placement: c.separate_by_placement,
        gc_free_zones: c.gc_free_zones,
        gc_request_bytes: c.gc_request_bytes,
    };
    params.check()?;
    let inner_ctx = WorkloadContext {
        logical_bytes: params.user_units * ctx.unit_bytes,
        zones: None,
        placement_ids,
        ..ctx.clone()
    };
    let mut inner = c.inner.build(&inner_ctx).map_err(in_inner)?;
    if inner.flows.len() != 1 {
        let key = match &*c.inner {
            WorkloadConfig::Synthetic(_) => "inner.flows",
            _ => "inner",
        };
        return Err(bad(
            key,
            format!(
                "the inner workload has {} flows; the log-structured layer takes one (it writes each zone at its write pointer in the order it issues requests, which two submission queues would not keep)",
                inner.flows.len()
            ),
        ));
    }
    let flow = inner.flows.pop().expect("one flow");
    let source = LogStructuredSource::new(flow.source, &params, inner.stats.clone())?;
    Ok(Workload {
        flows: vec![Flow {
            name: flow.name,
            arrival: flow.arrival,
            source: Box::new(source),
        }],
        duration_ns: inner.duration_ns,
        stats: inner.stats,
    })
}

#[cfg(test)]
mod tests;
