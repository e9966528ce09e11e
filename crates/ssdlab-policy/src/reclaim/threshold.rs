//! `threshold`: relocate a full block once it has been read `read_count` times since its
//! erase, as controllers bound read disturb (Cai et al., DSN 2015: read-disturb errors grow
//! with the reads of a block since its erase; a controller's read-reclaim threshold is a
//! read count). With `urgent_read_count` the job gets die time once its block has been
//! read that often (a job starved by host reads on a saturated die: docs/reliability.md).

use crate::reliability::{BlockView, RelocationPolicy, RelocationShape, Trigger};
use crate::SimRng;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Page reads of a block since its erase that make it due (≥ 1).
    pub read_count: u32,
    /// Page reads of the block since its erase from which its reclaim is urgent: it then
    /// takes every other batch of its die even while host reads wait (0: never urgent;
    /// else ≥ `read_count`).
    pub urgent_read_count: u32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            read_count: 100_000,
            urgent_read_count: 0,
        }
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
        let u = self.urgent_read_count;
        if u != 0 && u < self.read_count {
            return Err((
                "urgent_read_count",
                format!(
                    "{u} must be 0 (never urgent) or at least read_count ({} reads)",
                    self.read_count
                ),
            ));
        }
        Ok(())
    }

    /// Small counts, so the swarm's short runs reclaim (some often); urgent from the
    /// start, later, or never.
    fn swarm(rng: &mut SimRng, _: &crate::SwarmCtx) -> Self {
        use rand::Rng;
        let read_count = [1, 2, 3, 8, 32, 200][rng.gen_range(0..6)];
        Params {
            read_count,
            urgent_read_count: [0, read_count, 2 * read_count][rng.gen_range(0..3)],
        }
    }
}

impl crate::reliability::RelocationParams for Params {}

#[derive(Clone)]
pub struct ReadThreshold {
    read_count: u32,
    /// `urgent_read_count`, `u32::MAX` when 0 (never).
    urgent_reads: u32,
}

impl RelocationPolicy for ReadThreshold {
    type Params = Params;
    fn new(p: &Params, _: &RelocationShape) -> Self {
        ReadThreshold {
            read_count: p.read_count,
            urgent_reads: match p.urgent_read_count {
                0 => u32::MAX,
                n => n,
            },
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
    #[inline]
    fn urgent(&self, b: &BlockView) -> bool {
        b.reads_since_erase >= self.urgent_reads
    }
    #[inline]
    fn can_be_urgent(&self) -> bool {
        self.urgent_reads != u32::MAX
    }
}
