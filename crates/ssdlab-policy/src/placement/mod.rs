//! Placement: which region (and write stream) a host page goes to. A policy returns the
//! regions to try in order of preference; the FTL places the page in the first one with a
//! free page outside its GC reserve.
//!
//! A new policy is one file here (a `Params` struct and a type implementing
//! [`PlacementPolicy`]) plus one registration line below.

use crate::base::Stream;
use crate::ids::Lpn;

pub mod detector;

super::policy_registry! {
    $
    /// `[ftl.placement]`: where host pages go.
    config PlacementConfig default Direct;
    /// The placement policy of the device.
    runtime Placement: PlacementPolicy(PlacementShape);
    params PlacementParams;
    /// Every host page to the data region.
    "direct" => Direct(direct::Direct),
    /// To the `cache` region while it has room, else the data region; GC drains the cache.
    "cache-first" => CacheFirst(cache_first::CacheFirst),
    /// As `cache-first`: an SLC write buffer (spec 05 baseline).
    "slc-buffer" => SlcBuffer(slc_buffer::SlcBuffer),
    /// A detected journal to the SLC `journal` region, the rest as `slc-buffer` (spec 05).
    "slc-journal" => SlcJournal(slc_journal::SlcJournal),
}

/// How many regions of one content kind a placement policy writes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionNeed {
    /// None: such a region would never be written.
    Never,
    /// Exactly one.
    One,
    /// None or one.
    AtMostOne,
}

impl RegionNeed {
    fn accepts(self, n: usize) -> bool {
        match self {
            RegionNeed::Never => n == 0,
            RegionNeed::One => n == 1,
            RegionNeed::AtMostOne => n <= 1,
        }
    }
}

/// What a placement policy's parameters tell the rest of the device.
pub trait PlacementParams: super::PolicyParams {
    /// Regions with content = "cache" the policy writes to.
    fn cache_regions(&self) -> RegionNeed {
        RegionNeed::Never
    }
    /// Regions with content = "journal" the policy writes to.
    fn journal_regions(&self) -> RegionNeed {
        RegionNeed::Never
    }
    /// Whether every host page goes to the data region's host stream, as on a zoned
    /// device (which places by zone, so it takes only such a policy).
    fn is_direct(&self) -> bool {
        false
    }
}

impl PlacementConfig {
    /// Whether the device's `caches` cache regions and `journals` journal regions are
    /// those the policy writes to; `Err(why)` otherwise.
    pub fn check_regions(&self, caches: usize, journals: usize) -> Result<(), String> {
        let p = self.params();
        for (content, need, given) in [
            ("cache", p.cache_regions(), caches),
            ("journal", p.journal_regions(), journals),
        ] {
            if need.accepts(given) {
                continue;
            }
            return Err(match need {
                RegionNeed::Never => {
                    let writers: Vec<String> = PlacementConfig::NAMES
                        .iter()
                        .filter_map(|&n| PlacementConfig::by_name(n))
                        .filter(|c| {
                            let q = c.params();
                            let need = if content == "cache" {
                                q.cache_regions()
                            } else {
                                q.journal_regions()
                            };
                            need != RegionNeed::Never
                        })
                        .map(|c| format!("{:?}", c.name()))
                        .collect();
                    format!(
                        "a {content} region is only written by placement policy = {}",
                        writers.join(" or ")
                    )
                }
                RegionNeed::One => format!(
                    "{} needs exactly one region with content = \"{content}\" ({given} given)",
                    self.name()
                ),
                RegionNeed::AtMostOne => format!(
                    "{} needs at most one region with content = \"{content}\" ({given} given)",
                    self.name()
                ),
            });
        }
        Ok(())
    }
}

/// The regions a placement policy can choose from.
#[derive(Clone, Copy, Debug)]
pub struct PlacementShape {
    /// The region holding the logical capacity.
    pub data_region: u8,
    /// The region whose content is `cache`, if any.
    pub cache_region: Option<u8>,
    /// The region whose content is `journal`, if any.
    pub journal_region: Option<u8>,
    /// Logical units of the device (the journal detector's bounds).
    pub logical_units: u32,
    pub unit_bytes: u32,
}

/// A region and stream to write into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub region: u8,
    pub stream: Stream,
}

/// Up to three targets in order of preference.
#[derive(Clone, Copy, Debug)]
pub struct Targets {
    pub list: [Target; 3],
    pub len: usize,
}

impl Targets {
    pub fn one(t: Target) -> Targets {
        Targets {
            list: [t; 3],
            len: 1,
        }
    }

    /// The host streams of `regions`, in order.
    pub fn of(regions: &[u8]) -> Targets {
        let mut t = Targets::one(Target {
            region: regions[0],
            stream: Stream::HOST,
        });
        for (i, &r) in regions.iter().enumerate().take(3) {
            t.list[i] = Target {
                region: r,
                stream: Stream::HOST,
            };
        }
        t.len = regions.len().min(3);
        t
    }
    pub fn as_slice(&self) -> &[Target] {
        &self.list[..self.len]
    }
}

/// A host-page placement policy.
pub trait PlacementPolicy: Sized {
    type Params;
    fn new(params: &Self::Params, shape: &PlacementShape) -> Self;
    /// Where the host page holding `lpns` should go, in order of preference.
    fn host_targets(&mut self, lpns: &[u32]) -> Targets;
    /// A host write of `units` units from `lpn` arrived (before any buffering); returns
    /// whether the policy classes it as journal.
    fn observe_write(&mut self, _lpn: Lpn, _units: u32) -> bool {
        false
    }
    /// Whether unit `lpn` belongs to the journal stream (buffers pack it apart).
    fn is_journal(&self, _lpn: Lpn) -> bool {
        false
    }
    /// The journal range the policy has learned (`[lo, hi)` units), if any.
    fn journal_range(&self) -> Option<(u32, u32)> {
        None
    }
    /// Whether write buffers pack the policy's journal units into pages of their own.
    fn packs_journal_apart(&self) -> bool {
        false
    }
}

impl Placement {
    #[inline]
    pub fn host_targets(&mut self, lpns: &[u32]) -> Targets {
        dispatch!(self, p => p.host_targets(lpns))
    }

    #[inline]
    pub fn observe_write(&mut self, lpn: Lpn, units: u32) -> bool {
        dispatch!(self, p => p.observe_write(lpn, units))
    }

    #[inline]
    pub fn is_journal(&self, lpn: Lpn) -> bool {
        dispatch!(self, p => p.is_journal(lpn))
    }

    pub fn journal_range(&self) -> Option<(u32, u32)> {
        dispatch!(self, p => p.journal_range())
    }

    pub fn packs_journal_apart(&self) -> bool {
        dispatch!(self, p => p.packs_journal_apart())
    }
}
