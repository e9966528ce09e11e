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
    /// Realtime: wall-clock nanoseconds per simulated nanosecond (0.001 to 1000000).
    #[arg(long, default_value_t = 1.0, value_parser = number_in("--dilation", 1e-3, 1e6))]
    dilation: f64,
    /// Realtime: run the device loop's thread under SCHED_FIFO at this priority (1 to 99;
    /// needs root, CAP_SYS_NICE or `ulimit -r`, and a CPU to spare for the clients): fewer
    /// late replies on a busy machine.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=99))]
    realtime_priority: Option<u32>,
    /// Virtual time: microseconds to wait for clients to send again after replies (up to
    /// 1000000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(..=1_000_000))]
    grace_us: u64,
    /// Virtual time: simulated nanoseconds the device may run past a reply before it
    /// waits for the client's next request (which then arrives up to that much late; 0
    /// with --owed-slack 0: exact; up to 1000000000).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(..=1_000_000_000))]
    run_ahead_ns: u64,
    /// Virtual time: replies that may be owed new requests while the device runs ahead
    /// (within --run-ahead-ns); the device then sees a queue depth at most this much lower
    /// (up to 65536).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(..=65536))]
    owed_slack: u32,
    /// Virtual time: microseconds a wait for the clients reads the sockets in a loop, at
    /// most, before it sleeps (less while the clients answer slower; default 50; 0: it
    /// sleeps at once; up to 1000).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(..=1000))]
    grace_spin_us: u64,
    /// Smallest request accepted (a power of two from 512 up to the mapping unit; default
    /// the unit).
    #[arg(long, value_parser = clap::value_parser!(u32).range(512..=65536))]
    min_block: Option<u32>,
    /// Write the results every this many seconds (wall clock; 0.01 to 1000000).
    #[arg(long, value_parser = number_in("--stats-interval", 0.01, 1e6))]
    stats_interval: Option<f64>,
    /// Stop (and write the results) when the last client that sent a command has
    /// disconnected and none connects within half a second.
    #[arg(long)]
    exit_on_disconnect: bool,
    /// At the end (SIGTERM, SIGINT, --exit-on-disconnect), seconds the commands in flight
    /// and the device's settling may take; past it the results are written as they are
    /// (status "stopped"; 0.001 to 86400).
    #[arg(long, default_value_t = 30.0, value_parser = number_in("--drain-timeout-s", 1e-3, 86400.0))]
    drain_timeout_s: f64,
    /// Write every request with its simulated arrival as a blkparse trace `ssdlab run`
    /// replays.
    #[arg(long)]
    record_trace: Option<PathBuf>,
    /// Cut power after this many client requests (also: SIGUSR1 at any time, each signal
    /// one cut).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    power_cut_after_requests: Option<u64>,
    /// The clients' journal as bytes LO:HI (e.g. ext4's extent from `debugfs -R "stat
    /// <8>"`): the journal detector (spec 05) is scored against it (results.json `journal`).
    #[arg(long, value_name = "LO:HI", value_parser = parse_range)]
    journal_range: Option<(u64, u64)>,
    /// Most simultaneous connections (1 to 65536).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65536))]
    max_connections: u32,
    /// Requests one connection may hold (read, reply not yet sent); at this many the
    /// server stops reading it (1 to 65536).
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=65536))]
    max_requests_per_connection: u32,
    /// Payload bytes those requests may hold (READ lengths, WRITE data; one request is
    /// always taken), e.g. 64MiB (1MiB to 64GiB).
    #[arg(long, default_value = "64MiB", value_parser = bytes_in("--max-bytes-per-connection", 1 << 20, 64 << 30))]
    max_bytes_per_connection: u64,
    /// Seconds a client has for the whole handshake (0.1 to 3600).
    #[arg(long, default_value_t = 10.0, value_parser = number_in("--handshake-timeout-s", 0.1, 3600.0))]
    handshake_timeout_s: f64,
    /// With every connection slot taken, a new client takes the place of a connection idle
    /// for this many seconds (0: never; up to 1000000).
    #[arg(long, default_value_t = 30.0, value_parser = number_in("--idle-timeout-s", 0.0, 1e6))]
    idle_timeout_s: f64,
    /// Writes get ENOSPC once the stored bytes (whole blocks, as written) would pass this,
    /// e.g. 8GiB; the memory check then counts this much stored data (4KiB to 1PiB).
    #[arg(long, value_parser = bytes_in("--max-stored-bytes", 4096, 1 << 50))]
    max_stored_bytes: Option<u64>,
    /// Serve even when the device, written full, needs more memory than the machine has
    /// available.
    #[arg(long)]
    allow_large_memory: bool,
    /// Override a config key (as `run --set`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

/// A clap value parser: a number from `lo` to `hi` (finite).
fn number_in(flag: &'static str, lo: f64, hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone {
    move |s: &str| {
        let v: f64 = s.trim().parse().map_err(|e| format!("{flag} {s}: {e}"))?;
        if v.is_finite() && (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(format!("{flag} {s}: must be a number from {lo} to {hi}"))
        }
    }
}

/// A clap value parser: bytes (an integer, optionally with KiB, MiB, GiB, TiB or PiB) from
/// `lo` to `hi`.
fn bytes_in(flag: &'static str, lo: u64, hi: u64) -> impl Fn(&str) -> Result<u64, String> + Clone {
    move |s: &str| {
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let shift = match unit.trim() {
            "" | "B" => 0,
            "K" | "KiB" => 10,
            "M" | "MiB" => 20,
            "G" | "GiB" => 30,
            "T" | "TiB" => 40,
            "P" | "PiB" => 50,
            u => {
                return Err(format!(
                    "{flag} {s}: unknown unit '{u}' (bytes, KiB, MiB, GiB, TiB, PiB)"
                ))
            }
        };
        let v = num
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(1 << shift))
            .ok_or_else(|| format!("{flag} {s}: not a number of bytes"))?;
        if (lo..=hi).contains(&v) {
            Ok(v)
        } else {
            Err(format!("{flag} {s}: must be from {lo} to {hi} bytes"))
        }
    }
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
    let cfg = src.load()?;
    src.validated(&cfg)?;
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
        realtime_priority: a.realtime_priority,
        grace: Duration::from_micros(a.grace_us),
        run_ahead_ns: a.run_ahead_ns,
        owed_slack: a.owed_slack,
        grace_spin: Duration::from_micros(a.grace_spin_us),
        stats_interval: a.stats_interval.map(Duration::from_secs_f64),
        exit_on_disconnect: a.exit_on_disconnect,
        power_cut_after_requests: a.power_cut_after_requests,
        label: src.label.clone(),
        journal_range: a.journal_range,
        limits: ssdlab_serve::nbd::Limits {
            max_requests: a.max_requests_per_connection,
            max_bytes: a.max_bytes_per_connection,
            handshake_timeout: Duration::from_secs_f64(a.handshake_timeout_s),
            idle_timeout: (a.idle_timeout_s > 0.0)
                .then(|| Duration::from_secs_f64(a.idle_timeout_s)),
        },
        max_stored_bytes: a.max_stored_bytes,
        allow_large_memory: a.allow_large_memory,
        drain_timeout: Duration::from_secs_f64(a.drain_timeout_s),
        // An internal error is reported below, after the summary.
        audit_strict: false,
        // The server's messages, one line each, on stderr.
        log: ssdlab_serve::Log::new(|line| eprintln!("{line}")),
    };
    let mut bar = crate::progress::Bar::new(false);
    let s = ssdlab_serve::serve_with_progress(cfg, opts, &mut bar)?;
    bar.finish();
    let (a, c) = (&s.all_cycles, &s.all_cycles.commands);
    eprintln!(
        "serve: {} connections, {} reads, {} writes, {} flushes, {} trims, {} write-zeroes ({} answered with an error), {} power cuts",
        a.connections,
        c.read,
        c.write,
        c.flush,
        c.trim,
        c.write_zeroes,
        c.errors,
        s.power_cycle - 1
    );
    if s.time_mode == "realtime" {
        // Replies later than 20 µs after their due time: over 1 %, realtime did not keep
        // time (said while serving too, every 10 s).
        let replies = c.ok + c.errors;
        let share = 100.0 * a.late_replies as f64 / replies.max(1) as f64;
        eprintln!(
            "serve: realtime: {} of {replies} replies late ({share:.2} %, up to {:.3} ms){}",
            a.late_replies,
            a.max_late_ns as f64 / 1e6,
            if share > 1.0 {
                ": WARNING: over 1 %, the simulation did not keep time (raise --dilation, or give the loop a CPU of its own: --realtime-priority)"
            } else {
                ""
            }
        );
    }
    // The final results.json's audit, as `ssdlab run`'s summary ends with it.
    eprint!("serve: {}", crate::output::audit_lines(&s.audit));
    println!("results: {}", out.join("results.json").display());
    // Figures that cannot be, in the final results.json or an earlier document (said
    // when found; serving went on): a bug. The results are written; the server fails.
    match s.internal_error() {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}
