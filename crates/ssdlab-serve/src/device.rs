//! The device loop: the simulation behind the NBD server.
//!
//! Commands from every connection arrive on one channel; each becomes one or more host
//! requests (parts) of the served phase ([`ssdlab_core::sim::serve`]), tagged by part.
//! When a command's last part completes it is answered on its connection (a read with
//! the bytes the device returns at that moment). A FUA write is answered after a flush
//! that follows its write completes.
//!
//! # Time
//! * **virtual** (default): simulated time advances only by handling events. A request
//!   arrives at the simulated time it is read from the socket (the time of the last event
//!   handled). After replies leave, the loop waits up to `grace` of wall time for the
//!   clients to send as many new requests as it answered (a closed-loop client such as
//!   fio resubmits at once) before it handles later events; then it goes on without
//!   them. With no request in flight the clock stands still, background work included:
//!   the time a client thinks costs no simulated time.
//! * **realtime** (`dilation` K): the loop handles the event at simulated time t no
//!   earlier than t × K after the start on the wall clock, and a request arrives at the
//!   simulated time that corresponds to its wall-clock arrival. A reply more than
//!   [`LATE_NS`] after its due time is counted late.

use crate::nbd::proto::{NBD_EIO, NBD_ESHUTDOWN};
use crate::nbd::{CmdKind, Command, Event, Replies};
use crate::trace::TraceWriter;
use serde::Serialize;
use ssdlab_core::sim::serve::Served;
use ssdlab_core::sim::stop;
use ssdlab_core::sim::timed::Completion;
use ssdlab_core::stats::TimeSeriesRow;
use ssdlab_core::{Results, SimError, Simulation};
use ssdlab_workload::{HostOp, HostRequest};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

/// A reply later than this after its due wall-clock time is counted late (realtime).
pub const LATE_NS: u64 = 20_000;

/// Zero writes (`WRITE_ZEROES` with `NO_HOLE`, or the partial units at its ends) go to
/// the device in parts of at most this many bytes.
const ZERO_PART_BYTES: u64 = 1 << 20;

/// `exit_on_disconnect`: how long no client may be connected before the server ends.
const EXIT_AFTER_IDLE: Duration = Duration::from_millis(500);

/// How long the loop blocks on the channel before it looks at signals and timers.
const POLL: Duration = Duration::from_millis(20);

/// How simulated time relates to the wall clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeMode {
    Virtual,
    Realtime { dilation: f64 },
}

/// What the loop does besides serving.
pub struct LoopOptions {
    pub time: TimeMode,
    /// Virtual time: how long to wait for clients after replies.
    pub grace: Duration,
    /// Virtual time: how far (simulated) the loop may run past a reply before it waits for
    /// the client's next request; such a request arrives up to this much late.
    pub run_ahead_ns: u64,
    /// Virtual time: replies that may be owed new requests while the loop runs ahead
    /// (within `run_ahead_ns`); more, and it waits.
    pub owed_slack: u32,
    /// Write the results every this often (wall clock).
    pub stats_interval: Option<Duration>,
    /// End when the last client disconnects (after at least one connected).
    pub exit_on_disconnect: bool,
    /// Cut power after this many client commands (of the current power cycle).
    pub power_cut_after_requests: Option<u64>,
    pub trace: Option<TraceWriter>,
    /// The clients' journal (bytes `lo..hi`): the journal detector is scored against it.
    pub journal_range: Option<(u64, u64)>,
    /// Why this device cannot have its power cut (a SIGUSR1 is then logged and ignored).
    pub power_cut_refused: Option<String>,
}

static POWER_CUT: AtomicBool = AtomicBool::new(false);

/// Ask the device loop to cut power at its next turn (async-signal-safe: SIGUSR1).
pub fn request_power_cut() {
    POWER_CUT.store(true, Ordering::Relaxed);
}

/// Commands received, by kind.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct CommandCounts {
    pub read: u64,
    pub write: u64,
    pub flush: u64,
    pub trim: u64,
    pub write_zeroes: u64,
    pub fua: u64,
    /// Answered with an error (a power cut, a device error).
    pub errors: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// The `serve` section of results.json.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServeSummary {
    pub time_mode: &'static str,
    pub dilation: Option<f64>,
    /// Connections that reached the transmission phase.
    pub connections: u64,
    pub commands: CommandCounts,
    /// Realtime: replies later than 20 µs after their due time, and the worst lateness.
    pub late_replies: u64,
    pub max_late_ns: u64,
    /// Virtual time: waits for clients after replies, and those that ran out of grace
    /// (the simulation then went on without the requests it waited for).
    pub grace_waits: u64,
    pub grace_timeouts: u64,
    /// Requests in flight on the device, averaged over simulated time (the queue depth
    /// the device saw; with fio at QD N in virtual time, close to N when the grace holds).
    pub mean_queue_depth: f64,
    /// Power cycles so far (1 + power cuts) and what each recovery did.
    pub power_cycle: u32,
    pub recoveries: Vec<serde_json::Value>,
    /// Memory the stored bytes take now.
    pub stored_data_bytes: u64,
}

/// Where the loop's figures go (files, written atomically by the caller).
pub trait Reporter {
    /// The figures of the current power cycle; `cycle_ended` when the cycle is over.
    fn report(
        &mut self,
        results: &Results,
        serve: &ServeSummary,
        series: &[TimeSeriesRow],
        cycle_ended: Option<u32>,
    ) -> std::io::Result<()>;
}

/// A client command in flight.
struct Parent {
    conn: u32,
    cookie: u64,
    kind: CmdKind,
    parts_left: u32,
    fua: bool,
    /// The FUA flush is in flight.
    flushing: bool,
    /// The read's bytes (reads are one part).
    data: Vec<u8>,
}

/// Slabs of parents and parts: a part's tag is its index.
#[derive(Default)]
struct InFlight {
    parents: Vec<Option<Parent>>,
    free_parents: Vec<u32>,
    parts: Vec<u32>,
    free_parts: Vec<u32>,
}

impl InFlight {
    fn add_parent(&mut self, p: Parent) -> u32 {
        match self.free_parents.pop() {
            Some(i) => {
                self.parents[i as usize] = Some(p);
                i
            }
            None => {
                self.parents.push(Some(p));
                (self.parents.len() - 1) as u32
            }
        }
    }

    fn add_part(&mut self, parent: u32) -> u32 {
        match self.free_parts.pop() {
            Some(i) => {
                self.parts[i as usize] = parent;
                i
            }
            None => {
                self.parts.push(parent);
                (self.parts.len() - 1) as u32
            }
        }
    }

    fn take_part(&mut self, tag: u32) -> u32 {
        self.free_parts.push(tag);
        self.parts[tag as usize]
    }

    fn clear(&mut self) -> Vec<Parent> {
        self.free_parts.clear();
        self.parts.clear();
        self.free_parents.clear();
        self.parents.drain(..).flatten().collect()
    }
}

/// A connection: its replies and the power cycle it was opened in.
struct Conn {
    replies: Replies,
    cycle: u32,
}

/// Why a power cycle ended.
enum CycleEnd {
    Stop,
    PowerCut,
}

pub struct DeviceLoop<'r> {
    opts: LoopOptions,
    rx: Receiver<Event>,
    reporter: &'r mut dyn Reporter,
    conns: BTreeMap<u32, Conn>,
    /// A client sent a command (a probe connection that sends none, as fio's first, does
    /// not count for `exit_on_disconnect`), and since when no connection is open.
    ever_commanded: bool,
    idle_since: Option<Instant>,
    flight: InFlight,
    summary: ServeSummary,
    /// Commands of this power cycle (for `power_cut_after_requests`), and whether they
    /// reached it (this loop's own cut; SIGUSR1 sets the process-wide one).
    cycle_commands: u64,
    cut_due: bool,
    start: Instant,
    completions: Vec<Completion>,
    next_stats: Option<Instant>,
    /// Virtual time: replies sent since clients last sent, and until when to wait.
    owed: u32,
    /// Σ requests in flight × simulated time, and the time it was last added to.
    depth_area: u128,
    depth_at_ns: u64,
    grace_until: Option<Instant>,
    /// Virtual time: the simulated time up to which the loop runs on while replies are
    /// owed new requests (the oldest such reply + `run_ahead_ns`).
    wait_from_ns: u64,
}

impl<'r> DeviceLoop<'r> {
    pub fn new(opts: LoopOptions, rx: Receiver<Event>, reporter: &'r mut dyn Reporter) -> Self {
        let summary = ServeSummary {
            time_mode: match opts.time {
                TimeMode::Virtual => "virtual",
                TimeMode::Realtime { .. } => "realtime",
            },
            dilation: match opts.time {
                TimeMode::Realtime { dilation } => Some(dilation),
                TimeMode::Virtual => None,
            },
            power_cycle: 1,
            ..ServeSummary::default()
        };
        let next_stats = opts.stats_interval.map(|d| Instant::now() + d);
        DeviceLoop {
            opts,
            rx,
            reporter,
            conns: BTreeMap::new(),
            ever_commanded: false,
            idle_since: None,
            flight: InFlight::default(),
            summary,
            cycle_commands: 0,
            cut_due: false,
            start: Instant::now(),
            completions: Vec::new(),
            next_stats,
            owed: 0,
            grace_until: None,
            wait_from_ns: 0,
            depth_area: 0,
            depth_at_ns: 0,
        }
    }

    /// Serve until stopped (SIGTERM/SIGINT, or the last client gone with
    /// `exit_on_disconnect`), cutting power and recovering as asked; the final figures go
    /// to the reporter. Hands back the trace writer (to finish) with the summary.
    pub fn run(
        mut self,
        sim: &mut Simulation,
    ) -> (Result<ServeSummary, SimError>, Option<TraceWriter>) {
        let r = self.run_inner(sim).map(|_| self.summary.clone());
        (r, self.opts.trace.take())
    }

    fn run_inner(&mut self, sim: &mut Simulation) -> Result<(), SimError> {
        loop {
            let end = {
                let mut served = sim.serve()?;
                served.set_journal_truth(self.opts.journal_range);
                self.start = Instant::now();
                (self.depth_area, self.depth_at_ns) = (0, 0);
                let end = self.cycle(&mut served)?;
                match end {
                    CycleEnd::Stop => {
                        self.drain_all(&mut served)?;
                        self.summary.stored_data_bytes = served.data_bytes();
                        self.note_depth(&served);
                        let (r, series) = served.finish()?;
                        self.report(&r, &series, None)?;
                        return Ok(());
                    }
                    CycleEnd::PowerCut => {
                        self.summary.stored_data_bytes = served.data_bytes();
                        self.note_depth(&served);
                        let (r, series) = if sim_has_plp(&served) {
                            // A power-loss-protected buffer is programmed on the capacitors.
                            self.drain_all(&mut served)?;
                            served.finish()?
                        } else {
                            served.cut()
                        };
                        self.report(&r, &series, Some(self.summary.power_cycle))?;
                        end
                    }
                }
            };
            let CycleEnd::PowerCut = end else {
                unreachable!()
            };
            self.power_cut_answers();
            let recovery = crate::power::power_on(sim, self.summary.power_cycle)?;
            self.summary.recoveries.push(recovery);
            self.summary.power_cycle += 1;
            self.cycle_commands = 0;
            self.cut_due = false;
            POWER_CUT.store(false, Ordering::Relaxed);
        }
    }

    fn report(
        &mut self,
        r: &Results,
        series: &[TimeSeriesRow],
        ended: Option<u32>,
    ) -> Result<(), SimError> {
        self.reporter
            .report(r, &self.summary, series, ended)
            .map_err(|e| SimError::Internal {
                what: format!("writing the results: {e}"),
            })
    }

    /// Every command in flight at a cut is answered `EIO`; connections of the old power
    /// cycle get `ESHUTDOWN` from now on (clients reconnect to the recovered device).
    fn power_cut_answers(&mut self) {
        for p in self.flight.clear() {
            self.summary.commands.errors += 1;
            if let Some(c) = self.conns.get(&p.conn) {
                c.replies.error(p.cookie, NBD_EIO);
            }
        }
        if let Some(t) = self.opts.trace.as_mut() {
            t.stop("power cut: the trace covers the first power cycle");
        }
    }

    /// One power cycle.
    fn cycle(&mut self, served: &mut Served) -> Result<CycleEnd, SimError> {
        loop {
            if stop::stop_requested() {
                return Ok(CycleEnd::Stop);
            }
            if self.cut_due || POWER_CUT.load(Ordering::Relaxed) {
                if let Some(why) = &self.opts.power_cut_refused {
                    eprintln!("serve: power cut refused: {why}");
                    POWER_CUT.store(false, Ordering::Relaxed);
                    self.cut_due = false;
                } else {
                    return Ok(CycleEnd::PowerCut);
                }
            }
            if self.opts.exit_on_disconnect && self.ever_commanded && self.conns.is_empty() {
                // The last client left: end unless another connects soon (fio's job
                // connection follows its probe's).
                let since = *self.idle_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= EXIT_AFTER_IDLE {
                    return Ok(CycleEnd::Stop);
                }
            } else {
                self.idle_since = None;
            }
            self.stats_if_due(served)?;
            match self.opts.time {
                TimeMode::Virtual => self.turn_virtual(served)?,
                TimeMode::Realtime { dilation } => self.turn_realtime(served, dilation)?,
            }
        }
    }

    fn stats_if_due(&mut self, served: &Served) -> Result<(), SimError> {
        let (Some(at), Some(every)) = (self.next_stats, self.opts.stats_interval) else {
            return Ok(());
        };
        if Instant::now() < at {
            return Ok(());
        }
        self.next_stats = Some(Instant::now() + every);
        self.summary.stored_data_bytes = served.data_bytes();
        self.note_depth(served);
        let (r, series) = served.results();
        self.report(&r, &series, None)
    }

    /// Take every event waiting on the channel; true if any came.
    fn intake(&mut self, served: &mut Served) -> Result<bool, SimError> {
        let mut any = false;
        loop {
            match self.rx.try_recv() {
                Ok(ev) => {
                    self.on_event(ev, served)?;
                    any = true;
                }
                Err(TryRecvError::Empty) => return Ok(any),
                Err(TryRecvError::Disconnected) => {
                    stop::request_stop();
                    return Ok(any);
                }
            }
        }
    }

    /// Wait up to `timeout` for an event and take it (and those behind it).
    fn wait(&mut self, served: &mut Served, timeout: Duration) -> Result<bool, SimError> {
        self.wait_then(served, timeout, |_, _| {})
    }

    /// [`DeviceLoop::wait`], calling `arrived` before the event is taken (real time moves
    /// the clock to the arrival).
    fn wait_then(
        &mut self,
        served: &mut Served,
        timeout: Duration,
        arrived: impl FnOnce(&Self, &mut Served),
    ) -> Result<bool, SimError> {
        match self.rx.recv_timeout(timeout) {
            Ok(ev) => {
                arrived(self, served);
                self.on_event(ev, served)?;
                self.intake(served)?;
                Ok(true)
            }
            Err(RecvTimeoutError::Timeout) => Ok(false),
            Err(RecvTimeoutError::Disconnected) => {
                stop::request_stop();
                Ok(false)
            }
        }
    }

    /// Add the requests in flight since the last call to the queue-depth average.
    fn note_depth(&mut self, served: &Served) {
        let now = served.now_ns();
        if now > self.depth_at_ns {
            self.depth_area += served.in_flight() as u128 * (now - self.depth_at_ns) as u128;
            self.depth_at_ns = now;
        }
        if now > 0 {
            let qd = self.depth_area as f64 / now as f64;
            self.summary.mean_queue_depth = (qd * 1e3).round() / 1e3;
        }
    }

    /// Handle the next event, keeping the queue-depth average.
    fn step(&mut self, served: &mut Served) -> Result<bool, SimError> {
        let next = served.next_event_ns();
        if let Some(t) = next {
            if t > self.depth_at_ns {
                self.depth_area += served.in_flight() as u128 * (t - self.depth_at_ns) as u128;
                self.depth_at_ns = t;
            }
        }
        served.step()
    }

    fn turn_virtual(&mut self, served: &mut Served) -> Result<(), SimError> {
        self.intake(served)?;
        if served.next_event_ns().is_none() || served.in_flight() == 0 {
            // No request in flight: the clock stands still until a client sends (background
            // work waits too), so a client's think time costs no simulated time.
            self.wait(served, POLL)?;
            return Ok(());
        }
        // Replies are owed new requests: past the run-ahead, wait (a grace) for them.
        let behind = served
            .next_event_ns()
            .is_some_and(|t| t > self.wait_from_ns);
        if self.owed > self.opts.owed_slack || (self.owed > 0 && behind) {
            let now = Instant::now();
            let until = *self.grace_until.get_or_insert(now + self.opts.grace);
            if now < until {
                // Clients answer within microseconds: poll the channel, spinning a few
                // hundred nanoseconds, then yielding the CPU (a sleep and a wake-up cost
                // more: measured, docs/serve.md).
                if !self.intake(served)? {
                    for _ in 0..64 {
                        std::hint::spin_loop();
                    }
                    if !self.intake(served)? {
                        std::thread::yield_now();
                    }
                }
                return Ok(());
            }
            self.summary.grace_timeouts += 1;
            self.owed = 0;
        }
        if self.owed == 0 && self.grace_until.take().is_some() {
            self.summary.grace_waits += 1;
        }
        self.step(served)?;
        let replied = self.answer(served)?;
        if replied > 0 && !self.opts.grace.is_zero() {
            if self.owed == 0 {
                self.wait_from_ns = served.now_ns() + self.opts.run_ahead_ns;
            }
            self.owed += replied;
        }
        Ok(())
    }

    fn sim_now_from_wall(&self, dilation: f64) -> u64 {
        (self.start.elapsed().as_nanos() as f64 / dilation) as u64
    }

    fn turn_realtime(&mut self, served: &mut Served, dilation: f64) -> Result<(), SimError> {
        // Events now due, then the clock to now, then new requests (arriving now).
        let target = self.sim_now_from_wall(dilation);
        while served.next_event_ns().is_some_and(|t| t <= target) {
            self.step(served)?;
            self.answer_realtime(served, dilation)?;
        }
        served.advance_to(target.max(served.now_ns()));
        if self.intake(served)? {
            self.answer_realtime(served, dilation)?;
            return Ok(());
        }
        let timeout = match served.next_event_ns() {
            Some(t) => {
                let due = Duration::from_nanos((t as f64 * dilation) as u64);
                due.saturating_sub(self.start.elapsed()).min(POLL)
            }
            None => POLL,
        };
        if timeout < Duration::from_micros(60) {
            std::thread::yield_now(); // closer than a timed wait can wake
        } else if self.wait_realtime(served, dilation, timeout)? {
            self.answer_realtime(served, dilation)?;
        }
        Ok(())
    }

    /// Realtime: wait for a request; one that comes arrives at its wall-clock time.
    fn wait_realtime(
        &mut self,
        served: &mut Served,
        dilation: f64,
        timeout: Duration,
    ) -> Result<bool, SimError> {
        self.wait_then(served, timeout, |me, served| {
            let t = me.sim_now_from_wall(dilation);
            let t = served.next_event_ns().map_or(t, |next| t.min(next));
            served.advance_to(t.max(served.now_ns()));
        })
    }

    fn answer_realtime(&mut self, served: &mut Served, dilation: f64) -> Result<(), SimError> {
        let before = self.completions.len();
        debug_assert_eq!(before, 0);
        served.drain_completions(&mut self.completions);
        let elapsed = self.start.elapsed().as_nanos() as u64;
        for c in &self.completions {
            let due = (c.complete_ns as f64 * dilation) as u64;
            let late = elapsed.saturating_sub(due);
            if late > LATE_NS {
                self.summary.late_replies += 1;
            }
            self.summary.max_late_ns = self.summary.max_late_ns.max(late);
        }
        self.answer_drained(served)?;
        Ok(())
    }

    /// Answer the completions of the last step; returns the replies sent.
    fn answer(&mut self, served: &mut Served) -> Result<u32, SimError> {
        served.drain_completions(&mut self.completions);
        self.answer_drained(served)
    }

    fn answer_drained(&mut self, served: &mut Served) -> Result<u32, SimError> {
        let mut replied = 0;
        let mut done = std::mem::take(&mut self.completions);
        for c in done.drain(..) {
            let pi = self.flight.take_part(c.tag);
            let Some(p) = self.flight.parents[pi as usize].as_mut() else {
                continue;
            };
            if c.op == HostOp::Read {
                served.read_data(c.offset_bytes, c.size_bytes, &mut p.data);
            }
            p.parts_left -= 1;
            if p.parts_left > 0 {
                continue;
            }
            if p.fua && !p.flushing {
                p.flushing = true;
                p.parts_left = 1;
                self.submit_part(served, pi, HostOp::Flush, 0, 0, None)?;
                continue;
            }
            let p = self.flight.parents[pi as usize].take().expect("parent");
            self.flight.free_parents.push(pi);
            if let Some(conn) = self.conns.get(&p.conn) {
                if p.kind == CmdKind::Read {
                    conn.replies.ok_vec(p.cookie, p.data);
                } else {
                    conn.replies.ok(p.cookie, &[]);
                }
                replied += 1;
            }
        }
        self.completions = done;
        Ok(replied)
    }

    fn on_event(&mut self, ev: Event, served: &mut Served) -> Result<(), SimError> {
        match ev {
            Event::Connected { conn, replies } => {
                self.summary.connections += 1;
                let cycle = self.summary.power_cycle;
                self.conns.insert(conn, Conn { replies, cycle });
            }
            Event::Disconnected { conn, why } => {
                if let Some(why) = why {
                    eprintln!("serve: connection {conn} ended: {why}");
                }
                self.conns.remove(&conn);
            }
            Event::Command(c) => {
                self.ever_commanded = true;
                if self.owed > 0 {
                    self.owed -= 1;
                }
                self.on_command(c, served)?;
            }
        }
        Ok(())
    }

    fn on_command(&mut self, c: Command, served: &mut Served) -> Result<(), SimError> {
        let Some(conn) = self.conns.get(&c.conn) else {
            return Ok(());
        };
        if conn.cycle != self.summary.power_cycle {
            // The device this connection opened lost power: it is gone for this client.
            conn.replies.error(c.cookie, NBD_ESHUTDOWN);
            self.summary.commands.errors += 1;
            return Ok(());
        }
        let n = &mut self.summary.commands;
        let len = c.length_bytes as u64;
        match c.kind {
            CmdKind::Read => {
                n.read += 1;
                n.read_bytes += len;
            }
            CmdKind::Write => {
                n.write += 1;
                n.write_bytes += len;
            }
            CmdKind::Flush => n.flush += 1,
            CmdKind::Trim => n.trim += 1,
            CmdKind::WriteZeroes => n.write_zeroes += 1,
        }
        let fua = c.fua
            && matches!(
                c.kind,
                CmdKind::Write | CmdKind::WriteZeroes | CmdKind::Trim
            );
        n.fua += fua as u64;
        let pi = self.flight.add_parent(Parent {
            conn: c.conn,
            cookie: c.cookie,
            kind: c.kind,
            parts_left: 0,
            fua,
            flushing: false,
            data: Vec::new(),
        });
        let unit = served.unit_bytes();
        let (off, end) = (c.offset_bytes, c.offset_bytes + len);
        // Whole units inside the range (a trim must not touch data outside it).
        let (lo, hi) = (off.div_ceil(unit) * unit, end / unit * unit);
        let mut parts: Vec<(HostOp, u64, u64, Option<Vec<u8>>)> = Vec::new();
        match c.kind {
            CmdKind::Read => {
                parts.push((HostOp::Read, off, len, None));
                self.flight.parents[pi as usize].as_mut().unwrap().data =
                    Vec::with_capacity(len as usize);
            }
            CmdKind::Write => parts.push((HostOp::Write, off, len, Some(c.data))),
            CmdKind::Flush => parts.push((HostOp::Flush, 0, 0, None)),
            CmdKind::Trim => {
                if lo < hi {
                    parts.push((HostOp::Trim, lo, hi - lo, None));
                }
            }
            CmdKind::WriteZeroes => {
                // Deallocated units read as zeros: whole units are trimmed unless the client
                // asked for allocation (NO_HOLE); the partial units at the ends are written.
                let (tl, th) = if c.no_hole || lo >= hi {
                    (end, end)
                } else {
                    (lo, hi)
                };
                let mut at = off;
                while at < end {
                    if at == tl && tl < th {
                        parts.push((HostOp::Trim, tl, th - tl, None));
                        at = th;
                        continue;
                    }
                    let stop = if at < tl { tl.min(end) } else { end };
                    let size = (stop - at).min(ZERO_PART_BYTES);
                    parts.push((HostOp::Write, at, size, Some(vec![0; size as usize])));
                    at += size;
                }
            }
        }
        if parts.is_empty() {
            // Nothing to do on the device (a trim of less than a unit): answered at once.
            self.flight.parents[pi as usize] = None;
            self.flight.free_parents.push(pi);
            conn.replies.ok(c.cookie, &[]);
            return Ok(());
        }
        self.flight.parents[pi as usize]
            .as_mut()
            .unwrap()
            .parts_left = parts.len() as u32;
        for (op, o, s, payload) in parts {
            self.submit_part(served, pi, op, o, s, payload)?;
        }
        self.cycle_commands += 1;
        if self
            .opts
            .power_cut_after_requests
            .is_some_and(|n| self.cycle_commands >= n && self.summary.power_cycle == 1)
        {
            self.cut_due = true;
        }
        Ok(())
    }

    fn submit_part(
        &mut self,
        served: &mut Served,
        parent: u32,
        op: HostOp,
        offset_bytes: u64,
        size_bytes: u64,
        payload: Option<Vec<u8>>,
    ) -> Result<(), SimError> {
        let tag = self.flight.add_part(parent);
        let r = HostRequest {
            arrival_ns: 0,
            op,
            offset_bytes,
            size_bytes,
            journal: None,
            tag,
            placement_id: 0,
        };
        if let Some(t) = self.opts.trace.as_mut() {
            t.record(served.now_ns(), op, offset_bytes, size_bytes);
        }
        served.submit(r, payload)
    }

    /// Step until nothing is in flight, answering (the end of a power cycle with power).
    fn drain_all(&mut self, served: &mut Served) -> Result<(), SimError> {
        while served.in_flight() > 0 {
            if !self.step(served)? {
                break;
            }
            self.answer(served)?;
        }
        self.answer(served)?;
        Ok(())
    }
}

fn sim_has_plp(served: &Served) -> bool {
    served.power_loss_protection()
}
