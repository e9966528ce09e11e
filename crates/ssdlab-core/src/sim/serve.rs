//! A measured phase whose requests come from outside (`ssdlab serve`): a server submits
//! its clients' requests with their bytes, steps the simulation, and answers the
//! completions it drains with the bytes the device returns. The phase uses the one host
//! command path of every workload (`host::command`), in either mode: timed (requests
//! arrive at the current simulated time and complete in simulated order) or functional
//! (each completes at once).
//!
//! The host's bytes live with the physical slots that hold them (`flash::SlotData`, kept
//! by the FTL), so they move with every program and copy the FTL makes.

use super::functional::FunctionalDriver;
use super::timed::{Completion, TimedSim};
use super::{
    diff, functional_phase, timed_phase, PhaseOutcome, PreconditionSummary, Results, RunStatus,
    Simulation, View,
};
use crate::config::{Config, Derived, Mode};
use crate::error::Result;
use crate::ftl::{Ftl, FtlCounters};
use crate::stats::TimeSeriesRow;
use ssdlab_workload::replay::VecSource;
use ssdlab_workload::{Arrival, Flow, HostRequest, Workload};

/// The name of the served flow in the results.
pub const FLOW_NAME: &str = "served";

/// The bytes a served write carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteData {
    /// The request's bytes (its `size_bytes` of them).
    Bytes(Vec<u8>),
    /// Zeros (nothing is held for them until their units enter the write buffer).
    Zeros,
}

enum Inner<'s> {
    Timed(Box<TimedSim<'s>>),
    Functional(Box<FunctionalDriver<'s>>),
}

/// A phase served to clients outside ([`Simulation::serve`]).
pub struct Served<'s> {
    inner: Inner<'s>,
    config: &'s Config,
    derived: &'s Derived,
    precondition: &'s Option<PreconditionSummary>,
    /// The FTL's counters when the phase began.
    before: FtlCounters,
    /// Functional mode: completions not yet drained.
    done: Vec<Completion>,
    /// The clients' journal (bytes), when known: the journal detector is scored against it.
    journal_truth: Option<(u64, u64)>,
}

impl Simulation {
    /// Serve a measured phase to clients outside, keeping their bytes (`integrity = true`
    /// is required: versions say which bytes a slot holds).
    pub fn serve(&mut self) -> Result<Served<'_>> {
        self.ftl.store_data()?;
        self.ftl.give_up_partial_pages();
        let before = self.ftl.counters_now();
        let inner = match self.config.mode {
            Mode::Timed => {
                let workload = Workload {
                    flows: vec![Flow {
                        name: FLOW_NAME.into(),
                        arrival: Arrival::Open,
                        source: Box::new(VecSource::new(Vec::new())),
                    }],
                    duration_ns: None,
                    stats: Default::default(),
                };
                let mut t = TimedSim::new(&self.config, &self.derived, &mut self.ftl, workload, 0);
                t.serve_externally();
                t.begin()?;
                Inner::Timed(Box::new(t))
            }
            Mode::Functional => Inner::Functional(Box::new(
                FunctionalDriver::new(&mut self.ftl)
                    .with_power_loss_protection(self.config.ftl.power_loss_protection),
            )),
        };
        Ok(Served {
            inner,
            config: &self.config,
            derived: &self.derived,
            precondition: &self.precondition,
            before,
            done: Vec::new(),
            journal_truth: None,
        })
    }
}

impl Simulation {
    /// Power comes back after a cut: the FTL rebuilds itself from what was durably
    /// programmed ([`Ftl::recover`]); the recovery's figures.
    pub fn power_on(&mut self) -> Result<crate::ftl::RecoverySummary> {
        let placeholder = Ftl::new(&self.config, &self.derived)?;
        let old = std::mem::replace(&mut self.ftl, placeholder);
        let (ftl, summary) = Ftl::recover(&self.config, &self.derived, old)?;
        self.ftl = ftl;
        Ok(summary)
    }
}

impl Served<'_> {
    fn ftl(&self) -> &Ftl {
        match &self.inner {
            Inner::Timed(t) => t.ftl(),
            Inner::Functional(d) => d.ftl,
        }
    }

    fn ftl_mut(&mut self) -> &mut Ftl {
        match &mut self.inner {
            Inner::Timed(t) => t.ftl_mut(),
            Inner::Functional(d) => d.ftl,
        }
    }

    /// Simulated time now.
    pub fn now_ns(&self) -> u64 {
        match &self.inner {
            Inner::Timed(t) => t.now_ns(),
            Inner::Functional(d) => d.clock.time_ns,
        }
    }

    /// Time of the next event (never in the functional mode: requests complete at once).
    pub fn next_event_ns(&self) -> Option<u64> {
        match &self.inner {
            Inner::Timed(t) => t.next_event_ns(),
            Inner::Functional(_) => None,
        }
    }

    /// Move the clock to `time_ns`, no later than the next event (real-time serving).
    pub fn advance_to(&mut self, time_ns: u64) {
        match &mut self.inner {
            Inner::Timed(t) => t.advance_to(time_ns),
            Inner::Functional(d) => d.clock.time_ns = d.clock.time_ns.max(time_ns),
        }
    }

    /// Handle the next event; false when there is none.
    pub fn step(&mut self) -> Result<bool> {
        match &mut self.inner {
            Inner::Timed(t) => t.step(),
            Inner::Functional(_) => Ok(false),
        }
    }

    /// Submit `r` now (its `arrival_ns` is set to now), with the bytes of a write. Its
    /// `tag` comes back with its completion; tags of requests in flight must differ.
    ///
    /// Every event of the current instant is handled first: a request arrives after the
    /// events of its instant, as an open-loop arrival does (`schedule_last_at`), so a
    /// trace of the served requests replays in the same order.
    pub fn submit(&mut self, mut r: HostRequest, payload: Option<WriteData>) -> Result<()> {
        let now = self.now_ns();
        while self.next_event_ns().is_some_and(|t| t <= now) {
            self.step()?;
        }
        r.arrival_ns = now;
        if let (Some(data), Some(d)) = (payload, self.ftl_mut().data_mut()) {
            match data {
                WriteData::Bytes(bytes) => d.put_payload(r.tag, r.offset_bytes, bytes),
                WriteData::Zeros => d.put_zeros(r.tag, r.offset_bytes, r.size_bytes),
            }
        }
        match &mut self.inner {
            Inner::Timed(t) => t.submit_now(r),
            Inner::Functional(d) => {
                let submit_ns = d.clock.time_ns;
                d.submit(&r)?;
                self.done.push(Completion {
                    flow: 0,
                    op: r.op,
                    submit_ns,
                    complete_ns: d.clock.time_ns,
                    offset_bytes: r.offset_bytes,
                    size_bytes: r.size_bytes,
                    tag: r.tag,
                    error: d.last_error(),
                    zones: d.take_zone_report().unwrap_or_default(),
                });
                Ok(())
            }
        }
    }

    /// Move the completions since the last call into `into`, in completion order. A
    /// completed write's payload is forgotten (its units are in the buffer).
    pub fn drain_completions(&mut self, into: &mut Vec<Completion>) {
        let from = into.len();
        match &mut self.inner {
            Inner::Timed(t) => t.drain_completions(into),
            Inner::Functional(_) => into.append(&mut self.done),
        }
        for c in &into[from..] {
            if c.op.writes_data() {
                if let Some(d) = self.ftl_mut().data_mut() {
                    d.drop_payload(c.tag);
                }
            }
        }
    }

    /// Version of `lpn` the driver's buffer holds, if any.
    fn buffered(&self, lpn: u32) -> Option<crate::base::Version> {
        match &self.inner {
            Inner::Timed(t) => t.buffered(lpn),
            Inner::Functional(d) => d.buffered(lpn),
        }
    }

    /// The version of `lpn` a read would find now (the buffer's, else the flash copy's;
    /// `None`: unmapped): what a test's model of the device compares.
    pub fn version_of(&self, lpn: u32) -> Option<crate::base::Version> {
        self.buffered(lpn).or_else(|| self.ftl().flash_version(lpn))
    }

    /// The version the next write will get (every version below it has been given).
    pub fn next_version(&self) -> crate::base::Version {
        self.ftl().integrity().map_or(0, |i| i.next_version())
    }

    /// A write payload handed over with [`Served::submit`] whose write has completed (its
    /// bytes are in the write buffer): the caller may reuse the buffer.
    pub fn spent_payload(&mut self) -> Option<Vec<u8>> {
        self.ftl_mut().data_mut()?.take_spent_payload()
    }

    /// The bytes a read of `size_bytes` at `offset_bytes` returns now (call it when the
    /// read completes), appended to `out`.
    pub fn read_data(&self, offset_bytes: u64, size_bytes: u64, out: &mut Vec<u8>) {
        let u = self.derived.geometry.unit_bytes as u64;
        let ftl = self.ftl();
        let mut at = offset_bytes;
        let end = offset_bytes + size_bytes;
        while at < end {
            let lpn = (at / u) as u32;
            let (lo, hi) = ((at % u) as usize, (end - lpn as u64 * u).min(u) as usize);
            match ftl.read_data(lpn, self.buffered(lpn)) {
                Some(bytes) => out.extend_from_slice(&bytes[lo..hi]),
                None => out.resize(out.len() + (hi - lo), 0),
            }
            at = lpn as u64 * u + hi as u64;
        }
    }

    /// Score the journal detector (spec 05) against the clients' journal, bytes `lo..hi`
    /// (e.g. a filesystem's journal extent): results.json's `journal` section.
    pub fn set_journal_truth(&mut self, range_bytes: Option<(u64, u64)>) {
        self.journal_truth = range_bytes;
        let u = self.unit_bytes();
        let units = range_bytes.map(|(lo, hi)| ((lo / u) as u32, hi.div_ceil(u) as u32));
        self.ftl_mut().set_journal_truth(units);
    }

    /// The device served.
    pub fn derived(&self) -> &Derived {
        self.derived
    }

    /// The mapping unit (requests are split into units of this many bytes).
    pub fn unit_bytes(&self) -> u64 {
        self.derived.geometry.unit_bytes as u64
    }

    /// Whether the write buffer is protected against power loss (`ftl.power_loss_protection`).
    pub fn power_loss_protection(&self) -> bool {
        self.config.ftl.power_loss_protection
    }

    /// Units written and not yet durable (in the write buffer, or in a program not yet
    /// complete): what a power cut now loses without power-loss protection.
    pub fn volatile_units(&self) -> u64 {
        match &self.inner {
            Inner::Timed(t) => t.buffered_units() as u64,
            Inner::Functional(d) => d.packed_units() as u64,
        }
    }

    /// Whether the device has failed (worn out: it takes no more writes).
    pub fn worn_out(&self) -> bool {
        self.ftl().worn_out()
    }

    /// Requests submitted and not complete.
    pub fn in_flight(&self) -> u32 {
        match &self.inner {
            Inner::Timed(t) => t.in_flight(),
            Inner::Functional(_) => 0,
        }
    }

    /// Idle work for a real-time server: ready about `max_bytes` of spare buffers for the
    /// stored bytes (`SlotData::ready_spares`); true while work is left.
    pub fn ready_spares(&mut self, max_bytes: usize) -> bool {
        self.ftl_mut()
            .data_mut()
            .is_some_and(|d| d.ready_spares(max_bytes))
    }

    /// Memory the stored bytes take.
    pub fn data_bytes(&self) -> u64 {
        self.ftl().data().map_or(0, |d| d.held_bytes())
    }

    fn view(&self) -> View<'_> {
        View {
            config: self.config,
            derived: self.derived,
            ftl: self.ftl(),
            precondition: self.precondition,
        }
    }

    fn results_of(&self, mut phase: PhaseOutcome, status: RunStatus) -> Results {
        phase.journal_truth = self.journal_truth;
        let c = diff(&self.ftl().counters_now(), &self.before);
        let mut r = self.view().assemble(phase, &c, Default::default());
        if r.status == RunStatus::Completed {
            r.status = status;
            // The audit reads the status (what may be in flight, in the buffer).
            r.audit = super::audit::audit(&r, &r.audit.facts);
        }
        r
    }

    /// The phase's figures so far (status `serving`) and its time series.
    pub fn results(&self) -> (Results, Vec<TimeSeriesRow>) {
        self.results_with(RunStatus::Serving)
    }

    fn results_with(&self, status: RunStatus) -> (Results, Vec<TimeSeriesRow>) {
        match &self.inner {
            Inner::Timed(t) => {
                let mut o = t.outcome_now();
                if status == RunStatus::PowerCut {
                    // Requests in flight never complete: they failed.
                    o.host = t.counters_at_cut();
                }
                let phase = timed_phase(&mut o);
                (self.results_of(phase, status), o.series)
            }
            Inner::Functional(d) => (self.results_of(functional_phase(d), status), Vec::new()),
        }
    }

    /// Power is cut now: the phase's figures up to here (status `power_cut`; nothing
    /// settles; the requests in flight failed: `host.failed_requests`, in no other count).
    /// The FTL keeps what was durable for [`Simulation::power_on`].
    pub fn cut(self) -> (Results, Vec<TimeSeriesRow>) {
        self.results_with(RunStatus::PowerCut)
    }

    /// End the phase (nothing in flight): the device settles (buffered units are
    /// programmed, background work finishes), then the figures.
    pub fn finish(self) -> Result<(Results, Vec<TimeSeriesRow>)> {
        let Served {
            inner,
            config,
            derived,
            precondition,
            before,
            journal_truth,
            ..
        } = self;
        let (phase, series, ftl): (PhaseOutcome, Vec<TimeSeriesRow>, &Ftl) = match inner {
            Inner::Timed(t) => {
                let (mut o, ftl) = (*t).finish_with_ftl(&mut super::NoProgress)?;
                let phase = timed_phase(&mut o); // the audit sums the series first
                (phase, std::mem::take(&mut o.series), ftl)
            }
            Inner::Functional(d) => {
                let mut d = *d;
                let phase = functional_phase(&d);
                // A power-loss-protected device that failed still programs what it
                // acknowledged (on its capacitors: the phase ends with the power going).
                if !d.worn_out() || config.ftl.power_loss_protection {
                    d.flush()?;
                }
                (phase, Vec::new(), d.ftl)
            }
        };
        let mut phase = phase;
        phase.journal_truth = journal_truth;
        let c = diff(&ftl.counters_now(), &before);
        let view = View {
            config,
            derived,
            ftl,
            precondition,
        };
        Ok((view.assemble(phase, &c, Default::default()), series))
    }
}
