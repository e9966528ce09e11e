//! `ssdlab._native`: the Python binding's native module. The pure-Python package `ssdlab`
//! (python/ssdlab) wraps it in `run`, `sweep` and `reproduce`. Every simulation runs with the
//! GIL released, on a thread of its own while the caller answers Ctrl-C
//! (`interruptible`); errors become `ssdlab.SsdlabError` carrying the simulator's message (file,
//! line and key for configuration errors).

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;
use ssdlab_core::sim::stop;
use ssdlab_experiments::experiment;
use ssdlab_experiments::run::{self as one, ConfigSource, RunOptions};
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

create_exception!(
    ssdlab,
    SsdlabError,
    PyValueError,
    "An ssdlab error: an invalid configuration (the message names file, line and key), a bad override or a failed simulation."
);

fn err(e: impl std::fmt::Display) -> PyErr {
    SsdlabError::new_err(e.to_string())
}

/// How often the calling thread looks for signals while a simulation runs.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Run `work` (simulations, GIL-free) on a thread of its own while the calling thread,
/// every 50 ms, takes the GIL and runs Python's signal handlers (`check_signals`): Ctrl-C
/// raises KeyboardInterrupt within a fraction of a second instead of when the simulation
/// ends. When a handler raises, every simulation of the process is asked to stop
/// ([`ssdlab_core::sim::stop`], polled every 64 Ki events or requests), `work`'s end is
/// awaited (its result dropped) and the exception is raised. Python runs handlers on its
/// main thread only: called from another thread this just waits.
fn interruptible<T: Send>(py: Python<'_>, work: impl FnOnce() -> T + Send) -> PyResult<T> {
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("ssdlab-sim".into())
            // The size of a main thread's stack, as the simulation had when it ran there.
            .stack_size(8 << 20)
            .spawn_scoped(s, move || {
                let _ = tx.send(work());
            })
            .map_err(err)?;
        let mut rx = rx;
        loop {
            // The receiver moves into the GIL-free closure and back (it is not `Sync`).
            let (back, got) = py.detach(move || {
                let got = rx.recv_timeout(SIGNAL_POLL);
                (rx, got)
            });
            rx = back;
            match got {
                Ok(v) => return Ok(v),
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        stop::request_stop();
                        let _ = py.detach(move || rx.recv());
                        stop::clear_stop();
                        return Err(e);
                    }
                }
                // `work` panicked: the panic goes on here.
                Err(RecvTimeoutError::Disconnected) => match worker.join() {
                    Err(p) => std::panic::resume_unwind(p),
                    Ok(()) => unreachable!("the worker ended without sending its result"),
                },
            }
        }
    })
}

/// What one run produced: the output files' text and the wall-clock figures.
struct RunOutput {
    results_json: String,
    latency_csv: Option<String>,
    timeseries_csv: Option<String>,
    config_toml: String,
    config_json: String,
    precondition_wall_s: f64,
    workload_wall_s: f64,
}

/// The run options of the binding: the memory check on unless `allow_large_memory`.
fn options(seed: Option<u64>, allow_large_memory: bool) -> RunOptions {
    RunOptions {
        seed,
        memory_hint: (!allow_large_memory).then(|| "pass allow_large_memory=True".into()),
        ..RunOptions::default()
    }
}

/// `src` run as `ssdlab run` runs it ([`one::execute`]: the same checks and messages).
fn simulate(src: &ConfigSource, seed: Option<u64>, big: bool) -> Result<RunOutput, String> {
    let o = one::execute(src, &options(seed, big))?;
    audited(src, &o.results)?;
    let resolved = o.resolved_config();
    Ok(RunOutput {
        results_json: one::results_json(&o.results).map_err(|e| e.to_string())?,
        latency_csv: o.results.latency_ns.as_ref().map(one::latency_csv),
        timeseries_csv: (!o.sim.last_timeseries.is_empty())
            .then(|| one::timeseries_csv(&o.sim.last_timeseries)),
        config_toml: one::resolved_toml(&resolved, &o.sim.derived),
        config_json: serde_json::to_string(&resolved).map_err(|e| e.to_string())?,
        precondition_wall_s: o.precondition_wall_s,
        workload_wall_s: o.workload_wall_s,
    })
}

/// Figures that cannot be (the results audit found a broken conservation or bound: a
/// bug) are an error naming the configuration ([`one::audited`]); warnings stay in the
/// results.
fn audited(src: &ConfigSource, r: &ssdlab_core::Results) -> Result<(), String> {
    one::audited(&src.label, r)
}

/// One run: `text` (TOML) named `label` in messages, relative inputs resolved against
/// `base_dir`, `sets` applied as `--set`. Returns the output files' text and wall figures.
#[pyfunction]
#[pyo3(signature = (text, label, base_dir=None, sets=Vec::new(), seed=None, allow_large_memory=false))]
fn run<'py>(
    py: Python<'py>,
    text: String,
    label: String,
    base_dir: Option<PathBuf>,
    sets: Vec<String>,
    seed: Option<u64>,
    allow_large_memory: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let src = ConfigSource {
        text,
        label,
        base_dir,
        sets,
        grid: Vec::new(),
    };
    let o = interruptible(py, || simulate(&src, seed, allow_large_memory))?.map_err(err)?;
    let d = PyDict::new(py);
    d.set_item("results_json", o.results_json)?;
    d.set_item("latency_csv", o.latency_csv)?;
    d.set_item("timeseries_csv", o.timeseries_csv)?;
    d.set_item("config_toml", o.config_toml)?;
    d.set_item("config_json", o.config_json)?;
    d.set_item("precondition_wall_s", o.precondition_wall_s)?;
    d.set_item("workload_wall_s", o.workload_wall_s)?;
    Ok(d)
}

/// One sweep point: `(text, label, base_dir, sets)`.
type Point = (String, String, Option<PathBuf>, Vec<String>);

/// Run every point on `jobs` threads (0: one per core); per point `(true, headline row)`
/// (columns `SWEEP_HEADLINE`) or `(false, error message)`: a failed point does not stop the
/// others.
#[pyfunction]
#[pyo3(signature = (points, jobs=0, allow_large_memory=false))]
fn run_points(
    py: Python<'_>,
    points: Vec<Point>,
    jobs: usize,
    allow_large_memory: bool,
) -> PyResult<Vec<(bool, String)>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(err)?;
    interruptible(py, || {
        pool.install(|| {
            points
                .into_par_iter()
                .with_max_len(1)
                .map(|(text, label, base_dir, sets)| {
                    let src = ConfigSource {
                        text,
                        label,
                        base_dir,
                        sets,
                        grid: Vec::new(),
                    };
                    let o = one::execute(&src, &options(None, allow_large_memory));
                    match o.and_then(|o| audited(&src, &o.results).map(|_| o)) {
                        Ok(o) => (true, one::sweep_headline(&o.results)),
                        Err(e) => (false, e),
                    }
                })
                .collect()
        })
    })
}

/// A JSON object as TOML text (a configuration given as a Python dict).
#[pyfunction]
fn json_to_toml(json: &str) -> PyResult<String> {
    let table: toml::Table = serde_json::from_str(json)
        .map_err(|e| err(format!("the configuration dict is not TOML-shaped: {e}")))?;
    toml::to_string(&table).map_err(err)
}

/// A JSON value as an inline TOML value (the right-hand side of an override).
#[pyfunction]
fn json_to_toml_value(json: &str) -> PyResult<String> {
    let v: toml::Value =
        serde_json::from_str(json).map_err(|e| err(format!("{json}: not a TOML value: {e}")))?;
    Ok(v.to_string())
}

/// Run experiment `name` (as `ssdlab reproduce NAME --scale … --seed … --set …`, with
/// `requests` as its requests flag where it has one) on `jobs` threads (0: one per core)
/// and return its table as CSV text.
#[pyfunction]
#[pyo3(signature = (name, scale=1.0, seed=None, sets=Vec::new(), jobs=0, requests=None))]
fn reproduce(
    py: Python<'_>,
    name: &str,
    scale: f64,
    seed: Option<u64>,
    sets: Vec<String>,
    jobs: usize,
    requests: Option<u64>,
) -> PyResult<String> {
    let Some(e) = experiment::find(name) else {
        return Err(PyValueError::new_err(format!(
            "unknown experiment {name:?}; known: {}",
            experiment::names().join(", ")
        )));
    };
    if !(scale >= 1.0 && scale.is_finite()) {
        return Err(err(format!("scale {scale}: must be a divisor >= 1")));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(err)?;
    let o = experiment::TableOptions {
        scale,
        seed,
        sets,
        requests,
    };
    interruptible(py, move || {
        pool.install(|| e.table(&o).map_err(|e| e.to_string()))
    })?
    .map_err(err)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SsdlabError", m.py().get_type::<SsdlabError>())?;
    m.add("SWEEP_HEADLINE", one::SWEEP_HEADLINE)?;
    m.add("EXPERIMENTS", experiment::names())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_points, m)?)?;
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(json_to_toml_value, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    Ok(())
}
