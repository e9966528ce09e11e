//! ssdlab core: a deterministic NAND-flash SSD simulator.
//!
//! Layers, top to bottom (see ARCHITECTURE.md): workload (crate `ssdlab-workload`) →
//! [`host`] → [`cache`] (write buffer) → [`ftl`] (mapping, allocation, GC, wear) →
//! [`scheduler`] → [`flash`], all on the [`engine`]. [`sim`] wires them together for the
//! timed and the functional mode; [`stats`] holds the results. No CLI code lives here.

pub mod base;
pub mod cache;
pub mod config;
pub mod engine;
pub mod error;
pub mod flash;
pub mod ftl;
pub mod host;
pub mod ids;
pub mod integrity;
pub mod policy;
pub(crate) mod prefetch;
pub(crate) mod ring;
pub mod scheduler;
pub mod sim;
pub mod stats;

#[cfg(test)]
mod testutil;

pub use config::Config;
pub use error::{Result, SimError};
pub use sim::{run, NoProgress, Progress, Results, RunStatus, Simulation};

pub use base::MAX_SLOTS_PER_PAGE;
