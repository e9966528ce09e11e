//! `direct`: every host page goes to the data region, in its lane's host stream.

use super::{PlacementPolicy, PlacementShape, Target, Targets};
use crate::base::Stream;
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

impl super::PlacementParams for Params {
    fn is_direct(&self) -> bool {
        true
    }
}

#[derive(Clone)]
pub struct Direct(Targets);

impl PlacementPolicy for Direct {
    type Params = Params;
    fn new(_: &Params, s: &PlacementShape) -> Direct {
        Direct(Targets::one(Target {
            region: s.data_region,
            stream: Stream::HOST,
        }))
    }
    #[inline]
    fn host_targets(&mut self, lane: u8, _: &[u32]) -> Targets {
        self.0.in_lane(lane)
    }
}
