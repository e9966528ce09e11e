//! Placement: where a host write goes, (region, stream), decided in two steps by one
//! policy ([`PlacementPolicy`]): when a write request is decoded, its write lane
//! ([`PlacementPolicy::lane`], from the request's [`WriteCtx`]: placement identifier, first
//! unit, length); then, per host page, the (region, host stream of that lane) targets to
//! try in order of preference ([`PlacementPolicy::host_targets`]); the FTL places the page
//! in the first one with a free page outside its GC reserve. Write buffers pack a page
//! from units of one lane, each lane has its own open block per plane and its own GC
//! stream (GC never mixes lanes).
//!
//! FDP is the policy `fdp` (`fdp.rs`): a lane per reclaim-unit handle, named by the
//! request's placement identifier through the device's `[device.fdp]` table
//! ([`PlacementShape::placement_handles`]); a device with that table runs `fdp` over
//! whichever region policy it names ([`Placement::build`]). A multi-stream technique (lanes
//! by LBA temperature, …) is one more policy answering [`PlacementParams::write_lanes`] and
//! [`PlacementPolicy::lane`].
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
    /// FDP (`[device.fdp]`): a write lane per reclaim-unit handle, by placement identifier.
    "fdp" => Fdp(fdp::Fdp),
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
    /// Whether the policy follows the host's placement identifiers through the device's
    /// `[device.fdp]` table (which it then needs).
    fn reads_placement_ids(&self) -> bool {
        false
    }
    /// Write lanes the policy itself chooses between (its [`PlacementPolicy::lane`]), 1 to
    /// `MAX_LANES`; an FDP device's lanes are its handles instead.
    fn write_lanes(&self) -> u32 {
        1
    }
    /// A cache region whose size follows the drive's free space (`slc-buffer`'s
    /// TurboWrite sizes); `None`: the whole cache region.
    fn cache_size(&self) -> Option<slc_buffer::CacheSize> {
        None
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

/// The regions a placement policy can choose from, and the device's placement table.
#[derive(Clone, Debug)]
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
    /// `[device.fdp]`: the handle (write lane) of each placement identifier (index), and
    /// the handles; `None` without FDP.
    pub placement_handles: Option<(Vec<u8>, u8)>,
}

/// What a host write request tells the placement policy when it is decoded (before any
/// buffering): its write lane is chosen from this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteCtx {
    /// The request's placement identifier (NVMe directive; 0 when the host gives none).
    pub placement_id: u16,
    /// Its first unit and how many units it writes.
    pub lpn: Lpn,
    pub units: u32,
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

    /// The same regions in the host stream of write lane `lane`.
    #[inline(always)]
    pub fn in_lane(mut self, lane: u8) -> Targets {
        let s = Stream::host(lane);
        for t in &mut self.list {
            t.stream = s;
        }
        self
    }
}

/// A host-page placement policy.
pub trait PlacementPolicy: Sized {
    type Params;
    fn new(params: &Self::Params, shape: &PlacementShape) -> Self;
    /// The write lane of host write `w` (< [`PlacementPolicy::lanes`]), chosen when the
    /// request is decoded; `None`: the write fails (a placement identifier the device does
    /// not have). Default: one lane, placement identifier 0 only.
    #[inline]
    fn lane(&mut self, w: &WriteCtx) -> Option<u8> {
        (w.placement_id == 0).then_some(0)
    }
    /// Write lanes the policy uses (the buffers keep one each).
    fn lanes(&self) -> usize {
        1
    }
    /// Where the host page holding `lpns`, written in lane `lane`, should go: (region,
    /// stream) targets in order of preference.
    fn host_targets(&mut self, lane: u8, lpns: &[u32]) -> Targets;
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
    /// The device's placement policy: the one `cfg` names, under `fdp` when the device has
    /// an FDP table (`shape.placement_handles`) and `cfg` is not `fdp` itself (so a
    /// `[device.fdp]` device keeps its cache or journal policy for the regions, its lanes
    /// by placement identifier).
    pub fn build(cfg: &PlacementConfig, shape: &PlacementShape) -> Placement {
        match (cfg, &shape.placement_handles) {
            (PlacementConfig::Fdp(_), _) | (_, None) => Placement::new(cfg, shape),
            (_, Some(_)) => Placement::Fdp(fdp::Fdp::over(Placement::new(cfg, shape), shape)),
        }
    }

    /// [`PlacementPolicy::lane`].
    #[inline]
    pub fn lane(&mut self, w: &WriteCtx) -> Option<u8> {
        dispatch!(self, p => p.lane(w))
    }

    /// [`PlacementPolicy::lanes`].
    pub fn lanes(&self) -> usize {
        dispatch!(self, p => p.lanes())
    }

    #[inline]
    pub fn host_targets(&mut self, lane: u8, lpns: &[u32]) -> Targets {
        dispatch!(self, p => p.host_targets(lane, lpns))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(handles: Option<(Vec<u8>, u8)>) -> PlacementShape {
        PlacementShape {
            data_region: 0,
            cache_region: Some(1),
            journal_region: Some(2),
            logical_units: 1 << 16,
            unit_bytes: 4096,
            placement_handles: handles,
        }
    }

    fn ctx(pid: u16, lpn: u32) -> WriteCtx {
        WriteCtx {
            placement_id: pid,
            lpn: Lpn(lpn),
            units: 1,
        }
    }

    /// Without a table a policy takes identifier 0 only, in lane 0; on a device with one
    /// the policy named runs under `fdp`: the lane is the identifier's handle, the regions
    /// are still the named policy's, in that lane's host stream.
    #[test]
    fn fdp_lanes_over_the_named_policys_regions() {
        let cache_first = PlacementConfig::by_name("cache-first").unwrap();
        let mut plain = Placement::build(&cache_first, &shape(None));
        assert_eq!(
            (plain.lane(&ctx(0, 5)), plain.lane(&ctx(1, 5))),
            (Some(0), None)
        );
        assert_eq!(plain.lanes(), 1);
        let table = Some((vec![1, 0, 2], 3));
        let mut p = Placement::build(&cache_first, &shape(table.clone()));
        assert!(matches!(p, Placement::Fdp(_)));
        assert_eq!(p.lanes(), 3);
        let lanes: Vec<_> = (0..4).map(|pid| p.lane(&ctx(pid, 5))).collect();
        assert_eq!(lanes, [Some(1), Some(0), Some(2), None]);
        let t = p.host_targets(2, &[5]);
        assert_eq!(
            t.as_slice(),
            [1, 0].map(|region| Target {
                region,
                stream: Stream::host(2)
            })
        );
        // `fdp` named: the data region.
        let fdp = PlacementConfig::by_name("fdp").unwrap();
        let mut p = Placement::build(&fdp, &shape(table));
        assert_eq!(p.lane(&ctx(2, 0)), Some(2));
        assert_eq!(
            p.host_targets(1, &[0]).as_slice(),
            [Target {
                region: 0,
                stream: Stream::host(1)
            }]
        );
    }

    /// A multi-stream technique is one policy: here lanes by LBA temperature (a unit
    /// rewritten `HOT` times is hot: lane 1), answering `lane` at decode and the targets
    /// in that lane's stream per page.
    #[test]
    fn a_temperature_policy_is_one_trait_impl() {
        const HOT: u8 = 2;
        struct Temperature {
            writes: Vec<u8>,
            data: u8,
        }
        impl PlacementPolicy for Temperature {
            type Params = ();
            fn new(_: &(), s: &PlacementShape) -> Temperature {
                Temperature {
                    writes: vec![0; s.logical_units as usize],
                    data: s.data_region,
                }
            }
            fn lane(&mut self, w: &WriteCtx) -> Option<u8> {
                let n = &mut self.writes[w.lpn.0 as usize];
                *n = n.saturating_add(1);
                Some((*n > HOT) as u8)
            }
            fn lanes(&self) -> usize {
                2
            }
            fn host_targets(&mut self, lane: u8, _: &[u32]) -> Targets {
                Targets::of(&[self.data]).in_lane(lane)
            }
        }
        let mut t = Temperature::new(&(), &shape(None));
        let lanes: Vec<_> = (0..4).map(|_| t.lane(&ctx(0, 9)).unwrap()).collect();
        assert_eq!(lanes, [0, 0, 1, 1]);
        assert_eq!(t.lane(&ctx(0, 10)), Some(0));
        assert_eq!(
            t.host_targets(1, &[9]).as_slice()[0].stream,
            Stream::host(1)
        );
    }
}
