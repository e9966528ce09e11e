//! `threshold`: relocate a full block once it has been read `read_count` times since its
//! erase, as controllers bound read disturb (Cai et al., DSN 2015: read-disturb errors grow
//! with the reads of a block since its erase; a controller's read-reclaim threshold is a
//! read count).

use crate::reliability::{BlockView, RelocationPolicy, RelocationShape, Trigger};
use crate::SimRng;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Page reads of a block since its erase that make it due (≥ 1).
    pub read_count: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params { read_count: 100_000 }
    }
}

impl crate::PolicyParams for Params {
    fn check(&self) -> Result<(), (&'static str, String)> {
        if self.read_count == 0 || self.read_count == u32::MAX {
            return Err((
                "read_count",
                format!(
                    "{} must be from 1 to {} reads",
                    self.read_count,
                    u32::MAX - 1
                ),
            ));
        }
        Ok(())
    }

    /// Small counts, so the swarm's short runs reclaim (some often).
    fn swarm(rng: &mut SimRng, _: &crate::SwarmCtx) -> Self {
        use rand::Rng;
        Params {
            read_count: [1, 2, 3, 8, 32, 200][rng.gen_range(0..6)],
        }
    }
}

impl crate::reliability::RelocationParams for Params {}

#[derive(Clone)]
pub struct ReadThreshold {
    read_count: u32,
}

impl RelocationPolicy for ReadThreshold {
    type Params = Params;
    fn new(p: &Params, _: &RelocationShape) -> Self {
        ReadThreshold {
            read_count: p.read_count,
        }
    }
    #[inline]
    fn read_limit(&self) -> u32 {
        self.read_count
    }
    #[inline]
    fn due(&self, b: &BlockView) -> Option<Trigger> {
        (b.reads_since_erase >= self.read_count).then_some(Trigger::ReadCount)
    }
}
