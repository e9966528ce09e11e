//! Timed mode: the discrete-event simulation.
//!
//! Three components share one event queue, each behind its own type:
//!
//! * `host::HostFrontEnd` — flows and their requests, the DRAM write buffer, flushes,
//!   completions and latency statistics;
//! * `die::DieExecutor` — per-die queues (the scheduler), channels, and the timing of
//!   reads, programs and erases;
//! * `suspend::Suspender` — erase (and program) suspension: work position, suspend
//!   points, serving reads while suspended, resume (spec 01, docs/erase-suspend.md).
//!
//! [`TimedSim`] routes events between them and the FTL. Every NAND operation the FTL
//! issues goes through `QueueSink` onto its die's queue (or, for a later stage of a
//! staged read, into the outbox until the earlier stage completes); when a die finishes a
//! batch, the FTL is told of each operation ([`Ftl::on_complete`]) and then the owner is
//! served: a host read's request, a host program's buffer page. Background work (GC, wear
//! leveling) is the FTL's; the scheduler shares each die between GC and host programs at
//! the ratio the FTL names, and when the host has been idle for `ftl.idle_gc_after_ns`
//! the sim tells the FTL (idle-time GC).

use super::Progress;
use crate::config::{Config, Derived};
use crate::engine::EventQueue;
use crate::error::{Result, SimError};
use crate::flash::{Cause, NandOp, OpKind, Owner};
use crate::ftl::{Ftl, NandSink};
use crate::scheduler::Scheduler;
use crate::stats::{EraseRecord, HostCounters, Latency, SuspendSummary};
use ssdlab_workload::{HostOp, Workload};

mod die;
mod host;
mod interface;
pub use interface::{FlowInterface, HostInterfaceSummary, LinkDirection};
mod series;
mod suspend;

use die::DieExecutor;
use host::HostFrontEnd;
use suspend::Suspender;

#[derive(Clone, Copy, Debug)]
enum Event {
    /// Open loop: the flow's next request arrives.
    Arrival { flow: u16 },
    /// The die finished sensing a read; the data now goes over the channel.
    Sensed { die: u16 },
    /// The die finished its batch, or the penalty of a suspension (ignored unless `gen` is
    /// the die's current generation).
    DieDone { die: u16, gen: u32 },
    /// The die's erase or program reaches the position where it suspends.
    Suspend { die: u16, gen: u32 },
    /// A request that needs no more NAND work completes.
    Complete { req: u32 },
    /// The host has been idle since the timer was set (ignored unless `epoch` is current).
    Idle { epoch: u32 },
    /// A host-interface link direction's earliest transfer finishes (ignored unless `gen`
    /// is the direction's current generation).
    Link { dir: u8, gen: u32 },
    /// The controller finished processing host-interface command `cmd` (a lane: the
    /// processor takes commands in order).
    Processed { cmd: u32 },
    /// Host-interface command `cmd`'s completion message arrived at the host.
    Completion { cmd: u32 },
}

/// Event-queue lanes (FIFOs beside the heap, `engine`): a request's completion after the
/// buffer access, and a read batch's end of sensing, come a fixed delay after they are
/// scheduled (per cell mode for sensing; a shorter one than the lane's last goes to the
/// heap).
const LANE_COMPLETE: usize = 0;
const LANE_SENSED: usize = 1;
/// The host interface's processor finishes commands in order.
const LANE_PROCESSED: usize = 2;
/// The host interface's link events: mostly in time order (a data transfer's end, a
/// completion message's arrival: messages arrive in order), the others go to the heap.
const LANE_LINK: usize = 3;

/// What the FTL's operations left for the sim to act on.
#[derive(Default)]
struct Outbox {
    /// Idle dies with new work: start them.
    idle: Vec<u32>,
    /// Busy dies that just got a host (or mapping) read: ask the suspend policy.
    read_waiting: Vec<u32>,
    /// Busy dies that just got a host program, when programs preempt erases (the suspend
    /// policy's `programs_preempt`; otherwise always empty): ask the suspend policy.
    program_waiting: Vec<u32>,
    /// Whether host programs are reported in `program_waiting`.
    programs_preempt: bool,
    /// Operations of a later plan stage, with their request, in issue order.
    parked: Vec<(u32, NandOp)>,
}

/// Queues the FTL's operations on their dies and notes which dies need attention.
struct QueueSink<'s> {
    sched: &'s mut Scheduler,
    out: &'s mut Outbox,
    /// Die of a block.
    geo: &'s crate::config::Geometry,
    /// The simulated time of the event being handled.
    now_ns: u64,
}

impl QueueSink<'_> {
    #[inline(always)]
    fn enqueue(&mut self, op: NandOp) {
        let die = self.geo.die_of_block(op.block);
        if self.sched.enqueue(die, op) {
            self.out.idle.push(die);
        } else if op.kind == OpKind::Read && matches!(op.cause, Cause::Host | Cause::Mapping) {
            self.out.read_waiting.push(die);
        } else if self.out.programs_preempt && op.kind == OpKind::Program && op.cause == Cause::Host
        {
            self.out.program_waiting.push(die);
        }
    }
}

impl NandSink for QueueSink<'_> {
    const IMMEDIATE: bool = false;
    #[inline(always)]
    fn now_ns(&self) -> u64 {
        self.now_ns
    }

    #[inline(always)]
    fn issue(&mut self, op: NandOp) {
        if op.stage > 0 {
            let req = match op.owner {
                Owner::HostRead { req } | Owner::Mapping { req } => req,
                _ => crate::flash::NONE,
            };
            self.out.parked.push((req, op));
        } else {
            self.enqueue(op);
        }
    }
}

/// The state the components borrow while handling one event.
struct Cx<'a> {
    ftl: &'a mut Ftl,
    q: &'a mut EventQueue<Event>,
    dies: &'a mut DieExecutor,
    out: &'a mut Outbox,
}

impl Cx<'_> {
    /// The FTL and a sink onto the dies, borrowed together.
    fn parts(&mut self) -> (&mut Ftl, QueueSink<'_>) {
        (
            &mut *self.ftl,
            QueueSink {
                geo: &self.dies.geo,
                sched: &mut self.dies.sched,
                out: self.out,
                now_ns: self.q.now_ns(),
            },
        )
    }

    fn sink(&mut self) -> QueueSink<'_> {
        self.parts().1
    }

    fn now(&self) -> u64 {
        self.q.now_ns()
    }
}

/// One completed request (kept only when tracing is on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub flow: u16,
    pub op: HostOp,
    pub submit_ns: u64,
    pub complete_ns: u64,
    pub offset_bytes: u64,
    pub size_bytes: u64,
    /// The request's [`ssdlab_workload::HostRequest::tag`].
    pub tag: u32,
    /// Why the request failed (a zone or placement error), if it did. A zone append's
    /// `offset_bytes` is where it landed.
    pub error: Option<crate::ftl::zones::ZoneError>,
    /// The zones a Zone Report returned, as they stood when the device carried it out
    /// (empty for every other request).
    pub zones: Vec<crate::host::command::ZoneDescriptor>,
}

/// Receives every completion of a timed run as it happens (a request log).
pub type CompletionSink = Box<dyn FnMut(&Completion) + Send + Sync>;

impl Completion {
    pub fn latency_ns(&self) -> u64 {
        self.complete_ns - self.submit_ns
    }
}

/// Results of a timed phase.
pub struct TimedOutcome {
    pub host: HostCounters,
    pub latency: Latency,
    pub per_flow: Vec<(String, Latency)>,
    /// By origin, when the workload names its requests' origins (else empty).
    pub by_origin: Vec<(&'static str, Latency)>,
    /// Time of the last completion.
    pub sim_time_ns: u64,
    pub events: u64,
    pub die_busy_ns: Vec<u64>,
    pub channel_busy_ns: Vec<u64>,
    /// Host-program batches started in the phase and the host programs in them.
    pub host_program_batches: u64,
    pub host_programs: u64,
    /// Background program and erase batches started and the operations in them:
    /// `[(program batches, programs), (erase batches, erases)]`.
    pub gc_batches: [(u64, u64); 2],
    /// Every completion in order, when tracing was on.
    pub completions: Vec<Completion>,
    pub suspend: SuspendSummary,
    /// Every erase in completion order, when tracing was on.
    pub erases: Vec<EraseRecord>,
    /// The device wore out: the phase ended early (requests still in flight were dropped).
    pub worn_out: bool,
    /// The time series (empty when `output.timeseries_interval_ns` is 0).
    pub series: Vec<crate::stats::TimeSeriesRow>,
    /// Journal writes' latency until durable (workloads with a journal, spec 05).
    pub journal_latency: Option<hdrhistogram::Histogram<u64>>,
    /// The host interface's figures (`[device.host_interface]`).
    pub host_interface: Option<HostInterfaceSummary>,
    /// What the results audit needs beyond the figures above.
    pub audit: TimedAudit,
}

/// What a timed phase tells the results audit ([`crate::sim::audit::TimedFacts`]).
#[derive(Clone, Debug, Default)]
pub struct TimedAudit {
    /// Requests completed to the host, by operation.
    pub completed: crate::sim::audit::Completed,
    /// Requests not completed when the figures were taken.
    pub in_flight: u64,
    /// Host units of every write submitted (completed or not; `host.write_units` at a cut
    /// counts the completed ones).
    pub write_units_submitted: u64,
    /// Simulated time when the figures were taken.
    pub end_ns: u64,
    /// The time series ended with the phase (its last, partial interval written).
    pub series_closed: bool,
    /// The fastest read served by NAND, dispatch to data (`u64::MAX`: none).
    pub nand_read_min_ns: u64,
    /// The data path's busy time: the link's directions (down, up), or the host transfer
    /// path's in both.
    pub data_path_busy_ns: [u64; 2],
    /// Per channel: when its last reserved transfer ends (transfers are reserved ahead).
    pub channel_free_at_ns: Vec<u64>,
}

pub struct TimedSim<'a> {
    ftl: &'a mut Ftl,
    cfg: &'a Config,
    q: EventQueue<Event>,
    front: HostFrontEnd,
    dies: DieExecutor,
    susp: Suspender,
    out: Outbox,
    series: Option<series::Sampler>,
    series_interval_ns: u64,
    /// Driven from outside ([`TimedSim::serve_externally`]): its end is a power cut or a
    /// stop, after which the device's DRAM is gone.
    served: bool,
}

/// A [`QueueSink`] over a `TimedSim`'s dies (a macro keeps the borrows field-precise).
macro_rules! sink {
    ($s:ident) => {
        QueueSink {
            geo: &$s.dies.geo,
            sched: &mut $s.dies.sched,
            out: &mut $s.out,
            now_ns: $s.q.now_ns(),
        }
    };
}

/// Borrow the parts of a `TimedSim` as a [`Cx`] (a macro keeps the borrows field-precise).
macro_rules! cx {
    ($s:ident) => {
        Cx {
            ftl: &mut *$s.ftl,
            q: &mut $s.q,
            dies: &mut $s.dies,
            out: &mut $s.out,
        }
    };
}

mod served;

impl<'a> TimedSim<'a> {
    /// A timed run of `workload` on `ftl`; up to `threads` flows drawn on threads of their
    /// own ([`crate::Simulation::workload_threads`]).
    pub fn new(
        cfg: &'a Config,
        d: &Derived,
        ftl: &'a mut Ftl,
        workload: Workload,
        threads: usize,
    ) -> TimedSim<'a> {
        let g = d.geometry;
        ftl.keep_pressure();
        let susp = Suspender::new(cfg, g.dies);
        let out = Outbox {
            programs_preempt: susp.programs_preempt(),
            ..Outbox::default()
        };
        TimedSim {
            q: EventQueue::new(),
            front: HostFrontEnd::new(cfg, d, workload, threads, ftl),
            dies: DieExecutor::new(cfg, &g, ftl.timing()),
            susp,
            out,
            series: None,
            series_interval_ns: cfg.output.timeseries_interval_ns,
            served: false,
            ftl,
            cfg,
        }
    }

    /// Hand every completion to `sink` as it happens.
    pub fn set_completion_sink(&mut self, sink: CompletionSink) {
        self.front.set_completion_sink(sink);
    }

    /// Record every completion and erase (see [`TimedOutcome::completions`]).
    pub fn trace_completions(&mut self) {
        self.front.trace_completions();
        self.susp.trace_erases();
    }

    /// Run until every flow is exhausted and every request has completed (or the device
    /// wears out), then let the device settle.
    pub fn run(mut self, progress: &mut dyn Progress) -> Result<TimedOutcome> {
        self.begin()?;
        self.event_loop(progress, true)?;
        self.finish(progress)
    }

    /// Start the phase: the time series and every flow's first requests.
    pub fn begin(&mut self) -> Result<()> {
        if self.series_interval_ns > 0 {
            self.series = Some(series::Sampler::new(
                self.series_interval_ns,
                self.q.now_ns(),
                &self.front,
                self.ftl,
                self.susp.summary(),
            ));
        }
        let mut cx = cx!(self);
        let (ftl, mut sink) = cx.parts();
        ftl.run_pending(&mut sink)?;
        self.front.start(&mut cx!(self))?;
        self.dispatch_outbox()
    }

    /// End the phase (every request completed, or the device worn out): the figures,
    /// after the device settles.
    pub fn finish(self, progress: &mut dyn Progress) -> Result<TimedOutcome> {
        self.finish_with_ftl(progress).map(|(o, _)| o)
    }

    /// [`TimedSim::finish`], handing back the FTL it ran on.
    pub fn finish_with_ftl(
        mut self,
        progress: &mut dyn Progress,
    ) -> Result<(TimedOutcome, &'a mut Ftl)> {
        if self.ftl.worn_out() {
            // The requests in flight at the failure are counted (from their decode): the
            // figures cover the time up to the failure, not only up to the last completion
            // (a 69 GB/s "throughput" over 3 µs, swarm seed 548572).
            self.front.measured_until(self.q.now_ns());
        }
        let last_ns = self.front.last_completion_ns();
        let series = match self.series.take() {
            Some(mut s) => {
                // The measured phase ends with its last completion: the partial interval
                // up to it is the series' last row.
                s.close(last_ns, &self.front, self.ftl, self.susp.summary())?;
                s.rows
            }
            None => Vec::new(),
        };
        if self.front.in_flight() > 0 {
            // A zone's page found no free block and no reset came to free one.
            crate::host::command::host_pages_stuck(self.ftl);
        }
        let worn_out = self.ftl.worn_out();
        if self.front.in_flight() > 0 && !worn_out {
            return Err(SimError::DeviceFull(format!(
                "{} requests never completed: no plane could take a write and GC had nothing to reclaim ({} free blocks)",
                self.front.in_flight(),
                self.ftl.media().free_blocks_total()
            )));
        }
        // The measured figures end with the last host completion. Then the device settles,
        // unmeasured: buffered units are programmed and background work finishes, so the
        // FTL state handed to a later phase has no lost writes and no half-erased blocks.
        let audit = self.audit_now(true);
        let die_busy_ns = self.dies.busy_ns();
        let channel_busy_ns = self.dies.channels.busy_ns().to_vec();
        let host_program_batches = self.dies.sched.host_program_batches;
        let host_programs = self.dies.sched.host_programs;
        let gc_batches = self.dies.sched.gc_batches();
        let events = self.q.scheduled_count();
        // A served phase ends with the power going (a cut, or a stop): a power-loss-
        // protected device that failed still programs what its DRAM holds on its
        // capacitors (the buffer and the open batch of trim records, acknowledged as
        // durable), admitting nothing new.
        let capacitors = self.served && self.cfg.ftl.power_loss_protection;
        if !worn_out || capacitors {
            self.front.settling = true;
            self.ftl.set_host_idle(false, &mut sink!(self))?;
            self.ftl.record_trims(&mut sink!(self))?;
            self.front.pump_buffer(&mut cx!(self))?;
            self.dispatch_outbox()?;
            self.event_loop(progress, false)?;
            if !self.front.buffer_is_empty() {
                crate::host::command::host_pages_stuck(self.ftl);
            }
            if !self.ftl.worn_out() {
                debug_assert!(self.front.buffer_is_empty());
            }
        }
        progress.update(self.front.counters.requests(), self.q.now_ns());
        let journal_latency = self.front.take_journal_latency();
        let host_interface = self.front.interface_summary(self.cfg, last_ns);
        let by_origin = self.front.take_by_origin();
        let (host, latency, per_flow, sim_time_ns, completions) = self.front.finish();
        let (suspend, erases) = self.susp.finish();
        let outcome = TimedOutcome {
            host,
            latency,
            per_flow,
            by_origin,
            sim_time_ns,
            events,
            die_busy_ns,
            channel_busy_ns,
            host_program_batches,
            host_programs,
            gc_batches,
            completions,
            suspend,
            erases,
            worn_out,
            series,
            journal_latency,
            host_interface,
            audit,
        };
        Ok((outcome, self.ftl))
    }

    /// What the results audit needs now (`series_closed`: the series just ended).
    fn audit_now(&self, series_closed: bool) -> TimedAudit {
        TimedAudit {
            completed: self.front.completed(),
            in_flight: self.front.in_flight() as u64,
            write_units_submitted: self.front.counters.write_units,
            end_ns: self.q.now_ns(),
            series_closed: series_closed && self.series_interval_ns > 0,
            nand_read_min_ns: self.front.nand_read_min_ns,
            data_path_busy_ns: self.front.data_path_busy_ns(self.q.now_ns()),
            channel_free_at_ns: self.dies.channels.free_at_ns().to_vec(),
        }
    }

    /// Process events until the queue is empty or, with `until_host_done`, until every flow
    /// is exhausted and no request is in flight (or the device wears out).
    fn event_loop(&mut self, progress: &mut dyn Progress, until_host_done: bool) -> Result<()> {
        let mut since_report = 0u32;
        // Per event, only registers and the host's in-flight count are checked: the next
        // sample's time is kept here, and the device can only wear out in an event that
        // also leaves a lifetime stamp pending (`Health::fail`).
        let mut next_sample_ns = self.next_sample_ns();
        let mut worn_out = self.ftl.worn_out();
        while let Some((now, ev)) = self.q.pop() {
            if now > next_sample_ns {
                if let Some(s) = self.series.as_mut() {
                    s.sample(now, &self.front, self.ftl, self.susp.summary())?;
                }
                next_sample_ns = self.next_sample_ns();
            }
            self.handle(ev)?;
            if self.ftl.lifetime_stamp_pending() {
                self.ftl
                    .stamp_lifetime("workload", now, self.front.counters.write_units);
                worn_out = self.ftl.worn_out();
            }
            debug_assert_eq!(worn_out, self.ftl.worn_out());
            if until_host_done && (self.front.done() || worn_out) {
                break;
            }
            since_report += 1;
            if since_report == 1 << 16 {
                since_report = 0;
                super::stop::check()?;
                progress.update(self.front.counters.requests(), self.q.now_ns());
            }
        }
        Ok(())
    }

    /// Handle event `ev` at `now`, then start the dies it gave work.
    #[inline(always)]
    fn handle(&mut self, ev: Event) -> Result<()> {
        match ev {
            Event::Arrival { flow } => self.front.on_arrival(flow as usize, &mut cx!(self))?,
            Event::Sensed { die } => {
                self.dies
                    .on_sensed(die as u32, &mut self.q, self.ftl.timing())
            }
            Event::DieDone { die, gen } => self.on_die_done(die as u32, gen)?,
            Event::Suspend { die, gen } => {
                self.susp
                    .on_suspend(die as u32, gen, &mut self.dies, &mut self.q, self.ftl)
            }
            Event::Complete { req } => self.front.complete(req, &mut cx!(self))?,
            Event::Idle { epoch } => {
                if self.front.idle_epoch_is(epoch) {
                    self.ftl.set_host_idle(true, &mut sink!(self))?;
                }
            }
            Event::Link { dir, gen } => self.front.on_link(dir, gen, &mut cx!(self))?,
            Event::Processed { cmd } => self.front.on_processed(cmd, &mut cx!(self))?,
            Event::Completion { cmd } => self.front.on_completion(cmd, &mut cx!(self))?,
        }
        self.dispatch_outbox()
    }

    /// When the time series takes its next sample (never without one).
    fn next_sample_ns(&self) -> u64 {
        self.series.as_ref().map_or(u64::MAX, |s| s.next_ns())
    }

    /// Start dies that got work and let the suspend policy see reads (and, with
    /// `programs_preempt`, host programs) waiting on busy dies.
    #[inline(always)]
    fn dispatch_outbox(&mut self) -> Result<()> {
        if self.out.read_waiting.is_empty()
            && self.out.idle.is_empty()
            && self.out.program_waiting.is_empty()
        {
            return Ok(());
        }
        self.dispatch_outbox_work()
    }

    #[inline(never)]
    fn dispatch_outbox_work(&mut self) -> Result<()> {
        loop {
            if let Some(die) = self.out.read_waiting.pop() {
                self.susp
                    .read_arrived(die, &mut self.dies, &mut self.q, self.ftl);
            } else if let Some(die) = self.out.program_waiting.pop() {
                self.susp
                    .program_arrived(die, &mut self.dies, &mut self.q, self.ftl);
            } else if let Some(die) = self.out.idle.pop() {
                // A die can be listed more than once, or started since it was listed.
                if !self.dies.sched.dies[die as usize].busy {
                    self.start_die(die);
                }
            } else {
                return Ok(());
            }
        }
    }

    fn start_die(&mut self, die: u32) {
        if self.dies.sched.dies[die as usize].busy {
            return;
        }
        if self.susp.is_suspended(die) {
            self.susp
                .serve_or_resume(die, &mut self.dies, &mut self.q, self.ftl);
            return;
        }
        let writes_blocked = self.front.writes_blocked();
        if let Some(long) = self
            .dies
            .start_next(die, writes_blocked, &mut self.q, self.ftl)
        {
            self.susp
                .begin_long(die, long, &mut self.dies, &mut self.q, self.ftl);
        }
    }

    fn on_die_done(&mut self, die: u32, gen: u32) -> Result<()> {
        if gen != self.dies.gen(die) {
            return Ok(()); // the operation was suspended: this completion is void
        }
        if self.susp.penalty_done(die, &mut self.dies, &self.q) {
            self.out.idle.push(die);
            return Ok(());
        }
        self.susp
            .finish_if_long(die, &mut self.dies, &self.q, self.ftl);
        let n = self.dies.finish(die, self.q.now_ns());
        let mut erased = false;
        for i in 0..n {
            let op = self.dies.finished_op(die, i);
            let op = &op;
            self.ftl.on_complete(op, &mut sink!(self))?;
            match op.owner {
                Owner::HostRead { req } => {
                    if op.fails() {
                        // No retry step corrected it: the request fails (reported, never
                        // silent data); the integrity oracle checks no data.
                        self.front.read_failed(req);
                    } else {
                        self.ftl.check_read_done(op, self.front.span_of(req))?;
                    }
                    self.front.op_done(req, &mut cx!(self))?
                }
                Owner::Mapping { req } if req != crate::flash::NONE => {
                    self.front.op_done(req, &mut cx!(self))?
                }
                Owner::HostProgram { token } => {
                    self.front
                        .program_done(token, op.units, die, &mut cx!(self))?
                }
                Owner::TrimRecord { .. } => self.front.trim_records_done(&mut cx!(self)),
                _ => erased |= op.kind == OpKind::Erase,
            }
        }
        if erased {
            self.front.pump_buffer(&mut cx!(self))?;
        }
        if self.out.read_waiting.is_empty() && self.out.program_waiting.is_empty() {
            // What the outbox would do first (its idle dies are a stack, and reads waiting
            // on busy dies go before them): start this die now, in the same order.
            self.start_die(die);
        } else {
            self.out.idle.push(die);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, Mode};
    use crate::sim::functional::FunctionalDriver;
    use crate::{NoProgress, Simulation};
    use ssdlab_workload::replay::VecSource;
    use ssdlab_workload::{Arrival, Flow, HostOp, HostRequest, Workload};

    fn one_read(lpn: u64) -> Workload {
        Workload {
            flows: vec![Flow {
                name: "t".into(),
                arrival: Arrival::Closed { queue_depth: 1 },
                source: Box::new(VecSource::new(vec![HostRequest {
                    tag: 0,
                    placement_id: 0,
                    arrival_ns: 0,
                    op: HostOp::Read,
                    offset_bytes: lpn * 4096,
                    size_bytes: 4096,
                    journal: None,
                }])),
            }],
            duration_ns: None,
            stats: Default::default(),
        }
    }

    /// Open-loop writes at the given arrival times (ns).
    fn writes_at(times: &[u64]) -> Workload {
        Workload {
            flows: vec![Flow {
                name: "t".into(),
                arrival: Arrival::Open,
                source: Box::new(VecSource::new(
                    times
                        .iter()
                        .enumerate()
                        .map(|(i, &t)| HostRequest {
                            tag: 0,
                            placement_id: 0,
                            arrival_ns: t,
                            op: HostOp::Write,
                            offset_bytes: i as u64 * 4096,
                            size_bytes: 4096,
                            journal: None,
                        })
                        .collect(),
                )),
            }],
            duration_ns: None,
            stats: Default::default(),
        }
    }

    /// A pause of about three years between two requests is a few rows of the time series
    /// (its first empty interval and its last), not one per interval; a pause shorter than
    /// `IDLE_ROWS` intervals keeps a row per interval. The last row is the partial
    /// interval up to the last completion.
    #[test]
    fn long_idle_gaps_are_two_rows_of_the_time_series() {
        let mut c: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        c.mode = Mode::Timed;
        c.output.timeseries_interval_ns = 100_000_000;
        let iv = c.output.timeseries_interval_ns;
        let rows = |gap_ns: u64| {
            let mut sim = Simulation::new(c.clone()).unwrap();
            sim.run_workload_with(writes_at(&[0, gap_ns]), &mut NoProgress)
                .unwrap();
            sim.last_timeseries
                .iter()
                .map(|r| (r.time_ns, r.write_iops > 0.0))
                .collect::<Vec<_>>()
        };
        let years = 94_670_856_000_000_000; // 3 years, a multiple of the interval
        let r = rows(years);
        // The second write arrives at a boundary (whose row holds its instant's events)
        // and completes a buffer access and a host transfer later, in the partial row.
        let done = years + 1000 + 520;
        assert_eq!(
            r,
            vec![
                (iv, true),
                (2 * iv, false),
                (years - iv, false),
                (years, false),
                (done, true)
            ],
            "{r:?}"
        );
        // 500 intervals: a row for each boundary before the second write, then its own
        // interval, partial: it ends with the run.
        let r = rows(500 * iv + 1);
        assert_eq!(r.len(), 501, "{:?}", &r[..3]);
        assert!(r[0].1 && r[1..500].iter().all(|x| !x.1) && r[500].1);
        assert!(r[..500].windows(2).all(|w| w[1].0 == w[0].0 + iv));
        assert_eq!(r[500].0, 500 * iv + 1 + 1520);
    }

    /// The time series ends with the last completion: its last row is the partial
    /// interval up to it, its rates over its real length, so every row's rate × interval
    /// sums to the run's totals (the partial interval was left out: up to a quarter of a
    /// short run's requests).
    #[test]
    fn the_time_series_sums_to_the_totals() {
        let mut c: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        c.mode = Mode::Timed;
        c.output.timeseries_interval_ns = 5_000_000;
        // 12 writes 1 ms apart: the last completes at 11.00152 ms (a buffer access and a
        // host transfer after it arrived), a fifth of an interval after the last boundary.
        let times: Vec<u64> = (0..12).map(|i| i * 1_000_000).collect();
        let mut sim = Simulation::new(c).unwrap();
        let r = sim
            .run_workload_with(writes_at(&times), &mut NoProgress)
            .unwrap();
        let rows = &sim.last_timeseries;
        let t: Vec<u64> = rows.iter().map(|r| r.time_ns).collect();
        assert_eq!(t, [5_000_000, 10_000_000, 11_001_520]);
        assert_eq!(r.host.sim_time_ns, 11_001_520);
        let mut prev = 0;
        let mut writes = 0.0;
        for row in rows {
            writes += row.write_iops * (row.time_ns - prev) as f64 / 1e9;
            prev = row.time_ns;
        }
        assert!((writes - 12.0).abs() < 1e-9, "{writes}");
        // The partial row's rate is over its 1.00152 ms: the writes at 10 and 11 ms.
        assert!((rows[2].write_iops - 2e9 / 1_001_520.0).abs() < 1e-6);
        let audit = r.audit.checks.iter().find(|c| c.name == "timeseries_sums");
        assert_eq!(audit.unwrap().verdict, crate::sim::audit::Verdict::Ok);
    }

    /// A series that would outgrow its cap ends the run with an error naming the key.
    #[test]
    fn an_oversized_time_series_is_an_error() {
        let mut c: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        c.mode = Mode::Timed;
        c.output.timeseries_interval_ns = 1_000;
        let d = c.validate().unwrap();
        let mut ftl = crate::ftl::Ftl::new(&c, &d).unwrap();
        let mut sim = super::TimedSim::new(&c, &d, &mut ftl, writes_at(&[0, 50_000]), 0);
        sim.series = Some(super::series::Sampler::new(
            1_000,
            0,
            &sim.front,
            sim.ftl,
            sim.susp.summary(),
        ));
        sim.series.as_mut().unwrap().set_max_rows(10);
        sim.series_interval_ns = 0; // keep the sampler set up above
        let e = sim.run(&mut NoProgress).err().expect("error").to_string();
        assert!(
            e.contains("output.timeseries_interval_ns") && e.contains("more than 10 rows"),
            "{e}"
        );
    }

    /// A staged read plan (a translation read, then the data read) runs stage by stage in
    /// the timed mode and is summed in the functional mode.
    #[test]
    fn staged_read_runs_its_stages_in_order() {
        let mut c: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        c.mode = Mode::Timed;
        let latency = |hook: Option<u32>| {
            let mut sim = Simulation::new(c.clone()).unwrap();
            let mut d = FunctionalDriver::new(&mut sim.ftl);
            // Unit 5 on plane 0 (block 0), unit 6 on plane 1 (block 8): the hook reads
            // block 8, a programmed block on the other plane of the die.
            d.write_unit(5).unwrap();
            d.write_unit(6).unwrap();
            d.flush().unwrap();
            sim.ftl.staged_read_hook = hook;
            sim.trace_completions = true;
            let r = sim.run_workload_with(one_read(5), &mut NoProgress).unwrap();
            let n = r.nand.reads;
            (sim.completions[0].latency_ns(), n.host, n.mapping)
        };
        let t = c.device.timing_model();
        let tlc = crate::flash::CellState::fresh(crate::config::CellMode::Tlc);
        let tr = t.array_ns(crate::flash::OpKind::Read, tlc);
        let xfer = t.transfer_ns(4096);
        let host = t.host_transfer_ns(4096);
        assert_eq!(latency(None), (tr + xfer + host, 1, 0));
        // Block 8 is on the other plane of the same die: the stages still serialise.
        assert_eq!(latency(Some(8)), (2 * (tr + xfer) + host, 1, 1));
        // Functional mode: both reads are counted and their array time summed, with the
        // data's host transfer.
        let mut sim = Simulation::new(c.clone()).unwrap();
        let mut d = FunctionalDriver::new(&mut sim.ftl);
        d.write_unit(5).unwrap();
        d.write_unit(6).unwrap();
        d.flush().unwrap();
        d.ftl.staged_read_hook = Some(8);
        let before = d.clock.time_ns;
        d.submit(&HostRequest {
            tag: 0,
            placement_id: 0,
            arrival_ns: 0,
            op: HostOp::Read,
            offset_bytes: 5 * 4096,
            size_bytes: 4096,
            journal: None,
        })
        .unwrap();
        assert_eq!(d.clock.time_ns - before, 2 * tr + host);
    }

    /// Integrity mode checks what a read returns when it completes: a read that overtakes
    /// the program of its data (here forced by a buffer that forgets units in flight) is
    /// caught; with the real buffer the same requests read the unit from DRAM.
    #[test]
    fn read_overtaking_its_program_is_caught_at_completion() {
        let mut c: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        c.mode = Mode::Timed;
        c.integrity = true;
        let d = c.validate().unwrap();
        let reqs = |ops: &[(HostOp, u64)]| Workload {
            flows: vec![Flow {
                name: "t".into(),
                arrival: Arrival::Closed { queue_depth: 4 },
                source: Box::new(VecSource::new(
                    ops.iter()
                        .map(|&(op, lpn)| HostRequest {
                            tag: 0,
                            placement_id: 0,
                            arrival_ns: 0,
                            op,
                            offset_bytes: lpn * 4096,
                            size_bytes: 4096,
                            journal: None,
                        })
                        .collect(),
                )),
            }],
            duration_ns: None,
            stats: Default::default(),
        };
        // Units 1 and 5 land on plane 0, unit 2 on plane 1: program 5 cannot join program
        // 1; the read of 5, queued before the die starts, outranks both programs.
        let ops = [
            (HostOp::Write, 1),
            (HostOp::Write, 2),
            (HostOp::Write, 5),
            (HostOp::Read, 5),
        ];
        let run = |forget: bool| {
            let mut ftl = crate::ftl::Ftl::new(&c, &d).unwrap();
            let mut sim = super::TimedSim::new(&c, &d, &mut ftl, reqs(&ops), 0);
            sim.front.buffer_for_test().forget_inflight = forget;
            sim.run(&mut NoProgress).map(|o| o.host.buffer_read_hits)
        };
        assert_eq!(
            run(false).unwrap(),
            1,
            "read from the buffer while in flight"
        );
        let e = run(true).unwrap_err().to_string();
        assert!(
            e.contains("read of unit 5")
                && e.contains("found version 0")
                && e.contains("Unprogrammed"),
            "{e}"
        );
    }
}
