//! `ssdlab reproduce <experiment>`: re-run a paper's experiment and write its report, CSV,
//! JSON and plot. The experiments, their flags and their output files are registered in
//! [`ssdlab_experiments::experiment::ALL`]; this module builds a subcommand of each and
//! runs it: the output directory staged and committed, the worker threads, progress on
//! stderr, the report on stdout.

use crate::output::StagedDir;
use anyhow::{Context, Result};
use clap::{ArgMatches, Command, FromArgMatches};
use ssdlab_experiments::experiment::{self, Common, Registered, Say};
use ssdlab_experiments::AuditWarning;
use std::path::PathBuf;

/// `reproduce`'s arguments: the experiment chosen and its parsed flags.
pub struct Args {
    experiment: &'static dyn Registered,
    matches: ArgMatches,
}

impl FromArgMatches for Args {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let (name, sub) = m.subcommand().ok_or_else(|| {
            clap::Error::raw(
                clap::error::ErrorKind::MissingSubcommand,
                "reproduce needs an experiment\n",
            )
        })?;
        let experiment = experiment::find(name).ok_or_else(|| {
            clap::Error::raw(
                clap::error::ErrorKind::InvalidSubcommand,
                format!("no experiment {name:?}\n"),
            )
        })?;
        Ok(Args {
            experiment,
            matches: sub.clone(),
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Args::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for Args {
    fn augment_args(cmd: Command) -> Command {
        experiment::ALL
            .iter()
            .fold(cmd, |cmd, e| cmd.subcommand(e.command()))
            .subcommand_required(true)
            .arg_required_else_help(true)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Args::augment_args(cmd)
    }
}

/// Progress lines on stderr (none with `--quiet`); audit warnings always (they are
/// findings, not progress).
struct Stderr {
    quiet: bool,
}

impl Say for Stderr {
    fn progress(&self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    /// Each once, as the point ends; the experiment's JSON keeps them with the point
    /// (`audit_warnings`).
    fn audit(&self, warnings: &[AuditWarning]) {
        for w in warnings {
            eprintln!("  {}", w.line());
        }
    }
}

/// Run the experiment: its parameters checked (a bad flag fails before any work), its
/// outputs staged in `--out` (created, and checked writable, before it runs), the runs
/// announced and made on `--jobs` threads, then `NAME.md` printed and every file written
/// aside and moved in together ([`StagedDir`], `NAME.json` the marker), so a failure (or
/// Ctrl-C) leaves an earlier run's files as they were; other files in `--out` are not
/// touched.
pub fn run(args: &Args) -> Result<()> {
    let e = args.experiment;
    let common = Common::from_arg_matches(&args.matches)?;
    let prepared = e.prepare(&args.matches)?;
    let out = common
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("out/reproduce-{}", e.name())));
    let files = prepared.files();
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    let staged =
        StagedDir::new(&out, &names).with_context(|| format!("--out {}", out.display()))?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(common.jobs.unwrap_or(e.default_jobs()))
        .build()
        .context("--jobs: cannot start the worker threads")?;
    if !common.quiet {
        eprintln!("{}", prepared.banner(pool.current_num_threads()));
    }
    let say = Stderr {
        quiet: common.quiet,
    };
    let done = pool.install(|| prepared.run(&say))?;
    let outputs = done.outputs()?;
    for (name, text) in &outputs.files {
        let path = staged.path().join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let target = staged.target().to_path_buf();
    staged.commit()?;
    print!("{}", outputs.markdown);
    let stem = e.name();
    println!(
        "\nwrote {}/{stem}.md, {stem}.csv, {stem}.json, {stem}.svg",
        target.display()
    );
    Ok(())
}
