//! The device loop: the simulation behind the NBD server.
//!
//! Commands from every connection come from the [`Wire`] this loop polls on its own
//! thread (sockets read, requests parsed, replies batched per connection and sent at
//! each flush); each becomes one or more host requests (parts) of the served phase
//! ([`ssdlab_core::sim::serve`]), tagged by part.
//! When a command's last part completes it is answered on its connection (a read with
//! the bytes the device returns at that moment). A FUA write is answered after a flush
//! that follows its write completes. In functional mode every request completes as it is
//! submitted, and is answered at once.
//!
//! # Time
//! * **virtual** (default): simulated time advances only by handling events. A request
//!   arrives at the simulated time it is read from the socket (the time of the last event
//!   handled). Replies leave in batches of up to `owed_slack` (at most 8) and
//!   whenever the loop is about to wait. After replies leave, the loop waits up to
//!   `grace` of wall time for the clients to send as many new requests as it answered (a
//!   closed-loop client such as fio resubmits at once) before it handles later events;
//!   then it goes on without them. It waits in `poll`, after reading the sockets in a
//!   loop for up to `grace_spin` (adapted to the clients, `grace_wait`; 50 µs by default);
//!   the arrival rules are the same either way. With no request in flight the clock stands still, background work included:
//!   the time a client thinks costs no simulated time.
//! * **realtime** (`dilation` K): the loop handles the event at simulated time t no
//!   earlier than t × K after the start on the wall clock, and a request arrives at the
//!   simulated time that corresponds to the wall time it is taken (after every event
//!   due by then). It sleeps until 200 µs before the next event's due time, then spins;
//!   turns with 40 µs to spare ready the stored bytes' spare block buffers. A reply more than
//!   [`LATE_NS`] after its due time is counted late (and said on the log).
//!
//! # The end
//! A stop (SIGTERM, SIGINT, the last client gone) ends the loop in order: the commands in
//! flight are answered and the device settles, within `drain_timeout`; the results are
//! written either way (status `stopped` when the device did not settle in time). Results
//! are an aid: a snapshot or a power cycle's files that cannot be written are logged and
//! serving goes on; only the final results.json failing makes the server fail.

use crate::counts::{Counts, ErrorCounts};
use crate::log::Log;
use crate::nbd::proto::{NBD_EIO, NBD_ENOSPC, NBD_ESHUTDOWN};
use crate::nbd::{CmdKind, Command, Event, Ticket, Wire};
use crate::trace::TraceWriter;
use ssdlab_core::sim::audit::Verdict;
use ssdlab_core::sim::serve::{Served, WriteData};
use ssdlab_core::sim::stop;
use ssdlab_core::sim::timed::Completion;
use ssdlab_core::stats::TimeSeriesRow;
use ssdlab_core::{Results, RunStatus, SimError, Simulation};
use ssdlab_workload::{HostOp, HostRequest};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

pub use crate::counts::{CommandCounts, ServeSummary};

/// A reply later than this after its due wall-clock time is counted late (realtime).
pub const LATE_NS: u64 = 20_000;

/// Zero writes (`WRITE_ZEROES` with `NO_HOLE`, or the partial units at its ends) go to
/// the device in parts of at most this many bytes.
const ZERO_PART_BYTES: u64 = 1 << 20;

/// `exit_on_disconnect`: how long no client may be connected before the server ends.
const EXIT_AFTER_IDLE: Duration = Duration::from_millis(500);

/// Virtual time: the sockets are read at least every this many steps (more often while
/// replies are owed requests).
const INTAKE_EVERY_STEPS: u32 = 32;

/// Virtual time: replies sent in one batch at most (besides, the loop sends what it has
/// before it waits).
const MAX_BATCH: u32 = 8;

/// Virtual time: the shortest spin of a grace wait (unless `grace_spin` is shorter), from
/// which it grows again when the clients answer quickly.
const MIN_SPIN: Duration = Duration::from_micros(4);

/// Virtual time: spin-loop hints between two reads of the sockets while spinning.
const SPIN_PAUSES: u32 = 16;

/// Realtime: the loop spins instead of sleeping this close to an event's due time.
const SPIN_MARGIN_US: u64 = 200;

/// Realtime: the scheduler slice the device thread asks for (EEVDF's shortest).
const SLICE_NS: u64 = 100_000;

/// Realtime: bytes of spare block buffers readied per turn (a few pages: the sockets are
/// read again soon), and how far the next event must be for it (a turn that readies takes
/// a few µs; one that faults fresh pages in, up to tens).
const READY_BYTES: usize = 16 * 1024;
const READY_AHEAD: Duration = Duration::from_micros(40);

/// How long the loop blocks on the sockets before it looks at signals and timers.
const POLL: Duration = Duration::from_millis(20);

/// Realtime: late replies are said on the log at most this often (and at the end).
const LATE_REPORT_EVERY: Duration = Duration::from_secs(10);

/// Realtime: the wall time (ns since the start) at which simulated time `t_ns` is due at
/// `dilation` wall ns per simulated ns, rounded up (a wait never ends before it).
fn due_wall_ns(t_ns: u64, dilation: f64) -> u64 {
    (t_ns as f64 * dilation).ceil() as u64
}

/// Realtime: how long from `elapsed` (wall time since the start) until simulated time
/// `t_ns` is due (zero when it is past).
fn due_in(t_ns: u64, dilation: f64, elapsed: Duration) -> Duration {
    Duration::from_nanos(due_wall_ns(t_ns, dilation)).saturating_sub(elapsed)
}

/// How simulated time relates to the wall clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeMode {
    Virtual,
    Realtime { dilation: f64 },
}

/// What the loop does besides serving.
pub struct LoopOptions {
    pub time: TimeMode,
    /// Realtime: run the loop's thread under `SCHED_FIFO` at this priority (1 to 99).
    pub realtime_priority: Option<u32>,
    /// Virtual time: how long to wait for clients after replies.
    pub grace: Duration,
    /// Virtual time: how far (simulated) the loop may run past a reply before it waits for
    /// the client's next request; such a request arrives up to this much late.
    pub run_ahead_ns: u64,
    /// Virtual time: replies that may be owed new requests while the loop runs ahead
    /// (within `run_ahead_ns`); more, and it waits.
    pub owed_slack: u32,
    /// Virtual time: how long a grace wait reads the sockets in a loop, at most, before it
    /// sleeps (zero: it sleeps at once).
    pub grace_spin: Duration,
    /// Write the results every this often (wall clock).
    pub stats_interval: Option<Duration>,
    /// End when the last client disconnects (after at least one connected).
    pub exit_on_disconnect: bool,
    /// Cut power after this many client commands (of the first power cycle).
    pub power_cut_after_requests: Option<u64>,
    pub trace: Option<TraceWriter>,
    /// The clients' journal (bytes `lo..hi`): the journal detector is scored against it.
    pub journal_range: Option<(u64, u64)>,
    /// Why this device cannot have its power cut (a SIGUSR1 is then logged and ignored).
    pub power_cut_refused: Option<String>,
    /// Writes are answered `ENOSPC` once the stored bytes would pass this.
    pub max_stored_bytes: Option<u64>,
    /// At the end, how long the commands in flight and the device's settling may take.
    pub drain_timeout: Duration,
    /// Where power cuts, recoveries, late replies, connections ended by an error and
    /// results that could not be written are said.
    pub log: Log,
}

/// Power cuts asked for (SIGUSR1) and not yet made: each is made once, in turn, even one
/// asked while a recovery runs.
static POWER_CUTS: AtomicU32 = AtomicU32::new(0);

/// Ask the device loop to cut power at its next turn (async-signal-safe: SIGUSR1). Cuts
/// asked before the loop makes the previous one are queued: each is made.
pub fn request_power_cut() {
    POWER_CUTS.fetch_add(1, Ordering::Relaxed);
}

/// Take one queued power cut, if any.
fn take_power_cut() -> bool {
    POWER_CUTS
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
        .is_ok()
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

    /// Where the figures go (for messages).
    fn place(&self) -> String;
}

/// A client command in flight.
struct Parent {
    conn: u32,
    ticket: Ticket,
    kind: CmdKind,
    parts_left: u32,
    fua: bool,
    /// The FUA flush is in flight.
    flushing: bool,
    /// A part failed on the device: the command is answered `EIO`.
    failed: bool,
    /// A read's range (reads are one part: its bytes are read into the reply when it
    /// completes).
    offset_bytes: u64,
    length_bytes: u64,
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

    fn take_parent(&mut self, i: u32) -> Option<Parent> {
        let p = self.parents[i as usize].take()?;
        self.free_parents.push(i);
        Some(p)
    }

    fn clear(&mut self) -> Vec<Parent> {
        self.free_parts.clear();
        self.parts.clear();
        self.free_parents.clear();
        self.parents.drain(..).flatten().collect()
    }
}

/// A connection: the power cycle it was opened in.
struct Conn {
    cycle: u32,
}

/// Why a power cycle ended.
enum CycleEnd {
    Stop,
    PowerCut,
}

/// Realtime: replies and late ones since the last report on the log, and overall.
struct Lateness {
    since: Instant,
    replies: u64,
    late: u64,
    max_ns: u64,
    all_replies: u64,
}

pub struct DeviceLoop<'r> {
    opts: LoopOptions,
    /// The connections' sockets: requests in, replies out (polled on this thread).
    wire: Wire,
    /// Events taken from the wire, being handled.
    events: Vec<Event>,
    /// Virtual time: steps since the sockets were last read, and replies made since the
    /// last flush.
    steps_since_intake: u32,
    unflushed: u32,
    /// A command's parts (reused).
    parts: Vec<Part>,
    /// Virtual time: replies sent together at most (`owed_slack`, 1 to [`MAX_BATCH`]).
    batch: u32,
    /// Realtime: how close to an event's due time the loop spins instead of sleeping.
    spin_margin: Duration,
    /// Virtual time: how long a grace wait spins before it sleeps (adapted to the
    /// clients, `grace_wait`).
    grace_spin: Duration,
    reporter: &'r mut dyn Reporter,
    conns: BTreeMap<u32, Conn>,
    /// A client sent a command (a probe connection that sends none, as fio's first, does
    /// not count for `exit_on_disconnect`), and since when no connection is open.
    ever_commanded: bool,
    idle_since: Option<Instant>,
    flight: InFlight,
    summary: ServeSummary,
    /// Commands of this power cycle (for `power_cut_after_requests`), and whether they
    /// reached it (this loop's own cut; SIGUSR1 queues the process-wide ones).
    cycle_commands: u64,
    cut_due: bool,
    start: Instant,
    completions: Vec<Completion>,
    next_stats: Option<Instant>,
    /// The last results snapshot could not be written (logged once until one succeeds).
    snapshot_failing: bool,
    /// The checks the last audited document failed (`a,b`; empty: none), so a snapshot's
    /// internal error is said once, not at every snapshot.
    failing_checks: String,
    lateness: Lateness,
    /// Virtual time: replies sent since clients last sent, and until when to wait.
    owed: u32,
    /// Σ requests in flight × simulated time, and the time it was last added to.
    depth_area: u128,
    depth_at_ns: u64,
    grace_until: Option<Instant>,
    /// Virtual time: the simulated time up to which the loop runs on while replies are
    /// owed new requests (the oldest such reply + `run_ahead_ns`).
    wait_from_ns: u64,
    /// Realtime with `realtime_priority`: the thread's `SCHED_FIFO` (left when serving
    /// ends).
    fifo: Option<crate::sched::Fifo>,
}

impl<'r> DeviceLoop<'r> {
    pub fn new(opts: LoopOptions, wire: Wire, reporter: &'r mut dyn Reporter) -> Self {
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
            max_stored_bytes: opts.max_stored_bytes,
            ..ServeSummary::default()
        };
        let next_stats = opts.stats_interval.map(|d| Instant::now() + d);
        let batch = opts.owed_slack.clamp(1, MAX_BATCH);
        let spin_margin = Duration::from_micros(SPIN_MARGIN_US);
        let grace_spin = opts.grace_spin;
        DeviceLoop {
            opts,
            wire,
            events: Vec::new(),
            steps_since_intake: 0,
            unflushed: 0,
            parts: Vec::new(),
            batch,
            spin_margin,
            grace_spin,
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
            snapshot_failing: false,
            failing_checks: String::new(),
            lateness: Lateness {
                since: Instant::now(),
                replies: 0,
                late: 0,
                max_ns: 0,
                all_replies: 0,
            },
            owed: 0,
            grace_until: None,
            wait_from_ns: 0,
            fifo: None,
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
        self.say_lateness_at_end();
        (r, self.opts.trace.take())
    }

    fn run_inner(&mut self, sim: &mut Simulation) -> Result<(), SimError> {
        if let TimeMode::Realtime { .. } = self.opts.time {
            // Timed waits end when asked, not up to 50 µs later (the default slack): a
            // reply is late past 20 µs.
            // SAFETY: PR_SET_TIMERSLACK takes an integer argument; it affects this thread.
            unsafe {
                libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
            }
            // SCHED_FIFO when asked (checked before preconditioning; refused now, the
            // loop goes on with the short slice and says so), else a short scheduler
            // slice: woken, this thread runs before the threads of the default slice (no
            // privilege needed; Linux 6.12 on, ignored before).
            if let Some(p) = self.opts.realtime_priority {
                match crate::sched::Fifo::enter(p) {
                    Ok(g) => {
                        self.fifo = Some(g);
                        self.summary.realtime_priority = Some(p);
                    }
                    Err(e) => self.opts.log.say(&format!(
                        "serve: realtime: {e}; serving goes on under the default policy"
                    )),
                }
            }
            if self.fifo.is_none() {
                if let Err(e) = crate::sched::short_slice(SLICE_NS) {
                    self.opts.log.say(&format!(
                        "serve: realtime: the scheduler refused a {} µs slice ({e}); wake-ups may come later",
                        SLICE_NS / 1000
                    ));
                }
            }
        }
        let r = self.cycles(sim);
        self.fifo = None;
        r
    }

    /// Power cycles until a stop.
    fn cycles(&mut self, sim: &mut Simulation) -> Result<(), SimError> {
        loop {
            {
                let mut served = sim.serve()?;
                served.set_journal_truth(self.opts.journal_range);
                self.start = Instant::now();
                (self.depth_area, self.depth_at_ns) = (0, 0);
                match self.cycle(&mut served)? {
                    CycleEnd::Stop => return self.end(served),
                    CycleEnd::PowerCut => self.cut(served)?,
                }
            }
            let wall = Instant::now();
            let recovery = crate::power::power_on(sim, self.summary.power_cycle)?;
            say_recovery(
                &self.opts.log,
                &recovery,
                wall.elapsed(),
                self.summary.power_cycle + 1,
            );
            self.summary.recoveries.push(recovery);
            self.summary.next_cycle();
            self.cycle_commands = 0;
            self.cut_due = false;
        }
    }

    /// Power is cut: what was not durable is lost, the commands in flight are answered
    /// `EIO`, the cycle's figures are kept.
    fn cut(&mut self, mut served: Served) -> Result<(), SimError> {
        self.summary.stored_data_bytes = served.data_bytes();
        self.note_depth(&served);
        let plp = served.power_loss_protection();
        let volatile_units = served.volatile_units();
        let now_ns = served.now_ns();
        let (r, series) = if plp {
            // A power-loss-protected buffer is programmed on the capacitors.
            self.drain_until(&mut served, Instant::now() + self.opts.drain_timeout)?;
            served.finish()?
        } else {
            served.cut()
        };
        let answered = self.power_cut_answers();
        let cycle = self.summary.power_cycle;
        let mut r = r;
        crate::audit::audit(&mut r, &self.summary);
        self.opts.log.say(&format!(
            "serve: power cut: power cycle {cycle} ended at {:.3} ms simulated; {answered} commands in flight answered EIO; {}",
            now_ns as f64 / 1e6,
            if plp {
                "the write buffer was programmed on the capacitors (power_loss_protection)".to_string()
            } else {
                format!("{volatile_units} units in the write buffer, not yet durable, are lost (what a FLUSH or FUA acknowledged is kept)")
            }
        ));
        let doc = format!("power-cycle-{cycle}/results.json");
        self.opts
            .log
            .say(&format!("serve: {doc}: {}", crate::audit::brief(&r.audit)));
        self.note_internal_error(&doc, &r);
        if let Err(e) = self
            .reporter
            .report(&r, &self.summary, &series, Some(cycle))
        {
            self.opts.log.say(&format!(
                "serve: could not write power cycle {cycle}'s results into {}: {e} (serving goes on)",
                self.reporter.place()
            ));
        }
        Ok(())
    }

    /// The server stops: the commands in flight are answered and the device settles
    /// within `drain_timeout`, then the final results are written (status `stopped` when
    /// it did not settle in time).
    fn end(&mut self, mut served: Served) -> Result<(), SimError> {
        // Settling and writing the results are no real-time work: under the default
        // policy they cannot hold a CPU from the clients for the drain's length.
        self.fifo = None;
        // The signal asked every simulation of the process to stop; this one ends in order
        // instead (a second signal ends the process at once).
        stop::clear_stop();
        let deadline = Instant::now() + self.opts.drain_timeout;
        let drained = self.drain_until(&mut served, deadline)?;
        self.summary.stored_data_bytes = served.data_bytes();
        self.note_depth(&served);
        let (snapshot, snapshot_series) = served.results();
        if !drained {
            let n = self.stop_answers();
            let why = format!(
                "{n} commands were still in flight after --drain-timeout-s {} s (answered EIO)",
                self.opts.drain_timeout.as_secs_f64()
            );
            return self.report_stopped(snapshot, &snapshot_series, &why);
        }
        let watchdog = Watchdog::start(deadline);
        let finished = served.finish();
        let fired = watchdog.cancel();
        match finished {
            Ok((r, series)) => self.report_final(r, &series),
            Err(SimError::Interrupted) if fired => {
                stop::clear_stop();
                let why = format!(
                    "the device did not settle within --drain-timeout-s {} s",
                    self.opts.drain_timeout.as_secs_f64()
                );
                self.report_stopped(snapshot, &snapshot_series, &why)
            }
            Err(e) => {
                let why = format!("the device could not settle: {e}");
                self.report_stopped(snapshot, &snapshot_series, &why)?;
                Err(e)
            }
        }
    }

    /// The final results.json, audited (the audit is kept in the summary); it could not be
    /// written: the one failure of results that ends the server with an error.
    fn report_final(&mut self, mut r: Results, series: &[TimeSeriesRow]) -> Result<(), SimError> {
        crate::audit::audit(&mut r, &self.summary);
        self.summary.audit = r.audit.clone();
        self.reporter
            .report(&r, &self.summary, series, None)
            .map_err(|err| SimError::Io {
                path: format!("writing the results into {}", self.reporter.place()),
                err,
            })
    }

    fn report_stopped(
        &mut self,
        mut r: Results,
        series: &[TimeSeriesRow],
        why: &str,
    ) -> Result<(), SimError> {
        r.status = RunStatus::Stopped;
        self.opts.log.say(&format!(
            "serve: {why}: results.json has the figures up to the stop (status \"stopped\")"
        ));
        self.report_final(r, series)
    }

    /// A document's audit found figures that cannot be (a bug): said loudly and kept for
    /// the end (serving goes on: the clients' data comes first). A snapshot's are said
    /// when the checks that fail change, not at every snapshot.
    fn note_internal_error(&mut self, doc: &str, r: &Results) {
        let Some(broken) = crate::counts::broken_checks(&r.audit) else {
            self.failing_checks.clear();
            return;
        };
        let names: Vec<&str> = r
            .audit
            .findings()
            .iter()
            .filter(|c| c.verdict == Verdict::Error)
            .map(|c| c.name)
            .collect();
        let names = names.join(",");
        if r.status == RunStatus::Serving && names == self.failing_checks {
            return;
        }
        self.failing_checks = names;
        self.opts.log.say(&format!(
            "serve: INTERNAL ERROR (please report it with your config and seed; serving goes on, and the server will end with this error): the results audit of {doc} found figures that cannot be: {broken}"
        ));
        self.summary
            .earlier_audit_errors
            .push(format!("{doc}: {broken}"));
    }

    /// Every command in flight at a cut is answered `EIO`; connections of the old power
    /// cycle get `ESHUTDOWN` from now on (clients reconnect to the recovered device).
    /// Returns how many were answered.
    fn power_cut_answers(&mut self) -> u64 {
        let n = self.fail_in_flight(|e| &mut e.power_cut);
        if let Some(t) = self.opts.trace.as_mut() {
            t.stop(
                "power cut: the trace covers the first power cycle",
                &self.opts.log,
            );
        }
        n
    }

    /// The drain at the end timed out: the commands still in flight are answered `EIO`.
    fn stop_answers(&mut self) -> u64 {
        self.fail_in_flight(|e| &mut e.server_stopped)
    }

    fn fail_in_flight(&mut self, cause: fn(&mut ErrorCounts) -> &mut u64) -> u64 {
        let parents = self.flight.clear();
        for p in &parents {
            self.summary
                .count(|n: &mut Counts| n.commands.failed(cause, true));
            if self.conns.contains_key(&p.conn) {
                self.wire.error(p.ticket, NBD_EIO);
            }
        }
        self.wire.flush();
        parents.len() as u64
    }

    /// One power cycle.
    fn cycle(&mut self, served: &mut Served) -> Result<CycleEnd, SimError> {
        loop {
            if stop::stop_requested() {
                return Ok(CycleEnd::Stop);
            }
            if self.cut_due || POWER_CUTS.load(Ordering::Relaxed) > 0 {
                if let Some(why) = &self.opts.power_cut_refused {
                    self.opts
                        .log
                        .say(&format!("serve: power cut refused: {why}"));
                    POWER_CUTS.store(0, Ordering::Relaxed);
                    self.cut_due = false;
                } else {
                    if !std::mem::take(&mut self.cut_due) {
                        take_power_cut();
                    }
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
            self.stats_if_due(served);
            self.say_lateness_if_due();
            match self.opts.time {
                TimeMode::Virtual => self.turn_virtual(served)?,
                TimeMode::Realtime { dilation } => self.turn_realtime(served, dilation)?,
            }
        }
    }

    /// A results snapshot, when one is due; one that cannot be written is logged (once
    /// until one succeeds again) and serving goes on.
    fn stats_if_due(&mut self, served: &Served) {
        let (Some(at), Some(every)) = (self.next_stats, self.opts.stats_interval) else {
            return;
        };
        if Instant::now() < at {
            return;
        }
        self.next_stats = Some(Instant::now() + every);
        self.summary.stored_data_bytes = served.data_bytes();
        self.note_depth(served);
        let (mut r, series) = served.results();
        crate::audit::audit(&mut r, &self.summary);
        self.note_internal_error("results.json (a snapshot)", &r);
        match self.reporter.report(&r, &self.summary, &series, None) {
            Ok(()) => self.snapshot_failing = false,
            Err(e) if !self.snapshot_failing => {
                self.snapshot_failing = true;
                self.opts.log.say(&format!(
                    "serve: could not write the results snapshot into {}: {e} (serving goes on; tried again every --stats-interval and at the end)",
                    self.reporter.place()
                ));
            }
            Err(_) => {}
        }
    }

    /// Realtime: say on the log when replies of the last period left late.
    fn say_lateness_if_due(&mut self) {
        let TimeMode::Realtime { dilation } = self.opts.time else {
            return;
        };
        let l = &mut self.lateness;
        if l.since.elapsed() < LATE_REPORT_EVERY {
            return;
        }
        if l.late > 0 && l.late * 100 >= l.replies {
            self.opts.log.say(&format!(
                "serve: realtime: {:.1} % of the last {:.0} s's replies ({} of {}) left more than 20 µs after their due time, up to {:.3} ms late: the simulation does not keep up at --dilation {dilation} (a larger one slows the device's clock; --realtime-priority keeps other threads off the loop's CPU)",
                100.0 * l.late as f64 / l.replies as f64,
                l.since.elapsed().as_secs_f64(),
                l.late,
                l.replies,
                l.max_ns as f64 / 1e6
            ));
        }
        (l.since, l.replies, l.late, l.max_ns) = (Instant::now(), 0, 0, 0);
    }

    fn say_lateness_at_end(&self) {
        let TimeMode::Realtime { dilation } = self.opts.time else {
            return;
        };
        let a = &self.summary.all_cycles;
        if a.late_replies > 0 {
            let over = a.late_replies * 100 > self.lateness.all_replies;
            self.opts.log.say(&format!(
                "serve: realtime: {}{} of {} replies ({:.1} %) left more than 20 µs after their due time, up to {:.3} ms late, at --dilation {dilation}",
                if over { "warning: " } else { "" },
                a.late_replies,
                self.lateness.all_replies,
                100.0 * a.late_replies as f64 / self.lateness.all_replies.max(1) as f64,
                a.max_late_ns as f64 / 1e6
            ));
        }
    }

    /// Send the replies made, take every request the sockets hold now; true if any
    /// event came.
    fn intake(&mut self, served: &mut Served) -> Result<bool, SimError> {
        self.steps_since_intake = 0;
        self.wire.read(&mut self.events);
        self.take_events(served)
    }

    /// Send the replies made (one batch per connection).
    fn flush(&mut self) {
        self.unflushed = 0;
        self.wire.flush();
    }

    fn take_events(&mut self, served: &mut Served) -> Result<bool, SimError> {
        if self.events.is_empty() {
            if self.wire.finished() {
                stop::request_stop();
            }
            return Ok(false);
        }
        let mut events = std::mem::take(&mut self.events);
        let mut r = Ok(());
        for ev in events.drain(..) {
            if r.is_ok() {
                r = self.on_event(ev, served);
            } else if let Event::Command(c) = ev {
                self.wire.give_back(c.data);
            }
        }
        self.events = events;
        r.map(|_| true)
    }

    /// Wait up to `timeout` for an event and take it (and those behind it).
    fn wait(&mut self, served: &mut Served, timeout: Duration) -> Result<bool, SimError> {
        self.steps_since_intake = 0;
        self.unflushed = 0;
        self.wire.poll(timeout, &mut self.events);
        self.take_events(served)
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
        let idle = served.next_event_ns().is_none() || served.in_flight() == 0;
        // The sockets are read when a client may have sent: replies are owed requests (a
        // closed-loop client answers each), and at least every few steps otherwise.
        // Without the grace nothing is counted owed: read at every turn (a reply may have
        // gone out at the last).
        let owed_sent = self.owed > self.unflushed || self.opts.grace.is_zero();
        if idle || owed_sent || self.steps_since_intake >= INTAKE_EVERY_STEPS {
            self.intake(served)?;
        }
        if served.next_event_ns().is_none() || served.in_flight() == 0 {
            // No request in flight: the clock stands still until a client sends (background
            // work waits too), so a client's think time costs no simulated time. What
            // completed as it was submitted (functional mode) is answered now.
            self.wait(served, POLL)?;
            let replied = self.answer(served)?;
            self.owe(served, replied);
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
                // Clients answer within microseconds: wait in `poll` for their sockets
                // (the CPU goes to the clients meanwhile), up to the grace's end.
                if self.unflushed > 0 {
                    self.flush();
                }
                self.grace_wait(served, until)?;
                return Ok(());
            }
            self.summary.count(|n| n.grace_timeouts += 1);
            self.owed = 0;
        }
        if self.owed == 0 && self.grace_until.take().is_some() {
            self.summary.count(|n| n.grace_waits += 1);
        }
        self.step(served)?;
        self.steps_since_intake += 1;
        let replied = self.answer(served)?;
        self.unflushed += replied;
        // Replies go out in batches (a client woken per batch, not per reply); a batch
        // is at most the replies that may be owed before the loop waits.
        if self.unflushed >= self.batch || self.opts.grace.is_zero() {
            self.flush();
        }
        self.owe(served, replied);
        Ok(())
    }

    /// Virtual time, a grace wait: read the sockets without blocking, over and over, for up
    /// to the spin budget (and not past `until`), then sleep in `ppoll` for the rest. A
    /// closed-loop client on the other core answers within a few microseconds, and a sleep
    /// and its wake-up cost tens (a third of the server's time when it only slept). The
    /// budget follows the clients: it doubles (up to `grace_spin`) when they answered
    /// within `grace_spin` of the wait's start and halves (down to [`MIN_SPIN`]) when they
    /// did not, so when the clients are slow (a loaded machine) the loop mostly sleeps.
    fn grace_wait(&mut self, served: &mut Served, until: Instant) -> Result<(), SimError> {
        let start = Instant::now();
        let spin_end = until.min(start + self.grace_spin);
        let mut came = false;
        loop {
            if self.intake(served)? {
                came = true;
                break;
            }
            if Instant::now() >= spin_end {
                break;
            }
            for _ in 0..SPIN_PAUSES {
                std::hint::spin_loop();
            }
        }
        if !came {
            let now = Instant::now();
            if now < until {
                came = self.wait(served, until - now)?;
            }
        }
        let most = self.opts.grace_spin;
        let quick = came && start.elapsed() <= most;
        self.grace_spin = if quick {
            (self.grace_spin * 2).min(most)
        } else {
            (self.grace_spin / 2).max(MIN_SPIN.min(most))
        };
        Ok(())
    }

    /// Virtual time: `replied` replies left, each owed a new request by its client.
    fn owe(&mut self, served: &Served, replied: u32) {
        if replied > 0 && !self.opts.grace.is_zero() {
            if self.owed == 0 {
                self.wait_from_ns = served.now_ns() + self.opts.run_ahead_ns;
            }
            self.owed += replied;
        }
    }

    fn sim_now_from_wall(&self, dilation: f64) -> u64 {
        (self.start.elapsed().as_nanos() as f64 / dilation) as u64
    }

    /// Realtime: handle (and answer) every event due by the wall clock now, then move the
    /// simulated clock to now: a request taken next arrives now.
    fn catch_up(&mut self, served: &mut Served, dilation: f64) -> Result<(), SimError> {
        let target = self.sim_now_from_wall(dilation);
        while served.next_event_ns().is_some_and(|t| t <= target) {
            self.step(served)?;
            self.answer(served)?;
        }
        served.advance_to(target.max(served.now_ns()));
        Ok(())
    }

    fn turn_realtime(&mut self, served: &mut Served, dilation: f64) -> Result<(), SimError> {
        // Events now due (their replies sent), then the requests there are: each arrives
        // at the wall time it is taken (`on_event` catches up before each), after every
        // event due by then — also one a wait took (a wake-up comes late, and a request
        // stamped at the wait's end, before the events due meanwhile, would be due early).
        self.catch_up(served, dilation)?;
        self.flush();
        self.steps_since_intake = 0;
        self.wire.read(&mut self.events);
        if self.take_events(served)? {
            self.answer(served)?;
            self.flush();
            return Ok(());
        }
        let timeout = match served.next_event_ns() {
            Some(t) => due_in(t, dilation, self.start.elapsed()).min(POLL),
            None => POLL,
        };
        let margin = self.spin_margin;
        if timeout >= READY_AHEAD && served.ready_spares(READY_BYTES) {
            // Time to spare: ready a few pages of the buffers the next blocks' first
            // programs take (else a first program zeroes a whole block buffer or faults
            // a page in per unit: tens to hundreds of µs on a write's path). At the
            // device's pace this is the only time there is, so it is not left for idle
            // turns.
        } else if timeout <= margin {
            // Close to the due time: spin, reading the sockets each turn, rather than
            // sleep (a wake-up from a timed wait comes tens of µs late, more on a busy
            // machine).
            std::hint::spin_loop();
        } else {
            // A request that comes is taken at the next turn, after the events due then.
            self.wire.poll(timeout - margin, &mut self.events);
        }
        Ok(())
    }

    /// Answer every completion there is, those of requests submitted while answering
    /// included (a FUA write's flush, which completes at once in functional mode); returns
    /// the replies sent.
    fn answer(&mut self, served: &mut Served) -> Result<u32, SimError> {
        let mut replied = 0;
        loop {
            served.drain_completions(&mut self.completions);
            if self.completions.is_empty() {
                return Ok(replied);
            }
            replied += self.answer_drained(served)?;
        }
    }

    fn answer_drained(&mut self, served: &mut Served) -> Result<u32, SimError> {
        let mut replied = 0;
        let mut done = std::mem::take(&mut self.completions);
        // Write payloads the device no longer needs go back to the wire's pool.
        while let Some(b) = served.spent_payload() {
            self.wire.give_back(b);
        }
        for c in done.drain(..) {
            let pi = self.flight.take_part(c.tag);
            let Some(p) = self.flight.parents[pi as usize].as_mut() else {
                continue;
            };
            if c.error.is_some() {
                p.failed = true;
            }
            p.parts_left -= 1;
            if p.parts_left > 0 {
                continue;
            }
            if p.fua && !p.flushing && !p.failed {
                p.flushing = true;
                p.parts_left = 1;
                self.submit_part(served, pi, HostOp::Flush, 0, 0, None)?;
                continue;
            }
            let Some(p) = self.flight.take_parent(pi) else {
                continue;
            };
            self.note_lateness(c.complete_ns);
            replied += self.reply(p, served) as u32;
        }
        self.completions = done;
        Ok(replied)
    }

    /// A command's last part completed: count it, answer it (if its client is still
    /// there: true).
    fn reply(&mut self, p: Parent, served: &Served) -> bool {
        let failed = p.failed;
        self.summary.count(|n| {
            if failed {
                n.commands.failed(|e| &mut e.device, true);
            } else {
                n.commands.ok += 1;
                n.commands.in_flight -= 1;
            }
        });
        if !self.conns.contains_key(&p.conn) {
            return false;
        }
        if failed {
            self.wire.error(p.ticket, NBD_EIO);
        } else if p.kind == CmdKind::Read {
            let (off, len) = (p.offset_bytes, p.length_bytes);
            // The bytes the device returns now, straight into the reply.
            self.wire
                .ok_read(p.ticket, len as usize, |b| served.read_data(off, len, b));
        } else {
            self.wire.ok(p.ticket);
        }
        true
    }

    /// Realtime: a reply leaves now for a command that completed at `complete_ns`.
    fn note_lateness(&mut self, complete_ns: u64) {
        let TimeMode::Realtime { dilation } = self.opts.time else {
            return;
        };
        let due = due_wall_ns(complete_ns, dilation);
        let late_ns = (self.start.elapsed().as_nanos() as u64).saturating_sub(due);
        let late = late_ns > LATE_NS;
        self.summary.count(|n| {
            n.late_replies += late as u64;
            n.max_late_ns = n.max_late_ns.max(late_ns);
        });
        let l = &mut self.lateness;
        l.replies += 1;
        l.all_replies += 1;
        l.late += late as u64;
        l.max_ns = l.max_ns.max(late_ns);
    }

    fn on_event(&mut self, ev: Event, served: &mut Served) -> Result<(), SimError> {
        match ev {
            Event::Connected { conn } => {
                self.summary.count(|n| n.connections += 1);
                let cycle = self.summary.power_cycle;
                self.conns.insert(conn, Conn { cycle });
            }
            Event::Disconnected { conn, why } => {
                if let Some(why) = why {
                    self.opts
                        .log
                        .say(&format!("serve: connection {conn} ended: {why}"));
                }
                self.conns.remove(&conn);
            }
            Event::Command(c) => {
                if let TimeMode::Realtime { dilation } = self.opts.time {
                    self.catch_up(served, dilation)?;
                }
                self.ever_commanded = true;
                if self.owed > 0 {
                    self.owed -= 1;
                }
                self.on_command(c, served)?;
            }
        }
        Ok(())
    }

    /// Answer a command at once with error `errno` of `cause` (it never reaches the
    /// device).
    fn refuse(&mut self, c: Command, errno: u32, cause: fn(&mut ErrorCounts) -> &mut u64) {
        self.summary.count(|n| n.commands.failed(cause, false));
        if self.conns.contains_key(&c.conn) {
            self.wire.error(c.ticket(), errno);
        }
        self.wire.give_back(c.data);
    }

    fn on_command(&mut self, c: Command, served: &mut Served) -> Result<(), SimError> {
        let Some(conn) = self.conns.get(&c.conn) else {
            self.wire.give_back(c.data);
            return Ok(());
        };
        let len = c.length_bytes as u64;
        let fua = c.fua
            && matches!(
                c.kind,
                CmdKind::Write | CmdKind::WriteZeroes | CmdKind::Trim
            );
        let (kind, old) = (c.kind, conn.cycle != self.summary.power_cycle);
        self.summary.count(|n| n.commands.arrived(kind, len, fua));
        if old {
            // The device this connection opened lost power: it is gone for this client.
            self.refuse(c, NBD_ESHUTDOWN, |e| &mut e.old_connection);
            return Ok(());
        }
        if self.over_stored_bytes(&c, served) {
            self.refuse(c, NBD_ENOSPC, |e| &mut e.no_space);
            return Ok(());
        }
        if refused_by_a_failed_device(kind, served) {
            self.refuse(c, NBD_EIO, |e| &mut e.worn_out);
            return Ok(());
        }
        let mut parts = std::mem::take(&mut self.parts);
        parts_of(&c, served.unit_bytes(), &mut parts);
        if parts.is_empty() {
            // Nothing to do on the device (a trim of less than a unit): answered at once.
            self.parts = parts;
            self.summary.count(|n| n.commands.ok += 1);
            self.wire.ok(c.ticket());
            self.wire.give_back(c.data);
            return Ok(());
        }
        self.summary.count(|n| n.commands.in_flight += 1);
        let pi = self.flight.add_parent(Parent {
            conn: c.conn,
            ticket: c.ticket(),
            kind: c.kind,
            parts_left: parts.len() as u32,
            fua,
            flushing: false,
            failed: false,
            offset_bytes: c.offset_bytes,
            length_bytes: len,
        });
        let mut payload = Some(c.data);
        let mut r = Ok(());
        for &(op, o, s, data) in &parts {
            let data = match data {
                PartData::None => None,
                PartData::Payload => payload.take().map(WriteData::Bytes),
                PartData::Zeros => Some(WriteData::Zeros),
            };
            r = self.submit_part(served, pi, op, o, s, data);
            if r.is_err() {
                break;
            }
        }
        parts.clear();
        self.parts = parts;
        r?;
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

    /// `--max-stored-bytes`: a write that would take the stored bytes past it. (A block's
    /// bytes are allocated whole at its first program, so the blocks being filled may take
    /// the stored bytes past it by up to [`crate::memory::open_blocks_bytes`].)
    fn over_stored_bytes(&self, c: &Command, served: &Served) -> bool {
        let writes = matches!(c.kind, CmdKind::Write | CmdKind::WriteZeroes);
        self.opts
            .max_stored_bytes
            .is_some_and(|max| writes && served.data_bytes() + c.length_bytes as u64 > max)
    }

    fn submit_part(
        &mut self,
        served: &mut Served,
        parent: u32,
        op: HostOp,
        offset_bytes: u64,
        size_bytes: u64,
        data: Option<WriteData>,
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
        self.summary.count(|n| n.commands.device_requests += 1);
        served.submit(r, data)
    }

    /// Step until nothing is in flight or `deadline` (wall clock) passes, answering; true
    /// when nothing is left in flight.
    fn drain_until(&mut self, served: &mut Served, deadline: Instant) -> Result<bool, SimError> {
        let mut steps = 0u32;
        while served.in_flight() > 0 {
            if !self.step(served)? {
                break;
            }
            self.answer(served)?;
            self.flush();
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(1024) && Instant::now() >= deadline {
                break;
            }
        }
        self.answer(served)?;
        self.flush();
        Ok(served.in_flight() == 0 && self.summary.this_cycle.commands.in_flight == 0)
    }
}

/// Where a part's bytes come from.
#[derive(Clone, Copy)]
enum PartData {
    None,
    /// The command's payload (a write is one part).
    Payload,
    Zeros,
}

/// A command's host requests: (operation, offset, size, bytes).
type Part = (HostOp, u64, u64, PartData);

/// The host requests a command becomes, into `parts` (emptied first).
fn parts_of(c: &Command, unit: u64, parts: &mut Vec<Part>) {
    let (off, end) = (c.offset_bytes, c.offset_bytes + c.length_bytes as u64);
    // Whole units inside the range (a trim must not touch data outside it).
    let (lo, hi) = (off.div_ceil(unit) * unit, end / unit * unit);
    parts.clear();
    match c.kind {
        CmdKind::Read => parts.push((HostOp::Read, off, end - off, PartData::None)),
        CmdKind::Write => parts.push((HostOp::Write, off, end - off, PartData::Payload)),
        CmdKind::Flush => parts.push((HostOp::Flush, 0, 0, PartData::None)),
        CmdKind::Trim => {
            if lo < hi {
                parts.push((HostOp::Trim, lo, hi - lo, PartData::None));
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
                    parts.push((HostOp::Trim, tl, th - tl, PartData::None));
                    at = th;
                    continue;
                }
                let stop = if at < tl { tl.min(end) } else { end };
                let size = (stop - at).min(ZERO_PART_BYTES);
                parts.push((HostOp::Write, at, size, PartData::Zeros));
                at += size;
            }
        }
    }
}

/// Power is back: say what the recovery did.
fn say_recovery(log: &Log, r: &serde_json::Value, wall: Duration, cycle: u32) {
    let n = |k: &str| r[k].as_u64().unwrap_or(0);
    log.say(&format!(
        "serve: power on: recovered in {:.3} ms simulated ({:.0} ms here): {} pages scanned, {} erases redone, {} units mapped, {} blocks closed partly filled; serving power cycle {cycle}",
        n("time_ns") as f64 / 1e6,
        wall.as_secs_f64() * 1e3,
        n("pages_scanned"),
        n("erases"),
        n("units_recovered"),
        n("blocks_closed_partial"),
    ));
}

/// Asks every simulation to stop at `deadline` unless cancelled first (the device's
/// settling at the end polls the stop flag).
struct Watchdog {
    cancel: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<bool>,
}

impl Watchdog {
    fn start(deadline: Instant) -> Watchdog {
        let (cancel, rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Err(RecvTimeoutError::Timeout) => {
                    stop::request_stop();
                    true
                }
                _ => false,
            }
        });
        Watchdog { cancel, thread }
    }

    /// Cancel it; whether it had fired.
    fn cancel(self) -> bool {
        let _ = self.cancel.send(());
        self.thread.join().unwrap_or(false)
    }
}

/// A device that failed (worn out) is read-only, as an SSD at the end of its life: it keeps
/// nothing new (a write, write-zeroes or trim would be acknowledged and not kept), and
/// without power-loss protection a flush cannot make what its buffer holds durable.
fn refused_by_a_failed_device(kind: CmdKind, served: &Served) -> bool {
    served.worn_out()
        && match kind {
            CmdKind::Read => false,
            CmdKind::Flush => !served.power_loss_protection(),
            _ => true,
        }
}

#[cfg(test)]
mod realtime_tests {
    use super::*;

    /// A due time is rounded up, never down (a wait must not end before it), and what is
    /// left of it is zero once past.
    #[test]
    fn due_times_round_up_and_saturate() {
        assert_eq!(due_wall_ns(1_500, 1.0), 1_500);
        assert_eq!(due_wall_ns(3, 0.5), 2, "1.5 ns rounds up");
        assert_eq!(due_wall_ns(1_000, 2.0), 2_000);
        let e = Duration::from_nanos(1_200);
        assert_eq!(due_in(1_500, 1.0, e), Duration::from_nanos(300));
        assert_eq!(due_in(1_000, 1.0, e), Duration::ZERO);
        assert_eq!(due_in(700, 2.0, e), Duration::from_nanos(200));
    }
}
