//! NVMe command arbitration: which submission queue the controller fetches its next
//! command from (NVMe base specification 2.0, §3.4.4 "Command Arbitration"). Each flow of a
//! workload is one submission queue. The controller asks the policy whenever it can take a
//! command (a free command slot, `[device.host_interface] max_commands_in_flight`), so the
//! order matters exactly when commands wait in the queues.
//!
//! | policy | file | order |
//! |---|---|---|
//! | `round-robin` | [`round_robin`] | queues in turn, up to `burst` commands each |
//! | `weighted-round-robin` | [`weighted_round_robin`] | `urgent` queues first (round robin), then `high`, `medium`, `low` classes in turn, each class up to its weight in commands, round robin inside a class with `burst` |
//!
//! A queue's class comes from `[device.host_interface] flow_priority` (default `medium`);
//! round robin ignores classes (as NVMe does), so giving classes with it is an error.

use serde::{Deserialize, Serialize};

super::policy_registry! {
    $
    /// `[device.host_interface] arbitration`: the arbitration policy (`policy = "…"` + parameters).
    config ArbitrationConfig default RoundRobin;
    /// The controller's arbitration between submission queues.
    runtime ArbitrationPolicy: Arbiter(ArbiterCtx);
    params ArbitrationParams;
    /// NVMe round robin: queues in turn, up to `burst` commands from each.
    "round-robin" => RoundRobin(round_robin::RoundRobin),
    /// NVMe weighted round robin with urgent priority class: urgent queues first, then the
    /// high, medium and low classes by weight.
    "weighted-round-robin" => WeightedRoundRobin(weighted_round_robin::WeightedRoundRobin),
}

/// What an arbitration policy's parameters tell the rest of the device.
pub trait ArbitrationParams: super::PolicyParams {
    /// Whether the policy orders queues by their priority class
    /// (`[device.host_interface] flow_priority`); otherwise giving classes is an error.
    fn priority_classes(&self) -> bool {
        false
    }
}

impl ArbitrationConfig {
    /// Whether the policy orders queues by their priority class ([`ArbitrationParams`]).
    pub fn priority_classes(&self) -> bool {
        self.params().priority_classes()
    }
}

/// A submission queue's priority class (NVMe's QPRIO; used by weighted round robin).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Priority {
    Urgent,
    High,
    #[default]
    Medium,
    Low,
}

impl Priority {
    pub fn name(self) -> &'static str {
        match self {
            Priority::Urgent => "urgent",
            Priority::High => "high",
            Priority::Medium => "medium",
            Priority::Low => "low",
        }
    }
}

/// What an arbiter is built for: each queue's class, in flow order.
#[derive(Clone, Debug, Default)]
pub struct ArbiterCtx {
    pub classes: Vec<Priority>,
}

impl ArbitrationPolicy {
    /// The queue to fetch the next command from (see [`Arbiter::pick`]).
    #[inline]
    pub fn pick(&mut self, waiting: &[u32]) -> Option<u32> {
        dispatch!(self, p => p.pick(waiting))
    }
}

/// An arbitration policy over submission queues `0..n`.
pub trait Arbiter: Sized {
    type Params;
    fn new(params: &Self::Params, ctx: &ArbiterCtx) -> Self;
    /// The queue to fetch the next command from, given the commands waiting in each
    /// (`waiting[q]`); `None` when none waits.
    fn pick(&mut self, waiting: &[u32]) -> Option<u32>;
}

/// Round robin over `queues` (indexes into `waiting`) from `*at`, staying on a queue for
/// up to `burst` consecutive commands (`*taken` so far): the index within `queues` of
/// the queue chosen, or `None` when none of them has a command.
pub(crate) fn round_robin_in(
    queues: &[u32],
    waiting: &[u32],
    at: &mut usize,
    taken: &mut u32,
    burst: u32,
) -> Option<u32> {
    let n = queues.len();
    if n == 0 {
        return None;
    }
    if *taken < burst && waiting[queues[*at % n] as usize] > 0 && *taken > 0 {
        *taken += 1;
        return Some(queues[*at % n]);
    }
    // Move on: the first queue after the current one (or the current one, if it has not
    // started its burst) that has a command.
    let start = if *taken > 0 { *at + 1 } else { *at };
    for k in 0..n {
        let i = (start + k) % n;
        if waiting[queues[i] as usize] > 0 {
            *at = i;
            *taken = 1;
            return Some(queues[i]);
        }
    }
    None
}

/// The arbitration burst of NVMe (commands taken from one queue per turn): a power of
/// two from 1 to 64 (the specification's AB field; its "no limit" is not offered).
pub(crate) fn check_burst(burst: u32) -> Result<(), (&'static str, String)> {
    if !(burst.is_power_of_two() && burst <= 64) {
        return Err((
            "burst",
            format!("{burst}: NVMe's arbitration burst is a power of two from 1 to 64 commands"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(cfg: &ArbitrationConfig, classes: &[Priority], waiting: &[u32], n: usize) -> Vec<u32> {
        let mut a = ArbitrationPolicy::new(
            cfg,
            &ArbiterCtx {
                classes: classes.to_vec(),
            },
        );
        let mut w = waiting.to_vec();
        let mut out = Vec::new();
        for _ in 0..n {
            let Some(q) = a.pick(&w) else {
                break;
            };
            w[q as usize] -= 1;
            out.push(q);
        }
        out
    }

    fn rr(burst: u32) -> ArbitrationConfig {
        ArbitrationConfig::RoundRobin(round_robin::Params { burst })
    }

    /// Hand-checked: three queues, burst 1 → 0,1,2,0,1,2; burst 2 → 0,0,1,1,2,2; a queue
    /// that runs dry is skipped; the burst ends early when its queue is empty.
    #[test]
    fn round_robin_order() {
        let m = [Priority::Medium; 3];
        assert_eq!(
            order(&rr(1), &m, &[3, 3, 3], 9),
            [0, 1, 2, 0, 1, 2, 0, 1, 2]
        );
        assert_eq!(
            order(&rr(2), &m, &[4, 4, 4], 12),
            [0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2]
        );
        assert_eq!(order(&rr(1), &m, &[1, 3, 2], 6), [0, 1, 2, 1, 2, 1]);
        assert_eq!(order(&rr(4), &m, &[1, 3, 2], 6), [0, 1, 1, 1, 2, 2]);
        assert_eq!(order(&rr(1), &m, &[0, 0, 0], 3), Vec::<u32>::new());
    }

    /// Hand-checked: urgent first; then high ×3, medium ×2, low ×1 per round.
    #[test]
    fn weighted_round_robin_order() {
        use Priority::*;
        let wrr = ArbitrationConfig::WeightedRoundRobin(weighted_round_robin::Params {
            burst: 1,
            high_weight: 3,
            medium_weight: 2,
            low_weight: 1,
        });
        // Queues: 0 low, 1 high, 2 medium, 3 urgent (2 commands).
        let classes = [Low, High, Medium, Urgent];
        assert_eq!(
            order(&wrr, &classes, &[5, 5, 5, 2], 14),
            [3, 3, 1, 1, 1, 2, 2, 0, 1, 1, 2, 2, 0, 2]
        );
        // Two high queues share the high class's weight in turn.
        let classes = [High, High, Low];
        assert_eq!(
            order(&wrr, &classes, &[9, 9, 9], 8),
            [0, 1, 0, 2, 1, 0, 1, 2]
        );
        // An empty class passes its turn on.
        let classes = [Low, Low];
        assert_eq!(order(&wrr, &classes, &[2, 2], 4), [0, 1, 0, 1]);
    }
}
