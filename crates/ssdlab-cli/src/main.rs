//! `ssdlab`: the command-line front end. Parses arguments, loads configs, drives
//! `ssdlab-core`, writes output files and draws progress. No simulation logic lives here.

mod bench;
mod compare;
mod interrupt;
mod op_advise;
mod output;
mod parquet_out;
mod plots;
mod policies;
mod progress;
mod reproduce;
mod request_log;
mod sweep;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use ssdlab_core::{Config, Simulation};
use ssdlab_experiments::run::{ConfigSource, WORKLOAD_CHECK_REQUESTS};
use std::path::{Path, PathBuf};
use std::time::Instant;

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
    if matches!(cli.command, Command::Run { .. } | Command::Reproduce(_)) {
        interrupt::install();
    }
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
    };
    if let Err(e) = result {
        if let Some((signal, status)) = interrupt::received() {
            // Whatever failed after the signal failed because of it (a stopped run).
            eprintln!(
                "interrupted by {signal}: no output written, the output directory is as it was"
            );
            std::process::exit(status);
        }
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn cmd_check(file: &Path) -> Result<()> {
    let cfg = load(file)?;
    let src = ConfigSource::from_file(file, &[])?;
    let d = src.validated(&cfg)?;
    let ctx = ssdlab_workload::WorkloadContext {
        logical_bytes: d.logical_bytes,
        unit_bytes: d.geometry.unit_bytes as u64,
        seed: cfg.seed,
        base_dir: file.parent().map(Path::to_path_buf),
    };
    cfg.workload
        .check_first(&ctx, WORKLOAD_CHECK_REQUESTS)
        .map_err(|e| src.workload_error(e))?;
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
    print!("{}", ssdlab_experiments::run::resolved_toml(&cfg, &d));
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
    let (seed, quiet, skip_bad_lines, allow_large_memory) =
        (o.seed, o.quiet, o.skip_bad_lines, o.allow_large_memory);
    let src = ConfigSource::from_file(path, &o.sets)?;
    let mut cfg = src.load()?;
    let d = src.validated(&cfg)?;
    if o.request_log && cfg.mode != ssdlab_core::config::Mode::Timed {
        anyhow::bail!(
            "{}: --request-log needs mode = \"timed\" (the functional mode has no completion times)",
            path.display()
        );
    }
    if !allow_large_memory {
        ssdlab_experiments::run::check_memory(
            &cfg,
            &d,
            &path.display().to_string(),
            "pass --allow-large-memory",
        )
        .map_err(anyhow::Error::msg)?;
    }
    if let Some(s) = seed {
        cfg.seed = s;
    }
    if let Some(n) = skip_bad_lines {
        match &mut cfg.workload {
            ssdlab_workload::WorkloadConfig::Trace(t) => t.skip_bad_lines = n,
            _ => anyhow::bail!(
                "--skip-bad-lines applies to trace workloads only ({} has another kind)",
                path.display()
            ),
        }
    }
    let out = o
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(path.file_stem().unwrap_or_default()));
    // Everything that can fail cheaply fails before the simulation starts. The files are
    // written aside and moved into `out` only when the run completes: an interrupted or
    // failed run leaves `out` as it was.
    let staged = output::StagedDir::new(&out, &output::RUN_FILES)?;
    let dir = staged.path();
    let mut sim = Simulation::new(cfg.clone()).with_context(|| format!("{}", path.display()))?;
    sim.base_dir = path.parent().map(Path::to_path_buf);
    sim.check_workload(WORKLOAD_CHECK_REQUESTS)
        .map_err(|e| match e {
            ssdlab_core::SimError::Workload(w) => src.workload_error(w).into(),
            e => anyhow::Error::from(e).context(path.display().to_string()),
        })?;
    let mut bar = progress::Bar::new(quiet);
    let t0 = Instant::now();
    sim.precondition(&mut bar)?;
    let t1 = Instant::now();
    let log = if o.request_log {
        Some(request_log::RequestLog::create(dir)?)
    } else {
        None
    };
    let results = match &log {
        Some(l) => sim.run_workload_logging(&mut bar, l.sink())?,
        None => sim.run_workload(&mut bar)?,
    };
    let t2 = Instant::now();
    bar.finish();
    if let Some(l) = log {
        l.finish()?;
    }
    let perf = output::Perf {
        precondition_wall_s: (t1 - t0).as_secs_f64(),
        workload_wall_s: (t2 - t1).as_secs_f64(),
        host_requests_per_wall_s: results.host.requests as f64 / (t2 - t1).as_secs_f64().max(1e-9),
        peak_rss_bytes: output::peak_rss_bytes(),
        build: output::BUILD,
    };
    // The resolved config names its input files by absolute path, so it re-runs from the
    // output directory.
    let mut resolved = cfg.clone();
    ssdlab_experiments::run::absolute_inputs(&mut resolved, path.parent());
    output::write_all(
        dir,
        &resolved,
        &sim.derived,
        &results,
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
    print!("{}", output::summary(&results));
    if o.request_log && !quiet {
        eprintln!(
            "request log: {}",
            out.join(request_log::FILE_NAME).display()
        );
    }
    println!("results: {}", out.join("results.json").display());
    Ok(())
}
