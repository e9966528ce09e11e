//! The write buffer's index: unit → sequence number of its newest buffered copy.
//!
//! Open addressing with linear probing in a power-of-two table at most half full (the
//! buffer holds at most its capacity in distinct units), entries of 8 bytes (the unit,
//! and the low 32 bits of the sequence number: every indexed sequence number lies within
//! 2³² of the buffer's base): a lookup reads one line where `std`'s map read two (its
//! control bytes, then the entry), from a table half the size. A unit's home slot is a
//! multiply-high of it, so a caller that knows its units early can ask for their lines
//! ([`UnitIndex::prefetch`]): a page's program completion removes its units, which
//! arrived long before (on a large device with GC running, their lines have left the
//! caches). Nothing iterates the table.

use crate::flash::NONE;

/// An empty slot (no unit is `NONE`: it marks trimmed buffer entries).
const EMPTY: (u32, u32) = (NONE, 0);

#[derive(Clone)]
pub struct UnitIndex {
    slots: Vec<(u32, u32)>,
    /// 64 − log2(slots): a unit's home slot is the top bits of its product with
    /// the golden-ratio constant.
    shift: u32,
    len: u32,
}

/// Where a unit is, or where it would go.
pub enum Probe {
    Found(usize),
    Vacant(usize),
}

impl UnitIndex {
    /// An index for at most `units` distinct units.
    pub fn new(units: u32) -> UnitIndex {
        let size = (2 * units as usize).next_power_of_two().max(16);
        UnitIndex {
            slots: vec![EMPTY; size],
            shift: 64 - size.trailing_zeros(),
            len: 0,
        }
    }

    #[inline(always)]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    #[inline(always)]
    fn home(&self, lpn: u32) -> usize {
        ((lpn as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// Ask for the line of `lpn`'s home slot (a hint).
    #[inline(always)]
    pub fn prefetch(&self, lpn: u32) {
        crate::prefetch::prefetch(&self.slots, self.home(lpn));
    }

    #[inline(always)]
    pub fn probe(&self, lpn: u32) -> Probe {
        let mask = self.mask();
        let mut i = self.home(lpn);
        loop {
            let key = self.slots[i].0;
            if key == lpn {
                return Probe::Found(i);
            }
            if key == NONE {
                return Probe::Vacant(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// The sequence number in slot `i` (from [`Probe::Found`]), given the buffer's base.
    #[inline(always)]
    pub fn seq_at(&self, i: usize, base_seq: u64) -> u64 {
        base_seq + self.slots[i].1.wrapping_sub(base_seq as u32) as u64
    }

    #[inline(always)]
    pub fn get(&self, lpn: u32, base_seq: u64) -> Option<u64> {
        match self.probe(lpn) {
            Probe::Found(i) => Some(self.seq_at(i, base_seq)),
            Probe::Vacant(_) => None,
        }
    }

    /// Point slot `i` (found, or vacant for `lpn`) at `seq`.
    #[inline(always)]
    pub fn set(&mut self, i: usize, lpn: u32, seq: u64) {
        if self.slots[i].0 == NONE {
            self.len += 1;
            debug_assert!(
                self.len as usize <= self.slots.len() / 2,
                "index over half full"
            );
        }
        self.slots[i] = (lpn, seq as u32);
    }

    pub fn insert(&mut self, lpn: u32, seq: u64) {
        let i = match self.probe(lpn) {
            Probe::Found(i) | Probe::Vacant(i) => i,
        };
        self.set(i, lpn, seq);
    }

    /// Empty slot `i` (from [`Probe::Found`]), moving back the entries of its probe run
    /// that may take its place (backward-shift deletion: no tombstones).
    pub fn remove_at(&mut self, i: usize) {
        let mask = self.mask();
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let entry = self.slots[j];
            if entry.0 == NONE {
                break;
            }
            // The entry may move to the hole when the hole lies on its probe path
            // (between its home and its slot, cyclically).
            let home = self.home(entry.0);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = entry;
                hole = j;
            }
        }
        self.slots[hole] = EMPTY;
        self.len -= 1;
    }

    /// Remove `lpn`; returns its sequence number when it was there.
    pub fn remove(&mut self, lpn: u32, base_seq: u64) -> Option<u64> {
        match self.probe(lpn) {
            Probe::Found(i) => {
                let seq = self.seq_at(i, base_seq);
                self.remove_at(i);
                Some(seq)
            }
            Probe::Vacant(_) => None,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> u32 {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// Inserts, rewrites and removes (with keys that collide in a small table, and
        /// sequence numbers far above 2³²) agree with a map after every step.
        #[test]
        fn index_is_a_map(steps in proptest::collection::vec((0u8..3, 0u32..40), 1..400)) {
            let mut ix = UnitIndex::new(20);
            let mut model = BTreeMap::new();
            let base = (7u64 << 32) - 100;
            for (k, (op, lpn)) in steps.into_iter().enumerate() {
                let seq = base + k as u64;
                match op {
                    0 | 1 if model.len() < 20 || model.contains_key(&lpn) => {
                        ix.insert(lpn, seq);
                        model.insert(lpn, seq);
                    }
                    _ => prop_assert_eq!(ix.remove(lpn, base), model.remove(&lpn)),
                }
                prop_assert_eq!(ix.len() as usize, model.len());
                for l in 0..40 {
                    prop_assert_eq!(ix.get(l, base), model.get(&l).copied());
                }
            }
        }
    }
}
