//! `rber`: relocate a full block, on a read of it, once its modelled RBER (the device's
//! `[device.reliability]` model: wear, data age, reads since its erase, erase-suspension
//! excess) reaches `margin` × the ECC's hard-decode limit
//! ([`RelocationShape::hard_limit_rber`]): issue 51's "when its RBER nears the
//! capability", as a controller that tracks each block's error estimate relocates it
//! before its reads start to retry (Cai et al., Proc. IEEE 2017, §5: refresh and reclaim
//! driven by the measured or predicted error rate). The block is asked on every read of
//! it, so its RBER is computed on each read (only with this policy).

use crate::reliability::{BlockView, RelocationPolicy, RelocationShape, Trigger};
use crate::SimRng;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Share of the hard-decode limit at which a block is due (in (0, 1]).
    pub margin: f64,
    /// Share of the hard-decode limit from which its relocation is urgent (0: never; else
    /// from `margin` to 1).
    pub urgent_margin: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            margin: 0.8,
            urgent_margin: 0.0,
        }
    }
}

/// The checks both `rber` policies make of `margin` and `urgent_margin`.
pub(crate) fn check_margins(margin: f64, urgent: f64) -> Result<(), (&'static str, String)> {
    if !(margin.is_finite() && margin > 0.0 && margin <= 1.0) {
        return Err(("margin", format!("{margin} must be a number in (0, 1]")));
    }
    if urgent != 0.0 && !(urgent.is_finite() && urgent >= margin && urgent <= 1.0) {
        return Err((
            "urgent_margin",
            format!("{urgent} must be 0 (never urgent) or in [margin ({margin}), 1]"),
        ));
    }
    Ok(())
}

/// Margins from "due on a fresh block" to the default, so the swarm's short runs on fresh
/// and aged devices reclaim (some at every read).
pub(crate) fn swarm_margins(rng: &mut SimRng) -> (f64, f64) {
    use rand::Rng;
    let margin: f64 = [0.002, 0.02, 0.2, 0.8][rng.gen_range(0..4)];
    let urgent = [0.0, margin, (2.0 * margin).min(1.0)][rng.gen_range(0..3)];
    (margin, urgent)
}

impl crate::PolicyParams for Params {
    fn check(&self) -> Result<(), (&'static str, String)> {
        check_margins(self.margin, self.urgent_margin)
    }

    fn swarm(rng: &mut SimRng, _: &crate::SwarmCtx) -> Self {
        let (margin, urgent_margin) = swarm_margins(rng);
        Params {
            margin,
            urgent_margin,
        }
    }
}

impl crate::reliability::RelocationParams for Params {}

/// The RBER marks of an `rber` policy: due at `margin` × the limit, urgent at
/// `urgent_margin` × it (`f64::INFINITY`: never).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Marks {
    pub due: f64,
    pub urgent: f64,
}

impl Marks {
    pub(crate) fn new(margin: f64, urgent_margin: f64, shape: &RelocationShape) -> Marks {
        Marks {
            due: margin * shape.hard_limit_rber,
            urgent: if urgent_margin == 0.0 {
                f64::INFINITY
            } else {
                urgent_margin * shape.hard_limit_rber
            },
        }
    }
}

#[derive(Clone)]
pub struct RberReclaim {
    marks: Marks,
}

impl RelocationPolicy for RberReclaim {
    type Params = Params;
    fn new(p: &Params, shape: &RelocationShape) -> Self {
        RberReclaim {
            marks: Marks::new(p.margin, p.urgent_margin, shape),
        }
    }
    /// Every read asks (the RBER moves with wear and age, not only the read count).
    #[inline]
    fn read_limit(&self) -> u32 {
        0
    }
    #[inline]
    fn due(&self, b: &BlockView) -> Option<Trigger> {
        (b.rber >= self.marks.due).then_some(Trigger::ReclaimRber)
    }
    #[inline]
    fn needs_rber(&self) -> bool {
        true
    }
    #[inline]
    fn urgent(&self, b: &BlockView) -> bool {
        b.rber >= self.marks.urgent
    }
    #[inline]
    fn can_be_urgent(&self) -> bool {
        self.marks.urgent.is_finite()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(rber: f64) -> BlockView {
        BlockView {
            reads_since_erase: 0,
            data_age_ns: 0,
            erase_count: 0,
            rber,
        }
    }

    /// Due from exactly `margin` × the limit, urgent from `urgent_margin` × it.
    #[test]
    fn due_and_urgent_at_the_marks() {
        let shape = RelocationShape {
            hard_limit_rber: 0.005,
        };
        let p = RberReclaim::new(
            &Params {
                margin: 0.5,
                urgent_margin: 0.8,
            },
            &shape,
        );
        assert_eq!(p.due(&view(0.0025)), Some(Trigger::ReclaimRber));
        assert_eq!(p.due(&view(0.0025 - 1e-12)), None);
        assert!(!p.urgent(&view(0.0039)) && p.urgent(&view(0.004)));
        assert!(p.can_be_urgent());
        let never = RberReclaim::new(&Params::default(), &shape);
        assert!(!never.can_be_urgent() && !never.urgent(&view(1.0)));
        use crate::PolicyParams;
        let bad = |margin, urgent_margin| {
            Params {
                margin,
                urgent_margin,
            }
            .check()
            .err()
            .map(|e| e.0)
        };
        assert_eq!(bad(0.0, 0.0), Some("margin"));
        assert_eq!(bad(1.5, 0.0), Some("margin"));
        assert_eq!(bad(0.8, 0.5), Some("urgent_margin"));
        assert_eq!(bad(0.8, 1.1), Some("urgent_margin"));
        assert_eq!(bad(0.8, 0.9), None);
    }
}
