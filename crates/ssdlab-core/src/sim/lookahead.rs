//! Requests drawn from a flow's source before their submission, so the driver can
//! prefetch the mapping entries they will touch (large devices: a random lookup in a
//! table of hundreds of MiB is a DRAM miss). Sources do not depend on the simulation, so
//! drawing early changes nothing; a source error is raised when the request in its place
//! would have been submitted.

use crate::ftl::Ftl;
use ssdlab_workload::{HostOp, HostRequest, RequestSource, WorkloadError};

/// Requests kept drawn ahead when prefetching (0 otherwise).
const AHEAD: usize = 4;
const RING: usize = 8;

pub struct Lookahead {
    source: Box<dyn RequestSource>,
    ring: [HostRequest; RING],
    head: usize,
    len: usize,
    /// Requests to keep drawn ahead: `AHEAD`, or 0 (no prefetching: plain pass-through).
    depth: usize,
    exhausted: bool,
    error: Option<WorkloadError>,
}

impl Lookahead {
    /// Draw ahead of `source` when `prefetch` (see [`Ftl::prefetches`]).
    pub fn new(source: Box<dyn RequestSource>, prefetch: bool) -> Lookahead {
        let empty = HostRequest {
            arrival_ns: 0,
            op: HostOp::Write,
            offset_bytes: 0,
            size_bytes: 0,
            journal: None,
        };
        Lookahead {
            source,
            ring: [empty; RING],
            head: 0,
            len: 0,
            depth: if prefetch { AHEAD } else { 0 },
            exhausted: false,
            error: None,
        }
    }

    /// The next request into `out`; false when the source is exhausted. When drawing
    /// ahead, the mapping entry of the request `AHEAD` places on is prefetched.
    #[inline]
    pub fn next_into(&mut self, out: &mut HostRequest, ftl: &Ftl) -> Result<bool, WorkloadError> {
        if self.depth == 0 {
            return self.source.next_into(out);
        }
        while !self.exhausted && self.len <= self.depth {
            let slot = &mut self.ring[(self.head + self.len) % RING];
            match self.source.next_into(slot) {
                Ok(true) => {
                    ftl.prefetch_offset(slot.offset_bytes);
                    self.len += 1;
                }
                Ok(false) => self.exhausted = true,
                Err(e) => {
                    self.exhausted = true;
                    self.error = Some(e);
                }
            }
        }
        if self.len == 0 {
            return match self.error.take() {
                Some(e) => Err(e),
                None => Ok(false),
            };
        }
        *out = self.ring[self.head];
        self.head = (self.head + 1) % RING;
        self.len -= 1;
        Ok(true)
    }

    /// The next request, `None` when the source is exhausted.
    #[inline]
    pub fn next(&mut self, ftl: &Ftl) -> Result<Option<HostRequest>, WorkloadError> {
        let mut r = self.ring[0];
        Ok(self.next_into(&mut r, ftl)?.then_some(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields requests at units 0, 1, …, `good - 1`, then a parse error.
    struct Failing {
        next: u64,
        good: u64,
    }

    impl RequestSource for Failing {
        fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
            if self.next == self.good {
                return Err(WorkloadError::Parse {
                    file: "t".into(),
                    line: self.next + 1,
                    text: String::new(),
                    reason: "bad".into(),
                });
            }
            self.next += 1;
            Ok(Some(HostRequest {
                arrival_ns: 0,
                op: HostOp::Write,
                offset_bytes: (self.next - 1) * 4096,
                size_bytes: 4096,
                journal: None,
            }))
        }
    }

    fn drain(prefetch: bool) -> (Vec<u64>, String) {
        let ftl = crate::testutil::tiny_ftl();
        let mut l = Lookahead::new(Box::new(Failing { next: 0, good: 11 }), prefetch);
        let mut offsets = Vec::new();
        loop {
            match l.next(&ftl) {
                Ok(Some(r)) => offsets.push(r.offset_bytes / 4096),
                Ok(None) => return (offsets, "end".into()),
                Err(e) => return (offsets, e.to_string()),
            }
        }
    }

    #[test]
    fn drawing_ahead_gives_the_same_requests_and_the_error_in_its_place() {
        let (plain, plain_end) = drain(false);
        let (ahead, ahead_end) = drain(true);
        assert_eq!(plain, (0..11).collect::<Vec<_>>());
        assert_eq!(ahead, plain);
        assert_eq!(ahead_end, plain_end);
        assert!(ahead_end.contains("t:12"), "{ahead_end}");
    }
}
