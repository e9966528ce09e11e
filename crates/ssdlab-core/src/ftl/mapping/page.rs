//! `page`: the whole page-level table in DRAM, one `u32` slot id per mapping unit; every
//! lookup is free.

use super::{MappingPolicy, MappingShape};
use crate::flash::NONE;
use serde::{Deserialize, Serialize};

/// No parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Params {}

#[derive(Clone)]
pub struct PageMap {
    l2p: Vec<u32>,
}

impl MappingPolicy for PageMap {
    type Params = Params;

    fn new(_: &Params, s: &MappingShape) -> PageMap {
        PageMap {
            l2p: vec![NONE; s.logical_units as usize],
        }
    }

    #[inline]
    fn lookup(&self, lpn: u32) -> u32 {
        self.l2p[lpn as usize]
    }

    #[inline]
    fn update(&mut self, lpn: u32, slot: u32) -> u32 {
        std::mem::replace(&mut self.l2p[lpn as usize], slot)
    }

    fn logical_units(&self) -> u32 {
        self.l2p.len() as u32
    }

    fn dram_bytes(&self) -> u64 {
        self.l2p.len() as u64 * 4
    }
}
