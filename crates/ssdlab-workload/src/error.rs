use thiserror::Error;

/// Errors of the workload layer. Every variant names what the user has to fix.
#[derive(Debug, Error)]
pub enum WorkloadError {
    /// A configuration value is out of range or inconsistent.
    #[error("workload.{key}: {reason}")]
    Config { key: String, reason: String },
    /// A line of an input file (trace, fio job) could not be read.
    #[error("{file}:{line}: {reason} (line: {text:?})")]
    Parse {
        file: String,
        line: u64,
        text: String,
        reason: String,
    },
    /// The file could not be opened or read.
    #[error("{file}: {err}")]
    Io {
        file: String,
        /// Not a `#[source]`: the message already says it, and error chains
        /// (`{:#}`) would print it twice.
        err: std::io::Error,
    },
    /// A source cannot go on: a request its later ones depend on failed on the device
    /// ([`crate::RequestSource::request_failed`]).
    #[error("workload: {0}")]
    Failed(String),
}

impl WorkloadError {
    pub fn config(key: impl Into<String>, reason: impl Into<String>) -> Self {
        WorkloadError::Config {
            key: key.into(),
            reason: reason.into(),
        }
    }
}
