//! `ssdlab serve`: real software on the simulated SSD.
//!
//! * [`nbd`] — the NBD protocol (fixed newstyle handshake, simple replies) and the server's
//!   listeners and connections; its [`nbd::Wire`], polled by the device loop on its own
//!   thread, reads and parses the requests and writes the replies (batched per connection).
//! * [`device`] — the device loop: the simulation, its clock (virtual or real time), the
//!   commands in flight, power cuts.
//! * [`trace`] — `--record-trace`: the requests as a blkparse trace `ssdlab run` replays.
//! * [`power`] — power-on after a cut (the FTL's recovery).
//! * [`counts`] — the `serve` section: commands and their outcomes, per power cycle and
//!   over all of them.
//! * [`audit`] — the `serve` section's identities, checked in the results audit of every
//!   document written.
//! * [`output`] — results.json (with its `serve` section), latency.csv, timeseries.csv,
//!   written atomically.
//! * [`memory`] — what a served device needs in memory, checked before it listens.
//! * [`log`] — where the server's messages go (the library never prints), and [`error`]
//!   its errors ([`ServeError`]).

pub mod audit;
pub mod counts;
pub mod device;
pub mod error;
pub mod log;
pub mod memory;
pub mod nbd;
pub mod output;
pub mod power;
pub mod sched;
pub mod trace;

pub use device::{request_power_cut, LoopOptions, ServeSummary, TimeMode};
pub use error::ServeError;
pub use log::Log;

use ssdlab_core::{Config, NoProgress, Progress, Simulation};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Everything `ssdlab serve` is asked.
pub struct ServeOptions {
    pub socket: Option<PathBuf>,
    pub tcp: Option<SocketAddr>,
    /// The smallest request the export accepts (default: the mapping unit); smaller than
    /// the unit means partial units, read-modify-written as the FTL does.
    pub min_block_bytes: Option<u32>,
    pub out_dir: PathBuf,
    pub record_trace: Option<PathBuf>,
    pub max_connections: u32,
    pub time: TimeMode,
    /// Realtime: the device loop's thread runs under `SCHED_FIFO` at this priority (1 to
    /// 99; needs root, `CAP_SYS_NICE` or `RLIMIT_RTPRIO`; checked before preconditioning).
    pub realtime_priority: Option<u32>,
    pub grace: std::time::Duration,
    /// Virtual time: simulated ns the loop may run past a reply before it waits.
    pub run_ahead_ns: u64,
    /// Virtual time: replies that may be owed new requests while the loop runs ahead.
    pub owed_slack: u32,
    /// Virtual time: how long a grace wait reads the sockets in a loop, at most, before it
    /// sleeps (zero: it sleeps at once).
    pub grace_spin: std::time::Duration,
    pub stats_interval: Option<std::time::Duration>,
    pub exit_on_disconnect: bool,
    pub power_cut_after_requests: Option<u64>,
    /// The config file's name (the export's description).
    pub label: String,
    /// The clients' journal (bytes `lo..hi`, e.g. ext4's from `debugfs`): the journal
    /// detector (spec 05) is scored against it in results.json's `journal` section.
    pub journal_range: Option<(u64, u64)>,
    /// What a connection may hold and how long a client may take.
    pub limits: nbd::Limits,
    /// Writes get `ENOSPC` once the stored bytes would pass this (and the memory check
    /// counts this much stored data instead of the whole device's).
    pub max_stored_bytes: Option<u64>,
    /// Serve even when the device, written full, needs more memory than is available.
    pub allow_large_memory: bool,
    /// At the end, how long the commands in flight and the device's settling may take.
    pub drain_timeout: Duration,
    /// A results audit that found figures that cannot be (in the final results.json or an
    /// earlier document) makes [`serve`] end with that internal error, once the results
    /// are written (default; off: the returned summary's
    /// [`ServeSummary::internal_error`] says it, as `ssdlab serve` reports it).
    pub audit_strict: bool,
    /// Where the server's messages go (clients refused or closed, power cuts, recoveries,
    /// results that could not be written, …), one line each; `ssdlab serve` prints them
    /// on stderr.
    pub log: Log,
}

impl ServeOptions {
    /// Options to serve on the Unix socket `socket`, results into `out_dir`, with the
    /// defaults of `ssdlab serve`.
    pub fn new(socket: PathBuf, out_dir: PathBuf, label: &str) -> ServeOptions {
        ServeOptions {
            socket: Some(socket),
            tcp: None,
            min_block_bytes: None,
            out_dir,
            record_trace: None,
            max_connections: 256,
            time: TimeMode::Virtual,
            realtime_priority: None,
            grace: Duration::from_micros(100),
            run_ahead_ns: 100_000,
            owed_slack: 4,
            grace_spin: Duration::from_micros(50),
            stats_interval: None,
            exit_on_disconnect: false,
            power_cut_after_requests: None,
            label: label.into(),
            journal_range: None,
            limits: nbd::Limits::default(),
            max_stored_bytes: None,
            allow_large_memory: false,
            drain_timeout: Duration::from_secs(30),
            audit_strict: true,
            log: Log::discard(),
        }
    }
}

/// The export of a device: its logical capacity in blocks the client may use.
pub fn export_of(
    sim: &Simulation,
    min_block: Option<u32>,
    label: &str,
) -> Result<nbd::Export, ServeError> {
    let unit = sim.derived.geometry.unit_bytes;
    let min = min_block.unwrap_or(unit);
    if !min.is_power_of_two() || min < 512 || min > unit {
        return Err(ServeError::Usage(format!(
            "--min-block {min}: a power of two from 512 to the mapping unit ({unit} bytes)"
        )));
    }
    let e = nbd::Export {
        name: "ssdlab".into(),
        description: format!("ssdlab simulated SSD ({label})"),
        size_bytes: sim.derived.logical_bytes / min as u64 * min as u64,
        min_block_bytes: min,
        preferred_block_bytes: unit.max(512),
        max_block_bytes: nbd::proto::MAX_BLOCK_BYTES_CAP,
    };
    e.validate()?;
    Ok(e)
}

/// Serve `config` until stopped: check everything, precondition, listen, run the device
/// loop, write the results into `opts.out_dir`. Errors are one line for the user.
pub fn serve(config: Config, opts: ServeOptions) -> Result<ServeSummary, ServeError> {
    serve_with_progress(config, opts, &mut NoProgress)
}

/// [`serve`], showing the preconditioning's progress on `progress` (a line on the log
/// says when it starts and ends, before the socket appears).
pub fn serve_with_progress(
    mut config: Config,
    opts: ServeOptions,
    progress: &mut dyn Progress,
) -> Result<ServeSummary, ServeError> {
    let label = opts.label.as_str();
    let log = &opts.log;
    // Versions say which bytes a slot holds (and are the OOB sequence numbers a
    // recovery uses); integrity checking comes with them.
    if config.device.zns.is_some() {
        return Err(ServeError::Config {
            label: label.into(),
            why: "device.zns: NBD has no zone commands; serve a conventional device (or one with [device.fdp])".into(),
        });
    }
    config.integrity = true;
    // A power cut must never lose a unit's last durable version (docs/serve.md).
    config.ftl.hold_overwritten_until_durable = true;
    let power_cut_refused = power::check_supported(&config).err().map(|e| e.to_string());
    if let (Some(why), Some(_)) = (&power_cut_refused, opts.power_cut_after_requests) {
        return Err(ServeError::Usage(format!(
            "--power-cut-after-requests: {why}"
        )));
    }
    if opts.socket.is_none() && opts.tcp.is_none() {
        return Err(ServeError::Usage(
            "serve: give --socket PATH (and/or --tcp ADDR)".into(),
        ));
    }
    if let TimeMode::Realtime { dilation } = opts.time {
        if !(dilation.is_finite() && dilation > 0.0) {
            return Err(ServeError::Usage(format!(
                "--dilation {dilation}: a positive number"
            )));
        }
    }
    if let Some(p) = opts.realtime_priority {
        if !matches!(opts.time, TimeMode::Realtime { .. }) {
            return Err(ServeError::Usage(format!(
                "--realtime-priority {p}: only with --time realtime"
            )));
        }
        sched::Fifo::probe(p).map_err(ServeError::Usage)?;
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            log.say(&format!(
                "serve: realtime: warning: --realtime-priority {p} with one CPU: the clients get only what the kernel's real-time throttling leaves them (5 % by default)"
            ));
        }
    }
    let derived = config.validate().map_err(|e| ServeError::sim(label, e))?;
    let need = memory::Need::of(&derived, opts.max_stored_bytes, power_cut_refused.is_none());
    if !opts.allow_large_memory {
        need.check(label)?;
    }
    std::fs::create_dir_all(&opts.out_dir)
        .map_err(|e| ServeError::io(format!("creating {}", opts.out_dir.display()), e))?;
    let trace = match &opts.record_trace {
        Some(p) => Some(
            trace::TraceWriter::create(p)
                .map_err(|e| ServeError::io(format!("--record-trace {}", p.display()), e))?,
        ),
        None => None,
    };
    let mut sim = Simulation::new(config).map_err(|e| ServeError::sim(label, e))?;
    // The device as served (integrity and the hold on): `ssdlab run` of this file with
    // the recorded trace replays the session.
    ssdlab_output::write_atomic(
        &opts.out_dir,
        "config.resolved.toml",
        ssdlab_output::resolved_toml(&sim.config, &sim.derived).as_bytes(),
    )
    .map_err(|e| ServeError::io(format!("writing {}", opts.out_dir.display()), e))?;
    let export = export_of(&sim, opts.min_block_bytes, label)?;
    precondition(&mut sim, label, log, progress)?;
    let (server, wire) = nbd::listen(
        &nbd::ListenOptions {
            socket: opts.socket.clone(),
            tcp: opts.tcp,
            max_connections: opts.max_connections,
            limits: opts.limits,
            log: log.clone(),
        },
        export.clone(),
    )
    .map_err(|e| ServeError::io("serve: listening", e))?;
    if let Some(p) = server.socket_path() {
        log.say(&format!(
            "serve: {} bytes on unix:{} (nbd+unix:///?socket={})",
            export.size_bytes,
            p.display(),
            p.display()
        ));
    }
    if let Some(a) = server.tcp_addr() {
        log.say(&format!("serve: {} bytes on nbd://{a}", export.size_bytes));
    }
    log.say(&format!("serve: memory: {}", need.describe()));
    let mut files = output::Files {
        dir: opts.out_dir.clone(),
    };
    let lp = LoopOptions {
        time: opts.time,
        realtime_priority: opts.realtime_priority,
        grace: opts.grace,
        run_ahead_ns: opts.run_ahead_ns,
        owed_slack: opts.owed_slack,
        grace_spin: opts.grace_spin,
        stats_interval: opts.stats_interval,
        exit_on_disconnect: opts.exit_on_disconnect,
        power_cut_after_requests: opts.power_cut_after_requests,
        trace,
        journal_range: opts.journal_range,
        power_cut_refused,
        max_stored_bytes: opts.max_stored_bytes,
        drain_timeout: opts.drain_timeout,
        log: log.clone(),
    };
    let (result, trace) = device::DeviceLoop::new(lp, wire, &mut files).run(&mut sim);
    server.shutdown();
    if let Some(mut t) = trace {
        t.finish()
            .map_err(|e| ServeError::io("--record-trace", e))?;
    }
    let summary = result.map_err(|e| ServeError::sim(label, e))?;
    match summary.internal_error() {
        Some(e) if opts.audit_strict => Err(ServeError::sim(label, e)),
        _ => Ok(summary),
    }
}

/// `[precondition]`, as configured: said on the log when it starts and ends (it runs
/// before the socket appears; on a large device it takes a while), its progress on
/// `progress`.
fn precondition(
    sim: &mut Simulation,
    label: &str,
    log: &Log,
    progress: &mut dyn Progress,
) -> Result<(), ServeError> {
    let pc = &sim.config.precondition;
    if !pc.enabled {
        return Ok(());
    }
    log.say(&format!(
        "serve: preconditioning {label} ({} GiB logical: {}{:.1} × its capacity of random overwrites) before listening",
        sim.derived.logical_bytes as f64 / (1u64 << 30) as f64,
        if pc.sequential_fill { "a sequential fill, then " } else { "" },
        pc.random_overwrite_capacity_multiple
    ));
    let t = Instant::now();
    sim.precondition(progress)
        .map_err(|e| ServeError::sim(label, e))?;
    log.say(&format!(
        "serve: preconditioned in {:.1} s",
        t.elapsed().as_secs_f64()
    ));
    Ok(())
}
