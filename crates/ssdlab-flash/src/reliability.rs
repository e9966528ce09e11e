//! Raw bit errors, ECC and read retry (docs/reliability.md): the reliability half of the
//! NAND model beside [`crate::TimingModel`].
//!
//! **RBER.** A page's raw bit error rate is a power law in its block's wear `PE` (P/E
//! cycles: `initial_pe_cycles` + the block's erases), the age `t` of its data (days) and
//! the reads `r` of its block since its last erase (read disturb):
//!
//! ```text
//! RBER = ε + α·PE^k + β·PE^m·t^n + γ·PE^p·r^q + erase-suspension excess
//! ```
//!
//! with parameters per cell mode ([`RberParams`]).
//!
//! **ECC.** A read decodes `C` codewords of `N` bits (`codeword_bytes`, one per
//! `codeword_bytes` of the units it transfers); a codeword fails the hard decoder when it
//! holds more than `t` bit errors (`correctable_bits_per_codeword`). With errors
//! independent at rate `p`, a codeword's bit errors are Binomial(N, p), so
//!
//! ```text
//! T(p, t)  = P(X > t) = 1 − Σ_{i=0}^{t} C(N, i) p^i (1 − p)^{N−i}
//! F(p, t)  = 1 − (1 − T(p, t))^C          (the read fails: some codeword does)
//! ```
//!
//! **Read retry.** Step 0 is the normal read; retry step `s` (1..=S, `retry_steps`) reads
//! at the `s`-th shifted reference voltages of the table, where the effective RBER is
//! `p·f^s` (`retry_rber_factor` f < 1); after step S a soft-decode step (step S+1) senses
//! `soft_decode_reads` more times and corrects `t_soft` bits per codeword at RBER `p·f^S`;
//! then the read is uncorrectable. Step `s` fails with `F_s = F(p·f^s, t)` (soft:
//! `F(p·f^S, t_soft)`), non-increasing in `s`. One uniform draw `u` per read decides all
//! steps together (a read that fails at a step fails at every earlier one): the first
//! good step is `K = min{s : u ≥ F_s}`, so `P(K > s) = F_s`. A read starting at step `s0`
//! (the retry policy's choice) retries `max(K − s0, 0)` times, or `L − s0` times and is
//! uncorrectable when `u < F_L` (`L` the last step). Its expected retries are therefore
//!
//! ```text
//! E[retries | s0] = Σ_{s = s0}^{L−1} F_s,     P(uncorrectable) = F_L
//! ```
//!
//! A read whose `F_0` is below [`NEGLIGIBLE`] draws nothing and never retries (a fresh
//! device: the run's draws and timing are those without the model).

use crate::base::CellMode;
use serde::{Deserialize, Serialize};

/// A read whose step-0 failure probability is below this never retries and draws nothing.
pub const NEGLIGIBLE: f64 = 1e-12;
/// The most retry steps a table may have (`retry_steps`).
pub const MAX_RETRY_STEPS: u32 = 30;
/// Nanoseconds per day (retention time is in days).
pub const NS_PER_DAY: f64 = 86_400e9;

/// RBER power-law parameters of one cell mode (`[device.reliability.<mode>]`): `PE` in P/E
/// cycles, `t` in days, `r` in page reads of the block since its erase.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RberParams {
    /// ε: the RBER of a fresh block with fresh data.
    pub base_rber: f64,
    /// α of the wear term α·PE^k.
    pub wear_coefficient: f64,
    /// k of the wear term.
    pub wear_exponent: f64,
    /// β of the retention term β·PE^m·t^n (t in days).
    pub retention_coefficient: f64,
    /// m of the retention term.
    pub retention_pe_exponent: f64,
    /// n of the retention term (t in days).
    pub retention_days_exponent: f64,
    /// γ of the read-disturb term γ·PE^p·r^q (r reads of the block since its erase).
    pub disturb_coefficient: f64,
    /// p of the read-disturb term.
    pub disturb_pe_exponent: f64,
    /// q of the read-disturb term.
    pub disturb_reads_exponent: f64,
}

impl RberParams {
    /// The defaults of `mode` (docs/reliability.md gives each figure's source). TLC is the
    /// fit; the other modes scale its wear-driven coefficients by the endurance ratio
    /// (a block of each mode reaches the same RBER at the same share of its rated life).
    pub fn default_for(mode: CellMode) -> RberParams {
        // (ε, endurance the TLC fit is scaled to)
        let (base, endurance) = match mode {
            CellMode::Slc => (1e-6, 50_000.0),
            CellMode::Mlc => (1e-5, 10_000.0),
            CellMode::Tlc => (5e-5, 3_000.0),
            CellMode::Qlc => (2e-4, 1_000.0),
        };
        let s: f64 = 3_000.0 / endurance;
        RberParams {
            base_rber: base,
            wear_coefficient: 2.2e-10 * s * s,
            wear_exponent: 2.0,
            retention_coefficient: 4.9e-7 * s,
            retention_pe_exponent: 1.0,
            retention_days_exponent: 0.4,
            disturb_coefficient: 1.2e-11 * s,
            disturb_pe_exponent: 1.0,
            disturb_reads_exponent: 1.0,
        }
    }

    /// The RBER at wear `pe` (P/E cycles), data age `days`, `reads` since the erase.
    #[inline]
    pub fn rber(&self, pe: f64, days: f64, reads: f64) -> f64 {
        let mut p = self.base_rber;
        if pe > 0.0 {
            p += self.wear_coefficient * pow(pe, self.wear_exponent);
            if days > 0.0 {
                p += self.retention_coefficient
                    * pow(pe, self.retention_pe_exponent)
                    * pow(days, self.retention_days_exponent);
            }
            if reads > 0.0 {
                p += self.disturb_coefficient
                    * pow(pe, self.disturb_pe_exponent)
                    * pow(reads, self.disturb_reads_exponent);
            }
        }
        p
    }

    /// The key (within the mode's table) that is out of range, and why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let nonneg = [
            ("base_rber", self.base_rber),
            ("wear_coefficient", self.wear_coefficient),
            ("retention_coefficient", self.retention_coefficient),
            ("disturb_coefficient", self.disturb_coefficient),
        ];
        for (k, v) in nonneg {
            if !(v.is_finite() && (0.0..1.0).contains(&v)) {
                return Err((k, format!("{v} must be a finite number in [0, 1)")));
            }
        }
        let exps = [
            ("wear_exponent", self.wear_exponent),
            ("retention_pe_exponent", self.retention_pe_exponent),
            ("retention_days_exponent", self.retention_days_exponent),
            ("disturb_pe_exponent", self.disturb_pe_exponent),
            ("disturb_reads_exponent", self.disturb_reads_exponent),
        ];
        for (k, v) in exps {
            if !(v.is_finite() && v > 0.0 && v <= 10.0) {
                return Err((k, format!("{v} must be a finite number in (0, 10]")));
            }
        }
        Ok(())
    }
}

/// `x^e`, exactly and without `powf` for the exponents 1 and 2 (the defaults' but one).
#[inline(always)]
fn pow(x: f64, e: f64) -> f64 {
    if e == 1.0 {
        x
    } else if e == 2.0 {
        x * x
    } else {
        x.powf(e)
    }
}

/// `P(X > t)` for `X ~ Binomial(n, p)`: the chance a codeword of `n` bits at RBER `p`
/// holds more than `t` bit errors. Summed term by term (`t + 1` terms).
pub fn codeword_fail(n: u32, p: f64, t: u32) -> f64 {
    if p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 || t >= n {
        return if t >= n { 0.0 } else { 1.0 };
    }
    let n_f = n as f64;
    // log of term 0: n·ln(1 − p); term i+1 = term i · (n − i)/(i + 1) · p/(1 − p).
    let ratio = p / (1.0 - p);
    let mut log_term = n_f * (-p).ln_1p();
    let mut cdf = 0.0;
    for i in 0..=t {
        cdf += log_term.exp();
        log_term += ((n - i) as f64 / (i + 1) as f64 * ratio).ln();
    }
    (1.0 - cdf).clamp(0.0, 1.0)
}

/// The read fails when one of its `codewords` codewords does: `1 − (1 − T)^C`.
#[inline]
pub fn read_fail(n: u32, p: f64, t: u32, codewords: u32) -> f64 {
    let cw = codeword_fail(n, p, t);
    if cw <= 0.0 {
        return 0.0;
    }
    -((codewords as f64) * (-cw).ln_1p()).exp_m1()
}

/// The default ladder (`[device.reliability]`'s defaults; docs/reliability.md gives each
/// figure's anchor): 72 bits per 1 KiB codeword hard, a 4-step table at f = 0.75, a soft
/// decoder of 100 bits. Calibrated with the TLC RBER defaults so that a year-old page of a
/// block at the rated 3,000 P/E fails the soft decoder with a chance ≈ 1e-16 per bit read
/// (JESD218's client UBER ≤ 1e-15) and at 4,500 P/E with ≈ 3e-3 per 4 KiB read.
pub const DEFAULT_ECC: Ecc = Ecc {
    codeword_bits: 8 * 1024,
    codeword_bytes: 1024,
    correctable_bits: 72,
    soft_correctable_bits: 100,
    retry_steps: 4,
    retry_rber_factor: 0.75,
};

/// The ECC and retry ladder (`[device.reliability]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ecc {
    /// Bits per codeword (8 × `codeword_bytes`).
    pub codeword_bits: u32,
    pub codeword_bytes: u32,
    /// t: bit errors the hard decoder corrects per codeword.
    pub correctable_bits: u32,
    /// Bit errors the soft decoder corrects per codeword (0: no soft-decode step).
    pub soft_correctable_bits: u32,
    /// S: retry steps of the table.
    pub retry_steps: u32,
    /// f: each step multiplies the effective RBER by this.
    pub retry_rber_factor: f64,
}

impl Ecc {
    /// Whether the ladder ends with a soft-decode step.
    #[inline]
    pub fn has_soft(&self) -> bool {
        self.soft_correctable_bits > 0
    }

    /// L: the index of the last step (S, or S + 1 with soft decoding).
    #[inline]
    pub fn last_step(&self) -> u32 {
        self.retry_steps + self.has_soft() as u32
    }

    /// F_s: the chance step `s` fails for a read of `codewords` codewords at RBER `p`.
    pub fn step_fail(&self, p: f64, s: u32, codewords: u32) -> f64 {
        let hard = s.min(self.retry_steps);
        let ps = p * self.retry_rber_factor.powi(hard as i32);
        let t = if s > self.retry_steps {
            self.soft_correctable_bits
        } else {
            self.correctable_bits
        };
        read_fail(self.codeword_bits, ps, t, codewords)
    }

    /// The first step at or after `from` that succeeds for draw `u` (`None`:
    /// uncorrectable). The steps' failure probabilities do not increase, so a read that
    /// would succeed before `from` succeeds at `from`.
    pub fn first_good(&self, p: f64, u: f64, from: u32, codewords: u32) -> Option<u32> {
        (from..=self.last_step()).find(|&s| u >= self.step_fail(p, s, codewords))
    }

    /// The expected retries of a read starting at `s0`: `Σ_{s=s0}^{L−1} F_s`.
    pub fn expected_retries(&self, p: f64, s0: u32, codewords: u32) -> f64 {
        (s0..self.last_step())
            .map(|s| self.step_fail(p, s, codewords))
            .sum()
    }

    /// The largest RBER whose step-0 failure probability (for `codewords` codewords) is
    /// below [`NEGLIGIBLE`] (bisection): a read at a lower RBER never retries.
    pub fn negligible_rber(&self, codewords: u32) -> f64 {
        let (mut lo, mut hi) = (0.0f64, 0.5f64);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if read_fail(self.codeword_bits, mid, self.correctable_bits, codewords) < NEGLIGIBLE {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The RBER at which a read of `codewords` codewords fails its hard decode at step 0
    /// with probability `prob` (bisection: the largest RBER whose failure probability is
    /// below `prob`). With a whole page's codewords and `prob` = 1e-3 it is the
    /// hard-decode limit the `rber` reclaim and refresh policies take their margin of.
    pub fn rber_at_read_fail(&self, codewords: u32, prob: f64) -> f64 {
        let (mut lo, mut hi) = (0.0f64, 0.5f64);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if read_fail(self.codeword_bits, mid, self.correctable_bits, codewords) < prob {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// What a read's retries were: stamped into its [`crate::NandOp`] at issue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryOutcome {
    /// Steps after the first read (the soft-decode step counts as one).
    pub retries: u32,
    /// The soft-decode step ran.
    pub soft: bool,
    /// No step corrected the read.
    pub uncorrectable: bool,
    /// The step that succeeded (the last step tried when uncorrectable).
    pub step: u32,
}

impl Ecc {
    /// The outcome of a read starting at step `s0` (≤ S) whose first good step is `k`.
    pub fn outcome(&self, s0: u32, k: Option<u32>) -> RetryOutcome {
        let last = self.last_step();
        let end = k.map_or(last, |k| k.max(s0));
        RetryOutcome {
            retries: end - s0,
            soft: self.has_soft() && end == last && end > self.retry_steps,
            uncorrectable: k.is_none(),
            step: end,
        }
    }
}

/// The reliability model of a device, resolved from its config once.
#[derive(Clone, Debug)]
pub struct RberModel {
    pub params: [RberParams; 4],
    pub ecc: Ecc,
    /// Wear every block had before the device was built (added to its erase count).
    pub initial_pe_cycles: u32,
    /// Age (ns) of the data present when the measured phase starts.
    pub initial_age_ns: u64,
    /// Per mode: the RBER below which a read of a whole page never retries.
    pub negligible: [f64; 4],
}

impl RberModel {
    pub fn new(
        params: [RberParams; 4],
        ecc: Ecc,
        initial_pe_cycles: u32,
        initial_age_ns: u64,
        page_codewords: u32,
    ) -> RberModel {
        let n = ecc.negligible_rber(page_codewords.max(1));
        RberModel {
            params,
            ecc,
            initial_pe_cycles,
            initial_age_ns,
            negligible: [n; 4],
        }
    }

    /// The RBER of a page of a block in `mode` erased `erases` times (this run), whose data
    /// is `age_ns` old, read `reads` times since its erase, with `excess` from erase
    /// suspensions.
    #[inline]
    pub fn rber(&self, mode: CellMode, erases: u32, age_ns: u64, reads: u32, excess: f64) -> f64 {
        let pe = (self.initial_pe_cycles as u64 + erases as u64) as f64;
        let days = age_ns as f64 / NS_PER_DAY;
        self.params[mode.index()].rber(pe, days, reads as f64) + excess
    }
}

/// The extra RBER of an erase from its suspensions (spec 01, docs/erase-suspend.md): Σ over
/// its loops of `coefficient · (count − limit)^exponent` for counts above `limit`
/// (N_safe), and whether any loop exceeded it. The RBER model's erase-suspension term.
pub fn suspension_excess(
    per_loop: &[u16],
    limit: u32,
    coefficient: f64,
    exponent: f64,
) -> (bool, f64) {
    let mut exceeded = false;
    let mut extra = 0.0;
    for &c in per_loop {
        if c as u32 > limit {
            exceeded = true;
            extra += coefficient * ((c as u32 - limit) as f64).powf(exponent);
        }
    }
    (exceeded, extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binom(n: u64, k: u64) -> f64 {
        (0..k).fold(1.0, |a, i| a * (n - i) as f64 / (i + 1) as f64)
    }

    /// The binomial tail against hand sums: N = 4, t = 1 at p = 0.1:
    /// P(X ≤ 1) = 0.9^4 + 4·0.1·0.9^3 = 0.6561 + 0.2916.
    #[test]
    fn codeword_tail_is_the_binomial_tail() {
        let f = codeword_fail(4, 0.1, 1);
        assert!((f - (1.0 - 0.6561 - 0.2916)).abs() < 1e-12, "{f}");
        assert_eq!(codeword_fail(4, 0.1, 4), 0.0);
        assert_eq!(codeword_fail(4, 0.0, 0), 0.0);
        // N = 10, t = 2, p = 0.3 against the direct sum.
        let want = 1.0
            - (0..=2)
                .map(|i| binom(10, i) * 0.3f64.powi(i as i32) * 0.7f64.powi(10 - i as i32))
                .sum::<f64>();
        assert!((codeword_fail(10, 0.3, 2) - want).abs() < 1e-12);
        // Two codewords: 1 − (1 − T)^2.
        let t = codeword_fail(10, 0.3, 2);
        assert!((read_fail(10, 0.3, 2, 2) - (1.0 - (1.0 - t) * (1.0 - t))).abs() < 1e-12);
    }

    fn tiny_ecc() -> Ecc {
        Ecc {
            codeword_bits: 4,
            codeword_bytes: 1,
            correctable_bits: 1,
            soft_correctable_bits: 2,
            retry_steps: 2,
            retry_rber_factor: 0.5,
        }
    }

    /// The ladder's step probabilities and the expected retries, by hand: N = 4, t = 1,
    /// p = 0.2, f = 0.5, S = 2, soft t = 2.
    #[test]
    fn ladder_expectations_by_hand() {
        let e = tiny_ecc();
        let tail = |p: f64, t: u32| {
            1.0 - (0..=t)
                .map(|i| binom(4, i as u64) * p.powi(i as i32) * (1.0 - p).powi(4 - i as i32))
                .sum::<f64>()
        };
        let f = [tail(0.2, 1), tail(0.1, 1), tail(0.05, 1), tail(0.05, 2)];
        for (s, want) in f.iter().enumerate() {
            assert!(
                (e.step_fail(0.2, s as u32, 1) - want).abs() < 1e-12,
                "step {s}"
            );
        }
        assert_eq!(e.last_step(), 3);
        let want = f[0] + f[1] + f[2];
        assert!((e.expected_retries(0.2, 0, 1) - want).abs() < 1e-12);
        assert!((e.expected_retries(0.2, 2, 1) - f[2]).abs() < 1e-12);
        // The draw u decides the first good step: u just above F_1 → step 1.
        assert_eq!(e.first_good(0.2, f[1] + 1e-9, 0, 1), Some(1));
        assert_eq!(e.first_good(0.2, f[0] + 1e-9, 0, 1), Some(0));
        assert_eq!(e.first_good(0.2, f[0] - 1e-9, 0, 1), Some(1));
        assert_eq!(e.first_good(0.2, f[3] / 2.0, 0, 1), None);
        assert_eq!(e.first_good(0.2, (f[2] + f[3]) / 2.0, 0, 1), Some(3));
        let o = e.outcome(0, Some(3));
        assert_eq!(
            (o.retries, o.soft, o.uncorrectable, o.step),
            (3, true, false, 3)
        );
        let o = e.outcome(1, None);
        assert_eq!((o.retries, o.soft, o.uncorrectable), (2, true, true));
        let o = e.outcome(2, Some(1));
        assert_eq!((o.retries, o.step), (0, 2));
    }

    /// The mean of many draws matches Σ F_s (a law-of-large-numbers check on a case where
    /// retries are common).
    #[test]
    fn drawn_retries_follow_the_formula() {
        let e = tiny_ecc();
        let n = 200_000;
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut sum = 0u64;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            sum += e.outcome(0, e.first_good(0.2, u, 0, 1)).retries as u64;
        }
        let mean = sum as f64 / n as f64;
        let want = e.expected_retries(0.2, 0, 1);
        assert!((mean - want).abs() < 0.01, "{mean} vs {want}");
    }

    /// RBER terms: a fresh block is ε; each term adds as written.
    #[test]
    fn rber_power_law_terms() {
        let p = RberParams {
            base_rber: 1e-4,
            wear_coefficient: 1e-9,
            wear_exponent: 2.0,
            retention_coefficient: 1e-6,
            retention_pe_exponent: 1.0,
            retention_days_exponent: 0.5,
            disturb_coefficient: 1e-10,
            disturb_pe_exponent: 1.0,
            disturb_reads_exponent: 1.0,
        };
        assert_eq!(p.rber(0.0, 100.0, 1000.0), 1e-4);
        let got = p.rber(1000.0, 4.0, 500.0);
        let want = 1e-4 + 1e-9 * 1e6 + 1e-6 * 1000.0 * 2.0 + 1e-10 * 1000.0 * 500.0;
        assert!((got - want).abs() < 1e-15, "{got} vs {want}");
        let m = RberModel::new(
            [p.clone(), p.clone(), p.clone(), p.clone()],
            tiny_ecc(),
            900,
            0,
            1,
        );
        let got = m.rber(CellMode::Tlc, 100, 4 * 86_400_000_000_000, 500, 1e-5);
        assert!((got - (want + 1e-5)).abs() < 1e-15);
    }

    /// The TLC defaults: a fresh block never retries; 2,500 P/E and a year is past the
    /// hard decoder's limit at step 0 but corrected within the table.
    #[test]
    fn tlc_defaults_fresh_and_aged() {
        let e = DEFAULT_ECC;
        let d = RberParams::default_for(CellMode::Tlc);
        let fresh = d.rber(0.0, 0.0, 0.0);
        assert!(fresh < e.negligible_rber(16));
        assert!(e.step_fail(fresh, 0, 16) < NEGLIGIBLE);
        let aged = d.rber(2500.0, 365.0, 0.0);
        assert!(e.step_fail(aged, 0, 4) > 0.99, "{aged}");
        let r = e.expected_retries(aged, 0, 4);
        assert!((2.0..3.0).contains(&r), "{r}");
        // Its soft step: ≈ 2e-17 per read by the upper-tail sum; the model's `1 − cdf`
        // in f64 floors near 1e-14 per read (3e-19 per bit), far below any bound here.
        assert!(upper_tail(8192, aged * 0.75f64.powi(4), 100) * 4.0 < 1e-16);
        let soft = e.step_fail(aged, e.last_step(), 4);
        assert!(soft < 1e-13, "{soft:e}");
    }

    /// `P(X > t)` for `X ~ Binomial(n, p)` summed over the upper tail term by term (the
    /// model sums the lower part and subtracts): an independent check of tiny tails.
    fn upper_tail(n: u32, p: f64, t: u32) -> f64 {
        let mut log_term = (n as f64) * (-p).ln_1p();
        let r = p / (1.0 - p);
        let mut sum = 0.0;
        for i in 0..n.min(t + 800) {
            if i > t {
                sum += log_term.exp();
            }
            log_term += ((n - i) as f64 / (i + 1) as f64 * r).ln();
        }
        sum
    }

    /// The anchors of the defaults (docs/reliability.md, Defaults): at the rated 3,000 P/E
    /// and a year (JESD218 client: UBER ≤ 1e-15 after 1 year at 30 °C) the soft decoder's
    /// failure per bit read is ≤ 1e-15 — and within 10× of it, the rated endurance being
    /// where the budget is spent —; at 1.5× the rating (4,500 P/E, a year) a 4 KiB read
    /// is uncorrectable with a chance above 1e-3, at 6,000 above one half; the table needs
    /// > 3 retries per 4 KiB read at 3K P/E and a year (ASPLOS 2024).
    #[test]
    fn tlc_defaults_meet_the_anchors() {
        let e = DEFAULT_ECC;
        let d = RberParams::default_for(CellMode::Tlc);
        let last = e.last_step();
        assert_eq!(last, 5);
        let rated = d.rber(3000.0, 365.0, 0.0);
        // The soft step's RBER is p·f^S; its codeword tail against the upper-tail sum.
        let q = rated * 0.75f64.powi(4);
        let cw = codeword_fail(8192, q, 100);
        let want = upper_tail(8192, q, 100);
        assert!((cw - want).abs() <= 0.05 * want, "{cw} vs {want}");
        let per_bit = cw / 8192.0;
        assert!((1e-16..=1e-15).contains(&per_bit), "{per_bit:e} at {rated}");
        // A 4 KiB read: 4 codewords.
        let f_rated = e.step_fail(rated, last, 4);
        assert!((f_rated - 4.0 * cw).abs() <= 1e-3 * f_rated, "{f_rated:e}");
        // Every ≤ rated point of the study (0/1K/3K × 0/30/365 d): below 1e-15 per bit.
        for pe in [0.0, 1000.0, 3000.0] {
            for days in [0.0, 30.0, 365.0] {
                let p = d.rber(pe, days, 0.0);
                assert!(e.step_fail(p, last, 4) <= f_rated, "{pe} {days}");
            }
        }
        let beyond = d.rber(4500.0, 365.0, 0.0);
        let f45 = e.step_fail(beyond, last, 4);
        assert!((1e-3..1e-2).contains(&f45), "{f45:e} at {beyond}");
        let f6 = e.step_fail(d.rber(6000.0, 365.0, 0.0), last, 4);
        assert!(f6 > 0.5 && f6 > f45, "{f6}");
        // Retries at 3K P/E and a year (`table`, 4 KiB): > 3, and at most the ladder.
        let r = e.expected_retries(rated, 0, 4);
        assert!((3.0..3.5).contains(&r), "{r}");
        // The raw RBER at the rated endurance (default read voltages): 2e-3 fresh data,
        // 1.8e-2 after a year — the order 1e-3…1e-2 of end-of-life 3D TLC.
        assert!((1.9e-3..2.1e-3).contains(&d.rber(3000.0, 0.0, 0.0)));
        assert!((1.7e-2..1.8e-2).contains(&rated), "{rated}");
    }

    #[test]
    fn suspension_excess_sums_loops_above_the_limit() {
        let (x, e) = suspension_excess(&[3, 12, 10, 15], 10, 1e-6, 2.0);
        assert!(x);
        assert!((e - 1e-6 * (4.0 + 25.0)).abs() < 1e-18);
        assert_eq!(suspension_excess(&[10, 1], 10, 1e-6, 2.0), (false, 0.0));
    }
}
