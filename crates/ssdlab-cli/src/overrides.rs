//! `--set key=value` overrides: dotted keys into the configuration's TOML tables, applied
//! after the file itself has been checked (so the file's own errors keep their lines).

use anyhow::{bail, Context, Result};
use ssdlab_core::Config;
use std::path::Path;

/// Load `path` and apply `sets` (`a.b.c=value`, value in TOML syntax or a bare string).
pub fn load(path: &Path, sets: &[String]) -> Result<Config> {
    let cfg = Config::from_file(path)?;
    if sets.is_empty() {
        return Ok(cfg);
    }
    let text = std::fs::read_to_string(path)?;
    let mut table: toml::Table = text
        .parse()
        .with_context(|| format!("{}", path.display()))?;
    for s in sets {
        apply(&mut table, s)?;
    }
    let label = format!("{} with --set {}", path.display(), sets.join(" --set "));
    let text = toml::to_string(&table).context("serialising the overridden config")?;
    Ok(Config::from_toml_str(&text, &label)?)
}

fn apply(table: &mut toml::Table, set: &str) -> Result<()> {
    let Some((key, raw)) = set.split_once('=') else {
        bail!("--set {set}: expected key=value (e.g. ftl.gc_soft_free_blocks=8)");
    };
    let (key, raw) = (key.trim(), raw.trim());
    let path: Vec<&str> = key.split('.').collect();
    if path.iter().any(|p| p.is_empty()) {
        bail!("--set {set}: empty part in the dotted key `{key}`");
    }
    let value = parse_value(raw);
    let mut t = table;
    for (i, part) in path[..path.len() - 1].iter().enumerate() {
        let entry = t
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = match entry {
            toml::Value::Table(inner) => inner,
            _ => bail!(
                "--set {set}: `{}` is a value, not a table",
                path[..=i].join(".")
            ),
        };
    }
    t.insert(path[path.len() - 1].to_string(), value);
    Ok(())
}

/// A TOML value (`8`, `0.07`, `true`, `"x"`, `{ policy = "bet" }`, `[1, 2]`) or, failing
/// that, the raw text as a string (`ftl.gc.policy=greedy`).
fn parse_value(raw: &str) -> toml::Value {
    format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_keys_typed_values_and_bare_strings() {
        let mut t: toml::Table = "[ftl]\ngc_soft_free_blocks = 3\n".parse().unwrap();
        apply(&mut t, "ftl.gc_soft_free_blocks=8").unwrap();
        apply(&mut t, "ftl.gc={ policy = \"d-choices\", d = 4 }").unwrap();
        apply(&mut t, "workload.pattern=zipf").unwrap();
        assert_eq!(t["ftl"]["gc_soft_free_blocks"].as_integer(), Some(8));
        assert_eq!(t["ftl"]["gc"]["d"].as_integer(), Some(4));
        assert_eq!(t["workload"]["pattern"].as_str(), Some("zipf"));
        let e = apply(&mut t, "ftl.gc_soft_free_blocks.x=1").unwrap_err();
        assert!(e.to_string().contains("is a value, not a table"), "{e}");
        assert!(apply(&mut t, "novalue").is_err());
    }
}
