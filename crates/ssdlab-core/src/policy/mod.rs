//! The policy families, one directory each: GC victim selection ([`gc`]), free-block
//! allocation ([`alloc`]), wear leveling ([`wear`]), host-page placement ([`placement`]),
//! mapping ([`mapping`]) and erase suspension ([`suspend`]). A policy is one file (its
//! `Params`, their checks and capabilities, and the policy itself) plus one registration
//! line in its family's `policy_registry!` list ([`registry`]).
//!
//! This layer sits below `config` (which holds the families' config enums) and above
//! `flash` and `base`; it never sees a `Config`. The FTL (`ftl::gc`, …) and the scheduler
//! (`scheduler::suspend`) re-export their families from here.

mod registry;
pub(crate) use registry::policy_registry;

pub mod alloc;
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
    ]
}
