//! `none`: no retention refresh.

use crate::reliability::{BlockView, RelocationPolicy, RelocationShape, Trigger};
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

impl crate::reliability::RelocationParams for Params {
    fn relocates(&self) -> bool {
        false
    }
}

#[derive(Clone)]
pub struct NoRefresh;

impl RelocationPolicy for NoRefresh {
    type Params = Params;
    fn new(_: &Params, _: &RelocationShape) -> Self {
        NoRefresh
    }
    #[inline]
    fn due(&self, _: &BlockView) -> Option<Trigger> {
        None
    }
}
