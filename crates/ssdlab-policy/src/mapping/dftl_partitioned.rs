//! `dftl-partitioned`: the CMT of whole translation pages split into a clean and a dirty
//! region (default 50:50), each with its own LRU (spec 04, the paper's Fig. 3b).
//!
//! * Read: a hit in either region costs nothing; a miss evicts the clean LRU page (never a
//!   write) and loads the page into the clean region — at most one translation read and no
//!   program on a read's path.
//! * Write: a hit in the dirty region updates it; a hit in the clean region moves the page
//!   to the dirty region; a miss loads the page into the dirty region. When the dirty
//!   region is full its LRU page is written back first (one program) and leaves the cache.
//! * GC: a moved unit's page is updated where it is cached (a clean page moves to the
//!   dirty region as on a write); otherwise one batch update per page and victim.

use crate::ids::Lpn;
use super::cmt::{tpages, Budget, Links, List};
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
    /// Share of the CMT that is the clean region (the rest is the dirty region).
    pub clean_share: f64,
    /// Bytes of one mapping entry in a translation page.
    pub entry_bytes: u32,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            cmt_share: None,
            cmt_bytes: None,
            clean_share: 0.5,
            entry_bytes: 4,
        }
    }
}

impl Params {
    /// Pages of the clean and the dirty region.
    fn capacities(&self, shape: &MappingShape) -> (u64, u64) {
        let table = shape.logical_units as u64 * self.entry_bytes as u64;
        let budget = Budget::bytes(self.cmt_share, self.cmt_bytes, table);
        let clean = (budget as f64 * self.clean_share).floor() as u64;
        let page = shape.page_bytes as u64;
        (clean / page, (budget - clean) / page)
    }

}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, ctx: &SwarmCtx) -> Params {
        Params {
            cmt_bytes: Some(ctx.page_bytes as u64 * rng.gen_range(5..=10)),
            clean_share: [0.25, 0.5, 0.75][rng.gen_range(0..3)],
            entry_bytes: if rng.gen_bool(0.5) { 64 } else { 256 },
            ..Params::default()
        }
    }
}

impl super::MappingParams for Params {
    fn entry_bytes(&self) -> Option<u32> {
        Some(self.entry_bytes)
    }

    fn check_device(&self, shape: &MappingShape) -> Result<(), (&'static str, String)> {
        check_split(
            self.cmt_share,
            self.cmt_bytes,
            self.clean_share,
            self.entry_bytes,
            shape,
        )?;
        let (c, d) = self.capacities(shape);
        if c == 0 || d == 0 {
            return Err((
                "cmt_share",
                format!(
                    "the CMT budget gives the clean region {c} and the dirty region {d} translation pages of {} B; each needs at least one",
                    shape.page_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// Checks shared with the log variant.
pub(super) fn check_split(
    cmt_share: Option<f64>,
    cmt_bytes: Option<u64>,
    clean_share: f64,
    entry_bytes: u32,
    shape: &MappingShape,
) -> Result<(), (&'static str, String)> {
    Budget::check(cmt_share, cmt_bytes, entry_bytes, shape)?;
    if !(clean_share.is_finite() && clean_share > 0.0 && clean_share < 1.0) {
        return Err((
            "clean_share",
            format!("{clean_share} must be > 0 and < 1"),
        ));
    }
    Ok(())
}

const ABSENT: u8 = 0;
const CLEAN: u8 = 1;
const DIRTY: u8 = 2;

#[derive(Clone)]
pub struct Partitioned {
    per_page: u32,
    clean_cap: u32,
    dirty_cap: u32,
    links: Links,
    clean: List,
    dirty: List,
    /// Per translation page: absent, in the clean region, in the dirty region.
    state: Vec<u8>,
    dram_bytes: u64,
}

impl MappingPolicy for Partitioned {
    type Params = Params;

    fn new(p: &Params, s: &MappingShape) -> Partitioned {
        let per_page = s.page_bytes / p.entry_bytes;
        let n = tpages(s.logical_units, per_page);
        let (c, d) = p.capacities(s);
        Partitioned {
            per_page,
            clean_cap: c.min(n as u64) as u32,
            dirty_cap: d.min(n as u64) as u32,
            links: Links::new(n),
            clean: List::default(),
            dirty: List::default(),
            state: vec![ABSENT; n as usize],
            dram_bytes: (c + d) * s.page_bytes as u64,
        }
    }

    fn entries_per_tpage(&self) -> u32 {
        self.per_page
    }

    #[inline]
    fn on_read(&mut self, lpn: Lpn, plan: &mut Vec<TransOp>) -> bool {
        let lpn = lpn.0;
        let t = lpn / self.per_page;
        match self.state[t as usize] {
            CLEAN => self.links.touch(&mut self.clean, t),
            DIRTY => self.links.touch(&mut self.dirty, t),
            _ => {
                if self.clean.len >= self.clean_cap {
                    if let Some(v) = self.links.pop_back(&mut self.clean) {
                        self.state[v as usize] = ABSENT;
                    }
                }
                plan.push(TransOp::Load(t));
                self.links.push_front(&mut self.clean, t);
                self.state[t as usize] = CLEAN;
                return false;
            }
        }
        true
    }

    #[inline]
    fn on_write(&mut self, lpn: Lpn, plan: &mut Vec<TransOp>) -> bool {
        let lpn = lpn.0;
        let t = lpn / self.per_page;
        let hit = self.state[t as usize] != ABSENT;
        self.dirty_page(t, true, plan);
        hit
    }

    fn on_relocated(&mut self, tpn: u32, _lpns: &[u32], plan: &mut Vec<TransOp>) {
        self.dirty_page(tpn, false, plan);
    }

    fn dram_bytes(&self) -> u64 {
        self.dram_bytes
    }

    fn bounded_reads(&self) -> bool {
        true
    }
}

impl Partitioned {
    /// Make `t` a dirty cached page: already dirty → touch; clean → move it to the dirty
    /// region; absent → load it there (`load`) or, for a relocation, batch-update it in
    /// flash without caching it.
    fn dirty_page(&mut self, t: u32, load: bool, plan: &mut Vec<TransOp>) {
        match self.state[t as usize] {
            DIRTY => {
                if load {
                    self.links.touch(&mut self.dirty, t);
                }
                return;
            }
            CLEAN => self.links.remove(&mut self.clean, t),
            _ if !load => {
                plan.push(TransOp::Merge(t));
                return;
            }
            _ => {}
        }
        if self.dirty.len >= self.dirty_cap {
            if let Some(v) = self.links.pop_back(&mut self.dirty) {
                self.state[v as usize] = ABSENT;
                plan.push(TransOp::WriteBack(v));
            }
        }
        if self.state[t as usize] == ABSENT {
            plan.push(TransOp::Load(t));
        }
        self.links.push_front(&mut self.dirty, t);
        self.state[t as usize] = DIRTY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TransOp::*;

    /// 4 entries per 16 B translation page, 16 units; one clean and one dirty page.
    fn cmt() -> Partitioned {
        let s = MappingShape {
            logical_units: 16,
            page_bytes: 16,
        };
        let p = Params {
            cmt_bytes: Some(32),
            ..Params::default()
        };
        Partitioned::new(&p, &s)
    }

    #[test]
    fn reads_never_write_and_writes_pay_for_dirty_evictions() {
        let mut m = cmt();
        let mut plan = Vec::new();
        assert!(!m.on_write(Lpn(4), &mut plan)); // page 1 loaded into the dirty region
        assert!(!m.on_write(Lpn(0), &mut plan)); // dirty region full: page 1 written back first
        assert_eq!(plan, [Load(1), WriteBack(1), Load(0)]);
        plan.clear();
        assert!(!m.on_read(Lpn(4), &mut plan)); // a read miss: clean region, no write
        assert!(!m.on_read(Lpn(8), &mut plan)); // evicts clean page 1, no write
        assert_eq!(plan, [Load(1), Load(2)]);
        plan.clear();
        assert!(m.on_read(Lpn(1), &mut plan)); // page 0 sits in the dirty region: a hit
        assert!(plan.is_empty());
        // A write hit in the clean region moves page 2 to the dirty region, writing the
        // dirty LRU (page 0) back; no load (the page is in DRAM).
        assert!(m.on_write(Lpn(9), &mut plan));
        assert_eq!(plan, [WriteBack(0)]);
    }
}
