//! `ReadRetry`: the FTL's part that decides each NAND read's retries (docs/reliability.md):
//! the RBER of its page from the block's state (`flash::reliability`), the retry policy's
//! starting step, one draw on the run's `READ_RETRY` stream; stamped into the read
//! ([`NandOp::loops`] = retries, `OP_SOFT_DECODE`, `OP_FAILS` = uncorrectable), which the
//! timing model then times ([`crate::flash::TimingModel::op_array`]).

use crate::config::Config;
use crate::flash::reliability::{RberModel, MAX_RETRY_STEPS};
use crate::flash::{BlockTable, NandOp, Owner, OP_FAILS, OP_SOFT_DECODE};
use crate::policy::retry::{RetryCtx, RetryPolicy};
use rand::Rng;
use ssdlab_workload::rng::{stream, tag, SimRng};

/// Buckets of the retries-per-read histogram: 0..=S + 1 retries.
pub const RETRY_BUCKETS: usize = MAX_RETRY_STEPS as usize + 2;

/// RBER sums are kept in units of 1e-18 (integers: counters stay exact and `Eq`).
pub const RBER_UNIT: f64 = 1e-18;

/// What the reads' retries were (monotone; phases are differences, but `rber_max_e18` is
/// the largest since the device was built).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryCounters {
    /// NAND reads assessed (every read issued while the model is on).
    pub reads: u64,
    /// Reads by retries (bucket k: k retries).
    pub by_retries: [u64; RETRY_BUCKETS],
    pub retries: u64,
    /// Reads whose last retry was the soft-decode step.
    pub soft_decodes: u64,
    /// Reads no step corrected (all causes), and those of host reads.
    pub uncorrectable: u64,
    pub uncorrectable_host: u64,
    /// Σ RBER of the reads (units of [`RBER_UNIT`]) and the largest.
    pub rber_sum_e18: u128,
    pub rber_max_e18: u64,
}

impl RetryCounters {
    pub fn since(&self, b: &RetryCounters) -> RetryCounters {
        RetryCounters {
            reads: self.reads - b.reads,
            by_retries: std::array::from_fn(|i| self.by_retries[i] - b.by_retries[i]),
            retries: self.retries - b.retries,
            soft_decodes: self.soft_decodes - b.soft_decodes,
            uncorrectable: self.uncorrectable - b.uncorrectable,
            uncorrectable_host: self.uncorrectable_host - b.uncorrectable_host,
            rber_sum_e18: self.rber_sum_e18 - b.rber_sum_e18,
            rber_max_e18: self.rber_max_e18,
        }
    }

    #[inline]
    fn rber(&mut self, p: f64, times: u64) {
        let e = (p / RBER_UNIT) as u64;
        self.rber_sum_e18 += e as u128 * times as u128;
        self.rber_max_e18 = self.rber_max_e18.max(e);
    }
}

#[derive(Clone)]
pub struct ReadRetry {
    pub(super) on: bool,
    model: RberModel,
    policy: RetryPolicy,
    rng: SimRng,
    /// Per block: the erase-suspension excess RBER of its last erase.
    excess: Vec<f32>,
    /// Bytes per mapping unit and per codeword; codewords per page.
    unit_bytes: u64,
    codeword_bytes: u64,
    cw_per_page: u32,
    /// Whether `initial_pe_cycles` or `retention_age_days` is set (results show the
    /// section even without retries).
    pub(super) aged: bool,
}

impl ReadRetry {
    pub fn new(cfg: &Config, blocks: u32, unit_bytes: u32, page_bytes: u32) -> ReadRetry {
        let r = &cfg.device.reliability;
        ReadRetry {
            on: r.enabled,
            model: r.model(page_bytes),
            policy: RetryPolicy::new(
                &r.retry,
                &RetryCtx {
                    blocks,
                    retry_steps: r.retry_steps,
                },
            ),
            rng: stream(cfg.seed, tag::READ_RETRY),
            excess: vec![0.0; blocks as usize],
            unit_bytes: unit_bytes as u64,
            codeword_bytes: r.codeword_bytes.max(1) as u64,
            cw_per_page: page_bytes.div_ceil(r.codeword_bytes.max(1)).max(1),
            aged: r.enabled && (r.initial_pe_cycles > 0 || r.retention_age_days > 0.0),
        }
    }

    /// The RBER of a read of `op`'s block now.
    #[inline]
    fn rber(&self, op: &NandOp, blocks: &BlockTable, now_ns: u64) -> f64 {
        let b = op.block.idx();
        let first = blocks.first_program_ns[b];
        // Data present when the measured phase started (stamped 0) has the initial age.
        let age = blocks.data_age_ns(op.block, now_ns)
            + if first == 0 {
                self.model.initial_age_ns
            } else {
                0
            };
        self.model.rber(
            op.mode,
            blocks.erase_count[b],
            age,
            blocks.reads_since_erase[b],
            self.excess[b] as f64,
        )
    }

    /// The RBER a read of `block` would see now (what the `rber` reliability policies
    /// compare with their margin).
    pub(super) fn block_rber(
        &self,
        blocks: &BlockTable,
        block: crate::ids::BlockId,
        now_ns: u64,
    ) -> f64 {
        let b = block.idx();
        let first = blocks.first_program_ns[b];
        let age = blocks.data_age_ns(block, now_ns)
            + if first == 0 {
                self.model.initial_age_ns
            } else {
                0
            };
        self.model.rber(
            blocks.cell_mode[b],
            blocks.erase_count[b],
            age,
            blocks.reads_since_erase[b],
            self.excess[b] as f64,
        )
    }

    /// Decide `op`'s (a read's) retries and stamp them, counted in `c`.
    #[inline]
    pub fn read(
        &mut self,
        op: &mut NandOp,
        blocks: &BlockTable,
        now_ns: u64,
        c: &mut RetryCounters,
    ) {
        let p = self.rber(op, blocks, now_ns);
        c.reads += 1;
        c.rber(p, 1);
        if p <= self.model.negligible[op.mode.index()] {
            c.by_retries[0] += 1;
            return;
        }
        self.decide(op, p, blocks.erase_count[op.block.idx()], c);
    }

    /// `times` reads like `op` (a copy run's): whether any may retry (then each is decided
    /// on its own by [`ReadRetry::read`]); otherwise they are counted here.
    #[inline]
    pub fn reads_quiet(
        &self,
        op: &NandOp,
        blocks: &BlockTable,
        now_ns: u64,
        times: u64,
        c: &mut RetryCounters,
    ) -> bool {
        let p = self.rber(op, blocks, now_ns);
        if p > self.model.negligible[op.mode.index()] {
            return false;
        }
        c.reads += times;
        c.rber(p, times);
        c.by_retries[0] += times;
        true
    }

    #[cold]
    fn decide(&mut self, op: &mut NandOp, p: f64, erases: u32, c: &mut RetryCounters) {
        let ecc = self.model.ecc;
        // A read decodes ⌈its bytes / codeword⌉ codewords (a copy read: the page's).
        let units = if op.units > 0 {
            (op.units as u64 * self.unit_bytes).div_ceil(self.codeword_bytes) as u32
        } else {
            self.cw_per_page
        };
        let u: f64 = self.rng.gen();
        let s0 = self.policy.start(op.block, erases, || {
            ecc.first_good(p, u, 0, units).unwrap_or(ecc.last_step())
        });
        let k = ecc.first_good(p, u, s0, units);
        let o = ecc.outcome(s0, k);
        if !o.uncorrectable {
            self.policy.succeeded(op.block, erases, o.step);
        }
        op.loops = o.retries as u16;
        if o.soft {
            op.flags |= OP_SOFT_DECODE;
            c.soft_decodes += 1;
        }
        if o.uncorrectable {
            op.flags |= OP_FAILS;
            c.uncorrectable += 1;
            c.uncorrectable_host += matches!(op.owner, Owner::HostRead { .. }) as u64;
        }
        c.retries += o.retries as u64;
        c.by_retries[(o.retries as usize).min(RETRY_BUCKETS - 1)] += 1;
    }

    /// The erase of `block` had erase-suspension excess RBER `extra` (spec 01): its data
    /// until the next erase carries it.
    pub fn set_suspension_excess(&mut self, block: crate::ids::BlockId, extra: f64) {
        self.excess[block.idx()] = extra as f32;
    }
}

/// `results.json` → `reliability`: what the reads' retries were (present when a read
/// retried or failed, or the device is aged: `initial_pe_cycles`, `retention_age_days`).
#[derive(serde::Serialize, Debug, Clone, PartialEq)]
pub struct ReliabilitySummary {
    /// The read-retry policy.
    pub retry_policy: &'static str,
    pub initial_pe_cycles: u32,
    pub retention_age_days: f64,
    /// NAND reads (every cause) the model assessed: `nand.reads.total`.
    pub reads: u64,
    /// Retries per read (the soft-decode step counts as one).
    pub read_retries_mean: f64,
    pub retries: u64,
    /// Reads by retries: entry k = reads that took k retries (up to the last non-zero).
    pub retries_histogram: Vec<u64>,
    /// Reads whose last step was the soft decoder.
    pub soft_decodes: u64,
    /// Reads no step corrected (all causes); of them, host reads (their requests fail).
    pub uncorrectable_reads: u64,
    pub uncorrectable_host_reads: u64,
    /// Mean RBER of the reads (before retry), and the largest since the device was built.
    pub rber_mean: f64,
    pub rber_max: f64,
}

impl ReliabilitySummary {
    pub fn of(cfg: &crate::config::ReliabilityConfig, c: &RetryCounters) -> ReliabilitySummary {
        let last = c.by_retries.iter().rposition(|&n| n > 0).unwrap_or(0);
        let per = |x: f64| {
            if c.reads == 0 {
                0.0
            } else {
                x / c.reads as f64
            }
        };
        ReliabilitySummary {
            retry_policy: cfg.retry.name(),
            initial_pe_cycles: cfg.initial_pe_cycles,
            retention_age_days: cfg.retention_age_days,
            reads: c.reads,
            read_retries_mean: (per(c.retries as f64) * 1e6).round() / 1e6,
            retries: c.retries,
            retries_histogram: c.by_retries[..=last].to_vec(),
            soft_decodes: c.soft_decodes,
            uncorrectable_reads: c.uncorrectable,
            uncorrectable_host_reads: c.uncorrectable_host,
            rber_mean: per(c.rber_sum_e18 as f64 * RBER_UNIT),
            rber_max: c.rber_max_e18 as f64 * RBER_UNIT,
        }
    }
}
