//! FIFO (circular-log, equivalently LRU for write-only traffic) cleaning.
//!
//! ## Uniform traffic — Hu et al. (SYSTOR 2009), Desnoyers (SYSTOR 2012, ACM TOS 2014)
//!
//! Let `U` be the logical pages, `P = αU` the data-holding physical pages. Under
//! FIFO every block is cleaned after the whole log (`P` programs) has been written
//! past it. If `u` is the expected valid fraction of a victim, each cleaned block
//! frees `(1−u)·b` pages for host data, so one trip around the log carries
//! `P(1−u)` host writes, and each of them overwrites a given page with probability
//! `1/U`. A page therefore survives to cleaning with probability
//! `(1 − 1/U)^{P(1−u)} → e^{−α(1−u)}`, giving the fixed point
//!
//! ```text
//! u = e^{−α(1−u)}   ⇔   u = −W0(−α e^{−α}) / α
//! WAF = 1/(1−u) = α / (α + W0(−α e^{−α}))
//! ```
//!
//! (`u = 1` is the trivial root on the other branch `W−1(−α e^{−α}) = −α`; the
//! physical solution is on the principal branch `W0`.) The expectation is linear
//! in the page survival probabilities, so the result does not depend on the pages
//! per block `b`. `α → 1` gives `WAF → ∞`; `α = 2` gives `WAF ≈ 1.2550`.
//!
//! ## Hot/cold traffic, mixed placement (Desnoyers 2012 §5 style)
//!
//! A fraction `r` of writes goes to a fraction `f` of the pages. Hot pages are
//! overwritten at rate `μh = r/(fU)`, cold at `μc = (1−r)/((1−f)U)` per host write.
//! All blocks reach the log tail after the same number `A = P/WAF` of host writes, so
//! a hot page survives w.p. `ph = e^{−μh A}` and a cold one w.p. `pc = e^{−μc A}`.
//! Each surviving page is copied (a new program of the same class), so hot programs
//! per host write are `r/(1−ph)` and cold ones `(1−r)/(1−pc)`:
//!
//! ```text
//! WAF = r / (1 − e^{−α r / (f·WAF)}) + (1−r) / (1 − e^{−α (1−r) / ((1−f)·WAF)})
//! ```
//!
//! solved for its unique root `WAF > 1` by bisection. With `r = f` it reduces to the
//! uniform formula. Again independent of `b`, and independent of how hot and cold
//! pages are interleaved inside blocks (only expectations enter).

use crate::{lambert::lambert_w0, ModelError};

/// FIFO WAF under uniform random writes, `op > 0` already validated.
pub(crate) fn waf_uniform(op: f64) -> Result<f64, ModelError> {
    let alpha = 1.0 + op;
    let w = lambert_w0(-alpha * (-alpha).exp())?;
    // v = 1 − u = (α + W)/α. Polish with Newton on g(v) = 1 − v − e^{−αv}, which is
    // better conditioned than the Lambert argument close to the branch point (α → 1).
    let mut v = ((alpha + w) / alpha).clamp(f64::MIN_POSITIVE, 1.0);
    if op < 0.05 {
        // Near α = 1 the root is v ≈ 2(α−1)/α; start from the larger of the two
        // estimates (Newton on the convex g converges monotonically from the right).
        v = v.max(2.0 * op / alpha).min(1.0);
    }
    for _ in 0..50 {
        let e = (-alpha * v).exp();
        let g = 1.0 - v - e;
        let dg = -1.0 + alpha * e;
        if dg == 0.0 {
            break;
        }
        let next = v - g / dg;
        if !(next > 0.0 && next <= 1.0) {
            break;
        }
        let done = (next - v).abs() <= 1e-15 * v;
        v = next;
        if done {
            break;
        }
    }
    if !(v > 0.0 && v.is_finite()) {
        return Err(ModelError::NoConvergence {
            name: "op_ratio",
            value: op,
            reason: "FIFO fixed point",
        });
    }
    Ok(1.0 / v)
}

/// Right-hand side of the FIFO hot/cold fixed point for a trial WAF `w`.
fn hot_cold_rhs(alpha: f64, r: f64, f: f64, w: f64) -> f64 {
    let term = |share: f64, space: f64| -> f64 {
        let x = alpha * share / (space * w);
        // share / (1 − e^{−x}) without cancellation for small x.
        share / -(-x).exp_m1()
    };
    term(r, f) + term(1.0 - r, 1.0 - f)
}

/// FIFO WAF under hot/cold traffic with mixed placement.
pub(crate) fn waf_hot_cold(op: f64, r: f64, f: f64) -> Result<f64, ModelError> {
    let alpha = 1.0 + op;
    let g = |w: f64| hot_cold_rhs(alpha, r, f, w) - w;
    let mut lo = 1.0;
    let mut hi = 2.0;
    // g(1) > 0; g(w) ~ w(1/α − 1) + O(1) → −∞.
    let mut guard = 0;
    while g(hi) > 0.0 {
        lo = hi;
        hi *= 2.0;
        guard += 1;
        if guard > 200 {
            return Err(ModelError::NoConvergence {
                name: "op_ratio",
                value: op,
                reason: "FIFO hot/cold bracket",
            });
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if g(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-14 * hi {
            break;
        }
    }
    Ok(0.5 * (lo + hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_points() {
        // α = 2: WAF = 2/(2 + W0(−2e^{−2})) = 1.2550009749...
        let w = waf_uniform(1.0).unwrap();
        assert!((w - 1.255_000_974_915_975).abs() < 1e-12, "{w}");
        // Fixed point holds across the range, including close to α = 1.
        for &op in &[1e-4, 1e-3, 0.01, 0.1, 0.28, 0.5, 1.0, 3.0, 10.0] {
            let w = waf_uniform(op).unwrap();
            let u = 1.0 - 1.0 / w;
            let resid = u - (-(1.0 + op) * (1.0 - u)).exp();
            assert!(resid.abs() < 1e-12, "op={op} resid={resid}");
        }
        // Small-op asymptote: 1 − u ≈ 2 op  ⇒ WAF ≈ 1/(2 op).
        let w = waf_uniform(1e-4).unwrap();
        assert!((w * 2e-4 - 1.0).abs() < 1e-3, "{w}");
    }

    #[test]
    fn hot_cold_reduces_to_uniform() {
        for &op in &[0.05, 0.3, 1.0, 2.0] {
            let a = waf_uniform(op).unwrap();
            let b = waf_hot_cold(op, 0.3 + 1e-13, 0.3).unwrap();
            assert!((a - b).abs() < 1e-9 * a, "op={op} {a} {b}");
        }
        // Skew hurts FIFO with mixed placement.
        assert!(waf_hot_cold(0.2, 0.9, 0.1).unwrap() > waf_uniform(0.2).unwrap());
    }
}
