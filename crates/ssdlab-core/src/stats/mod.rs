//! Statistics: host counters, latency histograms (HDR, 3 significant digits), and the
//! serialisable results document. Everything here is deterministic: no wall-clock values
//! (those go to `perf.json`), fields in a fixed order.

use crate::flash::{BlockState, BlockTable, Cause, OpKind};
use crate::ftl::zones::ZoneError;
use crate::ftl::FtlCounters;
/// The histogram crate, for callers that read the latency histograms.
pub use hdrhistogram as hdr;
use hdrhistogram::Histogram;
use serde::Serialize;
use ssdlab_workload::{HostOp, OpClass};

/// Highest latency the histograms track exactly (1 hour); larger values saturate.
const MAX_TRACKED_NS: u64 = 3_600_000_000_000;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKED_NS, 3).expect("static histogram bounds are valid")
}

/// Read, write and flush latency of one flow or of the whole host.
#[derive(Clone)]
pub struct Latency {
    pub read: Histogram<u64>,
    pub write: Histogram<u64>,
    pub flush: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            read: new_histogram(),
            write: new_histogram(),
            flush: new_histogram(),
        }
    }
}

/// Buckets of [`new_histogram`] (lowest value 1, 3 significant digits): 2,048 sub-buckets,
/// the lower half used by bucket 0 only.
const SUB_BUCKET_HALF_MAGNITUDE: u32 = 10;
const SUB_BUCKET_MASK: u64 = (1 << (SUB_BUCKET_HALF_MAGNITUDE + 1)) - 1;

/// Index of `value`'s bucket in the histogram's counts (the histogram crate's own formula).
#[inline(always)]
fn bucket_index(value: u64) -> usize {
    let bucket = 64 - (SUB_BUCKET_HALF_MAGNITUDE + 1) - (value | SUB_BUCKET_MASK).leading_zeros();
    (((bucket + 1) as u64) << SUB_BUCKET_HALF_MAGNITUDE) as usize + (value >> bucket) as usize
        - (1 << SUB_BUCKET_HALF_MAGNITUDE)
}

/// The lowest value of bucket `index` (the inverse of [`bucket_index`]).
fn bucket_value(index: usize) -> u64 {
    let half = 1u64 << SUB_BUCKET_HALF_MAGNITUDE;
    let bucket = (index >> SUB_BUCKET_HALF_MAGNITUDE) as i64 - 1;
    let sub = (index as u64 & (half - 1)) + half;
    if bucket < 0 {
        sub - half
    } else {
        sub << bucket
    }
}

/// Latencies of one flow or of the host while a timed phase runs: a count per histogram
/// bucket, a few instructions per completion. [`LatencyRecorder::into_latency`] builds the
/// histograms once; they hold the same counts in the same buckets as if every latency had
/// been recorded into them, so every figure drawn from them is the same.
#[derive(Clone)]
pub struct LatencyRecorder {
    /// Read, write, flush.
    counts: [Vec<u64>; 3],
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        let n = bucket_index(MAX_TRACKED_NS) + 1;
        LatencyRecorder {
            counts: [vec![0; n], vec![0; n], vec![0; n]],
        }
    }
}

impl LatencyRecorder {
    #[inline]
    pub fn record(&mut self, op: HostOp, latency_ns: u64) {
        let Some(i) = op.class().latency_index() else {
            return;
        };
        let b = bucket_index(latency_ns.clamp(1, MAX_TRACKED_NS));
        self.counts[i][b] += 1;
    }

    pub fn into_latency(self) -> Latency {
        let histogram = |counts: &[u64]| {
            let mut h = new_histogram();
            for (i, &n) in counts.iter().enumerate().filter(|(_, &n)| n > 0) {
                // Cannot fail: every bucket's value is in the histogram's range.
                let _ = h.record_n(bucket_value(i), n);
            }
            h
        };
        Latency {
            read: histogram(&self.counts[0]),
            write: histogram(&self.counts[1]),
            flush: histogram(&self.counts[2]),
        }
    }
}

/// Host-side counters of one phase.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct HostCounters {
    pub reads: u64,
    pub writes: u64,
    pub trims: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub trim_bytes: u64,
    /// Mapping units written by the host (partial units count whole).
    pub write_units: u64,
    /// Mapping units read by the host (partial units count whole): buffer hits, units
    /// never written and units read from NAND.
    pub read_units: u64,
    /// Units read that were found in the DRAM write buffer.
    pub buffer_read_hits: u64,
    /// Units read that were never written (or trimmed): served without NAND access.
    pub unmapped_read_units: u64,
    /// Partially covered units of writes that needed a NAND read first.
    pub rmw_reads: u64,
    /// Zone management commands and reports (a zoned device; left out when 0).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub zone_commands: u64,
    /// Requests that failed (a zone error, an unknown placement identifier): counted
    /// here only, in no other count, byte total or latency (left out when 0).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub failed_requests: u64,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

impl HostCounters {
    /// Request `op` of `bytes` completed to the host, failed with status `error` if it
    /// did: the one place a request is counted, once, with its outcome (a failed one in
    /// `failed_requests` only).
    #[inline]
    pub fn complete(&mut self, op: HostOp, bytes: u64, error: Option<ZoneError>) {
        if error.is_some() {
            self.failed_requests += 1;
            return;
        }
        match op.class() {
            OpClass::Read => {
                self.reads += 1;
                self.read_bytes += bytes
            }
            OpClass::Write => {
                self.writes += 1;
                self.write_bytes += bytes
            }
            OpClass::Trim => {
                self.trims += 1;
                self.trim_bytes += bytes
            }
            OpClass::Flush => self.flushes += 1,
            OpClass::Zone => self.zone_commands += 1,
        }
    }

    /// The bytes of a later part of a request split at the maximum transfer size, taken
    /// by the device while the request is still in flight (figures taken mid-phase; the
    /// request itself counts once, with its first part).
    pub fn count_part(&mut self, op: HostOp, bytes: u64) {
        match op.class() {
            OpClass::Read => self.read_bytes += bytes,
            OpClass::Write => self.write_bytes += bytes,
            OpClass::Trim => self.trim_bytes += bytes,
            OpClass::Flush | OpClass::Zone => {}
        }
    }

    pub fn requests(&self) -> u64 {
        self.reads
            + self.writes
            + self.trims
            + self.flushes
            + self.zone_commands
            + self.failed_requests
    }
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub mean: f64,
    pub min: u64,
    pub p50: u64,
    pub p90: u64,
    pub p95: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub p99_99: u64,
    pub p99_999: u64,
    pub p99_9999: u64,
    pub max: u64,
}

/// Percentiles reported everywhere, with their key names.
pub const PERCENTILES: [(&str, f64); 9] = [
    ("p50", 50.0),
    ("p90", 90.0),
    ("p95", 95.0),
    ("p99", 99.0),
    ("p99_9", 99.9),
    ("p99_99", 99.99),
    ("p99_999", 99.999),
    ("p99_9999", 99.9999),
    ("max", 100.0),
];

impl LatencySummary {
    pub fn of(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary {
                count: 0,
                mean: 0.0,
                min: 0,
                p50: 0,
                p90: 0,
                p95: 0,
                p99: 0,
                p99_9: 0,
                p99_99: 0,
                p99_999: 0,
                p99_9999: 0,
                max: 0,
            };
        }
        let q = |p: f64| h.value_at_percentile(p);
        LatencySummary {
            count: h.len(),
            mean: (h.mean() * 10.0).round() / 10.0,
            min: h.min(),
            p50: q(50.0),
            p90: q(90.0),
            p95: q(95.0),
            p99: q(99.0),
            p99_9: q(99.9),
            p99_99: q(99.99),
            p99_999: q(99.999),
            p99_9999: q(99.9999),
            max: h.max(),
        }
    }

    /// Samples strictly beyond the p99.9999 point (how much the tail figure rests on).
    pub fn samples_beyond_p99_9999(count: u64) -> f64 {
        count as f64 * 1e-6
    }
}

/// Latency summaries by operation.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct OpLatency {
    pub read: LatencySummary,
    pub write: LatencySummary,
    /// Flushes (fio fsync, blkparse `F`, iolog sync, TPC-C commits): from submission until
    /// every unit written before them is on NAND.
    pub flush: LatencySummary,
}

impl OpLatency {
    pub fn of(l: &Latency) -> OpLatency {
        OpLatency {
            read: LatencySummary::of(&l.read),
            write: LatencySummary::of(&l.write),
            flush: LatencySummary::of(&l.flush),
        }
    }
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct FlowLatency {
    pub flow: String,
    #[serde(flatten)]
    pub latency: OpLatency,
}

/// The latencies of the requests of one origin (results.json `latency_ns.by_origin`):
/// a workload that names where its requests come from (the host log-structured layer:
/// `user`, `relocation`) has them reported apart.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct OriginLatency {
    pub origin: &'static str,
    #[serde(flatten)]
    pub latency: OpLatency,
}

/// NAND operation counts of one kind, by cause.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct ByCause {
    pub host: u64,
    pub gc: u64,
    pub wear_leveling: u64,
    pub mapping: u64,
    pub migration: u64,
    /// Read reclaim (`ftl.read_reclaim`; absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub reclaim: u64,
    /// Retention refresh (`ftl.refresh`; absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub refresh: u64,
    pub total: u64,
}

impl ByCause {
    /// The causes added up (the audit holds it to `total`).
    pub fn sum_of_causes(&self) -> u64 {
        self.host
            + self.gc
            + self.wear_leveling
            + self.mapping
            + self.migration
            + self.reclaim
            + self.refresh
    }
}

#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct NandSummary {
    pub reads: ByCause,
    pub programs: ByCause,
    pub erases: ByCause,
}

impl NandSummary {
    pub fn of(c: &crate::ftl::NandCounts) -> NandSummary {
        let by = |k: OpKind| ByCause {
            host: c.get(k, Cause::Host),
            gc: c.get(k, Cause::Gc),
            wear_leveling: c.get(k, Cause::WearLeveling),
            mapping: c.get(k, Cause::Mapping),
            migration: c.get(k, Cause::Migration),
            reclaim: c.get(k, Cause::Reclaim),
            refresh: c.get(k, Cause::Refresh),
            total: c.total(k),
        };
        NandSummary {
            reads: by(OpKind::Read),
            programs: by(OpKind::Program),
            erases: by(OpKind::Erase),
        }
    }
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct WearSummary {
    pub erase_count_min: u32,
    pub erase_count_mean: f64,
    pub erase_count_max: u32,
    pub erase_count_stddev: f64,
    pub bad_blocks: u64,
}

impl WearSummary {
    pub fn of(blocks: &BlockTable) -> WearSummary {
        let n = blocks.erase_count.len().max(1) as f64;
        let sum: u64 = blocks.erase_count.iter().map(|&e| e as u64).sum();
        let mean = sum as f64 / n;
        let var = blocks
            .erase_count
            .iter()
            .map(|&e| (e as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        WearSummary {
            erase_count_min: blocks.erase_count.iter().copied().min().unwrap_or(0),
            erase_count_mean: round6(mean),
            erase_count_max: blocks.erase_count.iter().copied().max().unwrap_or(0),
            erase_count_stddev: round6(var.sqrt()),
            bad_blocks: blocks
                .state
                .iter()
                .filter(|&&s| s == BlockState::Bad)
                .count() as u64,
        }
    }
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct GcSummary {
    /// Victims collected.
    pub invocations: u64,
    /// Mapping units copied by GC.
    pub copied_units: u64,
    /// Empty slots programmed because a page was closed before it was full.
    pub padding_units: u64,
    /// Host programs that appended units to a partly programmed page
    /// (`partial_programs_per_page` > 1; absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub partial_programs: u64,
    /// Blocks relocated by read reclaim (`ftl.read_reclaim`) and the units they moved
    /// (absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub reclaimed_blocks: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub reclaimed_units: u64,
    /// Blocks relocated by retention refresh (`ftl.refresh`) and the units they moved
    /// (absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub refreshed_blocks: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub refreshed_units: u64,
    /// Of the blocks reclaimed and refreshed, those the `rber` policies found due (the
    /// rest by read count or age; absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub reclaimed_blocks_by_rber: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub refreshed_blocks_by_rber: u64,
    /// Reclaim and refresh jobs that became urgent (`urgent_read_count`, `urgent_margin`:
    /// their die gave them every other batch; absent when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub urgent_relocations: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Round for stable, readable JSON (ratios are not meaningful beyond 6 digits).
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Write amplification: units programmed on NAND (whole pages, any cause) per unit the
/// host wrote.
pub fn waf(counters: &FtlCounters, host_write_units: u64, slots_per_page: u32) -> f64 {
    if host_write_units == 0 {
        return 0.0;
    }
    round6(
        counters.nand.total(OpKind::Program) as f64 * slots_per_page as f64
            / host_write_units as f64,
    )
}

/// Translation traffic of a demand-based mapping (spec 04); counts of translation pages.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct ByOrigin {
    pub host_read: u64,
    pub host_write: u64,
    pub relocation: u64,
    pub total: u64,
}

impl ByOrigin {
    fn of(a: [u64; 3]) -> ByOrigin {
        ByOrigin {
            host_read: a[0],
            host_write: a[1],
            relocation: a[2],
            total: a.iter().sum(),
        }
    }
}

/// The mapping of a run with a demand-based mapping (`results.json` → `mapping`).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct MappingSummary {
    pub policy: &'static str,
    /// DRAM the mapping keeps (the CMT budget used).
    pub dram_bytes: u64,
    pub entries_per_translation_page: u32,
    pub translation_pages: u32,
    /// Lookups DRAM answered, over host reads and writes (`null` without lookups).
    pub cmt_hit_ratio: Option<f64>,
    pub read_lookups: u64,
    pub read_hits: u64,
    pub write_lookups: u64,
    pub write_hits: u64,
    /// Data units whose mapping GC, wear leveling or retirement changed.
    pub relocation_updates: u64,
    /// Translation page reads and programs by what caused them.
    pub translation_reads: ByOrigin,
    pub translation_programs: ByOrigin,
    /// Loads served from DRAM: the page's program had not completed yet.
    pub loads_served_from_dram: u64,
    /// The translation region's own GC.
    pub translation_gc_copied_units: u64,
    pub translation_gc_programs: u64,
    /// Host reads by NAND reads on their path (translation + data): index = reads, the
    /// last entry counts 7 or more.
    pub nand_reads_per_host_read: [u64; 8],
    /// Host reads by NAND programs on their path (last entry: 3 or more).
    pub nand_programs_per_host_read: [u64; 4],
    /// Most NAND reads any host read issued (7 = 7 or more); `null` without host reads.
    pub max_nand_reads_per_host_read: Option<u32>,
    /// Write amplification without translation programs (data only); the top-level `waf`
    /// includes them.
    pub waf_without_translation: f64,
}

impl MappingSummary {
    pub fn of(
        policy: &'static str,
        dram_bytes: u64,
        entries_per_translation_page: u32,
        logical_units: u32,
        c: &FtlCounters,
        host_write_units: u64,
        slots_per_page: u32,
    ) -> MappingSummary {
        let t = &c.translation;
        let lookups = t.read_lookups + t.write_lookups;
        let data_programs = c.nand.total(OpKind::Program)
            - c.nand.get(OpKind::Program, Cause::Mapping)
            - t.gc_programs;
        MappingSummary {
            policy,
            dram_bytes,
            entries_per_translation_page,
            translation_pages: logical_units.div_ceil(entries_per_translation_page.max(1)),
            cmt_hit_ratio: (lookups > 0)
                .then(|| round6((t.read_hits + t.write_hits) as f64 / lookups as f64)),
            read_lookups: t.read_lookups,
            read_hits: t.read_hits,
            write_lookups: t.write_lookups,
            write_hits: t.write_hits,
            relocation_updates: t.relocation_updates,
            translation_reads: ByOrigin::of(t.reads),
            translation_programs: ByOrigin::of(t.programs),
            loads_served_from_dram: t.loads_in_flight,
            translation_gc_copied_units: t.gc_copied_units,
            translation_gc_programs: t.gc_programs,
            nand_reads_per_host_read: t.reads_per_host_read,
            nand_programs_per_host_read: t.programs_per_host_read,
            max_nand_reads_per_host_read: t
                .reads_per_host_read
                .iter()
                .rposition(|&n| n > 0)
                .map(|i| i as u32),
            waf_without_translation: if host_write_units == 0 {
                0.0
            } else {
                round6(data_programs as f64 * slots_per_page as f64 / host_write_units as f64)
            },
        }
    }
}

/// Erase/program suspension statistics of a timed phase (spec 01).
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct SuspendSummary {
    /// `scheduler.erase_suspend`.
    pub policy: String,
    /// Block erases completed (each block of a multi-plane erase counts).
    pub erases: u64,
    /// Erase suspensions (a multi-plane erase suspended once counts once).
    pub erase_suspensions: u64,
    /// Erase operations (die-level, multi-plane counted once) suspended at least once.
    pub erases_suspended: u64,
    pub max_suspensions_per_erase: u32,
    pub max_suspensions_per_loop: u32,
    /// Entry i: erase loops (of block erases) that were suspended i times.
    pub suspensions_per_loop_histogram: Vec<u64>,
    /// Block erases with a loop suspended more often than N_safe(PE) allows.
    pub erases_exceeding_safe_limit: u64,
    /// Summed extra RBER of the model (`extra_rber_per_excess_suspension`).
    pub extra_rber_sum: f64,
    pub program_suspensions: u64,
    /// Longest time from a host read queueing behind a running erase to the die being
    /// able to serve it (suspended with its penalty paid, or the erase done).
    pub erase_read_delay_max_ns: u64,
    /// Longest time an erase spent suspended (penalties and reads served included).
    pub erase_postponement_max_ns: u64,
    /// Suspend and resume penalties paid, in total.
    pub penalty_ns_total: u64,
}

impl SuspendSummary {
    /// Count one loop suspended `count` times.
    #[inline]
    pub fn count_loop(&mut self, count: u32) {
        let i = count as usize;
        if self.suspensions_per_loop_histogram.len() <= i {
            self.suspensions_per_loop_histogram.resize(i + 1, 0);
        }
        self.suspensions_per_loop_histogram[i] += 1;
        self.max_suspensions_per_loop = self.max_suspensions_per_loop.max(count);
    }
}

/// One erase operation as the timed engine ran it (kept only when tracing completions).
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct EraseRecord {
    pub die: u32,
    /// First block of the (multi-plane) erase and how many blocks it erased.
    pub block: u32,
    pub blocks: u32,
    pub pe_cycles: u32,
    pub loops: u32,
    pub loop_ns: u64,
    pub command_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Time the die spent on the erase itself: command + loop work + penalties.
    pub exec_ns: u64,
    pub penalties_ns: u64,
    pub suspensions: u32,
    pub suspensions_per_loop: Vec<u16>,
}

/// One row of the time series of a timed run: what happened in the interval ending at
/// `time_ns` (rates over the interval) and the device state at its end.
#[derive(Serialize, Debug, Clone, Copy, PartialEq)]
pub struct TimeSeriesRow {
    pub time_ns: u64,
    pub read_iops: f64,
    pub write_iops: f64,
    pub flush_iops: f64,
    pub read_mb_per_s: f64,
    pub write_mb_per_s: f64,
    /// NAND units programmed (host + relocation) per host unit written in the interval.
    pub waf: f64,
    pub gc_erases: u64,
    /// Fewest free blocks of any plane of the data region at the end of the interval.
    pub free_blocks_min: u32,
    /// Write-buffer units held (waiting + in flight), and writes waiting for space.
    pub buffer_units: u32,
    pub buffer_waiters: u32,
    pub erase_suspensions: u64,
}

impl TimeSeriesRow {
    /// The CSV header, in field order.
    pub const CSV_HEADER: &'static str = "time_ns,read_iops,write_iops,flush_iops,read_mb_per_s,write_mb_per_s,waf,gc_erases,free_blocks_min,buffer_units,buffer_waiters,erase_suspensions";

    pub fn csv_line(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            self.time_ns,
            round6(self.read_iops),
            round6(self.write_iops),
            round6(self.flush_iops),
            round6(self.read_mb_per_s),
            round6(self.write_mb_per_s),
            round6(self.waf),
            self.gc_erases,
            self.free_blocks_min,
            self.buffer_units,
            self.buffer_waiters,
            self.erase_suspensions
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn figures(h: &Histogram<u64>) -> Vec<u64> {
        let mut v = vec![
            h.len(),
            h.min(),
            h.max(),
            h.mean().to_bits(),
            h.stdev().to_bits(),
        ];
        v.extend(PERCENTILES.iter().map(|&(_, p)| h.value_at_percentile(p)));
        v.extend(h.iter_recorded().map(|x| x.value_iterated_to()));
        v
    }

    /// A request is counted once, with its outcome: by its kind and bytes, or as failed
    /// only (in no other count or byte total).
    #[test]
    fn a_request_counts_once_with_its_outcome() {
        let mut c = HostCounters::default();
        c.complete(HostOp::Read, 4096, None);
        c.complete(HostOp::ZoneAppend, 8192, None);
        c.complete(HostOp::Write, 512, Some(ZoneError::InvalidWrite));
        c.complete(HostOp::Trim, 1024, None);
        c.complete(HostOp::Flush, 0, None);
        c.complete(HostOp::ZoneReport, 4096, None);
        c.complete(HostOp::ZoneReset, 0, Some(ZoneError::InvalidField));
        let want = HostCounters {
            reads: 1,
            read_bytes: 4096,
            writes: 1,
            write_bytes: 8192,
            trims: 1,
            trim_bytes: 1024,
            flushes: 1,
            zone_commands: 1,
            failed_requests: 2,
            ..Default::default()
        };
        assert_eq!(c, want);
        assert_eq!(c.requests(), 7);
    }

    #[test]
    fn bucket_value_is_the_lowest_of_its_bucket() {
        let mut h = new_histogram();
        for v in [
            1,
            2,
            1023,
            1024,
            2047,
            2048,
            2049,
            4095,
            4096,
            123_456_789,
            MAX_TRACKED_NS,
        ] {
            let i = bucket_index(v);
            assert_eq!(bucket_value(i), h.lowest_equivalent(v), "value {v}");
            assert_eq!(bucket_index(bucket_value(i)), i, "value {v}");
            h.record(v).unwrap();
        }
    }

    proptest! {
        /// The recorder's histograms give every figure the histograms fed one latency at a
        /// time give, for latencies from 1 ns to past the tracked range.
        #[test]
        fn recorder_matches_the_histogram(
            lat in proptest::collection::vec((0u8..4, 0u64..(1 << 43), 0u32..43), 1..300)
        ) {
            // The oracle: the histogram crate's own recording of each latency, clamped to
            // the tracked range (0 counts as 1 ns, anything over an hour as an hour).
            let mut direct = Latency::default();
            let mut rec = LatencyRecorder::default();
            for (op, raw, shift) in lat {
                // The oracle's histogram of each kind drawn (a trim has none).
                let (op, to) = [
                    (HostOp::Read, Some(&mut direct.read)),
                    (HostOp::Write, Some(&mut direct.write)),
                    (HostOp::Flush, Some(&mut direct.flush)),
                    (HostOp::Trim, None),
                ]
                .into_iter()
                .nth(op as usize)
                .unwrap();
                let v = raw >> shift;
                if let Some(h) = to {
                    h.record(v.clamp(1, MAX_TRACKED_NS)).unwrap();
                }
                rec.record(op, v);
            }
            let built = rec.into_latency();
            for (a, b) in [
                (&direct.read, &built.read),
                (&direct.write, &built.write),
                (&direct.flush, &built.flush),
            ] {
                prop_assert_eq!(figures(a), figures(b));
            }
        }
    }
}
