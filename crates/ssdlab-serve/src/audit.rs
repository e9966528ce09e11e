//! The `serve` section's identities in the results audit: every document the server
//! writes (a snapshot, `power-cycle-N/results.json` at a cut, the final one) carries the
//! core's checks ([`ssdlab_core::sim::audit`]) and these, added to the same `audit`
//! section ([`Audit::add`](ssdlab_core::sim::audit::Audit::add)): one function per
//! identity, one line of [`CHECKS`] each; the unit tests hold each to failing on a
//! perturbed input.
//!
//! A broken identity is a bug of the server's accounting. It never stops a running server
//! (the clients' data comes first): it is said on the log, and the server ends with an
//! internal error once it has written its final results ([`ServeSummary::internal_error`]).

use crate::counts::{CommandCounts, Counts, ErrorCounts, ServeSummary};
use ssdlab_core::sim::audit::{Audit, Check, Kind, Num::U, Verdict};
use ssdlab_core::{Results, RunStatus};

/// A check of the `serve` section: the document (its `host` figures, its status) and the
/// section (with the figures of the cycles that ended) → the check.
pub type ServeCheck = fn(&Results, &ServeSummary) -> Check;

/// The `serve` section's checks, in the order they follow the core's in `audit.checks`.
pub const CHECKS: &[ServeCheck] = &[
    serve_commands_answered,
    serve_errors_by_cause,
    serve_nothing_in_flight,
    serve_all_cycles_sum,
    serve_device_requests,
];

/// Audit `r` again (the core's checks, for its status as written: a stop sets it after
/// the figures are taken) with the `serve` section's checks.
pub fn audit(r: &mut Results, serve: &ServeSummary) {
    r.audit = ssdlab_core::sim::audit::audit(r, &r.audit.facts);
    for check in CHECKS {
        let c = check(r, serve);
        r.audit.add(c);
    }
}

/// `this_cycle` and `all_cycles` with their names.
fn both(s: &ServeSummary) -> [(&'static str, &CommandCounts); 2] {
    [
        ("this_cycle", &s.this_cycle.commands),
        ("all_cycles", &s.all_cycles.commands),
    ]
}

/// Every command received is answered ok, answered with an error, or in flight: `read +
/// write + flush + trim + write_zeroes = ok + errors + in_flight`, in `this_cycle` and in
/// `all_cycles`.
fn serve_commands_answered(_: &Results, s: &ServeSummary) -> Check {
    let [(_, this), (_, all)] = both(s);
    let answered = |c: &CommandCounts| c.ok + c.errors + c.in_flight;
    let bad = both(s)
        .into_iter()
        .find(|(_, c)| c.received() != answered(c));
    Check::new(
        "serve_commands_answered",
        Kind::Conservation,
        vec![
            (
                "serve.this_cycle.commands: read + write + flush + trim + write_zeroes",
                U(this.received()),
            ),
            (
                "serve.this_cycle.commands: ok + errors + in_flight",
                U(answered(this)),
            ),
            (
                "serve.all_cycles.commands: read + write + flush + trim + write_zeroes",
                U(all.received()),
            ),
            (
                "serve.all_cycles.commands: ok + errors + in_flight",
                U(answered(all)),
            ),
        ],
    )
    .fail_if(bad.is_some(), || {
        let (name, c) = bad.unwrap_or(both(s)[0]);
        format!(
            "serve.{name}.commands: {} commands received but {} answered ok, {} with an error and {} in flight",
            c.received(),
            c.ok,
            c.errors,
            c.in_flight
        )
    })
}

/// Every error has one cause: `errors = Σ errors_by_cause`, in `this_cycle` and in
/// `all_cycles`.
fn serve_errors_by_cause(_: &Results, s: &ServeSummary) -> Check {
    let [(_, this), (_, all)] = both(s);
    let bad = both(s)
        .into_iter()
        .find(|(_, c)| c.errors != c.errors_by_cause.total());
    Check::new(
        "serve_errors_by_cause",
        Kind::Conservation,
        vec![
            ("serve.this_cycle.commands.errors", U(this.errors)),
            (
                "sum of serve.this_cycle.commands.errors_by_cause",
                U(this.errors_by_cause.total()),
            ),
            ("serve.all_cycles.commands.errors", U(all.errors)),
            (
                "sum of serve.all_cycles.commands.errors_by_cause",
                U(all.errors_by_cause.total()),
            ),
        ],
    )
    .fail_if(bad.is_some(), || {
        let (name, c) = bad.unwrap_or(both(s)[0]);
        format!(
            "serve.{name}.commands.errors {} but its causes add up to {}",
            c.errors,
            c.errors_by_cause.total()
        )
    })
}

/// A power cycle ends with every command answered (a cut answers those in flight `EIO`,
/// a stop drains them or answers them `EIO`): `in_flight = 0` in a `power_cut`,
/// `completed` or `stopped` document.
fn serve_nothing_in_flight(r: &Results, s: &ServeSummary) -> Check {
    const NAME: &str = "serve_nothing_in_flight";
    if r.status == RunStatus::Serving {
        return Check::skipped(
            NAME,
            Kind::Conservation,
            "a snapshot while serving: commands may be in flight",
        );
    }
    let [(_, this), (_, all)] = both(s);
    Check::new(
        NAME,
        Kind::Conservation,
        vec![
            ("serve.this_cycle.commands.in_flight", U(this.in_flight)),
            ("serve.all_cycles.commands.in_flight", U(all.in_flight)),
        ],
    )
    .fail_if(this.in_flight > 0 || all.in_flight > 0, || {
        format!(
            "the power cycle ended ({:?}) with {} commands in flight (all cycles: {}): each was answered, or is counted nowhere else",
            r.status, this.in_flight, all.in_flight
        )
    })
}

/// `all_cycles` is the sum of every power cycle's `this_cycle`: those that ended (in
/// `power-cycle-N/results.json`) and this one (`max_late_ns`: the largest).
fn serve_all_cycles_sum(_: &Results, s: &ServeSummary) -> Check {
    let mut sum = s.ended_cycles;
    sum.add_cycle(&s.this_cycle);
    let (want, got) = (flat(&sum), flat(&s.all_cycles));
    let bad = want.iter().zip(&got).find(|(w, g)| w.1 != g.1);
    let (name, w, g) = bad.map_or(("", 0, 0), |(w, g)| (w.0, w.1, g.1));
    Check::new(
        "serve_all_cycles_sum",
        Kind::Conservation,
        vec![
            ("serve.power_cycle", U(s.power_cycle as u64)),
            (
                "serve.all_cycles.commands.device_requests",
                U(s.all_cycles.commands.device_requests),
            ),
            (
                "sum of each cycle's serve.this_cycle.commands.device_requests",
                U(sum.commands.device_requests),
            ),
            ("serve.all_cycles.connections", U(s.all_cycles.connections)),
            (
                "sum of each cycle's serve.this_cycle.connections",
                U(sum.connections),
            ),
        ],
    )
    .fail_if(bad.is_some(), || {
        format!(
            "serve.all_cycles.{name} {g} but the {} power cycles' this_cycle.{name} give {w}",
            s.power_cycle
        )
    })
}

/// Every counter of `c` by its path in the section (`commands.errors_by_cause.power_cut`);
/// destructured whole, so a new counter must be named here.
fn flat(c: &Counts) -> Vec<(&'static str, u64)> {
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
    let ErrorCounts {
        power_cut,
        old_connection,
        no_space,
        device,
        server_stopped,
        worn_out,
    } = e;
    vec![
        ("connections", connections),
        ("commands.read", read),
        ("commands.write", write),
        ("commands.flush", flush),
        ("commands.trim", trim),
        ("commands.write_zeroes", write_zeroes),
        ("commands.fua", fua),
        ("commands.read_bytes", read_bytes),
        ("commands.write_bytes", write_bytes),
        ("commands.ok", ok),
        ("commands.errors", errors),
        ("commands.errors_by_cause.power_cut", power_cut),
        ("commands.errors_by_cause.old_connection", old_connection),
        ("commands.errors_by_cause.no_space", no_space),
        ("commands.errors_by_cause.device", device),
        ("commands.errors_by_cause.server_stopped", server_stopped),
        ("commands.errors_by_cause.worn_out", worn_out),
        ("commands.in_flight", in_flight),
        ("commands.device_requests", device_requests),
        ("late_replies", late_replies),
        ("max_late_ns", max_late_ns),
        ("grace_waits", grace_waits),
        ("grace_timeouts", grace_timeouts),
    ]
}

/// The host requests the cycle's commands became are each in the document's `host`
/// figures once, completed or failed: `host.reads + writes + trims + flushes +
/// failed_requests = serve.this_cycle.commands.device_requests` when the cycle ended
/// (`completed`, `power_cut`), without a modelled host interface.
fn serve_device_requests(r: &Results, s: &ServeSummary) -> Check {
    const NAME: &str = "serve_device_requests";
    let why = match r.status {
        RunStatus::Completed | RunStatus::PowerCut if r.host_interface.is_some() => {
            "requests may wait in the modelled host interface, counted by neither"
        }
        RunStatus::Completed | RunStatus::PowerCut => "",
        RunStatus::Serving => "a snapshot while serving: requests may be in flight",
        _ => "the device stopped before its requests completed (they are in no host count)",
    };
    if !why.is_empty() {
        return Check::skipped(NAME, Kind::Conservation, why);
    }
    let c = &r.host.counters;
    let host = c.reads + c.writes + c.trims + c.flushes + c.failed_requests;
    let want = s.this_cycle.commands.device_requests;
    Check::new(
        NAME,
        Kind::Conservation,
        vec![
            (
                "host.reads + writes + trims + flushes + failed_requests",
                U(host),
            ),
            ("serve.this_cycle.commands.device_requests", U(want)),
        ],
    )
    .fail_if(host != want, || {
        format!(
            "the cycle's commands became {want} host requests, the host figures count {host} (completed or failed)"
        )
    })
}

/// A document's audit in a line: its checks, and its warnings and errors by name (`ssdlab
/// run`'s summary line gives their words; a power cut says only this).
pub fn brief(a: &Audit) -> String {
    let named = |v: Verdict| {
        let n: Vec<&str> = a
            .checks
            .iter()
            .filter(|c| c.verdict == v)
            .map(|c| c.name)
            .collect();
        if n.is_empty() {
            String::new()
        } else {
            format!(" ({})", n.join(", "))
        }
    };
    format!(
        "audit: {} checks, {} warnings{}, {} errors{}",
        a.checks.len(),
        a.warnings,
        named(Verdict::Warning),
        a.errors,
        named(Verdict::Error)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ssdlab_core::sim::audit::Overall;
    use ssdlab_core::{Config, NoProgress};

    /// A small timed run (reads, writes, trims): the document of a power cycle that ended.
    fn document() -> Results {
        document_with("")
    }

    /// [`document`] with `extra` configuration lines after the device's.
    fn document_with(extra: &str) -> Results {
        let toml = r#"
seed = 3
mode = "timed"
[device]
over_provisioning_ratio = 0.5
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 2
planes_per_die = 2
blocks_per_plane = 24
pages_per_block = 16
page_size_bytes = 16384
mapping_unit_bytes = 4096
EXTRA
[ftl]
write_buffer_bytes = 262144
[precondition]
enabled = false
[workload]
kind = "synthetic"
requests = 300
read_percent = 40.0
trim_percent = 5.0
"#;
        let cfg = Config::from_toml_str(&toml.replace("EXTRA", extra), "t").unwrap();
        ssdlab_core::run(cfg, &mut NoProgress).unwrap()
    }

    /// The section of a server in its second power cycle that served `r`'s requests, each
    /// a command of its own; the first cycle ended with a cut that failed 2 of 5 writes.
    fn section_of(r: &Results) -> ServeSummary {
        let h = &r.host.counters;
        assert_eq!(h.failed_requests, 0);
        let done = h.reads + h.writes + h.flushes + h.trims;
        let this = Counts {
            connections: 2,
            commands: CommandCounts {
                read: h.reads,
                write: h.writes,
                flush: h.flushes,
                trim: h.trims,
                read_bytes: h.read_bytes,
                write_bytes: h.write_bytes,
                ok: done,
                device_requests: done,
                ..CommandCounts::default()
            },
            grace_waits: 3,
            ..Counts::default()
        };
        let ended = Counts {
            connections: 1,
            commands: CommandCounts {
                write: 5,
                write_bytes: 5 * 4096,
                ok: 3,
                errors: 2,
                errors_by_cause: ErrorCounts {
                    power_cut: 2,
                    ..ErrorCounts::default()
                },
                device_requests: 5,
                ..CommandCounts::default()
            },
            late_replies: 1,
            max_late_ns: 70_000,
            ..Counts::default()
        };
        let mut all = ended;
        all.add_cycle(&this);
        ServeSummary {
            power_cycle: 2,
            this_cycle: this,
            all_cycles: all,
            ended_cycles: ended,
            ..ServeSummary::default()
        }
    }

    fn verdict_of(r: &Results, s: &ServeSummary, name: &str) -> (Verdict, Option<String>) {
        let c = CHECKS
            .iter()
            .map(|f| f(r, s))
            .find(|c| c.name == name)
            .expect(name);
        (c.verdict, c.message)
    }

    type Perturb = fn(&mut Results, &mut ServeSummary);

    /// One perturbation per check, each the symptom of an accounting bug.
    fn perturbations() -> Vec<(&'static str, Perturb)> {
        vec![
            // A command received and never answered.
            ("serve_commands_answered", |_, s| {
                s.count(|n| n.commands.read += 1)
            }),
            // An error answered without its cause (a cut's EIO counted as errors only).
            ("serve_errors_by_cause", |_, s| {
                s.count(|n| {
                    n.commands.ok -= 1;
                    n.commands.errors += 1
                })
            }),
            // A command a cut left in flight, neither answered nor failed.
            ("serve_nothing_in_flight", |_, s| {
                s.count(|n| {
                    n.commands.ok -= 1;
                    n.commands.in_flight += 1
                })
            }),
            // A counter of this cycle that all_cycles missed.
            ("serve_all_cycles_sum", |_, s| s.this_cycle.grace_waits += 1),
            // A write answered EIO after a cut yet counted as completed by the host figures.
            ("serve_device_requests", |r, _| r.host.counters.writes += 1),
        ]
    }

    /// A consistent document passes every serve check; the audit then has the core's
    /// checks and these, and its verdict follows them.
    #[test]
    fn a_consistent_section_passes() {
        let mut r = document();
        let s = section_of(&r);
        let core = r.audit.checks.len();
        audit(&mut r, &s);
        assert_eq!(r.audit.checks.len(), core + CHECKS.len());
        let serve: Vec<_> = r.audit.checks[core..]
            .iter()
            .map(|c| (c.name, c.verdict))
            .collect();
        assert!(serve.iter().all(|(_, v)| *v == Verdict::Ok), "{serve:?}");
        assert_ne!(r.audit.verdict, Overall::InternalError);
        assert_eq!(r.audit.errors, 0);
    }

    /// Every serve check fails, as an error, on a perturbed input; each check has its
    /// perturbation here, in order.
    #[test]
    fn every_serve_check_fails_on_a_perturbed_input() {
        let r0 = document();
        let s0 = section_of(&r0);
        let list = perturbations();
        let names: Vec<&str> = list.iter().map(|p| p.0).collect();
        let all: Vec<&str> = CHECKS.iter().map(|f| f(&r0, &s0).name).collect();
        assert_eq!(names, all, "one perturbation per check, in order");
        for status in [RunStatus::Completed, RunStatus::PowerCut] {
            for (name, perturb) in &list {
                let (mut r, mut s) = (r0.clone(), s0.clone());
                r.status = status;
                assert_eq!(verdict_of(&r, &s, name).0, Verdict::Ok, "{name} clean");
                perturb(&mut r, &mut s);
                let (v, msg) = verdict_of(&r, &s, name);
                assert_eq!(v, Verdict::Error, "{name}: {msg:?}");
                assert!(msg.is_some_and(|m| !m.is_empty()), "{name} says why");
                audit(&mut r, &s);
                assert_eq!(r.audit.verdict, Overall::InternalError, "{name}");
                s.audit = r.audit.clone();
                let e = s.internal_error().expect(name).to_string();
                assert!(
                    e.starts_with("internal error (please report it")
                        && e.contains("cannot be: results.json: ")
                        && e.contains(&format!("{name}: ")),
                    "{e}"
                );
            }
        }
    }

    /// A snapshot (requests in flight) and a modelled host interface (requests waiting in
    /// it) skip what they cannot hold, saying why; a stopped server's host figures leave
    /// out the requests it stopped.
    #[test]
    fn what_does_not_apply_is_skipped_with_why() {
        let r0 = document();
        let s = section_of(&r0);
        let mut r = r0.clone();
        r.status = RunStatus::Serving;
        for name in ["serve_nothing_in_flight", "serve_device_requests"] {
            let (v, why) = verdict_of(&r, &s, name);
            assert_eq!(v, Verdict::Skipped, "{name}");
            assert!(why.unwrap().contains("snapshot"), "{name}");
        }
        r.status = RunStatus::Stopped;
        assert_eq!(verdict_of(&r, &s, "serve_nothing_in_flight").0, Verdict::Ok);
        assert_eq!(
            verdict_of(&r, &s, "serve_device_requests").0,
            Verdict::Skipped
        );
        let r = document_with("[device.host_interface]\npcie_generation = 3\nlanes = 4");
        assert!(r.host_interface.is_some());
        let (v, why) = verdict_of(&r, &section_of(&r), "serve_device_requests");
        assert_eq!(v, Verdict::Skipped);
        assert!(why.unwrap().contains("host interface"));
    }

    /// An earlier document's internal error (a snapshot's, a power cut's) ends the server
    /// with an error too, naming that document.
    #[test]
    fn an_earlier_documents_error_is_the_servers() {
        let mut s = section_of(&document());
        assert!(s.internal_error().is_none());
        s.earlier_audit_errors
            .push("power-cycle-1/results.json: serve_device_requests: 5 vs 6".into());
        let e = s.internal_error().unwrap().to_string();
        assert!(
            e.ends_with(
                "figures that cannot be: power-cycle-1/results.json: serve_device_requests: 5 vs 6"
            ),
            "{e}"
        );
    }

    /// Cycles add up counter by counter; the worst lateness is the largest, not a sum.
    #[test]
    fn cycles_add_up_with_the_largest_lateness() {
        let r = document();
        let s = section_of(&r);
        let (e, t, a) = (&s.ended_cycles, &s.this_cycle, &s.all_cycles);
        assert_eq!(a.commands.write, e.commands.write + t.commands.write);
        assert_eq!(a.commands.errors_by_cause.power_cut, 2);
        assert_eq!((a.connections, a.grace_waits), (3, 3));
        assert_eq!((a.late_replies, a.max_late_ns), (1, 70_000));
        let mut b = *a;
        b.add_cycle(&Counts {
            max_late_ns: 1,
            ..Counts::default()
        });
        assert_eq!(b.max_late_ns, 70_000);
    }

    /// The one-line form names the checks that did not pass.
    #[test]
    fn the_brief_line_names_the_findings() {
        let mut r = document();
        let mut s = section_of(&r);
        s.this_cycle.grace_waits += 1;
        audit(&mut r, &s);
        let b = brief(&r.audit);
        assert!(
            b.starts_with(&format!("audit: {} checks, ", r.audit.checks.len())),
            "{b}"
        );
        assert!(b.ends_with(", 1 errors (serve_all_cycles_sum)"), "{b}");
    }
}
