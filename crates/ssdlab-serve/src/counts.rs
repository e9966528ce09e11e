//! The `serve` section of results.json: what the clients asked and what became of it, for
//! the current power cycle (`this_cycle`: the cycle the rest of the document describes) and
//! for every cycle so far (`all_cycles`).
//!
//! Conserved, in each of the two: `read + write + flush + trim + write_zeroes = ok + errors
//! + in_flight`, and `errors` is the sum of `errors_by_cause`. A power cycle ends with
//! nothing in flight (a cut answers its commands `EIO`), so `all_cycles` is the sum of every
//! ended cycle's `this_cycle` (in `power-cycle-N/results.json`) and the current one's
//! (`max_late_ns`: the largest).

use crate::nbd::CmdKind;
use serde::Serialize;
use ssdlab_core::sim::audit::{Audit, Verdict};
use ssdlab_core::SimError;

/// Why commands were answered with an error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ErrorCounts {
    /// In flight when the power was cut (`EIO`).
    pub power_cut: u64,
    /// Sent on a connection opened before the last power cut (`ESHUTDOWN`: the device it
    /// opened is gone).
    pub old_connection: u64,
    /// A write while the stored bytes were at `--max-stored-bytes` (`ENOSPC`).
    pub no_space: u64,
    /// The device failed a request of the command (`EIO`).
    pub device: u64,
    /// In flight when the server stopped and its drain timed out (`EIO`).
    pub server_stopped: u64,
    /// A write, write-zeroes, trim or (without power-loss protection) flush after the
    /// device failed (worn out): read-only (`EIO`).
    pub worn_out: u64,
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.power_cut
            + self.old_connection
            + self.no_space
            + self.device
            + self.server_stopped
            + self.worn_out
    }
}

/// Commands received from clients and what became of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CommandCounts {
    pub read: u64,
    pub write: u64,
    pub flush: u64,
    pub trim: u64,
    pub write_zeroes: u64,
    /// Writing commands (write, trim, write-zeroes) with FUA.
    pub fua: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Answered with success.
    pub ok: u64,
    /// Answered with an error (`errors_by_cause` says why).
    pub errors: u64,
    pub errors_by_cause: ErrorCounts,
    /// Not answered yet.
    pub in_flight: u64,
    /// Host requests the commands became (a write-zeroes can be several; a FUA write is a
    /// write then a flush): results.json's `host` counts these, each once, as completed or
    /// failed (`host.reads + writes + trims + flushes + failed_requests`, once none waits in
    /// a modelled host interface).
    pub device_requests: u64,
}

impl CommandCounts {
    /// Commands received (each is exactly one of ok, errors, in flight).
    pub fn received(&self) -> u64 {
        self.read + self.write + self.flush + self.trim + self.write_zeroes
    }

    /// A command of `kind` and `bytes` arrived.
    pub fn arrived(&mut self, kind: CmdKind, bytes: u64, fua: bool) {
        match kind {
            CmdKind::Read => {
                self.read += 1;
                self.read_bytes += bytes;
            }
            CmdKind::Write => {
                self.write += 1;
                self.write_bytes += bytes;
            }
            CmdKind::Flush => self.flush += 1,
            CmdKind::Trim => self.trim += 1,
            CmdKind::WriteZeroes => self.write_zeroes += 1,
        }
        self.fua += fua as u64;
    }

    /// An error of `cause` answered a command (in flight before, when `was_in_flight`).
    pub fn failed(&mut self, cause: fn(&mut ErrorCounts) -> &mut u64, was_in_flight: bool) {
        *cause(&mut self.errors_by_cause) += 1;
        self.errors += 1;
        if was_in_flight {
            self.in_flight -= 1;
        }
    }
}

/// The counters kept per power cycle and over all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    /// Connections that reached the transmission phase.
    pub connections: u64,
    pub commands: CommandCounts,
    /// Realtime: replies more than 20 µs after their due time, and the worst lateness.
    pub late_replies: u64,
    pub max_late_ns: u64,
    /// Virtual time: waits for clients after replies, and those that ran out of grace
    /// (the simulation then went on without the requests it waited for).
    pub grace_waits: u64,
    pub grace_timeouts: u64,
}

impl Counts {
    /// Add an ended power cycle's counters (`max_late_ns`: the larger). Destructured whole,
    /// so a new counter must say how cycles add up.
    pub fn add_cycle(&mut self, c: &Counts) {
        let Counts {
            connections,
            commands,
            late_replies,
            max_late_ns,
            grace_waits,
            grace_timeouts,
        } = *c;
        let CommandCounts {
            read,
            write,
            flush,
            trim,
            write_zeroes,
            fua,
            read_bytes,
            write_bytes,
            ok,
            errors,
            errors_by_cause: e,
            in_flight,
            device_requests,
        } = commands;
        let m = &mut self.commands;
        let ErrorCounts {
            power_cut,
            old_connection,
            no_space,
            device,
            server_stopped,
            worn_out,
        } = e;
        let me = &mut m.errors_by_cause;
        me.power_cut += power_cut;
        me.old_connection += old_connection;
        me.no_space += no_space;
        me.device += device;
        me.server_stopped += server_stopped;
        me.worn_out += worn_out;
        m.read += read;
        m.write += write;
        m.flush += flush;
        m.trim += trim;
        m.write_zeroes += write_zeroes;
        m.fua += fua;
        m.read_bytes += read_bytes;
        m.write_bytes += write_bytes;
        m.ok += ok;
        m.errors += errors;
        m.in_flight += in_flight;
        m.device_requests += device_requests;
        self.connections += connections;
        self.late_replies += late_replies;
        self.max_late_ns = self.max_late_ns.max(max_late_ns);
        self.grace_waits += grace_waits;
        self.grace_timeouts += grace_timeouts;
    }
}

/// The failed checks of `a` (`name: message; …`), if any.
pub fn broken_checks(a: &Audit) -> Option<String> {
    let b: Vec<String> = a
        .checks
        .iter()
        .filter(|c| c.verdict == Verdict::Error)
        .map(|c| format!("{}: {}", c.name, c.message.as_deref().unwrap_or("")))
        .collect();
    (!b.is_empty()).then(|| b.join("; "))
}

/// The `serve` section of results.json.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ServeSummary {
    pub time_mode: &'static str,
    pub dilation: Option<f64>,
    /// Realtime: the `SCHED_FIFO` priority the device loop's thread ran at (none: the
    /// default policy, with the shortest slice it could have).
    pub realtime_priority: Option<u32>,
    /// The current power cycle (1 + power cuts so far).
    pub power_cycle: u32,
    /// This power cycle: the figures the rest of this results.json gives are its own.
    pub this_cycle: Counts,
    /// Every power cycle so far, this one included.
    pub all_cycles: Counts,
    /// Requests in flight on the device, averaged over this cycle's simulated time (the
    /// queue depth the device saw; with fio at QD N in virtual time, close to N when the
    /// grace holds).
    pub mean_queue_depth: f64,
    /// What each recovery did (power-on after each cut).
    pub recoveries: Vec<serde_json::Value>,
    /// Memory the stored bytes take now, and the most they may (`--max-stored-bytes`).
    pub stored_data_bytes: u64,
    pub max_stored_bytes: Option<u64>,
    /// The power cycles that ended, their `this_cycle` added up (not written: each is in
    /// its `power-cycle-N/results.json`); the audit holds `all_cycles` to it plus this one.
    #[serde(skip)]
    pub ended_cycles: Counts,
    /// The audit of the final results.json, `serve` checks included (not written here: it
    /// is that document's `audit` section).
    #[serde(skip)]
    pub audit: Audit,
    /// Internal errors the audits of earlier documents found (snapshots, power cuts), each
    /// led by its document (`power-cycle-1/results.json: check: …`): said when found, and
    /// the server ends with them.
    #[serde(skip)]
    pub earlier_audit_errors: Vec<String>,
}

impl ServeSummary {
    /// The figures the server wrote cannot be (an audit found a broken identity: a bug):
    /// the final results.json's and earlier documents', as one internal error.
    pub fn internal_error(&self) -> Option<SimError> {
        let mut all = self.earlier_audit_errors.clone();
        all.extend(broken_checks(&self.audit).map(|b| format!("results.json: {b}")));
        (!all.is_empty()).then(|| SimError::Internal {
            what: format!(
                "the results audit found figures that cannot be: {}",
                all.join("; ")
            ),
        })
    }

    /// Apply `f` to this cycle's counters and to all cycles'.
    pub fn count(&mut self, f: impl Fn(&mut Counts)) {
        f(&mut self.this_cycle);
        f(&mut self.all_cycles);
    }

    /// A new power cycle begins (nothing is in flight).
    pub fn next_cycle(&mut self) {
        debug_assert_eq!(self.this_cycle.commands.in_flight, 0);
        self.ended_cycles.add_cycle(&self.this_cycle);
        self.power_cycle += 1;
        self.this_cycle = Counts::default();
        self.mean_queue_depth = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_command_leaves_in_flight_and_counts_its_cause_once() {
        let mut c = CommandCounts::default();
        c.arrived(CmdKind::Write, 4096, true);
        c.in_flight += 1;
        c.failed(|e| &mut e.power_cut, true);
        c.arrived(CmdKind::Read, 512, false);
        c.failed(|e| &mut e.old_connection, false);
        assert_eq!((c.received(), c.ok, c.errors, c.in_flight), (2, 0, 2, 0));
        assert_eq!(c.errors_by_cause.total(), 2);
        assert_eq!((c.fua, c.write_bytes, c.read_bytes), (1, 4096, 512));
    }
}
