//! Suspend/resume decision: asked when a host read is queued on a die that is busy with
//! an erase or a program. Spec 01's policies (I-ES, D-ES, SSR static/dynamic) are added as
//! variants, one file each; `none` lets the read wait.

use crate::config::SuspendPolicyKind;
use crate::flash::OpKind;

/// What the die should do with its running operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuspendDecision {
    /// Keep running; the read waits.
    Continue,
    /// Suspend at `at_ns` (absolute), serve reads, then resume.
    SuspendAt { at_ns: u64 },
}

pub enum SuspendPolicy {
    None,
}

impl SuspendPolicy {
    pub fn new(kind: SuspendPolicyKind) -> SuspendPolicy {
        match kind {
            SuspendPolicyKind::None => SuspendPolicy::None,
        }
    }

    /// A read arrived at `now_ns` for a die running `running` since `started_ns`.
    #[inline]
    pub fn on_read_waiting(&self, _running: OpKind, _started_ns: u64, _now_ns: u64) -> SuspendDecision {
        match self {
            SuspendPolicy::None => SuspendDecision::Continue,
        }
    }
}
