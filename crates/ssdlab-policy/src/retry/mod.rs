//! Read retry (`[device.reliability] retry = { policy = "…" }`): the step of the read-retry
//! ladder a read starts at (docs/reliability.md). The reliability model
//! ([`crate::flash::reliability`]) draws, per read, the first step that corrects it; a
//! read starting later pays no retry, one starting earlier retries up to it.
//!
//! | policy | file | a read starts at |
//! |---|---|---|
//! | `table` | [`table`] | step 0, every time (the chip's predefined table) |
//! | `sticky` | [`sticky`] | the step that last succeeded on the block (since its erase) |
//! | `oracle` | [`oracle`] | the first good step at once (a bound) |

use crate::ids::BlockId;

super::policy_registry! {
    $
    /// `[device.reliability] retry`: the read-retry policy (`policy = "…"`).
    config RetryConfig default Table;
    /// The read-retry policy of the device.
    runtime RetryPolicy: ReadRetry(RetryCtx);
    params super::PolicyParams;
    /// The predefined table: every read starts at step 0.
    "table" => Table(table::Table),
    /// Start from the step that last succeeded on this block since its erase.
    "sticky" => Sticky(sticky::Sticky),
    /// The optimal step at once (soft decoding still costs its step): a bound.
    "oracle" => Oracle(oracle::Oracle),
}

/// What a retry policy is built for.
#[derive(Clone, Copy, Debug, Default)]
pub struct RetryCtx {
    /// Blocks of the device.
    pub blocks: u32,
    /// S: retry steps of the table (a read starts at most there).
    pub retry_steps: u32,
}

/// A read-retry policy.
pub trait ReadRetry: Sized {
    type Params;
    fn new(params: &Self::Params, ctx: &RetryCtx) -> Self;
    /// The step (≤ S) a read of `block`, erased `erases` times, starts at; `optimal`
    /// answers the read's first good step (clamped to S; only an oracle asks).
    fn start(&self, block: BlockId, erases: u32, optimal: impl FnOnce() -> u32) -> u32;
    /// A read of `block` (erased `erases` times) succeeded at `step`.
    #[inline]
    fn succeeded(&mut self, block: BlockId, erases: u32, step: u32) {
        let _ = (block, erases, step);
    }
}

impl RetryPolicy {
    /// See [`ReadRetry::start`].
    #[inline]
    pub fn start(&self, block: BlockId, erases: u32, optimal: impl FnOnce() -> u32) -> u32 {
        dispatch!(self, p => p.start(block, erases, optimal))
    }

    /// See [`ReadRetry::succeeded`].
    #[inline]
    pub fn succeeded(&mut self, block: BlockId, erases: u32, step: u32) {
        dispatch!(self, p => p.succeeded(block, erases, step))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_by_policy() {
        let ctx = RetryCtx {
            blocks: 2,
            retry_steps: 5,
        };
        let b = BlockId(1);
        let mut t = RetryPolicy::new(&RetryConfig::by_name("table").unwrap(), &ctx);
        t.succeeded(b, 0, 3);
        assert_eq!(t.start(b, 0, || unreachable!()), 0);
        let mut s = RetryPolicy::new(&RetryConfig::by_name("sticky").unwrap(), &ctx);
        assert_eq!(s.start(b, 0, || unreachable!()), 0);
        s.succeeded(b, 0, 3);
        assert_eq!(s.start(b, 0, || unreachable!()), 3);
        assert_eq!(s.start(BlockId(0), 0, || unreachable!()), 0);
        // Erased since: the remembered step is stale.
        assert_eq!(s.start(b, 1, || unreachable!()), 0);
        s.succeeded(b, 1, 9);
        assert_eq!(s.start(b, 1, || 0), 5, "clamped to the table");
        let o = RetryPolicy::new(&RetryConfig::by_name("oracle").unwrap(), &ctx);
        assert_eq!(o.start(b, 0, || 4), 4);
        assert_eq!(o.start(b, 0, || 7), 5);
    }
}
