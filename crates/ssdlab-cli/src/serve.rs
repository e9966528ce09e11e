//! `ssdlab serve`: the simulated SSD as an NBD server (crates/ssdlab-serve, docs/serve.md).

use anyhow::Result;
use clap::{Args as ClapArgs, ValueEnum};
use ssdlab_experiments::run::ConfigSource;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Time {
    /// Simulated time advances as fast as the clients keep the device busy.
    Virtual,
    /// Replies leave at their simulated completion time (× --dilation) on the wall clock.
    Realtime,
}

#[derive(ClapArgs)]
pub struct Args {
    /// Configuration file (TOML); its workload is not used.
    config: PathBuf,
    /// Unix socket to listen on (clients: nbd+unix:///?socket=PATH).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Also listen on TCP (e.g. 127.0.0.1:10809).
    #[arg(long)]
    tcp: Option<SocketAddr>,
    /// Output directory for results.json, latency.csv, timeseries.csv (default:
    /// out/serve-CONFIG_NAME).
    #[arg(long)]
    out: Option<PathBuf>,
    /// How simulated time relates to the wall clock.
    #[arg(long, value_enum, default_value = "virtual")]
    time: Time,
    /// Realtime: wall-clock nanoseconds per simulated nanosecond.
    #[arg(long, default_value_t = 1.0)]
    dilation: f64,
    /// Virtual time: microseconds to wait for clients to send again after replies.
    #[arg(long, default_value_t = 100)]
    grace_us: u64,
    /// Virtual time: simulated nanoseconds the device may run past a reply before it
    /// waits for the client's next request (which then arrives up to that much late; 0
    /// with --owed-slack 0: exact).
    #[arg(long, default_value_t = 100_000)]
    run_ahead_ns: u64,
    /// Virtual time: replies that may be owed new requests while the device runs ahead
    /// (within --run-ahead-ns); the device then sees a queue depth at most this much lower.
    #[arg(long, default_value_t = 4)]
    owed_slack: u32,
    /// Smallest request accepted (512 up to the mapping unit; default the unit).
    #[arg(long)]
    min_block: Option<u32>,
    /// Write the results every this many seconds (wall clock).
    #[arg(long)]
    stats_interval: Option<f64>,
    /// Stop (and write the results) when the last client that sent a command has
    /// disconnected and none connects within half a second.
    #[arg(long)]
    exit_on_disconnect: bool,
    /// Write every request with its simulated arrival as a blkparse trace `ssdlab run`
    /// replays.
    #[arg(long)]
    record_trace: Option<PathBuf>,
    /// Cut power after this many client requests (also: SIGUSR1 at any time).
    #[arg(long)]
    power_cut_after_requests: Option<u64>,
    /// The clients' journal as bytes LO:HI (e.g. ext4's extent from `debugfs -R "stat
    /// <8>"`): the journal detector (spec 05) is scored against it (results.json `journal`).
    #[arg(long, value_name = "LO:HI", value_parser = parse_range)]
    journal_range: Option<(u64, u64)>,
    /// Most simultaneous connections.
    #[arg(long, default_value_t = 256)]
    max_connections: u32,
    /// Serve even when the device needs more memory than the machine has available (the
    /// stored bytes come on top: about the data written).
    #[arg(long)]
    allow_large_memory: bool,
    /// Override a config key (as `run --set`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

fn parse_range(s: &str) -> Result<(u64, u64), String> {
    let (lo, hi) = s
        .split_once(':')
        .ok_or_else(|| format!("{s}: expected LO:HI (bytes)"))?;
    let lo: u64 = lo.trim().parse().map_err(|e| format!("{lo}: {e}"))?;
    let hi: u64 = hi.trim().parse().map_err(|e| format!("{hi}: {e}"))?;
    if hi <= lo {
        return Err(format!("{s}: HI must be above LO"));
    }
    Ok((lo, hi))
}

extern "C" fn on_usr1(_: libc::c_int) {
    ssdlab_serve::request_power_cut();
}

pub fn run(a: &Args) -> Result<()> {
    let src = ConfigSource::from_file(&a.config, &a.sets)?;
    let mut cfg = src.load()?;
    let d = src.validated(&cfg)?;
    if !a.allow_large_memory {
        cfg.integrity = true; // serve keeps versions
        ssdlab_experiments::run::check_memory(&cfg, &d, &src.label, "pass --allow-large-memory")
            .map_err(anyhow::Error::msg)?;
    }
    if let Some(s) = a.stats_interval {
        anyhow::ensure!(
            s > 0.0 && s.is_finite(),
            "--stats-interval {s}: seconds > 0"
        );
    }
    // SAFETY: the handler stores one atomic (async-signal-safe).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr1 as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
    }
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from("out").join(format!(
            "serve-{}",
            a.config.file_stem().unwrap_or_default().to_string_lossy()
        ))
    });
    let opts = ssdlab_serve::ServeOptions {
        socket: a.socket.clone(),
        tcp: a.tcp,
        min_block_bytes: a.min_block,
        out_dir: out.clone(),
        record_trace: a.record_trace.clone(),
        max_connections: a.max_connections,
        time: match a.time {
            Time::Virtual => ssdlab_serve::TimeMode::Virtual,
            Time::Realtime => ssdlab_serve::TimeMode::Realtime {
                dilation: a.dilation,
            },
        },
        grace: Duration::from_micros(a.grace_us),
        run_ahead_ns: a.run_ahead_ns,
        owed_slack: a.owed_slack,
        stats_interval: a.stats_interval.map(Duration::from_secs_f64),
        exit_on_disconnect: a.exit_on_disconnect,
        power_cut_after_requests: a.power_cut_after_requests,
        label: src.label.clone(),
        journal_range: a.journal_range,
    };
    let s = ssdlab_serve::serve(cfg, opts).map_err(anyhow::Error::msg)?;
    eprintln!(
        "serve: {} connections, {} reads, {} writes, {} flushes, {} trims, {} write-zeroes, {} power cuts",
        s.connections,
        s.commands.read,
        s.commands.write,
        s.commands.flush,
        s.commands.trim,
        s.commands.write_zeroes,
        s.power_cycle - 1
    );
    println!("results: {}", out.join("results.json").display());
    Ok(())
}
