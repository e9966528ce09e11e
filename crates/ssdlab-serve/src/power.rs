//! Power-on after a cut: the FTL rebuilds its map from what was durably programmed
//! (`Ftl::recover`: the newest version of each unit by the OOB's sequence numbers), and
//! the recovery's figures go to the `serve` section.

use ssdlab_core::{Config, SimError, Simulation};

/// Rebuild the device after the cut that ended power cycle `cycle`; the recovery's figures.
pub fn power_on(sim: &mut Simulation, cycle: u32) -> Result<serde_json::Value, SimError> {
    let s = sim.power_on()?;
    let mut v = serde_json::to_value(s).map_err(|e| SimError::Internal {
        what: format!("recovery summary: {e}"),
    })?;
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("after_power_cycle".into(), cycle.into());
    }
    Ok(v)
}

/// Whether power cuts can be served on `config` (before any work): page-map mapping,
/// integrity versions.
pub fn check_supported(config: &Config) -> Result<(), SimError> {
    ssdlab_core::ftl::power_cut_supported(config)
}
