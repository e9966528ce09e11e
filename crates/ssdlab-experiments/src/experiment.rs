//! One shape for every `reproduce` experiment: the [`Experiment`] trait (its arguments,
//! parameters, run, CSV, markdown report, expected-shape [`Check`]s and plot), one
//! registration line per experiment in [`ALL`], and the type-erased [`Registered`] view
//! through which the CLI (`ssdlab reproduce NAME`, `ssdlab doc-tables`) and the Python
//! binding (`ssdlab.reproduce`) run them. A new experiment is one file with one `impl
//! Experiment` and its line in [`ALL`]: its subcommand, flags and help, output files, doc
//! tables and Python entry follow.
//!
//! The CLI owns what is the CLI's (the output directory staged and committed, the worker
//! threads, stderr and stdout); an experiment never prints: it says its progress through a
//! [`Say`] and returns its files' text ([`Outputs`]).

use crate::{AuditWarning, ExperimentError, Result};
use clap::{ArgMatches, Args, Command, FromArgMatches};
use serde::Serialize;
use std::time::Instant;

/// Every experiment, in the order `ssdlab reproduce --help` lists them: one line each.
pub const ALL: &[&dyn Registered] = &[
    &crate::op::Op,
    &crate::ssr::Ssr,
    &crate::wl::Wl,
    &crate::dftl::Dftl,
    &crate::slc::Slc,
    &crate::mq::Mq,
    &crate::zns::Zns,
    &crate::fdp::Fdp,
    &crate::retry::Retry,
];

/// The report line saying whether the experiment's GC runs multi-plane
/// (`[scheduler] multi_plane_gc`) and why.
pub fn gc_planes_line(multi_plane_gc: bool, why: &str) -> String {
    format!(
        "* GC: {} (`[scheduler] multi_plane_gc = {multi_plane_gc}`): {why}",
        if multi_plane_gc {
            "multi-plane reads, copies and erases"
        } else {
            "single-plane"
        }
    )
}

/// A fresh block's operation times in `c`'s cell mode, from the NAND timing model (the
/// one home of array time), for the reports' "Timing" lines.
#[derive(Clone, Copy, Debug)]
pub struct FreshTimes {
    pub read_ns: u64,
    pub program_ns: u64,
    /// Loops of a fresh block's erase, and the time of each.
    pub erase_loops: u32,
    pub erase_loop_ns: u64,
    pub erase_suspend_penalty_ns: u64,
    pub resume_penalty_ns: u64,
}

impl FreshTimes {
    pub fn of(c: &ssdlab_core::Config) -> FreshTimes {
        use ssdlab_core::flash::{CellState, OpKind};
        let (m, mode) = (c.device.timing_model(), c.device.cell_mode);
        let fresh = CellState::fresh(mode);
        let erase = m.array(OpKind::Erase, fresh);
        FreshTimes {
            read_ns: m.array_ns(OpKind::Read, fresh),
            program_ns: m.array_ns(OpKind::Program, fresh),
            erase_loops: erase.loops,
            erase_loop_ns: erase.loop_ns,
            erase_suspend_penalty_ns: m.suspend_penalty_ns(OpKind::Erase, mode),
            resume_penalty_ns: m.resume_penalty_ns(mode),
        }
    }

    /// A fresh block's whole erase.
    pub fn erase_ns(&self) -> u64 {
        self.erase_loop_ns * self.erase_loops as u64
    }
}

/// The experiment called `name`.
pub fn find(name: &str) -> Option<&'static dyn Registered> {
    ALL.iter().copied().find(|e| e.name() == name)
}

/// The names of every experiment, in [`ALL`]'s order.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|e| e.name()).collect()
}

/// One check of an experiment's expected shape (the paper's claims, the model's accuracy),
/// decided by the report's rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    /// What the check is about (a device state, a trace, a workload, a panel), or empty
    /// when the experiment's checks have no groups.
    pub group: String,
    /// The claim checked.
    pub claim: String,
    /// `None`: a run it needs is missing (or too few points to judge).
    pub holds: Option<bool>,
    /// The numbers, and why it fails when it does.
    pub detail: String,
}

impl Check {
    pub fn new(
        group: impl Into<String>,
        claim: impl Into<String>,
        holds: Option<bool>,
        detail: impl Into<String>,
    ) -> Check {
        Check {
            group: group.into(),
            claim: claim.into(),
            holds,
            detail: detail.into(),
        }
    }

    /// A check that could not be decided: a run it needs is missing.
    pub fn missing(group: impl Into<String>, claim: impl Into<String>) -> Check {
        Check::new(group, claim, None, "not run")
    }

    /// How it came out: `yes`, `no`, or `not run`.
    pub fn holds_text(&self) -> &'static str {
        match self.holds {
            Some(true) => "yes",
            Some(false) => "no",
            None => "not run",
        }
    }
}

/// The heading of an experiment's expected-shape section and the header of its group
/// column (`None`: no group column).
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub title: &'static str,
    pub group: Option<&'static str>,
}

/// The "Expected shape" section of a report: one row per check (led by the group when the
/// shape has a group column), then the run count and wall time.
pub fn shape_section(shape: Shape, checks: &[Check], runs: usize, wall_s: f64) -> String {
    let mut o = format!("\n## Expected shape ({})\n\n", shape.title);
    match shape.group {
        Some(g) => o += &format!("| {g} | check | holds | numbers |\n|---|---|---|---|\n"),
        None => o += "| check | holds | numbers |\n|---|---|---|\n",
    }
    for c in checks {
        let lead = if shape.group.is_some() {
            format!("| {} ", c.group)
        } else {
            String::new()
        };
        o += &format!(
            "{lead}| {} | {} | {} |\n",
            c.claim,
            c.holds_text(),
            c.detail
        );
    }
    o += &format!("\nRuns: {runs} in {wall_s:.1} s wall.\n");
    o
}

/// The arguments every experiment takes, with the same meaning and help in each.
#[derive(Args, Clone, Debug, Default)]
pub struct Common {
    /// Output directory for EXPERIMENT.md, .csv, .json and .svg (default:
    /// out/reproduce-EXPERIMENT).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Runs in parallel, each holding its own device (0 = one per core; default: 2, for
    /// `op` one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Override the preset's seed.
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// No per-run progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Override a key of the experiment's base configuration (as `run --set`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
}

/// Where an experiment says how it progresses (the CLI: stderr; Python: nowhere).
pub trait Say: Sync {
    /// A point (run) finished: its progress line.
    fn progress(&self, line: &str);
    /// A point's results audit warnings, said once each as the point ends.
    fn audit(&self, warnings: &[AuditWarning]);
}

/// A [`Say`] that says nothing.
pub struct Silent;

impl Say for Silent {
    fn progress(&self, _: &str) {}
    fn audit(&self, _: &[AuditWarning]) {}
}

/// A table of the documentation generated from an experiment's report
/// (`ssdlab doc-tables`): the report's lines from the first starting with `from` up to
/// the first after it starting with `to` (or the end), kept in `doc` between
/// `<!-- doc-table NAME -->` and `<!-- /doc-table NAME -->`.
#[derive(Clone, Copy, Debug)]
pub struct DocTable {
    pub name: &'static str,
    pub doc: &'static str,
    /// Takes seconds in a debug build (the CLI tests check these).
    pub fast: bool,
    pub from: &'static str,
    pub to: Option<&'static str>,
}

pub use crate::plot::PlotResult;

/// A `reproduce` experiment. Implemented by a unit type per experiment, registered in
/// [`ALL`].
pub trait Experiment: Sync + 'static {
    /// The subcommand (`ssdlab reproduce NAME`) and the stem of the output files.
    const NAME: &'static str;
    /// The subcommand's help: the paper, the device, the workloads, the figures.
    const ABOUT: &'static str;
    /// Worker threads without `--jobs` (0: one per core).
    const DEFAULT_JOBS: usize = 2;
    /// Files written besides `NAME.json`, `.md`, `.csv` and `.svg` (each only when
    /// [`Experiment::extra_files`] returns it; else an earlier run's is removed).
    const EXTRA_FILES: &'static [&'static str] = &[];
    /// The documentation's tables taken from this experiment's report.
    const DOC_TABLES: &'static [DocTable] = &[];
    /// The flag Python's `reproduce(…, requests=N)` sets (`None`: it is ignored).
    const REQUESTS_FLAG: Option<&'static str> = None;
    /// Flags Python's `reproduce` (the CSV only) adds: parts whose figures are not in the
    /// CSV, left out.
    const TABLE_ONLY_ARGS: &'static [&'static str] = &[];

    /// The experiment's own flags (the [`Common`] ones aside).
    type Args: Args + FromArgMatches;
    type Params: Send + Sync;
    type Report: Serialize + Send + Sync;

    /// The parameters of the arguments, every run's configuration checked: a bad flag or
    /// `--set` fails here, before any long work.
    fn params(args: &Self::Args, common: &Common) -> Result<Self::Params>;
    /// The line announcing the runs (`threads` workers).
    fn banner(p: &Self::Params, threads: usize) -> String;
    /// Every run, in parallel on the caller's rayon pool.
    fn run(p: &Self::Params, say: &dyn Say) -> Result<Self::Report>;
    /// `NAME.csv`.
    fn csv(r: &Self::Report) -> String;
    /// The expected shape's checks.
    fn checks(r: &Self::Report) -> Vec<Check>;
    /// `NAME.md` (its expected-shape section from [`shape_section`]); `wall_s`: the whole
    /// experiment's wall time so far.
    fn markdown(r: &Self::Report, p: &Self::Params, wall_s: f64) -> String;
    /// `NAME.svg`, drawn into `svg`.
    fn plot(r: &Self::Report, svg: &mut String) -> PlotResult;
    /// The [`Experiment::EXTRA_FILES`] this report has: (file, text).
    fn extra_files(_r: &Self::Report) -> Result<Vec<(&'static str, String)>> {
        Ok(Vec::new())
    }
}

/// An experiment's output files, (name, text), and its markdown report (also `NAME.md`).
pub struct Outputs {
    pub files: Vec<(String, String)>,
    pub markdown: String,
}

/// An experiment with its parameters, checked and ready to run.
pub trait Prepared: Send + Sync {
    /// Every file it may write (`NAME.json` first, the marker of a complete set).
    fn files(&self) -> Vec<String>;
    /// The line announcing the runs.
    fn banner(&self, threads: usize) -> String;
    /// Every run, on the caller's rayon pool.
    fn run(&self, say: &dyn Say) -> Result<Box<dyn Finished + '_>>;
}

/// An experiment's report.
pub trait Finished: Send + Sync {
    /// `NAME.csv`.
    fn csv(&self) -> String;
    /// The expected shape's checks.
    fn checks(&self) -> Vec<Check>;
    /// Every output file's text.
    fn outputs(&self) -> Result<Outputs>;
}

/// The options of Python's `reproduce`: the CSV of an experiment run as
/// `ssdlab reproduce NAME --scale SCALE --seed SEED --set … [REQUESTS_FLAG N]`.
#[derive(Clone, Debug, Default)]
pub struct TableOptions {
    pub scale: f64,
    pub seed: Option<u64>,
    pub sets: Vec<String>,
    pub requests: Option<u64>,
}

/// An experiment as the CLI and Python see it (object safe; every [`Experiment`] is one).
pub trait Registered: Sync {
    fn name(&self) -> &'static str;
    fn about(&self) -> &'static str;
    fn default_jobs(&self) -> usize;
    fn doc_tables(&self) -> &'static [DocTable];
    /// `reproduce NAME`'s subcommand: the [`Common`] arguments, then the experiment's own.
    fn command(&self) -> Command;
    /// The parameters of the parsed subcommand, checked.
    fn prepare(&self, matches: &ArgMatches) -> Result<Box<dyn Prepared>>;
    /// The experiment's CSV for Python (no progress said).
    fn table(&self, o: &TableOptions) -> Result<String>;
}

impl<E: Experiment> Registered for E {
    fn name(&self) -> &'static str {
        E::NAME
    }
    fn about(&self) -> &'static str {
        E::ABOUT
    }
    fn default_jobs(&self) -> usize {
        E::DEFAULT_JOBS
    }
    fn doc_tables(&self) -> &'static [DocTable] {
        E::DOC_TABLES
    }
    fn command(&self) -> Command {
        // The help last: an `Args` derive sets its doc comment as the command's.
        E::Args::augment_args(Common::augment_args(Command::new(E::NAME))).about(E::ABOUT)
    }
    fn prepare(&self, matches: &ArgMatches) -> Result<Box<dyn Prepared>> {
        let started = Instant::now();
        let bad = |e: clap::Error| ExperimentError::invalid(E::NAME, e.to_string());
        let common = Common::from_arg_matches(matches).map_err(bad)?;
        let args = E::Args::from_arg_matches(matches).map_err(bad)?;
        let params = E::params(&args, &common)?;
        Ok(Box::new(Ready::<E> { params, started }))
    }
    fn table(&self, o: &TableOptions) -> Result<String> {
        let mut argv = vec![E::NAME.to_string(), "--scale".into(), o.scale.to_string()];
        if let (Some(flag), Some(n)) = (E::REQUESTS_FLAG, o.requests) {
            argv.extend([flag.to_string(), n.to_string()]);
        }
        argv.extend(E::TABLE_ONLY_ARGS.iter().map(|a| a.to_string()));
        let matches = E::Args::augment_args(Command::new(E::NAME))
            .try_get_matches_from(&argv)
            .map_err(|e| {
                // clap's first line, without its `error: ` (the rest is usage).
                let text = e.to_string();
                let line = text.lines().next().unwrap_or_default();
                ExperimentError::invalid(E::NAME, line.trim_start_matches("error: "))
            })?;
        let args = E::Args::from_arg_matches(&matches)
            .map_err(|e| ExperimentError::invalid(E::NAME, e.to_string()))?;
        let common = Common {
            seed: o.seed,
            sets: o.sets.clone(),
            ..Common::default()
        };
        let params = E::params(&args, &common)?;
        Ok(E::csv(&E::run(&params, &Silent)?))
    }
}

/// [`Prepared`] of experiment `E`.
struct Ready<E: Experiment> {
    params: E::Params,
    started: Instant,
}

impl<E: Experiment> Prepared for Ready<E> {
    fn files(&self) -> Vec<String> {
        ["json", "md", "csv", "svg"]
            .iter()
            .map(|ext| format!("{}.{ext}", E::NAME))
            .chain(E::EXTRA_FILES.iter().map(|f| f.to_string()))
            .collect()
    }
    fn banner(&self, threads: usize) -> String {
        E::banner(&self.params, threads)
    }
    fn run(&self, say: &dyn Say) -> Result<Box<dyn Finished + '_>> {
        let report = E::run(&self.params, say)?;
        let wall_s = self.started.elapsed().as_secs_f64();
        Ok(Box::new(Done::<E> {
            ready: self,
            report,
            wall_s,
        }))
    }
}

/// [`Finished`] of experiment `E`.
struct Done<'a, E: Experiment> {
    ready: &'a Ready<E>,
    report: E::Report,
    wall_s: f64,
}

impl<E: Experiment> Finished for Done<'_, E> {
    fn csv(&self) -> String {
        E::csv(&self.report)
    }
    fn checks(&self) -> Vec<Check> {
        E::checks(&self.report)
    }
    fn outputs(&self) -> Result<Outputs> {
        let name = E::NAME;
        let r = &self.report;
        let markdown = E::markdown(r, &self.ready.params, self.wall_s);
        let json = serde_json::to_string_pretty(r).map_err(|e| ExperimentError::Output {
            what: format!("serialising {name}.json"),
            reason: e.to_string(),
        })?;
        let mut files = vec![
            (format!("{name}.md"), markdown.clone()),
            (format!("{name}.csv"), E::csv(r)),
            (format!("{name}.json"), json + "\n"),
        ];
        for (f, text) in E::extra_files(r)? {
            files.push((f.to_string(), text));
        }
        let mut svg = String::new();
        E::plot(r, &mut svg).map_err(|e| ExperimentError::Output {
            what: format!("drawing {name}.svg"),
            reason: e.to_string(),
        })?;
        files.push((format!("{name}.svg"), svg));
        Ok(Outputs { files, markdown })
    }
}
