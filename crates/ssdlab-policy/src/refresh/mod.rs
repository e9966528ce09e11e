//! Retention refresh (`[ftl.refresh]`): relocate a block whose data is old enough for its
//! retention errors to matter ([`crate::reliability`]). A new policy is one file here (a
//! `Params` struct and a type implementing [`RelocationPolicy`]) plus one registration line
//! below.

use crate::reliability::{BlockView, RelocationPolicy, RelocationShape, Trigger};

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

impl RefreshConfig {
    /// Whether the policy relocates anything.
    pub fn relocates(&self) -> bool {
        self.params().relocates()
    }

    /// Whether it is the default (`none`): left out of a written config.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl Refresh {
    #[inline]
    pub fn read_limit(&self) -> u32 {
        dispatch!(self, p => p.read_limit())
    }

    #[inline]
    pub fn scan_interval_ns(&self) -> u64 {
        dispatch!(self, p => p.scan_interval_ns())
    }

    #[inline]
    pub fn due(&self, block: &BlockView) -> Option<Trigger> {
        dispatch!(self, p => p.due(block))
    }

    #[inline]
    pub fn needs_rber(&self) -> bool {
        dispatch!(self, p => p.needs_rber())
    }

    #[inline]
    pub fn urgent(&self, block: &BlockView) -> bool {
        dispatch!(self, p => p.urgent(block))
    }

    #[inline]
    pub fn can_be_urgent(&self) -> bool {
        dispatch!(self, p => p.can_be_urgent())
    }
}
