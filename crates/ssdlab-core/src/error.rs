//! Errors of the simulation core. Each names what to fix (a config key, an address, a file).

use ssdlab_workload::WorkloadError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum SimError {
    /// A configuration value is missing, out of range or inconsistent with another.
    #[error("{key}: {reason}")]
    Config { key: String, reason: String },
    /// The configuration file could not be parsed.
    #[error("{file}: {reason}")]
    ConfigFile { file: String, reason: String },
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// Integrity mode found a read that did not return the last version written.
    #[error("integrity violation: {0}")]
    Integrity(String),
    /// The simulator broke one of its own rules (an illegal block-state transition, a job
    /// ended twice, a read pin underflow, …): a bug in ssdlab, not in the config or the
    /// data. Checked in release builds too; distinct from an integrity finding.
    #[error("internal error (please report it with your config and seed): {what}")]
    Internal { what: String },
    /// No plane can take another write: the device is worn out or over-full.
    #[error("device full: {0}")]
    DeviceFull(String),
    /// A stop was requested ([`crate::sim::stop`]: Ctrl-C, SIGTERM, KeyboardInterrupt)
    /// before the run ended; it has no results.
    #[error("interrupted before the run ended")]
    Interrupted,
    #[error("{path}: {err}")]
    Io {
        path: String,
        /// Not a `#[source]`: the message already says it, and error chains
        /// (`{:#}`) would print it twice.
        err: std::io::Error,
    },
}

impl SimError {
    pub fn config(key: impl Into<String>, reason: impl Into<String>) -> Self {
        SimError::Config {
            key: key.into(),
            reason: reason.into(),
        }
    }
}

pub type Result<T, E = SimError> = std::result::Result<T, E>;
