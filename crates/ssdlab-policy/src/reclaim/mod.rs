//! Read reclaim (`[ftl.read_reclaim]`): relocate a block whose reads since its erase make
//! its read disturb dangerous ([`crate::reliability`]). A new policy is one file here
//! (a `Params` struct and a type implementing [`RelocationPolicy`]) plus one registration
//! line below.

use crate::reliability::{BlockView, RelocationPolicy, RelocationShape, Trigger};

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

impl ReclaimConfig {
    /// Whether the policy relocates anything.
    pub fn relocates(&self) -> bool {
        self.params().relocates()
    }

    /// Whether it is the default (`none`): left out of a written config.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl ReadReclaim {
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
