//! Principal branch `W0` of the Lambert W function, by Halley iteration.
//!
//! `W0(x)` is the solution `w >= -1` of `w * e^w = x`, defined for `x >= -1/e`.

use crate::ModelError;

/// `-1/e`, the branch point of the Lambert W function.
pub const BRANCH_POINT: f64 = -0.367_879_441_171_442_33;

/// Principal branch `W0(x)` of the Lambert W function for `x >= -1/e`.
///
/// Uses a series expansion around the branch point, `ln(1+x)` for moderate
/// arguments and `ln x - ln ln x` for large arguments as the starting guess, then
/// Halley iteration until the step is below `4 ε |w|`. Accurate to a few ulp away
/// from the branch point; close to `-1/e` the result inherits the conditioning of
/// `W` there (`dW/dx → ∞`), i.e. the error is `~ sqrt(ε)`-relative in `w + 1` only
/// if `x` itself was rounded.
///
/// # Errors
/// [`ModelError::InvalidArgument`] (`x`) if `x` is NaN or `x < -1/e` (beyond a
/// rounding tolerance of `1e-15`, inside which the branch point value `-1` is returned).
pub fn lambert_w0(x: f64) -> Result<f64, ModelError> {
    if x.is_nan() {
        return Err(ModelError::invalid("x", x, "must not be NaN"));
    }
    if x == f64::INFINITY {
        return Ok(f64::INFINITY);
    }
    let d = x - BRANCH_POINT;
    if d < 0.0 {
        if d > -1e-15 {
            return Ok(-1.0);
        }
        return Err(ModelError::invalid("x", x, "must be >= -1/e"));
    }
    if x == 0.0 {
        return Ok(0.0);
    }
    // Initial guess.
    let mut w = if d < 0.25 {
        // Series around the branch point: p = sqrt(2 (e x + 1)).
        let p = (2.0 * std::f64::consts::E * d).sqrt();
        -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p * p * p
    } else if x < 3.0 {
        // Between the two regimes a plain log1p start converges in a few steps.
        let l = x.ln_1p();
        if x < 0.0 {
            // ln(1+x) under-estimates |w| near -1/e only mildly here (d >= 0.25).
            l
        } else {
            l * (1.0 - l.ln_1p() / (2.0 + l))
        }
    } else {
        let l1 = x.ln();
        let l2 = l1.ln();
        l1 - l2 + l2 / l1
    };
    if d == 0.0 {
        return Ok(-1.0);
    }
    for _ in 0..64 {
        let ew = w.exp();
        let f = w * ew - x;
        let wp1 = w + 1.0;
        if wp1 == 0.0 {
            break;
        }
        let denom = ew * wp1 - (w + 2.0) * f / (2.0 * wp1);
        if denom == 0.0 || !denom.is_finite() {
            break;
        }
        let step = f / denom;
        let next = w - step;
        // Stay on the principal branch.
        let next = if next < -1.0 { (w - 1.0) / 2.0 } else { next };
        let converged = (next - w).abs() <= 4.0 * f64::EPSILON * next.abs().max(1e-300);
        w = next;
        if converged {
            break;
        }
    }
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1.0)
    }

    #[test]
    fn known_values() {
        let omega = 0.567_143_290_409_783_8;
        assert!(close(lambert_w0(1.0).unwrap(), omega, 1e-14));
        assert_eq!(lambert_w0(BRANCH_POINT).unwrap(), -1.0);
        assert_eq!(lambert_w0(-1.0 / std::f64::consts::E).unwrap(), -1.0);
        assert!(close(lambert_w0(std::f64::consts::E).unwrap(), 1.0, 1e-14));
        assert_eq!(lambert_w0(0.0).unwrap(), 0.0);
        // W(-ln2/2) = -ln 2 (since -ln2 * e^{-ln2} = -ln2/2)
        let ln2 = std::f64::consts::LN_2;
        assert!(close(lambert_w0(-ln2 / 2.0).unwrap(), -ln2, 1e-13));
        // W(2 e^2) = 2, W(10 e^10) = 10, W(1e6) reference value.
        assert!(close(lambert_w0(2.0 * 2f64.exp()).unwrap(), 2.0, 1e-14));
        assert!(close(lambert_w0(10.0 * 10f64.exp()).unwrap(), 10.0, 1e-14));
        assert!(close(
            lambert_w0(1e6).unwrap(),
            11.383_358_086_140_053,
            1e-13
        ));
        // Small argument: W(x) ≈ x - x^2.
        assert!(close(lambert_w0(1e-10).unwrap(), 1e-10 - 1e-20, 1e-15));
        // -α e^{-α} at α=2 gives the non-trivial root used by the FIFO model.
        let w = lambert_w0(-2.0 * (-2.0f64).exp()).unwrap();
        assert!(close(w, -0.406_375_739_959_959_9, 1e-13), "{w}");
    }

    #[test]
    fn bad_arguments() {
        assert!(lambert_w0(-0.5).is_err());
        assert!(lambert_w0(f64::NAN).is_err());
        assert_eq!(lambert_w0(f64::INFINITY).unwrap(), f64::INFINITY);
    }

    proptest::proptest! {
        #[test]
        fn inverse_identity(x in -0.367_879_441_171_44f64..1e8) {
            let w = lambert_w0(x).unwrap();
            proptest::prop_assert!(w >= -1.0);
            let back = w * w.exp();
            proptest::prop_assert!((back - x).abs() <= 1e-12 * x.abs().max(1e-3), "x={x} w={w} back={back}");
        }
    }
}
