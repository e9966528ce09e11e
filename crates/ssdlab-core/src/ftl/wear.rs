//! Wear leveling: the hook the FTL calls after every erase. Spec 03's policies (dual-pool,
//! BET, adaptive, PET, EPET) plug in here as new variants; `none` is the greedy baseline.

use crate::config::WearLevelingPolicy;

/// What a wear leveler asks the FTL to do after an erase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WearAction {
    /// Nothing to do.
    Idle,
    /// Move the valid data of `cold_block` away and erase it (cause: wear leveling).
    Migrate { cold_block: u32 },
}

#[derive(Clone)]
pub enum WearLeveler {
    None,
}

impl WearLeveler {
    pub fn new(policy: WearLevelingPolicy) -> WearLeveler {
        match policy {
            WearLevelingPolicy::None => WearLeveler::None,
        }
    }

    /// Called when `block` has been erased.
    #[inline]
    pub fn after_erase(&mut self, _block: u32) -> WearAction {
        match self {
            WearLeveler::None => WearAction::Idle,
        }
    }
}
