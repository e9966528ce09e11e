//! # ssdlab-experiments — reproducible experiments on top of `ssdlab-core`
//!
//! Experiment logic that is not CLI specific, so the CLI (`ssdlab reproduce …`,
//! `ssdlab op-advise`) and future bindings share it:
//!
//! * [`op`] — spec 02, over-provisioning: building a device at a given OP with a fixed
//!   logical capacity, running the functional overwrite experiment at one OP point, the
//!   parallel OP sweep (`ssdlab reproduce op`), the analytic model of each point
//!   (`ssdlab-model`) and the OP advisor with its simulation check (`ssdlab op-advise`).
//! * [`ssr`] — spec 01, erase suspend/resume: every policy on the Table-1 device for the
//!   4 KiB random 70/30 job and the TPC-C-like model (`ssdlab reproduce ssr`).
//! * [`dftl`] — spec 04, demand-based FTL with a partitioned mapping cache: every mapping
//!   variant on random reads, writes and a mix, with and without GC (`ssdlab reproduce
//!   dftl`).
//! * [`slc`] — spec 05, SLC write buffer with a journal region: `slc-buffer` vs
//!   `slc-journal` under the ext4 model, fio with fsync and Filebench (`ssdlab reproduce
//!   slc`).
//! * [`wl`] — spec 03, wear leveling and lifetime: every algorithm on the Table-2 device
//!   and the normal-distribution traces, to failure (`ssdlab reproduce wl`).
//! * [`mq`] — MQSim's multi-queue study (FAST 2018): two flows (4 KiB random reads, 128 KiB
//!   sequential writes) alone and together under round robin and weighted round robin,
//!   without and with GC: slowdown and fairness (`ssdlab reproduce mq`).
//! * [`zns`] — the block-interface tax (ZNS, USENIX ATC 2021): random writes (uniform, hot/cold) on a
//!   conventional device, a zoned one under the host log-structured layer and an FDP one
//!   at equal spare: device, host and total WAF, tails, zone resets (`ssdlab reproduce zns`).
//! * [`experiment`] — the [`experiment::Experiment`] trait every one of them implements
//!   (arguments, parameters, run, CSV, report, expected-shape [`experiment::Check`]s,
//!   plot), registered in [`experiment::ALL`] for `ssdlab reproduce`, `ssdlab doc-tables`
//!   and Python's `reproduce`; [`plot`]: the plots' shared pieces.
//! * [`run`] — one `ssdlab run`: configuration source with overrides, the output files'
//!   text and a sweep point's headline row (the CLI and the Python binding share it).
//!
//! Every error names the option or configuration key at fault ([`ExperimentError`]).

pub mod dftl;
pub mod experiment;
pub mod fdp;
pub mod mq;
pub mod op;
pub mod plot;
pub mod retry;
pub mod run;
pub mod slc;
pub mod ssr;
pub mod wl;
pub mod zns;

use serde::Serialize;
use ssdlab_core::sim::audit::Verdict;
use ssdlab_core::{Results, SimError};
use ssdlab_model::ModelError;
use thiserror::Error;

/// Errors of the experiments. Each names what to fix.
#[derive(Debug, Error)]
pub enum ExperimentError {
    /// An experiment parameter (or a config key it derives from) is out of range.
    #[error("{key}: {reason}")]
    Invalid {
        /// Parameter or config key, e.g. `host_writes` or `ftl.gc_victim`.
        key: String,
        /// What is wrong and what is accepted.
        reason: String,
    },
    /// The simulator refused the configuration or failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The analytic model refused its arguments.
    #[error("model: {0}")]
    Model(ModelError),
    /// No over-provisioning ratio of the advisor's grid meets the requirement.
    #[error("no over-provisioning ratio in {grid} meets the requirement {requirement}: {detail}")]
    RequirementUnmet {
        /// The requirement as given, e.g. `--max-waf 1.01`.
        requirement: String,
        /// The OP grid searched, e.g. `0.00..=2.00 step 0.05`.
        grid: String,
        /// The best the grid reaches (e.g. the lowest WAF at the largest OP).
        detail: String,
    },
    /// An output file could not be made (a plot, the JSON).
    #[error("{what}: {reason}")]
    Output {
        /// What failed, e.g. `drawing mq.svg`.
        what: String,
        reason: String,
    },
}

impl From<ModelError> for ExperimentError {
    fn from(e: ModelError) -> Self {
        // Not a `#[source]`: the message already contains it (no doubled error chains).
        ExperimentError::Model(e)
    }
}

impl ExperimentError {
    /// An [`ExperimentError::Invalid`] for `key`.
    pub fn invalid(key: impl Into<String>, reason: impl Into<String>) -> Self {
        ExperimentError::Invalid {
            key: key.into(),
            reason: reason.into(),
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = ExperimentError> = std::result::Result<T, E>;

/// A warning of the results audit of one point of an experiment: a share a reader of the
/// point's figures must know (the figures stand). Kept with the point in the experiment's
/// JSON (`audit_warnings`) and said once on stderr as the point ends. A broken
/// conservation or bound is no warning: it ends the experiment with the internal error
/// (the simulations run strictly, [`ssdlab_core::Simulation::audit_strict`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditWarning {
    /// The point, as the experiment's progress lines name it.
    pub point: String,
    /// The check (`audit.checks[].name` of the point's results).
    pub check: &'static str,
    pub message: String,
}

impl AuditWarning {
    /// The warnings of the audit of `r`, the results of `point`.
    pub fn of(r: &Results, point: impl Into<String>) -> Vec<AuditWarning> {
        let point = point.into();
        r.audit
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Warning)
            .map(|c| AuditWarning {
                point: point.clone(),
                check: c.name,
                message: c.message.clone().unwrap_or_default(),
            })
            .collect()
    }

    /// The warning in a line: `audit warning: POINT: CHECK: MESSAGE`.
    pub fn line(&self) -> String {
        format!(
            "audit warning: {}: {}: {}",
            self.point, self.check, self.message
        )
    }
}
