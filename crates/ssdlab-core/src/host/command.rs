//! What a host request means and how it is carried out, written once for both drivers.
//!
//! A request is decoded once into a [`Command`] ([`Command::decode`]: the units it reads,
//! the partly covered units a write must read first (read-modify-write), the units it
//! writes and in which lane, trims, a flush, a zone command) and carried out once
//! ([`execute`], then [`put_units`] for a write's units): which NAND reads go out against
//! which buffer, what enters the buffer in which lane, what a trim, a flush, a zone reset
//! or finish does, when a lane's last partial page goes out, and with which status the
//! request completes. A driver ([`Driver`]) supplies only its buffer, its way to NAND, time
//! and queues: the functional driver's packer programs a page the moment it is full and
//! every request completes at once; the timed front end's write buffer waits for space
//! and for room on the dies, and a request completes after the buffer access. A new kind
//! of host command is added in the workload's request type (`HostOp`, whose exhaustive
//! methods say what it carries over the link, how it is counted, whether it addresses
//! units and splits at the maximum transfer size: the compiler asks for each) and here
//! ([`Command`], [`Command::decode`], [`execute`]). A request is counted once, when it
//! completes, with its outcome ([`HostCounters::complete`], called by the drivers).

use super::UnitSpan;
use crate::base::Version;
use crate::cache::{LaneBuffers, WriteBuffer};
use crate::error::Result;
use crate::ftl::zones::{not_zoned, ZoneError, ZoneState, Zones, NO_LANE};
use crate::ftl::{Ftl, NandSink, ReadOutcome};
use crate::ids::Lpn;
use crate::policy::placement::WriteCtx;
use crate::stats::HostCounters;
use ssdlab_workload::{HostOp, HostRequest};

/// A driver's buffer of host units not yet durable, as a host command sees it.
pub trait UnitBuffer {
    /// Version of `lpn` if the buffer holds it.
    fn lookup(&self, lpn: u32) -> Option<Version>;
    /// Drop `lpn` (trim).
    fn discard(&mut self, lpn: u32);
}

impl UnitBuffer for WriteBuffer {
    #[inline]
    fn lookup(&self, lpn: u32) -> Option<Version> {
        WriteBuffer::lookup(self, lpn)
    }

    #[inline]
    fn discard(&mut self, lpn: u32) {
        WriteBuffer::discard(self, lpn);
    }
}

impl UnitBuffer for LaneBuffers {
    #[inline]
    fn lookup(&self, lpn: u32) -> Option<Version> {
        LaneBuffers::lookup(self, lpn)
    }

    #[inline]
    fn discard(&mut self, lpn: u32) {
        LaneBuffers::discard(self, lpn);
    }
}

/// The partly covered units of a write that hold data: read before the write (at most
/// the first and the last unit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RmwReads {
    lpns: [u32; 2],
    n: u8,
}

impl RmwReads {
    /// The units to read, in order.
    #[inline]
    pub fn lpns(&self) -> &[u32] {
        &self.lpns[..self.n as usize]
    }
}

/// What one host request asks of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Read the units (those in the buffer or never written need no NAND read).
    Read(UnitSpan),
    /// Read `rmw` first, then write every unit of `span` through the buffer, in write
    /// lane `lane` (an FDP handle, a zone's lane; 0 otherwise).
    Write {
        rmw: RmwReads,
        span: UnitSpan,
        lane: u8,
    },
    /// Drop the units from the buffer and unmap them.
    Trim(UnitSpan),
    /// Make every unit written before it durable.
    Flush,
    /// Reset zone `zone`: its buffered units are dropped, then the FTL unmaps and erases it
    /// ([`Ftl::reset_zone`]).
    ZoneReset { zone: u32 },
    /// A zone was finished: lane `lane`'s waiting units (its last partial page) go out.
    ZoneFinish { lane: Option<u8> },
    /// Report Zones: the descriptors of `count` zones from zone `first` go back to the
    /// submitter ([`zone_report`], [`Driver::zones_reported`]).
    ZoneReport { first: u32, count: u32 },
    /// Done at once (zone open, close).
    Done,
    /// The request fails with this status (counted; the run goes on).
    Failed(ZoneError),
}

impl Command {
    /// Decode `req` (covering `span`): count the units it reads or writes in `counters`
    /// (the request itself is counted once it completes, with its outcome:
    /// [`HostCounters::complete`]) and let the FTL observe a write (journal detection); a
    /// partly covered first or last unit that holds data, neither in `buffer` nor
    /// unmapped, is read first.
    #[inline]
    pub fn decode<B: UnitBuffer>(
        req: &HostRequest,
        span: UnitSpan,
        ftl: &mut Ftl,
        buffer: &B,
        counters: &mut HostCounters,
    ) -> Command {
        let unit_bytes = ftl.geometry().unit_bytes as u64;
        if let Some(zs) = ftl.zones_mut() {
            let (cmd, finished) = decode_zoned(req, span, unit_bytes, zs, counters);
            if let Some(z) = finished {
                // Nothing of it waits in a buffer: its lane goes back now.
                ftl.release_zone_lane(z);
            }
            return cmd;
        }
        match req.op {
            HostOp::Read => {
                counters.read_units += span.count as u64;
                Command::Read(span)
            }
            HostOp::Write => {
                let w = WriteCtx {
                    placement_id: req.placement_id,
                    lpn: Lpn(span.first),
                    units: span.count,
                };
                let lane = match ftl.write_lane(&w) {
                    Some(l) => l,
                    None => return Command::Failed(ZoneError::InvalidField),
                };
                counters.write_units += span.count as u64;
                ftl.observe_host_write(span.first, span.count, req.journal);
                let last = span.first + span.count - 1;
                let mut rmw = RmwReads::default();
                for (partial, lpn) in [
                    (span.head_partial, span.first),
                    (span.tail_partial && last != span.first, last),
                ] {
                    if partial
                        && buffer.lookup(lpn).is_none()
                        && ftl.media().is_mapped(crate::ids::Lpn(lpn))
                    {
                        rmw.lpns[rmw.n as usize] = lpn;
                        rmw.n += 1;
                    }
                }
                counters.rmw_reads += rmw.n as u64;
                Command::Write { rmw, span, lane }
            }
            HostOp::Trim => Command::Trim(span),
            HostOp::Flush => Command::Flush,
            // The splitter refuses zone commands on a conventional device.
            HostOp::ZoneAppend
            | HostOp::ZoneOpen
            | HostOp::ZoneClose
            | HostOp::ZoneFinish
            | HostOp::ZoneReset
            | HostOp::ZoneReport => Command::Failed(ZoneError::InvalidCommand),
        }
    }
}

/// A write's units and where they go: what [`put_units`] puts into the buffer (and what a
/// write waiting for space resumes from).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteUnits {
    /// The units (on a zoned device, where the write landed).
    pub span: UnitSpan,
    /// The write lane ([`Command::Write`]).
    pub lane: u8,
    /// The request's tag ([`HostRequest::tag`]): the bytes of its units in `serve`.
    pub tag: u32,
}

/// The state a command works on, borrowed from a driver together.
pub struct Parts<'a, B, S> {
    pub ftl: &'a mut Ftl,
    pub buffer: &'a mut B,
    pub sink: S,
    pub counters: &'a mut HostCounters,
}

/// What a driver supplies to the one execution of host commands ([`execute`],
/// [`put_units`]): its buffer of units not yet durable, its way to NAND, and time and
/// queues. What a command does is decided here; a driver only says when. Requests are
/// named by the driver's own id (`req`; the functional driver's is `NONE`).
pub trait Driver {
    /// The buffer reads look in, trims and resets drop units from.
    type Buffer: UnitBuffer;
    /// Where the FTL issues NAND operations.
    type Sink<'s>: NandSink
    where
        Self: 's;
    /// Operations complete as they are issued (the functional mode): nothing waits.
    const IMMEDIATE: bool;

    /// The FTL, the buffer, a sink and the host counters.
    fn parts(&mut self) -> Parts<'_, Self::Buffer, Self::Sink<'_>>;
    /// Request `req` issued NAND reads (`out`): unless the driver is immediate, it waits
    /// for them (its last one done: a read completes, a write is admitted).
    fn reads_issued(&mut self, req: u32, out: &ReadOutcome);
    /// Write `w` of request `req` is decoded: its units enter the buffer through
    /// [`put_units`] once its read-modify-write reads (`reads_pending`) are done and the
    /// writes waiting before it are in.
    fn write(&mut self, req: u32, w: WriteUnits, reads_pending: bool) -> Result<()>;
    /// Put unit `lpn` of write `w` into lane `w.lane` at a new version
    /// ([`Ftl::new_version_for`]), programming what it completes: a full page, or the
    /// lane's waiting units when `lpn` is of another page class ([`Ftl::page_class`]: a
    /// page holds one class). False, and nothing changes, when there is no room now.
    fn put(&mut self, w: &WriteUnits, lpn: u32) -> Result<bool>;
    /// Lane `lane`'s waiting units go out now, the last page partial (its zone is full).
    fn close_lane(&mut self, lane: u8) -> Result<()>;
    /// Flushes need no NAND work: the buffer is power-loss protected ([`flush_free`]).
    fn flush_is_free(&self) -> bool;
    /// Flush `req`: every unit written before it becomes durable, then it completes.
    fn flush(&mut self, req: u32) -> Result<()>;
    /// Request `req` is done with the device: it completes (failed with `error`).
    fn finish(&mut self, req: u32, error: Option<ZoneError>) -> Result<()>;
    /// Units left the buffer (a trim, a zone reset): writes waiting for space may go on.
    fn space_freed(&mut self) -> Result<()>;
    /// Zone Report `req` returns `zones` (the zones as they stand now) to its submitter,
    /// with its completion.
    fn zones_reported(&mut self, req: u32, zones: Vec<ZoneDescriptor>);
    /// Write `req`, waiting for a write lane (its zone opened while every lane was held),
    /// took `lane`.
    fn lane_taken(&mut self, _req: u32, _lane: u8) {}
    /// Zone `zone` is about to be reset: writes to it still waiting for buffer space or a
    /// lane insert nothing more (their units count as dropped by the reset).
    fn zone_resetting(&mut self, _zone: u32) {}
    /// A flush waiting now covers a buffered unit of trim `span` (asked before the trim
    /// drops it): that flush may complete only once the trim is recorded (durable trims),
    /// or a power cut could bring back what the unit held before.
    fn trim_covers_waiting_flush(&mut self, _span: UnitSpan) -> bool {
        false
    }
    /// Record the trims so far and make the waiting flushes wait for the records too.
    fn record_trims_for_waiting_flushes(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Carry out command `cmd` of request `req` (tagged `tag`) on driver `d`.
#[inline]
pub fn execute<D: Driver>(d: &mut D, cmd: Command, req: u32, tag: u32) -> Result<()> {
    match cmd {
        Command::Read(span) => {
            if read(d, span, req)? == 0 || D::IMMEDIATE {
                d.finish(req, None)?;
            }
            Ok(())
        }
        Command::Write { rmw, span, lane } => {
            d.parts().ftl.count_lane_units(lane, span.count);
            let mut ops = 0;
            for &lpn in rmw.lpns() {
                ops += read(d, one_unit(lpn), req)?;
            }
            let w = WriteUnits { span, lane, tag };
            d.write(req, w, ops > 0 && !D::IMMEDIATE)
        }
        Command::Trim(span) => {
            let covers = d.trim_covers_waiting_flush(span);
            {
                let Parts {
                    ftl, buffer, sink, ..
                } = d.parts();
                trim_units(ftl, span, buffer, &mut { sink })?;
            }
            if covers {
                d.record_trims_for_waiting_flushes()?;
            }
            d.finish(req, None)?;
            d.space_freed()
        }
        Command::Flush if d.flush_is_free() => d.finish(req, None),
        Command::Flush => d.flush(req),
        Command::ZoneReset { zone } => {
            d.zone_resetting(zone);
            {
                let Parts {
                    ftl, buffer, sink, ..
                } = d.parts();
                reset_zone(ftl, zone, buffer, &mut { sink })?;
            }
            d.finish(req, None)?;
            d.space_freed()
        }
        Command::ZoneFinish { lane } => {
            if let Some(l) = lane {
                d.close_lane(l)?;
            }
            d.finish(req, None)
        }
        Command::ZoneReport { first, count } => {
            let zones = zone_report(d.parts().ftl, first, count);
            d.zones_reported(req, zones);
            d.finish(req, None)
        }
        Command::Done => d.finish(req, None),
        Command::Failed(e) => d.finish(req, Some(e)),
    }
}

/// Put write `w`'s units from its `done`-th on into the driver's buffer (request `req`);
/// a unit whose zone was reset since the write was accepted is dropped. When every unit
/// is in, the lane's last partial page goes out if the write is the last its zone takes
/// (it filled the zone, or the zone was finished where it ends while it waited), and the
/// request completes. Returns how many units are in: fewer than the span's when there was
/// no room (the driver calls again when space frees, with that count).
#[inline]
pub fn put_units<D: Driver>(d: &mut D, req: u32, w: &WriteUnits, mut done: u32) -> Result<u32> {
    if d.parts().ftl.zones().is_some() {
        return put_zone_units(d, req, w, done);
    }
    while done < w.span.count {
        if !d.put(w, w.span.first + done)? {
            return Ok(done);
        }
        done += 1;
    }
    d.finish(req, None)?;
    Ok(done)
}

/// [`put_units`] on a zoned device.
#[inline(never)]
fn put_zone_units<D: Driver>(d: &mut D, req: u32, w: &WriteUnits, mut done: u32) -> Result<u32> {
    let mut w = *w;
    if w.lane == NO_LANE && done < w.span.count {
        // Every lane was held when its zone opened: it takes one now, in submission order,
        // or waits (a full zone's last page placed frees one; that program's completion
        // serves the waiting writes again).
        let zs = d.parts().ftl.zones_mut().ok_or_else(not_zoned)?;
        match zs.acquire_lane(zs.zone_of(w.span.first)) {
            Some(lane) => {
                w.lane = lane;
                d.lane_taken(req, lane);
            }
            None => return Ok(done),
        }
    }
    let w = &w;
    while done < w.span.count {
        let lpn = w.span.first + done;
        if !still_written(d.parts().ftl, lpn, w.lane) {
            done += 1; // its zone was reset since the write was accepted
            continue;
        }
        if !d.put(w, lpn)? {
            return Ok(done);
        }
        done += 1;
    }
    if w.lane != NO_LANE && last_of_zone(d.parts().ftl, &w.span) {
        d.close_lane(w.lane)?;
    }
    d.finish(req, None)?;
    Ok(done)
}

/// Read `span` for request `req` on driver `d`: the NAND operations issued (to wait for).
#[inline]
fn read<D: Driver>(d: &mut D, span: UnitSpan, req: u32) -> Result<u32> {
    let out = {
        let Parts {
            ftl,
            buffer,
            sink,
            counters,
        } = d.parts();
        read_units(ftl, span, &*buffer, req, &mut { sink }, counters)?
    };
    d.reads_issued(req, &out);
    Ok(out.nand_reads + out.nand_programs)
}

fn still_written(ftl: &Ftl, lpn: u32, lane: u8) -> bool {
    ftl.zones().is_some_and(|z| z.still_written(lpn, lane))
}

/// Whether a write of `span` is the last its zone takes: the zone is full (written to its
/// capacity, or finished) where the span ends. (A write that waited for space while a
/// later one filled the zone is not: the later one closes the lane, after its units.)
fn last_of_zone(ftl: &Ftl, span: &UnitSpan) -> bool {
    ftl.zones().is_some_and(|zs| {
        let z = zs.zone_of(span.first);
        zs.is_full(z) && zs.written(z).end == span.first + span.count
    })
}

/// Whether host flushes need no NAND work: the buffer is power-loss protected
/// (`ftl.power_loss_protection`, `plp`), as a zoned device's zone buffers always are
/// (docs/zns.md).
pub fn flush_free(plp: bool, ftl: &Ftl) -> bool {
    plp || ftl.zones().is_some()
}

/// Whether a page holds units of one class only ([`Ftl::page_class`]: journal or not with
/// `slc-journal`, one zone's on a zoned device); otherwise every unit packs with every
/// other.
pub fn page_classes(ftl: &Ftl) -> bool {
    ftl.packs_journal_apart() || ftl.zones().is_some()
}

/// Host units can no longer be placed and nothing will free space for them: on a zoned
/// device (no GC: only a reset frees a block) the device has failed.
pub fn host_pages_stuck(ftl: &mut Ftl) {
    if ftl.zones().is_some() {
        ftl.zone_out_of_blocks();
    }
}

/// [`Command::decode`] on a zoned device: every request meets the zone state machine;
/// a failure is counted there. Also the zone a Zone Finish finished (its lane goes back).
#[cold]
fn decode_zoned(
    req: &HostRequest,
    span: UnitSpan,
    unit: u64,
    zs: &mut Zones,
    counters: &mut HostCounters,
) -> (Command, Option<u32>) {
    let lpn = (req.offset_bytes / unit) as u32;
    let aligned = req.offset_bytes.is_multiple_of(unit) && req.size_bytes.is_multiple_of(unit);
    let mut finished = None;
    let out = match req.op {
        HostOp::Read => zs.read(span.first, span.count).map(|_| {
            counters.read_units += span.count as u64;
            Command::Read(span)
        }),
        HostOp::Write | HostOp::ZoneAppend => {
            let append = req.op == HostOp::ZoneAppend;
            zs.write(span.first, span.count, aligned, append).map(|w| {
                counters.write_units += span.count as u64;
                Command::Write {
                    rmw: RmwReads::default(),
                    span: UnitSpan {
                        first: w.first,
                        ..span
                    },
                    lane: w.lane,
                }
            })
        }
        HostOp::Trim => Err(ZoneError::InvalidCommand),
        HostOp::Flush => Ok(Command::Flush),
        HostOp::ZoneReport => {
            zs.count_report();
            // From the zone holding the offset, as many as the report buffer holds (a
            // 64-byte header, 64 bytes per descriptor), up to the last zone.
            let first = zs.zone_of(lpn).min(zs.count());
            let fits = req.size_bytes.saturating_sub(REPORT_HEADER_BYTES) / DESCRIPTOR_BYTES;
            let count = fits.min((zs.count() - first) as u64) as u32;
            Ok(Command::ZoneReport { first, count })
        }
        HostOp::ZoneOpen => zs
            .managed_zone(lpn, aligned)
            .and_then(|z| zs.open(z))
            .map(|_| Command::Done),
        HostOp::ZoneClose => zs
            .managed_zone(lpn, aligned)
            .and_then(|z| zs.close(z))
            .map(|_| Command::Done),
        HostOp::ZoneFinish => zs.managed_zone(lpn, aligned).and_then(|z| {
            finished = Some(z);
            zs.finish(z).map(|lane| Command::ZoneFinish { lane })
        }),
        HostOp::ZoneReset => zs
            .managed_zone(lpn, aligned)
            .and_then(|z| zs.check_reset(z).map(|_| Command::ZoneReset { zone: z })),
    };
    let cmd = out.unwrap_or_else(|e| {
        zs.count_error(e);
        Command::Failed(e)
    });
    match cmd {
        Command::ZoneFinish { .. } => (cmd, finished),
        _ => (cmd, None),
    }
}

/// Bytes of a Report Zones data structure's header and of each zone descriptor in it
/// (NVMe ZNS, Zone Management Receive).
pub const REPORT_HEADER_BYTES: u64 = 64;
pub const DESCRIPTOR_BYTES: u64 = 64;

/// One zone as Report Zones describes it (NVMe ZNS Zone Descriptor), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ZoneDescriptor {
    /// The zone's index.
    pub zone: u32,
    pub state: ZoneState,
    /// The zone's first byte (ZSLBA).
    pub start_bytes: u64,
    /// The write pointer (WP): the first byte not written; of a full zone, where its
    /// writes ended (NVMe leaves a full zone's write pointer undefined).
    pub write_pointer_bytes: u64,
    /// Bytes the zone can hold (ZCAP).
    pub capacity_bytes: u64,
}

/// The descriptors of `count` zones of `ftl` from zone `first`, as they stand now.
pub fn zone_report(ftl: &Ftl, first: u32, count: u32) -> Vec<ZoneDescriptor> {
    let unit = ftl.geometry().unit_bytes as u64;
    let Some(zs) = ftl.zones() else {
        return Vec::new();
    };
    (first..first + count)
        .map(|z| {
            let start = z as u64 * zs.zone_units as u64 * unit;
            ZoneDescriptor {
                zone: z,
                state: zs.state(z),
                start_bytes: start,
                write_pointer_bytes: start + zs.write_pointer(z) as u64 * unit,
                capacity_bytes: zs.cap_units as u64 * unit,
            }
        })
        .collect()
}

/// Drop zone `zone`'s units from `buffer` and reset it.
pub fn reset_zone<S: NandSink, B: UnitBuffer>(
    ftl: &mut Ftl,
    zone: u32,
    buffer: &mut B,
    sink: &mut S,
) -> Result<()> {
    let written = ftl.zones().ok_or_else(not_zoned)?.written(zone);
    for lpn in written {
        buffer.discard(lpn);
    }
    ftl.reset_zone(zone, sink)
}

/// One unit as a span.
#[inline]
pub fn one_unit(lpn: u32) -> UnitSpan {
    UnitSpan {
        first: lpn,
        count: 1,
        head_partial: false,
        tail_partial: false,
    }
}

/// Read `span` for request `req`: units in `buffer` or never written are served without
/// NAND access (counted in `counters`); the FTL issues the rest to `sink`.
#[inline]
pub fn read_units<S: NandSink, B: UnitBuffer>(
    ftl: &mut Ftl,
    span: UnitSpan,
    buffer: &B,
    req: u32,
    sink: &mut S,
    counters: &mut HostCounters,
) -> Result<ReadOutcome> {
    let out = ftl.read_units(span.lpns(), |l| buffer.lookup(l), req, sink)?;
    counters.buffer_read_hits += out.buffer_hits as u64;
    counters.unmapped_read_units += out.unmapped as u64;
    Ok(out)
}

/// Trim `span`: each unit leaves `buffer` and is unmapped.
pub fn trim_units<S: NandSink, B: UnitBuffer>(
    ftl: &mut Ftl,
    span: UnitSpan,
    buffer: &mut B,
    sink: &mut S,
) -> Result<()> {
    for lpn in span.lpns() {
        buffer.discard(lpn);
        ftl.trim(lpn, sink)?;
    }
    Ok(())
}
