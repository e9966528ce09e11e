//! `dftl`: the demand-based FTL (Gupta et al. 2009) with one LRU cached mapping table.
//!
//! * `granularity = "page"` (the spec-04 paper's baseline): whole translation pages are
//!   cached; a miss evicts the LRU page and, if it is dirty, writes it back (one program:
//!   the page is in DRAM) before the missing page is read — on a read's path too.
//! * `granularity = "entry"` (the original DFTL): single entries, each paying its LPN and
//!   LRU pointers out of the budget; evicting a dirty entry is a batch update of its
//!   translation page (read, merge every cached dirty entry of that page, program).
//!
//! A write miss loads the translation page too (the page must be complete in DRAM to be
//! written back later; the entry variant follows the original DFTL). Mappings moved by GC
//! are updated in the cache when cached (marked dirty), otherwise straight into flash with
//! one batch update per translation page and victim.

use crate::ids::Lpn;
use super::cmt::{tpages, Budget, Links, List};
use super::{MappingPolicy, MappingShape, TransOp};
use crate::SwarmCtx;
use rand::Rng;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::SimRng;

/// What the CMT caches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// Whole translation pages.
    #[default]
    Page,
    /// Single (LPN, PPN) entries.
    Entry,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    pub granularity: Granularity,
    /// CMT size as a share of the full table (default 0.25 when `cmt_bytes` is not given).
    pub cmt_share: Option<f64>,
    /// CMT size in bytes.
    pub cmt_bytes: Option<u64>,
    /// Bytes of one mapping entry (a physical address) in a translation page.
    pub entry_bytes: u32,
    /// Entry granularity: bytes of an entry's LRU links (paid out of the budget with its
    /// LPN key and the entry itself).
    pub lru_pointer_bytes: u32,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            granularity: Granularity::Page,
            cmt_share: None,
            cmt_bytes: None,
            entry_bytes: 4,
            lru_pointer_bytes: 8,
        }
    }
}

impl Params {
    /// Bytes one cached item costs: a translation page, or an entry with its key and links.
    fn item_bytes(&self, shape: &MappingShape) -> u64 {
        match self.granularity {
            Granularity::Page => shape.page_bytes as u64,
            Granularity::Entry => (4 + self.entry_bytes + self.lru_pointer_bytes) as u64,
        }
    }

    fn capacity(&self, shape: &MappingShape) -> u64 {
        let table = shape.logical_units as u64 * self.entry_bytes as u64;
        Budget::bytes(self.cmt_share, self.cmt_bytes, table) / self.item_bytes(shape)
    }

}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, ctx: &SwarmCtx) -> Params {
        Params {
            granularity: if rng.gen_bool(0.5) {
                Granularity::Page
            } else {
                Granularity::Entry
            },
            cmt_bytes: Some(ctx.page_bytes as u64 * rng.gen_range(5..=10)),
            entry_bytes: if rng.gen_bool(0.5) { 64 } else { 256 },
            ..Params::default()
        }
    }
}

impl super::MappingParams for Params {
    fn entry_bytes(&self) -> Option<u32> {
        Some(self.entry_bytes)
    }

    fn model_bytes_per_unit(&self) -> f64 {
        // An entry cache keeps links and a state per unit.
        match self.granularity {
            Granularity::Entry => 9.0,
            Granularity::Page => 0.0,
        }
    }

    fn check_device(&self, shape: &MappingShape) -> Result<(), (&'static str, String)> {
        Budget::check(self.cmt_share, self.cmt_bytes, self.entry_bytes, shape)?;
        if self.capacity(shape) == 0 {
            return Err((
                "cmt_share",
                format!(
                    "the CMT budget holds no {:?} item of {} B",
                    self.granularity,
                    self.item_bytes(shape)
                ),
            ));
        }
        Ok(())
    }
}

const ABSENT: u8 = 0;
const CLEAN: u8 = 1;
const DIRTY: u8 = 2;

#[derive(Clone)]
pub struct Dftl {
    gran: Granularity,
    per_page: u32,
    logical_units: u32,
    /// Items the CMT holds at most.
    cap: u32,
    links: Links,
    lru: List,
    /// Per cached id (translation page or LPN): absent, clean or dirty.
    state: Vec<u8>,
    /// Entry granularity: dirty cached entries per translation page.
    dirty_per_tpage: Vec<u32>,
    dram_bytes: u64,
}

impl MappingPolicy for Dftl {
    type Params = Params;

    fn new(p: &Params, s: &MappingShape) -> Dftl {
        let per_page = s.page_bytes / p.entry_bytes;
        let ids = match p.granularity {
            Granularity::Page => tpages(s.logical_units, per_page),
            Granularity::Entry => s.logical_units,
        };
        let cap = p.capacity(s).min(ids as u64) as u32;
        Dftl {
            gran: p.granularity,
            per_page,
            logical_units: s.logical_units,
            cap,
            links: Links::new(ids),
            lru: List::default(),
            state: vec![ABSENT; ids as usize],
            dirty_per_tpage: match p.granularity {
                Granularity::Page => Vec::new(),
                Granularity::Entry => vec![0; tpages(s.logical_units, per_page) as usize],
            },
            dram_bytes: cap as u64 * p.item_bytes(s),
        }
    }

    fn entries_per_tpage(&self) -> u32 {
        self.per_page
    }

    #[inline]
    fn on_read(&mut self, lpn: Lpn, plan: &mut Vec<TransOp>) -> bool {
        let lpn = lpn.0;
        self.access(lpn, false, plan)
    }

    #[inline]
    fn on_write(&mut self, lpn: Lpn, plan: &mut Vec<TransOp>) -> bool {
        let lpn = lpn.0;
        self.access(lpn, true, plan)
    }

    fn on_relocated(&mut self, tpn: u32, lpns: &[u32], plan: &mut Vec<TransOp>) {
        let uncached = match self.gran {
            Granularity::Page if self.state[tpn as usize] != ABSENT => {
                self.mark_dirty(tpn);
                false
            }
            Granularity::Page => true,
            Granularity::Entry => {
                let mut any = false;
                for &l in lpns {
                    if self.state[l as usize] != ABSENT {
                        self.mark_dirty(l);
                    } else {
                        any = true;
                    }
                }
                any
            }
        };
        if uncached {
            plan.push(TransOp::Merge(tpn));
            if self.gran == Granularity::Entry {
                self.clean_tpage(tpn);
            }
        }
    }

    fn dram_bytes(&self) -> u64 {
        self.dram_bytes
    }

    fn bounded_reads(&self) -> bool {
        false
    }
}

impl Dftl {
    #[inline]
    fn key(&self, lpn: u32) -> u32 {
        match self.gran {
            Granularity::Page => lpn / self.per_page,
            Granularity::Entry => lpn,
        }
    }

    /// Look `lpn` up (and update it when `write`); true on a hit.
    #[inline]
    fn access(&mut self, lpn: u32, write: bool, plan: &mut Vec<TransOp>) -> bool {
        let id = self.key(lpn);
        let hit = self.state[id as usize] != ABSENT;
        if hit {
            self.links.touch(&mut self.lru, id);
        } else {
            self.make_room(plan);
            plan.push(TransOp::Load(lpn / self.per_page));
            self.links.push_front(&mut self.lru, id);
            self.state[id as usize] = CLEAN;
        }
        if write {
            self.mark_dirty(id);
        }
        hit
    }

    #[inline]
    fn mark_dirty(&mut self, id: u32) {
        if self.state[id as usize] != DIRTY {
            self.state[id as usize] = DIRTY;
            if self.gran == Granularity::Entry {
                self.dirty_per_tpage[(id / self.per_page) as usize] += 1;
            }
        }
    }

    /// Evict LRU items until one more fits; a dirty victim is written back.
    fn make_room(&mut self, plan: &mut Vec<TransOp>) {
        while self.lru.len >= self.cap {
            let Some(v) = self.links.pop_back(&mut self.lru) else {
                return;
            };
            let was = std::mem::replace(&mut self.state[v as usize], ABSENT);
            if was != DIRTY {
                continue;
            }
            match self.gran {
                Granularity::Page => plan.push(TransOp::WriteBack(v)),
                Granularity::Entry => {
                    let t = v / self.per_page;
                    self.dirty_per_tpage[t as usize] -= 1;
                    plan.push(TransOp::Merge(t));
                    self.clean_tpage(t);
                }
            }
        }
    }

    /// Entry granularity: a batch update wrote every dirty cached entry of `tpn`.
    fn clean_tpage(&mut self, tpn: u32) {
        if self.dirty_per_tpage[tpn as usize] == 0 {
            return;
        }
        let lo = tpn * self.per_page;
        let hi = (lo + self.per_page).min(self.logical_units);
        for l in lo..hi {
            if self.state[l as usize] == DIRTY {
                self.state[l as usize] = CLEAN;
            }
        }
        self.dirty_per_tpage[tpn as usize] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TransOp::*;

    /// 4 entries per translation page (16 B pages of 4 B entries), 16 units.
    fn shape() -> MappingShape {
        MappingShape {
            logical_units: 16,
            page_bytes: 16,
        }
    }

    #[test]
    fn page_granularity_writes_a_dirty_victim_back_on_a_read_miss() {
        let p = Params {
            cmt_bytes: Some(16),
            ..Params::default()
        };
        let mut m = Dftl::new(&p, &shape());
        let mut plan = Vec::new();
        assert!(!m.on_write(Lpn(4), &mut plan)); // page 1: loaded, dirty
        assert_eq!(plan, [Load(1)]);
        plan.clear();
        assert!(m.on_write(Lpn(5), &mut plan)); // same page: a hit, no work
        assert!(plan.is_empty());
        assert!(!m.on_read(Lpn(0), &mut plan)); // page 0 evicts dirty page 1: program, then load
        assert_eq!(plan, [WriteBack(1), Load(0)]);
        plan.clear();
        assert!(!m.on_read(Lpn(8), &mut plan)); // page 0 is clean: evicted without a write
        assert_eq!(plan, [Load(2)]);
    }

    #[test]
    fn entry_granularity_batch_updates_every_dirty_entry_of_the_victims_page() {
        // 2 entries of 4 + 4 + 8 = 16 B each.
        let p = Params {
            granularity: Granularity::Entry,
            cmt_bytes: Some(32),
            ..Params::default()
        };
        let mut m = Dftl::new(&p, &shape());
        let mut plan = Vec::new();
        m.on_write(Lpn(0), &mut plan);
        m.on_write(Lpn(1), &mut plan);
        assert_eq!(plan, [Load(0), Load(0)]);
        plan.clear();
        // Entry 0 is the LRU victim: one merge of page 0 writes entries 0 and 1 together.
        m.on_read(Lpn(8), &mut plan);
        assert_eq!(plan, [Merge(0), Load(2)]);
        plan.clear();
        // Entry 1 is clean now: evicting it costs nothing.
        m.on_read(Lpn(12), &mut plan);
        assert_eq!(plan, [Load(3)]);
    }

    #[test]
    fn relocations_update_cached_pages_and_batch_the_rest() {
        let p = Params {
            cmt_bytes: Some(16),
            ..Params::default()
        };
        let mut m = Dftl::new(&p, &shape());
        let mut plan = Vec::new();
        m.on_read(Lpn(0), &mut plan);
        plan.clear();
        m.on_relocated(0, &[0, 1], &mut plan); // cached: marked dirty, no I/O
        m.on_relocated(2, &[8, 9, 10], &mut plan); // not cached: one batch update
        assert_eq!(plan, [Merge(2)]);
        plan.clear();
        m.on_read(Lpn(4), &mut plan); // page 0 became dirty
        assert_eq!(plan, [WriteBack(0), Load(1)]);
    }
}
