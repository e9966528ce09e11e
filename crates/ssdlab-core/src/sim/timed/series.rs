//! The time series of a timed run: every `output.timeseries_interval_ns` of simulated
//! time, the rates of the interval just ended and the device state at its end (free blocks,
//! buffer occupancy), so GC storms and the approach to steady state can be seen. A row at
//! `time_ns` counts what happened after the previous row's time, up to and including its
//! own; the last row ends with the phase's last completion (a partial interval, its rates
//! over its real length), so the rates times the intervals sum to the phase's totals.
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
        let d = front.completed();
        let n = ftl.nand_counts();
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

    /// When the next sample is due: an event after it samples first, with the state
    /// before it (the events of the boundary's own instant belong to its row).
    #[inline]
    pub fn next_ns(&self) -> u64 {
        self.next_ns
    }

    /// Emit the rows of every boundary before `now`; the first carries the interval's
    /// activity, later ones (an idle gap) are empty, and a gap of more than
    /// [`IDLE_ROWS`] intervals is written as its first empty row and the last boundary's.
    pub fn sample(
        &mut self,
        now: u64,
        front: &HostFrontEnd,
        ftl: &Ftl,
        susp: &SuspendSummary,
    ) -> Result<()> {
        self.rows_until(now, false, front, ftl, susp)
    }

    /// End the series with the phase at `end_ns` (its last completion; no event after it
    /// counts): the rows of every boundary up to it, then the partial interval from the
    /// last boundary to `end_ns`, its rates over its real length (left out when empty
    /// and of no length).
    pub fn close(
        &mut self,
        end_ns: u64,
        front: &HostFrontEnd,
        ftl: &Ftl,
        susp: &SuspendSummary,
    ) -> Result<()> {
        let start = self.next_ns - self.interval_ns;
        let end_ns = end_ns.max(start);
        self.rows_until(end_ns, true, front, ftl, susp)?;
        let start = self.next_ns - self.interval_ns;
        let m = Self::mark(front, ftl, susp);
        let l = self.last;
        let quiet = (m.reads, m.writes, m.flushes) == (l.reads, l.writes, l.flushes);
        if end_ns > start || !quiet {
            let row = self.row(end_ns, (end_ns - start).max(1), front, ftl, m);
            self.rows.push(row);
            self.last = m;
        }
        Ok(())
    }

    /// Emit the rows of every boundary before `now` (`inclusive`: up to and including it).
    fn rows_until(
        &mut self,
        now: u64,
        inclusive: bool,
        front: &HostFrontEnd,
        ftl: &Ftl,
        susp: &SuspendSummary,
    ) -> Result<()> {
        let m = Self::mark(front, ftl, susp);
        let due = |next: u64| next < now || (inclusive && next == now);
        let mut emitted = 0u64;
        while due(self.next_ns) {
            if emitted == 2 && (now - 1 - self.next_ns) / self.interval_ns >= IDLE_ROWS {
                // After the activity row and one empty row, the rest of a long gap is
                // empty: its last boundary before `now` only.
                self.next_ns += (now - 1 - self.next_ns) / self.interval_ns * self.interval_ns;
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
            let row = self.row(self.next_ns, self.interval_ns, front, ftl, m);
            self.rows.push(row);
            self.last = m;
            self.next_ns += self.interval_ns;
            emitted += 1;
        }
        Ok(())
    }

    /// The row ending at `time_ns` of an interval `len_ns` long, counts `m` now.
    fn row(
        &self,
        time_ns: u64,
        len_ns: u64,
        front: &HostFrontEnd,
        ftl: &Ftl,
        m: Mark,
    ) -> TimeSeriesRow {
        let secs = len_ns as f64 / 1e9;
        let spp = ftl.geometry().slots_per_page as f64;
        let free_min = (0..ftl.geometry().planes)
            .map(|p| {
                ftl.media()
                    .free_blocks(ftl.media().data_region().id(), crate::ids::PlaneId(p))
            })
            .min()
            .unwrap_or(0);
        let l = self.last;
        let units = (m.write_units - l.write_units) as f64;
        TimeSeriesRow {
            time_ns,
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
        }
    }

    #[cfg(test)]
    pub fn set_max_rows(&mut self, n: usize) {
        self.max_rows = n;
    }
}
