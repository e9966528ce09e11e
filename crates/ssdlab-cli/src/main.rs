//! `ssdlab`: the command-line front end. Parses arguments, loads configs, drives
//! `ssdlab-core`, writes output files and draws progress. No simulation logic lives here.

mod bench;
mod compare;
mod doc_tables;
mod interrupt;
mod op_advise;
mod output;
mod parquet_out;
mod plots;
mod policies;
mod progress;
mod reproduce;
mod request_log;
mod serve;
mod sweep;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use ssdlab_core::Config;
use ssdlab_experiments::run::{Checked, ConfigSource, RunOptions};
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "ssdlab",
    version,
    about = "Fast, deterministic NAND-flash SSD simulator"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one simulation and write results.json, config.resolved.toml and perf.json; a timed
    /// run also latency.csv and latency.svg, and timeseries.csv and timeseries.svg (one row
    /// per `output.timeseries_interval_ns`); `--request-log` adds requests.csv.zst.
    Run {
        /// Configuration file (TOML).
        config: PathBuf,
        /// Output directory (default: out/CONFIG_NAME, the config file's name).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override the config's seed.
        #[arg(long, allow_negative_numbers = true)]
        seed: Option<u64>,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
        /// Trace workloads: malformed lines to skip (and count) before one is an error
        /// (overrides `workload.skip_bad_lines`).
        #[arg(long)]
        skip_bad_lines: Option<u64>,
        /// Override a config key: `--set ftl.gc_soft_free_blocks=8`, `--set
        /// 'ftl.gc={ policy = "d-choices" }'` (TOML value, or a bare string); repeatable.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Run even when the device needs more memory than the machine has available.
        #[arg(long)]
        allow_large_memory: bool,
        /// Write every completed request to DIR/requests.csv.zst (submit_ns, complete_ns,
        /// op, offset_bytes, size_bytes, flow); timed mode.
        #[arg(long)]
        request_log: bool,
    },
    /// Validate or print configurations.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Measure simulator speed (functional, timed, preconditioning).
    Bench(bench::BenchArgs),
    /// Re-run a paper's experiment (tables, CSV, plot).
    Reproduce(reproduce::Args),
    /// Numeric differences between two runs' results.json, with the relative change.
    Compare(compare::Args),
    /// Run the cartesian product of `--grid key=v1,v2,…` in parallel; one row per point in
    /// sweep.csv (resumable).
    Sweep(sweep::Args),
    /// Smallest over-provisioning meeting a WAF, throughput or time requirement (model + simulation).
    OpAdvise(op_advise::Args),
    /// Every policy family (GC, allocation, wear leveling, placement, mapping, erase
    /// suspend), its policies and their parameters with defaults.
    Policies(policies::Args),
    /// Serve the simulated SSD over NBD (a Unix socket) to real software: fio, qemu,
    /// nbdcopy, a filesystem through nbdfuse; results on SIGTERM (docs/serve.md).
    Serve(serve::Args),
    /// The docs' tables of reproduce and preset figures from fresh runs (maintainers).
    #[command(hide = true)]
    DocTables(doc_tables::Args),
}

#[derive(Subcommand)]
enum ConfigAction {
    /// Check a configuration; exit status 0 when valid (with a warning on stderr when the
    /// device needs more memory than this machine has: `run` refuses it without
    /// --allow-large-memory).
    Check { file: PathBuf },
    /// Print the fully resolved configuration with defaults and derived values.
    Show { file: PathBuf },
}

fn load(path: &Path) -> Result<Config> {
    Ok(Config::from_file(path)?)
}

/// `ssdlab config show … | head` closes the pipe early: end quietly (as a Unix tool does
/// on SIGPIPE) instead of reporting print!'s broken-pipe panic.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() {
    quiet_on_broken_pipe();
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Run { .. } | Command::Reproduce(_) | Command::Sweep(_) | Command::Serve(_)
    ) {
        interrupt::install();
    }
    let kept = if matches!(cli.command, Command::Sweep(_)) {
        "no table written; the finished points stay in OUT/points, and the same sweep run again reuses them"
    } else {
        "no output written, the output directory is as it was"
    };
    let result = match cli.command {
        Command::Run {
            config,
            out,
            seed,
            quiet,
            skip_bad_lines,
            sets,
            allow_large_memory,
            request_log,
        } => cmd_run(
            &config,
            &RunOpts {
                out,
                seed,
                quiet,
                skip_bad_lines,
                sets,
                allow_large_memory,
                request_log,
            },
        ),
        Command::Config {
            action: ConfigAction::Check { file },
        } => cmd_check(&file),
        Command::Config {
            action: ConfigAction::Show { file },
        } => cmd_show(&file),
        Command::Bench(args) => bench::run(&args),
        Command::Reproduce(args) => reproduce::run(&args),
        Command::OpAdvise(args) => op_advise::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Policies(args) => policies::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::DocTables(args) => doc_tables::run(&args),
    };
    if let Err(e) = result {
        if let Some((signal, status)) = interrupt::received() {
            // Whatever failed after the signal failed because of it (a stopped run).
            eprintln!("interrupted by {signal}: {kept}");
            std::process::exit(status);
        }
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn cmd_check(file: &Path) -> Result<()> {
    // `run`'s checks but the memory one, which only warns here.
    let src = ConfigSource::from_file(file, &[])?;
    let Checked {
        config: cfg,
        derived: d,
        ..
    } = ssdlab_experiments::run::check(&src, &RunOptions::default()).map_err(anyhow::Error::msg)?;
    println!(
        "{}: ok ({} logical bytes, {} physical bytes, about {} MiB of memory to run)",
        file.display(),
        d.logical_bytes,
        d.physical_bytes,
        d.estimated_memory_bytes(cfg.integrity) >> 20
    );
    // Valid, but `run` would refuse it on this machine: say so (exit status stays 0, the
    // file is valid; the memory is this machine's).
    if let Err(msg) = ssdlab_experiments::run::check_memory(
        &cfg,
        &d,
        &file.display().to_string(),
        "pass --allow-large-memory",
    ) {
        eprintln!("warning: {msg} (`ssdlab run` refuses it without that flag)");
    }
    Ok(())
}

fn cmd_show(file: &Path) -> Result<()> {
    let cfg = load(file)?;
    let d = ConfigSource::from_file(file, &[])?.validated(&cfg)?;
    print!("{}", ssdlab_output::resolved_toml(&cfg, &d));
    Ok(())
}

/// The options of `ssdlab run`.
struct RunOpts {
    out: Option<PathBuf>,
    seed: Option<u64>,
    quiet: bool,
    skip_bad_lines: Option<u64>,
    sets: Vec<String>,
    allow_large_memory: bool,
    request_log: bool,
}

fn cmd_run(path: &Path, o: &RunOpts) -> Result<()> {
    let src = ConfigSource::from_file(path, &o.sets)?;
    // Every check (configuration, memory, workload) before any long work: the one run
    // sequence `sweep` and the Python binding use too.
    let checked = ssdlab_experiments::run::check(
        &src,
        &RunOptions {
            seed: o.seed,
            skip_bad_lines: o.skip_bad_lines,
            memory_hint: (!o.allow_large_memory).then(|| "pass --allow-large-memory".into()),
            request_log: o.request_log,
        },
    )
    .map_err(anyhow::Error::msg)?;
    let out = o
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(path.file_stem().unwrap_or_default()));
    // The files are written aside and moved into `out` only when the run completes: an
    // interrupted or failed run leaves `out` as it was.
    let staged = output::StagedDir::new(&out, &output::RUN_FILES)?;
    let dir = staged.path();
    let log = if o.request_log {
        Some(request_log::RequestLog::create(dir)?)
    } else {
        None
    };
    let mut bar = progress::Bar::new(o.quiet);
    let run = checked
        .run(&mut bar, log.as_ref().map(|l| l.sink()))
        .map_err(anyhow::Error::msg)?;
    bar.finish();
    if let Some(l) = log {
        l.finish()?;
    }
    let (sim, results) = (&run.sim, &run.results);
    let perf = output::Perf {
        setup_wall_s: run.setup_wall_s,
        precondition_wall_s: run.precondition_wall_s,
        workload_wall_s: run.workload_wall_s,
        host_requests_per_wall_s: results.host.requests as f64 / run.workload_wall_s.max(1e-9),
        peak_rss_bytes: output::peak_rss_bytes(),
        build: output::BUILD,
    };
    // The resolved config names its input files by absolute path, so it re-runs from the
    // output directory.
    output::write_all(
        dir,
        &run.resolved_config(),
        &sim.derived,
        results,
        &sim.last_timeseries,
        &perf,
    )?;
    if let Some(lat) = &sim.last_latency {
        let p = dir.join("latency.svg");
        plots::latency(&p, lat).with_context(|| format!("drawing {}", p.display()))?;
    }
    if !sim.last_timeseries.is_empty() {
        let p = dir.join("timeseries.svg");
        plots::timeseries(&p, &sim.last_timeseries)
            .with_context(|| format!("drawing {}", p.display()))?;
    }
    // The run's files replace the earlier run's; one this run does not make (a plot, a
    // request log) is removed: left over, it would look like this run's.
    staged.commit()?;
    print!("{}", output::summary(results));
    if o.request_log && !o.quiet {
        eprintln!(
            "request log: {}",
            out.join(request_log::FILE_NAME).display()
        );
    }
    println!("results: {}", out.join("results.json").display());
    // Figures that cannot be (a broken conservation or bound): a bug. The results are
    // written, marked (`audit.verdict = "internal_error"`); the run fails.
    match results.audit.internal_error() {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}
