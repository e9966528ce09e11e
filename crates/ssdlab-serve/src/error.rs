//! [`ServeError`]: why `ssdlab serve` could not start or ended with an error. Each message
//! is one line for the user naming what to fix (a flag, the configuration, a file); the
//! underlying error is part of the message, not a separate source (error chains, `{:#}`,
//! would say it twice).

use ssdlab_core::SimError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServeError {
    /// A flag the server cannot serve with, refused before anything runs (the message
    /// names the flag).
    #[error("{0}")]
    Usage(String),
    /// The configuration `label` cannot be served (e.g. a zoned device, too little memory).
    #[error("{label}: {why}")]
    Config { label: String, why: String },
    /// The export's advertised sizes break the protocol's constraints.
    #[error("{0}")]
    Export(String),
    /// The simulation of `label` failed: validating, building, preconditioning or serving
    /// it, or (strict audit) its results audit found figures that cannot be.
    #[error("{label}: {err}")]
    Sim { label: String, err: SimError },
    /// A file, directory or socket (`what`) could not be made or written.
    #[error("{what}: {err}")]
    Io { what: String, err: std::io::Error },
}

impl ServeError {
    /// `err` of the simulation of `label`.
    pub fn sim(label: &str, err: SimError) -> ServeError {
        ServeError::Sim {
            label: label.to_string(),
            err,
        }
    }

    /// `err` while doing `what` (`creating DIR`, `--record-trace FILE`, …).
    pub fn io(what: impl Into<String>, err: std::io::Error) -> ServeError {
        ServeError::Io {
            what: what.into(),
            err,
        }
    }
}
