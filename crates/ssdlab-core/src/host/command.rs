//! What a host request means, written once for every driver.
//!
//! A request is decoded into a [`Command`]: the units it reads, the partly covered units a
//! write must read first (read-modify-write), the units it writes, trims, or a flush mark.
//! Reads and trims go through [`read_units`] and [`trim_units`] against the driver's own
//! buffer (anything implementing [`UnitBuffer`]); a write's units enter that buffer in the
//! driver's own way (the functional packer at once, the timed write buffer as space
//! allows), and a flush mark is kept by the driver's buffer. A new kind of host command is
//! added in the workload's request type and here.

use super::UnitSpan;
use crate::cache::{LaneBuffers, WriteBuffer};
use crate::error::Result;
use crate::ftl::zones::ZoneError;
use crate::ftl::{Ftl, NandSink, ReadOutcome};
use crate::stats::HostCounters;
use ssdlab_workload::{HostOp, HostRequest};

/// A driver's buffer of host units not yet durable, as a host command sees it.
pub trait UnitBuffer {
    /// Version of `lpn` if the buffer holds it.
    fn lookup(&self, lpn: u32) -> Option<crate::base::Version>;
    /// Drop `lpn` (trim).
    fn discard(&mut self, lpn: u32);
}

impl UnitBuffer for WriteBuffer {
    #[inline]
    fn lookup(&self, lpn: u32) -> Option<crate::base::Version> {
        WriteBuffer::lookup(self, lpn)
    }

    #[inline]
    fn discard(&mut self, lpn: u32) {
        WriteBuffer::discard(self, lpn);
    }
}

impl UnitBuffer for LaneBuffers {
    #[inline]
    fn lookup(&self, lpn: u32) -> Option<crate::base::Version> {
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
    /// lane `lane` (an FDP handle, a zone's lane; 0 otherwise). `filled`: the write filled
    /// its zone, whose last partial page must go out once the units are in.
    Write {
        rmw: RmwReads,
        span: UnitSpan,
        lane: u8,
        filled: bool,
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
    /// Done at once (zone open, close, report).
    Done,
    /// The request fails with this status (counted; the run goes on).
    Failed(ZoneError),
}

impl Command {
    /// Decode `req` (covering `span`): count it in `counters` and let the FTL observe a
    /// write (journal detection); a partly covered first or last unit that holds data,
    /// neither in `buffer` nor unmapped, is read first.
    #[inline]
    pub fn decode<B: UnitBuffer>(
        req: &HostRequest,
        span: UnitSpan,
        ftl: &mut Ftl,
        buffer: &B,
        counters: &mut HostCounters,
    ) -> Command {
        counters.count(req.op, req.size_bytes);
        if ftl.zones().is_some() {
            return decode_zoned(req, span, ftl, counters);
        }
        match req.op {
            HostOp::Read => Command::Read(span),
            HostOp::Write => {
                let lane = match ftl.lane_of_placement(req.placement_id) {
                    Some(l) => l,
                    None => {
                        counters.count_failed(req.op, req.size_bytes);
                        return Command::Failed(ZoneError::InvalidField);
                    }
                };
                counters.write_units += span.count as u64;
                ftl.observe_host_write(span.first, span.count, req.journal);
                let last = span.first + span.count - 1;
                let mut rmw = RmwReads::default();
                for (partial, lpn) in [
                    (span.head_partial, span.first),
                    (span.tail_partial && last != span.first, last),
                ] {
                    if partial && buffer.lookup(lpn).is_none() && ftl.is_mapped(lpn) {
                        rmw.lpns[rmw.n as usize] = lpn;
                        rmw.n += 1;
                    }
                }
                counters.rmw_reads += rmw.n as u64;
                Command::Write {
                    rmw,
                    span,
                    lane,
                    filled: false,
                }
            }
            HostOp::Trim => Command::Trim(span),
            HostOp::Flush => Command::Flush,
            // The splitter refuses zone commands on a conventional device.
            _ => {
                counters.count_failed(req.op, req.size_bytes);
                Command::Failed(ZoneError::InvalidCommand)
            }
        }
    }
}

/// [`Command::decode`] on a zoned device: every request meets the zone state machine;
/// a failure is counted there.
#[cold]
fn decode_zoned(
    req: &HostRequest,
    span: UnitSpan,
    ftl: &mut Ftl,
    counters: &mut HostCounters,
) -> Command {
    let unit = ftl.geo.unit_bytes as u64;
    let zs = ftl.zones_mut().expect("a zoned device");
    let lpn = (req.offset_bytes / unit) as u32;
    let aligned = req.offset_bytes.is_multiple_of(unit) && req.size_bytes.is_multiple_of(unit);
    let mut finished = None;
    let out = match req.op {
        HostOp::Read => zs.read(span.first, span.count).map(|_| Command::Read(span)),
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
                    filled: w.filled,
                }
            })
        }
        HostOp::Trim => Err(ZoneError::InvalidCommand),
        HostOp::Flush => Ok(Command::Flush),
        HostOp::ZoneReport => {
            zs.count_report();
            Ok(Command::Done)
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
        counters.count_failed(req.op, req.size_bytes);
        Command::Failed(e)
    });
    if let (Some(z), Command::ZoneFinish { .. }) = (finished, cmd) {
        // Nothing of it waits in a buffer: its lane goes back now.
        ftl.release_zone_lane(z);
    }
    cmd
}

/// Drop zone `zone`'s units from `buffer` and reset it.
pub fn reset_zone<S: NandSink, B: UnitBuffer>(
    ftl: &mut Ftl,
    zone: u32,
    buffer: &mut B,
    sink: &mut S,
) -> Result<()> {
    let written = ftl.zones().expect("a zoned device").written(zone);
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
