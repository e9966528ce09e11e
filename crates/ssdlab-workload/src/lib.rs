//! Workload layer: everything that produces host requests.
//!
//! A [`Workload`] is a set of [`Flow`]s. Each flow pulls [`HostRequest`]s from a
//! [`RequestSource`] and is either closed-loop (at most `queue_depth` requests in flight,
//! arrival = submission time) or open-loop (arrival time taken from the request).
//! This crate knows nothing of SSDs: addresses are byte offsets in the logical space.

mod address;
pub mod error;
pub mod ext4;
pub mod fio;
pub mod flash_cache;
pub mod log_structured;
pub mod lsm;
pub mod replay;
pub mod request;
pub mod rng;
pub mod stats;
pub mod synthetic;
pub mod threaded;
pub mod tpcc;
pub mod trace;

pub use error::WorkloadError;
pub use request::{DataDir, HostOp, HostRequest, OpClass};

use serde::{Deserialize, Serialize};

/// What a source needs to know about the device it feeds.
#[derive(Clone, Debug)]
pub struct WorkloadContext {
    /// Logical (user-visible) capacity of the device in bytes.
    pub logical_bytes: u64,
    /// Mapping unit in bytes (requests are split into units of this size by the host layer).
    pub unit_bytes: u64,
    /// Master seed of the run; sources derive their own streams from it.
    pub seed: u64,
    /// Directory against which relative input paths (fio job files, traces) are resolved,
    /// normally the directory of the run's configuration file. `None` = the current directory.
    pub base_dir: Option<std::path::PathBuf>,
    /// The device's zones when it is zoned (`[device.zns]`), for zone-aware sources (fio
    /// `zonemode=zbd`, the host log-structured layer); `None` on a conventional device.
    pub zones: Option<ZoneGeometry>,
    /// Placement identifiers the device accepts (`[device.fdp]`); 0 without FDP.
    pub placement_ids: u16,
}

/// A zoned device's zones as the host sees them (NVMe ZNS Identify Namespace): zone `z`
/// covers bytes `z · zone_bytes .. (z + 1) · zone_bytes` of the logical space, of which
/// the first `zone_capacity_bytes` are writable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneGeometry {
    pub zone_bytes: u64,
    pub zone_capacity_bytes: u64,
    pub zones: u32,
    /// Most zones open at once (implicitly or explicitly).
    pub max_open_zones: u32,
    /// Most zones open or closed (holding a write pointer inside the zone) at once.
    pub max_active_zones: u32,
}

impl ZoneGeometry {
    /// First byte of zone `z`.
    pub fn zone_start_bytes(&self, z: u32) -> u64 {
        z as u64 * self.zone_bytes
    }

    /// Zone holding byte `offset_bytes`.
    pub fn zone_of(&self, offset_bytes: u64) -> u32 {
        (offset_bytes / self.zone_bytes) as u32
    }
}

impl WorkloadContext {
    /// `path` resolved against [`WorkloadContext::base_dir`] when it is relative.
    pub fn resolve_path(&self, path: &std::path::Path) -> std::path::PathBuf {
        match &self.base_dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.to_path_buf(),
        }
    }
}

/// A stream of host requests. Sources are pulled one request at a time so a 10 GB trace
/// or a 10^9-request run never sits in memory.
pub trait RequestSource: Send {
    /// The next request, `Ok(None)` when the source is exhausted.
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError>;

    /// The next request written into `out`; false when the source is exhausted (`out`
    /// untouched). The drivers' hot loops use this form: a source that writes the fields
    /// in place spares the copy of a returned `Result<Option<HostRequest>>`.
    #[inline]
    fn next_into(&mut self, out: &mut HostRequest) -> Result<bool, WorkloadError> {
        Ok(match self.next_request()? {
            Some(r) => {
                *out = r;
                true
            }
            None => false,
        })
    }

    /// Requests into `out[..n]`, in order, for some `1 <= n <= out.len()` (`out` is not
    /// empty), or `n == 0` when the source is exhausted; an error raised after `n` requests
    /// is returned beside them. The default draws one request: a source overrides this
    /// only when drawing a batch early is invisible (no counters updated while drawing),
    /// so the drivers can draw many per dynamic call.
    #[inline]
    fn next_batch(&mut self, out: &mut [HostRequest]) -> (usize, Option<WorkloadError>) {
        match self.next_into(&mut out[0]) {
            Ok(more) => (more as usize, None),
            Err(e) => (0, Some(e)),
        }
    }

    /// `Some(counters)` when this source is worth drawing on a thread of its own
    /// ([`threaded::Threaded`]: reading and parsing a trace costs as much as simulating
    /// the request) and may be: its requests do not depend on when they are drawn, and
    /// drawing them changes nothing but these workload counters — and of them only the
    /// ones in [`stats::WorkloadStatsSnapshot`] (not a file-system model's journal truth,
    /// which the worker would not carry over). The default: `None`
    /// (cheap generators: handing requests between threads costs more than drawing them).
    fn thread_counters(&mut self) -> Option<&mut stats::WorkloadStats> {
        None
    }

    /// Request `r`, which this source gave, failed: the device refused it with the NVMe
    /// status `status` (e.g. `zone_invalid_write`; results.json counts it, and in no other
    /// count). The drivers call it when the request completes. A source whose later
    /// requests rest on its earlier ones succeeding (the host log-structured layer) returns
    /// an error, and the run stops there rather than go on from a state the device does
    /// not share; the default ignores it (a trace or fio job replays its requests anyway).
    fn request_failed(&mut self, _r: &HostRequest, _status: &str) -> Result<(), WorkloadError> {
        Ok(())
    }
}

/// Most flows (submission queues) a workload may have: NVMe's most I/O queues, and the
/// width of the timed engine's flow ids.
pub const MAX_FLOWS: u32 = 65_536;

/// How a flow's requests enter the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// At most `queue_depth` requests in flight; a completion submits the next one at once.
    Closed { queue_depth: u32 },
    /// Requests arrive at their `arrival_ns`, whatever the device's state.
    Open,
    /// Closed loop whose requests also wait for their `arrival_ns` (a not-before time,
    /// from the phase's start): a request drawn before its time is held until then, and
    /// the flow draws nothing else meanwhile (a rate-limited writer: `lsm`'s
    /// `put_rate_limit_bytes_per_s`). A request due past the run's duration is still
    /// submitted at its time. The functional mode's arrival clock follows the times.
    Paced { queue_depth: u32 },
}

/// One submission queue with its request source.
pub struct Flow {
    pub name: String,
    pub arrival: Arrival,
    pub source: Box<dyn RequestSource>,
}

/// The host side of one run.
pub struct Workload {
    pub flows: Vec<Flow>,
    /// Stop the run at this simulated time even if sources have more requests.
    pub duration_ns: Option<u64>,
    /// Counters the sources update while they run (skipped bad lines, clamped arrivals…).
    /// Clone the handle before moving the flows away and read it after the run.
    pub stats: stats::WorkloadStats,
}

impl Workload {
    /// Malformed input lines skipped so far under `skip_bad_lines` (0 for synthetic/fio).
    pub fn skipped_lines(&self) -> u64 {
        self.stats.skipped_lines()
    }
}

/// `[workload]` section of a run configuration, tagged by `kind`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum WorkloadConfig {
    /// fio-like generator (see [`synthetic::SyntheticConfig`]).
    Synthetic(synthetic::SyntheticConfig),
    /// A fio job file (see [`fio::FioWorkloadConfig`]).
    Fio(fio::FioWorkloadConfig),
    /// A block trace replay (see [`trace::TraceWorkloadConfig`]).
    Trace(trace::TraceWorkloadConfig),
    /// TPC-C-like OLTP generator (see [`tpcc::TpccConfig`]).
    Tpcc(tpcc::TpccConfig),
    /// ext4 journaling model: fio with fsync, Filebench personalities (see
    /// [`ext4::Ext4Config`]).
    Ext4(ext4::Ext4Config),
    /// A host log-structured layer translating another workload into zone writes, with
    /// its own GC, for a zoned device (see [`log_structured::LogStructuredConfig`]).
    LogStructured(log_structured::LogStructuredConfig),
    /// A CacheLib-like flash cache: a large-object cache of regions written sequentially
    /// and evicted FIFO, a small-object cache of buckets rewritten at random (see
    /// [`flash_cache::FlashCacheConfig`]).
    FlashCache(flash_cache::FlashCacheConfig),
    /// An LSM-tree key-value store (RocksDB-like: WAL, memtable flushes, leveled
    /// compaction, gets) placing its files on a conventional, zoned or FDP device (see
    /// [`lsm::LsmConfig`]).
    Lsm(lsm::LsmConfig),
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig::Synthetic(synthetic::SyntheticConfig::default())
    }
}

impl WorkloadConfig {
    /// Check the configuration against a device without building it.
    pub fn validate(&self, ctx: &WorkloadContext) -> Result<(), WorkloadError> {
        self.build(ctx).map(|_| ())
    }

    /// Build the workload and read its first `requests` requests per flow, so a bad trace
    /// line or fio option is found before any long work.
    pub fn check_first(&self, ctx: &WorkloadContext, requests: usize) -> Result<(), WorkloadError> {
        let mut w = self.build(ctx)?;
        let mut any = false;
        for f in &mut w.flows {
            for _ in 0..requests {
                if f.source.next_request()?.is_none() {
                    break;
                }
                any = true;
            }
        }
        // A trace without a single request (an empty file, a header alone, everything
        // filtered) would run nothing and report it as a complete run.
        if let (WorkloadConfig::Trace(c), false, true) = (self, any, requests > 0) {
            let s = w.stats.snapshot();
            let dropped = s.filtered_records + s.zero_size_requests + s.skipped_bad_lines;
            return Err(WorkloadError::config(
                "path",
                format!(
                    "{}: a trace with no request lines{}",
                    ctx.resolve_path(&c.path).display(),
                    if dropped > 0 {
                        format!(" (its {dropped} records were filtered, of size 0 or skipped)")
                    } else {
                        String::new()
                    }
                ),
            ));
        }
        Ok(())
    }

    /// Requests the run will issue, when the configuration fixes it (for progress and
    /// ETA): synthetic and TPC-C workloads limited by a request count only.
    pub fn request_total(&self) -> Option<u64> {
        match self {
            WorkloadConfig::Synthetic(c)
                if c.until == synthetic::Until::Limits
                    && c.requests > 0
                    && c.total_bytes == 0
                    && c.duration_ns == 0 =>
            {
                Some(c.requests * c.flows as u64)
            }
            WorkloadConfig::Tpcc(c) if c.requests > 0 && c.duration_ns == 0 => Some(c.requests),
            _ => None,
        }
    }

    /// The input file this workload reads (a trace, a fio job file), a host layer's inner
    /// workload's included: what a sweep digests and what is made absolute.
    pub fn input_path(&self) -> Option<&std::path::PathBuf> {
        match self {
            WorkloadConfig::Trace(t) => Some(&t.path),
            WorkloadConfig::Fio(f) => Some(&f.path),
            WorkloadConfig::LogStructured(l) => l.inner.input_path(),
            _ => None,
        }
    }

    /// [`WorkloadConfig::input_path`], to change it.
    pub fn input_path_mut(&mut self) -> Option<&mut std::path::PathBuf> {
        match self {
            WorkloadConfig::Trace(t) => Some(&mut t.path),
            WorkloadConfig::Fio(f) => Some(&mut f.path),
            WorkloadConfig::LogStructured(l) => l.inner.input_path_mut(),
            _ => None,
        }
    }

    /// Build the flows of this workload.
    pub fn build(&self, ctx: &WorkloadContext) -> Result<Workload, WorkloadError> {
        match self {
            WorkloadConfig::Synthetic(c) => synthetic::build(c, ctx),
            WorkloadConfig::Fio(c) => fio::build(c, ctx),
            WorkloadConfig::Trace(c) => trace::build(c, ctx),
            WorkloadConfig::Tpcc(c) => tpcc::build(c, ctx),
            WorkloadConfig::Ext4(c) => ext4::build(c, ctx),
            WorkloadConfig::LogStructured(c) => log_structured::build(c, ctx),
            WorkloadConfig::FlashCache(c) => flash_cache::build(c, ctx),
            WorkloadConfig::Lsm(c) => lsm::build(c, ctx),
        }
    }
}

#[cfg(test)]
mod input_path_tests {
    use super::WorkloadConfig;

    /// A sweep digests, and a run makes absolute, the input file of a host layer's inner
    /// workload too (a changed inner trace must not reuse a stale sweep point).
    #[test]
    fn the_input_path_of_an_inner_workload_is_found() {
        let text = r#"
kind = "log-structured"
[inner]
kind = "trace"
path = "t.csv"
"#;
        let mut w: WorkloadConfig = toml::from_str(text).unwrap();
        assert_eq!(w.input_path().unwrap().to_str(), Some("t.csv"));
        *w.input_path_mut().unwrap() = "/abs/t.csv".into();
        assert_eq!(w.input_path().unwrap().to_str(), Some("/abs/t.csv"));
        let plain: WorkloadConfig = toml::from_str("kind = \"synthetic\"").unwrap();
        assert!(plain.input_path().is_none());
    }
}
