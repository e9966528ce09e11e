//! `ssdlab sweep CONFIG --grid key=v1,v2 … [--set key=v] [--out DIR]`: the cartesian
//! product of the grids, every point a full run (precondition + workload) on all cores,
//! one row per point in `DIR/sweep.csv`; each point keeps its results in
//! `DIR/points/<n>/` with `point.json` (a digest of its resolved configuration and input
//! file), and a re-run reuses a finished point only when that digest is the same
//! (resumable). A point that fails (invalid value, failed run) is a row with status
//! `failed` and its `error`; the others run, and the exit status says which failed.

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use ssdlab_core::{Config, NoProgress};
use ssdlab_experiments::run::{
    self, sweep_headline, Checked, ConfigSource, RunOptions, SWEEP_HEADLINE as HEADLINE,
};
use std::collections::BTreeMap;
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
    /// Output directory (default: out/sweep-CONFIG_NAME, the config file's name).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Points run at once (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// No per-point progress lines (a failed point is still reported).
    #[arg(long, short)]
    quiet: bool,
    /// Run points whose device needs more memory than the machine has available.
    #[arg(long)]
    allow_large_memory: bool,
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

/// Why a point's results may be reused: a digest of everything its results depend on.
/// BLAKE3 (a well-kept crate, stable across Rust versions and platforms, unlike std's
/// SipHash; it streams a GB-sized trace in about a second) over the ssdlab version, the
/// fully resolved configuration (every default filled in, the seed, the derived values)
/// and the content of the workload's input file (trace or fio job file; neither format
/// includes other files).
fn point_digest(resolved_toml: &str, input: Option<&(PathBuf, String)>) -> String {
    let mut h = blake3::Hasher::new();
    for part in [
        // v2: the headline row gained the user's columns (a v1 row would not fit).
        "ssdlab sweep point v2",
        env!("CARGO_PKG_VERSION"),
        resolved_toml,
        input.map_or("", |(_, d)| d.as_str()),
    ] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().to_hex().to_string()
}

/// The workload's input file (trace or fio job file) as the run resolves it.
fn input_file(cfg: &Config, base_dir: Option<&Path>) -> Option<PathBuf> {
    let path = cfg.workload.input_path()?;
    Some(match base_dir {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.clone(),
    })
}

/// The BLAKE3 digest of a file's content, streamed.
fn file_digest(path: &Path) -> Result<String> {
    let f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut h = blake3::Hasher::new();
    h.update_reader(std::io::BufReader::with_capacity(1 << 20, f))
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(h.finalize().to_hex().to_string())
}

/// A point ready to run: its checked configuration and digest.
struct Ready {
    checked: Checked,
    digest: String,
}

/// `point.json`: what a finished point was run from.
#[derive(serde::Serialize, serde::Deserialize)]
struct PointMeta {
    /// The point's `--grid` values (for people; the digest decides reuse).
    tag: String,
    digest: String,
}

/// The headline row of a finished point in `dir` run from `digest`, if there is one.
fn finished(dir: &Path, digest: &str) -> Option<String> {
    let meta: PointMeta =
        serde_json::from_str(&std::fs::read_to_string(dir.join("point.json")).ok()?).ok()?;
    if meta.digest != digest {
        return None;
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).ok()?).ok()?;
    if v["audit"]["verdict"] == "internal_error" {
        return None; // its figures cannot be: run it again (and fail again, loudly)
    }
    v["sweep_row"].as_str().map(str::to_string)
}

/// Remove `p` (a directory) if it exists.
fn remove_dir(p: &Path) -> Result<()> {
    match std::fs::remove_dir_all(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", p.display()))
        }
        _ => Ok(()),
    }
}

/// Run one point (or reuse its finished results): its CSV row tail and whether it was
/// reused. The results are written into `<dir>.partial` and renamed to `dir` when complete,
/// so a killed sweep never leaves a point that looks finished.
fn run_point(dir: &Path, ready: &Ready, tag: &str) -> Result<(String, bool)> {
    if let Some(row) = finished(dir, &ready.digest) {
        return Ok((row, true));
    }
    let tmp = dir.with_extension("partial");
    remove_dir(&tmp)?;
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    // The one run sequence `ssdlab run` uses (its checks were made before any point ran).
    let r = match ready.checked.run(&mut NoProgress, None) {
        Ok(o) => o.results,
        Err(e) => {
            remove_dir(&tmp)?;
            bail!(e)
        }
    };
    let row = sweep_headline(&r);
    let mut v = serde_json::to_value(&r)?;
    v["sweep_row"] = serde_json::Value::String(row.clone());
    std::fs::write(
        tmp.join("results.json"),
        serde_json::to_string_pretty(&v)? + "\n",
    )?;
    let meta = PointMeta {
        tag: tag.to_string(),
        digest: ready.digest.clone(),
    };
    std::fs::write(
        tmp.join("point.json"),
        serde_json::to_string_pretty(&meta)? + "\n",
    )?;
    remove_dir(dir)?;
    std::fs::rename(&tmp, dir)
        .with_context(|| format!("renaming {} to {}", tmp.display(), dir.display()))?;
    // Figures that cannot be: the point's results stay, marked; the point fails.
    if let Some(e) = r.audit.internal_error() {
        bail!(e)
    }
    Ok((row, false))
}

/// Remove what an earlier sweep into `points` left that is not a point of this grid
/// (`n >= count`) or never finished (`*.partial`): nothing there may look current.
fn prune_points(points: &Path, count: usize) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(points) else {
        return Ok(());
    };
    for e in entries {
        let e = e.with_context(|| format!("listing {}", points.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let stale = name.ends_with(".partial") || name.parse::<usize>().is_ok_and(|n| n >= count);
        if stale {
            remove_dir(&e.path())?;
        }
    }
    Ok(())
}

/// Write `text` to `path` through a temporary file renamed over it.
fn write_atomic(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let tmp = path.with_extension("partial");
    write(&tmp)?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

pub fn run(a: &Args) -> Result<()> {
    // Malformed input (grid syntax, an unreadable or unparsable base configuration, a
    // malformed override) is an error before anything runs; a point whose configuration
    // or workload is invalid fails alone (status `failed`, its `error`).
    let (keys, pts) = points(&a.grids)?;
    let base = ConfigSource::from_file(&a.config, &a.sets)?;
    Config::from_toml_str(&base.text, &base.label)?;
    let srcs: Vec<ConfigSource> = pts
        .iter()
        .map(|p| ConfigSource {
            grid: keys
                .iter()
                .zip(p)
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
            ..base.clone()
        })
        .collect();
    for s in &srcs {
        s.overridden_text()?;
    }
    let tags: Vec<String> = srcs
        .iter()
        .map(|s| {
            s.sets
                .iter()
                .chain(&s.grid)
                .cloned()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from("out").join(format!(
            "sweep-{}",
            a.config.file_stem().unwrap_or_default().to_string_lossy()
        ))
    });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    // Until this sweep has finished, no table from an earlier one may look like its own.
    let csv_path = out.join("sweep.csv");
    let pq_path = out.join("sweep.parquet");
    for p in [&csv_path, &pq_path] {
        crate::output::remove_if_present(p)?;
    }
    let points_dir = out.join("points");
    prune_points(&points_dir, pts.len())?;
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
    // Every point checked as `ssdlab run` checks it (the same function: configuration,
    // memory unless --allow-large-memory, workload), before any point runs.
    let opts = RunOptions {
        memory_hint: (!a.allow_large_memory).then(|| "pass --allow-large-memory".into()),
        ..RunOptions::default()
    };
    let checked: Vec<std::result::Result<Checked, String>> =
        pool.install(|| srcs.par_iter().map(|s| run::check(s, &opts)).collect());
    // Each input file is read once, however many points replay it.
    let mut inputs: BTreeMap<PathBuf, std::result::Result<String, String>> = BTreeMap::new();
    for c in checked.iter().flatten() {
        if let Some(p) = input_file(&c.config, base.base_dir.as_deref()) {
            if let std::collections::btree_map::Entry::Vacant(e) = inputs.entry(p) {
                let d = file_digest(e.key()).map_err(|e| format!("{e:#}"));
                e.insert(d);
            }
        }
    }
    let ready: Vec<std::result::Result<Ready, String>> = checked
        .into_iter()
        .map(|c| {
            let checked = c?;
            let input = match input_file(&checked.config, base.base_dir.as_deref()) {
                Some(p) => Some((p.clone(), inputs[&p].clone()?)),
                None => None,
            };
            let digest = point_digest(&checked.resolved_toml(), input.as_ref());
            Ok(Ready { checked, digest })
        })
        .collect();
    let outcomes: Vec<std::result::Result<String, String>> = pool.install(|| {
        ready
            .par_iter()
            .enumerate()
            .with_max_len(1)
            .map(|(i, r)| {
                let dir = points_dir.join(i.to_string());
                let tag = &tags[i];
                let outcome = match r {
                    Err(e) => remove_dir(&dir)
                        .map_err(|x| format!("{x:#}"))
                        .and(Err(e.clone())),
                    Ok(r) => run_point(&dir, r, tag).map_err(|e| format!("{e:#}")),
                };
                match &outcome {
                    // Ctrl-C: the sweep ends without a table (below); no per-point noise.
                    _ if crate::interrupt::received().is_some() => {}
                    Ok((_, reused)) if !a.quiet => eprintln!(
                        "  point {i} {}: {tag}",
                        if *reused { "reused" } else { "done" }
                    ),
                    Err(e) => eprintln!("  point {i} failed: {tag}: {e}"),
                    _ => {}
                }
                outcome.map(|(row, _)| row)
            })
            .collect()
    });
    if crate::interrupt::received().is_some() {
        // Some points stopped part-way: a table now would look complete. The finished
        // points stay in `points/`, and a re-run reuses them.
        bail!("interrupted");
    }
    let failed_cells = vec![""; HEADLINE.split(',').count() - 1].join(",");
    let tail = |o: &std::result::Result<String, String>| match o {
        Ok(row) => (format!("{row},"), String::new()),
        Err(e) => (format!("failed,{failed_cells},"), e.clone()),
    };
    let mut csv = String::from("point,");
    for k in &keys {
        csv += &csv_field(k);
        csv.push(',');
    }
    csv += HEADLINE;
    csv += ",error\n";
    for (i, (p, o)) in pts.iter().zip(&outcomes).enumerate() {
        csv += &format!("{i},");
        for v in p {
            csv += &csv_field(v);
            csv.push(',');
        }
        let (row, err) = tail(o);
        csv += &row;
        csv += &csv_field(&err);
        csv.push('\n');
    }
    write_atomic(&csv_path, |tmp| {
        std::fs::write(tmp, &csv).with_context(|| format!("writing {}", tmp.display()))
    })?;
    // The same table, typed, for pandas / Arrow (the columns of the Python sweep's
    // DataFrame: `error` last).
    let header: Vec<String> = std::iter::once("point".to_string())
        .chain(keys.iter().cloned())
        .chain(HEADLINE.split(',').map(str::to_string))
        .chain(std::iter::once("error".to_string()))
        .collect();
    let table: Vec<Vec<String>> = pts
        .iter()
        .zip(&outcomes)
        .enumerate()
        .map(|(i, (p, o))| {
            let (row, err) = tail(o);
            std::iter::once(i.to_string())
                .chain(p.iter().cloned())
                .chain(row.trim_end_matches(',').split(',').map(str::to_string))
                .chain(std::iter::once(err))
                .collect()
        })
        .collect();
    let status_col = keys.len() + 1;
    let error_col = header.len() - 1;
    write_atomic(&pq_path, |tmp| {
        crate::parquet_out::write(tmp, &header, &table, &|c| {
            (1..=status_col).contains(&c) || c == error_col
        })
    })?;
    println!(
        "wrote {} and {} ({} points)",
        csv_path.display(),
        pq_path.display(),
        pts.len()
    );
    let failed: Vec<String> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.is_err())
        .map(|(i, _)| i.to_string())
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} of {} points failed (point {}): status `failed`, the reason in the `error` column of {}",
            failed.len(),
            pts.len(),
            failed.join(", "),
            csv_path.display()
        );
    }
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
