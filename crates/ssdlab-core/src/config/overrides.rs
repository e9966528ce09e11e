//! `key=value` overrides of a configuration's TOML text (dotted keys; the value in TOML
//! syntax, or a bare string), shared by `ssdlab run --set`, `sweep`, `reproduce --set`.

use crate::error::{Result, SimError};

/// `text` with every `key=value` of `sets` applied, as TOML text.
pub fn apply_overrides(text: &str, sets: &[String]) -> Result<String> {
    let mut table: toml::Table = text
        .parse()
        .map_err(|e| SimError::config("--set", format!("the base config does not parse: {e}")))?;
    for s in sets {
        apply(&mut table, s)?;
    }
    toml::to_string(&table).map_err(|e| SimError::config("--set", e.to_string()))
}

fn apply(table: &mut toml::Table, set: &str) -> Result<()> {
    let bad = |why: String| SimError::config(format!("--set {set}"), why);
    let Some((key, raw)) = set.split_once('=') else {
        return Err(bad(
            "expected key=value (e.g. ftl.gc_soft_free_blocks=8)".into()
        ));
    };
    let (key, raw) = (key.trim(), raw.trim());
    let path: Vec<&str> = key.split('.').collect();
    if path.iter().any(|p| p.is_empty()) {
        return Err(bad(format!("empty part in the dotted key `{key}`")));
    }
    let mut t = table;
    for (i, part) in path[..path.len() - 1].iter().enumerate() {
        let entry = t
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        t = match entry {
            toml::Value::Table(inner) => inner,
            _ => {
                return Err(bad(format!(
                    "`{}` is a value, not a table",
                    path[..=i].join(".")
                )))
            }
        };
    }
    let value = parse_value(raw).map_err(bad)?;
    t.insert(path[path.len() - 1].to_string(), value);
    Ok(())
}

/// A TOML value (`8`, `0.07`, `true`, `"x"`, `{ policy = "bet" }`, `[1, 2]`) or, failing
/// that, the raw text as a string (`ftl.gc.policy=greedy`) — unless it starts as a table,
/// an array or a quoted string, which must then be one.
fn parse_value(raw: &str) -> std::result::Result<toml::Value, String> {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => Ok(t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.into()))),
        Err(e) if raw.starts_with(['{', '[', '"', '\'']) => {
            // The parser's report without its excerpt of the one-line text `v = …`.
            let why: Vec<String> = e
                .to_string()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.contains('|') && !l.starts_with("TOML parse error"))
                .map(String::from)
                .collect();
            let why = if why.is_empty() {
                "it ends before the value does".to_string()
            } else {
                why.join("; ")
            };
            Err(format!("`{raw}` is not a TOML value: {why}"))
        }
        Err(_) => Ok(toml::Value::String(raw.to_string())),
    }
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
        // A value that starts as a table but is not one is an error, not a string.
        let e = apply(&mut t, "ftl.gc={ policy =").unwrap_err().to_string();
        assert!(e.contains("is not a TOML value"), "{e}");
    }
}
