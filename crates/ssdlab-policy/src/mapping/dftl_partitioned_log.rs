//! `dftl-partitioned-log`: a clean region of whole translation pages (read misses, as in
//! `dftl-partitioned`) and a dirty region that logs entries per translation page without
//! loading the page (spec 04, the paper's Fig. 3b with the write optimization).
//!
//! * Read: the log first (a newer entry than any cached page), then the clean pages; a
//!   miss evicts the clean LRU page (never a write) and loads the page: at most one
//!   translation read and no program on a read's path.
//! * Write (and GC relocation): the entry is appended to the log (or updated in place when
//!   already logged). When the log is full, the translation page with the most logged
//!   entries is batch-updated: read (unless its clean copy is cached), merged, programmed
//!   once; its entries leave the log and a cached clean copy stays clean (it was merged).
//!
//! A log entry costs `log_entry_bytes` (LPN and physical address; default 8).

use crate::ids::Lpn;
use super::cmt::{tpages, Bits, Budget, Links, List, MaxCount};
use super::dftl_partitioned::check_split;
use super::{MappingPolicy, MappingShape, TransOp};
use crate::SwarmCtx;
use rand::Rng;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::SimRng;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// CMT size as a share of the full table (default 0.25 when `cmt_bytes` is not given).
    pub cmt_share: Option<f64>,
    /// CMT size in bytes.
    pub cmt_bytes: Option<u64>,
    /// Share of the CMT that is the clean region of pages (the rest is the entry log).
    pub clean_share: f64,
    /// Bytes of one mapping entry in a translation page.
    pub entry_bytes: u32,
    /// Bytes of one logged entry (LPN + physical address).
    pub log_entry_bytes: u32,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            cmt_share: None,
            cmt_bytes: None,
            clean_share: 0.5,
            entry_bytes: 4,
            log_entry_bytes: 8,
        }
    }
}

impl Params {
    /// Pages of the clean region and entries of the log.
    fn capacities(&self, shape: &MappingShape) -> (u64, u64) {
        let table = shape.logical_units as u64 * self.entry_bytes as u64;
        let budget = Budget::bytes(self.cmt_share, self.cmt_bytes, table);
        let clean = (budget as f64 * self.clean_share).floor() as u64;
        (
            clean / shape.page_bytes as u64,
            (budget - clean) / self.log_entry_bytes.max(1) as u64,
        )
    }

}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, ctx: &SwarmCtx) -> Params {
        let entry_bytes = if rng.gen_bool(0.5) { 64 } else { 256 };
        Params {
            cmt_bytes: Some(ctx.page_bytes as u64 * rng.gen_range(5..=10)),
            entry_bytes,
            log_entry_bytes: entry_bytes * 2,
            ..Params::default()
        }
    }
}

impl super::MappingParams for Params {
    fn entry_bytes(&self) -> Option<u32> {
        Some(self.entry_bytes)
    }

    fn model_bytes_per_unit(&self) -> f64 {
        // One log bit per unit.
        0.125
    }

    fn check_device(&self, shape: &MappingShape) -> Result<(), (&'static str, String)> {
        check_split(
            self.cmt_share,
            self.cmt_bytes,
            self.clean_share,
            self.entry_bytes,
            shape,
        )?;
        if self.log_entry_bytes == 0 {
            return Err(("log_entry_bytes", "must be > 0".into()));
        }
        let (c, l) = self.capacities(shape);
        if c == 0 || l == 0 {
            return Err((
                "cmt_share",
                format!(
                    "the CMT budget gives the clean region {c} translation pages of {} B and the log {l} entries; each needs at least one",
                    shape.page_bytes
                ),
            ));
        }
        Ok(())
    }
}

#[derive(Clone)]
pub struct PartitionedLog {
    per_page: u32,
    logical_units: u32,
    clean_cap: u32,
    log_cap: u64,
    links: Links,
    clean: List,
    /// Translation pages cached in the clean region.
    cached: Bits,
    /// LPNs with an entry in the log.
    logged: Bits,
    /// Logged entries per translation page (greedy batch-update order).
    per_tpage: MaxCount,
    log_len: u64,
    dram_bytes: u64,
}

impl MappingPolicy for PartitionedLog {
    type Params = Params;

    fn new(p: &Params, s: &MappingShape) -> PartitionedLog {
        let per_page = s.page_bytes / p.entry_bytes;
        let n = tpages(s.logical_units, per_page);
        let (c, l) = p.capacities(s);
        PartitionedLog {
            per_page,
            logical_units: s.logical_units,
            clean_cap: c.min(n as u64) as u32,
            log_cap: l,
            links: Links::new(n),
            clean: List::default(),
            cached: Bits::new(n),
            logged: Bits::new(s.logical_units),
            per_tpage: MaxCount::new(n, per_page),
            log_len: 0,
            dram_bytes: c * s.page_bytes as u64 + l * p.log_entry_bytes as u64,
        }
    }

    fn entries_per_tpage(&self) -> u32 {
        self.per_page
    }

    #[inline]
    fn on_read(&mut self, lpn: Lpn, plan: &mut Vec<TransOp>) -> bool {
        let lpn = lpn.0;
        let t = lpn / self.per_page;
        if self.logged.get(lpn) {
            true
        } else if self.cached.get(t) {
            self.links.touch(&mut self.clean, t);
            true
        } else {
            if self.clean.len >= self.clean_cap {
                if let Some(v) = self.links.pop_back(&mut self.clean) {
                    self.cached.set(v, false);
                }
            }
            plan.push(TransOp::Load(t));
            self.links.push_front(&mut self.clean, t);
            self.cached.set(t, true);
            false
        }
    }

    #[inline]
    fn on_write(&mut self, lpn: Lpn, plan: &mut Vec<TransOp>) -> bool {
        let lpn = lpn.0;
        let hit = self.logged.get(lpn) || self.cached.get(lpn / self.per_page);
        self.log(lpn, plan);
        hit
    }

    fn on_relocated(&mut self, _tpn: u32, lpns: &[u32], plan: &mut Vec<TransOp>) {
        for &l in lpns {
            self.log(l, plan);
        }
    }

    fn dram_bytes(&self) -> u64 {
        self.dram_bytes
    }

    fn bounded_reads(&self) -> bool {
        true
    }
}

impl PartitionedLog {
    /// Log the new entry of `lpn`, making room with a batch update when the log is full.
    #[inline]
    fn log(&mut self, lpn: u32, plan: &mut Vec<TransOp>) {
        if self.logged.get(lpn) {
            return;
        }
        if self.log_len >= self.log_cap {
            self.batch_update(plan);
        }
        self.logged.set(lpn, true);
        self.per_tpage.increment(lpn / self.per_page);
        self.log_len += 1;
    }

    /// Write the translation page with the most logged entries back, merged.
    fn batch_update(&mut self, plan: &mut Vec<TransOp>) {
        let Some((t, n)) = self.per_tpage.take_max() else {
            return;
        };
        plan.push(if self.cached.get(t) {
            TransOp::WriteBack(t)
        } else {
            TransOp::Merge(t)
        });
        let lo = t * self.per_page;
        self.logged
            .clear_range(lo, (lo + self.per_page).min(self.logical_units));
        self.log_len -= n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TransOp::*;

    /// 4 entries per 16 B translation page, 16 units; one clean page and a log of 3
    /// entries of 8 B.
    fn cmt() -> PartitionedLog {
        let s = MappingShape {
            logical_units: 16,
            page_bytes: 16,
        };
        let p = Params {
            cmt_bytes: Some(40),
            clean_share: 0.4,
            ..Params::default()
        };
        PartitionedLog::new(&p, &s)
    }

    #[test]
    fn writes_log_without_loading_and_the_fullest_page_is_merged_once() {
        let mut m = cmt();
        let mut plan = Vec::new();
        m.on_write(Lpn(4), &mut plan);
        m.on_write(Lpn(5), &mut plan);
        m.on_write(Lpn(5), &mut plan); // updated in place
        m.on_write(Lpn(8), &mut plan);
        assert!(plan.is_empty(), "logging loads nothing: {plan:?}");
        // The log is full: page 1 (2 entries) is batch-updated: read, merge, one program.
        m.on_write(Lpn(12), &mut plan);
        assert_eq!(plan, [Merge(1)]);
        plan.clear();
        // Entries 4 and 5 left the log together: rewriting them logs again, and the next
        // batch update takes page 2 or 3 (one entry each, the oldest first).
        m.on_write(Lpn(4), &mut plan);
        assert!(plan.is_empty());
        m.on_write(Lpn(5), &mut plan);
        assert_eq!(plan, [Merge(2)]);
    }

    #[test]
    fn reads_prefer_the_log_and_a_cached_page_is_written_back_without_a_read() {
        let mut m = cmt();
        let mut plan = Vec::new();
        assert!(!m.on_read(Lpn(0), &mut plan)); // page 0 into the clean region
        assert_eq!(plan, [Load(0)]);
        plan.clear();
        m.on_write(Lpn(8), &mut plan);
        assert!(m.on_read(Lpn(8), &mut plan), "a logged entry answers the lookup");
        m.on_write(Lpn(1), &mut plan);
        m.on_write(Lpn(2), &mut plan);
        m.on_write(Lpn(12), &mut plan); // log full: page 0 (2 entries) is cached → write back
        assert_eq!(plan, [WriteBack(0)]);
        plan.clear();
        assert!(m.on_read(Lpn(1), &mut plan), "page 0 stays cached, clean and merged");
        assert!(!m.on_read(Lpn(4), &mut plan)); // miss: evicts clean page 0, never a write
        assert_eq!(plan, [Load(1)]);
    }
}
