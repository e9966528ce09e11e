//! ssdlab core: a deterministic NAND-flash SSD simulator.
//!
//! Layers, top to bottom (see ARCHITECTURE.md): workload (crate `ssdlab-workload`) →
//! `host` → `cache` (write buffer) → `ftl` (mapping, allocation, GC, wear) → `scheduler` →
//! [`flash`], all on the engine. [`sim`] wires them together for the timed and the
//! functional mode; [`stats`] holds the results. The lowest layers are crates of their own:
//! `ssdlab-engine` (event queue), `ssdlab-flash` (with `base` and `ids`) and
//! `ssdlab-policy` (the policy families), re-exported here under their module names. No
//! CLI code lives here.
//!
//! # API boundary
//!
//! What the CLI, the experiments, `ssdlab serve` and the Python package build on:
//!
//! - [`Simulation`] (build, precondition, run) and [`run`], reporting to a [`Progress`];
//!   [`sim::stop`]: a stop request;
//! - [`Results`] (the results.json schema) with the summaries in [`stats`], and
//!   [`sim::audit`], the results audit; [`RunStatus`];
//! - the served device: [`sim::serve::Served`], a measured phase driven from outside
//!   (requests with their bytes, completions, power cuts); per-request completions
//!   ([`sim::timed::CompletionSink`]);
//! - [`config`]: [`Config`] (the TOML file), its validation into [`config::Derived`],
//!   overrides; [`SimError`] and [`Result`];
//! - [`policy`]: the policy families and their registry (`ssdlab policies`); [`flash`]: the
//!   kinds and causes the NAND counters are keyed by.
//!
//! Everything else is internal. `cache`, `scheduler`, `integrity`, `error` (its types are
//! re-exported here) and the engine, `base` and `ids` are private to the crate; `ftl` and
//! `host` stay public, hidden from the documentation, only for the core's own integration
//! tests and for experiments that read a run's device state — no stability is promised.

pub(crate) mod cache;
pub mod config;
pub(crate) mod error;
#[doc(hidden)]
pub mod ftl;
#[doc(hidden)]
pub mod host;
pub(crate) mod integrity;
pub(crate) mod scheduler;
pub mod sim;
pub mod stats;

#[cfg(test)]
mod testutil;

pub use config::Config;
pub use error::{Result, SimError};
pub use sim::{run, NoProgress, Progress, Results, RunStatus, Simulation};

pub use base::MAX_SLOTS_PER_PAGE;

// The lower layers are crates of their own (the compiler keeps them below the core); they
// keep the paths they had as modules of the core.
pub(crate) use ssdlab_engine as engine;
pub(crate) use ssdlab_engine::{prefetch, ring};
pub use ssdlab_flash as flash;
pub(crate) use ssdlab_flash::{base, ids};
pub use ssdlab_policy as policy;
