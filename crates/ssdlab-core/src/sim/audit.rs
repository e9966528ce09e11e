//! The results audit (`results.json` → `audit`): every run checks its own figures before
//! anyone reads them. Three kinds of check:
//!
//! * **conservation**: every count appears once and adds up (requests counted = requests
//!   completed = latency samples = the time series' sums; bytes within their units; NAND
//!   operations by cause = their totals; host units programmed ≤ host units written);
//! * **bound**: what physics allows (host MB/s within the data path, die, channel and link
//!   busy no longer than the phase, a NAND read no faster than tR plus its transfer);
//! * **share**: what a reader must know to read the figures (failed requests, reads of
//!   units never written, writes absorbed by the buffer, WAF below 1): warnings.
//!
//! A broken conservation or bound is a bug: a library run ends with
//! [`SimError::Internal`] ([`crate::Simulation::audit_strict`]), `ssdlab run` writes the
//! results marked (`verdict = "internal_error"`), says so and exits non-zero. A share is a
//! warning, printed in the run summary and recorded.
//!
//! Each check is one function in [`CHECKS`] reading the results document and the
//! [`Facts`] a run knows beyond it. A new feature adds its counters to the document (or to
//! `Facts`, filled in `sim`) and its identities as one function plus one line of `CHECKS`;
//! the unit tests below hold every check to failing on a perturbed input.
//!
//! A caller that adds a section of its own to the document (`ssdlab serve`'s `serve`
//! section) adds that section's identities the same way, in its own crate: one function
//! per identity building a [`Check`] ([`Check::new`], [`Check::fail_if`],
//! [`Check::skipped`]), each added with [`Audit::add`], which keeps the verdict and counts.

use super::{Results, RunStatus};
use crate::error::SimError;
use crate::stats::{round6, TimeSeriesRow};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// Failed requests above this share of all requests are a warning.
pub const FAILED_SHARE_WARN: f64 = 0.01;
/// Units read that were never written, above this share of the units read: a warning.
pub const UNWRITTEN_SHARE_WARN: f64 = 0.10;
/// Units written that never reached NAND (absorbed by the buffer), above this share of
/// the units written: a warning.
pub const ABSORBED_SHARE_WARN: f64 = 0.10;

/// Requests the host saw complete in a timed phase, by operation; failed requests apart
/// (in `failed` only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completed {
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub trims: u64,
    pub zone_commands: u64,
    pub failed: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub trim_bytes: u64,
    pub write_units: u64,
}

/// Σ rate × interval of each rate column of a time series (as written: rates rounded to
/// 6 decimals), the interval of a row being from the previous row's time to its own.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SeriesSums {
    pub rows: u64,
    pub end_ns: u64,
    pub reads: f64,
    pub writes: f64,
    pub flushes: f64,
    pub read_bytes: f64,
    pub write_bytes: f64,
}

impl SeriesSums {
    /// The sums of `rows` (a series starting at time 0).
    pub fn of(rows: &[TimeSeriesRow]) -> SeriesSums {
        let mut s = SeriesSums {
            rows: rows.len() as u64,
            ..SeriesSums::default()
        };
        let mut prev = 0u64;
        for r in rows {
            let secs = (r.time_ns - prev) as f64 / 1e9;
            s.reads += round6(r.read_iops) * secs;
            s.writes += round6(r.write_iops) * secs;
            s.flushes += round6(r.flush_iops) * secs;
            s.read_bytes += round6(r.read_mb_per_s) * 1e6 * secs;
            s.write_bytes += round6(r.write_mb_per_s) * 1e6 * secs;
            prev = r.time_ns;
        }
        s.end_ns = prev;
        s
    }
}

/// What a timed phase knows beyond its results document.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimedFacts {
    pub completed: Completed,
    /// Requests submitted and not completed when the figures were taken (a snapshot, a
    /// power cut, a worn-out device; 0 when the phase ran to its end).
    pub in_flight: u64,
    /// Host units of every write submitted, those in flight included (at a power cut the
    /// FTL may have placed units of writes that then failed, in no host count).
    pub write_units_submitted: u64,
    /// Simulated time when the figures were taken (the last completion when the phase
    /// ran to its end; later for a snapshot or a worn-out device).
    pub end_ns: u64,
    /// The time series, when it was written and ended with the phase.
    pub series: Option<SeriesSums>,
    pub die_busy_max_ns: u64,
    /// Per channel: time it spent transferring, and when its last reserved transfer ends
    /// (transfers are reserved ahead of the time the figures were taken).
    pub channels: Vec<(u64, u64)>,
    /// The fastest read served by NAND, from its dispatch to its data off the channel
    /// (`None`: no read was).
    pub nand_read_min_ns: Option<u64>,
    /// Time the data path carried data: per direction (down, up) for the link; the host
    /// transfer path in both.
    pub data_path_busy_ns: [u64; 2],
    /// Background program and erase batches and their operations:
    /// `[(program batches, programs), (erase batches, erases)]`.
    pub gc_batches: [(u64, u64); 2],
}

/// What a phase knows beyond its results document ([`Results`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts {
    /// Timed mode only.
    pub timed: Option<TimedFacts>,
    /// Host units the FTL placed in pages during the phase (after buffer merges).
    pub host_units_programmed: u64,
    /// Empty slots programmed (partial pages) during the phase.
    pub padding_units: u64,
    pub slots_per_page: u32,
    /// The shortest a read served by NAND can take: command, the fastest tR of the
    /// device's cell modes, one unit over the channel.
    pub nand_read_floor_ns: u64,
    pub data_path: DataPath,
}

/// The data path whose rate bounds the host's throughput (`audit.data_path`).
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct DataPath {
    /// The configuration that sets it: `device.host_transfer_mb_per_s`, or
    /// `device.host_interface` (the PCIe link, timed mode).
    pub bound: &'static str,
    /// Its rate (each direction's for a full-duplex link), 10⁶ bytes per second.
    pub mb_per_s: f64,
    /// Reads and writes each have the rate (a PCIe link), or share it.
    pub full_duplex: bool,
}

/// What a check is about.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Counts that must add up: a violation is a bug.
    Conservation,
    /// A physical limit: a violation is a bug.
    Bound,
    /// A share the reader must know: a warning.
    Share,
}

/// A check's outcome, worst last.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Ok,
    /// Does not apply to this run (its `message` says why).
    Skipped,
    Warning,
    Error,
}

/// A figure a check compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    U(u64),
    F(f64),
}

impl Serialize for Num {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Num::U(v) => s.serialize_u64(v),
            Num::F(v) => s.serialize_f64(round6(v)),
        }
    }
}

/// The figures a check compared, by name (in order; names are results.json paths where
/// the figure is there).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Figures(pub Vec<(&'static str, Num)>);

impl Serialize for Figures {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// One check of the audit.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Check {
    pub name: &'static str,
    pub kind: Kind,
    pub verdict: Verdict,
    pub figures: Figures,
    /// What is wrong (an error), what the reader must know (a warning), or why the check
    /// does not apply (skipped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Check {
    /// A check `name` of `kind` that compared `figures`: passed until [`Check::fail_if`].
    pub fn new(name: &'static str, kind: Kind, figures: Vec<(&'static str, Num)>) -> Check {
        Check {
            name,
            kind,
            verdict: Verdict::Ok,
            figures: Figures(figures),
            message: None,
        }
    }

    /// Not applicable to this run, because `why`.
    pub fn skipped(name: &'static str, kind: Kind, why: &str) -> Check {
        Check {
            verdict: Verdict::Skipped,
            message: Some(why.to_string()),
            ..Check::new(name, kind, Vec::new())
        }
    }

    /// The check fails when `bad` (an error, or a warning for a share), saying `why`; the
    /// first failure's words are kept.
    pub fn fail_if(mut self, bad: bool, why: impl FnOnce() -> String) -> Check {
        if bad && self.verdict == Verdict::Ok {
            self.verdict = match self.kind {
                Kind::Share => Verdict::Warning,
                _ => Verdict::Error,
            };
            self.message = Some(why());
        }
        self
    }
}

/// The run's verdict: the worst of its checks.
#[derive(Serialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Overall {
    #[default]
    Ok,
    /// A share the reader must know (the figures stand).
    Warnings,
    /// A conservation or bound check failed: a bug in the simulator; the figures are not
    /// to be used.
    InternalError,
}

/// `results.json` → `audit`.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct Audit {
    pub verdict: Overall,
    pub errors: u32,
    pub warnings: u32,
    pub data_path: DataPath,
    pub checks: Vec<Check>,
    /// What the checks read beyond the document (not written: [`audit`] again after a
    /// change of the document).
    #[serde(skip)]
    pub facts: Facts,
}

impl Audit {
    /// Add a check of a section the caller adds to the document (the verdict, errors and
    /// warnings follow it).
    pub fn add(&mut self, c: Check) {
        self.checks.push(c);
        self.tally();
    }

    /// The verdict, errors and warnings of the checks.
    fn tally(&mut self) {
        let count = |v: Verdict| self.checks.iter().filter(|c| c.verdict == v).count() as u32;
        (self.errors, self.warnings) = (count(Verdict::Error), count(Verdict::Warning));
        self.verdict = if self.errors > 0 {
            Overall::InternalError
        } else if self.warnings > 0 {
            Overall::Warnings
        } else {
            Overall::Ok
        };
    }

    /// The checks that did not pass: errors first, then warnings.
    pub fn findings(&self) -> Vec<&Check> {
        let mut v: Vec<&Check> = self
            .checks
            .iter()
            .filter(|c| c.verdict >= Verdict::Warning)
            .collect();
        v.sort_by_key(|c| std::cmp::Reverse(c.verdict));
        v
    }

    /// A failed conservation or bound check, as the internal error it is.
    pub fn internal_error(&self) -> Option<SimError> {
        let broken: Vec<String> = self
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Error)
            .map(|c| format!("{}: {}", c.name, c.message.as_deref().unwrap_or("")))
            .collect();
        (!broken.is_empty()).then(|| SimError::Internal {
            what: format!(
                "the results audit found figures that cannot be: {}",
                broken.join("; ")
            ),
        })
    }
}

/// A check: the results document and the facts beyond it → the check's figures and verdict.
pub type CheckFn = fn(&Results, &Facts) -> Check;

/// Every check, in the order of `audit.checks`.
pub const CHECKS: &[CheckFn] = &[
    request_counts,
    reads_completed,
    writes_completed,
    flushes_completed,
    trims_completed,
    zone_commands_completed,
    failed_requests_apart,
    rates_from_counts,
    timeseries_sums,
    bytes_in_units,
    host_units_reach_nand,
    nand_by_cause,
    nand_slots_hold_units,
    user_figures,
    lsm_io,
    trim_records,
    slc_cache,
    host_data_path,
    data_path_busy,
    die_and_channel_busy,
    gc_batch_planes,
    nand_read_time,
    failed_share,
    unwritten_reads,
    user_unmapped_reads,
    buffer_absorbed,
    waf_below_one,
];

/// The checks of the `reliability` section, after [`CHECKS`] when the section is present
/// (a run without it keeps its list of checks).
pub const RELIABILITY_CHECKS: &[CheckFn] = &[reliability_reads, reliability_bounds];

/// The checks of `latency_ns.by_origin`, after the others when it is present (a workload
/// naming its requests' origins: the host log-structured layer).
pub const ORIGIN_CHECKS: &[CheckFn] = &[origin_counts];

/// Audit `r` with `facts`.
pub fn audit(r: &Results, facts: &Facts) -> Audit {
    let mut a = Audit {
        data_path: facts.data_path.clone(),
        checks: CHECKS
            .iter()
            .chain(if r.reliability.is_some() {
                RELIABILITY_CHECKS
            } else {
                &[]
            })
            .chain(
                if r.latency_ns
                    .as_ref()
                    .is_some_and(|l| !l.by_origin.is_empty())
                {
                    ORIGIN_CHECKS
                } else {
                    &[]
                },
            )
            .map(|f| f(r, facts))
            .collect(),
        facts: facts.clone(),
        ..Audit::default()
    };
    a.tally();
    a
}

use Num::{F, U};

const FUNCTIONAL: &str = "the functional mode completes every request as it is submitted";

// ---- conservation ----------------------------------------------------------------------

/// `reliability`: every NAND read was assessed once (`reliability.reads` =
/// `nand.reads.total` = Σ histogram), and the retries are the histogram's Σ k·n_k.
fn reliability_reads(r: &Results, _: &Facts) -> Check {
    let Some(x) = &r.reliability else {
        return Check::skipped(
            "reliability_reads",
            Kind::Conservation,
            "no reliability section",
        );
    };
    let sum: u64 = x.retries_histogram.iter().sum();
    let weighted: u64 = x
        .retries_histogram
        .iter()
        .enumerate()
        .map(|(k, n)| k as u64 * n)
        .sum();
    Check::new(
        "reliability_reads",
        Kind::Conservation,
        vec![
            ("reliability.reads", U(x.reads)),
            ("nand.reads.total", U(r.nand.reads.total)),
            ("Σ reliability.retries_histogram", U(sum)),
            ("reliability.retries", U(x.retries)),
            ("Σ k × reliability.retries_histogram[k]", U(weighted)),
        ],
    )
    .fail_if(x.reads != r.nand.reads.total, || {
        format!(
            "{} reads assessed, {} NAND reads",
            x.reads, r.nand.reads.total
        )
    })
    .fail_if(sum != x.reads, || {
        format!("the histogram holds {sum} reads, not {}", x.reads)
    })
    .fail_if(weighted != x.retries, || {
        format!("the histogram holds {weighted} retries, not {}", x.retries)
    })
}

/// `reliability`: uncorrectable and soft-decoded reads are reads (host ones among
/// them), retries per read at most the ladder, RBER in
/// [0, 1] with the mean at most the max.
fn reliability_bounds(r: &Results, _: &Facts) -> Check {
    let Some(x) = &r.reliability else {
        return Check::skipped("reliability_bounds", Kind::Bound, "no reliability section");
    };
    let failed = r.host.counters.failed_requests;
    Check::new(
        "reliability_bounds",
        Kind::Bound,
        vec![
            ("reliability.reads", U(x.reads)),
            ("reliability.uncorrectable_reads", U(x.uncorrectable_reads)),
            (
                "reliability.uncorrectable_host_reads",
                U(x.uncorrectable_host_reads),
            ),
            ("reliability.soft_decodes", U(x.soft_decodes)),
            ("host.counters.failed_requests", U(failed)),
            ("reliability.rber_mean", F(x.rber_mean)),
            ("reliability.rber_max", F(x.rber_max)),
        ],
    )
    .fail_if(
        x.uncorrectable_reads > x.reads
            || x.soft_decodes > x.reads
            || x.uncorrectable_host_reads > x.uncorrectable_reads,
        || "more uncorrectable or soft-decoded reads than reads".into(),
    )
    .fail_if(
        x.retries_histogram.len() > crate::ftl::retry::RETRY_BUCKETS,
        || "more retries than a ladder has".into(),
    )
    .fail_if(
        !(0.0..=1.0).contains(&x.rber_max) || x.rber_mean > x.rber_max * (1.0 + 1e-9) + 1e-18,
        || format!("RBER mean {} max {}", x.rber_mean, x.rber_max),
    )
}

/// `host.requests` is the sum of the requests by operation and the failed ones.
fn request_counts(r: &Results, _: &Facts) -> Check {
    let c = &r.host.counters;
    let sum = c.reads + c.writes + c.trims + c.flushes + c.zone_commands + c.failed_requests;
    Check::new(
        "request_counts",
        Kind::Conservation,
        vec![
            ("host.requests", U(r.host.requests)),
            (
                "sum of host.reads, writes, trims, flushes, zone_commands, failed_requests",
                U(sum),
            ),
        ],
    )
    .fail_if(sum != r.host.requests, || {
        format!(
            "host.requests {} but the operations add up to {sum}",
            r.host.requests
        )
    })
}

/// A figure named by its results.json path.
type Named = (&'static str, u64);

/// Requests of one operation counted (`host.<op>`) = completed to the host = latency
/// samples (`samples`, when the operation has them), but for requests still in flight
/// when the figures were taken.
fn completed_check(
    name: &'static str,
    f: &Facts,
    host: Named,
    done: fn(&Completed) -> u64,
    samples: Option<Named>,
) -> Check {
    let Some(t) = &f.timed else {
        return Check::skipped(name, Kind::Conservation, FUNCTIONAL);
    };
    let completed = done(&t.completed);
    let mut figures = vec![
        (host.0, U(host.1)),
        ("completed", U(completed)),
        ("in flight", U(t.in_flight)),
    ];
    if let Some((n, v)) = samples {
        figures.push((n, U(v)));
    }
    Check::new(name, Kind::Conservation, figures)
        .fail_if(completed > host.1, || {
            format!("{completed} completed but {} = {} counted", host.0, host.1)
        })
        .fail_if(host.1 - completed.min(host.1) > t.in_flight, || {
            format!(
                "{} = {} but {completed} completed, and only {} requests are in flight",
                host.0, host.1, t.in_flight
            )
        })
        .fail_if(samples.is_some_and(|(_, v)| v != completed), || {
            let (n, v) = samples.unwrap_or_default();
            format!("{n} = {v} but {completed} completed")
        })
}

/// The latency samples of an operation, named.
fn samples(r: &Results, name: &'static str, get: fn(&super::LatencyBlock) -> u64) -> Option<Named> {
    r.latency_ns.as_ref().map(|l| (name, get(l)))
}

fn reads_completed(r: &Results, f: &Facts) -> Check {
    let host = ("host.reads", r.host.counters.reads);
    let lat = samples(r, "latency_ns.read.count", |l| l.read.count);
    completed_check("reads_completed", f, host, |c| c.reads, lat)
}

fn writes_completed(r: &Results, f: &Facts) -> Check {
    let host = ("host.writes", r.host.counters.writes);
    let lat = samples(r, "latency_ns.write.count", |l| l.write.count);
    completed_check("writes_completed", f, host, |c| c.writes, lat)
}

fn flushes_completed(r: &Results, f: &Facts) -> Check {
    let host = ("host.flushes", r.host.counters.flushes);
    let lat = samples(r, "latency_ns.flush.count", |l| l.flush.count);
    completed_check("flushes_completed", f, host, |c| c.flushes, lat)
}

fn trims_completed(r: &Results, f: &Facts) -> Check {
    let host = ("host.trims", r.host.counters.trims);
    completed_check("trims_completed", f, host, |c| c.trims, None)
}

fn zone_commands_completed(r: &Results, f: &Facts) -> Check {
    let host = ("host.zone_commands", r.host.counters.zone_commands);
    completed_check(
        "zone_commands_completed",
        f,
        host,
        |c| c.zone_commands,
        None,
    )
}

/// `latency_ns.by_origin`: every request completed to the host is in one origin's
/// latencies, once: per operation, the origins' counts add up to the requests completed
/// (the host log-structured layer: user + relocation = the device's requests).
fn origin_counts(r: &Results, f: &Facts) -> Check {
    const NAME: &str = "origin_counts";
    let (Some(l), Some(t)) = (&r.latency_ns, &f.timed) else {
        return Check::skipped(NAME, Kind::Conservation, FUNCTIONAL);
    };
    if l.by_origin.is_empty() {
        return Check::skipped(NAME, Kind::Conservation, "no origins named");
    }
    let sum = |get: fn(&crate::stats::OpLatency) -> u64| -> u64 {
        l.by_origin.iter().map(|o| get(&o.latency)).sum()
    };
    let c = &t.completed;
    let rows = [
        (
            "reads completed",
            c.reads,
            "sum of by_origin read.count",
            sum(|o| o.read.count),
        ),
        (
            "writes completed",
            c.writes,
            "sum of by_origin write.count",
            sum(|o| o.write.count),
        ),
        (
            "flushes completed",
            c.flushes,
            "sum of by_origin flush.count",
            sum(|o| o.flush.count),
        ),
    ];
    let bad = rows.iter().find(|p| p.1 != p.3);
    Check::new(
        NAME,
        Kind::Conservation,
        rows.iter()
            .flat_map(|p| [(p.0, U(p.1)), (p.2, U(p.3))])
            .collect(),
    )
    .fail_if(bad.is_some(), || {
        let p = bad.unwrap_or(&rows[0]);
        format!("{} {} but the origins' latencies hold {}", p.0, p.1, p.3)
    })
}

/// Failed requests are counted as failed only: completed as failed, in no latency (the
/// checks above) and no rate (`rates_from_counts`).
fn failed_requests_apart(r: &Results, f: &Facts) -> Check {
    let host = ("host.failed_requests", r.host.counters.failed_requests);
    let mut c = completed_check("failed_requests_apart", f, host, |c| c.failed, None);
    if c.verdict == Verdict::Skipped {
        c = Check::new(
            "failed_requests_apart",
            Kind::Conservation,
            vec![(host.0, U(host.1))],
        );
    }
    c
}

/// The headline rates are the counts over the simulated time: IOPS without the failed
/// requests, MB/s of the bytes counted.
fn rates_from_counts(r: &Results, _: &Facts) -> Check {
    let h = &r.host;
    let c = &h.counters;
    let rate = |x: f64| {
        if h.sim_time_ns == 0 {
            0.0
        } else {
            round6(x / (h.sim_time_ns as f64 / 1e9))
        }
    };
    let iops = rate((h.requests - c.failed_requests.min(h.requests)) as f64);
    let read = rate(c.read_bytes as f64 / 1e6);
    let write = rate(c.write_bytes as f64 / 1e6);
    // Each rate is rounded to 6 decimals: a sum of rounded rates may be off by 1e-6.
    let near = |a: f64, b: f64| (a - b).abs() <= 2e-6 + 1e-9 * b.abs();
    Check::new(
        "rates_from_counts",
        Kind::Conservation,
        vec![
            ("host.iops", F(h.iops)),
            ("(host.requests - host.failed_requests) / host.sim_time_ns", F(iops)),
            ("host.read_mb_per_s", F(h.read_mb_per_s)),
            ("host.read_bytes / host.sim_time_ns", F(read)),
            ("host.write_mb_per_s", F(h.write_mb_per_s)),
            ("host.write_bytes / host.sim_time_ns", F(write)),
            ("host.mb_per_s", F(h.mb_per_s)),
        ],
    )
    .fail_if(!near(h.iops, iops), || {
        format!("host.iops {} but the requests served over the time give {iops}", h.iops)
    })
    .fail_if(!near(h.read_mb_per_s, read) || !near(h.write_mb_per_s, write), || {
        format!(
            "host.read_mb_per_s {} / write_mb_per_s {} but the bytes over the time give {read} / {write}",
            h.read_mb_per_s, h.write_mb_per_s
        )
    })
    .fail_if(!near(h.mb_per_s, read + write), || {
        format!("host.mb_per_s {} is not read + write ({})", h.mb_per_s, read + write)
    })
}

/// timeseries.csv: Σ rate × interval of every row (the last, partial one included) is what
/// completed.
fn timeseries_sums(r: &Results, f: &Facts) -> Check {
    const NAME: &str = "timeseries_sums";
    let Some(t) = &f.timed else {
        return Check::skipped(
            NAME,
            Kind::Conservation,
            "the functional mode has no time series",
        );
    };
    let Some(s) = &t.series else {
        return Check::skipped(
            NAME,
            Kind::Conservation,
            "no time series, or one still running (output.timeseries_interval_ns = 0, a snapshot)",
        );
    };
    let c = &t.completed;
    // The rates are written to 6 decimals: half a unit of the last, over the series' time,
    // is what rounding may take (counts; × 10⁶ for bytes from MB/s).
    let secs = s.end_ns as f64 / 1e9;
    let pairs = [
        ("read_iops", s.reads, c.reads as f64, 1.0),
        ("write_iops", s.writes, c.writes as f64, 1.0),
        ("flush_iops", s.flushes, c.flushes as f64, 1.0),
        ("read_mb_per_s", s.read_bytes, c.read_bytes as f64, 1e6),
        ("write_mb_per_s", s.write_bytes, c.write_bytes as f64, 1e6),
    ];
    let bad = pairs.iter().find(|(_, sum, want, scale)| {
        (sum - want).abs() > 1e-9 * want + 5e-7 * scale * secs + 1e-6
    });
    Check::new(
        NAME,
        Kind::Conservation,
        vec![
            ("rows", U(s.rows)),
            ("last row time_ns", U(s.end_ns)),
            ("host.sim_time_ns", U(r.host.sim_time_ns)),
            ("read_iops * interval", F(s.reads)),
            ("completed reads", U(c.reads)),
            ("write_iops * interval", F(s.writes)),
            ("completed writes", U(c.writes)),
            ("flush_iops * interval", F(s.flushes)),
            ("completed flushes", U(c.flushes)),
            ("read_mb_per_s * interval (bytes)", F(s.read_bytes)),
            ("completed read bytes", U(c.read_bytes)),
            ("write_mb_per_s * interval (bytes)", F(s.write_bytes)),
            ("completed write bytes", U(c.write_bytes)),
        ],
    )
    .fail_if(bad.is_some(), || {
        let (col, sum, want, _) = bad.copied().unwrap_or_default();
        format!("timeseries.csv {col} sums to {sum:.3}, the run completed {want}")
    })
    // The rows cover the phase (its last partial interval kept). A served phase may sample
    // a row past its last completion (background work after it, rows of no completions).
    .fail_if(
        r.status == RunStatus::Completed && s.rows > 0 && s.end_ns < r.host.sim_time_ns,
        || {
            format!(
                "the last row ends at {} ns, before the phase's end at host.sim_time_ns {}: an interval left out",
                s.end_ns, r.host.sim_time_ns
            )
        },
    )
}

/// Host bytes fit the mapping units counted for them: bytes ≤ units × unit size, and
/// each command adds at most two partly covered units.
fn bytes_in_units(r: &Results, _: &Facts) -> Check {
    let c = &r.host.counters;
    let u = r.device.unit_bytes as u64;
    // Commands: requests, or the host interface's commands when it splits them.
    let commands = |requests: u64| requests + r.host_interface.as_ref().map_or(0, |h| h.commands);
    let slack = |requests: u64| 2 * (u - 1) * commands(requests);
    let (w, rd) = (c.write_units * u, c.read_units * u);
    Check::new(
        "bytes_in_units",
        Kind::Conservation,
        vec![
            ("host.write_bytes", U(c.write_bytes)),
            ("host.write_units * device.unit_bytes", U(w)),
            ("host.read_bytes", U(c.read_bytes)),
            ("host.read_units * device.unit_bytes", U(rd)),
        ],
    )
    .fail_if(
        c.write_bytes > w || w > c.write_bytes + slack(c.writes),
        || {
            format!(
                "host.write_bytes {} do not fit host.write_units {} of {u} bytes",
                c.write_bytes, c.write_units
            )
        },
    )
    .fail_if(
        c.read_bytes > rd || rd > c.read_bytes + slack(c.reads),
        || {
            format!(
                "host.read_bytes {} do not fit host.read_units {} of {u} bytes",
                c.read_bytes, c.read_units
            )
        },
    )
}

/// The FTL places no more host units in pages than the host wrote (buffer merges, trims
/// and zone resets make it fewer); at a power cut, the writes in flight (failed, in no
/// host count) may have had units placed too.
fn host_units_reach_nand(r: &Results, f: &Facts) -> Check {
    let w = r.host.counters.write_units;
    let cut = match &f.timed {
        Some(t) if r.status == RunStatus::PowerCut => t.write_units_submitted.saturating_sub(w),
        _ => 0,
    };
    Check::new(
        "host_units_reach_nand",
        Kind::Conservation,
        vec![
            ("host.write_units", U(w)),
            ("units of writes in flight at a power cut (failed)", U(cut)),
            ("host units programmed", U(f.host_units_programmed)),
        ],
    )
    .fail_if(f.host_units_programmed > w + cut, || {
        format!(
            "the FTL programmed {} host units, the host wrote {w}{}",
            f.host_units_programmed,
            if cut > 0 {
                format!(" and {cut} more in writes in flight at the power cut")
            } else {
                String::new()
            }
        )
    })
}

/// `nand.<kind>`: the causes add up to the total. Read reclaim and retention refresh
/// (`nand.*.reclaim`, `nand.*.refresh`, `gc.reclaimed_units`, `gc.refreshed_units`; their
/// figures shown when they moved data): a job reads a source page only for the units it
/// moves out of it (reads ≤ units) and its programs hold the units it moved (units ≤
/// programs × slots per page). Their blocks by trigger (`gc.*_blocks_by_rber`) are among
/// the blocks started, urgent jobs among all jobs started, and a job erases its source
/// once (erases of the cause ≤ its blocks).
fn nand_by_cause(r: &Results, f: &Facts) -> Check {
    let n = &r.nand;
    let sum = |b: &crate::stats::ByCause| b.sum_of_causes();
    let kinds = [
        ("reads", &n.reads),
        ("programs", &n.programs),
        ("erases", &n.erases),
    ];
    let bad = kinds.iter().find(|(_, b)| sum(b) != b.total);
    let mut figures = vec![
        ("nand.reads.total", U(n.reads.total)),
        ("nand.reads by cause", U(sum(&n.reads))),
        ("nand.programs.total", U(n.programs.total)),
        ("nand.programs by cause", U(sum(&n.programs))),
        ("nand.erases.total", U(n.erases.total)),
        ("nand.erases by cause", U(sum(&n.erases))),
    ];
    let g = &r.gc;
    let spp = f.slots_per_page as u64;
    let jobs = [
        (
            "reclaim",
            n.reads.reclaim,
            n.programs.reclaim,
            g.reclaimed_units,
        ),
        (
            "refresh",
            n.reads.refresh,
            n.programs.refresh,
            g.refreshed_units,
        ),
    ];
    let started = g.reclaimed_blocks + g.refreshed_blocks;
    if started
        + jobs
            .iter()
            .map(|&(_, reads, programs, units)| reads + programs + units)
            .sum::<u64>()
        > 0
    {
        figures.extend([
            ("nand.reads.reclaim", U(n.reads.reclaim)),
            ("nand.programs.reclaim", U(n.programs.reclaim)),
            ("gc.reclaimed_units", U(g.reclaimed_units)),
            ("nand.reads.refresh", U(n.reads.refresh)),
            ("nand.programs.refresh", U(n.programs.refresh)),
            ("gc.refreshed_units", U(g.refreshed_units)),
            ("gc.reclaimed_blocks", U(g.reclaimed_blocks)),
            ("gc.reclaimed_blocks_by_rber", U(g.reclaimed_blocks_by_rber)),
            ("nand.erases.reclaim", U(n.erases.reclaim)),
            ("gc.refreshed_blocks", U(g.refreshed_blocks)),
            ("gc.refreshed_blocks_by_rber", U(g.refreshed_blocks_by_rber)),
            ("nand.erases.refresh", U(n.erases.refresh)),
            ("gc.urgent_relocations", U(g.urgent_relocations)),
        ]);
    }
    let blocks_bad = g.reclaimed_blocks_by_rber > g.reclaimed_blocks
        || g.refreshed_blocks_by_rber > g.refreshed_blocks
        || n.erases.reclaim > g.reclaimed_blocks
        || n.erases.refresh > g.refreshed_blocks
        || g.urgent_relocations > started;
    let moved = jobs
        .iter()
        .find(|&&(_, reads, programs, units)| reads > units || units > programs * spp);
    Check::new("nand_by_cause", Kind::Conservation, figures)
        .fail_if(bad.is_some(), || {
            let (k, b) = bad.copied().unwrap_or(kinds[0]);
            format!("nand.{k}: causes sum to {}, total {}", sum(b), b.total)
        })
        .fail_if(moved.is_some(), || {
            let (what, reads, programs, units) = moved.copied().unwrap_or(jobs[0]);
            format!(
                "{what}: {reads} page reads and {programs} programs of {spp} slots moved {units} units"
            )
        })
        .fail_if(blocks_bad, || {
            "reclaimed or refreshed blocks: fewer than those by RBER, their erases or the urgent jobs".into()
        })
}

const NO_HOST_LAYER: &str = "no host layer: the user's figures are the device's";

/// With a host layer, the user's figures hang together: its reads of units it never wrote
/// are among its reads, its WAF is at least 1 ((user + relocated) / user bytes), the total
/// WAF is the host WAF times the device's, and the user's MB/s is its bytes over the
/// simulated time.
fn user_figures(r: &Results, _: &Facts) -> Check {
    let Some(u) = &r.user else {
        return Check::skipped("user_figures", Kind::Conservation, NO_HOST_LAYER);
    };
    let product = u.host_waf * r.waf;
    let secs = r.host.sim_time_ns as f64 / 1e9;
    let rate = if secs > 0.0 {
        (u.read_bytes + u.write_bytes) as f64 / 1e6 / secs
    } else {
        0.0
    };
    // results.json rounds the device WAF to 4 decimals and rates to 6.
    let near = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b.abs().max(1.0);
    Check::new(
        "user_figures",
        Kind::Conservation,
        vec![
            ("user.read_bytes", U(u.read_bytes)),
            ("user.unmapped_read_bytes", U(u.unmapped_read_bytes)),
            ("user.host_waf", F(u.host_waf)),
            ("user.total_waf", F(u.total_waf)),
            ("user.host_waf * waf", F(product)),
            ("user.mb_per_s", F(u.mb_per_s)),
            ("user bytes / sim time (MB/s)", F(rate)),
        ],
    )
    .fail_if(u.unmapped_read_bytes > u.read_bytes, || {
        format!(
            "user.unmapped_read_bytes {} above user.read_bytes {}",
            u.unmapped_read_bytes, u.read_bytes
        )
    })
    .fail_if(u.write_bytes > 0 && u.host_waf < 1.0, || {
        format!("user.host_waf {} below 1", u.host_waf)
    })
    .fail_if(!near(u.total_waf, product, 1e-3), || {
        format!(
            "user.total_waf {} but host_waf × waf = {product}",
            u.total_waf
        )
    })
    .fail_if(!near(u.mb_per_s, rate, 1e-6), || {
        format!(
            "user.mb_per_s {} but the user's bytes give {rate}",
            u.mb_per_s
        )
    })
}

/// The LSM-tree store (`kind = "lsm"`) counted its requests when it drew them; a phase
/// run to its end, none failed, completed each: the device's bytes are the store's
/// (written = WAL + flush + compaction + relocation, read = compaction + relocation +
/// gets, trimmed = deleted files' extents, zone commands = its resets). And its put rate
/// (checked even with failed requests): `workload.lsm.put_rate_bytes_per_s` is the user
/// bytes per second of the phase and, under a put rate limit `R`, at most what the pacing
/// allows — put `i` is due at `⌊i · entry · 10⁹ / R⌋` ns, so the phase lasts at least
/// `D = ⌊(puts − 1) · entry · 10⁹ / R⌋` ns and the rate is at most `⌊user bytes · 10⁹ /
/// D⌋` (≈ R · puts / (puts − 1)).
fn lsm_io(r: &Results, f: &Facts) -> Check {
    let l = &r.workload.lsm;
    if l.is_empty() {
        return Check::skipped("lsm_io", Kind::Conservation, "no LSM-tree store");
    }
    let t = r.host.sim_time_ns;
    let rate = (l.user_bytes as u128 * 1_000_000_000)
        .checked_div(t as u128)
        .map_or(0, |x| x as u64);
    let limit = l.put_rate_limit_bytes_per_s;
    let bound = (limit > 0 && l.puts >= 2).then(|| {
        let entry = (l.user_bytes / l.puts) as u128;
        let d = (l.puts as u128 - 1) * entry * 1_000_000_000 / limit as u128;
        (l.user_bytes as u128 * 1_000_000_000)
            .checked_div(d)
            .map_or(u64::MAX, |b| b.min(u64::MAX as u128) as u64)
    });
    let rate_figures = [
        (
            "workload.lsm.put_rate_bytes_per_s",
            U(l.put_rate_bytes_per_s),
        ),
        ("workload.lsm.put_rate_limit_bytes_per_s", U(limit)),
        ("audit.lsm_put_rate_bound", U(bound.unwrap_or(0))),
    ];
    let rate_fails = |c: Check| {
        c.fail_if(l.put_rate_bytes_per_s != rate, || {
            format!(
                "workload.lsm.put_rate_bytes_per_s {} but the user's bytes over the phase give {rate}",
                l.put_rate_bytes_per_s
            )
        })
        .fail_if(bound.is_some_and(|b| l.put_rate_bytes_per_s > b), || {
            format!(
                "{} put bytes/s above the pacing's bound {} (limit {limit}, {} puts)",
                l.put_rate_bytes_per_s,
                bound.unwrap_or(0),
                l.puts
            )
        })
    };
    let c = &r.host.counters;
    if c.failed_requests > 0 || f.timed.as_ref().is_some_and(|t| t.in_flight > 0) {
        return rate_fails(Check::new(
            "lsm_io",
            Kind::Conservation,
            rate_figures.to_vec(),
        ));
    }
    let pairs = [
        (
            "host.write_bytes",
            c.write_bytes,
            "lsm WAL + flush + compaction + gc writes",
            l.device_write_bytes(),
        ),
        (
            "host.read_bytes",
            c.read_bytes,
            "lsm compaction + gc + get reads",
            l.device_read_bytes(),
        ),
        (
            "host.trim_bytes",
            c.trim_bytes,
            "workload.lsm.trim_bytes",
            l.trim_bytes,
        ),
        (
            "host.zone_commands",
            c.zone_commands,
            "workload.lsm.zone_resets",
            l.zone_resets,
        ),
    ];
    let bad = pairs.iter().find(|p| p.1 != p.3);
    rate_fails(Check::new(
        "lsm_io",
        Kind::Conservation,
        pairs
            .iter()
            .flat_map(|p| [(p.0, U(p.1)), (p.2, U(p.3))])
            .chain(rate_figures)
            .collect(),
    ))
    .fail_if(bad.is_some(), || {
        let p = bad.unwrap_or(&pairs[0]);
        format!("{} {} but {} {}", p.0, p.1, p.2, p.3)
    })
}

/// Durable trims: the record pages are mapping programs, each holds at least one record
/// and at most a page of them, and (on a conventional device) no more units were unmapped
/// than host trims named.
fn trim_records(r: &Results, f: &Facts) -> Check {
    let Some(t) = &r.trims else {
        return Check::skipped(
            "trim_records",
            Kind::Conservation,
            "trims are not recorded on flash in this run",
        );
    };
    let unit = r.device.unit_bytes as u64;
    let c = &r.host.counters;
    // A trim's partial units at its ends are unmapped too (the host path trims whole units).
    let trim_units_max = c.trim_bytes.div_ceil(unit.max(1)) + 2 * c.trims;
    let spp = f.slots_per_page as u64;
    Check::new(
        "trim_records",
        Kind::Conservation,
        vec![
            ("trims.record_pages", U(t.record_pages)),
            ("trims.record_slots", U(t.record_slots)),
            ("nand.programs.mapping", U(r.nand.programs.mapping)),
            ("trims.trimmed_units", U(t.trimmed_units)),
            ("units host trims name (at most)", U(trim_units_max)),
        ],
    )
    .fail_if(t.record_pages > r.nand.programs.mapping, || {
        format!(
            "trims.record_pages {} above nand.programs.mapping {}",
            t.record_pages, r.nand.programs.mapping
        )
    })
    .fail_if(
        t.record_slots < t.record_pages || t.record_slots > t.record_pages * spp,
        || {
            format!(
                "trims.record_slots {} not within 1 to {spp} per record page ({})",
                t.record_slots, t.record_pages
            )
        },
    )
    // (A zone reset unmaps its zone's units too.)
    .fail_if(r.zns.is_none() && t.trimmed_units > trim_units_max, || {
        format!(
            "trims.trimmed_units {} above the {trim_units_max} units host trims name",
            t.trimmed_units
        )
    })
}

/// NAND programs hold every unit placed in them: programs × slots per page ≥ host units
/// plus GC copies plus padding. With partial-page programs (`gc.partial_programs`: each a
/// program appending to a page a program of the same phase opened, as a phase starts with
/// no partly programmed page) the pages are the programs less the appends.
fn nand_slots_hold_units(r: &Results, f: &Facts) -> Check {
    let appends = r.gc.partial_programs;
    let slots = r.nand.programs.total.saturating_sub(appends) * f.slots_per_page as u64;
    let units = f.host_units_programmed + r.gc.copied_units + f.padding_units;
    let mut figures = vec![
        (
            if appends == 0 {
                "nand.programs.total * slots per page"
            } else {
                "(nand.programs.total - gc.partial_programs) * slots per page"
            },
            U(slots),
        ),
        ("host units programmed", U(f.host_units_programmed)),
        ("gc.copied_units", U(r.gc.copied_units)),
        ("padding slots", U(f.padding_units)),
    ];
    if appends > 0 {
        figures.push(("gc.partial_programs", U(appends)));
    }
    Check::new("nand_slots_hold_units", Kind::Conservation, figures)
        .fail_if(slots < units, || {
            format!("{slots} slots programmed hold {units} units")
        })
        .fail_if(appends > r.nand.programs.host, || {
            format!(
                "{appends} partial-page appends but {} host programs",
                r.nand.programs.host
            )
        })
}

// ---- bounds ----------------------------------------------------------------------------

/// Host throughput within the data path: the link's rate per direction, or the host
/// transfer rate for reads and writes together.
fn host_data_path(r: &Results, f: &Facts) -> Check {
    let h = &r.host;
    let p = &f.data_path;
    let over = |v: f64| v > p.mb_per_s * (1.0 + 1e-6);
    let mut c = Check::new(
        "host_data_path",
        Kind::Bound,
        vec![
            ("host.read_mb_per_s", F(h.read_mb_per_s)),
            ("host.write_mb_per_s", F(h.write_mb_per_s)),
            ("host.mb_per_s", F(h.mb_per_s)),
            ("audit.data_path.mb_per_s", F(p.mb_per_s)),
        ],
    );
    if p.full_duplex {
        c = c.fail_if(over(h.read_mb_per_s) || over(h.write_mb_per_s), || {
            format!(
                "reads at {} MB/s, writes at {} MB/s: above the {} MB/s of each direction of the link",
                h.read_mb_per_s, h.write_mb_per_s, p.mb_per_s
            )
        });
    }
    c.fail_if(!p.full_duplex && over(h.mb_per_s), || {
        format!(
            "{} MB/s above the {} MB/s of the host data path ({})",
            h.mb_per_s, p.mb_per_s, p.bound
        )
    })
}

/// The data path (each link direction, or the host transfer path) carried data no
/// longer than the phase.
fn data_path_busy(_: &Results, f: &Facts) -> Check {
    let Some(t) = &f.timed else {
        return Check::skipped(
            "data_path_busy",
            Kind::Bound,
            "the functional mode keeps no busy time",
        );
    };
    let [down, up] = t.data_path_busy_ns;
    Check::new(
        "data_path_busy",
        Kind::Bound,
        vec![
            ("busy ns, host to device", U(down)),
            ("busy ns, device to host", U(up)),
            ("simulated ns when the figures were taken", U(t.end_ns)),
        ],
    )
    .fail_if(down.max(up) > t.end_ns, || {
        format!(
            "the data path was busy {} ns of a phase of {} ns (utilization above 1)",
            down.max(up),
            t.end_ns
        )
    })
}

/// Each die was busy no longer than the phase, each channel no longer than until its
/// last transfer ends (its transfers never overlap).
fn die_and_channel_busy(_: &Results, f: &Facts) -> Check {
    let Some(t) = &f.timed else {
        return Check::skipped(
            "die_and_channel_busy",
            Kind::Bound,
            "the functional mode keeps no busy time",
        );
    };
    let busiest = t.channels.iter().copied().max().unwrap_or_default();
    let over = t.channels.iter().find(|(busy, end)| busy > end);
    Check::new(
        "die_and_channel_busy",
        Kind::Bound,
        vec![
            ("busiest die, busy ns", U(t.die_busy_max_ns)),
            ("simulated ns when the figures were taken", U(t.end_ns)),
            ("busiest channel, busy ns", U(busiest.0)),
            ("its last transfer's end, ns", U(busiest.1)),
        ],
    )
    .fail_if(t.die_busy_max_ns > t.end_ns, || {
        format!("a die was busy {} ns of {} ns", t.die_busy_max_ns, t.end_ns)
    })
    .fail_if(over.is_some(), || {
        let (busy, end) = over.copied().unwrap_or_default();
        format!("a channel was busy {busy} ns by the end of its last transfer at {end} ns")
    })
}

/// A background program or erase batch runs on 1 to `planes per die` planes, and the
/// results' means are the counts' ratio.
fn gc_batch_planes(r: &Results, f: &Facts) -> Check {
    const NAME: &str = "gc_batch_planes";
    let (Some(t), Some(e)) = (&f.timed, &r.engine) else {
        return Check::skipped(NAME, Kind::Bound, "the functional mode runs no batches");
    };
    let per_die = (r.device.planes / r.device.dies.max(1)) as u64;
    let [(pb, p), (eb, er)] = t.gc_batches;
    let bad = |batches: u64, ops: u64, mean: f64| {
        let want = if batches == 0 {
            0.0
        } else {
            crate::stats::round6(ops as f64 / batches as f64)
        };
        ops < batches || ops > batches * per_die || mean != want
    };
    Check::new(
        NAME,
        Kind::Bound,
        vec![
            ("planes per die", U(per_die)),
            ("background program batches", U(pb)),
            ("background programs", U(p)),
            ("engine.gc_program_planes_mean", F(e.gc_program_planes_mean)),
            ("background erase batches", U(eb)),
            ("background erases", U(er)),
            ("engine.gc_erase_planes_mean", F(e.gc_erase_planes_mean)),
        ],
    )
    .fail_if(bad(pb, p, e.gc_program_planes_mean), || {
        format!("{p} background programs in {pb} batches on {per_die}-plane dies")
    })
    .fail_if(bad(eb, er, e.gc_erase_planes_mean), || {
        format!("{er} background erases in {eb} batches on {per_die}-plane dies")
    })
}

/// No read served by NAND took less than a command, tR and one unit's transfer.
fn nand_read_time(_: &Results, f: &Facts) -> Check {
    const NAME: &str = "nand_read_time";
    let Some(t) = &f.timed else {
        return Check::skipped(NAME, Kind::Bound, "the functional mode has no read latency");
    };
    let Some(min) = t.nand_read_min_ns else {
        return Check::skipped(NAME, Kind::Bound, "no read was served by NAND");
    };
    Check::new(
        NAME,
        Kind::Bound,
        vec![
            ("fastest read served by NAND, ns", U(min)),
            ("command + tR + one unit's transfer, ns", U(f.nand_read_floor_ns)),
        ],
    )
    .fail_if(min < f.nand_read_floor_ns, || {
        format!(
            "a read served by NAND took {min} ns, less than the {} ns of its command, tR and transfer",
            f.nand_read_floor_ns
        )
    })
}

// ---- shares ----------------------------------------------------------------------------

/// Percentage with one decimal.
fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 * 1000.0 / whole as f64).round() / 10.0
    }
}

/// Failed requests above 1 %: said, with their main status.
fn failed_share(r: &Results, _: &Facts) -> Check {
    let (failed, all) = (r.host.counters.failed_requests, r.host.requests);
    let mut statuses: Vec<(String, u64)> = Vec::new();
    if let Some(z) = &r.zns {
        statuses.extend(z.errors.iter().map(|(k, &n)| (k.to_string(), n)));
    }
    if let Some(p) = &r.fdp {
        statuses.push((
            "invalid placement identifier".into(),
            p.invalid_placement_ids,
        ));
    }
    let main = statuses.iter().filter(|s| s.1 > 0).max_by_key(|s| s.1);
    Check::new(
        "failed_share",
        Kind::Share,
        vec![
            ("host.failed_requests", U(failed)),
            ("host.requests", U(all)),
        ],
    )
    .fail_if(failed as f64 > FAILED_SHARE_WARN * all as f64, || {
        let why = main.map_or(String::new(), |(s, n)| format!(", mostly {s} ({n})"));
        format!(
            "{} % of the requests failed{why}: they are in no throughput, latency or WAF figure",
            pct(failed, all)
        )
    })
}

/// Reads of units never written above 10 %: said (they cost no NAND read).
fn unwritten_reads(r: &Results, _: &Facts) -> Check {
    let c = &r.host.counters;
    Check::new(
        "unwritten_reads",
        Kind::Share,
        vec![
            ("host.unmapped_read_units", U(c.unmapped_read_units)),
            ("host.read_units", U(c.read_units)),
        ],
    )
    .fail_if(c.unmapped_read_units as f64 > UNWRITTEN_SHARE_WARN * c.read_units as f64, || {
        format!(
            "{} % of the units read were never written (or were trimmed): served without NAND, they cost only the host transfer (precondition the device to read data)",
            pct(c.unmapped_read_units, c.read_units)
        )
    })
}

/// The host layer's reads of units it never wrote (zeros, no device I/O) above 10 % of
/// the user's read bytes: said (such reads are free).
fn user_unmapped_reads(r: &Results, _: &Facts) -> Check {
    let Some(u) = &r.user else {
        return Check::skipped("user_unmapped_reads", Kind::Share, NO_HOST_LAYER);
    };
    Check::new(
        "user_unmapped_reads",
        Kind::Share,
        vec![
            ("user.unmapped_read_bytes", U(u.unmapped_read_bytes)),
            ("user.read_bytes", U(u.read_bytes)),
        ],
    )
    .fail_if(
        u.unmapped_read_bytes as f64 > UNWRITTEN_SHARE_WARN * u.read_bytes as f64,
        || {
            format!(
                "{} % of the bytes the user read were never written by the host layer: zeros without device I/O, they cost nothing",
                pct(u.unmapped_read_bytes, u.read_bytes)
            )
        },
    )
}

/// Units written that never reached NAND (rewritten or trimmed in the buffer, dropped by a
/// zone reset) above 10 %: said.
fn buffer_absorbed(r: &Results, f: &Facts) -> Check {
    if r.status != RunStatus::Completed {
        return Check::skipped(
            "buffer_absorbed",
            Kind::Share,
            "units may still be in the write buffer",
        );
    }
    let w = r.host.counters.write_units;
    let absorbed = w.saturating_sub(f.host_units_programmed);
    Check::new(
        "buffer_absorbed",
        Kind::Share,
        vec![
            ("host.write_units", U(w)),
            ("host units programmed", U(f.host_units_programmed)),
        ],
    )
    .fail_if(absorbed as f64 > ABSORBED_SHARE_WARN * w as f64, || {
        format!(
            "{} % of the units written never reached NAND ({absorbed} units rewritten or trimmed in the write buffer{}): WAF counts only what was programmed",
            pct(absorbed, w),
            r.zns.as_ref().map_or(String::new(), |z| format!(", or dropped by zone resets: zns.dropped_units {}", z.dropped_units))
        )
    })
}

/// `journal.slc_cache` (`slc-buffer` with TurboWrite sizes): host bytes into the cache and
/// past it are host units programmed; a page the cache's size sent past it went to the
/// data region; the size is the static part plus at most the dynamic one.
fn slc_cache(r: &Results, f: &Facts) -> Check {
    let Some(s) = r.journal.as_ref().and_then(|j| j.slc_cache.as_ref()) else {
        return Check::skipped(
            "slc_cache",
            Kind::Conservation,
            "no SLC cache with TurboWrite sizes in this run",
        );
    };
    let unit = r.device.unit_bytes as u64;
    let programmed = f.host_units_programmed * unit;
    Check::new(
        "slc_cache",
        Kind::Conservation,
        vec![
            ("journal.slc_cache.cached_bytes", U(s.cached_bytes)),
            ("journal.slc_cache.direct_bytes", U(s.direct_bytes)),
            ("host bytes programmed", U(programmed)),
            ("journal.slc_cache.bypassed_pages", U(s.bypassed_pages)),
            ("journal.slc_cache.size_bytes", U(s.size_bytes)),
        ],
    )
    .fail_if(s.cached_bytes + s.direct_bytes > programmed, || {
        format!(
            "cached {} + direct {} bytes above the {programmed} host bytes programmed",
            s.cached_bytes, s.direct_bytes
        )
    })
    .fail_if(s.bypassed_pages * unit > s.direct_bytes, || {
        format!(
            "{} pages bypassed the cache but only {} bytes went to the data region",
            s.bypassed_pages, s.direct_bytes
        )
    })
    .fail_if(
        s.size_bytes < s.static_bytes || s.size_bytes > s.static_bytes + s.dynamic_max_bytes,
        || {
            format!(
                "cache size {} not within static {} to static + dynamic {}",
                s.size_bytes,
                s.static_bytes,
                s.static_bytes + s.dynamic_max_bytes
            )
        },
    )
}

/// WAF below 1: said, with why.
fn waf_below_one(r: &Results, f: &Facts) -> Check {
    let w = r.host.counters.write_units;
    if w == 0 || r.status != RunStatus::Completed {
        return Check::skipped(
            "waf_below_one",
            Kind::Share,
            "no host writes, or a phase not settled",
        );
    }
    let absorbed = w.saturating_sub(f.host_units_programmed);
    Check::new(
        "waf_below_one",
        Kind::Share,
        vec![("waf", F(r.waf)), ("units written that never reached NAND", U(absorbed))],
    )
    .fail_if(r.waf < 1.0, || {
        let dropped = r.zns.as_ref().map_or(0, |z| z.dropped_units);
        format!(
            "WAF {:.3} below 1: {absorbed} of the {w} units written never reached NAND (rewritten or trimmed in the write buffer{})",
            r.waf,
            if dropped > 0 { format!("; zns.dropped_units {dropped} dropped by zone resets") } else { String::new() }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Mode};
    use crate::{NoProgress, Simulation};
    use ssdlab_workload::replay::VecSource;
    use ssdlab_workload::{Arrival, Flow, HostOp, HostRequest, Workload};

    fn req(op: HostOp, unit: u64, units: u64) -> HostRequest {
        HostRequest {
            tag: 0,
            placement_id: 0,
            arrival_ns: 0,
            op,
            offset_bytes: unit * 4096,
            size_bytes: units * 4096,
            journal: None,
        }
    }

    /// A timed run on the tiny device with a time series: writes, rewrites, reads from
    /// NAND and the buffer, a trim and a flush; its results and what the audit saw.
    fn clean_run(mode: Mode) -> Results {
        let mut c: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        c.mode = mode;
        c.output.timeseries_interval_ns = 20_000;
        let mut reqs: Vec<HostRequest> = (0..17).map(|u| req(HostOp::Write, u, 1)).collect();
        reqs.push(req(HostOp::Flush, 0, 0));
        reqs.extend((0..16).map(|u| req(HostOp::Read, u, 2)));
        reqs.push(req(HostOp::Trim, 3, 1));
        reqs.push(req(HostOp::Write, 18, 2));
        let w = Workload {
            flows: vec![Flow {
                name: "t".into(),
                arrival: Arrival::Closed { queue_depth: 4 },
                source: Box::new(VecSource::new(reqs)),
            }],
            duration_ns: None,
            stats: Default::default(),
        };
        let mut sim = Simulation::new(c).unwrap();
        sim.run_workload_with(w, &mut NoProgress).unwrap()
    }

    fn verdict_of(r: &Results, f: &Facts, name: &str) -> (Verdict, Option<String>) {
        let a = audit(r, f);
        let c = a.checks.iter().find(|c| c.name == name).expect(name);
        (c.verdict, c.message.clone())
    }

    type Perturb = fn(&mut Results, &mut Facts);

    /// One perturbation per check, each breaking what that check holds.
    fn perturbations() -> Vec<(&'static str, Perturb)> {
        vec![
            ("request_counts", |r, _| r.host.requests += 1),
            ("reads_completed", |r, _| r.host.counters.reads += 1),
            ("writes_completed", |r, _| {
                // The symptom of a write answered with an error yet counted as done.
                r.latency_ns.as_mut().unwrap().write.count -= 1
            }),
            ("flushes_completed", |_, f| {
                f.timed.as_mut().unwrap().completed.flushes += 1
            }),
            ("trims_completed", |r, _| r.host.counters.trims += 1),
            ("zone_commands_completed", |r, _| {
                r.host.counters.zone_commands += 2
            }),
            ("failed_requests_apart", |r, _| {
                r.host.counters.failed_requests += 1
            }),
            ("rates_from_counts", |r, _| r.host.iops *= 1.01),
            ("timeseries_sums", |_, f| {
                // The last, partial interval left out.
                let s = f.timed.as_mut().unwrap().series.as_mut().unwrap();
                s.reads *= 0.8;
            }),
            ("bytes_in_units", |r, _| r.host.counters.write_bytes += 4096),
            ("host_units_reach_nand", |r, f| {
                f.host_units_programmed = r.host.counters.write_units + 1
            }),
            ("nand_by_cause", |r, _| r.nand.programs.gc += 1),
            ("nand_slots_hold_units", |r, _| r.nand.programs.total /= 2),
            ("user_figures", |r, _| {
                let mut u = user_section(r);
                u.total_waf = u.host_waf * r.waf * 1.01;
                r.user = Some(u);
            }),
            ("lsm_io", |r, _| {
                let mut l = lsm_section(r);
                l.compaction_write_bytes += 4096;
                r.workload.lsm = l;
            }),
            ("trim_records", |r, _| {
                let mut t = trims_section(r);
                t.record_pages = r.nand.programs.mapping + 1;
                r.trims = Some(t);
            }),
            ("slc_cache", |r, f| {
                let mut j = slc_section(r, f);
                j.slc_cache.as_mut().unwrap().size_bytes = 8192 + 4096 + 1;
                r.journal = Some(j);
            }),
            ("host_data_path", |r, f| {
                // A 1 MiB write "in 1 µs".
                r.host.mb_per_s = f.data_path.mb_per_s * 2.0
            }),
            ("data_path_busy", |_, f| {
                let t = f.timed.as_mut().unwrap();
                t.data_path_busy_ns[1] = t.end_ns + 1
            }),
            ("die_and_channel_busy", |_, f| {
                let t = f.timed.as_mut().unwrap();
                t.channels[0].0 = t.channels[0].1 + 1
            }),
            ("gc_batch_planes", |r, f| {
                // Three programs in one batch on two-plane dies.
                f.timed.as_mut().unwrap().gc_batches[0] = (1, 3);
                r.engine.as_mut().unwrap().gc_program_planes_mean = 3.0
            }),
            ("nand_read_time", |_, f| {
                f.timed.as_mut().unwrap().nand_read_min_ns = Some(f.nand_read_floor_ns - 1)
            }),
            ("failed_share", |r, _| {
                r.host.counters.failed_requests = r.host.requests / 10
            }),
            ("unwritten_reads", |r, _| {
                r.host.counters.unmapped_read_units = r.host.counters.read_units
            }),
            ("user_unmapped_reads", |r, _| {
                let mut u = user_section(r);
                u.unmapped_read_bytes = u.read_bytes / 2;
                r.user = Some(u);
            }),
            ("buffer_absorbed", |r, f| {
                f.host_units_programmed = r.host.counters.write_units / 2
            }),
            ("waf_below_one", |r, _| r.waf = 0.5),
        ]
    }

    /// The time series must reach the phase's end (a partial interval left out is an
    /// error); rows of no completions past it (a served phase's background work) are not.
    #[test]
    fn the_time_series_reaches_the_phase_end() {
        let r = clean_run(Mode::Timed);
        let end = r.host.sim_time_ns;
        for (end_ns, want) in [
            (end, Verdict::Ok),
            (end + 5, Verdict::Ok),
            (end - 1, Verdict::Error),
        ] {
            let mut f = r.audit.facts.clone();
            f.timed.as_mut().unwrap().series.as_mut().unwrap().end_ns = end_ns;
            assert_eq!(
                verdict_of(&r, &f, "timeseries_sums").0,
                want,
                "{end_ns} vs {end}"
            );
        }
    }

    /// Checks of sections a clean tiny run does not have (a host layer's user figures,
    /// durable trims): skipped there.
    const SECTION_CHECKS: [&str; 5] = [
        "user_figures",
        "lsm_io",
        "trim_records",
        "slc_cache",
        "user_unmapped_reads",
    ];

    /// A host layer's user figures that add up for run `r` (host WAF 1.5).
    fn user_section(r: &Results) -> super::super::UserSummary {
        let (read_bytes, write_bytes) = (8 << 20, 4 << 20);
        let secs = r.host.sim_time_ns as f64 / 1e9;
        super::super::UserSummary {
            read_bytes,
            unmapped_read_bytes: 1 << 10,
            write_bytes,
            mb_per_s: round6((read_bytes + write_bytes) as f64 / 1e6 / secs),
            host_waf: 1.5,
            total_waf: 1.5 * r.waf,
        }
    }

    /// An LSM-tree store's counts that add up for run `r`: its writes split between the
    /// WAL and compactions, its reads between compactions and gets.
    fn lsm_section(r: &Results) -> ssdlab_workload::stats::LsmCounts {
        let c = &r.host.counters;
        ssdlab_workload::stats::LsmCounts {
            puts: 10,
            user_bytes: 10_000,
            wal_write_bytes: c.write_bytes / 2,
            compaction_write_bytes: c.write_bytes - c.write_bytes / 2,
            compaction_read_bytes: c.read_bytes / 2,
            get_read_bytes: c.read_bytes - c.read_bytes / 2,
            trim_bytes: c.trim_bytes,
            zone_resets: c.zone_commands,
            // Paced at exactly the rate the phase's time allows: the last of the 10
            // puts due at its end.
            put_rate_limit_bytes_per_s: (9_000u64 * 1_000_000_000).div_ceil(r.host.sim_time_ns),
            put_rate_bytes_per_s: 10_000 * 1_000_000_000 / r.host.sim_time_ns,
            ..Default::default()
        }
    }

    /// Durable trims' figures that add up for run `r` (one record page).
    fn trims_section(r: &Results) -> super::super::TrimSummary {
        super::super::TrimSummary {
            trimmed_units: 1,
            record_slots: 1,
            record_pages: 1.min(r.nand.programs.mapping),
        }
    }

    /// A TurboWrite cache's figures that add up for run `r`: half the host units
    /// programmed into the cache, the rest past it (one page by the cache's size).
    fn slc_section(r: &Results, f: &Facts) -> super::super::JournalSummary {
        let unit = r.device.unit_bytes as u64;
        let cached = f.host_units_programmed / 2 * unit;
        super::super::JournalSummary {
            placement: "slc-buffer",
            journal_range_bytes: None,
            learned_range_bytes: None,
            detector: None,
            journal_share_of_written_bytes: None,
            host_bytes_by_region: Vec::new(),
            data_region_direct_bytes: 0,
            data_region_migrated_bytes: 0,
            journal_bytes_migrated: 0,
            journal_write_latency_ns: None,
            slc_cache: Some(super::super::SlcCacheSummary {
                static_bytes: 4096,
                dynamic_max_bytes: 8192,
                size_bytes: 8192,
                size_blocks_per_plane: 1,
                region_blocks_per_plane: 4,
                cached_bytes: cached,
                direct_bytes: f.host_units_programmed * unit - cached,
                drained_bytes: 0,
                bypassed_pages: 1,
                held_bytes: cached,
            }),
        }
    }

    /// The section checks pass on sections that add up, and each fails on each way one
    /// can break (`trim_records` on the other two of its three).
    #[test]
    fn sections_that_add_up_pass_and_broken_ones_fail() {
        let mut r = clean_run(Mode::Timed);
        r.nand.programs.mapping = 1;
        let f = r.audit.facts.clone();
        r.user = Some(user_section(&r));
        r.trims = Some(trims_section(&r));
        r.journal = Some(slc_section(&r, &f));
        r.workload.lsm = lsm_section(&r);
        for name in SECTION_CHECKS {
            assert_eq!(verdict_of(&r, &f, name), (Verdict::Ok, None), "{name}");
        }
        let broken: [(&str, Perturb); 14] = [
            ("lsm_io", |r, _| r.workload.lsm.wal_write_bytes += 4096),
            // 10 puts of 1000 bytes at a limit the phase's time could not have kept.
            ("lsm_io", |r, _| {
                r.workload.lsm.put_rate_limit_bytes_per_s /= 2
            }),
            ("lsm_io", |r, _| r.workload.lsm.put_rate_bytes_per_s += 1),
            ("lsm_io", |r, _| r.workload.lsm.get_read_bytes += 4096),
            ("lsm_io", |r, _| r.workload.lsm.trim_bytes += 4096),
            ("lsm_io", |r, _| r.workload.lsm.zone_resets += 1),
            ("slc_cache", |r, _| {
                r.journal
                    .as_mut()
                    .unwrap()
                    .slc_cache
                    .as_mut()
                    .unwrap()
                    .cached_bytes += 4096
            }),
            ("slc_cache", |r, _| {
                let s = r.journal.as_mut().unwrap().slc_cache.as_mut().unwrap();
                s.bypassed_pages = s.direct_bytes / 4096 + 1
            }),
            ("slc_cache", |r, _| {
                r.journal
                    .as_mut()
                    .unwrap()
                    .slc_cache
                    .as_mut()
                    .unwrap()
                    .size_bytes = 4095
            }),
            ("user_figures", |r, _| {
                r.user.as_mut().unwrap().host_waf = 0.9
            }),
            ("user_figures", |r, _| {
                r.user.as_mut().unwrap().mb_per_s *= 2.0
            }),
            ("user_figures", |r, _| {
                r.user.as_mut().unwrap().unmapped_read_bytes = 9 << 20
            }),
            ("trim_records", |r, _| {
                r.trims.as_mut().unwrap().record_slots = 2
            }),
            ("trim_records", |r, _| {
                r.trims.as_mut().unwrap().trimmed_units = 1000
            }),
        ];
        for (name, perturb) in broken {
            let (mut r, mut f) = (r.clone(), f.clone());
            perturb(&mut r, &mut f);
            assert_eq!(verdict_of(&r, &f, name).0, Verdict::Error, "{name}");
        }
    }

    /// A workload naming two origins (the host log-structured layer's `user` and
    /// `relocation`) on the clean run's requests, the odd units' reads tagged
    /// `relocation`: each completed request is in its origin's latencies, exactly; the
    /// check passes, and fails on a count moved, added or dropped. A run naming no origins
    /// has neither the section nor the check.
    #[test]
    fn origins_split_the_requests_exactly_and_a_perturbed_count_fails() {
        let clean = clean_run(Mode::Timed);
        assert!(clean.latency_ns.as_ref().unwrap().by_origin.is_empty());
        assert!(!audit(&clean, &clean.audit.facts)
            .checks
            .iter()
            .any(|c| c.name == "origin_counts"));
        let mut c: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        c.mode = Mode::Timed;
        let mut reqs: Vec<HostRequest> = (0..17).map(|u| req(HostOp::Write, u, 1)).collect();
        reqs.push(req(HostOp::Flush, 0, 0));
        reqs.extend((0..16).map(|u| HostRequest {
            tag: (u % 2) as u32,
            ..req(HostOp::Read, u, 2)
        }));
        reqs.push(req(HostOp::Trim, 3, 1));
        reqs.push(req(HostOp::Write, 18, 2));
        let stats = ssdlab_workload::stats::WorkloadStats::default();
        stats.set_origins(&["user", "relocation"]).unwrap();
        let w = Workload {
            flows: vec![Flow {
                name: "t".into(),
                arrival: Arrival::Closed { queue_depth: 4 },
                source: Box::new(VecSource::new(reqs)),
            }],
            duration_ns: None,
            stats,
        };
        let mut sim = Simulation::new(c).unwrap();
        let r = sim.run_workload_with(w, &mut NoProgress).unwrap();
        let l = r.latency_ns.as_ref().unwrap();
        let counts: Vec<(&str, u64, u64, u64)> = l
            .by_origin
            .iter()
            .map(|o| {
                let x = &o.latency;
                (o.origin, x.read.count, x.write.count, x.flush.count)
            })
            .collect();
        assert_eq!(counts, vec![("user", 8, 18, 1), ("relocation", 8, 0, 0)]);
        assert_eq!((l.read.count, l.write.count), (16, 18));
        let f = r.audit.facts.clone();
        assert_eq!(verdict_of(&r, &f, "origin_counts"), (Verdict::Ok, None));
        let broken: [Perturb; 4] = [
            // A relocation read counted as the user's twice.
            |r, _| {
                r.latency_ns.as_mut().unwrap().by_origin[0]
                    .latency
                    .read
                    .count += 1
            },
            |r, _| {
                r.latency_ns.as_mut().unwrap().by_origin[1]
                    .latency
                    .read
                    .count -= 1
            },
            |r, _| {
                r.latency_ns.as_mut().unwrap().by_origin[0]
                    .latency
                    .flush
                    .count = 0
            },
            |_, f| f.timed.as_mut().unwrap().completed.writes += 1,
        ];
        for (i, perturb) in broken.iter().enumerate() {
            let (mut r, mut f) = (r.clone(), f.clone());
            perturb(&mut r, &mut f);
            let (v, msg) = verdict_of(&r, &f, "origin_counts");
            assert_eq!(v, Verdict::Error, "{i}");
            assert!(msg.unwrap().contains("origins' latencies"), "{i}");
        }
    }

    /// Read reclaim's and retention refresh's figures: consistent ones pass `nand_by_cause`
    /// (and appear in its figures), and each way of breaking them fails it.
    #[test]
    fn reliability_job_figures_add_up_and_broken_ones_fail() {
        let mut r = clean_run(Mode::Timed);
        let f = r.audit.facts.clone();
        let shown = |r: &Results| {
            let c = audit(r, &f);
            let c = c.checks.iter().find(|c| c.name == "nand_by_cause").unwrap();
            c.figures.0.iter().any(|(k, _)| *k == "gc.reclaimed_units")
        };
        assert!(!shown(&r), "no figures while no job ran");
        // A reclaim of a block read twice for 3 units (one per page on this device), a
        // refresh of 1 unit.
        (
            r.nand.reads.reclaim,
            r.nand.programs.reclaim,
            r.gc.reclaimed_units,
        ) = (2, 3, 3);
        (
            r.nand.reads.refresh,
            r.nand.programs.refresh,
            r.gc.refreshed_units,
        ) = (1, 1, 1);
        r.nand.reads.total += 3;
        r.nand.programs.total += 4;
        // One block each, the reclaim's by RBER and urgent, its erase done.
        (r.gc.reclaimed_blocks, r.gc.refreshed_blocks) = (1, 1);
        (r.gc.reclaimed_blocks_by_rber, r.gc.urgent_relocations) = (1, 1);
        (r.nand.erases.reclaim, r.nand.erases.total) = (1, r.nand.erases.total + 1);
        assert_eq!(verdict_of(&r, &f, "nand_by_cause"), (Verdict::Ok, None));
        assert!(shown(&r));
        let broken: [Perturb; 8] = [
            // More blocks by RBER, erases or urgent jobs than blocks started.
            |r, _| r.gc.reclaimed_blocks_by_rber += 1,
            |r, _| r.gc.refreshed_blocks_by_rber += 2,
            |r, _| r.gc.urgent_relocations += 2,
            |r, _| {
                r.nand.erases.refresh += 2;
                r.nand.erases.total += 2;
            },
            // A reclaim reading a page it moved nothing from.
            |r, _| {
                r.nand.reads.reclaim += 2;
                r.nand.reads.total += 2;
            },
            // Refreshed units no program holds.
            |r, _| r.gc.refreshed_units += 1,
            // Operations of a cause counted in no total.
            |r, _| r.nand.erases.reclaim += 1,
            |r, _| r.nand.programs.refresh += 1,
        ];
        for (i, perturb) in broken.iter().enumerate() {
            let (mut r, mut f) = (r.clone(), f.clone());
            perturb(&mut r, &mut f);
            assert_eq!(verdict_of(&r, &f, "nand_by_cause").0, Verdict::Error, "{i}");
        }
    }

    /// A clean run passes every check that applies (the tiny run's rewrites and trim are
    /// below the warning shares).
    #[test]
    fn a_clean_run_passes() {
        for mode in [Mode::Timed, Mode::Functional] {
            let r = clean_run(mode);
            let bad: Vec<_> = r.audit.findings();
            assert!(bad.is_empty(), "{mode:?}: {bad:#?}");
            assert_eq!(r.audit.verdict, Overall::Ok);
            assert_eq!(r.audit.checks.len(), CHECKS.len());
        }
        // Timed: every check applies but the zone commands' (none on this device... they
        // still compare 0 with 0) and none is skipped.
        let r = clean_run(Mode::Timed);
        let skipped: Vec<_> = r
            .audit
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Skipped)
            .map(|c| c.name)
            .collect();
        assert_eq!(
            skipped, SECTION_CHECKS,
            "only the checks of absent sections skip"
        );
    }

    /// Every check fails on a perturbed input: conservation and bound checks with an
    /// error (a bug), shares with a warning; and every check has its perturbation here.
    #[test]
    fn every_check_fails_on_a_perturbed_input() {
        let clean = clean_run(Mode::Timed);
        let list = perturbations();
        let names: Vec<&str> = list.iter().map(|p| p.0).collect();
        let all: Vec<&str> = audit(&clean, &clean.audit.facts)
            .checks
            .iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, all, "one perturbation per check, in order");
        for (name, perturb) in list {
            let (mut r, mut f) = (clean.clone(), clean.audit.facts.clone());
            let clean = if SECTION_CHECKS.contains(&name) {
                Verdict::Skipped
            } else {
                Verdict::Ok
            };
            assert_eq!(verdict_of(&r, &f, name).0, clean, "{name} clean");
            perturb(&mut r, &mut f);
            let (v, msg) = verdict_of(&r, &f, name);
            let kind = audit(&r, &f)
                .checks
                .iter()
                .find(|c| c.name == name)
                .map(|c| c.kind)
                .unwrap();
            let want = if kind == Kind::Share {
                Verdict::Warning
            } else {
                Verdict::Error
            };
            assert_eq!(v, want, "{name}: {msg:?}");
            assert!(msg.is_some_and(|m| !m.is_empty()), "{name} says why");
            if want == Verdict::Error {
                let e = audit(&r, &f).internal_error().expect(name).to_string();
                assert!(
                    e.starts_with("internal error (please report it") && e.contains(name),
                    "{e}"
                );
            }
        }
    }

    /// At a power cut the FTL may have placed units of the writes in flight, which failed
    /// and are in no host count (`ssdlab serve` found it: 70 units placed, 69 counted):
    /// allowed, and no more; at the end of a run there are none.
    #[test]
    fn a_cut_allows_the_units_of_the_writes_in_flight() {
        let mut r = clean_run(Mode::Timed);
        let mut f = r.audit.facts.clone();
        let w = r.host.counters.write_units;
        r.status = RunStatus::PowerCut;
        // A 2-unit write in flight at the cut: its units placed, not counted.
        f.timed.as_mut().unwrap().write_units_submitted = w + 2;
        f.host_units_programmed = w + 2;
        let check = |r: &Results, f: &Facts| verdict_of(r, f, "host_units_reach_nand");
        assert_eq!(check(&r, &f), (Verdict::Ok, None));
        f.host_units_programmed = w + 3;
        let (v, why) = check(&r, &f);
        assert_eq!(v, Verdict::Error);
        let why = why.unwrap();
        assert!(
            why.ends_with(&format!(
                "the host wrote {w} and 2 more in writes in flight at the power cut"
            )),
            "{why}"
        );
        f.host_units_programmed = w + 2;
        r.status = RunStatus::Completed;
        assert_eq!(check(&r, &f).0, Verdict::Error);
    }

    /// A caller's own check (of a section it adds to the document) counts in the verdict,
    /// the counts and the internal error as the core's do.
    #[test]
    fn an_added_check_counts_in_the_verdict() {
        let mut a = clean_run(Mode::Timed).audit;
        let check = |name, kind, bad: bool| {
            Check::new(name, kind, vec![("x", U(1))]).fail_if(bad, || format!("{name} broken"))
        };
        a.add(check("extra_sum", Kind::Conservation, false));
        assert_eq!((a.verdict, a.errors, a.warnings), (Overall::Ok, 0, 0));
        a.add(check("extra_share", Kind::Share, true));
        assert_eq!((a.verdict, a.errors, a.warnings), (Overall::Warnings, 0, 1));
        a.add(check("extra_bound", Kind::Bound, true));
        assert_eq!(
            (a.verdict, a.errors, a.warnings),
            (Overall::InternalError, 1, 1)
        );
        let e = a.internal_error().unwrap().to_string();
        assert!(e.ends_with("extra_bound: extra_bound broken"), "{e}");
        assert_eq!(a.checks.len(), CHECKS.len() + 3);
        assert_eq!(a.findings()[0].name, "extra_bound", "errors first");
    }

    /// A strict simulation (the default) turns a broken check into an internal error; an
    /// audit with warnings only is no error.
    #[test]
    fn warnings_are_no_internal_error() {
        let mut r = clean_run(Mode::Timed);
        r.host.counters.unmapped_read_units = r.host.counters.read_units;
        let a = audit(&r, &r.audit.facts);
        assert_eq!((a.verdict, a.errors, a.warnings), (Overall::Warnings, 0, 1));
        assert!(a.internal_error().is_none());
        let text = serde_json::to_string(&a).unwrap();
        assert!(text.contains("\"verdict\":\"warnings\""), "{text}");
        assert!(!text.contains("facts"), "the facts are not written");
    }
}
