//! Power-on after a cut: the FTL rebuilds its map from what was durably programmed
//! (`Ftl::recover`), and the recovery's figures go to the `serve` section.

use ssdlab_core::{Config, SimError, Simulation};

/// Rebuild the device after a power cut; the recovery's figures.
pub fn power_on(sim: &mut Simulation) -> Result<serde_json::Value, SimError> {
    let _ = sim;
    Err(SimError::config(
        "serve",
        "power cuts: the recovery is not built yet",
    ))
}

/// Whether power cuts can be served on `config` (before any work).
pub fn check_supported(config: &Config) -> Result<(), SimError> {
    let _ = config;
    Ok(())
}
