//! ssdlab core: a deterministic NAND-flash SSD simulator.
//!
//! Layers, top to bottom (see ARCHITECTURE.md): workload (crate `ssdlab-workload`) →
//! [`host`] → [`cache`] (write buffer) → [`ftl`] (mapping, allocation, GC, wear) →
//! [`scheduler`] → [`flash`], all on the [`engine`]. [`sim`] wires them together for the
//! timed and the functional mode; [`stats`] holds the results. No CLI code lives here.

pub mod cache;
pub mod config;
pub mod error;
pub mod ftl;
pub mod host;
pub mod integrity;
pub mod scheduler;
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
pub use ssdlab_engine as engine;
pub(crate) use ssdlab_engine::{prefetch, ring};
pub use ssdlab_flash as flash;
pub use ssdlab_flash::{base, ids};
pub use ssdlab_policy as policy;
