//! # ssdlab-model — analytic write amplification vs over-provisioning
//!
//! Pure-math models of the write amplification factor (WAF = NAND programs per host
//! page write) of a page-mapped FTL under random page writes, as a function of the
//! over-provisioning ratio
//!
//! ```text
//! op = (physical_pages − logical_pages) / logical_pages,   α = 1 + op = P / U
//! ```
//!
//! where `P` counts the physical pages that can hold (valid or stale) data. Free
//! blocks the FTL keeps in reserve for GC, and the unwritten part of the open write
//! block, hold no data and are **not** part of `P`; use [`waf_for_device`] (or
//! [`effective_op_ratio`]) to subtract them — this matters at small OP, see
//! `docs/op-model.md`.
//!
//! | function | traffic | model |
//! |---|---|---|
//! | [`waf`]`(Fifo, Uniform, ..)` | uniform | Hu et al. 2009 / Desnoyers 2012: `WAF = α / (α + W0(−α e^{−α}))` ([`fifo`]) |
//! | [`waf`]`(Greedy, Uniform, ..)` | uniform | mean-field (fluid) limit of greedy with `b` pages per block, closed form with harmonic numbers ([`greedy`]); `b → ∞` gives the FIFO value (Van Houdt 2013) |
//! | [`waf`]`(Fifo, HotCold{..}, ..)` | hot/cold, mixed in blocks | Desnoyers-style fixed point over per-class survival ([`fifo`]) |
//! | [`waf`]`(Greedy, HotCold{..}, ..)` | hot/cold, mixed in blocks | two-class mean-field (fluid) steady state over `(hot, cold)` valid counts, numerically solved ([`greedy`]) |
//!
//! Costs derived from a WAF ([`predict_costs`], [`sustained_write_bytes_per_sec`])
//! assume the functional "single serial resource" mode: every NAND operation takes
//! its full latency and nothing overlaps. [`advise`] scans an OP grid against a
//! requirement and a flash price.
//!
//! All functions validate their arguments and return [`ModelError`] naming the bad
//! argument instead of panicking.

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub mod advisor;
pub mod cost;
pub mod fifo;
pub mod greedy;
pub mod lambert;

pub use advisor::{advise, Advice, AdvisorInput, AdvisorRow, NandTiming, OpGrid, Requirement};
pub use cost::{
    die_ns_per_host_unit, predict_costs, sustained_write_bytes_per_sec, CostPrediction, DieModel,
};
pub use lambert::lambert_w0;

/// Largest pages-per-block accepted (keeps the greedy hot/cold solver bounded).
pub const MAX_PAGES_PER_BLOCK: u32 = 4096;

/// Errors of the model functions. Every variant names the offending argument.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ModelError {
    /// An argument is out of its domain.
    #[error("invalid argument `{name}` = {value}: {reason}")]
    InvalidArgument {
        /// Argument name as in the function signature.
        name: &'static str,
        /// The value passed (converted to `f64`).
        value: f64,
        /// What the domain is.
        reason: &'static str,
    },
    /// A numerical solver failed (should not happen for valid arguments).
    #[error("model solver did not converge for `{name}` = {value}: {reason}")]
    NoConvergence {
        /// The argument the solve was parameterised by.
        name: &'static str,
        /// Its value.
        value: f64,
        /// Which step failed.
        reason: &'static str,
    },
}

impl ModelError {
    pub(crate) fn invalid(name: &'static str, value: f64, reason: &'static str) -> Self {
        ModelError::InvalidArgument {
            name,
            value,
            reason,
        }
    }
}

/// Garbage-collection victim selection policy being modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GcPolicyModel {
    /// Pick the block with the fewest valid pages (ties broken arbitrarily).
    Greedy,
    /// Pick the least recently written block (circular log). Under write-only
    /// traffic LRU victim selection is the same policy.
    Fifo,
}

/// Host write traffic (page-granular, independent random writes).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Traffic {
    /// Every logical page equally likely.
    Uniform,
    /// A fraction `hot_io_fraction` (r) of the writes goes, uniformly, to a fraction
    /// `hot_space_fraction` (f) of the logical pages; the rest uniformly to the rest.
    /// Hot and cold pages are written into the same blocks (one write frontier,
    /// no separation). `r == f` is uniform traffic.
    HotCold {
        /// r, in (0, 1).
        hot_io_fraction: f64,
        /// f, in (0, 1).
        hot_space_fraction: f64,
    },
}

impl Traffic {
    /// Validates and, when `r == f`, returns `None` (uniform); else `Some((r, f))`.
    fn hot_cold(self) -> Result<Option<(f64, f64)>, ModelError> {
        match self {
            Traffic::Uniform => Ok(None),
            Traffic::HotCold {
                hot_io_fraction: r,
                hot_space_fraction: f,
            } => {
                if !(r > 0.0 && r < 1.0) {
                    return Err(ModelError::invalid(
                        "hot_io_fraction",
                        r,
                        "must be in (0, 1)",
                    ));
                }
                if !(f > 0.0 && f < 1.0) {
                    return Err(ModelError::invalid(
                        "hot_space_fraction",
                        f,
                        "must be in (0, 1)",
                    ));
                }
                if (r - f).abs() < 1e-12 {
                    Ok(None)
                } else {
                    Ok(Some((r, f)))
                }
            }
        }
    }
}

pub(crate) fn check_op(op_ratio: f64) -> Result<f64, ModelError> {
    if op_ratio.is_nan() || op_ratio.is_infinite() {
        return Err(ModelError::invalid("op_ratio", op_ratio, "must be finite"));
    }
    if op_ratio <= 0.0 {
        return Err(ModelError::invalid(
            "op_ratio",
            op_ratio,
            "must be > 0: with no spare data space WAF is unbounded (count only data-holding spare; see effective_op_ratio)",
        ));
    }
    if op_ratio > 1e6 {
        return Err(ModelError::invalid("op_ratio", op_ratio, "must be <= 1e6"));
    }
    Ok(op_ratio)
}

pub(crate) fn check_b(pages_per_block: u32) -> Result<u32, ModelError> {
    if pages_per_block == 0 || pages_per_block > MAX_PAGES_PER_BLOCK {
        return Err(ModelError::invalid(
            "pages_per_block",
            pages_per_block as f64,
            "must be in 1..=4096",
        ));
    }
    Ok(pages_per_block)
}

/// Steady-state write amplification (NAND programs per host page write, ≥ 1) of a
/// page-mapped FTL with the given victim policy, traffic, effective OP ratio and
/// pages per block.
///
/// * `op_ratio` — `(P − U)/U` counting only data-holding physical pages (see
///   [`effective_op_ratio`]); must be `> 0`.
/// * `pages_per_block` — `b`; FIFO's WAF does not depend on it (mean-field), greedy's
///   does (greedy improves as `b` shrinks and tends to FIFO as `b → ∞`).
///
/// # Errors
/// [`ModelError::InvalidArgument`] naming `op_ratio`, `pages_per_block`,
/// `hot_io_fraction` or `hot_space_fraction`.
pub fn waf(
    policy: GcPolicyModel,
    traffic: Traffic,
    op_ratio: f64,
    pages_per_block: u32,
) -> Result<f64, ModelError> {
    let op = check_op(op_ratio)?;
    let b = check_b(pages_per_block)?;
    let hc = traffic.hot_cold()?;
    match (policy, hc) {
        (GcPolicyModel::Fifo, None) => fifo::waf_uniform(op),
        (GcPolicyModel::Fifo, Some((r, f))) => fifo::waf_hot_cold(op, r, f),
        (GcPolicyModel::Greedy, None) => greedy::waf_uniform(op, b),
        (GcPolicyModel::Greedy, Some((r, f))) => {
            if b > greedy::MAX_HOT_COLD_PAGES_PER_BLOCK {
                return Err(ModelError::invalid(
                    "pages_per_block",
                    b as f64,
                    "must be <= 1024 for the greedy hot/cold model (O(b^2) state space)",
                ));
            }
            greedy::waf_hot_cold(op, b, r, f)
        }
    }
}

/// Where an FTL writes host data and GC copies; decides how much of the open
/// block(s) holds no data on average (time-averaged over host writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FrontierLayout {
    /// One open block receives both host pages and GC copies. GC copies a victim's
    /// `WAF−1`-per-host-write pages in a burst right after the block is opened, so
    /// the unwritten part averages `b / (2·WAF)` pages over host-write time.
    Shared,
    /// Separate open blocks for host writes and GC copies: about `b/2` unwritten
    /// pages each, `b` in total.
    Separate,
}

/// WAF of a concrete device: computes the effective OP from the geometry, the
/// free blocks the FTL keeps in reserve and the open-block layout, and solves the
/// small fixed point between WAF and the open block's unwritten space
/// ([`FrontierLayout::Shared`]). Returns `(waf, effective_op_ratio)`.
///
/// `reserve_free_blocks` is the time-averaged number of erased blocks held back
/// (e.g. `2.0` for an FTL that cleans whenever fewer than two are free).
///
/// # Errors
/// As [`waf`] and [`effective_op_ratio`]; `physical_pages` when the device has no
/// data-holding spare left after the reserve and open blocks.
#[allow(clippy::too_many_arguments)]
pub fn waf_for_device(
    policy: GcPolicyModel,
    traffic: Traffic,
    logical_pages: u64,
    physical_pages: u64,
    pages_per_block: u32,
    reserve_free_blocks: f64,
    layout: FrontierLayout,
) -> Result<(f64, f64), ModelError> {
    let b = check_b(pages_per_block)? as f64;
    if !(reserve_free_blocks >= 0.0 && reserve_free_blocks.is_finite()) {
        return Err(ModelError::invalid(
            "reserve_free_blocks",
            reserve_free_blocks,
            "must be finite and >= 0",
        ));
    }
    let no_spare = |_| {
        ModelError::invalid(
            "physical_pages",
            physical_pages as f64,
            "leaves no data-holding spare after the GC reserve and open blocks",
        )
    };
    let eff_for = |w: f64| -> Result<f64, ModelError> {
        let open = match layout {
            FrontierLayout::Shared => b / (2.0 * w),
            FrontierLayout::Separate => b,
        };
        effective_op_ratio(
            logical_pages,
            physical_pages,
            reserve_free_blocks * b + open,
        )
    };
    // Start from the conservative WAF = 1 (largest open-block loss).
    let mut eff = eff_for(1.0)?;
    let mut w = waf(policy, traffic, eff, pages_per_block).map_err(|e| match e {
        ModelError::InvalidArgument {
            name: "op_ratio", ..
        } => no_spare(e),
        e => e,
    })?;
    for _ in 0..100 {
        eff = eff_for(w)?;
        let next = waf(policy, traffic, eff, pages_per_block)?;
        let done = (next - w).abs() <= 1e-12 * w;
        w = next;
        if done {
            break;
        }
    }
    Ok((w, eff))
}

/// Effective OP ratio for the models: `(physical − non_data − logical) / logical`.
///
/// `non_data_pages` is the (time-averaged) number of physical pages that hold no
/// data: free blocks kept in reserve for GC (`reserve_blocks · b`) plus the
/// unwritten part of each open write block (about `b/2` per open block). Example: an
/// FTL that triggers GC when fewer than 2 free blocks remain and has one open block
/// has `non_data_pages ≈ 2.5 · b`.
///
/// # Errors
/// `logical_pages` = 0, `physical_pages < logical_pages`, or a negative / non-finite
/// `non_data_pages`. A result `≤ 0` is returned as is (the models then refuse it).
pub fn effective_op_ratio(
    logical_pages: u64,
    physical_pages: u64,
    non_data_pages: f64,
) -> Result<f64, ModelError> {
    if logical_pages == 0 {
        return Err(ModelError::invalid("logical_pages", 0.0, "must be > 0"));
    }
    if physical_pages < logical_pages {
        return Err(ModelError::invalid(
            "physical_pages",
            physical_pages as f64,
            "must be >= logical_pages",
        ));
    }
    if !(non_data_pages >= 0.0 && non_data_pages.is_finite()) {
        return Err(ModelError::invalid(
            "non_data_pages",
            non_data_pages,
            "must be finite and >= 0",
        ));
    }
    Ok((physical_pages as f64 - non_data_pages - logical_pages as f64) / logical_pages as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_errors_name_the_argument() {
        let e = waf(GcPolicyModel::Greedy, Traffic::Uniform, 0.0, 128).unwrap_err();
        assert!(matches!(
            e,
            ModelError::InvalidArgument {
                name: "op_ratio",
                ..
            }
        ));
        let e = waf(GcPolicyModel::Fifo, Traffic::Uniform, f64::NAN, 128).unwrap_err();
        assert!(e.to_string().contains("op_ratio"));
        let e = waf(GcPolicyModel::Greedy, Traffic::Uniform, 0.1, 0).unwrap_err();
        assert!(e.to_string().contains("pages_per_block"));
        let hc = Traffic::HotCold {
            hot_io_fraction: 1.2,
            hot_space_fraction: 0.2,
        };
        let e = waf(GcPolicyModel::Greedy, hc, 0.1, 32).unwrap_err();
        assert!(e.to_string().contains("hot_io_fraction"));
        let hc = Traffic::HotCold {
            hot_io_fraction: 0.8,
            hot_space_fraction: 0.0,
        };
        let e = waf(GcPolicyModel::Fifo, hc, 0.1, 32).unwrap_err();
        assert!(e.to_string().contains("hot_space_fraction"));
        assert!(effective_op_ratio(0, 10, 0.0).is_err());
        assert!(effective_op_ratio(10, 9, 0.0).is_err());
        assert!(effective_op_ratio(10, 20, -1.0).is_err());
        assert_eq!(effective_op_ratio(100, 150, 10.0).unwrap(), 0.4);
    }

    #[test]
    fn large_b_uniform_greedy_tends_to_fifo() {
        for &op in &[0.1, 0.5, 1.0] {
            let g = waf(GcPolicyModel::Greedy, Traffic::Uniform, op, 4096).unwrap();
            let f = waf(GcPolicyModel::Fifo, Traffic::Uniform, op, 4096).unwrap();
            assert!(g <= f && g > 0.99 * f);
        }
        let hc = Traffic::HotCold {
            hot_io_fraction: 0.8,
            hot_space_fraction: 0.2,
        };
        assert!(waf(GcPolicyModel::Greedy, hc, 0.2, 2048)
            .unwrap_err()
            .to_string()
            .contains("pages_per_block"));
    }

    #[test]
    fn monotone_and_greedy_not_worse_than_fifo() {
        for &b in &[1u32, 4, 32, 128] {
            for traffic in [
                Traffic::Uniform,
                Traffic::HotCold {
                    hot_io_fraction: 0.8,
                    hot_space_fraction: 0.2,
                },
                Traffic::HotCold {
                    hot_io_fraction: 0.9,
                    hot_space_fraction: 0.1,
                },
            ] {
                let mut prev_g = f64::INFINITY;
                let mut prev_f = f64::INFINITY;
                for i in 1..=40 {
                    let op = 0.05 * i as f64;
                    let g = waf(GcPolicyModel::Greedy, traffic, op, b).unwrap();
                    let f = waf(GcPolicyModel::Fifo, traffic, op, b).unwrap();
                    assert!(g >= 1.0 && f >= 1.0, "b={b} op={op} g={g} f={f}");
                    assert!(g <= prev_g + 1e-9, "greedy not monotone b={b} op={op}");
                    assert!(f <= prev_f + 1e-9, "fifo not monotone b={b} op={op}");
                    assert!(
                        g <= f * (1.0 + 1e-6),
                        "greedy {g} > fifo {f} at b={b} op={op}"
                    );
                    prev_g = g;
                    prev_f = f;
                }
            }
        }
    }
}
