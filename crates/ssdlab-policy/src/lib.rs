//! The policy families, one directory each: GC victim selection ([`gc`]), free-block
//! allocation ([`alloc`]), wear leveling ([`wear`]), host-page placement ([`placement`]),
//! mapping ([`mapping`]), erase suspension ([`suspend`]) and NVMe command arbitration
//! ([`arbitration`]). A policy is one file (its
//! `Params`, their checks and capabilities, and the policy itself) plus one registration
//! line in its family's `policy_registry!` list (`registry.rs`).
//!
//! This layer sits below `config` (which holds the families' config enums) and above
//! `flash` and `base`; it never sees a `Config`. The FTL (`ftl::gc`, …) and the scheduler
//! (`scheduler::suspend`) re-export their families from here.

// The layers below, under the paths the policies name them by (`crate::flash::…`), and
// this crate under its name in the core (`crate::policy::…`).
pub(crate) use crate as policy;
use ssdlab_engine::prefetch;
use ssdlab_flash::{self as flash, base, ids};

mod registry;
pub(crate) use registry::policy_registry;

pub mod alloc;
pub mod arbitration;
pub mod gc;
pub mod mapping;
pub mod placement;
pub mod suspend;
pub mod wear;

/// What every policy's `Params` answers (a family's params trait adds its own questions,
/// each with a default, e.g. [`mapping::MappingParams`]).
pub trait PolicyParams {
    /// The parameter that is out of range (its key within the policy's table), and why.
    fn check(&self) -> Result<(), (&'static str, String)> {
        Ok(())
    }
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
            table: "ftl.gc",
            default: gc::GcConfig::default().name(),
            policies: gc::GcConfig::describe(),
        },
        FamilyInfo {
            table: "ftl.allocation",
            default: alloc::AllocConfig::default().name(),
            policies: alloc::AllocConfig::describe(),
        },
        FamilyInfo {
            table: "ftl.wear_leveling",
            default: wear::WearConfig::default().name(),
            policies: wear::WearConfig::describe(),
        },
        FamilyInfo {
            table: "ftl.placement",
            default: placement::PlacementConfig::default().name(),
            policies: placement::PlacementConfig::describe(),
        },
        FamilyInfo {
            table: "ftl.mapping",
            default: mapping::MappingConfig::default().name(),
            policies: mapping::MappingConfig::describe(),
        },
        FamilyInfo {
            table: "scheduler.erase_suspend",
            default: suspend::SuspendConfig::default().name(),
            policies: suspend::SuspendConfig::describe(),
        },
        FamilyInfo {
            table: "device.host_interface.arbitration",
            default: arbitration::ArbitrationConfig::default().name(),
            policies: arbitration::ArbitrationConfig::describe(),
        },
    ]
}

#[cfg(test)]
mod tests {
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
}
