//! `ssdlab compare A B`: the numeric differences between two runs' results.json, with the
//! relative change, in key order (deterministic).

use anyhow::{Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// First result directory (or results.json).
    a: PathBuf,
    /// Second result directory (or results.json).
    b: PathBuf,
    /// Also list the keys whose values are equal.
    #[arg(long)]
    all: bool,
}

fn load(p: &Path) -> Result<BTreeMap<String, f64>> {
    let file = if p.is_dir() {
        p.join("results.json")
    } else {
        p.to_path_buf()
    };
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
    let mut out = BTreeMap::new();
    flatten("", &v, &mut out);
    Ok(out)
}

/// Numeric leaves by dotted path (array elements by index).
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, f64>) {
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.insert(prefix.to_string(), x);
            }
        }
        Value::Bool(b) => {
            out.insert(prefix.to_string(), *b as u8 as f64);
        }
        Value::Object(m) => m.iter().for_each(|(k, v)| flatten(&key(k), v, out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, v)| flatten(&key(&i.to_string()), v, out)),
        _ => {}
    }
}

/// The comparison as text lines: `key  a  b  change`.
pub fn diff(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>, all: bool) -> Vec<String> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut lines = Vec::new();
    for k in keys {
        let line = match (a.get(k), b.get(k)) {
            (Some(x), Some(y)) if x == y && !all => continue,
            (Some(x), Some(y)) if *x == 0.0 => format!("{k}  {x}  {y}  (from 0)"),
            (Some(x), Some(y)) => format!("{k}  {x}  {y}  {:+.2} %", 100.0 * (y - x) / x.abs()),
            (Some(x), None) => format!("{k}  {x}  -  (only in A)"),
            (None, Some(y)) => format!("{k}  -  {y}  (only in B)"),
            (None, None) => continue,
        };
        lines.push(line);
    }
    lines
}

pub fn run(args: &Args) -> Result<()> {
    let (a, b) = (load(&args.a)?, load(&args.b)?);
    let lines = diff(&a, &b, args.all);
    println!(
        "key  A  B  change (A = {}, B = {})",
        args.a.display(),
        args.b.display()
    );
    for l in &lines {
        println!("{l}");
    }
    if lines.is_empty() {
        println!("(no numeric differences)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_changes_and_missing_keys() {
        let mut a = BTreeMap::new();
        let mut b = BTreeMap::new();
        flatten(
            "",
            &serde_json::json!({"waf": 2.0, "x": {"n": 0, "same": 1}, "v": [1]}),
            &mut a,
        );
        flatten(
            "",
            &serde_json::json!({"waf": 3.0, "x": {"n": 5, "same": 1}}),
            &mut b,
        );
        assert_eq!(
            diff(&a, &b, false),
            vec![
                "v.0  1  -  (only in A)".to_string(),
                "waf  2  3  +50.00 %".to_string(),
                "x.n  0  5  (from 0)".to_string(),
            ]
        );
        assert_eq!(diff(&a, &b, true).len(), 4);
    }
}
