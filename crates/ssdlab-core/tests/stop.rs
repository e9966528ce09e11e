//! A stop request (`sim::stop`, set by the CLI's Ctrl-C handler and the Python binding)
//! ends preconditioning and the measured phase of both modes with
//! `SimError::Interrupted`; once cleared, runs go on as before (the golden snapshots show
//! the results unchanged). One test, in a binary of its own: the flag is process-wide
//! (in `tests/it` it would stop the tests running beside it).

use ssdlab_core::sim::stop;
use ssdlab_core::{Config, NoProgress, RunStatus, SimError, Simulation};
use std::path::Path;

/// The golden timed configuration in `mode`, long enough to reach a poll (every 64 Ki
/// units, requests or events) in every phase.
fn config(mode: &str) -> Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/timed.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("mode = \"timed\"", &format!("mode = \"{mode}\""))
        .replace("requests = 20000\n", "requests = 100000\n")
        .replace(
            "random_overwrite_capacity_multiple = 1.0",
            "random_overwrite_capacity_multiple = 3.0",
        );
    Config::from_toml_str(&text, mode).unwrap()
}

#[test]
fn a_stop_request_interrupts_every_phase_and_clearing_it_lets_runs_complete() {
    for name in ["timed", "functional"] {
        let cfg = config(name);
        stop::request_stop();
        let mut sim = Simulation::new(cfg.clone()).unwrap();
        let e = sim.precondition(&mut NoProgress).unwrap_err();
        assert!(matches!(e, SimError::Interrupted), "{name}: {e}");
        stop::clear_stop();

        let total = cfg.workload.request_total();
        let mut sim = Simulation::new(cfg).unwrap();
        sim.precondition(&mut NoProgress).unwrap();
        let mut stopped = sim.clone();
        stop::request_stop();
        let e = stopped.run_workload(&mut NoProgress).unwrap_err();
        assert!(matches!(e, SimError::Interrupted), "{name}: {e}");
        assert_eq!(e.to_string(), "interrupted before the run ended");
        stop::clear_stop();
        let r = sim.run_workload(&mut NoProgress).unwrap();
        assert_eq!(Some(r.host.requests), total, "{name}");
        assert_eq!(r.status, RunStatus::Completed);
    }
}
