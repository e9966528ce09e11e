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

/// A run's results.json: its numeric leaves, and the whole document (for the notes).
fn load(p: &Path) -> Result<(BTreeMap<String, f64>, Value)> {
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
    Ok((out, v))
}

/// What makes the two runs' numbers not like for like: a different mode, or a run that
/// ended early (its figures cover less work).
pub fn notes(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let field = |v: &Value, k: &str| v[k].as_str().unwrap_or("?").to_string();
    let (ma, mb) = (field(a, "mode"), field(b, "mode"));
    if ma != mb {
        out.push(format!(
            "note: the modes differ (A {ma}, B {mb}): latencies and simulated times are not comparable"
        ));
    }
    for (name, v) in [("A", a), ("B", b)] {
        let status = field(v, "status");
        if status != "completed" {
            out.push(format!(
                "note: {name} did not complete (status {status}): its figures cover a shorter run"
            ));
        }
    }
    out
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
    let ((a, ja), (b, jb)) = (load(&args.a)?, load(&args.b)?);
    let lines = diff(&a, &b, args.all);
    for n in notes(&ja, &jb) {
        println!("{n}");
    }
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

    #[test]
    fn notes_when_modes_differ_or_a_run_ended_early() {
        let run = |mode: &str, status: &str| serde_json::json!({"mode": mode, "status": status});
        let same = run("timed", "completed");
        assert!(notes(&same, &same).is_empty());
        let n = notes(&same, &run("functional", "worn_out"));
        assert_eq!(n.len(), 2, "{n:?}");
        assert!(
            n[0].contains("modes differ (A timed, B functional)"),
            "{n:?}"
        );
        assert!(
            n[1].contains("B did not complete (status worn_out)"),
            "{n:?}"
        );
    }
}
