//! `--set key=value` overrides for `run` and `sweep`: applied after the file itself has
//! been checked, so the file's own errors keep their lines.

use anyhow::Result;
use ssdlab_core::config::apply_overrides;
use ssdlab_core::Config;
use std::path::Path;

/// Load `path` and apply `sets` (`a.b.c=value`, value in TOML syntax or a bare string).
pub fn load(path: &Path, sets: &[String]) -> Result<Config> {
    let cfg = Config::from_file(path)?;
    if sets.is_empty() {
        return Ok(cfg);
    }
    let text = apply_overrides(&std::fs::read_to_string(path)?, sets)?;
    let label = format!("{} with --set {}", path.display(), sets.join(" --set "));
    Ok(Config::from_toml_str(&text, &label)?)
}

/// `cfg` with `sets` applied (for experiments whose base config is built in code).
pub fn apply(cfg: &Config, sets: &[String], label: &str) -> Result<Config> {
    if sets.is_empty() {
        return Ok(cfg.clone());
    }
    let text = apply_overrides(&cfg.to_toml_string(), sets)?;
    Ok(Config::from_toml_str(
        &text,
        &format!("{label} with --set {}", sets.join(" --set ")),
    )?)
}
