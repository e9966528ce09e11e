//! `page-map`: the whole page-level table in DRAM (4 bytes per mapping unit); every lookup
//! is free and nothing is written to flash for the mapping.

use crate::ids::Lpn;
use super::{MappingPolicy, MappingShape, TransOp};
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

impl crate::PolicyParams for Params {}

impl super::MappingParams for Params {}

#[derive(Clone)]
pub struct PageMap {
    logical_units: u32,
}

impl MappingPolicy for PageMap {
    type Params = Params;

    fn new(_: &Params, s: &MappingShape) -> PageMap {
        PageMap {
            logical_units: s.logical_units,
        }
    }

    fn entries_per_tpage(&self) -> u32 {
        0
    }

    #[inline]
    fn on_read(&mut self, _: Lpn, _: &mut Vec<TransOp>) -> bool {
        true
    }

    #[inline]
    fn on_write(&mut self, _: Lpn, _: &mut Vec<TransOp>) -> bool {
        true
    }

    fn on_relocated(&mut self, _: u32, _: &[u32], _: &mut Vec<TransOp>) {}

    fn dram_bytes(&self) -> u64 {
        self.logical_units as u64 * 4
    }

    fn bounded_reads(&self) -> bool {
        true
    }
}
