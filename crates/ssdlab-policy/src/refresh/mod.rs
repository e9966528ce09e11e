//! Retention refresh (`[ftl.refresh]`): relocate a block whose data is old enough for its
//! retention errors to matter ([`crate::reliability`]). A new policy is one file here (a
//! `Params` struct and a type implementing [`RelocationPolicy`]) plus one registration line
//! below.

use crate::reliability::{RelocationPolicy, RelocationShape};

crate::policy_registry! {
    $
    /// `[ftl.refresh]`: the retention-refresh policy (`policy = "…"` + parameters).
    config RefreshConfig default None;
    /// The device's retention-refresh policy.
    runtime Refresh: RelocationPolicy(RelocationShape);
    params crate::reliability::RelocationParams;
    /// No retention refresh.
    "none" => None(none::NoRefresh),
    /// Relocate a block whose data is `age_ms` old, found by a scan every `scan_interval_ms`.
    "age" => Age(age::AgeRefresh),
    /// Relocate a block whose modelled RBER reaches `margin` × the ECC's hard-decode
    /// limit, found by a scan every `scan_interval_ms`.
    "rber" => Rber(rber::RberRefresh),
}

crate::reliability::relocation_family!(RefreshConfig, Refresh);
