//! Requests drawn from a flow's source before their submission: in batches where the
//! source allows it ([`RequestSource::next_batch`]: one dynamic call for many requests),
//! and, on large devices, far enough ahead that the driver can prefetch the mapping
//! entries they will touch (a random lookup in a table of hundreds of MiB is a DRAM
//! miss). Sources do not depend on the simulation, and a source that counts anything
//! while drawing draws one request per call, so drawing early changes nothing; a source
//! error is raised when the request in its place would have been submitted.

use crate::ftl::Ftl;
use ssdlab_workload::{HostOp, HostRequest, RequestSource, WorkloadError};

/// Requests kept drawn ahead when prefetching (0 otherwise).
const AHEAD: usize = 16;
/// Mapping entries prefetched together: a group's misses (and their page walks) overlap
/// instead of each stalling the pipeline on its own.
const GROUP: usize = 8;
/// Requests drawn per batch at most.
const BATCH: usize = 64;

pub struct Lookahead {
    source: Box<dyn RequestSource>,
    /// Drawn requests `buf[pos..len]`, oldest first.
    buf: Box<[HostRequest; BATCH]>,
    pos: usize,
    len: usize,
    /// `buf[..prefetched]` have had their mapping entries asked for.
    prefetched: usize,
    /// Requests to keep drawn ahead: `AHEAD`, or 0 (no prefetching).
    depth: usize,
    exhausted: bool,
    error: Option<WorkloadError>,
}

impl Lookahead {
    /// Draw ahead of `source` when `prefetch` (see [`Ftl::prefetches`]), on a thread of
    /// its own when the source asks for one and `*threads` > 0 (one is then used up; see
    /// [`crate::Simulation::workload_threads`]).
    pub fn new(source: Box<dyn RequestSource>, prefetch: bool, threads: &mut usize) -> Lookahead {
        let source = match *threads {
            0 => source,
            _ => match ssdlab_workload::threaded::Threaded::spawn(source) {
                Ok(t) => {
                    *threads -= 1;
                    Box::new(t)
                }
                Err(source) => source,
            },
        };
        let empty = HostRequest {
            tag: 0,
            placement_id: 0,
            arrival_ns: 0,
            op: HostOp::Write,
            offset_bytes: 0,
            size_bytes: 0,
            journal: None,
        };
        Lookahead {
            source,
            buf: Box::new([empty; BATCH]),
            pos: 0,
            len: 0,
            prefetched: 0,
            depth: if prefetch { AHEAD } else { 0 },
            exhausted: false,
            error: None,
        }
    }

    /// A request of this source failed ([`RequestSource::request_failed`]).
    pub fn request_failed(&mut self, r: &HostRequest, status: &str) -> Result<(), WorkloadError> {
        self.source.request_failed(r, status)
    }

    /// The next request into `out`; false when the source is exhausted (see
    /// [`Lookahead::next_ref`]).
    #[inline(always)]
    pub fn next_into(&mut self, out: &mut HostRequest, ftl: &Ftl) -> Result<bool, WorkloadError> {
        Ok(match self.next_ref(ftl)? {
            Some(r) => {
                *out = *r;
                true
            }
            None => false,
        })
    }

    /// The next request, in place; `None` when the source is exhausted. When drawing
    /// ahead, the mapping entry of the request `AHEAD` places on is prefetched.
    #[inline(always)]
    pub fn next_ref(&mut self, ftl: &Ftl) -> Result<Option<&HostRequest>, WorkloadError> {
        if self.len - self.pos <= self.depth && !self.exhausted {
            self.refill();
        }
        if self.pos == self.len {
            return match self.error.take() {
                Some(e) => Err(e),
                None => Ok(None),
            };
        }
        self.pos += 1;
        if self.depth > 0 {
            if self.prefetched + GROUP <= self.pos + self.depth {
                self.prefetch_group(ftl);
            }
            // The request after this one: its mapping entry has arrived by now.
            if let Some(next) = self.buf[..self.len].get(self.pos) {
                if next.op == HostOp::Read {
                    ftl.media().prefetch_read_block(next.offset_bytes);
                }
            }
        }
        Ok(Some(&self.buf[self.pos - 1]))
    }

    /// Ask for the mapping entries of the next `GROUP` drawn requests not asked for yet.
    #[inline(always)]
    fn prefetch_group(&mut self, ftl: &Ftl) {
        let start = self.prefetched.max(self.pos);
        let end = (start + GROUP).min(self.len);
        for r in &self.buf[start..end] {
            ftl.media().prefetch_offset(r.offset_bytes);
        }
        self.prefetched = end;
    }

    /// Draw until `depth + 1` requests wait (or the source ends), in batches where the
    /// source allows.
    #[inline(never)]
    fn refill(&mut self) {
        self.buf.copy_within(self.pos..self.len, 0);
        self.len -= self.pos;
        self.prefetched = self.prefetched.saturating_sub(self.pos);
        self.pos = 0;
        while !self.exhausted && self.len <= self.depth {
            let (n, err) = self.source.next_batch(&mut self.buf[self.len..]);
            self.len += n;
            if n == 0 || err.is_some() {
                self.exhausted = true;
                self.error = err;
            }
        }
    }

    /// The next request, `None` when the source is exhausted.
    #[inline]
    pub fn next(&mut self, ftl: &Ftl) -> Result<Option<HostRequest>, WorkloadError> {
        let mut r = self.buf[0];
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
                tag: 0,
                placement_id: 0,
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
        let mut l = Lookahead::new(Box::new(Failing { next: 0, good: 11 }), prefetch, &mut 0);
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
