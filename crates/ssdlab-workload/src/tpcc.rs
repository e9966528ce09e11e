//! TPC-C-like OLTP generator (`[workload] kind = "tpcc"`): the block I/O a database running
//! TPC-C sends to its data and log devices, as a statistical model (no SQL is executed).
//!
//! Model (every number is a config key, defaults in brackets):
//! * The working set is split into a **data area** and a **log area** at its end
//!   (`log_space_percent` [4 %]).
//! * The data area holds **tables** of 8 KiB database pages (`page_bytes` \[8192\]), each
//!   with a share of the space and a share of the data-page I/O. The defaults follow the
//!   relative sizes and access frequencies of TPC-C's tables: the tiny `warehouse`/
//!   `district` rows are the hottest, `stock` and `customer` large and busy, `item`
//!   read-only, `order_line`/`orders` growing, `history` append-only. Within a table,
//!   `hot_io_percent` \[80\] of the accesses go to the first `hot_space_percent` \[20\] of its
//!   pages (skew inside tables).
//! * Data-page I/O models buffer-pool misses (reads) and dirty-page write-backs (writes):
//!   `read_percent` \[65\] of the data-page I/Os are reads (TPC-C's measured ≈ 2:1
//!   read/write ratio at the block level); writes never go to read-only tables.
//! * Transactions: every `data_ios_per_transaction` \[10\] data-page I/Os are followed by a
//!   **sequential log write** of `log_write_bytes` \[8192\] at the log head (wrapping in the
//!   log area); every `group_commit_transactions` \[4\] commits issue a **flush** (group
//!   commit fsync).
//! * One closed-loop flow with `queue_depth` \[16\] requests in flight (transactions of
//!   concurrent terminals overlap), `requests` \[1,000,000\] requests in total (log writes
//!   and flushes included) or `duration_ns`.

use crate::rng::{stream, tag, SimRng};
use crate::stats::WorkloadStats;
use crate::{
    Arrival, Flow, HostOp, HostRequest, RequestSource, Workload, WorkloadContext, WorkloadError,
};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One table of the data area.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TpccTable {
    pub name: String,
    /// Share of the data area, in percent.
    pub space_percent: f64,
    /// Share of the data-page I/O, in percent.
    pub io_percent: f64,
    /// Never written (TPC-C's `item`).
    #[serde(default)]
    pub read_only: bool,
}

fn table(name: &str, space_percent: f64, io_percent: f64, read_only: bool) -> TpccTable {
    TpccTable {
        name: name.into(),
        space_percent,
        io_percent,
        read_only,
    }
}

/// `[workload] kind = "tpcc"`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TpccConfig {
    pub page_bytes: u64,
    pub read_percent: f64,
    pub data_ios_per_transaction: u32,
    pub log_write_bytes: u64,
    pub group_commit_transactions: u32,
    pub log_space_percent: f64,
    pub hot_io_percent: f64,
    pub hot_space_percent: f64,
    pub tables: Vec<TpccTable>,
    pub queue_depth: u32,
    /// Stop after this many requests (0 = no request limit).
    pub requests: u64,
    /// Stop the run at this simulated time (0 = no time limit). At least one limit is needed.
    pub duration_ns: u64,
}

impl Default for TpccConfig {
    fn default() -> Self {
        TpccConfig {
            page_bytes: 8192,
            read_percent: 65.0,
            data_ios_per_transaction: 10,
            log_write_bytes: 8192,
            group_commit_transactions: 4,
            log_space_percent: 4.0,
            hot_io_percent: 80.0,
            hot_space_percent: 20.0,
            tables: vec![
                table("warehouse_district", 0.1, 8.0, false),
                table("customer", 20.0, 20.0, false),
                table("stock", 38.0, 35.0, false),
                table("item", 2.9, 7.0, true),
                table("orders_new_order", 8.0, 12.0, false),
                table("order_line", 28.0, 15.0, false),
                table("history", 3.0, 3.0, false),
            ],
            queue_depth: 16,
            requests: 1_000_000,
            duration_ns: 0,
        }
    }
}

/// A table laid out in pages: [first, first + pages), hot part = first `hot` pages.
#[derive(Clone, Copy, Debug)]
struct Extent {
    first: u64,
    pages: u64,
    hot: u64,
}

#[derive(Clone, Debug)]
struct Plan {
    page_bytes: u64,
    read_p: f64,
    ios_per_tx: u32,
    log_bytes: u64,
    group: u32,
    hot_io: f64,
    extents: Vec<Extent>,
    /// Cumulative I/O weights for reads (all tables) and writes (writable tables).
    read_cdf: Vec<f64>,
    write_cdf: Vec<f64>,
    log_first: u64,
    log_len: u64,
    requests: u64,
}

fn bad(key: &str, reason: impl Into<String>) -> WorkloadError {
    WorkloadError::config(key, reason)
}

fn cdf(w: impl Iterator<Item = f64>) -> Vec<f64> {
    let v: Vec<f64> = w.collect();
    let total: f64 = v.iter().sum();
    let mut acc = 0.0;
    v.iter()
        .map(|x| {
            acc += x / total;
            acc
        })
        .collect()
}

impl Plan {
    fn new(c: &TpccConfig, ctx: &WorkloadContext) -> Result<Plan, WorkloadError> {
        let pct = |key: &str, v: f64| {
            if (0.0..=100.0).contains(&v) {
                Ok(v / 100.0)
            } else {
                Err(bad(key, format!("{v} must be a percentage in 0..=100")))
            }
        };
        let read_p = pct("read_percent", c.read_percent)?;
        let hot_io = pct("hot_io_percent", c.hot_io_percent)?;
        let hot_space = pct("hot_space_percent", c.hot_space_percent)?;
        let log_share = pct("log_space_percent", c.log_space_percent)?;
        if c.page_bytes == 0 || !c.page_bytes.is_multiple_of(ctx.unit_bytes.max(1)) {
            return Err(bad(
                "page_bytes",
                format!(
                    "{} must be a positive multiple of the mapping unit ({} bytes)",
                    c.page_bytes, ctx.unit_bytes
                ),
            ));
        }
        if c.log_write_bytes == 0 || !c.log_write_bytes.is_multiple_of(ctx.unit_bytes.max(1)) {
            return Err(bad(
                "log_write_bytes",
                format!(
                    "{} must be a positive multiple of the mapping unit ({} bytes)",
                    c.log_write_bytes, ctx.unit_bytes
                ),
            ));
        }
        if c.data_ios_per_transaction == 0 || c.group_commit_transactions == 0 || c.queue_depth == 0
        {
            return Err(bad(
                "data_ios_per_transaction",
                "data_ios_per_transaction, group_commit_transactions and queue_depth must be > 0",
            ));
        }
        if c.requests == 0 && c.duration_ns == 0 {
            return Err(bad(
                "requests",
                "set requests or duration_ns (both are 0: the run would never end)",
            ));
        }
        if c.tables.is_empty() {
            return Err(bad("tables", "at least one table is needed"));
        }
        for t in &c.tables {
            if !(t.space_percent > 0.0
                && t.space_percent.is_finite()
                && t.io_percent >= 0.0
                && t.io_percent.is_finite())
            {
                return Err(bad(
                    "tables",
                    format!(
                        "table {:?}: space_percent must be > 0 and io_percent >= 0",
                        t.name
                    ),
                ));
            }
        }
        let space_sum: f64 = c.tables.iter().map(|t| t.space_percent).sum();
        let io_sum: f64 = c.tables.iter().map(|t| t.io_percent).sum();
        if (space_sum - 100.0).abs() > 0.01 || (io_sum - 100.0).abs() > 0.01 {
            return Err(bad("tables", format!("space_percent adds up to {space_sum} and io_percent to {io_sum}; both must add up to 100")));
        }
        let write_sum: f64 = c
            .tables
            .iter()
            .filter(|t| !t.read_only)
            .map(|t| t.io_percent)
            .sum();
        if read_p < 1.0 && write_sum <= 0.0 {
            return Err(bad(
                "tables",
                "writes need a writable table with io_percent > 0",
            ));
        }
        let log_len =
            ((ctx.logical_bytes as f64 * log_share) as u64 / c.log_write_bytes) * c.log_write_bytes;
        let data_pages = (ctx.logical_bytes - log_len) / c.page_bytes;
        if log_len == 0 || data_pages < c.tables.len() as u64 {
            return Err(bad(
                "log_space_percent",
                format!(
                    "a {} byte device leaves no room for the log and {} tables",
                    ctx.logical_bytes,
                    c.tables.len()
                ),
            ));
        }
        let mut extents = Vec::new();
        let mut first = 0u64;
        for (i, t) in c.tables.iter().enumerate() {
            let pages = if i + 1 == c.tables.len() {
                data_pages - first
            } else {
                ((data_pages as f64 * t.space_percent / 100.0) as u64).max(1)
            };
            let pages = pages.min(data_pages - first).max(1);
            extents.push(Extent {
                first,
                pages,
                hot: ((pages as f64 * hot_space) as u64).clamp(1, pages),
            });
            first += pages;
        }
        Ok(Plan {
            page_bytes: c.page_bytes,
            read_p,
            ios_per_tx: c.data_ios_per_transaction,
            log_bytes: c.log_write_bytes,
            group: c.group_commit_transactions,
            hot_io,
            read_cdf: cdf(c.tables.iter().map(|t| t.io_percent)),
            write_cdf: cdf(c
                .tables
                .iter()
                .map(|t| if t.read_only { 0.0 } else { t.io_percent })),
            extents,
            log_first: ctx.logical_bytes - log_len,
            log_len,
            requests: c.requests,
        })
    }
}

/// The request stream of one TPC-C-like flow.
pub struct TpccSource {
    plan: Plan,
    rng: SimRng,
    issued: u64,
    /// Data I/Os issued in the current transaction.
    tx_ios: u32,
    /// Commits since the last flush.
    commits: u32,
    log_head: u64,
    flush_due: bool,
}

impl RequestSource for TpccSource {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        let p = &self.plan;
        if p.requests > 0 && self.issued >= p.requests {
            return Ok(None);
        }
        self.issued += 1;
        if self.flush_due {
            self.flush_due = false;
            return Ok(Some(HostRequest {
                tag: 0,
                placement_id: 0,
                arrival_ns: 0,
                op: HostOp::Flush,
                offset_bytes: 0,
                size_bytes: 0,
                journal: None,
            }));
        }
        if self.tx_ios == p.ios_per_tx {
            // Commit: append the transaction's log record.
            self.tx_ios = 0;
            let off = p.log_first + self.log_head;
            self.log_head = (self.log_head + p.log_bytes) % p.log_len;
            self.commits += 1;
            if self.commits == p.group {
                self.commits = 0;
                self.flush_due = true;
            }
            return Ok(Some(HostRequest {
                tag: 0,
                placement_id: 0,
                arrival_ns: 0,
                op: HostOp::Write,
                offset_bytes: off,
                size_bytes: p.log_bytes,
                journal: None,
            }));
        }
        self.tx_ios += 1;
        let read = self.rng.gen::<f64>() < p.read_p;
        let u: f64 = self.rng.gen();
        let cdf = if read { &p.read_cdf } else { &p.write_cdf };
        let t = cdf.iter().position(|&c| u < c).unwrap_or(cdf.len() - 1);
        let e = p.extents[t];
        let page = if e.hot < e.pages && self.rng.gen::<f64>() >= p.hot_io {
            e.first + self.rng.gen_range(e.hot..e.pages)
        } else {
            e.first + self.rng.gen_range(0..e.hot)
        };
        Ok(Some(HostRequest {
            tag: 0,
            placement_id: 0,
            arrival_ns: 0,
            op: if read { HostOp::Read } else { HostOp::Write },
            offset_bytes: page * p.page_bytes,
            size_bytes: p.page_bytes,
            journal: None,
        }))
    }
}

/// Build the TPC-C-like workload for a device.
pub fn build(c: &TpccConfig, ctx: &WorkloadContext) -> Result<Workload, WorkloadError> {
    let plan = Plan::new(c, ctx)?;
    let source = TpccSource {
        plan,
        rng: stream(ctx.seed, tag::TPCC),
        issued: 0,
        tx_ios: 0,
        commits: 0,
        log_head: 0,
        flush_due: false,
    };
    Ok(Workload {
        flows: vec![Flow {
            name: "tpcc".into(),
            arrival: Arrival::Closed {
                queue_depth: c.queue_depth,
            },
            source: Box::new(source),
        }],
        duration_ns: (c.duration_ns > 0).then_some(c.duration_ns),
        stats: WorkloadStats::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> WorkloadContext {
        WorkloadContext {
            logical_bytes: 1 << 30,
            unit_bytes: 4096,
            seed: 5,
            base_dir: None,
            zones: None,
            placement_ids: 0,
        }
    }

    #[test]
    fn mix_log_and_flushes() {
        let c = TpccConfig {
            requests: 110_000,
            ..Default::default()
        };
        let mut w = build(&c, &ctx()).unwrap();
        let mut reads = 0u64;
        let mut writes = 0u64;
        let mut log = Vec::new();
        let mut flushes = 0u64;
        let p = Plan::new(&c, &ctx()).unwrap();
        while let Some(r) = w.flows[0].source.next_request().unwrap() {
            match r.op {
                HostOp::Read => reads += 1,
                HostOp::Write if r.offset_bytes >= p.log_first => log.push(r.offset_bytes),
                HostOp::Write => writes += 1,
                HostOp::Flush => flushes += 1,
                HostOp::Trim => unreachable!(),
                op => unreachable!("{op:?}"),
            }
            assert!(r.offset_bytes + r.size_bytes <= 1 << 30);
        }
        assert_eq!(reads + writes + log.len() as u64 + flushes, 110_000);
        let rp = reads as f64 / (reads + writes) as f64;
        assert!((rp - 0.65).abs() < 0.01, "{rp}");
        assert_eq!((reads + writes) / log.len() as u64, 10);
        assert_eq!(log.len() as u64 / flushes, 4);
        assert!(
            log.windows(2)
                .all(|w| w[1] == w[0] + 8192 || w[1] == p.log_first),
            "sequential log, wrapping"
        );
    }

    #[test]
    fn errors_name_the_key() {
        let c = TpccConfig {
            read_percent: 120.0,
            ..Default::default()
        };
        assert!(build(&c, &ctx())
            .err()
            .unwrap()
            .to_string()
            .contains("read_percent"));
        let mut c = TpccConfig::default();
        c.tables[0].io_percent = 50.0;
        assert!(build(&c, &ctx())
            .err()
            .unwrap()
            .to_string()
            .contains("tables"));
    }
}
