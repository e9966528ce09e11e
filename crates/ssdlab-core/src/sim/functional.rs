//! Functional mode: the FTL driven without an event queue. Every NAND operation is counted
//! and its array latency (tR, tPROG, loops × erase-loop time) is added to one serial clock;
//! no transfer or command time, no parallelism. Used for preconditioning, lifetime runs
//! and OP sweeps, and as `mode = "functional"`.

use crate::error::{Result, SimError};
use crate::flash::{Cause, NandOp, OpKind, TimingModel};
use crate::ftl::{Ftl, NandSink};
use crate::host::{split, UnitSpan};
use crate::stats::HostCounters;
use crate::MAX_SLOTS_PER_PAGE;
use ssdlab_workload::{HostOp, HostRequest};

/// Serial-time sink: sums array latencies.
pub struct SerialClock {
    pub time_ns: u64,
    read_ns: [u64; 4],
    program_ns: [u64; 4],
    erase_loop_ns: [u64; 4],
}

impl SerialClock {
    pub fn new(t: &TimingModel) -> SerialClock {
        SerialClock {
            time_ns: 0,
            read_ns: t.read_ns,
            program_ns: t.program_ns,
            erase_loop_ns: t.erase_loop_ns,
        }
    }
}

impl NandSink for SerialClock {
    const DEFERRED_ERASE: bool = false;
    #[inline]
    fn issue(&mut self, op: NandOp) {
        let m = op.mode.index();
        self.time_ns += match op.kind {
            OpKind::Read => self.read_ns[m],
            OpKind::Program => self.program_ns[m],
            OpKind::Erase => self.erase_loop_ns[m] * op.loops as u64,
        };
    }
}

/// Collect victims of `plane` until it is back at the background threshold.
#[inline]
fn collect_to_threshold(ftl: &mut Ftl, clock: &mut SerialClock, plane: u32) -> Result<()> {
    while ftl.wants_gc(plane) {
        if !ftl.collect(plane, Cause::Gc, clock)? {
            break;
        }
    }
    Ok(())
}

/// The partial page being filled (the functional mode's write buffer: one page).
struct Packer {
    lpns: [u32; MAX_SLOTS_PER_PAGE],
    versions: [u32; MAX_SLOTS_PER_PAGE],
    n: usize,
    capacity: usize,
}

impl Packer {
    #[inline]
    fn lookup(&self, lpn: u32) -> Option<u32> {
        self.lpns[..self.n]
            .iter()
            .position(|&l| l == lpn)
            .map(|i| self.versions[i])
    }
}

/// Drives one FTL in functional mode.
pub struct FunctionalDriver<'a> {
    pub ftl: &'a mut Ftl,
    pub clock: SerialClock,
    packer: Packer,
    pub host: HostCounters,
}

impl<'a> FunctionalDriver<'a> {
    pub fn new(ftl: &'a mut Ftl) -> FunctionalDriver<'a> {
        let clock = SerialClock::new(&ftl.timing);
        let capacity = ftl.geo.slots_per_page as usize;
        FunctionalDriver {
            ftl,
            clock,
            packer: Packer {
                lpns: [0; MAX_SLOTS_PER_PAGE],
                versions: [0; MAX_SLOTS_PER_PAGE],
                n: 0,
                capacity,
            },
            host: HostCounters::default(),
        }
    }

    /// Write one unit from the host.
    #[inline]
    pub fn write_unit(&mut self, lpn: u32) -> Result<()> {
        let version = self.ftl.new_version(lpn);
        let p = &mut self.packer;
        if p.capacity > 1 {
            if let Some(i) = p.lpns[..p.n].iter().position(|&l| l == lpn) {
                p.versions[i] = version;
                return Ok(());
            }
        }
        p.lpns[p.n] = lpn;
        p.versions[p.n] = version;
        p.n += 1;
        if p.n == p.capacity {
            self.program_packed()?;
        }
        Ok(())
    }

    /// Program the packed units (a full page, or a padded partial one on flush).
    fn program_packed(&mut self) -> Result<()> {
        let n = self.packer.n;
        if n == 0 {
            return Ok(());
        }
        self.packer.n = 0;
        let versions: &[u32] = if self.ftl.integrity.is_some() {
            &self.packer.versions[..n]
        } else {
            &[]
        };
        let plane = match self.ftl.write_host_page(
            &self.packer.lpns[..n],
            versions,
            crate::flash::NONE,
            &mut self.clock,
            |_| true,
        ) {
            Some(p) => p,
            None => {
                // Every plane is down to its GC reserve: collect everywhere, then retry.
                for plane in 0..self.ftl.geo.planes {
                    collect_to_threshold(self.ftl, &mut self.clock, plane)?;
                }
                self.ftl
                    .write_host_page(
                        &self.packer.lpns[..n],
                        versions,
                        crate::flash::NONE,
                        &mut self.clock,
                        |_| true,
                    )
                    .ok_or_else(|| {
                        SimError::DeviceFull(
                            "no plane can take a host page and GC cannot reclaim space".into(),
                        )
                    })?
            }
        };
        collect_to_threshold(self.ftl, &mut self.clock, plane)
    }

    /// Version of `lpn` the device holds (packed page first, then flash); integrity mode.
    pub fn stored_version(&self, lpn: u32) -> Option<u32> {
        self.packer
            .lookup(lpn)
            .or_else(|| self.ftl.flash_version(lpn))
    }

    /// Flush: program the partial page, padded.
    pub fn flush(&mut self) -> Result<()> {
        self.program_packed()
    }

    fn read_span(&mut self, span: UnitSpan) -> Result<()> {
        let packer = &self.packer;
        let out = self.ftl.read_units(
            span.lpns(),
            |l| packer.lookup(l),
            crate::flash::NONE,
            &mut self.clock,
        )?;
        self.host.buffer_read_hits += out.buffer_hits as u64;
        self.host.unmapped_read_units += out.unmapped as u64;
        Ok(())
    }

    /// Apply one host request.
    pub fn submit(&mut self, req: &HostRequest) -> Result<()> {
        let span = split(req, self.ftl.geo.unit_bytes, self.ftl.logical_units())?;
        self.host.count(req.op, req.size_bytes);
        match req.op {
            HostOp::Read => self.read_span(span)?,
            HostOp::Write => {
                // Partly covered units that hold data are read first (read-modify-write).
                for (partial, lpn) in [
                    (span.head_partial, span.first),
                    (
                        span.tail_partial && span.count > 1,
                        span.first + span.count - 1,
                    ),
                ] {
                    if partial
                        && self.packer.lookup(lpn).is_none()
                        && self.ftl.map.lookup(lpn) != crate::flash::NONE
                    {
                        self.host.rmw_reads += 1;
                        self.read_span(UnitSpan {
                            first: lpn,
                            count: 1,
                            head_partial: false,
                            tail_partial: false,
                        })?;
                    }
                }
                self.host.write_units += span.count as u64;
                for lpn in span.lpns() {
                    self.write_unit(lpn)?;
                }
            }
            HostOp::Trim => {
                for lpn in span.lpns() {
                    if let Some(i) = self.packer.lpns[..self.packer.n]
                        .iter()
                        .position(|&l| l == lpn)
                    {
                        let n = self.packer.n;
                        self.packer.lpns.copy_within(i + 1..n, i);
                        self.packer.versions.copy_within(i + 1..n, i);
                        self.packer.n -= 1;
                    }
                    self.ftl.trim(lpn);
                }
            }
            HostOp::Flush => self.flush()?,
        }
        Ok(())
    }
}
