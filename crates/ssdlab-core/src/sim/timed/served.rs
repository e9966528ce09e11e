//! A timed phase driven from outside, event by event (`ssdlab serve`): a server submits
//! its clients' requests at the current simulated time, steps the events, and replies to
//! the completions it drains. [`TimedSim::run`] is the same loop driven by a workload.

use super::{Completion, Cx, TimedOutcome, TimedSim};
use crate::error::Result;
use crate::ftl::Ftl;
use crate::stats::HostCounters;
use ssdlab_workload::HostRequest;

impl TimedSim<'_> {
    /// Simulated time: the time of the last event handled (or of [`TimedSim::advance_to`]).
    pub fn now_ns(&self) -> u64 {
        self.q.now_ns()
    }

    /// Time of the next event, if any.
    pub fn next_event_ns(&self) -> Option<u64> {
        self.q.peek_time_ns()
    }

    /// Move the clock to `time_ns` (no later than the next event): a request submitted
    /// now arrives then (real-time serving).
    pub fn advance_to(&mut self, time_ns: u64) {
        debug_assert!(self.next_event_ns().is_none_or(|t| t >= time_ns));
        self.q.advance_to(time_ns);
    }

    /// A phase driven from outside: keep every completion for
    /// [`TimedSim::drain_completions`]; its end is a power cut or a stop (so a
    /// power-loss-protected device programs its DRAM then, even after it failed).
    pub fn serve_externally(&mut self) {
        self.served = true;
        self.front.collect_completions();
    }

    /// Handle the next event; false when there is none.
    pub fn step(&mut self) -> Result<bool> {
        let Some((now, ev)) = self.q.pop() else {
            return Ok(false);
        };
        if now > self.next_sample_ns() {
            if let Some(s) = self.series.as_mut() {
                s.sample(now, &self.front, self.ftl, self.susp.summary())?;
            }
        }
        self.handle(ev)?;
        if self.ftl.lifetime_stamp_pending() {
            self.ftl
                .stamp_lifetime("serve", now, self.front.counters.write_units);
        }
        Ok(true)
    }

    /// Submit `r` (from outside the workload) now, on flow 0.
    pub fn submit_now(&mut self, r: HostRequest) -> Result<()> {
        let mut cx = cx!(self);
        self.front.submit_external(r, &mut cx)?;
        self.dispatch_outbox()
    }

    /// Move the completions since the last call into `into`, in completion order.
    pub fn drain_completions(&mut self, into: &mut Vec<Completion>) {
        self.front.drain_completions(into);
    }

    /// Requests submitted and not yet complete.
    pub fn in_flight(&self) -> u32 {
        self.front.in_flight()
    }

    /// The FTL (the stored data, the mapping).
    pub fn ftl(&self) -> &Ftl {
        self.ftl
    }

    /// The FTL, mutably (a server puts a write's payload in its data store).
    pub fn ftl_mut(&mut self) -> &mut Ftl {
        self.ftl
    }

    /// Version of `lpn` the write buffer holds (waiting or in flight), if any.
    pub fn buffered(&self, lpn: u32) -> Option<crate::base::Version> {
        self.front.buffered(lpn)
    }

    /// Units the write buffer holds (waiting for a page, or in a program not complete).
    pub fn buffered_units(&self) -> u32 {
        self.front.buffer_units()
    }

    /// The host counters if power were cut now: the requests in flight failed.
    pub fn counters_at_cut(&self) -> HostCounters {
        self.front.counters_at_cut()
    }

    /// The phase's figures so far (the phase goes on; no settling).
    pub fn outcome_now(&self) -> TimedOutcome {
        let (host, latency, per_flow, sim_time_ns, journal_latency) = self.front.snapshot();
        TimedOutcome {
            host,
            latency,
            per_flow,
            by_origin: self.front.by_origin_now(),
            sim_time_ns,
            events: self.q.scheduled_count(),
            die_busy_ns: self.dies.busy_ns(),
            channel_busy_ns: self.dies.channels.busy_ns().to_vec(),
            host_program_batches: self.dies.sched.host_program_batches,
            host_programs: self.dies.sched.host_programs,
            gc_batches: self.dies.sched.gc_batches(),
            completions: Vec::new(),
            suspend: self.susp.summary().clone(),
            erases: Vec::new(),
            worn_out: self.ftl.worn_out(),
            series: self
                .series
                .as_ref()
                .map(|s| s.rows.clone())
                .unwrap_or_default(),
            journal_latency,
            host_interface: self.front.interface_summary(self.cfg, sim_time_ns),
            audit: self.audit_now(false),
        }
    }
}
