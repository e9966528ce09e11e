//! Read reclaim (`[ftl.read_reclaim]`): relocate a block whose reads since its erase make
//! its read disturb dangerous ([`crate::reliability`]). A new policy is one file here
//! (a `Params` struct and a type implementing [`RelocationPolicy`]) plus one registration
//! line below.

use crate::reliability::{RelocationPolicy, RelocationShape};

crate::policy_registry! {
    $
    /// `[ftl.read_reclaim]`: the read-reclaim policy (`policy = "…"` + parameters).
    config ReclaimConfig default None;
    /// The device's read-reclaim policy.
    runtime ReadReclaim: RelocationPolicy(RelocationShape);
    params crate::reliability::RelocationParams;
    /// No read reclaim.
    "none" => None(none::NoReclaim),
    /// Relocate a block once it has been read `read_count` times since its erase.
    "threshold" => Threshold(threshold::ReadThreshold),
    /// Relocate a block, on a read of it, once its modelled RBER reaches `margin` × the
    /// ECC's hard-decode limit.
    "rber" => Rber(rber::RberReclaim),
}

crate::reliability::relocation_family!(ReclaimConfig, ReadReclaim);
