//! Timed mode: the discrete-event simulation.
//!
//! Event flow: a flow submits a request (closed loop: when a slot frees; open loop: at its
//! arrival) → the host layer splits it into units → reads go to the FTL, which queues one
//! NAND read per physical page on the die's queue; writes (after any read-modify-write
//! reads) enter the DRAM write buffer and complete after `buffer_access_ns`; full pages are
//! programmed by the FTL onto the next stripe plane; GC starts on a plane below the soft
//! threshold → the scheduler starts an idle die's next batch → read: command + tR on the
//! die, then the transfer on the channel; program: command + transfer, then tPROG; erase:
//! command, then `loops` ISPE loops → the die finishes, completions propagate.
//!
//! Erase (and, with `program_suspend`, program) suspension (spec 01, docs/erase-suspend.md):
//! each die tracks its running erase's work position. When a host read waits on it, the
//! suspend policy names a work position; at that point the die stops (its pending
//! completion is cancelled through the die's generation counter), pays the suspend penalty,
//! serves host reads (those queued at the suspension, or all of them for I-ES), then
//! resumes the remaining work after the resume penalty. Nothing but host reads runs on a
//! die while its erase is suspended.

use super::Progress;
use crate::cache::WriteBuffer;
use crate::config::Config;
use crate::config::Derived;
use crate::config::MAX_ERASE_LOOPS;
use crate::engine::{EventQueue, Generation};
use crate::error::{Result, SimError};
use crate::flash::{Cause, Channels, NandOp, OpKind, NONE};
use crate::ftl::{Ftl, NandSink};
use crate::host::{split, FlowState, Request, RequestTable, Stage, UnitSpan};
use crate::scheduler::suspend::{loop_of_position, next_grid_point};
use crate::scheduler::{Batch, EraseView, GcPressure, Reliability, Scheduler, SuspendDecision};
use crate::stats::{EraseRecord, HostCounters, Latency, SuspendSummary};
use crate::MAX_SLOTS_PER_PAGE;
use ssdlab_workload::{Arrival, HostOp, HostRequest, RequestSource, Workload};
use std::collections::VecDeque;

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
}

/// Dies that need attention after the FTL queued operations.
#[derive(Default)]
struct Wake {
    /// Idle dies with new work: start them.
    idle: Vec<u32>,
    /// Busy dies that just got a host read: ask the suspend policy.
    read_waiting: Vec<u32>,
}

/// Queues the FTL's operations on their dies and notes which dies need attention.
struct QueueSink<'s> {
    sched: &'s mut Scheduler,
    wake: &'s mut Wake,
    planes_per_die: u32,
    blocks_per_plane: u32,
}

impl NandSink for QueueSink<'_> {
    const DEFERRED_ERASE: bool = true;
    #[inline]
    fn issue(&mut self, op: NandOp) {
        let die = op.block / self.blocks_per_plane / self.planes_per_die;
        if self.sched.enqueue(die, op) {
            self.wake.idle.push(die);
        } else if op.kind == OpKind::Read && op.cause == Cause::Host {
            self.wake.read_waiting.push(die);
        }
    }
}

/// A sink over the simulator's scheduler (a macro so the borrow stays field-precise).
macro_rules! queue_sink {
    ($s:ident) => {
        QueueSink {
            sched: &mut $s.sched,
            wake: &mut $s.wake,
            planes_per_die: $s.ftl.geo.planes_per_die,
            blocks_per_plane: $s.ftl.geo.blocks_per_plane,
        }
    };
}

/// Host page programs a die may have queued or running, per plane of the die. Pages
/// beyond that stay in the DRAM buffer (where reads still hit and rewrites still merge)
/// instead of queueing behind GC and reads for seconds.
const HOST_PROGRAMS_PER_PLANE: u32 = 2;

mod die;
mod io;
mod suspend;

use suspend::{LongOp, Phase};

/// One completed request (kept only when tracing is on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub flow: u16,
    pub op: HostOp,
    pub submit_ns: u64,
    pub complete_ns: u64,
}

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
    /// Time of the last completion.
    pub sim_time_ns: u64,
    pub events: u64,
    pub die_busy_ns: Vec<u64>,
    pub channel_busy_ns: Vec<u64>,
    /// Every completion in order, when tracing was on.
    pub completions: Vec<Completion>,
    pub suspend: SuspendSummary,
    /// Every erase in completion order, when tracing was on.
    pub erases: Vec<EraseRecord>,
}

pub struct TimedSim<'a> {
    ftl: &'a mut Ftl,
    q: EventQueue<Event>,
    sched: Scheduler,
    channels: Channels,
    buffer: WriteBuffer,
    reqs: RequestTable,
    flows: Vec<FlowState>,
    sources: Vec<Box<dyn RequestSource>>,
    flow_names: Vec<String>,
    /// Writes waiting for buffer space, oldest first.
    buffer_waiters: VecDeque<u32>,
    /// Host page programs queued or running per die (at most `HOST_PROGRAMS_PER_PLANE` per
    /// plane of the die; the rest of the data waits in the write buffer).
    host_programs_queued: Vec<u32>,
    /// Flushes waiting for the buffer to drain; while any waits, partial pages are
    /// programmed (padded) instead of waiting for more units.
    drain_waiters: Vec<(u32, u64)>,
    /// The host is done; the device programs what is buffered and finishes its GC.
    settling: bool,
    wake: Wake,
    die_started_ns: Vec<u64>,
    host: HostCounters,
    latency: Latency,
    per_flow: Vec<Latency>,
    duration_ns: Option<u64>,
    buffer_access_ns: u64,
    command_ns: u64,
    last_completion_ns: u64,
    page_bytes: u64,
    unit_bytes: u64,
    completions: Option<Vec<Completion>>,
    /// Per die: generation of its DieDone/Suspend events, and its long operation.
    gen: Vec<Generation>,
    long: Vec<LongOp>,
    resume_penalty_ns: [u64; 4],
    program_suspend: bool,
    max_suspensions_per_erase: u32,
    max_erase_postponement_ns: u64,
    reliability: Reliability,
    susp: SuspendSummary,
    erase_trace: Option<Vec<EraseRecord>>,
}

impl<'a> TimedSim<'a> {
    pub fn new(cfg: &Config, d: &Derived, ftl: &'a mut Ftl, workload: Workload) -> TimedSim<'a> {
        let g = d.geometry;
        let mut flows = Vec::new();
        let mut sources = Vec::new();
        let mut flow_names = Vec::new();
        for f in workload.flows {
            flows.push(FlowState {
                arrival: f.arrival,
                in_flight: 0,
                exhausted: false,
                next: None,
            });
            sources.push(f.source);
            flow_names.push(f.name);
        }
        let n = flows.len();
        let idle = LongOp {
            phase: Phase::Idle,
            kind: OpKind::Erase,
            batch: Batch {
                ops: [crate::scheduler::EMPTY_OP; crate::scheduler::MAX_PLANES_PER_DIE],
                len: 0,
            },
            mode: 0,
            started_ns: 0,
            seg_start_ns: 0,
            work_start_ns: 0,
            work_done_ns: 0,
            loop_ns: 0,
            loops: 0,
            points: 0,
            pe_cycles: 0,
            exec_ns: 0,
            penalties_ns: 0,
            suspensions: 0,
            last_suspend_pos_ns: None,
            pending: false,
            pending_pos_ns: 0,
            suspended_at_ns: 0,
            postponed_ns: 0,
            read_budget: 0,
            wait_since_ns: None,
            per_loop: [0; MAX_ERASE_LOOPS as usize],
        };
        let sc = &cfg.scheduler;
        TimedSim {
            gen: vec![Generation::default(); g.dies as usize],
            long: vec![idle; g.dies as usize],
            resume_penalty_ns: crate::config::CellMode::ALL
                .map(|m| cfg.device.timing.get(m).resume_penalty_ns),
            program_suspend: sc.program_suspend,
            max_suspensions_per_erase: sc.max_suspensions_per_erase,
            max_erase_postponement_ns: sc.max_erase_postponement_ns,
            reliability: Reliability::new(sc),
            susp: SuspendSummary {
                policy: sc.erase_suspend.name().to_string(),
                ..Default::default()
            },
            erase_trace: None,
            q: EventQueue::new(),
            sched: Scheduler::new(&cfg.scheduler, &g),
            channels: Channels::new(g.channels),
            buffer: WriteBuffer::new(d.write_buffer_units),
            reqs: RequestTable::default(),
            flows,
            sources,
            flow_names,
            buffer_waiters: VecDeque::new(),
            drain_waiters: Vec::new(),
            host_programs_queued: vec![0; g.dies as usize],
            settling: false,
            wake: Wake::default(),
            die_started_ns: vec![0; g.dies as usize],
            host: HostCounters::default(),
            latency: Latency::default(),
            per_flow: (0..n).map(|_| Latency::default()).collect(),
            duration_ns: workload.duration_ns,
            buffer_access_ns: cfg.ftl.buffer_access_ns,
            command_ns: ftl.timing.command_overhead_ns,
            last_completion_ns: 0,
            page_bytes: g.page_bytes as u64,
            unit_bytes: g.unit_bytes as u64,
            completions: None,
            ftl,
        }
    }

    /// Record every completion (see [`TimedOutcome::completions`]).
    pub fn trace_completions(&mut self) {
        self.completions = Some(Vec::new());
        self.erase_trace = Some(Vec::new());
    }

    /// Run until every flow is exhausted and every request has completed.
    pub fn run(mut self, progress: &mut dyn Progress) -> Result<TimedOutcome> {
        for f in 0..self.flows.len() {
            match self.flows[f].arrival {
                Arrival::Closed { .. } => self.refill_closed(f)?,
                Arrival::Open => self.fetch_open(f)?,
            }
        }
        while let Some(die) = self.wake.idle.pop() {
            self.start_die(die);
        }
        self.event_loop(progress, true)?;
        if self.reqs.in_flight > 0 {
            return Err(SimError::DeviceFull(format!(
                "{} requests never completed: no plane could take a write and GC had nothing to reclaim ({} free blocks)",
                self.reqs.in_flight,
                self.ftl.free_blocks_total()
            )));
        }
        // The measured figures end with the last host completion. Then the device settles,
        // unmeasured: buffered units are programmed and pending GC erases finish, so the
        // FTL state handed to a later phase has no lost writes and no half-erased blocks.
        let die_busy_ns = self.sched.dies.iter().map(|d| d.busy_ns).collect();
        let channel_busy_ns = self.channels.busy_ns().to_vec();
        let events = self.q.scheduled_count();
        self.settling = true;
        self.pump_buffer()?;
        while let Some(die) = self.wake.idle.pop() {
            self.start_die(die);
        }
        self.event_loop(progress, false)?;
        debug_assert!(self.buffer.is_empty());
        progress.update(self.host.requests(), self.q.now_ns());
        Ok(TimedOutcome {
            host: self.host,
            latency: self.latency,
            per_flow: self.flow_names.into_iter().zip(self.per_flow).collect(),
            sim_time_ns: self.last_completion_ns,
            events,
            die_busy_ns,
            channel_busy_ns,
            completions: self.completions.unwrap_or_default(),
            suspend: self.susp,
            erases: self.erase_trace.unwrap_or_default(),
        })
    }

    /// Process events until the queue is empty or, with `until_host_done`, until every flow
    /// is exhausted and no request is in flight.
    fn event_loop(&mut self, progress: &mut dyn Progress, until_host_done: bool) -> Result<()> {
        let mut since_report = 0u32;
        while let Some((_, ev)) = self.q.pop() {
            match ev {
                Event::Arrival { flow } => self.on_arrival(flow as usize)?,
                Event::Sensed { die } => self.on_sensed(die as u32),
                Event::DieDone { die, gen } => self.on_die_done(die as u32, gen)?,
                Event::Suspend { die, gen } => self.on_suspend(die as u32, gen),
                Event::Complete { req } => self.complete(req)?,
            }
            while let Some(die) = self.wake.idle.pop() {
                self.start_die(die);
            }
            if until_host_done && self.reqs.in_flight == 0 && self.flows.iter().all(|f| f.exhausted)
            {
                break;
            }
            since_report += 1;
            if since_report == 1 << 16 {
                since_report = 0;
                progress.update(self.host.requests(), self.q.now_ns());
            }
        }
        Ok(())
    }

    fn past_duration(&self) -> bool {
        self.duration_ns.is_some_and(|d| self.q.now_ns() >= d)
    }

    /// Closed loop: submit until the flow's queue depth is reached.
    fn refill_closed(&mut self, f: usize) -> Result<()> {
        let Arrival::Closed { queue_depth } = self.flows[f].arrival else {
            return Ok(());
        };
        while !self.flows[f].exhausted && self.flows[f].in_flight < queue_depth {
            if self.past_duration() {
                self.flows[f].exhausted = true;
                break;
            }
            match self.sources[f].next_request()? {
                Some(r) => self.submit(f, r)?,
                None => self.flows[f].exhausted = true,
            }
        }
        Ok(())
    }

    /// Open loop: read the flow's next request and schedule its arrival.
    fn fetch_open(&mut self, f: usize) -> Result<()> {
        match self.sources[f].next_request()? {
            Some(r) if self.duration_ns.is_none_or(|d| r.arrival_ns < d) => {
                self.flows[f].next = Some(r);
                let at = r.arrival_ns.max(self.q.now_ns());
                self.q.schedule_at(at, Event::Arrival { flow: f as u16 });
            }
            _ => self.flows[f].exhausted = true,
        }
        Ok(())
    }

    fn on_arrival(&mut self, f: usize) -> Result<()> {
        if let Some(r) = self.flows[f].next.take() {
            self.submit(f, r)?;
        }
        self.fetch_open(f)
    }

    /// One NAND read of request `id` finished.
    fn op_done(&mut self, id: u32) -> Result<()> {
        let r = self.reqs.get_mut(id);
        r.pending_ops -= 1;
        if r.pending_ops > 0 {
            return Ok(());
        }
        match r.op {
            HostOp::Write => self.admit_write(id),
            _ => self.complete(id),
        }
    }

    fn complete(&mut self, id: u32) -> Result<()> {
        let r = self.reqs.remove(id);
        let now = self.q.now_ns();
        let latency = now - r.submit_ns;
        self.latency.record(r.op, latency);
        self.per_flow[r.flow as usize].record(r.op, latency);
        self.last_completion_ns = now;
        if let Some(c) = self.completions.as_mut() {
            c.push(Completion {
                flow: r.flow,
                op: r.op,
                submit_ns: r.submit_ns,
                complete_ns: now,
            });
        }
        let f = r.flow as usize;
        self.flows[f].in_flight -= 1;
        self.refill_closed(f)
    }
}
