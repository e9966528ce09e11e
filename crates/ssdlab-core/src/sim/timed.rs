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

/// What a die does with its erase or program (the "long operation").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No long operation (idle or a read).
    Idle,
    /// The long operation runs.
    Running,
    /// Suspended: paying the suspend penalty.
    Penalty,
    /// Suspended: the die serves host reads.
    Suspended,
}

/// The erase or program a die runs or has suspended, with its exact progress.
#[derive(Clone, Copy)]
struct LongOp {
    phase: Phase,
    kind: OpKind,
    batch: Batch,
    mode: usize,
    started_ns: u64,
    /// Start of the current running segment (the operation's start or its last resume).
    seg_start_ns: u64,
    /// When the array work of the current segment starts (after command / transfer / ramp).
    work_start_ns: u64,
    /// Array work done before the current segment.
    work_done_ns: u64,
    loop_ns: u64,
    loops: u32,
    /// Programs: ISPP loops (suspension points); erases: unused.
    points: u32,
    pe_cycles: u32,
    exec_ns: u64,
    penalties_ns: u64,
    suspensions: u32,
    last_suspend_pos_ns: Option<u64>,
    /// A suspension is scheduled at work position `pending_pos_ns`.
    pending: bool,
    pending_pos_ns: u64,
    suspended_at_ns: u64,
    postponed_ns: u64,
    /// Reads the current suspension may still serve (`u32::MAX`: unbounded, I-ES).
    read_budget: u32,
    /// First host read waiting on the running erase since it last became readable.
    wait_since_ns: Option<u64>,
    per_loop: [u16; MAX_ERASE_LOOPS as usize],
}

impl LongOp {
    fn total_ns(&self) -> u64 {
        self.loop_ns * self.loops as u64
    }
    fn position(&self, now: u64) -> u64 {
        (self.work_done_ns + now.saturating_sub(self.work_start_ns)).min(self.total_ns())
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

    fn submit(&mut self, f: usize, r: HostRequest) -> Result<()> {
        let span = split(&r, self.ftl.geo.unit_bytes, self.ftl.logical_units())?;
        self.host.count(r.op, r.size_bytes);
        self.flows[f].in_flight += 1;
        let now = self.q.now_ns();
        let id = self.reqs.insert(Request {
            flow: f as u16,
            op: r.op,
            stage: Stage::Reading,
            submit_ns: now,
            bytes: r.size_bytes,
            span,
            pending_ops: 0,
        });
        match r.op {
            HostOp::Read => {
                let n = self.read_units(span, id)?;
                if n == 0 {
                    self.finish_after_buffer(id);
                }
            }
            HostOp::Write => {
                self.host.write_units += span.count as u64;
                let mut n = 0;
                let last = span.first + span.count - 1;
                for (partial, lpn) in [
                    (span.head_partial, span.first),
                    (span.tail_partial && last != span.first, last),
                ] {
                    if partial
                        && self.buffer.lookup(lpn).is_none()
                        && self.ftl.map.lookup(lpn) != NONE
                    {
                        self.host.rmw_reads += 1;
                        n += self.read_units(
                            UnitSpan {
                                first: lpn,
                                count: 1,
                                head_partial: false,
                                tail_partial: false,
                            },
                            id,
                        )?;
                    }
                }
                if n == 0 {
                    self.admit_write(id)?;
                }
            }
            HostOp::Trim => {
                for lpn in span.lpns() {
                    self.buffer.discard(lpn);
                    self.ftl.trim(lpn);
                }
                self.finish_after_buffer(id);
            }
            HostOp::Flush => {
                // Covers the units written before it; later writes do not delay it.
                let mark = self.buffer.end_seq();
                if self.buffer.durable_seq() >= mark {
                    self.finish_after_buffer(id);
                } else {
                    self.reqs.get_mut(id).stage = Stage::AwaitingDrain;
                    self.drain_waiters.push((id, mark));
                    self.pump_buffer()?;
                }
            }
        }
        Ok(())
    }

    /// Issue NAND reads for the units of `span` not in the buffer; returns how many.
    fn read_units(&mut self, span: UnitSpan, id: u32) -> Result<u32> {
        let mut sink = queue_sink!(self);
        let buffer = &self.buffer;
        let out = self
            .ftl
            .read_units(span.lpns(), |l| buffer.lookup(l), id, &mut sink)?;
        self.host.buffer_read_hits += out.buffer_hits as u64;
        self.host.unmapped_read_units += out.unmapped as u64;
        self.reqs.get_mut(id).pending_ops += out.nand_reads;
        // A read queued behind a running erase or program: the suspend policy decides.
        while let Some(die) = self.wake.read_waiting.pop() {
            let now = self.q.now_ns();
            let lo = &mut self.long[die as usize];
            if lo.phase != Phase::Running {
                continue;
            }
            if lo.kind == OpKind::Erase && lo.wait_since_ns.is_none() {
                lo.wait_since_ns = Some(now);
            }
            if !lo.pending {
                self.try_suspend(die);
            }
        }
        Ok(out.nand_reads)
    }

    fn finish_after_buffer(&mut self, id: u32) {
        self.reqs.get_mut(id).stage = Stage::Completing;
        self.q
            .schedule_in(self.buffer_access_ns, Event::Complete { req: id });
    }

    /// Put a write's units into the buffer as space allows (oldest waiting write first).
    fn admit_write(&mut self, id: u32) -> Result<()> {
        self.reqs.get_mut(id).stage = Stage::AwaitingBuffer;
        self.buffer_waiters.push_back(id);
        if self.buffer_waiters.len() == 1 {
            self.serve_buffer_waiters()?;
        }
        Ok(())
    }

    fn serve_buffer_waiters(&mut self) -> Result<()> {
        while let Some(&id) = self.buffer_waiters.front() {
            let r = *self.reqs.get(id);
            // `pending_ops` counts the units already inserted while the write waits here.
            let mut done = r.pending_ops;
            while done < r.span.count {
                let lpn = r.span.first + done;
                if self.buffer.lookup(lpn).is_none() && self.buffer.free_units() == 0 {
                    break;
                }
                let v = self.ftl.new_version(lpn);
                self.buffer.insert(lpn, v);
                done += 1;
                if self.buffer.pending_units() >= self.ftl.geo.slots_per_page {
                    self.pump_buffer()?;
                }
            }
            self.reqs.get_mut(id).pending_ops = done;
            if done < r.span.count {
                break;
            }
            self.buffer_waiters.pop_front();
            self.reqs.get_mut(id).pending_ops = 0;
            self.finish_after_buffer(id);
        }
        self.pump_buffer()
    }

    /// Program full pages from the buffer (and partial ones when a flush asked).
    fn pump_buffer(&mut self) -> Result<()> {
        let spp = self.ftl.geo.slots_per_page;
        let integrity = self.ftl.integrity.is_some();
        let mut lpns = [0u32; MAX_SLOTS_PER_PAGE];
        let mut vers = [0u32; MAX_SLOTS_PER_PAGE];
        // A flush forces out partial pages until every unit before its mark is in flight.
        let flush_mark = if self.settling {
            u64::MAX
        } else {
            self.drain_waiters.iter().map(|w| w.1).max().unwrap_or(0)
        };
        while self.buffer.pending_units() >= spp
            || (self.buffer.pending_units() > 0 && self.buffer.head_seq() < flush_mark)
        {
            let n = self
                .buffer
                .peek_page(&mut lpns[..spp as usize], &mut vers[..spp as usize]);
            let mut sink = queue_sink!(self);
            let versions: &[u32] = if integrity { &vers[..n] } else { &[] };
            let token = self.buffer.next_token();
            let Some(plane) = self
                .ftl
                .write_host_page(&lpns[..n], versions, token, &mut sink)
            else {
                break;
            };
            self.buffer.commit_page(n);
            self.maybe_gc(plane)?;
        }
        Ok(())
    }

    /// Start GC on `plane` if it is below the soft threshold and not already collecting.
    fn maybe_gc(&mut self, plane: u32) -> Result<()> {
        if !self.ftl.gc_in_progress(plane) && self.ftl.wants_gc(plane) {
            let mut sink = queue_sink!(self);
            self.ftl.collect(plane, Cause::Gc, &mut sink)?;
        }
        Ok(())
    }

    fn gc_pressure(&self, die: u32) -> GcPressure {
        let ppd = self.ftl.geo.planes_per_die;
        let planes = die * ppd..(die + 1) * ppd;
        if planes.clone().any(|p| self.ftl.gc_urgent(p)) {
            GcPressure::Urgent
        } else if planes.into_iter().any(|p| self.ftl.gc_pressing(p)) {
            GcPressure::Pressing
        } else {
            GcPressure::Normal
        }
    }

    fn die_urgent(&self, die: u32) -> bool {
        let ppd = self.ftl.geo.planes_per_die;
        (die * ppd..(die + 1) * ppd).any(|p| self.ftl.gc_urgent(p))
    }

    fn start_die(&mut self, die: u32) {
        if self.sched.dies[die as usize].busy {
            return;
        }
        if self.long[die as usize].phase == Phase::Suspended {
            self.serve_or_resume(die);
            return;
        }
        let writes_blocked = !self.buffer_waiters.is_empty();
        let Some(batch) = self
            .sched
            .start_next(die, self.gc_pressure(die), writes_blocked)
        else {
            return;
        };
        let now = self.q.now_ns();
        self.die_started_ns[die as usize] = now;
        let first = batch.ops[0];
        let m = first.mode.index();
        let gen = self.gen[die as usize].0;
        match first.kind {
            OpKind::Read => self.q.schedule_at(
                now + self.command_ns + self.ftl.timing.read_ns[m],
                Event::Sensed { die: die as u16 },
            ),
            OpKind::Program => {
                let t = &self.ftl.timing;
                let ch = self.ftl.geo.channel_of_die(die);
                let xfer = t.transfer_ns(self.page_bytes * batch.len as u64);
                let end = self.channels.reserve(ch, now + self.command_ns, xfer);
                let prog = t.program_ns[m];
                let points = t.program_loops[m];
                self.q.schedule_at(
                    end + prog,
                    Event::DieDone {
                        die: die as u16,
                        gen,
                    },
                );
                if self.program_suspend {
                    self.begin_long(die, batch, end, prog, 1, points, 0);
                }
            }
            OpKind::Erase => {
                let loops = batch
                    .ops()
                    .iter()
                    .map(|o| o.loops)
                    .max()
                    .unwrap_or(1)
                    .max(1) as u32;
                let loop_ns = self.ftl.timing.erase_loop_ns[m];
                let pe = batch
                    .ops()
                    .iter()
                    .map(|o| self.ftl.blocks.erase_count[o.block as usize])
                    .max()
                    .unwrap_or(0);
                let work_start = now + self.command_ns;
                self.q.schedule_at(
                    work_start + loops as u64 * loop_ns,
                    Event::DieDone {
                        die: die as u16,
                        gen,
                    },
                );
                self.begin_long(die, batch, work_start, loop_ns, loops, 0, pe);
            }
        }
    }

    /// Track the erase or program `batch` that just started on `die`.
    #[allow(clippy::too_many_arguments)]
    fn begin_long(
        &mut self,
        die: u32,
        batch: Batch,
        work_start_ns: u64,
        loop_ns: u64,
        loops: u32,
        points: u32,
        pe_cycles: u32,
    ) {
        let now = self.q.now_ns();
        let lo = &mut self.long[die as usize];
        lo.phase = Phase::Running;
        lo.kind = batch.kind();
        lo.batch = batch;
        lo.mode = batch.ops[0].mode.index();
        lo.started_ns = now;
        lo.seg_start_ns = now;
        lo.work_start_ns = work_start_ns;
        lo.work_done_ns = 0;
        lo.loop_ns = loop_ns;
        lo.loops = loops;
        lo.points = points;
        lo.pe_cycles = pe_cycles;
        lo.exec_ns = 0;
        lo.penalties_ns = 0;
        lo.suspensions = 0;
        lo.last_suspend_pos_ns = None;
        lo.pending = false;
        lo.postponed_ns = 0;
        lo.wait_since_ns = None;
        lo.per_loop[..loops as usize].fill(0);
        // Host reads already waiting (urgent GC went first, or no read priority).
        if self.sched.host_read_waiting(die) {
            if lo.kind == OpKind::Erase {
                lo.wait_since_ns = Some(now);
            }
            self.try_suspend(die);
        }
    }

    /// Ask the policy where `die`'s running erase (or program) should stop for the host
    /// reads waiting on it, and schedule the suspension.
    fn try_suspend(&mut self, die: u32) {
        let now = self.q.now_ns();
        let lo = &self.long[die as usize];
        if lo.phase != Phase::Running || lo.pending {
            return;
        }
        let pos = lo.position(now);
        let target = if lo.kind == OpKind::Erase {
            let p = &self.sched.suspend;
            if !p.suspends() {
                return;
            }
            if p.guarded()
                && ((self.max_suspensions_per_erase > 0
                    && lo.suspensions >= self.max_suspensions_per_erase)
                    || (self.max_erase_postponement_ns > 0
                        && lo.postponed_ns >= self.max_erase_postponement_ns))
            {
                return;
            }
            let v = EraseView {
                pos_ns: pos,
                last_suspend_pos_ns: lo.last_suspend_pos_ns,
                loop_ns: lo.loop_ns,
                loops: lo.loops,
                pe_cycles: lo.pe_cycles,
            };
            let SuspendDecision::SuspendAt { pos_ns } = p.decide(&v) else {
                return;
            };
            // Urgent GC is not preemptible.
            if self.die_urgent(die) {
                return;
            }
            pos_ns
        } else {
            let v = EraseView {
                pos_ns: pos,
                last_suspend_pos_ns: lo.last_suspend_pos_ns,
                loop_ns: lo.loop_ns,
                loops: 1,
                pe_cycles: 0,
            };
            match next_grid_point(&v, lo.points) {
                Some(g) => g,
                None => return,
            }
        };
        debug_assert!(target >= pos && target < lo.total_ns());
        let at = lo.work_start_ns + (target - lo.work_done_ns);
        let gen = self.gen[die as usize].0;
        let lo = &mut self.long[die as usize];
        lo.pending = true;
        lo.pending_pos_ns = target;
        self.q.schedule_at(
            at,
            Event::Suspend {
                die: die as u16,
                gen,
            },
        );
    }

    /// The running erase or program reached its suspension point: stop, pay the penalty.
    fn on_suspend(&mut self, die: u32, gen: u32) {
        let di = die as usize;
        if gen != self.gen[di].0 || self.long[di].phase != Phase::Running || !self.long[di].pending
        {
            return;
        }
        let now = self.q.now_ns();
        let late = self.sched.suspend.serves_late_reads();
        let queued = self.sched.host_reads_queued(die);
        let penalty = self.ftl.timing.suspend_penalty_ns[self.long[di].mode];
        let lo = &mut self.long[di];
        let pos = lo.pending_pos_ns;
        debug_assert_eq!(pos, lo.position(now), "suspension off its point");
        lo.pending = false;
        lo.work_done_ns = pos;
        lo.exec_ns += now - lo.seg_start_ns + penalty;
        lo.penalties_ns += penalty;
        lo.suspensions += 1;
        lo.last_suspend_pos_ns = Some(pos);
        lo.phase = Phase::Penalty;
        lo.suspended_at_ns = now;
        if lo.kind == OpKind::Erase {
            let l = loop_of_position(pos, lo.loop_ns).min(lo.loops as usize - 1);
            lo.per_loop[l] += 1;
            lo.read_budget = if late { u32::MAX } else { queued };
            self.susp.erase_suspensions += 1;
        } else {
            lo.read_budget = queued;
            self.susp.program_suspensions += 1;
        }
        self.susp.penalty_ns_total += penalty;
        let g = self.gen[di].bump().0;
        self.sched.add_busy(die, now - self.die_started_ns[di]);
        self.die_started_ns[di] = now;
        self.q.schedule_at(
            now + penalty,
            Event::DieDone {
                die: die as u16,
                gen: g,
            },
        );
    }

    /// A die with a suspended erase or program is free: serve a waiting host read if the
    /// suspension allows, otherwise resume.
    fn serve_or_resume(&mut self, die: u32) {
        let di = die as usize;
        let lo = &self.long[di];
        let budget =
            if lo.kind == OpKind::Erase && lo.read_budget == u32::MAX && self.die_urgent(die) {
                0
            } else {
                lo.read_budget
            };
        if let Some(batch) = self.sched.start_reads(die, budget) {
            let lo = &mut self.long[di];
            if lo.read_budget != u32::MAX {
                lo.read_budget -= batch.len as u32;
            }
            let now = self.q.now_ns();
            self.die_started_ns[di] = now;
            let m = batch.ops[0].mode.index();
            self.q.schedule_at(
                now + self.command_ns + self.ftl.timing.read_ns[m],
                Event::Sensed { die: die as u16 },
            );
        } else {
            self.resume(die);
        }
    }

    /// Resume `die`'s suspended erase or program with exactly its remaining work.
    fn resume(&mut self, die: u32) {
        let di = die as usize;
        let now = self.q.now_ns();
        let lo = &mut self.long[di];
        let ramp = self.resume_penalty_ns[lo.mode];
        lo.phase = Phase::Running;
        lo.penalties_ns += ramp;
        lo.postponed_ns += now - lo.suspended_at_ns + ramp;
        lo.seg_start_ns = now;
        lo.work_start_ns = now + ramp;
        let end = lo.work_start_ns + (lo.total_ns() - lo.work_done_ns);
        let batch = lo.batch;
        let erase = lo.kind == OpKind::Erase;
        self.susp.penalty_ns_total += ramp;
        self.sched.resume(die, batch);
        self.die_started_ns[di] = now;
        let gen = self.gen[di].0;
        self.q.schedule_at(
            end,
            Event::DieDone {
                die: die as u16,
                gen,
            },
        );
        // Reads that arrived during the suspension and were not served.
        if self.sched.host_read_waiting(die) {
            if erase {
                self.long[di].wait_since_ns = Some(now);
            }
            self.try_suspend(die);
        }
    }

    /// `die`'s erase or program finished: account for it.
    fn finish_long(&mut self, die: u32) {
        let di = die as usize;
        let now = self.q.now_ns();
        self.gen[di].bump();
        let lo = &mut self.long[di];
        lo.phase = Phase::Idle;
        lo.exec_ns += now - lo.seg_start_ns;
        if lo.kind != OpKind::Erase {
            return;
        }
        let lo = *lo;
        if let Some(t) = lo.wait_since_ns {
            self.susp.erase_read_delay_max_ns = self.susp.erase_read_delay_max_ns.max(now - t);
        }
        let per_loop = &lo.per_loop[..lo.loops as usize];
        for op in lo.batch.ops() {
            let pe = self.ftl.blocks.erase_count[op.block as usize];
            self.susp.erases += 1;
            for &c in per_loop {
                self.susp.count_loop(c as u32);
            }
            let (exceeded, extra) = self.reliability.assess(per_loop, pe);
            self.susp.erases_exceeding_safe_limit += exceeded as u64;
            self.susp.extra_rber_sum += extra;
        }
        self.susp.erases_suspended += (lo.suspensions > 0) as u64;
        self.susp.max_suspensions_per_erase =
            self.susp.max_suspensions_per_erase.max(lo.suspensions);
        self.susp.erase_postponement_max_ns =
            self.susp.erase_postponement_max_ns.max(lo.postponed_ns);
        if let Some(trace) = self.erase_trace.as_mut() {
            trace.push(EraseRecord {
                die,
                block: lo.batch.ops[0].block,
                blocks: lo.batch.len as u32,
                pe_cycles: lo.pe_cycles,
                loops: lo.loops,
                loop_ns: lo.loop_ns,
                command_ns: self.command_ns,
                start_ns: lo.started_ns,
                end_ns: now,
                exec_ns: lo.exec_ns,
                penalties_ns: lo.penalties_ns,
                suspensions: lo.suspensions,
                suspensions_per_loop: per_loop.to_vec(),
            });
        }
    }

    fn on_sensed(&mut self, die: u32) {
        let batch = &self.sched.dies[die as usize].running;
        let units: u64 = batch.ops().iter().map(|o| o.units as u64).sum();
        let ch = self.ftl.geo.channel_of_die(die);
        let end = self.channels.reserve(
            ch,
            self.q.now_ns(),
            self.ftl.timing.transfer_ns(units * self.unit_bytes),
        );
        let gen = self.gen[die as usize].0;
        self.q.schedule_at(
            end,
            Event::DieDone {
                die: die as u16,
                gen,
            },
        );
    }

    fn on_die_done(&mut self, die: u32, gen: u32) -> Result<()> {
        let di = die as usize;
        if gen != self.gen[di].0 {
            return Ok(()); // the operation was suspended: this completion is void
        }
        let now = self.q.now_ns();
        match self.long[di].phase {
            Phase::Penalty => {
                // Suspension penalty paid: the die may serve reads now.
                let lo = &mut self.long[di];
                lo.phase = Phase::Suspended;
                if let Some(t) = lo.wait_since_ns.take() {
                    self.susp.erase_read_delay_max_ns =
                        self.susp.erase_read_delay_max_ns.max(now - t);
                }
                self.sched.release(die, now - self.die_started_ns[di]);
                self.wake.idle.push(die);
                return Ok(());
            }
            Phase::Running => self.finish_long(die),
            Phase::Suspended | Phase::Idle => {}
        }
        let batch = self
            .sched
            .finish(die, now - self.die_started_ns[die as usize]);
        let mut freed_buffer = false;
        for op in batch.ops() {
            match (op.kind, op.cause) {
                (OpKind::Read, _) if op.tag != NONE => self.op_done(op.tag)?,
                (OpKind::Program, Cause::Host) => {
                    self.buffer.program_done(op.units, op.tag);
                    freed_buffer = true;
                }
                (OpKind::Erase, _) => {
                    let mut sink = queue_sink!(self);
                    self.ftl.erase_done(op.block, &mut sink)?;
                    let plane = self.ftl.geo.plane_of_block(op.block);
                    self.maybe_gc(plane)?;
                    self.pump_buffer()?;
                }
                _ => {}
            }
        }
        if freed_buffer {
            self.serve_buffer_waiters()?;
            // Complete the flushes whose mark is now durable, keeping the others in order.
            let durable = self.buffer.durable_seq();
            let mut kept = 0;
            for i in 0..self.drain_waiters.len() {
                let (id, mark) = self.drain_waiters[i];
                if mark <= durable {
                    self.finish_after_buffer(id);
                } else {
                    self.drain_waiters[kept] = (id, mark);
                    kept += 1;
                }
            }
            self.drain_waiters.truncate(kept);
        }
        self.wake.idle.push(die);
        Ok(())
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
