//! Logical-to-physical mapping. `page` mapping: the whole table in DRAM, one `u32` slot id
//! per mapping unit. DFTL variants (spec 04) wrap the same table with a cached subset and
//! translation pages on flash.

use crate::flash::NONE;

#[derive(Clone)]
pub struct PageMap {
    l2p: Vec<u32>,
}

impl PageMap {
    pub fn new(logical_units: u32) -> PageMap {
        PageMap {
            l2p: vec![NONE; logical_units as usize],
        }
    }

    /// Slot holding `lpn`, or [`NONE`] when unmapped.
    #[inline]
    pub fn lookup(&self, lpn: u32) -> u32 {
        self.l2p[lpn as usize]
    }

    /// Point `lpn` at `slot` (or [`NONE`]); returns the previous slot.
    #[inline]
    pub fn update(&mut self, lpn: u32, slot: u32) -> u32 {
        std::mem::replace(&mut self.l2p[lpn as usize], slot)
    }

    pub fn len(&self) -> usize {
        self.l2p.len()
    }

    pub fn is_empty(&self) -> bool {
        self.l2p.is_empty()
    }

    pub fn mapped_units(&self) -> u64 {
        self.l2p.iter().filter(|&&s| s != NONE).count() as u64
    }
}
