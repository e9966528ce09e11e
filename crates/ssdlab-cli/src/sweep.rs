//! `ssdlab sweep CONFIG --grid key=v1,v2 … [--set key=v] [--out DIR]`: the cartesian
//! product of the grids, every point a full run (precondition + workload) on all cores,
//! one row per point in `DIR/sweep.csv`; each point keeps its results in
//! `DIR/points/<n>/`, and a re-run skips the points already finished (resumable).

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use ssdlab_core::{Config, NoProgress, Simulation};
use ssdlab_experiments::run::{sweep_headline, ConfigSource, SWEEP_HEADLINE as HEADLINE};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Base configuration file (TOML).
    config: PathBuf,
    /// A swept key and its values: `ftl.gc_soft_free_blocks=2,4,8`; values are TOML (a
    /// comma inside `{…}`, `[…]` or quotes does not split); repeatable (cartesian product).
    #[arg(long = "grid", value_name = "KEY=V1,V2,…", required = true)]
    grids: Vec<String>,
    /// Fixed overrides applied to every point (as `run --set`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Output directory (default: out/sweep-<config name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Points run at once (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// No per-point progress lines.
    #[arg(long, short)]
    quiet: bool,
}

/// Split `v1,v2,…` at top-level commas.
fn split_values(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth, mut quote) = (Vec::new(), String::new(), 0i32, None);
    for ch in s.chars() {
        match (ch, quote) {
            ('"' | '\'', None) => quote = Some(ch),
            (c, Some(q)) if c == q => quote = None,
            ('{' | '[', None) => depth += 1,
            ('}' | ']', None) => depth -= 1,
            (',', None) if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur.trim().to_string());
    out
}

/// The points: one `key=value` list per combination, the last grid varying fastest.
fn points(grids: &[String]) -> Result<(Vec<String>, Vec<Vec<String>>)> {
    let mut keys = Vec::new();
    let mut pts: Vec<Vec<String>> = vec![Vec::new()];
    for g in grids {
        let Some((key, vals)) = g.split_once('=') else {
            bail!("--grid {g}: expected key=v1,v2,…");
        };
        let vals = split_values(vals);
        if vals.iter().any(|v| v.is_empty()) {
            bail!("--grid {g}: empty value");
        }
        keys.push(key.trim().to_string());
        pts = pts
            .into_iter()
            .flat_map(|p| {
                vals.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push(v.clone());
                    q
                })
            })
            .collect();
    }
    Ok((keys, pts))
}

fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

/// Run one point (or reuse its finished results) and return its CSV row tail.
fn run_point(dir: &Path, cfg: &Config, base_dir: Option<PathBuf>, tag: &str) -> Result<String> {
    let done = dir.join("results.json");
    let point_file = dir.join("point.txt");
    if done.exists() && std::fs::read_to_string(&point_file).ok().as_deref() == Some(tag) {
        let text = std::fs::read_to_string(&done)?;
        let v: serde_json::Value = serde_json::from_str(&text)?;
        return Ok(v["sweep_row"].as_str().unwrap_or_default().to_string());
    }
    std::fs::create_dir_all(dir)?;
    let mut sim = Simulation::new(cfg.clone())?;
    sim.base_dir = base_dir;
    sim.precondition(&mut NoProgress)?;
    let r = sim.run_workload(&mut NoProgress)?;
    let row = sweep_headline(&r);
    let mut v = serde_json::to_value(&r)?;
    v["sweep_row"] = serde_json::Value::String(row.clone());
    std::fs::write(&done, serde_json::to_string_pretty(&v)? + "\n")?;
    std::fs::write(&point_file, tag)?;
    Ok(row)
}

pub fn run(a: &Args) -> Result<()> {
    let (keys, pts) = points(&a.grids)?;
    // Every point's configuration is checked before anything runs.
    let mut cfgs = Vec::new();
    for p in &pts {
        let mut sets = a.sets.clone();
        sets.extend(keys.iter().zip(p).map(|(k, v)| format!("{k}={v}")));
        let cfg = ConfigSource::from_file(&a.config, &sets)?.load()?;
        cfg.validate()
            .with_context(|| format!("point {}", sets.join(" ")))?;
        cfgs.push((cfg, sets.join(" ")));
    }
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from("out").join(format!(
            "sweep-{}",
            a.config.file_stem().unwrap_or_default().to_string_lossy()
        ))
    });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.jobs.unwrap_or(0))
        .build()
        .context("--jobs: cannot start the worker threads")?;
    if !a.quiet {
        eprintln!(
            "sweep: {} points on {} threads -> {}",
            pts.len(),
            pool.current_num_threads(),
            out.display()
        );
    }
    let base_dir = a.config.parent().map(Path::to_path_buf);
    let rows = pool.install(|| {
        cfgs.par_iter()
            .enumerate()
            .map(|(i, (cfg, tag))| {
                let dir = out.join("points").join(i.to_string());
                let row = run_point(&dir, cfg, base_dir.clone(), tag)
                    .with_context(|| format!("point {i}: {tag}"))?;
                if !a.quiet {
                    eprintln!("  point {i} done: {tag}");
                }
                Ok(row)
            })
            .collect::<Result<Vec<String>>>()
    })?;
    let mut csv = String::from("point,");
    for k in &keys {
        csv += &csv_field(k);
        csv.push(',');
    }
    csv += HEADLINE;
    csv.push('\n');
    for (i, (p, row)) in pts.iter().zip(&rows).enumerate() {
        csv += &format!("{i},");
        for v in p {
            csv += &csv_field(v);
            csv.push(',');
        }
        csv += row;
        csv.push('\n');
    }
    let path = out.join("sweep.csv");
    std::fs::write(&path, &csv).with_context(|| format!("writing {}", path.display()))?;
    // The same table, typed, for pandas / Arrow.
    let header: Vec<String> = std::iter::once("point".to_string())
        .chain(keys.iter().cloned())
        .chain(std::iter::once("status".to_string()))
        .chain(HEADLINE.split(',').skip(1).map(str::to_string))
        .collect();
    let table: Vec<Vec<String>> = pts
        .iter()
        .zip(&rows)
        .enumerate()
        .map(|(i, (p, row))| {
            std::iter::once(i.to_string())
                .chain(p.iter().cloned())
                .chain(row.split(',').map(str::to_string))
                .collect()
        })
        .collect();
    let pq = out.join("sweep.parquet");
    crate::parquet_out::write(&pq, &header, &table, keys.len() + 1)?;
    println!(
        "wrote {} and {} ({} points)",
        path.display(),
        pq.display(),
        pts.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_values_split_at_top_level_commas_and_multiply() {
        assert_eq!(
            split_values(r#"{ policy = "d-choices", d = 4 },{ policy = "greedy" }, "a,b""#),
            vec![
                r#"{ policy = "d-choices", d = 4 }"#,
                r#"{ policy = "greedy" }"#,
                r#""a,b""#
            ]
        );
        let (keys, pts) = points(&["a=1,2".into(), "b=x,y,z".into()]).unwrap();
        assert_eq!(keys, vec!["a", "b"]);
        assert_eq!(pts.len(), 6);
        assert_eq!(pts[1], vec!["1", "y"]);
        assert!(points(&["a=1,,2".into()]).is_err());
        assert_eq!(csv_field("x,y"), "\"x,y\"");
    }
}
