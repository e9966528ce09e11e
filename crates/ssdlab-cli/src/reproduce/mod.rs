//! `ssdlab reproduce <experiment>`: re-run a paper's experiment and write its table, CSV
//! and plot. One subcommand (and one file) per paper; the experiment logic lives in the
//! `ssdlab-experiments` crate, this module only parses arguments and writes output.

pub mod dftl;
pub mod mq;
pub mod op;
pub mod slc;
pub mod ssr;
pub mod wl;
pub mod zns;

use crate::output::StagedDir;
use anyhow::{Context, Result};
use clap::Subcommand;
use plotters::style::RGBColor;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Series colours shared by the reproduce plots.
pub const COLORS: [RGBColor; 6] = [
    RGBColor(0, 0, 0),
    RGBColor(220, 50, 32),
    RGBColor(0, 114, 178),
    RGBColor(0, 158, 115),
    RGBColor(230, 159, 0),
    RGBColor(204, 121, 167),
];

/// Write `text` to `path`, naming the file on failure.
pub fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The worker threads of an experiment (`--jobs`).
pub fn pool(jobs: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .context("--jobs: cannot start the worker threads")
}

/// Stage experiment `stem`'s outputs in `out` (`--out`; created, and checked writable,
/// before the experiment runs) for [`write_outputs`].
pub fn stage(out: &Path, stem: &str) -> Result<StagedDir> {
    let names = ["json", "md", "csv", "svg"].map(|ext| format!("{stem}.{ext}"));
    StagedDir::new(out, &names.each_ref().map(String::as_str))
        .with_context(|| format!("--out {}", out.display()))
}

/// Print the markdown report and write `STEM.md`, `STEM.csv`, `STEM.json` (the report)
/// and `STEM.svg` (drawn by `plot`) into the `--out` directory: written aside and moved in together
/// ([`crate::output::StagedDir`], `STEM.json` the marker), so a failure (or Ctrl-C) leaves
/// an earlier run's four files as they were; other files in `out` are not touched.
pub fn write_outputs<R: Serialize>(
    staged: StagedDir,
    stem: &str,
    md: &str,
    csv: &str,
    report: &R,
    plot: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let out = staged.target().to_path_buf();
    let dir = staged.path();
    write(&dir.join(format!("{stem}.md")), md)?;
    write(&dir.join(format!("{stem}.csv")), csv)?;
    let json =
        serde_json::to_string_pretty(report).with_context(|| format!("serialising {stem}.json"))?;
    write(&dir.join(format!("{stem}.json")), &(json + "\n"))?;
    let svg = dir.join(format!("{stem}.svg"));
    plot(&svg).with_context(|| format!("drawing {stem}.svg"))?;
    staged.commit()?;
    print!("{md}");
    println!(
        "\nwrote {}/{stem}.md, {stem}.csv, {stem}.json, {stem}.svg",
        out.display()
    );
    Ok(())
}

/// Say a point's results audit warnings on stderr as the point ends, each once (with
/// `--quiet` too: they are findings, not progress); the experiment's JSON keeps them with
/// the point (`audit_warnings`).
pub fn say_audit(warnings: &[ssdlab_experiments::AuditWarning]) {
    for w in warnings {
        eprintln!("  {}", w.line());
    }
}

/// How an expected-shape check came out: `yes`, `no`, or `not run`.
pub fn holds(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "yes",
        Some(false) => "no",
        None => "not run",
    }
}

/// The "Expected shape" section of a report: one row per check, optionally led by a group
/// column (`group` names it), then the run count and wall time.
pub fn shape_section(
    title: &str,
    group: Option<&str>,
    checks: &[(String, String, Option<bool>, String)],
    runs: usize,
    wall_s: f64,
) -> String {
    let mut o = format!("\n## Expected shape ({title})\n\n");
    match group {
        Some(g) => o += &format!("| {g} | check | holds | numbers |\n|---|---|---|---|\n"),
        None => o += "| check | holds | numbers |\n|---|---|---|\n",
    }
    for (grp, name, ok, detail) in checks {
        let lead = if group.is_some() {
            format!("| {grp} ")
        } else {
            String::new()
        };
        o += &format!("{lead}| {name} | {} | {detail} |\n", holds(*ok));
    }
    o += &format!("\nRuns: {runs} in {wall_s:.1} s wall.\n");
    o
}

/// The arguments every experiment takes, with the same meaning and help in each
/// (`#[command(flatten)]` into each experiment's own arguments).
#[derive(clap::Args)]
pub struct ReproduceArgs {
    /// Output directory for EXPERIMENT.md, .csv, .json and .svg (default:
    /// out/reproduce-EXPERIMENT).
    #[arg(long)]
    pub out: Option<PathBuf>,
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

impl ReproduceArgs {
    /// The output directory of experiment `stem`.
    pub fn out(&self, stem: &str) -> PathBuf {
        self.out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("out/reproduce-{stem}")))
    }

    /// The worker threads: `--jobs`, else `default_jobs` (0: one per core).
    pub fn pool(&self, default_jobs: usize) -> Result<rayon::ThreadPool> {
        pool(self.jobs.unwrap_or(default_jobs))
    }
}

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub experiment: Reproduce,
}

#[derive(Subcommand)]
pub enum Reproduce {
    /// Spec 02: OP 0…100 % sweep on the 800-block × 128-page × 1 KiB device (greedy GC,
    /// uniform random 1 KiB overwrites of 100 GiB), simulation vs analytic model.
    Op(op::OpArgs),
    /// Spec 01: erase suspend/resume policies (none, ies, des, ssr-static, ssr-dynamic) on
    /// the preconditioned Table-1 device, 4 KiB random 70/30 and TPC-C-like, tail latency.
    Ssr(ssr::SsrArgs),
    /// Spec 03: wear leveling (GA, DP, BET, Adaptive, PET, EPET) on the Table-2 device and
    /// the normal-distribution traces, to device failure: lifetime, migrations, spread.
    Wl(wl::WlArgs),
    /// Spec 04: demand-based FTL (page-map, dftl, dftl-partitioned, dftl-partitioned-log)
    /// on a 64 GiB TLC device: random reads, writes and a 70/30 mix, without and with GC.
    Dftl(dftl::DftlArgs),
    /// Spec 05: SLC write buffer (slc-buffer) vs SLC buffer + journal region (slc-journal)
    /// on a 64 GiB TLC device under the ext4 model: fio with fsync 2…128, Filebench.
    Slc(slc::SlcArgs),
    /// MQSim's multi-queue study on the PCIe 3.0 x4 TLC device: 4 KiB random
    /// reads (QD 8) and 128 KiB sequential writes (QD 32), alone and together under round
    /// robin and weighted round robin, without and with GC: slowdown and fairness.
    Mq(mq::MqArgs),
    /// The block-interface tax (ZNS, USENIX ATC 2021): random writes (uniform,
    /// hot/cold) on a conventional device, a zoned one under the host log-structured layer
    /// and an FDP one, at 7 % and 28 % spare: device, host and total WAF, tails, resets.
    Zns(zns::ZnsArgs),
}

pub fn run(args: &Args) -> Result<()> {
    match &args.experiment {
        Reproduce::Op(a) => op::run(a),
        Reproduce::Ssr(a) => ssr::run(a),
        Reproduce::Wl(a) => wl::run(a),
        Reproduce::Dftl(a) => dftl::run(a),
        Reproduce::Slc(a) => slc::run(a),
        Reproduce::Mq(a) => mq::run(a),
        Reproduce::Zns(a) => zns::run(a),
    }
}
