//! The time series of a timed run: every `output.timeseries_interval_ns` of simulated
//! time, the rates of the interval just ended and the device state at its end (free blocks,
//! buffer occupancy), so GC storms and the approach to steady state can be seen.
//!
//! An idle gap (no event for many intervals: a trace's pause, a very low open-loop rate)
//! would be rows of zeros, one per interval: a gap of more than [`IDLE_ROWS`] intervals
//! is written as its first empty row and the empty row of the last boundary before the
//! next event (the `time_ns` column says how long it was), so a pause of years costs two
//! rows, not billions. The series holds at most [`MAX_ROWS`] rows; a run that would need
//! more ends with an error naming `output.timeseries_interval_ns`.

use super::host::HostFrontEnd;
use crate::error::{Result, SimError};
use crate::flash::OpKind;
use crate::ftl::Ftl;
use crate::stats::{SuspendSummary, TimeSeriesRow};

/// Idle gaps longer than this many intervals are written as two rows (module docs).
pub const IDLE_ROWS: u64 = 1000;

/// Most rows a series may hold (≈ 100 bytes each in memory).
pub const MAX_ROWS: usize = 5_000_000;

/// Cumulative counts at the last boundary.
#[derive(Clone, Copy, Default)]
struct Mark {
    reads: u64,
    writes: u64,
    flushes: u64,
    read_bytes: u64,
    write_bytes: u64,
    write_units: u64,
    programs: u64,
    gc_erases: u64,
    suspensions: u64,
}

pub(super) struct Sampler {
    interval_ns: u64,
    next_ns: u64,
    last: Mark,
    pub rows: Vec<TimeSeriesRow>,
    /// [`MAX_ROWS`] (smaller in tests).
    max_rows: usize,
}

impl Sampler {
    pub fn new(
        interval_ns: u64,
        start_ns: u64,
        front: &HostFrontEnd,
        ftl: &Ftl,
        susp: &SuspendSummary,
    ) -> Sampler {
        Sampler {
            interval_ns,
            next_ns: start_ns + interval_ns,
            last: Self::mark(front, ftl, susp),
            rows: Vec::new(),
            max_rows: MAX_ROWS,
        }
    }

    fn mark(front: &HostFrontEnd, ftl: &Ftl, susp: &SuspendSummary) -> Mark {
        let d = front.completed;
        let n = &ftl.counters.nand;
        Mark {
            reads: d.reads,
            writes: d.writes,
            flushes: d.flushes,
            read_bytes: d.read_bytes,
            write_bytes: d.write_bytes,
            write_units: d.write_units,
            programs: n.total(OpKind::Program),
            gc_erases: n.get(OpKind::Erase, crate::flash::Cause::Gc),
            suspensions: susp.erase_suspensions,
        }
    }

    /// When the next sample is due: an event at or after it samples first, with the state
    /// before it.
    #[inline]
    pub fn next_ns(&self) -> u64 {
        self.next_ns
    }

    /// Emit the rows of every boundary up to `now`; the first carries the interval's
    /// activity, later ones (an idle gap) are empty, and a gap of more than
    /// [`IDLE_ROWS`] intervals is written as its first empty row and the last boundary's.
    pub fn sample(
        &mut self,
        now: u64,
        front: &HostFrontEnd,
        ftl: &Ftl,
        susp: &SuspendSummary,
    ) -> Result<()> {
        let m = Self::mark(front, ftl, susp);
        let secs = self.interval_ns as f64 / 1e9;
        let spp = ftl.geo.slots_per_page as f64;
        let free_min = (0..ftl.geo.planes)
            .map(|p| ftl.free_blocks(ftl.data_region().id(), p))
            .min()
            .unwrap_or(0);
        let mut emitted = 0u64;
        while self.next_ns <= now {
            if emitted == 2 && (now - self.next_ns) / self.interval_ns >= IDLE_ROWS {
                // After the activity row and one empty row, the rest of a long gap is
                // empty: its last boundary only.
                self.next_ns += (now - self.next_ns) / self.interval_ns * self.interval_ns;
            }
            if self.rows.len() >= self.max_rows {
                return Err(SimError::config(
                    "output.timeseries_interval_ns",
                    format!(
                        "the time series would need more than {} rows (simulated time reached {:.3} s at an interval of {} ns): raise the interval, or set it to 0 for no time series",
                        self.max_rows,
                        now as f64 / 1e9,
                        self.interval_ns
                    ),
                ));
            }
            let l = self.last;
            let units = (m.write_units - l.write_units) as f64;
            self.rows.push(TimeSeriesRow {
                time_ns: self.next_ns,
                read_iops: (m.reads - l.reads) as f64 / secs,
                write_iops: (m.writes - l.writes) as f64 / secs,
                flush_iops: (m.flushes - l.flushes) as f64 / secs,
                read_mb_per_s: (m.read_bytes - l.read_bytes) as f64 / 1e6 / secs,
                write_mb_per_s: (m.write_bytes - l.write_bytes) as f64 / 1e6 / secs,
                waf: if units > 0.0 {
                    (m.programs - l.programs) as f64 * spp / units
                } else {
                    0.0
                },
                gc_erases: m.gc_erases - l.gc_erases,
                free_blocks_min: free_min,
                buffer_units: front.buffer_units(),
                buffer_waiters: front.buffer_waiters(),
                erase_suspensions: m.suspensions - l.suspensions,
            });
            self.last = m;
            self.next_ns += self.interval_ns;
            emitted += 1;
        }
        Ok(())
    }

    #[cfg(test)]
    pub fn set_max_rows(&mut self, n: usize) {
        self.max_rows = n;
    }
}
