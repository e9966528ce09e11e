//! Host interface: splitting requests into mapping units, the table of requests in flight,
//! and per-flow submission state (NVMe-style: one submission queue per flow).

pub mod command;
pub mod link;

use crate::error::{Result, SimError};
use crate::flash::NONE;
use ssdlab_workload::{Arrival, HostOp, HostRequest};

/// The mapping units a request touches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnitSpan {
    pub first: u32,
    pub count: u32,
    /// The first unit is only partly covered.
    pub head_partial: bool,
    /// The last unit is only partly covered.
    pub tail_partial: bool,
}

impl UnitSpan {
    pub fn lpns(&self) -> std::ops::Range<u32> {
        self.first..self.first + self.count
    }
}

/// Splits requests into mapping units, with the unit's shift and the logical capacity
/// worked out once (the drivers split every request).
#[derive(Clone, Copy, Debug)]
pub struct Splitter {
    unit_bytes: u64,
    /// log2 of the unit when it is a power of two (every preset): shifts instead of two
    /// 64-bit divisions; `u32::MAX` otherwise.
    shift: u32,
    limit_bytes: u64,
    /// The device is zoned: zone commands are valid.
    zoned: bool,
}

impl Splitter {
    pub fn new(unit_bytes: u32, logical_units: u32) -> Splitter {
        let u = unit_bytes as u64;
        Splitter {
            unit_bytes: u,
            shift: if u.is_power_of_two() {
                u.trailing_zeros()
            } else {
                u32::MAX
            },
            limit_bytes: logical_units as u64 * u,
            zoned: false,
        }
    }

    /// The splitter of `ftl`'s device: its mapping unit and logical capacity; zone
    /// commands are valid on a zoned device.
    pub fn for_device(ftl: &crate::ftl::Ftl) -> Splitter {
        Splitter::new(ftl.geometry().unit_bytes, ftl.logical_units()).zoned(ftl.zones().is_some())
    }

    /// The mapping unit in bytes.
    pub fn unit_bytes(&self) -> u64 {
        self.unit_bytes
    }

    /// On a zoned device zone commands are valid.
    pub fn zoned(mut self, zoned: bool) -> Splitter {
        self.zoned = zoned;
        self
    }

    /// The units `req` touches; errors if it leaves the logical space.
    #[inline(always)]
    pub fn split(&self, req: &HostRequest) -> Result<UnitSpan> {
        let u = self.unit_bytes;
        if req.op.is_zone_command() && !self.zoned {
            return Err(SimError::config(
                "workload",
                format!(
                    "a {} request at byte {} needs a zoned device ([device.zns])",
                    req.op.name(),
                    req.offset_bytes
                ),
            ));
        }
        if !req.op.addresses_units() || req.size_bytes == 0 {
            return Ok(UnitSpan {
                first: 0,
                count: 0,
                head_partial: false,
                tail_partial: false,
            });
        }
        let end = req.offset_bytes.saturating_add(req.size_bytes);
        if end > self.limit_bytes {
            return Err(SimError::config(
                "workload",
                format!(
                    "request {:?} at byte {} of {} bytes ends beyond the logical capacity {} bytes",
                    req.op, req.offset_bytes, req.size_bytes, self.limit_bytes
                ),
            ));
        }
        let (first, last, head_off, tail_off) = if self.shift != u32::MAX {
            let s = self.shift;
            let m = u - 1;
            (
                req.offset_bytes >> s,
                (end - 1) >> s,
                req.offset_bytes & m,
                end & m,
            )
        } else {
            (
                req.offset_bytes / u,
                (end - 1) / u,
                req.offset_bytes % u,
                end % u,
            )
        };
        Ok(UnitSpan {
            first: first as u32,
            count: (last - first + 1) as u32,
            head_partial: head_off != 0 || (first == last && req.size_bytes < u),
            tail_partial: tail_off != 0,
        })
    }
}

/// Where a request in flight stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Waiting for NAND reads (a read, or the read half of a read-modify-write).
    Reading,
    /// A write waiting for space in the write buffer.
    AwaitingBuffer,
    /// A flush waiting for the buffer to drain.
    AwaitingDrain,
    /// Done with the device, completion scheduled.
    Completing,
}

#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub flow: u16,
    pub op: HostOp,
    pub stage: Stage,
    pub submit_ns: u64,
    pub offset_bytes: u64,
    pub bytes: u64,
    /// Ground-truth journal label of the request (spec 05), when the workload has one.
    pub journal: Option<bool>,
    pub span: UnitSpan,
    /// NAND operations of the current plan stage still outstanding (writes waiting for
    /// buffer space: units already inserted).
    pub pending_ops: u32,
    /// Stage of a staged read plan the request is in, and operations parked for later stages.
    pub plan_stage: u8,
    pub parked_ops: u32,
    /// The host interface's command this request is (`NONE` without an interface).
    pub cmd: u32,
    /// The submitter's tag ([`HostRequest::tag`]).
    pub tag: u32,
    /// A write's lane ([`command::Command::Write`]).
    pub lane: u8,
    /// Why the request failed, if it did.
    pub error: Option<crate::ftl::zones::ZoneError>,
}

impl Request {
    /// Request `r` of flow `flow` covering `span`, at `stage`, submitted at `submit_ns`;
    /// `cmd` is its host-interface command (`NONE` without an interface).
    pub fn new(
        flow: u16,
        r: &HostRequest,
        span: UnitSpan,
        stage: Stage,
        submit_ns: u64,
        cmd: u32,
    ) -> Request {
        Request {
            flow,
            op: r.op,
            stage,
            submit_ns,
            offset_bytes: r.offset_bytes,
            bytes: r.size_bytes,
            journal: r.journal,
            span,
            pending_ops: 0,
            plan_stage: 0,
            parked_ops: 0,
            cmd,
            tag: r.tag,
            lane: 0,
            error: None,
        }
    }
}

/// Requests in flight, in a slab of reusable slots (no allocation per request once warm).
#[derive(Default)]
pub struct RequestTable {
    slots: Vec<Request>,
    free: Vec<u32>,
    pub in_flight: u32,
}

impl RequestTable {
    pub fn insert(&mut self, r: Request) -> u32 {
        self.in_flight += 1;
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = r;
                i
            }
            None => {
                self.slots.push(r);
                (self.slots.len() - 1) as u32
            }
        }
    }

    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut Request {
        &mut self.slots[id as usize]
    }

    #[inline]
    pub fn get(&self, id: u32) -> &Request {
        &self.slots[id as usize]
    }

    /// The requests in the table (figures taken mid-phase: not for hot paths).
    pub fn live(&self) -> impl Iterator<Item = &Request> {
        let mut free = vec![false; self.slots.len()];
        for &i in &self.free {
            free[i as usize] = true;
        }
        self.slots
            .iter()
            .zip(free)
            .filter(|(_, f)| !f)
            .map(|(r, _)| r)
    }

    pub fn remove(&mut self, id: u32) -> Request {
        debug_assert!(id != NONE);
        self.in_flight -= 1;
        self.free.push(id);
        self.slots[id as usize]
    }
}

/// Submission state of one flow.
pub struct FlowState {
    pub arrival: Arrival,
    pub in_flight: u32,
    /// The source has no more requests (or the run's duration has passed).
    pub exhausted: bool,
    /// Open loop: the next request, already read, waiting for its arrival time (paced:
    /// a request held until its not-before time).
    pub next: Option<HostRequest>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(req: &HostRequest, unit_bytes: u32, logical_units: u32) -> Result<UnitSpan> {
        Splitter::new(unit_bytes, logical_units).split(req)
    }

    fn req(off: u64, size: u64) -> HostRequest {
        HostRequest {
            tag: 0,
            placement_id: 0,
            arrival_ns: 0,
            op: HostOp::Write,
            offset_bytes: off,
            size_bytes: size,
            journal: None,
        }
    }

    #[test]
    fn splits_aligned_and_unaligned() {
        assert_eq!(
            split(&req(8192, 4096), 4096, 10).unwrap(),
            UnitSpan {
                first: 2,
                count: 1,
                head_partial: false,
                tail_partial: false
            }
        );
        assert_eq!(
            split(&req(1000, 8192), 4096, 10).unwrap(),
            UnitSpan {
                first: 0,
                count: 3,
                head_partial: true,
                tail_partial: true
            }
        );
        assert_eq!(
            split(&req(4096, 512), 4096, 10).unwrap(),
            UnitSpan {
                first: 1,
                count: 1,
                head_partial: true,
                tail_partial: true
            }
        );
        let e = split(&req(36864, 8192), 4096, 10).unwrap_err().to_string();
        assert!(e.contains("beyond the logical capacity 40960"), "{e}");
    }

    /// A unit size that is not a power of two takes the dividing path, with the same
    /// rules: bytes 1000..9192 over 3000-byte units touch units 0..=3, both ends partly.
    #[test]
    fn splits_units_that_are_not_powers_of_two() {
        assert_eq!(
            split(&req(1000, 8192), 3000, 10).unwrap(),
            UnitSpan {
                first: 0,
                count: 4,
                head_partial: true,
                tail_partial: true
            }
        );
        assert_eq!(
            split(&req(6000, 3000), 3000, 10).unwrap(),
            UnitSpan {
                first: 2,
                count: 1,
                head_partial: false,
                tail_partial: false
            }
        );
        let e = split(&req(27000, 3001), 3000, 10).unwrap_err().to_string();
        assert!(e.contains("beyond the logical capacity 30000"), "{e}");
    }
}
