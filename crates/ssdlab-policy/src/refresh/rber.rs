//! `rber`: relocate a full block whose modelled RBER (the device's `[device.reliability]`
//! model: wear, data age, reads since its erase, erase-suspension excess) reaches
//! `margin` × the ECC's hard-decode limit ([`RelocationShape::hard_limit_rber`]), found
//! by a scan every `scan_interval_ms`: issue 51's refresh "near the capability", the
//! error-rate-driven retention refresh of Cai et al., Proc. IEEE 2017 §5 in place of a
//! fixed age. The RBER is computed for each full block at each scan (only with this
//! policy).

use crate::reclaim::rber::{check_margins, swarm_margins, Marks};
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
    /// Simulated time between two scans of the blocks (ms, ≥ 1; a scan runs at the host's
    /// first command after it elapsed).
    pub scan_interval_ms: u64,
}

impl Default for Params {
    fn default() -> Self {
        // Scanned hourly, as `age`.
        Params {
            margin: 0.8,
            urgent_margin: 0.0,
            scan_interval_ms: 3_600_000,
        }
    }
}

/// Longest scan interval (ms): its nanoseconds fit a u64 with room.
const MAX_MS: u64 = u64::MAX / 1_000_000 / 4;

impl crate::PolicyParams for Params {
    fn check(&self) -> Result<(), (&'static str, String)> {
        check_margins(self.margin, self.urgent_margin)?;
        let v = self.scan_interval_ms;
        if v == 0 || v > MAX_MS {
            return Err(("scan_interval_ms", format!("{v} must be from 1 to {MAX_MS} ms")));
        }
        Ok(())
    }

    fn swarm(rng: &mut SimRng, _: &crate::SwarmCtx) -> Self {
        use rand::Rng;
        let (margin, urgent_margin) = swarm_margins(rng);
        Params {
            margin,
            urgent_margin,
            scan_interval_ms: [10, 1000][rng.gen_range(0..2)],
        }
    }
}

impl crate::reliability::RelocationParams for Params {}

#[derive(Clone)]
pub struct RberRefresh {
    marks: Marks,
    scan_ns: u64,
}

impl RelocationPolicy for RberRefresh {
    type Params = Params;
    fn new(p: &Params, shape: &RelocationShape) -> Self {
        RberRefresh {
            marks: Marks::new(p.margin, p.urgent_margin, shape),
            scan_ns: p.scan_interval_ms * 1_000_000,
        }
    }
    #[inline]
    fn scan_interval_ns(&self) -> u64 {
        self.scan_ns
    }
    #[inline]
    fn due(&self, b: &BlockView) -> Option<Trigger> {
        (b.rber >= self.marks.due).then_some(Trigger::RefreshRber)
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
