//! `slc-journal` (spec 05, the paper's scheme): a journal detector learns the file
//! system's journal from the write pattern alone (a fixed LBA range written sequentially
//! and wrapping around; see `detector.rs`); pages of the journal go to the SLC `journal`
//! region, appended, so newer journal writes invalidate older ones and whole blocks free
//! up without copies (the region's GC relocates into itself: journal data never migrates
//! to TLC; when the region has no free page, journal pages go straight to TLC). Every
//! other page uses the SLC `cache` region as `slc-buffer` does.

use crate::ids::Lpn;
use super::detector::{DetectorParams, JournalDetector};
use super::{PlacementPolicy, PlacementShape, Targets};
use crate::SwarmCtx;
use rand::Rng;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::SimRng;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Shortest wrapping sequential range taken for a journal (bytes).
    pub min_journal_bytes: u64,
    /// Longest (ext4's journal is at most 1 GiB by default).
    pub max_journal_bytes: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            min_journal_bytes: 4 << 20,
            max_journal_bytes: 1 << 30,
        }
    }
}

impl crate::PolicyParams for Params {
    fn swarm(rng: &mut SimRng, ctx: &SwarmCtx) -> Params {
        Params {
            min_journal_bytes: ctx.page_bytes as u64 * rng.gen_range(2..=8),
            ..Params::default()
        }
    }
}

impl super::PlacementParams for Params {
    fn cache_regions(&self) -> super::RegionNeed {
        super::RegionNeed::AtMostOne
    }
    fn journal_regions(&self) -> super::RegionNeed {
        super::RegionNeed::One
    }
}

#[derive(Clone)]
pub struct SlcJournal {
    journal: Targets,
    other: Targets,
    detector: JournalDetector,
}

impl PlacementPolicy for SlcJournal {
    type Params = Params;

    fn new(p: &Params, s: &PlacementShape) -> SlcJournal {
        let mut other = vec![];
        other.extend(s.cache_region);
        other.push(s.data_region);
        let mut journal = vec![];
        journal.extend(s.journal_region);
        journal.push(s.data_region);
        SlcJournal {
            journal: Targets::of(&journal),
            other: Targets::of(&other),
            detector: JournalDetector::new(&DetectorParams {
                min_journal_bytes: p.min_journal_bytes,
                max_journal_bytes: p.max_journal_bytes,
                unit_bytes: s.unit_bytes,
                logical_units: s.logical_units,
            }),
        }
    }

    #[inline]
    fn host_targets(&mut self, lane: u8, lpns: &[u32]) -> Targets {
        if self.detector.is_journal(lpns[0]) {
            self.journal.in_lane(lane)
        } else {
            self.other.in_lane(lane)
        }
    }

    fn observe_write(&mut self, lpn: Lpn, units: u32) -> bool {
        let lpn = lpn.0;
        self.detector.observe(lpn, units)
    }

    #[inline]
    fn is_journal(&self, lpn: Lpn) -> bool {
        let lpn = lpn.0;
        self.detector.is_journal(lpn)
    }

    fn journal_range(&self) -> Option<(u32, u32)> {
        self.detector.range()
    }

    fn packs_journal_apart(&self) -> bool {
        true
    }
}
