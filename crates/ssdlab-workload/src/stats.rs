//! Counters a workload updates while the simulator pulls requests from it.
//!
//! [`WorkloadStats`] is a cheap, cloneable handle (`Arc` of atomics) shared by every
//! source of a [`Workload`](crate::Workload). The core keeps `workload.stats.clone()` before
//! it moves the flows into the engine and reads the counters after the run, e.g.
//!
//! ```
//! # use ssdlab_workload::stats::WorkloadStats;
//! let stats = WorkloadStats::default();
//! // ... run ...
//! let snapshot = stats.snapshot(); // serde::Serialize, ready for results.json
//! assert_eq!(snapshot.skipped_bad_lines, 0);
//! ```
//!
//! Synthetic and fio workloads never touch the counters (all stay 0). The host
//! log-structured layer ([`crate::log_structured`]) counts its writes, GC and zone resets.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Debug, Default)]
struct Counters {
    skipped_bad_lines: AtomicU64,
    zero_size_requests: AtomicU64,
    clamped_arrivals: AtomicU64,
    remapped_requests: AtomicU64,
    filtered_records: AtomicU64,
    forgotten_submitters: AtomicU64,
    /// Ground truth of a file-system model (spec 05): its journal range `[lo, hi)` in bytes
    /// (hi = 0: none), and the bytes it wrote in and out of it.
    journal_lo: AtomicU64,
    journal_hi: AtomicU64,
    journal_write_bytes: AtomicU64,
    write_bytes: AtomicU64,
    host_user_write_bytes: AtomicU64,
    host_user_read_bytes: AtomicU64,
    host_user_unmapped_read_bytes: AtomicU64,
    host_gc_write_bytes: AtomicU64,
    host_zone_resets: AtomicU64,
    host_gc_runs: AtomicU64,
    lsm: Mutex<LsmCounts>,
    /// The names of the origins the workload's requests carry in their tag
    /// ([`WorkloadStats::set_origins`]).
    origins: OnceLock<&'static [&'static str]>,
}

/// Shared handle on the counters of one workload. Clones share the same counters.
#[derive(Clone, Debug, Default)]
pub struct WorkloadStats(Arc<Counters>);

/// Plain copy of the counters at one moment (for results.json).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadStatsSnapshot {
    /// Malformed input lines skipped under `skip_bad_lines`.
    pub skipped_bad_lines: u64,
    /// Read/write/trim records of size 0 that were dropped.
    pub zero_size_requests: u64,
    /// Records whose timestamp went back in time; their arrival was clamped to the previous one.
    pub clamped_arrivals: u64,
    /// Requests whose address was changed by `out_of_range = "wrap"` or `"scale"`.
    pub remapped_requests: u64,
    /// Records dropped by a filter (disk number, ASU, process, device, blkparse action).
    pub filtered_records: u64,
    /// blkparse with `blkparse_action = "D"` and `journal_process`: queued (`Q`) bios whose
    /// submitter was forgotten undispatched (more than `trace::MAX_QUEUED_SUBMITTERS`
    /// outstanding). Left out of results.json when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub forgotten_submitters: u64,
    /// Host log-structured layer: bytes it wrote for the inner workload's writes (whole
    /// mapping units). Left out of results.json when 0, as are the three below.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_user_write_bytes: u64,
    /// Host log-structured layer: bytes the inner workload's reads asked for (all of them:
    /// units never written read as zeros without device I/O, as on a conventional device
    /// they read without NAND access).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_user_read_bytes: u64,
    /// Host log-structured layer: of `host_user_read_bytes`, those of units it never wrote
    /// (or trimmed): zeros, no device request.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_user_unmapped_read_bytes: u64,
    /// Host log-structured layer: bytes its GC relocated (read and written again).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_gc_write_bytes: u64,
    /// Host log-structured layer: zones it reset (GC victims).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_zone_resets: u64,
    /// Host log-structured layer: times its GC ran (each run reclaims zones until more
    /// than `gc_free_zones` are empty).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_gc_runs: u64,
    /// The LSM-tree store (`kind = "lsm"`); left out of results.json when it counted
    /// nothing.
    #[serde(default, skip_serializing_if = "LsmCounts::is_empty")]
    pub lsm: LsmCounts,
}

/// What the LSM-tree store (`kind = "lsm"`, [`crate::lsm`]) did, counted when its requests
/// are drawn (every drawn request is submitted; a phase run to its end completes them).
/// With no failed request the device's byte counts of the phase are: `host.write_bytes
/// = wal + flush + compaction + gc write bytes`, `host.read_bytes = compaction + gc +
/// get read bytes`, `host.trim_bytes = trim_bytes`, `host.zone_commands = zone_resets`
/// (the audit's `lsm_io` check).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LsmCounts {
    /// Puts, and their key + value bytes (the user's bytes).
    pub puts: u64,
    pub user_bytes: u64,
    /// Gets; of them, those answered without a device read (memtables, or no level
    /// holding the key and no bloom false positive); device reads of gets and their bytes.
    pub gets: u64,
    pub get_memory_hits: u64,
    pub get_reads: u64,
    pub get_read_bytes: u64,
    /// Bytes written to the WAL, by flushes (L0 files) and by compactions; read by them.
    pub wal_write_bytes: u64,
    pub flush_write_bytes: u64,
    pub compaction_read_bytes: u64,
    pub compaction_write_bytes: u64,
    pub flushes: u64,
    pub compactions: u64,
    /// Compactions that moved a file down a level without I/O (nothing overlapped below).
    pub trivial_moves: u64,
    pub files_deleted: u64,
    /// Conventional devices: bytes of deleted files' extents trimmed.
    pub trim_bytes: u64,
    /// Zoned devices: zones reset (all their data dead), zones relocated by the store's
    /// GC, and the bytes it relocated (each read once and written once).
    pub zone_resets: u64,
    pub gc_zones: u64,
    pub gc_read_bytes: u64,
    pub gc_write_bytes: u64,
    /// The put rate limit in force (`put_rate_limit_bytes_per_s`, key + value bytes per
    /// second; 0 = none): the latest the store published, not a sum.
    #[serde(default)]
    pub put_rate_limit_bytes_per_s: u64,
    /// The put rate achieved over the phase, `user_bytes` per second of simulated time
    /// (rounded down): filled in when the results are assembled (0 in running counts).
    #[serde(default)]
    pub put_rate_bytes_per_s: u64,
}

impl LsmCounts {
    pub fn is_empty(&self) -> bool {
        *self == LsmCounts::default()
    }

    fn zip(&self, o: &LsmCounts, f: impl Fn(u64, u64) -> u64) -> LsmCounts {
        LsmCounts {
            puts: f(self.puts, o.puts),
            user_bytes: f(self.user_bytes, o.user_bytes),
            gets: f(self.gets, o.gets),
            get_memory_hits: f(self.get_memory_hits, o.get_memory_hits),
            get_reads: f(self.get_reads, o.get_reads),
            get_read_bytes: f(self.get_read_bytes, o.get_read_bytes),
            wal_write_bytes: f(self.wal_write_bytes, o.wal_write_bytes),
            flush_write_bytes: f(self.flush_write_bytes, o.flush_write_bytes),
            compaction_read_bytes: f(self.compaction_read_bytes, o.compaction_read_bytes),
            compaction_write_bytes: f(self.compaction_write_bytes, o.compaction_write_bytes),
            flushes: f(self.flushes, o.flushes),
            compactions: f(self.compactions, o.compactions),
            trivial_moves: f(self.trivial_moves, o.trivial_moves),
            files_deleted: f(self.files_deleted, o.files_deleted),
            trim_bytes: f(self.trim_bytes, o.trim_bytes),
            zone_resets: f(self.zone_resets, o.zone_resets),
            gc_zones: f(self.gc_zones, o.gc_zones),
            gc_read_bytes: f(self.gc_read_bytes, o.gc_read_bytes),
            gc_write_bytes: f(self.gc_write_bytes, o.gc_write_bytes),
            // Not counters: the limit is set by whoever zips (`add_lsm`: the newer
            // delta's; `since`: the later snapshot's, this one), the rate by the results.
            put_rate_limit_bytes_per_s: self.put_rate_limit_bytes_per_s,
            put_rate_bytes_per_s: 0,
        }
    }

    /// Fill in the achieved put rate of a phase of `sim_time_ns` simulated time.
    pub fn set_put_rate(&mut self, sim_time_ns: u64) {
        self.put_rate_bytes_per_s = if sim_time_ns == 0 {
            0
        } else {
            (self.user_bytes as u128 * 1_000_000_000 / sim_time_ns as u128) as u64
        };
    }

    /// Bytes the store wrote to the device: WAL, flushes, compactions, relocations.
    pub fn device_write_bytes(&self) -> u64 {
        self.wal_write_bytes
            + self.flush_write_bytes
            + self.compaction_write_bytes
            + self.gc_write_bytes
    }

    /// Bytes the store read from the device: compactions, relocations, gets.
    pub fn device_read_bytes(&self) -> u64 {
        self.compaction_read_bytes + self.gc_read_bytes + self.get_read_bytes
    }

    /// The application's write amplification: (WAL + flush + compaction bytes) / user
    /// bytes (`None` before a put).
    pub fn app_waf(&self) -> Option<f64> {
        (self.user_bytes > 0).then(|| {
            (self.wal_write_bytes + self.flush_write_bytes + self.compaction_write_bytes) as f64
                / self.user_bytes as f64
        })
    }

    /// Of it, flushes and compactions only (RocksDB's own WA figure leaves the WAL out).
    pub fn compaction_waf(&self) -> Option<f64> {
        (self.user_bytes > 0).then(|| {
            (self.flush_write_bytes + self.compaction_write_bytes) as f64 / self.user_bytes as f64
        })
    }

    /// The host layer's (ZenFS GC's): device writes / the application's writes (1 without
    /// relocation).
    pub fn host_waf(&self) -> Option<f64> {
        let app = self.device_write_bytes() - self.gc_write_bytes;
        (app > 0).then(|| self.device_write_bytes() as f64 / app as f64)
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl WorkloadStatsSnapshot {
    /// The counts since `earlier` (a snapshot of the same counters).
    pub fn since(&self, earlier: &WorkloadStatsSnapshot) -> WorkloadStatsSnapshot {
        WorkloadStatsSnapshot {
            skipped_bad_lines: self.skipped_bad_lines - earlier.skipped_bad_lines,
            zero_size_requests: self.zero_size_requests - earlier.zero_size_requests,
            clamped_arrivals: self.clamped_arrivals - earlier.clamped_arrivals,
            remapped_requests: self.remapped_requests - earlier.remapped_requests,
            filtered_records: self.filtered_records - earlier.filtered_records,
            forgotten_submitters: self.forgotten_submitters - earlier.forgotten_submitters,
            host_user_write_bytes: self.host_user_write_bytes - earlier.host_user_write_bytes,
            host_user_read_bytes: self.host_user_read_bytes - earlier.host_user_read_bytes,
            host_user_unmapped_read_bytes: self.host_user_unmapped_read_bytes
                - earlier.host_user_unmapped_read_bytes,
            host_gc_write_bytes: self.host_gc_write_bytes - earlier.host_gc_write_bytes,
            host_zone_resets: self.host_zone_resets - earlier.host_zone_resets,
            host_gc_runs: self.host_gc_runs - earlier.host_gc_runs,
            lsm: self.lsm.zip(&earlier.lsm, |a, b| a - b),
        }
    }

    /// Whether a host log-structured layer counted anything.
    pub fn has_host_layer(&self) -> bool {
        self.host_user_write_bytes
            + self.host_user_read_bytes
            + self.host_gc_write_bytes
            + self.host_zone_resets
            > 0
    }

    /// The host log-structured layer's write amplification, (user + relocated bytes) /
    /// user bytes; `None` without a host layer (or before it wrote).
    pub fn host_waf(&self) -> Option<f64> {
        (self.host_user_write_bytes > 0).then(|| {
            (self.host_user_write_bytes + self.host_gc_write_bytes) as f64
                / self.host_user_write_bytes as f64
        })
    }
}

impl WorkloadStats {
    /// Malformed lines skipped so far (the `--skip-bad-lines` count).
    pub fn skipped_lines(&self) -> u64 {
        self.0.skipped_bad_lines.load(Ordering::Relaxed)
    }

    /// Zero-size read/write/trim records dropped so far.
    pub fn zero_size_requests(&self) -> u64 {
        self.0.zero_size_requests.load(Ordering::Relaxed)
    }

    /// Arrivals clamped because a trace timestamp went backwards.
    pub fn clamped_arrivals(&self) -> u64 {
        self.0.clamped_arrivals.load(Ordering::Relaxed)
    }

    /// Requests moved by `out_of_range = "wrap"` / `"scale"`.
    pub fn remapped_requests(&self) -> u64 {
        self.0.remapped_requests.load(Ordering::Relaxed)
    }

    /// Records dropped by filters.
    pub fn filtered_records(&self) -> u64 {
        self.0.filtered_records.load(Ordering::Relaxed)
    }

    /// All counters at once.
    pub fn snapshot(&self) -> WorkloadStatsSnapshot {
        WorkloadStatsSnapshot {
            skipped_bad_lines: self.skipped_lines(),
            zero_size_requests: self.zero_size_requests(),
            clamped_arrivals: self.clamped_arrivals(),
            remapped_requests: self.remapped_requests(),
            filtered_records: self.filtered_records(),
            forgotten_submitters: self.0.forgotten_submitters.load(Ordering::Relaxed),
            host_user_write_bytes: self.0.host_user_write_bytes.load(Ordering::Relaxed),
            host_user_read_bytes: self.0.host_user_read_bytes.load(Ordering::Relaxed),
            host_user_unmapped_read_bytes: self
                .0
                .host_user_unmapped_read_bytes
                .load(Ordering::Relaxed),
            host_gc_write_bytes: self.0.host_gc_write_bytes.load(Ordering::Relaxed),
            host_zone_resets: self.0.host_zone_resets.load(Ordering::Relaxed),
            host_gc_runs: self.0.host_gc_runs.load(Ordering::Relaxed),
            lsm: *self.0.lsm.lock().unwrap_or_else(|p| p.into_inner()),
        }
    }

    /// Add counts taken on another handle (a source drawn on its own thread counts into a
    /// private set; each request's share is added here when the request is taken).
    pub(crate) fn add_snapshot(&self, d: &WorkloadStatsSnapshot) {
        let c = &self.0;
        c.skipped_bad_lines
            .fetch_add(d.skipped_bad_lines, Ordering::Relaxed);
        c.zero_size_requests
            .fetch_add(d.zero_size_requests, Ordering::Relaxed);
        c.clamped_arrivals
            .fetch_add(d.clamped_arrivals, Ordering::Relaxed);
        c.remapped_requests
            .fetch_add(d.remapped_requests, Ordering::Relaxed);
        c.filtered_records
            .fetch_add(d.filtered_records, Ordering::Relaxed);
        c.forgotten_submitters
            .fetch_add(d.forgotten_submitters, Ordering::Relaxed);
        c.host_user_write_bytes
            .fetch_add(d.host_user_write_bytes, Ordering::Relaxed);
        c.host_user_read_bytes
            .fetch_add(d.host_user_read_bytes, Ordering::Relaxed);
        c.host_user_unmapped_read_bytes
            .fetch_add(d.host_user_unmapped_read_bytes, Ordering::Relaxed);
        c.host_gc_write_bytes
            .fetch_add(d.host_gc_write_bytes, Ordering::Relaxed);
        c.host_zone_resets
            .fetch_add(d.host_zone_resets, Ordering::Relaxed);
        c.host_gc_runs.fetch_add(d.host_gc_runs, Ordering::Relaxed);
        self.add_lsm(&d.lsm);
    }

    /// Counts of the LSM-tree store.
    pub(crate) fn add_lsm(&self, d: &LsmCounts) {
        let mut l = self.0.lsm.lock().unwrap_or_else(|p| p.into_inner());
        *l = l.zip(d, |a, b| a + b);
        l.put_rate_limit_bytes_per_s = d.put_rate_limit_bytes_per_s;
    }

    /// The workload's journal range in bytes, when it models a journaling file system.
    pub fn journal_range(&self) -> Option<(u64, u64)> {
        let hi = self.0.journal_hi.load(Ordering::Relaxed);
        (hi > 0).then(|| (self.0.journal_lo.load(Ordering::Relaxed), hi))
    }

    /// Bytes written so far: into the journal, and in all.
    pub fn journal_write_bytes(&self) -> (u64, u64) {
        (
            self.0.journal_write_bytes.load(Ordering::Relaxed),
            self.0.write_bytes.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn set_journal_range(&self, lo: u64, hi: u64) {
        self.0.journal_lo.store(lo, Ordering::Relaxed);
        self.0.journal_hi.store(hi, Ordering::Relaxed);
    }

    pub(crate) fn add_written(&self, bytes: u64, journal: bool) {
        self.0.write_bytes.fetch_add(bytes, Ordering::Relaxed);
        if journal {
            self.0
                .journal_write_bytes
                .fetch_add(bytes, Ordering::Relaxed);
        }
    }

    pub(crate) fn add_skipped_line(&self) {
        self.0.skipped_bad_lines.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_zero_size(&self) {
        self.0.zero_size_requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_clamped(&self) {
        self.0.clamped_arrivals.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_remapped(&self) {
        self.0.remapped_requests.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_filtered(&self) {
        self.0.filtered_records.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_host_user_write(&self, bytes: u64) {
        self.0
            .host_user_write_bytes
            .fetch_add(bytes, Ordering::Relaxed);
    }

    /// A user read of `bytes` through the host layer, `unmapped` of them of units never
    /// written.
    pub(crate) fn add_host_user_read(&self, bytes: u64, unmapped: u64) {
        self.0
            .host_user_read_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        self.0
            .host_user_unmapped_read_bytes
            .fetch_add(unmapped, Ordering::Relaxed);
    }

    /// One GC victim relocated (`bytes` of valid data moved) and reset.
    pub(crate) fn add_host_relocation(&self, bytes: u64) {
        self.0
            .host_gc_write_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        self.0.host_zone_resets.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_host_gc_run(&self) {
        self.0.host_gc_runs.fetch_add(1, Ordering::Relaxed);
    }

    /// The workload names where each of its requests comes from: a request's
    /// [`HostRequest::tag`](crate::HostRequest::tag) is an index into `names` (the host
    /// log-structured layer: `user`, `relocation`). A timed run then keeps latencies per
    /// origin (results.json `latency_ns.by_origin`). Set once, when the source is built;
    /// a second call with other names is refused.
    pub fn set_origins(&self, names: &'static [&'static str]) -> Result<(), crate::WorkloadError> {
        let set = self.0.origins.get_or_init(|| names);
        if *set != names {
            return Err(crate::WorkloadError::config(
                "kind",
                format!(
                    "two sources name their requests' origins differently ({set:?}, {names:?})"
                ),
            ));
        }
        Ok(())
    }

    /// The origins named by [`WorkloadStats::set_origins`] (empty: the workload names none,
    /// and its requests' tags are not origins).
    pub fn origins(&self) -> &'static [&'static str] {
        self.0.origins.get().copied().unwrap_or(&[])
    }

    pub(crate) fn add_forgotten_submitters(&self, n: u64) {
        self.0.forgotten_submitters.fetch_add(n, Ordering::Relaxed);
    }
}
