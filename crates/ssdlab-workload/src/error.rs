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
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

impl WorkloadError {
    pub fn config(key: impl Into<String>, reason: impl Into<String>) -> Self {
        WorkloadError::Config {
            key: key.into(),
            reason: reason.into(),
        }
    }
}
