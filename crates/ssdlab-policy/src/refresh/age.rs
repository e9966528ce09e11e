//! `age`: relocate a full block whose data (counted from the block's first program after
//! its erase) is `age_ms` old; the blocks are scanned every `scan_interval_ms` of simulated
//! time, as a controller's periodic retention scan (Cai et al., Proc. IEEE 2017: retention
//! errors grow with the time since programming; refresh bounds that time).

use crate::reliability::{BlockView, RelocationPolicy, RelocationShape, Trigger};
use crate::SimRng;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Age of a block's data that makes it due (ms of simulated time, ≥ 1).
    pub age_ms: u64,
    /// Simulated time between two scans of the blocks' ages (ms, ≥ 1; a scan runs at the
    /// host's first command after it elapsed).
    pub scan_interval_ms: u64,
}

impl Default for Params {
    fn default() -> Self {
        // A week, scanned hourly.
        Params {
            age_ms: 7 * 24 * 3_600_000,
            scan_interval_ms: 3_600_000,
        }
    }
}

/// Longest time a parameter may name (ms): its nanoseconds fit a u64 with room.
const MAX_MS: u64 = u64::MAX / 1_000_000 / 4;

impl crate::PolicyParams for Params {
    fn check(&self) -> Result<(), (&'static str, String)> {
        for (key, v) in [
            ("age_ms", self.age_ms),
            ("scan_interval_ms", self.scan_interval_ms),
        ] {
            if v == 0 || v > MAX_MS {
                return Err((key, format!("{v} must be from 1 to {MAX_MS} ms")));
            }
        }
        Ok(())
    }

    /// Ages of 50 ms to 10 min, so the swarm's runs (ms to tens of simulated minutes) refresh
    /// some blocks, not all at every scan (which wears a tiny device out).
    fn swarm(rng: &mut SimRng, _: &crate::SwarmCtx) -> Self {
        use rand::Rng;
        Params {
            age_ms: [50, 10_000, 600_000][rng.gen_range(0..3)],
            scan_interval_ms: [10, 1000][rng.gen_range(0..2)],
        }
    }
}

impl crate::reliability::RelocationParams for Params {}

#[derive(Clone)]
pub struct AgeRefresh {
    age_ns: u64,
    scan_ns: u64,
}

impl RelocationPolicy for AgeRefresh {
    type Params = Params;
    fn new(p: &Params, _: &RelocationShape) -> Self {
        AgeRefresh {
            age_ns: p.age_ms * 1_000_000,
            scan_ns: p.scan_interval_ms * 1_000_000,
        }
    }
    #[inline]
    fn scan_interval_ns(&self) -> u64 {
        self.scan_ns
    }
    #[inline]
    fn due(&self, b: &BlockView) -> Option<Trigger> {
        (b.data_age_ns >= self.age_ns).then_some(Trigger::Age)
    }
}
