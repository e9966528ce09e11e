//! One run as `ssdlab run` does it, shared by the CLI and the Python binding so both give
//! the same errors and byte-identical files: a configuration source with `--set`
//! overrides (errors name file, line and key), the memory check and the headline row
//! of a sweep point. The output files' text is `ssdlab-output`'s (re-exported here).

use ssdlab_core::config::{apply_overrides, at_key_line, Derived};
use ssdlab_core::sim::stop;
use ssdlab_core::sim::timed::CompletionSink;
use ssdlab_core::{Config, NoProgress, Progress, Results, SimError, Simulation};
use ssdlab_workload::WorkloadError;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The output files' text and the machine's memory, at the path they had before they moved
/// to `ssdlab-output` (shared with `serve`).
pub use ssdlab_output::{
    available_memory_bytes, derived_toml, latency_csv, resolved_toml, results_json, timeseries_csv,
};

/// Requests per flow read before a run (bad trace lines fail before preconditioning).
pub const WORKLOAD_CHECK_REQUESTS: usize = 10_000;

/// A configuration as given: its TOML text, the name errors use for it (a file path), the
/// directory its relative input paths (traces, fio jobs) resolve against, `--set`
/// overrides (`key=value`, value in TOML syntax or a bare string) and, for a point of
/// `ssdlab sweep`, its `--grid` values (applied after `sets`; messages name them `--grid`).
#[derive(Debug, Clone, Default)]
pub struct ConfigSource {
    pub text: String,
    pub label: String,
    pub base_dir: Option<PathBuf>,
    pub sets: Vec<String>,
    pub grid: Vec<String>,
}

impl ConfigSource {
    /// The file at `path` with `sets`; its inputs resolve against its directory.
    pub fn from_file(path: &Path, sets: &[String]) -> Result<ConfigSource, SimError> {
        let text = std::fs::read_to_string(path).map_err(|e| SimError::Io {
            path: path.display().to_string(),
            err: e,
        })?;
        Ok(ConfigSource {
            text,
            label: path.display().to_string(),
            base_dir: path.parent().map(Path::to_path_buf),
            sets: sets.to_vec(),
            grid: Vec::new(),
        })
    }

    /// Every override in the order applied: `sets`, then `grid`.
    fn overrides(&self) -> Vec<String> {
        self.sets.iter().chain(&self.grid).cloned().collect()
    }

    /// Every override as the user typed it: `--set k=v`, `--grid k=v`.
    fn flagged(&self) -> Vec<String> {
        let set = self.sets.iter().map(|s| format!("--set {s}"));
        set.chain(self.grid.iter().map(|g| format!("--grid {g}")))
            .collect()
    }

    /// The text with every override applied. A malformed override is named by its flag.
    pub fn overridden_text(&self) -> Result<String, SimError> {
        let text = apply_overrides(&self.text, &self.sets)?;
        if self.grid.is_empty() {
            return Ok(text);
        }
        // `sets` apply on their own, so an error now is a `--grid` value's.
        apply_overrides(&self.text, &self.overrides()).map_err(|e| match e {
            SimError::Config { key, reason } => SimError::Config {
                key: key.replacen("--set ", "--grid ", 1),
                reason,
            },
            e => e,
        })
    }

    /// Parse the text, then apply the overrides: the text's own errors keep its lines.
    pub fn load(&self) -> Result<Config, SimError> {
        let cfg = Config::from_toml_str(&self.text, &self.label)?;
        if self.sets.is_empty() && self.grid.is_empty() {
            return Ok(cfg);
        }
        let text = self.overridden_text()?;
        let label = format!("{} with {}", self.label, self.flagged().join(" "));
        Config::from_toml_str(&text, &label).map_err(|e| self.override_error(e))
    }

    /// A parse error of the overridden text names the first `--set` (or `--grid`) that
    /// causes it (its lines would count in text the user never saw).
    fn override_error(&self, e: SimError) -> SimError {
        let (all, flagged) = (self.overrides(), self.flagged());
        for n in 1..=all.len() {
            let Ok(text) = apply_overrides(&self.text, &all[..n]) else {
                break;
            };
            if let Err(err) = toml::from_str::<Config>(&text) {
                return SimError::ConfigFile {
                    file: self.label.clone(),
                    reason: format!("{}: {}", flagged[n - 1], err.message().trim()),
                };
            }
        }
        e
    }

    /// The label, or `label (with --set … --grid …)` when overrides changed the text
    /// (lines still count in the file as written; an overridden key has none).
    pub fn effective_label(&self) -> String {
        if self.sets.is_empty() && self.grid.is_empty() {
            self.label.clone()
        } else {
            format!("{} (with {})", self.label, self.flagged().join(" "))
        }
    }

    /// Validate `cfg` (loaded from this source): errors name file, line and key.
    pub fn validated(&self, cfg: &Config) -> Result<Derived, SimError> {
        cfg.validate().map_err(|e| self.at_line(e))
    }

    /// `e` with the file and the line of its key in the file as written (the label names
    /// the overrides); a key only an override gave: the line of its deepest table there.
    fn at_line(&self, e: SimError) -> SimError {
        at_key_line(e, &self.text, &self.effective_label())
    }

    /// A workload error of this configuration, with the file and line of its key; the
    /// input file it names (trace, fio job) unreadable is an error of `workload.path`.
    pub fn workload_error(&self, e: WorkloadError) -> SimError {
        let e = match e {
            WorkloadError::Io { file, err } if self.is_input_file(&file) => {
                WorkloadError::config("path", format!("cannot read {file}: {err}"))
            }
            e => e,
        };
        self.at_line(e.into())
    }

    /// Whether `file` is the workload's input file (`workload.path`) as a run resolves it.
    fn is_input_file(&self, file: &str) -> bool {
        let Ok(cfg) = self.load() else {
            return false;
        };
        let Some(path) = cfg.workload.input_path() else {
            return false;
        };
        let resolved = match &self.base_dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path.clone(),
        };
        resolved.display().to_string() == file
    }
}

/// How [`check`] and [`execute`] run a configuration: the options of `ssdlab run` that
/// change what runs or what is refused. `Default`: the configuration's seed, no memory
/// check (large devices allowed), no request log.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Override the configuration's seed (`--seed`).
    pub seed: Option<u64>,
    /// Trace workloads: malformed lines to skip before one is an error (`--skip-bad-lines`);
    /// an error for other workload kinds.
    pub skip_bad_lines: Option<u64>,
    /// Refuse a device that needs more memory than the machine has available, the message
    /// ending with this hint (how to run it anyway: `pass --allow-large-memory`); `None`
    /// allows it (`--allow-large-memory`).
    pub memory_hint: Option<String>,
    /// The run logs every request (`--request-log`): timed mode only.
    pub request_log: bool,
}

impl RunOptions {
    /// The memory check on, its message ending with `hint`.
    pub fn memory_checked(hint: &str) -> RunOptions {
        RunOptions {
            memory_hint: Some(hint.to_string()),
            ..RunOptions::default()
        }
    }
}

/// A configuration that passed every check [`check`] makes, ready to [`run`](Checked::run).
#[derive(Debug, Clone)]
pub struct Checked {
    /// The configuration, `--seed` and `--skip-bad-lines` applied.
    pub config: Config,
    pub derived: Derived,
    /// The source's label (a file path): failures of the run name it.
    pub label: String,
    /// The directory relative input paths resolve against.
    pub base_dir: Option<PathBuf>,
}

/// What one run produced: the simulation (its configuration, derived values, latency and
/// time series), the results and the wall seconds of building the device, preconditioning
/// and workload.
pub struct Outcome {
    pub sim: Simulation,
    pub results: Results,
    /// Building the simulation: the device's tables, the workload's sources.
    pub setup_wall_s: f64,
    pub precondition_wall_s: f64,
    pub workload_wall_s: f64,
}

impl Outcome {
    /// The configuration as run, its input file (trace, fio job) by absolute path: the
    /// `config.resolved.toml` that re-runs from anywhere.
    pub fn resolved_config(&self) -> Config {
        let mut cfg = self.sim.config.clone();
        absolute_inputs(&mut cfg, self.sim.base_dir.as_deref());
        cfg
    }
}

/// Every check `ssdlab run` makes before any long work, in its order, with its messages
/// (file, line and key): `src` loaded and validated, `--request-log` needing the timed
/// mode, the memory (unless [`RunOptions::memory_hint`] is `None`), `--seed` and
/// `--skip-bad-lines` applied, and the workload's first [`WORKLOAD_CHECK_REQUESTS`]
/// requests per flow read. Nothing large is allocated: a sweep checks all its points first.
pub fn check(src: &ConfigSource, o: &RunOptions) -> Result<Checked, String> {
    let mut cfg = src.load().map_err(|e| e.to_string())?;
    let d = src.validated(&cfg).map_err(|e| e.to_string())?;
    if o.request_log && cfg.mode != ssdlab_core::config::Mode::Timed {
        return Err(format!(
            "{}: --request-log needs mode = \"timed\" (the functional mode has no completion times)",
            src.label
        ));
    }
    if let Some(hint) = &o.memory_hint {
        check_memory(&cfg, &d, &src.label, hint)?;
    }
    if let Some(s) = o.seed {
        cfg.seed = s;
    }
    if let Some(n) = o.skip_bad_lines {
        match &mut cfg.workload {
            ssdlab_workload::WorkloadConfig::Trace(t) => t.skip_bad_lines = n,
            _ => {
                return Err(format!(
                    "--skip-bad-lines applies to trace workloads only ({} has another kind)",
                    src.label
                ))
            }
        }
    }
    let ctx = ssdlab_workload::WorkloadContext {
        logical_bytes: d.logical_bytes,
        unit_bytes: d.geometry.unit_bytes as u64,
        seed: cfg.seed,
        base_dir: src.base_dir.clone(),
        zones: cfg.host_zones(&d),
        placement_ids: cfg.device.fdp.as_ref().map_or(0, |f| f.placement_ids()),
    };
    cfg.workload
        .check_first(&ctx, WORKLOAD_CHECK_REQUESTS)
        .map_err(|e| src.workload_error(e).to_string())?;
    Ok(Checked {
        config: cfg,
        derived: d,
        label: src.label.clone(),
        base_dir: src.base_dir.clone(),
    })
}

impl Checked {
    /// `config.resolved.toml` of this configuration as checked (inputs as written).
    pub fn resolved_toml(&self) -> String {
        resolved_toml(&self.config, &self.derived)
    }

    /// Build the device, precondition it and run the workload, reporting to `progress`
    /// and, with `log`, every completion to it (timed mode). Failures name the label; a
    /// stop requested ([`ssdlab_core::sim::stop`]: Ctrl-C) before or during the run ends
    /// it with [`SimError::Interrupted`]'s message.
    pub fn run(
        &self,
        progress: &mut dyn Progress,
        log: Option<CompletionSink>,
    ) -> Result<Outcome, String> {
        let label = |e: SimError| format!("{}: {e}", self.label);
        stop::check().map_err(label)?;
        let start = Instant::now();
        let mut sim = Simulation::new(self.config.clone()).map_err(label)?;
        sim.base_dir = self.base_dir.clone();
        // The results come back even when their audit finds a bug: the caller writes them
        // marked and reports it ([`ssdlab_core::sim::audit::Audit::internal_error`]).
        sim.audit_strict = false;
        let t0 = Instant::now();
        sim.precondition(progress).map_err(label)?;
        let t1 = Instant::now();
        let results = match log {
            Some(sink) => sim.run_workload_logging(progress, sink),
            None => sim.run_workload(progress),
        }
        .map_err(label)?;
        let t2 = Instant::now();
        Ok(Outcome {
            sim,
            results,
            setup_wall_s: (t0 - start).as_secs_f64(),
            precondition_wall_s: (t1 - t0).as_secs_f64(),
            workload_wall_s: (t2 - t1).as_secs_f64(),
        })
    }
}

/// Figures that cannot be (the results audit found a broken conservation or bound: a
/// bug) as an error naming the configuration `label`; warnings stay in the results. The
/// Python binding raises it (`SsdlabError`), `ssdlab bench` reports no speed from such a
/// run; `ssdlab run` writes the results first, marked.
pub fn audited(label: &str, r: &Results) -> Result<(), String> {
    match r.audit.internal_error() {
        Some(e) => Err(format!("{label}: {e}")),
        None => Ok(()),
    }
}

/// One run as `ssdlab run` does it, from configuration to results: [`check`], then
/// [`Checked::run`] without progress or request log. `ssdlab run`, every point of
/// `ssdlab sweep` and the Python binding's `run` go through [`check`] and
/// [`Checked::run`], so they refuse the same inputs with the same messages.
pub fn execute(src: &ConfigSource, o: &RunOptions) -> Result<Outcome, String> {
    check(src, o)?.run(&mut NoProgress, None)
}

/// An error (naming `label`, ending with `hint`: how to run it anyway) when the device of
/// `cfg` needs more memory than this machine has available.
pub fn check_memory(cfg: &Config, d: &Derived, label: &str, hint: &str) -> Result<(), String> {
    let need = d.estimated_memory_bytes(cfg.integrity);
    match available_memory_bytes() {
        Some(avail) if need > avail => Err(format!(
            "{label}: the device needs about {:.1} GiB of memory (map, reverse map, block state{}), more than the {:.1} GiB this machine has available; shrink it or {hint}",
            need as f64 / (1u64 << 30) as f64,
            if cfg.integrity { ", integrity versions" } else { "" },
            avail as f64 / (1u64 << 30) as f64
        )),
        _ => Ok(()),
    }
}

/// `cfg` with `sets` applied (for experiments whose base config is built in code).
pub fn with_overrides(cfg: &Config, sets: &[String], label: &str) -> Result<Config, SimError> {
    if sets.is_empty() {
        return Ok(cfg.clone());
    }
    let text = apply_overrides(&cfg.to_toml_string(), sets)?;
    Config::from_toml_str(
        &text,
        &format!("{label} with --set {}", sets.join(" --set ")),
    )
}

/// Make the workload's input file (trace or fio job) absolute, relative to `base` (the
/// config's directory), as the run resolved it: the resolved config re-runs from anywhere.
pub fn absolute_inputs(cfg: &mut Config, base: Option<&Path>) {
    let Some(file) = cfg.workload.input_path_mut() else {
        return;
    };
    if file.is_relative() {
        let joined = base.unwrap_or(Path::new("")).join(&*file);
        *file = std::fs::canonicalize(&joined).unwrap_or(joined);
    }
}

/// The results audit's findings as `ssdlab run`'s summary ends with them (and `serve`,
/// `reproduce` print them): a line of counts, then each warning and error.
pub fn audit_lines(a: &ssdlab_core::sim::audit::Audit) -> String {
    use ssdlab_core::sim::audit::Verdict;
    let mut s = String::new();
    let n = |v: Verdict| a.checks.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        s,
        "audit: {} checks, {} passed, {} not applicable, {} warnings, {} errors; data path {:.0} MB/s ({}{})",
        a.checks.len(),
        n(Verdict::Ok),
        n(Verdict::Skipped),
        a.warnings,
        a.errors,
        a.data_path.mb_per_s,
        a.data_path.bound,
        if a.data_path.full_duplex { ", each direction" } else { "" }
    );
    s + &audit_findings(a, "  ")
}

/// Each warning and error of an audit, one a line led by `lead`: `warning (check): …` or
/// `INTERNAL ERROR (check): …`.
pub fn audit_findings(a: &ssdlab_core::sim::audit::Audit, lead: &str) -> String {
    use ssdlab_core::sim::audit::Verdict;
    let mut s = String::new();
    for c in a.findings() {
        let what = if c.verdict == Verdict::Error {
            "INTERNAL ERROR"
        } else {
            "warning"
        };
        let _ = writeln!(
            s,
            "{lead}{what} ({}): {}",
            c.name,
            c.message.as_deref().unwrap_or("")
        );
    }
    s
}

/// The columns of a sweep point's headline row ([`sweep_headline`]): `mb_per_s` and
/// `waf` are the device's (every byte it was sent, NAND writes per byte written to it);
/// `user_mb_per_s`, `host_waf`, `total_waf` the user's, apart from a host layer's own I/O
/// (the host log-structured layer; without one they are `mb_per_s`, 1 and `waf`).
pub const SWEEP_HEADLINE: &str = "status,requests,iops,mb_per_s,user_mb_per_s,waf,host_waf,total_waf,read_p50_ns,read_p99_ns,read_p99_99_ns,write_p99_ns,write_p99_99_ns,gc_victims,erase_stddev,sim_time_ns";

/// One sweep point's headline figures as a CSV row of [`SWEEP_HEADLINE`] (latencies empty
/// in the functional mode).
pub fn sweep_headline(r: &Results) -> String {
    let lat = r.latency_ns.as_ref();
    let f = |x: Option<u64>| x.map_or(String::new(), |v| v.to_string());
    let user = r.user_figures();
    format!(
        "{},{},{:.1},{:.3},{:.3},{:.4},{:.4},{:.4},{},{},{},{},{},{},{:.3},{}",
        serde_json::to_value(r.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        r.host.requests,
        r.host.iops,
        r.host.mb_per_s,
        user.mb_per_s,
        r.waf,
        user.host_waf,
        user.total_waf,
        f(lat.map(|l| l.read.p50)),
        f(lat.map(|l| l.read.p99)),
        f(lat.map(|l| l.read.p99_99)),
        f(lat.map(|l| l.write.p99)),
        f(lat.map(|l| l.write.p99_99)),
        r.gc.invocations,
        r.wear.erase_count_stddev,
        r.host.sim_time_ns
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run whose audit found figures that cannot be is an error naming the
    /// configuration (the Python binding raises it, bench refuses it); warnings are none.
    #[test]
    fn an_audit_error_is_an_error_naming_the_config() {
        let src = ConfigSource {
            text: include_str!("../../../configs/serve-small.toml").into(),
            label: "small.toml".into(),
            base_dir: None,
            sets: vec!["workload.requests=300".into()],
            grid: Vec::new(),
        };
        let r = execute(&src, &RunOptions::default()).unwrap().results;
        assert_eq!(r.audit.errors, 0);
        assert!(r.audit.warnings > 0, "a fresh device's reads");
        assert_eq!(audited("small.toml", &r), Ok(()));
        // A write counted that never completed (a write answered EIO counted as done).
        let mut bad = r.clone();
        bad.host.counters.writes += 1;
        bad.host.requests += 1;
        bad.audit = ssdlab_core::sim::audit::audit(&bad, &r.audit.facts);
        let e = audited("small.toml", &bad).unwrap_err();
        assert!(
            e.starts_with("small.toml: internal error (please report it with your config and seed): the results audit found figures that cannot be: writes_completed: "),
            "{e}"
        );
    }

    #[test]
    fn overrides_keep_the_file_label_and_lines() {
        let src = ConfigSource {
            text: include_str!("../../../configs/default.toml").into(),
            label: "x.toml".into(),
            base_dir: None,
            sets: vec!["device.over_provisioning_ratio=-1".into()],
            grid: Vec::new(),
        };
        assert_eq!(
            src.effective_label(),
            "x.toml (with --set device.over_provisioning_ratio=-1)"
        );
        let cfg = src.load().unwrap();
        let e = src.validated(&cfg).unwrap_err().to_string();
        assert!(
            e.starts_with("x.toml (with --set device.over_provisioning_ratio=-1):"),
            "{e}"
        );
        // The line of the key in the file as written (the override changed its value).
        let line = 1 + src
            .text
            .lines()
            .position(|l| l.starts_with("over_provisioning_ratio"))
            .unwrap();
        assert!(
            e.starts_with(&format!(
                "x.toml (with --set device.over_provisioning_ratio=-1):{line}: device.over_provisioning_ratio: "
            )),
            "{e}"
        );
        // A key only an override gave: the line of its deepest table in the file, as for
        // a key left to its default (`[device]`).
        let only_set = ConfigSource {
            sets: vec!["device.zns.max_active_zones=30".into()],
            ..src.clone()
        };
        let cfg = only_set.load().unwrap();
        let e = only_set.validated(&cfg).unwrap_err().to_string();
        let device = 1 + src.text.lines().position(|l| l == "[device]").unwrap();
        assert!(
            e.starts_with(&format!(
                "x.toml (with --set device.zns.max_active_zones=30):{device}: device.zns.max_active_zones: 30: "
            )),
            "{e}"
        );
        let bad = ConfigSource {
            sets: vec!["novalue".into()],
            ..src.clone()
        };
        assert!(bad
            .load()
            .unwrap_err()
            .to_string()
            .contains("--set novalue"));
    }

    /// A workload error with overrides names the file (the label says "with …") and the
    /// line of its key in the file as written, as a validation error does.
    #[test]
    fn workload_errors_name_the_overridden_text_and_its_line() {
        let src = ConfigSource {
            text: include_str!("../../../configs/default.toml")
                .replace("read_percent = 70.0", "read_percent = 170.0"),
            label: "x.toml".into(),
            base_dir: None,
            sets: vec!["seed=3".into()],
            grid: vec!["ftl.gc_soft_free_blocks=5".into()],
        };
        let e = check(&src, &RunOptions::default()).unwrap_err();
        let line = 1 + src
            .text
            .lines()
            .position(|l| l.starts_with("read_percent"))
            .unwrap();
        assert_eq!(
            e,
            format!("x.toml (with --set seed=3 --grid ftl.gc_soft_free_blocks=5):{line}: workload.read_percent: 170 is not a percentage in 0..=100")
        );
        // The same through `execute`, and with the memory check on.
        assert_eq!(
            execute(&src, &RunOptions::memory_checked("hint")).err(),
            Some(e)
        );
    }
}
