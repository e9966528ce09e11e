//! `ssdlab doc-tables [NAME…] [--check] [--fast] [--root DIR] [--list]` (hidden, for
//! maintainers): the documentation's tables of `reproduce` and preset figures, generated
//! from fresh runs of this binary and kept in the docs between `<!-- doc-table NAME -->` and
//! `<!-- /doc-table NAME -->`, so they cannot go stale unnoticed. Without `--check` the
//! tables are written into the docs; with it a difference is an error naming the doc's line.
//!
//! A table is a section of a `reproduce` report (wall-clock figures left out, headings at
//! `####`) or a table of `ssdlab run` figures.

use anyhow::{bail, Context, Result};
use ssdlab_experiments::experiment;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

#[derive(clap::Args)]
pub struct Args {
    /// Tables to generate (default: every one).
    names: Vec<String>,
    /// Compare the docs with fresh runs instead of writing them.
    #[arg(long)]
    check: bool,
    /// Only the tables that take seconds in a debug build (the CLI tests check these).
    #[arg(long)]
    fast: bool,
    /// The repository (docs/ and configs/).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// List the tables.
    #[arg(long)]
    list: bool,
}

/// Where a table's text comes from.
enum Source {
    /// The report of `ssdlab reproduce EXP`: its lines from the first starting with `from`
    /// up to the first after it starting with `to` (or the end).
    Report {
        exp: &'static str,
        from: &'static str,
        to: Option<&'static str>,
    },
    /// A table of `ssdlab run` figures.
    Runs(fn(&mut Runner) -> Result<String>),
    /// Text generated without a run (the policy lists, from the registry), kept between
    /// its markers without blank lines (so a list stays inside its paragraph's flow).
    Text(fn() -> String),
}

struct Table {
    name: &'static str,
    doc: &'static str,
    fast: bool,
    source: Source,
}

/// Every table: first the experiments' that take seconds, then those of `ssdlab run`
/// figures, then the experiments' slow ones (each experiment names its own tables:
/// [`ssdlab_experiments::experiment::Experiment::DOC_TABLES`]).
fn tables() -> Vec<Table> {
    let reports = |fast: bool| {
        experiment::ALL.iter().flat_map(move |e| {
            e.doc_tables()
                .iter()
                .filter(move |t| t.fast == fast)
                .map(|t| Table {
                    name: t.name,
                    doc: t.doc,
                    fast: t.fast,
                    source: Source::Report {
                        exp: e.name(),
                        from: t.from,
                        to: t.to,
                    },
                })
        })
    };
    let texts = [
        Table {
            name: "policies",
            doc: "docs/config.md",
            fast: true,
            source: Source::Text(crate::policies::markdown),
        },
        Table {
            name: "policy-names",
            doc: "README.md",
            fast: true,
            source: Source::Text(crate::policies::names_markdown),
        },
    ];
    let runs = [
        Table {
            name: "nvme-link",
            doc: "docs/host-interface.md",
            fast: false,
            source: Source::Runs(nvme_link),
        },
        Table {
            name: "calibration",
            doc: "docs/calibration.md",
            fast: false,
            source: Source::Runs(calibration),
        },
        Table {
            name: "turbowrite",
            doc: "docs/calibration.md",
            fast: false,
            source: Source::Runs(turbowrite),
        },
    ];
    texts
        .into_iter()
        .chain(reports(true))
        .chain(runs)
        .chain(reports(false))
        .collect()
}

/// Runs this binary in the repository, keeping each report it wrote.
struct Runner {
    root: PathBuf,
    scratch: PathBuf,
    reports: BTreeMap<&'static str, String>,
    runs: u32,
}

impl Runner {
    /// `ssdlab ARGS… --out DIR -q`, failing with its stderr; DIR.
    fn ssdlab(&mut self, args: &[String]) -> Result<PathBuf> {
        self.runs += 1;
        let out = self.scratch.join(self.runs.to_string());
        let exe = std::env::current_exe().context("finding the ssdlab binary")?;
        let o = Command::new(exe)
            .current_dir(&self.root)
            .args(args)
            .arg("--out")
            .arg(&out)
            .arg("-q")
            .output()
            .context("running ssdlab")?;
        if !o.status.success() {
            let err = String::from_utf8_lossy(&o.stderr);
            bail!("ssdlab {} failed: {err}", args.join(" "));
        }
        Ok(out)
    }

    /// The report `reproduce EXP` writes (EXP.md).
    fn report(&mut self, exp: &'static str) -> Result<String> {
        if !self.reports.contains_key(exp) {
            let dir = self.ssdlab(&["reproduce".into(), exp.into()])?;
            let md = std::fs::read_to_string(dir.join(format!("{exp}.md")))
                .with_context(|| format!("reading the {exp} report"))?;
            self.reports.insert(exp, md);
        }
        Ok(self.reports[exp].clone())
    }

    /// results.json of `run CONFIG --set SETS…`, CONFIG without its `[device.host_interface]`
    /// if not `link`.
    fn run(&mut self, config: &str, sets: &[&str], link: bool) -> Result<serde_json::Value> {
        let mut path = self.root.join(config);
        if !link {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            path = self.scratch.join(format!("no-link-{}.toml", self.runs));
            std::fs::write(&path, without_table(&text, "[device.host_interface]"))?;
        }
        let mut a = vec!["run".to_string(), path.display().to_string()];
        for s in sets {
            a.extend(["--set".to_string(), s.to_string()]);
        }
        let dir = self.ssdlab(&a)?;
        let json = std::fs::read_to_string(dir.join("results.json"))?;
        Ok(serde_json::from_str(&json)?)
    }
}

/// `text` without TOML table `table` (its header line up to the next header).
fn without_table(text: &str, table: &str) -> String {
    let mut skip = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with('[') {
            skip = line.trim() == table;
        }
        if !skip {
            out += line;
            out.push('\n');
        }
    }
    out
}

/// The lines of `md` from the first starting with `from` up to the first after it starting
/// with `to`, without wall-clock figures (lines giving them, table columns headed `wall`),
/// headings at `####`.
fn section(md: &str, from: &str, to: Option<&str>) -> Result<String> {
    let lines: Vec<&str> = md.lines().collect();
    let Some(start) = lines.iter().position(|l| l.starts_with(from)) else {
        bail!("the report has no line starting with {from:?}");
    };
    let end = to
        .and_then(|t| lines[start + 1..].iter().position(|l| l.starts_with(t)))
        .map_or(lines.len(), |i| start + 1 + i);
    let mut out = String::new();
    let mut wall_columns: Option<Vec<usize>> = None; // of the table being copied
    for l in &lines[start..end] {
        if !l.starts_with('|') {
            wall_columns = None;
            if l.contains(" s wall") || l.contains("wall time") {
                continue;
            }
            match l.strip_prefix('#') {
                Some(h) => out += &format!("#### {}\n", h.trim_start_matches('#').trim_start()),
                None => out += &format!("{l}\n"),
            }
            continue;
        }
        let cells: Vec<&str> = l.trim_matches('|').split('|').collect();
        let wall = wall_columns.get_or_insert_with(|| {
            (0..cells.len())
                .filter(|&i| cells[i].trim().starts_with("wall"))
                .collect()
        });
        let kept: Vec<&str> = (0..cells.len())
            .filter(|i| !wall.contains(i))
            .map(|i| cells[i])
            .collect();
        out += &format!("|{}|\n", kept.join("|"));
    }
    Ok(out.trim_matches('\n').to_string() + "\n")
}

/// Nanoseconds as µs below 1 ms, else ms.
fn time(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.0} µs", ns / 1e3)
    }
}

fn num(v: &serde_json::Value, path: &str) -> Result<f64> {
    v.pointer(path)
        .and_then(|x| x.as_f64())
        .with_context(|| format!("results.json has no number at {path}"))
}

/// docs/calibration.md: the preset's read tail (with and without its host link) against the
/// SSR paper's Fig. 1.
fn calibration(r: &mut Runner) -> Result<String> {
    let paper = [100e3, 400e3, 800e3, 9e6, 10e6];
    let mut s = String::from(
        "| read latency | mean | p95 | p99 | p99.99 | p99.999 |\n|---|---:|---:|---:|---:|---:|\n| paper (Fig. 1) | 100 µs | 400 µs | 800 µs | 9 ms | > 10 ms |\n",
    );
    let mut ratios = String::new();
    let mut notes = Vec::new();
    for link in [true, false] {
        let v = r.run("configs/nvme-pcie3-tlc.toml", &[], link)?;
        let ours: Vec<f64> = ["mean", "p95", "p99", "p99_99", "p99_999"]
            .iter()
            .map(|k| num(&v, &format!("/latency_ns/read/{k}")))
            .collect::<Result<_>>()?;
        let cells: Vec<String> = ours.iter().map(|&x| time(x)).collect();
        let label = if link {
            "this preset"
        } else {
            "without its host link"
        };
        s += &format!(
            "| {label} (seed 1, {:.2} M reads) | {} |\n",
            num(&v, "/latency_ns/read/count")? / 1e6,
            cells.join(" | ")
        );
        if link {
            let r: Vec<String> = ours
                .iter()
                .zip(paper)
                .map(|(o, p)| format!("{:.2}", o / p))
                .collect();
            ratios = format!("| ratio (this preset / paper) | {} |\n", r.join(" | "));
        }
        notes.push(format!(
            "{label} {:.2} / {:.0}k / {}",
            num(&v, "/waf")?,
            num(&v, "/host/iops")? / 1e3,
            time(num(&v, "/latency_ns/read/p99_9")?)
        ));
    }
    Ok(format!(
        "{s}{ratios}\nWAF / IOPS / read p99.9: {}.\n",
        notes.join("; ")
    ))
}

/// docs/host-interface.md: the nvme preset's reads with and without its host link.
fn nvme_link(r: &mut Runner) -> Result<String> {
    let rows: [(&str, &[&str]); 4] = [
        (
            "128 KiB random, QD32",
            &["block_size_bytes=131072", "queue_depth=32"],
        ),
        (
            "128 KiB sequential, QD32",
            &[
                "block_size_bytes=131072",
                "queue_depth=32",
                "pattern=\"sequential\"",
            ],
        ),
        (
            "4 KiB random, QD32",
            &["block_size_bytes=4096", "queue_depth=32"],
        ),
        (
            "4 KiB random, QD128",
            &["block_size_bytes=4096", "queue_depth=128"],
        ),
    ];
    let mut s = String::from(
        "| 100 % reads, 100,000 requests, preconditioned | without the link | with the link |\n|---|---|---|\n",
    );
    for (label, sets) in rows {
        let sets: Vec<String> = ["read_percent=100", "requests=100000"]
            .iter()
            .chain(sets)
            .map(|k| format!("workload.{k}"))
            .collect();
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let mut cells = Vec::new();
        for link in [false, true] {
            let v = r.run("configs/nvme-pcie3-tlc.toml", &sets, link)?;
            let mut c = format!(
                "{:.0} MB/s, {:.0}K IOPS, mean {}",
                num(&v, "/host/mb_per_s")?,
                num(&v, "/host/iops")? / 1e3,
                time(num(&v, "/latency_ns/read/mean")?)
            );
            if link {
                let up = num(&v, "/host_interface/up/utilization")?;
                c += &format!(" (link up {:.1} % busy)", up * 100.0);
            }
            cells.push(c);
        }
        s += &format!("| {label} | {} |\n", cells.join(" | "));
    }
    Ok(s)
}

/// docs/calibration.md: the nvme preset's SLC cache (TurboWrite) under 128 KiB sequential
/// writes at QD32 on the fresh device: write MB/s by 0.5 GB written (a 20 ms time series),
/// the cache's phase and the TLC phase against the 970 EVO Plus 1 TB's figures.
fn turbowrite(r: &mut Runner) -> Result<String> {
    let mut a = vec!["run".to_string(), "configs/nvme-pcie3-tlc.toml".to_string()];
    for s in [
        "precondition.enabled=false",
        "workload.read_percent=0",
        "workload.block_size_bytes=131072",
        "workload.queue_depth=32",
        "workload.pattern=\"sequential\"",
        "workload.requests=48000",
        "output.timeseries_interval_ns=20000000",
    ] {
        a.extend(["--set".to_string(), s.to_string()]);
    }
    let dir = r.ssdlab(&a)?;
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json"))?)?;
    let size = num(&v, "/journal/slc_cache/size_bytes")?;
    let cached = num(&v, "/journal/slc_cache/cached_bytes")?;
    let csv = std::fs::read_to_string(dir.join("timeseries.csv"))?;
    // (GB written by the row's end, MB/s in it) per row.
    let (mut gb, mut prev) = (0.0, 0.0);
    let mut rows = Vec::new();
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let t: f64 = f[0].parse()?;
        let mbs: f64 = f[5].parse()?;
        gb += mbs * (t - prev) / 1e9 / 1e3;
        prev = t;
        rows.push((gb, mbs));
    }
    let mean = |lo: f64, hi: f64| {
        let v: Vec<f64> = rows
            .iter()
            .filter(|(g, _)| *g > lo && *g <= hi)
            .map(|r| r.1)
            .collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let buffer = 64.0 * 1048576.0 / 1e9;
    let (fast, slow) = (
        mean(0.0, 0.9 * size / 1e9),
        mean(cached / 1e9 + 2.0 * buffer, gb),
    );
    let mut s = String::from("| GB written | 0.5 | 1.0 | 1.5 | 2.0 | 2.5 | 3.0 | 3.5 | 4.0 | 4.5 | 5.0 | 5.5 | 6.0 |\n|---|");
    s += &"---:|".repeat(12);
    s += "\n| MB/s in the 20 ms to it |";
    for k in 1..=12 {
        let at = 0.5 * k as f64;
        let m = rows.iter().find(|(g, _)| *g >= at).map_or(0.0, |r| r.1);
        s += &format!(" {m:.0} |");
    }
    s += &format!(
        "\n\nCache size {:.2} GB (static + dynamic on the fresh device), {:.2} GB taken (whole SLC blocks); \
         while it lasts {fast:.0} MB/s (the drive: 3,300; target ≥ 2,800), after it {slow:.0} MB/s \
         (the drive: 1,700; target 1,400–2,000).\n",
        size / 1e9,
        cached / 1e9
    );
    Ok(s)
}

/// The text table `t` has now.
fn generate(t: &Table, r: &mut Runner) -> Result<String> {
    match t.source {
        Source::Report { exp, from, to } => section(&r.report(exp)?, from, to),
        Source::Runs(f) => f(r),
        Source::Text(f) => Ok(f()),
    }
}

/// Where table `name`'s text lies in `doc`: between the end of its opening marker and the
/// start of its closing one.
fn find(doc: &str, name: &str) -> Option<(usize, usize)> {
    let open = format!("<!-- doc-table {name} -->");
    let a = doc.find(&open)? + open.len();
    let b = a + doc[a..].find(&format!("<!-- /doc-table {name} -->"))?;
    Some((a, b))
}

pub fn run(a: &Args) -> Result<()> {
    let tables = tables();
    if a.list {
        for t in &tables {
            let speed = if t.fast { "fast" } else { "slow" };
            println!("{:<12} {:<24} {speed}", t.name, t.doc);
        }
        return Ok(());
    }
    for n in &a.names {
        if !tables.iter().any(|t| t.name == n) {
            let all: Vec<&str> = tables.iter().map(|t| t.name).collect();
            bail!("no doc table {n:?}; the tables: {}", all.join(", "));
        }
    }
    let mut chosen = tables.iter().filter(|t| {
        (a.names.is_empty() || a.names.iter().any(|n| n == t.name)) && (t.fast || !a.fast)
    });
    let scratch = std::env::temp_dir().join(format!("ssdlab-doc-tables-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let mut runner = Runner {
        root: a.root.clone(),
        scratch: scratch.clone(),
        reports: BTreeMap::new(),
        runs: 0,
    };
    let mut stale = Vec::new();
    let result = chosen.try_for_each(|t| one(t, a.check, &mut runner).map(|s| stale.extend(s)));
    let _ = std::fs::remove_dir_all(&scratch);
    result?;
    if !stale.is_empty() {
        bail!("{}", stale.join("\n"));
    }
    Ok(())
}

/// Generate table `t`; write it into its doc, or with `check` say where the doc differs.
fn one(t: &Table, check: bool, runner: &mut Runner) -> Result<Option<String>> {
    let path = runner.root.join(t.doc);
    let read = || {
        let doc = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        match find(&doc, t.name) {
            Some((s, e)) => Ok((doc, s, e)),
            None => bail!(
                "{}: no `<!-- doc-table {1} -->` … `<!-- /doc-table {1} -->` around table {1}",
                t.doc,
                t.name
            ),
        }
    };
    read()?; // the markers are there before the runs
    let started = std::time::Instant::now();
    // A blank line on either side: the markers stay HTML blocks of their own (a comment
    // line ends its HTML block, so generated text needs none).
    let fresh = match t.source {
        Source::Text(_) => format!("\n{}", generate(t, runner)?),
        _ => format!("\n\n{}\n", generate(t, runner)?),
    };
    let secs = started.elapsed().as_secs_f64();
    let (doc, s, e) = read()?; // as it is now (edited during the runs?)
    if doc[s..e] == fresh {
        eprintln!("doc table {}: up to date ({}, {secs:.1} s)", t.name, t.doc);
        return Ok(None);
    }
    if check {
        let old: Vec<&str> = doc[s..e].lines().collect();
        let new: Vec<&str> = fresh.lines().collect();
        let differ: Vec<usize> = (0..old.len().max(new.len()))
            .filter(|&i| old.get(i) != new.get(i))
            .collect();
        let i = differ.first().copied().unwrap_or(0); // none: line endings only
        return Ok(Some(format!(
            "{}:{}: table {} is stale, {} of its lines differ (regenerate: ssdlab doc-tables {2})\n  doc:   {}\n  fresh: {}",
            t.doc,
            doc[..s].lines().count() + i,
            t.name,
            differ.len(),
            old.get(i).unwrap_or(&""),
            new.get(i).unwrap_or(&"")
        )));
    }
    std::fs::write(&path, format!("{}{fresh}{}", &doc[..s], &doc[e..]))
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("doc table {}: written into {} ({secs:.1} s)", t.name, t.doc);
    Ok(None)
}
