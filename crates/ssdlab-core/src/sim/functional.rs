//! Functional mode: the FTL driven without an event queue. Every NAND operation is counted
//! and completes as it is issued; its array latency (tR, tPROG, loops × erase-loop time) is
//! added to one serial clock, and so is each request's data crossing the host data path
//! (`device.host_transfer_mb_per_s`); no channel transfer or command time, no parallelism. The clock also
//! follows request arrival times (open-loop workloads), and a gap of `idle_gc_after_ns`
//! or more between requests lets background GC drain before the next request. Used for
//! preconditioning, lifetime runs and OP sweeps, and as `mode = "functional"`.

use crate::base::Version;
use crate::error::{Result, SimError};
use crate::flash::{NandOp, TimingModel, NONE};
use crate::ftl::zones::ZoneError;
use crate::ftl::{Ftl, NandSink, ReadOutcome};
use crate::host::command::{self, Command, Driver, Parts, UnitBuffer, WriteUnits, ZoneDescriptor};
use crate::host::link::Payload;
use crate::host::Splitter;
use crate::stats::HostCounters;
use crate::MAX_SLOTS_PER_PAGE;
use ssdlab_workload::HostRequest;

/// Serial-time sink: sums array latencies (the timing model's, per operation); operations
/// complete at once.
pub struct SerialClock {
    pub time_ns: u64,
    timing: TimingModel,
}

impl SerialClock {
    pub fn new(t: &TimingModel) -> SerialClock {
        SerialClock {
            time_ns: 0,
            timing: t.clone(),
        }
    }
}

impl NandSink for SerialClock {
    const IMMEDIATE: bool = true;
    #[inline(always)]
    fn now_ns(&self) -> u64 {
        self.time_ns
    }

    #[inline]
    fn issue(&mut self, op: NandOp) {
        self.time_ns += self.timing.op_array(&op).ns();
    }

    #[inline]
    fn issue_times(&mut self, op: NandOp, times: u64) {
        self.time_ns += times * self.timing.op_array(&op).ns();
    }
}

/// The partial page being filled (the functional mode's write buffer: one page).
struct Packer {
    lpns: [u32; MAX_SLOTS_PER_PAGE],
    versions: [Version; MAX_SLOTS_PER_PAGE],
    n: usize,
    capacity: usize,
}

impl Packer {
    fn new(capacity: usize) -> Packer {
        Packer {
            lpns: [0; MAX_SLOTS_PER_PAGE],
            versions: [0; MAX_SLOTS_PER_PAGE],
            n: 0,
            capacity,
        }
    }

    /// Pack `lpn` at `version` (a copy already packed takes the new version in place);
    /// whether the page is now full.
    #[inline(always)]
    fn put(&mut self, lpn: u32, version: Version) -> bool {
        if self.capacity > 1 {
            if let Some(i) = self.lpns[..self.n].iter().position(|&l| l == lpn) {
                self.versions[i] = version;
                return false;
            }
        }
        self.lpns[self.n] = lpn;
        self.versions[self.n] = version;
        self.n += 1;
        self.n == self.capacity
    }
}

impl UnitBuffer for Packer {
    #[inline]
    fn lookup(&self, lpn: u32) -> Option<Version> {
        self.lpns[..self.n]
            .iter()
            .position(|&l| l == lpn)
            .map(|i| self.versions[i])
    }

    fn discard(&mut self, lpn: u32) {
        if let Some(i) = self.lpns[..self.n].iter().position(|&l| l == lpn) {
            let n = self.n;
            self.lpns.copy_within(i + 1..n, i);
            self.versions.copy_within(i + 1..n, i);
            self.n -= 1;
        }
    }
}

/// The packers of every write lane (the functional driver's buffer of host units): lane
/// 0's (the only one without lanes) and the others' (FDP handles, a zoned device's lanes).
pub struct Packers {
    main: Packer,
    extra: Vec<Packer>,
}

impl Packers {
    #[inline(always)]
    fn lane(&mut self, lane: u8) -> &mut Packer {
        match lane {
            0 => &mut self.main,
            l => &mut self.extra[l as usize - 1],
        }
    }
}

impl UnitBuffer for Packers {
    #[inline]
    fn lookup(&self, lpn: u32) -> Option<Version> {
        self.main.lookup(lpn).or_else(|| {
            self.extra
                .iter()
                .find_map(|p| if p.n > 0 { p.lookup(lpn) } else { None })
        })
    }

    fn discard(&mut self, lpn: u32) {
        self.main.discard(lpn);
        for p in &mut self.extra {
            p.discard(lpn);
        }
    }
}

/// Drives one FTL in functional mode.
pub struct FunctionalDriver<'a> {
    pub ftl: &'a mut Ftl,
    pub clock: SerialClock,
    packer: Packers,
    pub host: HostCounters,
    /// Host idle time after which background GC drains (0 = never).
    idle_gc_after_ns: u64,
    /// Arrival of the last request (the idle gap is measured from it).
    last_arrival_ns: u64,
    /// Flushes need no NAND work (`ftl.power_loss_protection`).
    flush_free: bool,
    /// Units written through this driver (lifetime stamps).
    units_written: u64,
    /// Phase name for lifetime stamps.
    phase: &'static str,
    /// The placement packs journal units apart (`slc-journal`).
    separate_journal: bool,
    splitter: Splitter,
    /// Why the last request failed, if it did.
    last_error: Option<ZoneError>,
    /// The zones the last Zone Report returned, until taken.
    zone_report: Option<Vec<ZoneDescriptor>>,
}

impl<'a> FunctionalDriver<'a> {
    pub fn new(ftl: &'a mut Ftl) -> FunctionalDriver<'a> {
        let clock = SerialClock::new(ftl.timing());
        let capacity = ftl.geometry().slots_per_page as usize;
        let separate_journal = ftl.packs_journal_apart();
        let splitter = Splitter::for_device(ftl);
        let lanes = ftl.lanes();
        let flush_free = command::flush_free(false, ftl);
        FunctionalDriver {
            ftl,
            clock,
            packer: Packers {
                main: Packer::new(capacity),
                extra: (1..lanes).map(|_| Packer::new(capacity)).collect(),
            },
            host: HostCounters::default(),
            idle_gc_after_ns: 0,
            last_arrival_ns: 0,
            flush_free,
            units_written: 0,
            phase: "workload",
            separate_journal,
            splitter,
            last_error: None,
            zone_report: None,
        }
    }

    /// Name the phase lifetime events are stamped with (default `workload`).
    pub fn in_phase(mut self, phase: &'static str) -> Self {
        self.phase = phase;
        self
    }

    /// Let background GC drain when the host is idle this long (0 = never).
    pub fn with_idle_gc(mut self, idle_gc_after_ns: u64) -> Self {
        self.idle_gc_after_ns = idle_gc_after_ns;
        self
    }

    /// A power-loss-protected buffer: host flushes program nothing.
    pub fn with_power_loss_protection(mut self, on: bool) -> Self {
        self.flush_free = command::flush_free(on, self.ftl);
        self
    }

    /// Whether the device has worn out (the run must stop).
    #[inline]
    pub fn worn_out(&self) -> bool {
        self.ftl.worn_out()
    }

    /// Write one unit from the host.
    #[inline(always)]
    pub fn write_unit(&mut self, lpn: u32) -> Result<()> {
        self.write_unit_tagged(lpn, 0)
    }

    /// Write one unit of the host request tagged `tag` ([`Ftl::new_version_for`]).
    #[inline(always)]
    pub fn write_unit_tagged(&mut self, lpn: u32, tag: u32) -> Result<()> {
        self.units_written += 1;
        let version = self.ftl.new_version_for(lpn, tag);
        // Journal and other units are packed apart (`slc-journal`).
        if self.separate_journal
            && self.packer.main.n > 0
            && self.ftl.packs_apart(lpn) != self.ftl.packs_apart(self.packer.main.lpns[0])
        {
            self.program_from::<true>(0)?;
        }
        if self.packer.main.put(lpn, version) {
            self.program_from::<true>(0)?;
        }
        Ok(())
    }

    /// Write one unit of the host request tagged `tag` in write lane `lane` (a device with
    /// lanes: FDP handles, a zoned device's lanes); a page holds units of one lane and one
    /// class ([`Ftl::page_class`]), and a copy of the unit waiting in another lane is
    /// dropped.
    #[inline(never)]
    fn write_unit_in_lane(&mut self, lpn: u32, tag: u32, lane: u8) -> Result<()> {
        self.units_written += 1;
        let version = self.ftl.new_version_for(lpn, tag);
        let first = self.packer.lane(lane).lpns[0];
        if self.packer.lane(lane).n > 0 && self.ftl.page_class(lpn) != self.ftl.page_class(first) {
            self.program_packed(lane)?;
        }
        // A copy waiting in another lane moves here.
        if self.packer.lookup(lpn).is_some() && self.packer.lane(lane).lookup(lpn).is_none() {
            self.packer.discard(lpn);
        }
        if self.packer.lane(lane).put(lpn, version) {
            self.program_packed(lane)?;
        }
        Ok(())
    }

    /// Program the packed units of `lane` (a full page, or a padded partial one on flush).
    #[inline]
    fn program_packed(&mut self, lane: u8) -> Result<()> {
        match lane {
            0 => self.program_from::<true>(0),
            l => self.program_from::<false>(l),
        }
    }

    /// [`FunctionalDriver::program_packed`], lane 0's (`MAIN`: every device without
    /// lanes, its packer and stream known at compile time) or lane `lane`'s.
    #[inline]
    fn program_from<const MAIN: bool>(&mut self, lane: u8) -> Result<()> {
        let lane = if MAIN { 0 } else { lane };
        let packer = if MAIN {
            &mut self.packer.main
        } else {
            &mut self.packer.extra[lane as usize - 1]
        };
        let n = packer.n;
        if n == 0 {
            return Ok(());
        }
        packer.n = 0;
        let versions: &[Version] = if self.ftl.integrity().is_some() {
            &packer.versions[..n]
        } else {
            &[]
        };
        let lpns = &packer.lpns[..n];
        if self
            .ftl
            .write_host_page(lane, lpns, versions, NONE, &mut self.clock, |_| true)?
            .is_some()
        {
            self.stamp();
            return Ok(());
        }
        // Every plane is down to its GC reserve: let every plane's GC look again, retry.
        self.ftl.wake_all(&mut self.clock)?;
        let placed =
            self.ftl
                .write_host_page(lane, lpns, versions, NONE, &mut self.clock, |_| true)?;
        if placed.is_none() {
            command::host_pages_stuck(self.ftl);
        }
        if placed.is_some() || self.ftl.worn_out() {
            self.stamp();
            return Ok(());
        }
        Err(SimError::DeviceFull(
            "no plane can take a host page and GC cannot reclaim space".into(),
        ))
    }

    /// Stamp lifetime events with the clock and the host writes so far.
    #[inline]
    fn stamp(&mut self) {
        if self.ftl.lifetime_stamp_pending() {
            self.ftl
                .stamp_lifetime(self.phase, self.clock.time_ns, self.units_written);
        }
    }

    /// Version of `lpn` the device holds (packed page first, then flash); integrity mode.
    pub fn stored_version(&self, lpn: u32) -> Option<Version> {
        self.packer
            .lookup(lpn)
            .or_else(|| self.ftl.flash_version(lpn))
    }

    /// Flush: program the partial page, padded, and record the trims so far (durable
    /// trims).
    pub fn flush(&mut self) -> Result<()> {
        for lane in 0..self.packer.extra.len() as u8 + 1 {
            self.program_packed(lane)?;
        }
        self.ftl.record_trims(&mut self.clock)?;
        Ok(())
    }

    /// The clock follows arrivals; a gap of `idle_gc_after_ns` or more lets idle-time GC
    /// run (from the moment the gap reached the threshold) before the next request.
    fn arrive(&mut self, arrival_ns: u64) -> Result<()> {
        let busy_until = self.last_arrival_ns.max(self.clock.time_ns);
        if self.idle_gc_after_ns > 0 && arrival_ns >= busy_until + self.idle_gc_after_ns {
            self.clock.time_ns = busy_until + self.idle_gc_after_ns;
            self.ftl.set_host_idle(true, &mut self.clock)?;
            self.ftl.set_host_idle(false, &mut self.clock)?;
        }
        self.last_arrival_ns = arrival_ns;
        self.clock.time_ns = self.clock.time_ns.max(arrival_ns);
        Ok(())
    }

    /// Version of `lpn` the packer holds (a unit not yet programmed), if any.
    pub fn buffered(&self, lpn: u32) -> Option<Version> {
        self.packer.lookup(lpn)
    }

    /// Units the packers hold (not yet programmed).
    pub fn packed_units(&self) -> u32 {
        self.packer.main.n as u32 + self.packer.extra.iter().map(|p| p.n as u32).sum::<u32>()
    }

    /// Apply one host request (its meaning: [`Command`], carried out by
    /// [`command::execute`]).
    pub fn submit(&mut self, req: &HostRequest) -> Result<()> {
        let span = self.splitter.split(req)?;
        self.arrive(req.arrival_ns)?;
        let cmd = Command::decode(req, span, self.ftl, &self.packer, &mut self.host);
        if !matches!(cmd, Command::Failed(_)) {
            // Its data crosses the host data path (`device.host_transfer_mb_per_s`).
            let bytes = Payload::of(req.op, req.size_bytes).bytes();
            self.clock.time_ns += self.ftl.timing().host_transfer_ns(bytes);
        }
        command::execute(self, cmd, NONE, req.tag)?;
        // It completed in `execute` (nothing waits here): counted now, with its outcome.
        self.host.complete(req.op, req.size_bytes, self.last_error);
        self.stamp();
        Ok(())
    }

    /// The zones the last Zone Report submitted returned (NVMe zone descriptors), once:
    /// `None` after they were taken, or before any report.
    pub fn take_zone_report(&mut self) -> Option<Vec<ZoneDescriptor>> {
        self.zone_report.take()
    }

    /// Why the last request submitted failed (a zone or placement error), if it did.
    pub fn last_error(&self) -> Option<ZoneError> {
        self.last_error
    }
}

/// The functional driver's side of a host command: the packers, the serial clock, and no
/// waiting (every operation completes as it is issued, every request at once).
impl Driver for FunctionalDriver<'_> {
    type Buffer = Packers;
    type Sink<'s>
        = &'s mut SerialClock
    where
        Self: 's;
    const IMMEDIATE: bool = true;

    #[inline(always)]
    fn parts(&mut self) -> Parts<'_, Packers, &mut SerialClock> {
        Parts {
            ftl: self.ftl,
            buffer: &mut self.packer,
            sink: &mut self.clock,
            counters: &mut self.host,
        }
    }

    #[inline(always)]
    fn reads_issued(&mut self, _req: u32, _out: &ReadOutcome) {}

    #[inline(always)]
    fn write(&mut self, req: u32, w: WriteUnits, _reads_pending: bool) -> Result<()> {
        // Every full zone's pages are placed at once here, so a zone always finds a lane.
        if command::put_units(self, req, &w, 0)? < w.span.count {
            return Err(SimError::Internal {
                what: format!("no write lane free for the zone of unit {}", w.span.first),
            });
        }
        Ok(())
    }

    #[inline(always)]
    fn put(&mut self, w: &WriteUnits, lpn: u32) -> Result<bool> {
        if self.packer.extra.is_empty() {
            self.write_unit_tagged(lpn, w.tag)?;
        } else {
            self.write_unit_in_lane(lpn, w.tag, w.lane)?;
        }
        Ok(true)
    }

    fn close_lane(&mut self, lane: u8) -> Result<()> {
        self.program_packed(lane)
    }

    #[inline(always)]
    fn flush_is_free(&self) -> bool {
        self.flush_free
    }

    fn flush(&mut self, req: u32) -> Result<()> {
        FunctionalDriver::flush(self)?;
        self.finish(req, None)
    }

    #[inline(always)]
    fn finish(&mut self, _req: u32, error: Option<ZoneError>) -> Result<()> {
        self.last_error = error;
        Ok(())
    }

    #[inline(always)]
    fn space_freed(&mut self) -> Result<()> {
        Ok(())
    }

    fn zones_reported(&mut self, _req: u32, zones: Vec<ZoneDescriptor>) {
        self.zone_report = Some(zones);
    }
}
