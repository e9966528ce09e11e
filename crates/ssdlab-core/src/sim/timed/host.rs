//! The host front end of the timed mode: flows and their requests, the DRAM write buffer,
//! flushes, completions and latency statistics.
//!
//! Read: units found in the write buffer (waiting or in flight) or unmapped complete
//! after `buffer_access_ns`; the rest become NAND reads issued by the FTL (a staged plan
//! runs stage by stage). Write: partly covered units that hold data are read first
//! (read-modify-write); the units then enter the buffer (FIFO waiting when full) and the
//! request completes after `buffer_access_ns`. Full pages are placed by the FTL; a die
//! holds at most `HOST_PROGRAMS_PER_PLANE` queued host programs per plane, the rest waits
//! in the buffer. A flush completes when every unit written before it is durable.

use super::super::lookahead::Lookahead;
use super::interface::{Action, HostInterface};
use super::{Completion, Cx, Event};
use crate::base::Version;
use crate::cache::{LaneBuffers, Marks};
use crate::config::{Config, Derived};
use crate::error::Result;
use crate::flash::NONE;
use crate::ftl::zones::ZoneError;
use crate::ftl::{Ftl, ReadOutcome};
use crate::host::command::{self, Command, Driver, Parts, WriteUnits, ZoneDescriptor};
use crate::host::link::{HostPath, Payload};
use crate::host::{FlowState, Request, RequestTable, Splitter, Stage, UnitSpan};
use crate::sim::audit::Completed;
use crate::stats::{HostCounters, Latency, LatencyRecorder};
use crate::MAX_SLOTS_PER_PAGE;
use ssdlab_workload::{Arrival, HostOp, HostRequest, Workload};
use std::collections::VecDeque;

/// Host page programs a die may have queued or running, per plane of the die. Pages
/// beyond that stay in the DRAM buffer (where reads still hit and rewrites still merge)
/// instead of queueing behind GC and reads.
const HOST_PROGRAMS_PER_PLANE: u32 = 2;

pub(super) struct HostFrontEnd {
    reqs: RequestTable,
    flows: Vec<FlowState>,
    sources: Vec<Lookahead>,
    flow_names: Vec<String>,
    buffer: LaneBuffers,
    /// Per lane: waiting units below this sequence number go out in partial pages (a
    /// zone filled or finished, a unit of another page class followed them).
    lane_force: Vec<u64>,
    /// A page holds units of one class ([`command::page_classes`]).
    classes: bool,
    /// Writes waiting for buffer space, oldest first.
    buffer_waiters: VecDeque<u32>,
    /// Flushes waiting for their mark to be durable (and, with durable trims, the trim
    /// records written for them: the FTL's ticket); while any waits, partial pages are
    /// programmed (padded) instead of waiting for more units.
    drain_waiters: Vec<(u32, Marks, u64)>,
    /// Host page programs queued or running per die.
    host_programs_queued: Vec<u32>,
    /// The host is done; the device programs what is buffered.
    pub settling: bool,
    /// Requests are counted here when the host sees them complete
    /// ([`HostCounters::complete`]); units when the device takes them.
    pub counters: HostCounters,
    /// Units of the writes completed so far (`write_units` at a power cut).
    completed_write_units: u64,
    /// Zone reports' zones until their requests complete (kept only while completions are
    /// collected or traced), by request (the command's id with a host interface).
    zone_reports: Vec<(u32, Vec<ZoneDescriptor>)>,
    latency: LatencyRecorder,
    per_flow: Vec<LatencyRecorder>,
    /// The workload's origins (`WorkloadStats::origins`: a request's tag is its origin's
    /// index) and a recorder per origin; both empty when it names none.
    origins: &'static [&'static str],
    by_origin: Vec<LatencyRecorder>,
    completions: Option<Vec<Completion>>,
    /// Receives every completion as it happens (`run --request-log`).
    sink: Option<super::CompletionSink>,
    duration_ns: Option<u64>,
    buffer_access_ns: u64,
    /// Flushes complete at once (`ftl.power_loss_protection`).
    flush_free: bool,
    last_completion_ns: u64,
    planes_per_die: u32,
    slots_per_page: u32,
    splitter: Splitter,
    /// Host idle time before background work drains (0 = never), and the timer's epoch.
    idle_gc_after_ns: u64,
    idle_epoch: u32,
    /// The workload's journal range (units, spec 05) and its writes waiting to be durable
    /// (buffer mark, submit time): their latency until durable goes to `journal_latency`.
    journal_truth: Option<(u32, u32)>,
    journal_waiters: VecDeque<(u64, u64)>,
    journal_latency: hdrhistogram::Histogram<u64>,
    /// `[device.host_interface]`: submission queues, arbitration, the PCIe link.
    iface: Option<HostInterface>,
    /// Without a host interface: the host data path every request's data crosses
    /// (`device.host_transfer_mb_per_s`).
    host_path: HostPath,
    /// The shortest time from dispatch to data of a read served by NAND (audit).
    pub nand_read_min_ns: u64,
}

impl HostFrontEnd {
    pub fn new(
        cfg: &Config,
        d: &Derived,
        workload: Workload,
        mut threads: usize,
        ftl: &Ftl,
    ) -> HostFrontEnd {
        let g = d.geometry;
        let unit = g.unit_bytes as u64;
        let origins = workload.stats.origins();
        let journal_truth = workload
            .stats
            .journal_range()
            .map(|(lo, hi)| ((lo / unit) as u32, hi.div_ceil(unit) as u32));
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
            sources.push(Lookahead::new(
                f.source,
                crate::ftl::prefetch_pays(d.logical_units),
                &mut threads,
            ));
            flow_names.push(f.name);
        }
        let n = flows.len();
        let lanes = ftl.lanes();
        let iface = cfg
            .device
            .host_interface
            .as_ref()
            .map(|h| HostInterface::new(h, n));
        HostFrontEnd {
            iface,
            host_path: HostPath::default(),
            nand_read_min_ns: u64::MAX,
            reqs: RequestTable::default(),
            flows,
            sources,
            flow_names,
            buffer: LaneBuffers::new(d.write_buffer_units, lanes, d.logical_units),
            lane_force: vec![0; lanes],
            classes: command::page_classes(ftl),

            buffer_waiters: VecDeque::new(),
            drain_waiters: Vec::new(),
            host_programs_queued: vec![0; g.dies as usize],
            settling: false,
            counters: HostCounters::default(),
            completed_write_units: 0,
            zone_reports: Vec::new(),
            latency: LatencyRecorder::default(),
            // One flow: its latencies are the host's (no recorder of its own).
            per_flow: (0..if n > 1 { n } else { 0 })
                .map(|_| LatencyRecorder::default())
                .collect(),
            origins,
            by_origin: origins.iter().map(|_| LatencyRecorder::default()).collect(),
            completions: None,
            sink: None,
            duration_ns: workload.duration_ns,
            buffer_access_ns: cfg.ftl.buffer_access_ns,
            flush_free: command::flush_free(cfg.ftl.power_loss_protection, ftl),
            last_completion_ns: 0,
            planes_per_die: g.planes_per_die,
            slots_per_page: g.slots_per_page,
            splitter: Splitter::for_device(ftl),
            idle_gc_after_ns: cfg.ftl.idle_gc_after_ns,
            idle_epoch: 0,
            journal_truth,
            journal_waiters: VecDeque::new(),
            journal_latency: crate::stats::new_histogram(),
        }
    }

    /// Latency of the journal's writes until durable, when the workload has a journal
    /// (a journal range, or journal-labelled requests).
    pub fn take_journal_latency(&mut self) -> Option<hdrhistogram::Histogram<u64>> {
        (self.journal_truth.is_some() || !self.journal_latency.is_empty())
            .then(|| std::mem::replace(&mut self.journal_latency, crate::stats::new_histogram()))
    }

    /// Write `id` is in the buffer: a journal write's latency runs until it is durable.
    fn note_journal_write(&mut self, id: u32, now: u64) {
        let r = self.reqs.get(id);
        let in_range = |(lo, hi): (u32, u32)| r.span.first >= lo && r.span.first < hi;
        if r.op != HostOp::Write
            || !r
                .journal
                .unwrap_or_else(|| self.journal_truth.is_some_and(in_range))
        {
            return;
        }
        if self.flush_free {
            let _ = self
                .journal_latency
                .record((now - r.submit_ns + self.buffer_access_ns).max(1));
        } else {
            self.journal_waiters
                .push_back((self.buffer.lane(0).end_seq(), r.submit_ns));
        }
    }

    /// Journal writes whose units are now durable.
    fn journal_durable(&mut self, durable: u64, now: u64) {
        while let Some(&(mark, submit)) = self.journal_waiters.front() {
            if mark > durable {
                break;
            }
            self.journal_waiters.pop_front();
            let _ = self.journal_latency.record((now - submit).max(1));
        }
    }

    pub fn set_completion_sink(&mut self, sink: super::CompletionSink) {
        self.sink = Some(sink);
    }

    pub fn trace_completions(&mut self) {
        self.completions = Some(Vec::new());
    }

    #[cfg(test)]
    pub(super) fn buffer_for_test(&mut self) -> &mut crate::cache::WriteBuffer {
        self.buffer.lane_mut(0)
    }

    /// The units request `id` covers.
    pub fn span_of(&self, id: u32) -> std::ops::Range<u32> {
        self.reqs.get(id).span.lpns()
    }

    /// Requests in flight (with the host interface: commands not yet completed to the host).
    pub fn in_flight(&self) -> u32 {
        match &self.iface {
            None => self.reqs.in_flight,
            Some(i) => i.in_flight(),
        }
    }

    /// Every flow is exhausted and nothing is in flight.
    pub fn done(&self) -> bool {
        self.in_flight() == 0 && self.flows.iter().all(|f| f.exhausted)
    }

    /// The host interface's figures over a phase `sim_time_ns` long, when there is one.
    pub fn interface_summary(
        &self,
        cfg: &Config,
        sim_time_ns: u64,
    ) -> Option<super::interface::HostInterfaceSummary> {
        let (i, h) = (self.iface.as_ref()?, cfg.device.host_interface.as_ref()?);
        Some(i.summary(h, &self.flow_names, sim_time_ns))
    }

    /// Write-buffer units held (waiting for a page or in flight).
    pub fn buffer_units(&self) -> u32 {
        self.buffer.pending_units() + self.buffer.inflight_units()
    }

    /// Writes waiting for buffer space.
    pub fn buffer_waiters(&self) -> u32 {
        self.buffer_waiters.len() as u32
    }

    pub fn buffer_is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// Host writes wait for buffer space (host programs then take turns on their dies).
    pub fn writes_blocked(&self) -> bool {
        !self.buffer_waiters.is_empty()
    }

    pub fn idle_epoch_is(&self, epoch: u32) -> bool {
        epoch == self.idle_epoch && self.in_flight() == 0 && !self.settling
    }

    /// Time of the last completion so far (or, once [`HostFrontEnd::measured_until`]
    /// extended it, the end of the measured phase).
    pub fn last_completion_ns(&self) -> u64 {
        self.last_completion_ns
    }

    /// The measured phase ends at `now_ns` though requests are still in flight (the device
    /// wore out): its figures, which count those requests' bytes, cover the time up to it.
    pub fn measured_until(&mut self, now_ns: u64) {
        self.last_completion_ns = self.last_completion_ns.max(now_ns);
    }

    /// Time the data path carried data up to `now_ns`: the link's directions (down, up)
    /// with a host interface, else the host transfer path's (in both).
    pub fn data_path_busy_ns(&self, now_ns: u64) -> [u64; 2] {
        match &self.iface {
            Some(i) => i.busy_ns_at(now_ns),
            None => [self.host_path.busy_ns_at(now_ns); 2],
        }
    }

    /// Keep completions for [`HostFrontEnd::drain_completions`] (a server replies to them).
    pub fn collect_completions(&mut self) {
        self.completions.get_or_insert_with(Vec::new);
    }

    /// Move the completions kept so far into `into`.
    pub fn drain_completions(&mut self, into: &mut Vec<Completion>) {
        if let Some(c) = self.completions.as_mut() {
            into.append(c);
        }
    }

    /// Version of `lpn` the write buffer holds (waiting or in flight), if any.
    pub fn buffered(&self, lpn: u32) -> Option<Version> {
        self.buffer.lookup(lpn)
    }

    /// A request from outside the workload (a server's client) on flow 0, now.
    pub fn submit_external(&mut self, r: HostRequest, cx: &mut Cx) -> Result<()> {
        self.submit(0, r, cx)
    }

    /// The host counters if power were cut now (`ssdlab serve`): a request counts as read,
    /// written, trimmed or flushed only if it completed; those in flight (submitted, not
    /// completed) failed and count in `failed_requests` only.
    pub fn counters_at_cut(&self) -> HostCounters {
        let mut c = self.counters;
        c.write_units = self.completed_write_units;
        c.failed_requests += self.flows.iter().map(|f| f.in_flight as u64).sum::<u64>();
        c
    }

    /// Requests completed so far, by operation (the time series' rates, the audit).
    pub fn completed(&self) -> Completed {
        let c = &self.counters;
        Completed {
            reads: c.reads,
            writes: c.writes,
            flushes: c.flushes,
            trims: c.trims,
            zone_commands: c.zone_commands,
            failed: c.failed_requests,
            read_bytes: c.read_bytes,
            write_bytes: c.write_bytes,
            trim_bytes: c.trim_bytes,
            write_units: self.completed_write_units,
        }
    }

    /// The host counters of figures taken now: the requests completed, and those the
    /// device took and the host has not seen complete (a snapshot, a worn-out device)
    /// counted as they stand, each by its kind and bytes or as failed if the device
    /// failed it (with a host interface: each command the device took, a request once
    /// for its first part; [`HostInterface::count_taken`]).
    fn counters_with_taken(&self) -> HostCounters {
        let mut c = self.counters;
        match &self.iface {
            None => {
                for r in self.reqs.live() {
                    c.complete(r.op, r.bytes, r.error);
                }
            }
            Some(i) => i.count_taken(self.reqs.live(), &mut c),
        }
        c
    }

    /// The latencies by origin so far (empty when the workload names no origins).
    pub fn by_origin_now(&self) -> Vec<(&'static str, Latency)> {
        self.origins
            .iter()
            .zip(&self.by_origin)
            .map(|(&o, r)| (o, r.clone().into_latency()))
            .collect()
    }

    /// The latencies by origin of the phase, taken (the recorders left empty).
    pub fn take_by_origin(&mut self) -> Vec<(&'static str, Latency)> {
        let by_origin = std::mem::take(&mut self.by_origin);
        self.origins
            .iter()
            .zip(by_origin)
            .map(|(&o, r)| (o, r.into_latency()))
            .collect()
    }

    /// The statistics so far, as [`HostFrontEnd::finish`] gives them at the end (without
    /// completions), the phase going on.
    #[allow(clippy::type_complexity)]
    pub fn snapshot(
        &self,
    ) -> (
        HostCounters,
        Latency,
        Vec<(String, Latency)>,
        u64,
        Option<hdrhistogram::Histogram<u64>>,
    ) {
        let latency = self.latency.clone().into_latency();
        let per_flow: Vec<Latency> = if self.per_flow.is_empty() {
            vec![latency.clone()]
        } else {
            self.per_flow
                .iter()
                .map(|r| r.clone().into_latency())
                .collect()
        };
        let journal = (self.journal_truth.is_some() || !self.journal_latency.is_empty())
            .then(|| self.journal_latency.clone());
        (
            self.counters_with_taken(),
            latency,
            self.flow_names.iter().cloned().zip(per_flow).collect(),
            self.last_completion_ns,
            journal,
        )
    }

    /// The statistics of the phase: host counters, latencies, per-flow latencies, time of
    /// the last completion, completions traced.
    #[allow(clippy::type_complexity)]
    pub fn finish(
        self,
    ) -> (
        HostCounters,
        Latency,
        Vec<(String, Latency)>,
        u64,
        Vec<Completion>,
    ) {
        let counters = self.counters_with_taken();
        let latency = self.latency.into_latency();
        let per_flow: Vec<Latency> = if self.per_flow.is_empty() {
            vec![latency.clone()]
        } else {
            self.per_flow
                .into_iter()
                .map(LatencyRecorder::into_latency)
                .collect()
        };
        (
            counters,
            latency,
            self.flow_names.into_iter().zip(per_flow).collect(),
            self.last_completion_ns,
            self.completions.unwrap_or_default(),
        )
    }

    /// Submit every flow's first requests.
    pub fn start(&mut self, cx: &mut Cx) -> Result<()> {
        for f in 0..self.flows.len() {
            match self.flows[f].arrival {
                Arrival::Closed { .. } | Arrival::Paced { .. } => self.refill_closed(f, cx)?,
                Arrival::Open => self.fetch_open(f, cx)?,
            }
        }
        Ok(())
    }

    fn past_duration(&self, cx: &Cx) -> bool {
        self.duration_ns.is_some_and(|d| cx.now() >= d)
    }

    /// Closed loop: submit until the flow's queue depth is reached; a paced flow's
    /// request drawn before its `arrival_ns` is held until then (nothing else drawn
    /// meanwhile). (Kept out of line, as is `op_done`: with them inlined the PGO build
    /// ran 1–5 % slower, docs/speed.md.)
    #[inline(never)]
    fn refill_closed(&mut self, f: usize, cx: &mut Cx) -> Result<()> {
        let (queue_depth, paced) = match self.flows[f].arrival {
            Arrival::Closed { queue_depth } => (queue_depth, false),
            Arrival::Paced { queue_depth } => (queue_depth, true),
            Arrival::Open => return Ok(()),
        };
        while !self.flows[f].exhausted
            && self.flows[f].in_flight < queue_depth
            && self.flows[f].next.is_none()
        {
            if self.past_duration(cx) || cx.ftl.worn_out() {
                self.flows[f].exhausted = true;
                break;
            }
            let mut r = HostRequest {
                tag: 0,
                placement_id: 0,
                arrival_ns: 0,
                op: HostOp::Read,
                offset_bytes: 0,
                size_bytes: 0,
                journal: None,
            };
            if self.sources[f].next_into(&mut r, cx.ftl)? {
                if paced && r.arrival_ns > cx.now() {
                    self.flows[f].next = Some(r);
                    cx.q.schedule_last_at(r.arrival_ns, Event::Arrival { flow: f as u16 });
                    break;
                }
                self.submit(f, r, cx)?;
            } else {
                self.flows[f].exhausted = true;
            }
        }
        Ok(())
    }

    /// Open loop: read the flow's next request and schedule its arrival.
    fn fetch_open(&mut self, f: usize, cx: &mut Cx) -> Result<()> {
        match self.sources[f].next(cx.ftl)? {
            Some(r) if self.duration_ns.is_none_or(|d| r.arrival_ns < d) => {
                self.flows[f].next = Some(r);
                let at = r.arrival_ns.max(cx.now());
                cx.q.schedule_last_at(at, Event::Arrival { flow: f as u16 });
            }
            _ => self.flows[f].exhausted = true,
        }
        Ok(())
    }

    pub fn on_arrival(&mut self, f: usize, cx: &mut Cx) -> Result<()> {
        if let Some(r) = self.flows[f].next.take() {
            if cx.ftl.worn_out() {
                self.flows[f].exhausted = true;
                return Ok(());
            }
            self.submit(f, r, cx)?;
        }
        match self.flows[f].arrival {
            Arrival::Paced { .. } => self.refill_closed(f, cx),
            _ => self.fetch_open(f, cx),
        }
    }

    /// The host submits `r` on flow `f`: to the device at once, or through the host
    /// interface's submission queue.
    fn submit(&mut self, f: usize, r: HostRequest, cx: &mut Cx) -> Result<()> {
        let span = self.splitter.split(&r)?;
        self.flows[f].in_flight += 1;
        self.idle_epoch = self.idle_epoch.wrapping_add(1);
        if cx.ftl.host_idle() {
            let (ftl, mut sink) = cx.parts();
            ftl.set_host_idle(false, &mut sink)?;
        }
        match self.iface.as_mut() {
            None => self.dispatch(f, r, span, NONE, cx),
            Some(i) => {
                i.submit(f, r, span, cx);
                self.run_actions(cx)
            }
        }
    }

    /// The device takes request (or command) `r` of flow `f`: decoded once, carried out
    /// by [`command::execute`] with this front end's buffer and queues ([`Exec`]).
    fn dispatch(
        &mut self,
        f: usize,
        r: HostRequest,
        span: UnitSpan,
        cmd_id: u32,
        cx: &mut Cx,
    ) -> Result<()> {
        let cmd = Command::decode(&r, span, cx.ftl, &self.buffer, &mut self.counters);
        let id = self.reqs.insert(Request::new(
            f as u16,
            &r,
            span,
            Stage::Reading,
            cx.now(),
            cmd_id,
        ));
        command::execute(&mut Exec { front: self, cx }, cmd, id, r.tag)
    }

    fn finish_after_buffer(&mut self, id: u32, cx: &mut Cx) {
        let ready = cx.now() + self.buffer_access_ns;
        self.complete_at(id, ready, cx);
    }

    /// Request `id` is done with the device at `ready_ns`; without a host interface its
    /// data then crosses the host data path (`device.host_transfer_mb_per_s`, one
    /// transfer at a time, in this order) and it completes at the transfer's end (with
    /// one, the link carries it: [`HostFrontEnd::complete`]). The one place a request's
    /// completion time is computed; the ends come in time order (one lane).
    fn complete_at(&mut self, id: u32, ready_ns: u64, cx: &mut Cx) {
        let r = self.reqs.get_mut(id);
        r.stage = Stage::Completing;
        let bytes = match (&self.iface, r.error) {
            (None, None) => Payload::of(r.op, r.bytes).bytes(),
            _ => 0,
        };
        let at = if bytes == 0 {
            ready_ns
        } else {
            let t = cx.ftl.timing();
            let ns = self.host_path.time_of(bytes, |b| t.host_transfer_ns(b));
            self.host_path.reserve(ready_ns, ns)
        };
        cx.q.schedule_in_lane(super::LANE_COMPLETE, at, Event::Complete { req: id });
    }

    /// One NAND read of request `id` finished: start its plan's next stage, or finish.
    #[inline(never)]
    /// A NAND read of request `id` was uncorrectable: a read request fails with an
    /// Unrecovered Read Error when it completes (its units leave `read_units`: a failed
    /// request is counted as failed only). A write's read-modify-write read proceeds (the
    /// model keeps no bit values; counted in `reliability` only).
    pub fn read_failed(&mut self, id: u32) {
        let r = self.reqs.get_mut(id);
        if r.op == HostOp::Read && r.error.is_none() {
            r.error = Some(ZoneError::UnrecoveredRead);
            self.counters.read_units -= r.span.count as u64;
        }
    }

    pub fn op_done(&mut self, id: u32, cx: &mut Cx) -> Result<()> {
        let r = self.reqs.get_mut(id);
        r.pending_ops -= 1;
        if r.pending_ops > 0 {
            return Ok(());
        }
        if r.parked_ops > 0 {
            r.plan_stage += 1;
            let stage = r.plan_stage;
            let released = release_stage(cx, id, stage);
            let r = self.reqs.get_mut(id);
            r.parked_ops -= released;
            r.pending_ops += released;
            return Ok(());
        }
        if r.op.writes_data() {
            // Its read-modify-write reads are done.
            return self.admit_write(id, cx);
        }
        if r.op == HostOp::Read {
            self.nand_read_min_ns = self.nand_read_min_ns.min(cx.now() - r.submit_ns);
        }
        if self.iface.is_some() {
            return self.complete(id, cx);
        }
        self.complete_at(id, cx.now(), cx);
        Ok(())
    }

    /// The device is done with request `id` (and its data crossed the host data path:
    /// [`HostFrontEnd::complete_at`]): it completes, or its completion crosses the host
    /// interface, whose link carries the data.
    pub fn complete(&mut self, id: u32, cx: &mut Cx) -> Result<()> {
        let r = self.reqs.remove(id);
        match self.iface.as_mut() {
            None => self.host_completed(r, id, cx),
            Some(i) => {
                i.device_done(r.cmd, r.error, cx);
                Ok(())
            }
        }
    }

    /// The host sees request `r` (the front end's request `key`, or with a host interface
    /// the command that completed it) complete: counted once, with its outcome; its
    /// latency, the flow's next request.
    fn host_completed(&mut self, r: Request, key: u32, cx: &mut Cx) -> Result<()> {
        let now = cx.now();
        let latency = now - r.submit_ns;
        self.counters.complete(r.op, r.bytes, r.error);
        if r.error.is_none() {
            if r.op.writes_data() {
                self.completed_write_units += r.span.count as u64;
            }
            // A failed request is counted as failed only (`HostCounters::failed_requests`).
            self.latency.record(r.op, latency);
            if !self.per_flow.is_empty() {
                // One flow: its latencies are the host's (copied in `finish`).
                self.per_flow[r.flow as usize].record(r.op, latency);
            }
            // A workload naming origins tags each request with one (none: no recorder).
            if let Some(o) = self.by_origin.get_mut(r.tag as usize) {
                o.record(r.op, latency);
            }
        }
        self.last_completion_ns = now;
        if self.completions.is_some() || self.sink.is_some() {
            let c = Completion {
                flow: r.flow,
                op: r.op,
                submit_ns: r.submit_ns,
                complete_ns: now,
                offset_bytes: r.offset_bytes,
                size_bytes: r.bytes,
                tag: r.tag,
                error: r.error,
                zones: self.take_zone_report(key),
            };
            if let Some(sink) = self.sink.as_mut() {
                sink(&c);
            }
            if let Some(v) = self.completions.as_mut() {
                v.push(c);
            }
        }
        let f = r.flow as usize;
        if let (Some(e), Some(source)) = (r.error, self.sources.get_mut(f)) {
            // The source hears of it (the host log-structured layer stops the run).
            let failed = HostRequest {
                op: r.op,
                offset_bytes: r.offset_bytes,
                size_bytes: r.bytes,
                tag: r.tag,
                arrival_ns: r.submit_ns,
                placement_id: 0,
                journal: None,
            };
            source.request_failed(&failed, e.name())?;
        }
        self.flows[f].in_flight -= 1;
        self.refill_closed(f, cx)?;
        if self.in_flight() == 0 && self.idle_gc_after_ns > 0 && !self.settling {
            cx.q.schedule_in(
                self.idle_gc_after_ns,
                Event::Idle {
                    epoch: self.idle_epoch,
                },
            );
        }
        Ok(())
    }

    /// A link direction's scheduled finish (host interface).
    pub fn on_link(&mut self, dir: u8, gen: u32, cx: &mut Cx) -> Result<()> {
        if let Some(i) = self.iface.as_mut() {
            i.on_link(dir, gen, cx);
        }
        self.run_actions(cx)
    }

    /// The controller processed command `cmd` (host interface).
    pub fn on_processed(&mut self, cmd: u32, cx: &mut Cx) -> Result<()> {
        if let Some(a) = self.iface.as_mut().and_then(|i| i.on_processed(cmd, cx)) {
            self.run_action(a, cx)?;
        }
        self.run_actions(cx)
    }

    /// Command `cmd`'s completion message arrived at the host (host interface).
    pub fn on_completion(&mut self, cmd: u32, cx: &mut Cx) -> Result<()> {
        if let Some(a) = self.iface.as_mut().and_then(|i| i.on_completion(cmd, cx)) {
            self.run_action(a, cx)?;
        }
        self.run_actions(cx)
    }

    /// Carry out what the host interface asked: dispatch commands to the device, complete
    /// requests to the host.
    /// (In the order asked: what an action asks is done after the actions before it.)
    fn run_actions(&mut self, cx: &mut Cx) -> Result<()> {
        while let Some(a) = self.iface.as_mut().and_then(HostInterface::next_action) {
            self.run_action(a, cx)?;
        }
        Ok(())
    }

    fn run_action(&mut self, a: Action, cx: &mut Cx) -> Result<()> {
        match a {
            Action::Dispatch(f, r, span, id) => {
                // A whole request was split when submitted; a part is split now.
                let span = match span {
                    Some(s) => s,
                    None => self.splitter.split(&r)?,
                };
                self.dispatch(f as usize, r, span, id, cx)
            }
            Action::Completed(f, r, span, submit_ns, error, cmd) => {
                // The span as split when the request was submitted (only a write's is
                // counted at completion: `host_completed`).
                let mut req = Request::new(f, &r, span, Stage::Completing, submit_ns, NONE);
                req.error = error;
                self.host_completed(req, cmd, cx)
            }
        }
    }

    /// The zones a report of request `key` returned, taken (none for other requests).
    fn take_zone_report(&mut self, key: u32) -> Vec<ZoneDescriptor> {
        match self.zone_reports.iter().position(|r| r.0 == key) {
            Some(i) => self.zone_reports.swap_remove(i).1,
            None => Vec::new(),
        }
    }

    /// Put a write's units into the buffer as space allows (oldest waiting write first).
    fn admit_write(&mut self, id: u32, cx: &mut Cx) -> Result<()> {
        self.reqs.get_mut(id).stage = Stage::AwaitingBuffer;
        self.buffer_waiters.push_back(id);
        if self.buffer_waiters.len() == 1 {
            self.serve_buffer_waiters(cx)?;
        }
        Ok(())
    }

    fn serve_buffer_waiters(&mut self, cx: &mut Cx) -> Result<()> {
        // A failed device settling takes no new units (it programs those it took).
        let admit = !(self.settling && cx.ftl.worn_out());
        while let Some(&id) = self.buffer_waiters.front().filter(|_| admit) {
            let r = self.reqs.get(id);
            let w = WriteUnits {
                span: r.span,
                lane: r.lane,
                tag: r.tag,
            };
            // `pending_ops` counts the units already in while the write waits here.
            let done = r.pending_ops;
            let done = command::put_units(&mut Exec { front: self, cx }, id, &w, done)?;
            if done < w.span.count {
                self.reqs.get_mut(id).pending_ops = done;
                break; // no room: a program completion calls again
            }
            self.buffer_waiters.pop_front();
            self.reqs.get_mut(id).pending_ops = 0;
        }
        self.pump_buffer(cx)
    }

    /// Zone `zone` is being reset: the writes to it still waiting for buffer space (or for
    /// a lane) insert nothing more (their units count as dropped by the reset).
    fn drop_waiting_writes(&mut self, zone: u32, cx: &mut Cx) {
        let Some(zs) = cx.ftl.zones() else {
            return;
        };
        for &id in &self.buffer_waiters {
            let q = self.reqs.get_mut(id);
            if q.op.writes_data() && zs.zone_of(q.span.first) == zone {
                q.pending_ops = q.span.count;
            }
        }
    }

    /// Program full pages from the buffer (and partial ones when a flush asked).
    pub fn pump_buffer(&mut self, cx: &mut Cx) -> Result<()> {
        for lane in 0..self.buffer.count() {
            self.pump_lane(lane, cx)?;
        }
        Ok(())
    }

    /// Waiting units of `lane` below this go out in partial pages.
    fn force_lane(&mut self, lane: u8) {
        let l = lane as usize;
        self.lane_force[l] = self.buffer.lane(l).end_seq();
    }

    /// Lanes share the buffer's capacity and a page packs one lane, so the buffer can
    /// fill with partial pages of several lanes, none of which may go out, while no
    /// program is in flight whose completion would free room: the writes would wait
    /// forever (FDP handles, swarm). Then the lane with the most waiting units goes out
    /// in partial pages (padded, as a flush pads them); returns whether one did. (A
    /// zoned device's buffer holds a page of some active zone whenever it is full: a
    /// zone's page cannot be padded before the zone is done; `Derived` checks it.)
    fn unstall_lanes(&mut self) -> bool {
        let (b, spp) = (&self.buffer, self.slots_per_page);
        if b.count() == 1
            || b.inflight_units() > 0
            || (0..b.count()).any(|l| b.lane(l).pending_units() >= spp)
        {
            return false;
        }
        let fullest = (0..b.count())
            .rev()
            .max_by_key(|&l| b.lane(l).pending_units())
            .filter(|&l| b.lane(l).pending_units() > 0);
        match fullest {
            Some(l) => {
                self.force_lane(l as u8);
                true
            }
            None => false,
        }
    }

    /// [`HostFrontEnd::pump_buffer`] for one lane.
    fn pump_lane(&mut self, lane: usize, cx: &mut Cx) -> Result<()> {
        let spp = self.slots_per_page;
        let integrity = cx.ftl.integrity().is_some();
        let prefetch = cx.ftl.prefetches();
        // A flush forces out partial pages until every unit before its mark is in flight.
        let flush_mark = if self.settling {
            u64::MAX
        } else {
            let flushes = self.drain_waiters.iter().map(|w| w.1[lane]).max();
            flushes.unwrap_or(0).max(self.lane_force[lane])
        };
        // Every unit packs with every other (no journal apart, no zones): no page class.
        let one_class = !self.classes;
        let ppd = self.planes_per_die;
        let limit = HOST_PROGRAMS_PER_PLANE * ppd;
        loop {
            let b = self.buffer.lane(lane);
            if b.pending_units() < spp && (b.pending_units() == 0 || b.head_seq() >= flush_mark) {
                break;
            }
            if self.host_programs_queued.iter().all(|&q| q >= limit) {
                break; // every die has its fill of host programs; a completion calls again
            }
            let mut lpns = [0u32; MAX_SLOTS_PER_PAGE];
            let mut vers: [Version; MAX_SLOTS_PER_PAGE] = [0; MAX_SLOTS_PER_PAGE];
            let ftl = &*cx.ftl;
            let (l, v) = (&mut lpns[..spp as usize], &mut vers[..spp as usize]);
            let b = self.buffer.lane(lane);
            let n = if one_class {
                b.peek_page(l, v, |_| 0)
            } else {
                b.peek_page(l, v, |l| ftl.page_class(l))
            };
            if prefetch {
                // Overwriting a unit reads its mapping entry, then its old slot's valid bit
                // and block: ask for the page's entries together, then for what they name,
                // so the misses overlap instead of following one another.
                for &lpn in &lpns[..n] {
                    ftl.media().prefetch_unit(lpn, false);
                }
                for &lpn in &lpns[..n] {
                    ftl.media().prefetch_unit(lpn, true);
                }
                // The same for the pages that follow, a step each: the next page's valid
                // bits and blocks (its mapping entries asked for a page ago), the
                // mapping entries of the page after it.
                let page = spp as usize;
                for lpn in self.buffer.lane(lane).waiting_after(n, page) {
                    ftl.media().prefetch_unit(lpn, true);
                }
                for lpn in self.buffer.lane(lane).waiting_after(n + page, page) {
                    ftl.media().prefetch_unit(lpn, false);
                }
            }
            let versions: &[Version] = if integrity { &vers[..n] } else { &[] };
            let token = self.buffer.next_token(lane);
            let queued = &self.host_programs_queued;
            let geo = *cx.ftl.geometry();
            let has_room = |plane: u32| queued[geo.die_of_plane(plane) as usize] < limit;
            let (ftl, mut sink) = cx.parts();
            let placed =
                ftl.write_host_page(lane as u8, &lpns[..n], versions, token, &mut sink, has_room)?;
            let Some(plane) = placed else {
                // No plane can take the page now: a program completion or a GC erase
                // calls again.
                break;
            };
            self.buffer.lane_mut(lane).commit_page(n);
            self.host_programs_queued[geo.die_of_plane(plane) as usize] += 1;
        }
        Ok(())
    }

    /// The program of buffer page `token` (on `die`) completed.
    pub fn program_done(&mut self, token: u32, units: u32, die: u32, cx: &mut Cx) -> Result<()> {
        self.buffer.program_done(units, token);
        self.host_programs_queued[die as usize] -= 1;
        self.serve_buffer_waiters(cx)?;
        // Complete the flushes whose mark is now durable, keeping the others in order.
        if !self.journal_waiters.is_empty() {
            let durable = self.buffer.lane(0).durable_seq();
            self.journal_durable(durable, cx.now());
        }
        self.complete_flushes(cx);
        Ok(())
    }

    /// A page of trim records was programmed: flushes waiting for it may complete.
    pub fn trim_records_done(&mut self, cx: &mut Cx) {
        self.complete_flushes(cx);
    }

    /// Complete the flushes whose mark (and trim records) are now durable, keeping the
    /// others in order.
    fn complete_flushes(&mut self, cx: &mut Cx) {
        let mut kept = 0;
        for i in 0..self.drain_waiters.len() {
            let (id, mark, trims) = self.drain_waiters[i];
            if self.buffer.is_durable(&mark) && cx.ftl.trims_durable(trims) {
                self.finish_after_buffer(id, cx);
            } else {
                self.drain_waiters[kept] = (id, mark, trims);
                kept += 1;
            }
        }
        self.drain_waiters.truncate(kept);
    }
}

/// Queue the parked operations of request `req` for plan stage `stage`; returns how many.
fn release_stage(cx: &mut Cx, req: u32, stage: u8) -> u32 {
    let mut released = 0;
    let mut i = 0;
    while i < cx.out.parked.len() {
        let (r, op) = cx.out.parked[i];
        if r == req && op.stage == stage {
            cx.out.parked.remove(i);
            cx.sink().enqueue(op);
            released += 1;
        } else {
            i += 1;
        }
    }
    debug_assert!(released > 0 || req == NONE);
    released
}

/// The timed front end's side of a host command ([`command::Driver`]): the write buffer
/// (units wait for space, pages for room on the dies), the dies' queues (a request waits
/// for its NAND reads), and completion after the buffer access.
struct Exec<'f, 'c, 'x> {
    front: &'f mut HostFrontEnd,
    cx: &'c mut Cx<'x>,
}

impl Driver for Exec<'_, '_, '_> {
    type Buffer = LaneBuffers;
    type Sink<'s>
        = super::QueueSink<'s>
    where
        Self: 's;
    const IMMEDIATE: bool = false;

    #[inline(always)]
    fn parts(&mut self) -> Parts<'_, LaneBuffers, super::QueueSink<'_>> {
        let (ftl, sink) = self.cx.parts();
        Parts {
            ftl,
            buffer: &mut self.front.buffer,
            sink,
            counters: &mut self.front.counters,
        }
    }

    #[inline]
    fn reads_issued(&mut self, req: u32, out: &ReadOutcome) {
        let r = self.front.reqs.get_mut(req);
        r.pending_ops += out.nand_reads + out.nand_programs - out.staged_ops;
        r.parked_ops += out.staged_ops;
    }

    fn write(&mut self, req: u32, w: WriteUnits, reads_pending: bool) -> Result<()> {
        let unit = self.front.splitter.unit_bytes();
        let q = self.front.reqs.get_mut(req);
        (q.span, q.lane) = (w.span, w.lane);
        if q.op == HostOp::ZoneAppend {
            // The completion names where the append landed.
            q.offset_bytes = w.span.first as u64 * unit;
        }
        if reads_pending {
            return Ok(()); // admitted when its reads are done (`op_done`)
        }
        self.front.admit_write(req, self.cx)
    }

    #[inline]
    fn put(&mut self, w: &WriteUnits, lpn: u32) -> Result<bool> {
        let f = &mut *self.front;
        let lane = w.lane as usize;
        let ftl = &mut *self.cx.ftl;
        let mut forced = false;
        if f.classes {
            // A unit of another class than the first of the lane's open page (the waiting
            // units not yet closed) closes that page.
            let open = f.buffer.lane(lane).first_waiting_from(f.lane_force[lane]);
            if open.is_some_and(|first| ftl.page_class(first) != ftl.page_class(lpn)) {
                f.force_lane(w.lane);
                forced = true;
            }
        }
        let tag = w.tag;
        let inserted = f
            .buffer
            .try_insert(lane, lpn, || ftl.new_version_for(lpn, tag));
        if !inserted && ftl.zones().is_none() && f.unstall_lanes() {
            f.pump_buffer(self.cx)?;
            return Ok(false); // no room now: a program completion calls again
        }
        if forced || (inserted && f.buffer.lane(lane).pending_units() >= f.slots_per_page) {
            f.pump_buffer(self.cx)?;
        }
        Ok(inserted)
    }

    fn close_lane(&mut self, lane: u8) -> Result<()> {
        self.front.force_lane(lane);
        self.front.pump_buffer(self.cx)
    }

    #[inline]
    fn flush_is_free(&self) -> bool {
        self.front.flush_free
    }

    fn flush(&mut self, req: u32) -> Result<()> {
        // Covers the units written before it; later writes do not delay it.
        // The trims before it are recorded (durable trims; a power-loss-protected buffer,
        // whose flushes are free, keeps them with the rest of DRAM).
        let marks = self.front.buffer.end_marks();
        let (ftl, mut sink) = self.cx.parts();
        let trims = ftl.record_trims(&mut sink)?;
        if self.front.buffer.is_durable(&marks) && self.cx.ftl.trims_durable(trims) {
            self.front.finish_after_buffer(req, self.cx);
            return Ok(());
        }
        self.front.reqs.get_mut(req).stage = Stage::AwaitingDrain;
        self.front.drain_waiters.push((req, marks, trims));
        self.front.pump_buffer(self.cx)
    }

    #[inline]
    fn finish(&mut self, req: u32, error: Option<ZoneError>) -> Result<()> {
        match error {
            Some(e) => self.front.reqs.get_mut(req).error = Some(e),
            None => self.front.note_journal_write(req, self.cx.now()),
        }
        self.front.finish_after_buffer(req, self.cx);
        Ok(())
    }

    fn zones_reported(&mut self, req: u32, zones: Vec<ZoneDescriptor>) {
        let f = &mut *self.front;
        if f.completions.is_some() || f.sink.is_some() {
            // Named as its completion will be ([`HostFrontEnd::host_completed`]).
            let cmd = f.reqs.get(req).cmd;
            f.zone_reports
                .push((if cmd == NONE { req } else { cmd }, zones));
        }
    }

    fn lane_taken(&mut self, req: u32, lane: u8) {
        self.front.reqs.get_mut(req).lane = lane;
    }

    fn zone_resetting(&mut self, zone: u32) {
        self.front.drop_waiting_writes(zone, self.cx);
    }

    fn trim_covers_waiting_flush(&mut self, span: UnitSpan) -> bool {
        !self.front.drain_waiters.is_empty()
            && span.lpns().any(|l| self.front.buffer.lookup(l).is_some())
    }

    fn record_trims_for_waiting_flushes(&mut self) -> Result<()> {
        let (ftl, mut sink) = self.cx.parts();
        let ticket = ftl.record_trims(&mut sink)?;
        for w in &mut self.front.drain_waiters {
            w.2 = w.2.max(ticket);
        }
        Ok(())
    }

    fn space_freed(&mut self) -> Result<()> {
        if !self.front.buffer_waiters.is_empty() && self.front.buffer.inflight_units() == 0 {
            // Units dropped from the buffer made room, and no program completion is
            // coming to serve the waiting writes (with less than a page pending, none
            // would start): they waited for ever (swarm seed 32883).
            self.front.serve_buffer_waiters(self.cx)?;
        }
        Ok(())
    }
}
