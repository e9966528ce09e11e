//! The policy families, one directory each: GC victim selection ([`gc`]), free-block
//! allocation ([`alloc`]), wear leveling ([`wear`]), host-page placement ([`placement`]),
//! mapping ([`mapping`]), erase suspension ([`suspend`]), NVMe command arbitration
//! ([`arbitration`]), read retry ([`retry`]) and the reliability jobs, read reclaim
//! ([`reclaim`]) and retention refresh ([`refresh`]) (what they share: [`reliability`]).
//! A policy is one file (its
//! `Params`, their checks and capabilities, and the policy itself) plus one registration
//! line in its family's `policy_registry!` list (`registry.rs`).
//!
//! This layer sits below `config` (which holds the families' config enums) and above
//! `flash` and `base`; it never sees a `Config`. The FTL (`ftl::gc`, …) and the scheduler
//! (`scheduler::suspend`) re-export their families from here.

// The layers below, under the paths the policies name them by (`crate::flash::…`).
use ssdlab_engine::prefetch;
use ssdlab_flash::{self as flash, base, ids};

mod registry;
pub(crate) use registry::policy_registry;

pub mod alloc;
pub mod arbitration;
pub mod gc;
pub mod mapping;
pub mod placement;
pub mod reclaim;
pub mod refresh;
pub mod reliability;
pub mod retry;
pub mod suspend;
pub mod wear;

use ssdlab_workload::rng::SimRng;

/// What every policy's `Params` answers (a family's params trait adds its own questions,
/// each with a default, e.g. [`mapping::MappingParams`]).
pub trait PolicyParams {
    /// The parameter that is out of range (its key within the policy's table), and why.
    fn check(&self) -> Result<(), (&'static str, String)> {
        Ok(())
    }

    /// Parameters worth testing, drawn for the swarm test (`tests/it/swarm.rs`) from `rng`,
    /// the policy's own stream, for a device of shape `ctx`; valid for it (`check` passes).
    /// Default: the default parameters.
    fn swarm(rng: &mut SimRng, ctx: &SwarmCtx) -> Self
    where
        Self: Sized + Default,
    {
        let _ = (rng, ctx);
        Self::default()
    }
}

/// What a policy's swarm draw ([`PolicyParams::swarm`]) may depend on: the device drawn so far.
#[derive(Clone, Copy, Debug)]
pub struct SwarmCtx {
    /// Flash page size.
    pub page_bytes: u32,
}

/// The swarm test's random stream `what` (a family's config type, or it and a policy name)
/// of case `seed`: one stream each, so adding a policy re-deals no other draw.
pub fn swarm_rng(seed: u64, what: &str) -> SimRng {
    // FNV-1a of the name: a stable tag (no hasher whose output may change between releases).
    let tag = what.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    ssdlab_workload::rng::stream(seed, tag)
}

/// One policy of a family, for `ssdlab policies`.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyInfo {
    pub name: &'static str,
    /// The registration line's doc comment, on one line.
    pub doc: String,
    /// The default parameters (`policy` not included): key and value in TOML syntax
    /// (`unset` for an optional parameter without a default), sorted by key.
    pub params: Vec<(String, String)>,
}

impl PolicyInfo {
    pub fn new<P: serde::Serialize>(name: &'static str, doc: &[&str], params: &P) -> PolicyInfo {
        let doc = doc.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ");
        let fields = match serde_json::to_value(params) {
            Ok(serde_json::Value::Object(m)) => m.into_iter().collect(),
            _ => Vec::new(),
        };
        let params = fields
            .into_iter()
            .map(|(k, v)| {
                let shown = match v {
                    serde_json::Value::Null => "unset".to_string(),
                    v => {
                        toml::Value::try_from(&v).map_or_else(|_| v.to_string(), |t| t.to_string())
                    }
                };
                (k, shown)
            })
            .collect();
        PolicyInfo { name, doc, params }
    }
}

/// One family of policies, for `ssdlab policies`.
#[derive(Clone, Debug, PartialEq)]
pub struct FamilyInfo {
    /// What the family decides, for the docs ("GC victim selection", …).
    pub what: &'static str,
    /// The config table that chooses the family's policy (`ftl.gc`, …).
    pub table: &'static str,
    /// The default policy's name.
    pub default: &'static str,
    pub policies: Vec<PolicyInfo>,
}

/// Every family with its policies, in `ssdlab policies` order.
pub fn families() -> Vec<FamilyInfo> {
    vec![
        FamilyInfo {
            what: "GC victim selection",
            table: "ftl.gc",
            default: gc::GcConfig::default().name(),
            policies: gc::GcConfig::describe(),
        },
        FamilyInfo {
            what: "free-block allocation",
            table: "ftl.allocation",
            default: alloc::AllocConfig::default().name(),
            policies: alloc::AllocConfig::describe(),
        },
        FamilyInfo {
            what: "wear leveling",
            table: "ftl.wear_leveling",
            default: wear::WearConfig::default().name(),
            policies: wear::WearConfig::describe(),
        },
        FamilyInfo {
            what: "placement",
            table: "ftl.placement",
            default: placement::PlacementConfig::default().name(),
            policies: placement::PlacementConfig::describe(),
        },
        FamilyInfo {
            what: "mapping",
            table: "ftl.mapping",
            default: mapping::MappingConfig::default().name(),
            policies: mapping::MappingConfig::describe(),
        },
        FamilyInfo {
            what: "read reclaim",
            table: "ftl.read_reclaim",
            default: reclaim::ReclaimConfig::default().name(),
            policies: reclaim::ReclaimConfig::describe(),
        },
        FamilyInfo {
            what: "retention refresh",
            table: "ftl.refresh",
            default: refresh::RefreshConfig::default().name(),
            policies: refresh::RefreshConfig::describe(),
        },
        FamilyInfo {
            what: "erase suspension",
            table: "scheduler.erase_suspend",
            default: suspend::SuspendConfig::default().name(),
            policies: suspend::SuspendConfig::describe(),
        },
        FamilyInfo {
            what: "NVMe arbitration",
            table: "device.host_interface.arbitration",
            default: arbitration::ArbitrationConfig::default().name(),
            policies: arbitration::ArbitrationConfig::describe(),
        },
        FamilyInfo {
            what: "read retry",
            table: "device.reliability.retry",
            default: retry::RetryConfig::default().name(),
            policies: retry::RetryConfig::describe(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::arbitration::ArbitrationConfig;
    use super::mapping::{dftl, MappingConfig};
    use super::placement::PlacementConfig;
    use super::wear::WearConfig;

    /// The capabilities the policies' params answer are those the config's hand-written
    /// matches gave before they moved onto the policies.
    #[test]
    fn capabilities_match_the_former_tables() {
        let entry = MappingConfig::Dftl(dftl::Params {
            granularity: dftl::Granularity::Entry,
            ..Default::default()
        });
        let by = |n| MappingConfig::by_name(n).unwrap();
        // 1000 units in 2 translation pages: 24 B per page + the per-unit model.
        assert_eq!(by("page-map").model_bytes(1000, 2), 0);
        assert_eq!(by("dftl").model_bytes(1000, 2), 48);
        assert_eq!(entry.model_bytes(1000, 2), 48 + 9000);
        assert_eq!(by("dftl-partitioned").model_bytes(1000, 2), 48);
        assert_eq!(by("dftl-partitioned-log").model_bytes(1000, 2), 48 + 125);
        assert_eq!(by("page-map").entries_per_tpage(16384), 0);
        assert_eq!(by("dftl-partitioned-log").entries_per_tpage(16384), 4096);
        for n in WearConfig::NAMES {
            assert_eq!(
                WearConfig::by_name(n).unwrap().migrates(),
                *n != "none",
                "{n}"
            );
        }
        for n in MappingConfig::NAMES {
            assert_eq!(by(n).is_demand(), *n != "page-map", "{n}");
        }
        for n in PlacementConfig::NAMES {
            let p = PlacementConfig::by_name(n).unwrap();
            assert_eq!(p.params().is_direct(), *n == "direct", "{n}");
        }
        for n in ArbitrationConfig::NAMES {
            let a = ArbitrationConfig::by_name(n).unwrap();
            assert_eq!(a.priority_classes(), *n == "weighted-round-robin", "{n}");
        }
        let regions = |n: &str, caches, journals| {
            PlacementConfig::by_name(n)
                .unwrap()
                .check_regions(caches, journals)
        };
        assert_eq!(regions("direct", 0, 0), Ok(()));
        assert_eq!(
            regions("direct", 1, 0),
            Err("a cache region is only written by placement policy = \"cache-first\" or \"slc-buffer\" or \"slc-journal\"".into())
        );
        assert_eq!(
            regions("cache-first", 0, 0),
            Err("cache-first needs exactly one region with content = \"cache\" (0 given)".into())
        );
        assert_eq!(regions("slc-buffer", 1, 0), Ok(()));
        assert_eq!(
            regions("slc-buffer", 1, 1),
            Err("a journal region is only written by placement policy = \"slc-journal\"".into())
        );
        assert_eq!(regions("slc-journal", 0, 1), Ok(()));
        assert_eq!(regions("slc-journal", 1, 1), Ok(()));
        assert!(regions("slc-journal", 2, 1).is_err());
        assert!(regions("slc-journal", 1, 0).is_err());
    }

    /// Every policy's swarm draw passes its own checks, and each policy draws from a stream
    /// of its own: the same case seed gives the same parameters whatever else is drawn.
    #[test]
    fn swarm_draws_are_valid_and_independent() {
        use super::SwarmCtx;
        let ctx = SwarmCtx { page_bytes: 8192 };
        macro_rules! family {
            ($C:ty) => {
                for name in <$C>::NAMES {
                    for seed in 0..200 {
                        let c = <$C>::swarm(name, seed, &ctx).unwrap();
                        assert_eq!(c.name(), *name);
                        assert_eq!(c.check(), Ok(()), "{name} seed {seed}: {c:?}");
                        assert_eq!(Some(c), <$C>::swarm(name, seed, &ctx));
                    }
                }
                assert!(<$C>::swarm("no-such-policy", 0, &ctx).is_none());
                let picked: std::collections::BTreeSet<&str> =
                    (0..200).map(|s| <$C>::swarm_any(s, &ctx).name()).collect();
                assert_eq!(picked.len(), <$C>::NAMES.len(), "every policy is drawn");
            };
        }
        family!(super::gc::GcConfig);
        family!(super::alloc::AllocConfig);
        family!(super::wear::WearConfig);
        family!(PlacementConfig);
        family!(MappingConfig);
        family!(super::suspend::SuspendConfig);
        family!(ArbitrationConfig);
        family!(super::reclaim::ReclaimConfig);
        family!(super::refresh::RefreshConfig);
        family!(super::retry::RetryConfig);
        // Different policies, different streams: ssr-static's points and des's guard are
        // not the same draws.
        let draws = |n: &str| {
            (0..50)
                .map(|s| format!("{:?}", super::suspend::SuspendConfig::swarm(n, s, &ctx)))
                .collect::<Vec<_>>()
        };
        assert_ne!(draws("des"), draws("ssr-static"));
    }
}
