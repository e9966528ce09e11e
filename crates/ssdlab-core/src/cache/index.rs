//! The write buffer's index: unit → sequence number of its newest buffered copy.
//!
//! Open addressing with linear probing in a power-of-two table at most half full (the
//! buffer holds at most its capacity in distinct units): a byte of tag per slot (empty, or
//! 7 bits of the unit's hash), and the entries, 8 bytes each (the unit, and the low 32 bits
//! of the sequence number: every indexed sequence number lies within 2³² of the buffer's
//! base). Most lookups are of units the buffer does not hold (host reads): they read only
//! tags, a table of 32 KiB for the Table-1 device's buffer that stays in the caches, as
//! `std`'s map read only its control bytes; a lookup that finds its unit reads one entry
//! line (`std`'s entries are 16 bytes). A unit's home slot is a multiply-high of it, so a
//! caller that knows its units early can ask for their entry lines
//! ([`UnitIndex::prefetch`]): a page's program completion removes its units, which arrived
//! long before (on a large device with GC running, their lines have left the caches).
//! Nothing iterates the table.

use crate::flash::NONE;

/// The entry of an empty slot.
const EMPTY: (u32, u32) = (NONE, 0);

#[derive(Clone)]
pub struct UnitIndex {
    slots: Vec<(u32, u32)>,
    /// Per slot: 0 when empty, else `TAG_FULL` | 7 bits of the unit's hash.
    tags: Vec<u8>,
    /// 64 − log2(slots): a unit's home slot is the top bits of its product with
    /// the golden-ratio constant (its tag, the 7 bits below them).
    shift: u32,
    len: u32,
}

const TAG_FULL: u8 = 0x80;

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
            tags: vec![0; size],
            shift: 64 - size.trailing_zeros(),
            len: 0,
        }
    }

    #[inline(always)]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    #[inline(always)]
    fn hash(lpn: u32) -> u64 {
        (lpn as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    #[inline(always)]
    fn home(&self, lpn: u32) -> usize {
        (Self::hash(lpn) >> self.shift) as usize
    }

    #[inline(always)]
    fn tag(&self, lpn: u32) -> u8 {
        TAG_FULL | (Self::hash(lpn) >> (self.shift - 7)) as u8 & 0x7F
    }

    /// Ask for the line of `lpn`'s home entry (a hint).
    #[inline(always)]
    pub fn prefetch(&self, lpn: u32) {
        crate::prefetch::prefetch(&self.slots, self.home(lpn));
    }

    #[inline(always)]
    pub fn probe(&self, lpn: u32) -> Probe {
        let mask = self.mask();
        let tag = self.tag(lpn);
        let mut i = self.home(lpn);
        loop {
            let t = self.tags[i];
            if t == 0 {
                return Probe::Vacant(i);
            }
            if t == tag && self.slots[i].0 == lpn {
                return Probe::Found(i);
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
        if self.tags[i] == 0 {
            self.len += 1;
            debug_assert!(
                self.len as usize <= self.slots.len() / 2,
                "index over half full"
            );
            self.tags[i] = self.tag(lpn);
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
            if self.tags[j] == 0 {
                break;
            }
            // The entry may move to the hole when the hole lies on its probe path
            // (between its home and its slot, cyclically).
            let home = self.home(self.slots[j].0);
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = self.slots[j];
                self.tags[hole] = self.tags[j];
                hole = j;
            }
        }
        self.slots[hole] = EMPTY;
        self.tags[hole] = 0;
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

    /// Random inserts, rewrites and removes of the units `unit(key)`, at most `cap` held,
    /// checked against a map after every step (sequence numbers far above 2³²).
    fn check_against_map(
        steps: Vec<(u8, u32)>,
        unit: impl Fn(u32) -> u32,
        cap: usize,
    ) -> Result<(), TestCaseError> {
        let mut ix = UnitIndex::new(cap as u32);
        let mut model = BTreeMap::new();
        let base = (7u64 << 32) - 100;
        for (k, (op, key)) in steps.into_iter().enumerate() {
            let lpn = unit(key);
            let seq = base + k as u64;
            match op {
                0 | 1 if model.len() < cap || model.contains_key(&lpn) => {
                    ix.insert(lpn, seq);
                    model.insert(lpn, seq);
                }
                _ => prop_assert_eq!(ix.remove(lpn, base), model.remove(&lpn)),
            }
            prop_assert_eq!(ix.len() as usize, model.len());
            for &l in model.keys() {
                prop_assert_eq!(ix.get(l, base), model.get(&l).copied());
            }
            prop_assert_eq!(ix.get(lpn, base), model.get(&lpn).copied());
        }
        Ok(())
    }

    /// Two units with the same home slot and the same tag: each is found as itself, and
    /// removing the first moves the second back into the home slot.
    #[test]
    fn units_with_equal_home_and_tag_stay_apart() {
        let ix = UnitIndex::new(8);
        let a = 1;
        let b = (2..u32::MAX)
            .find(|&u| ix.home(u) == ix.home(a) && ix.tag(u) == ix.tag(a))
            .unwrap();
        let mut ix = ix;
        ix.insert(a, 10);
        ix.insert(b, 20);
        assert_eq!((ix.get(a, 0), ix.get(b, 0)), (Some(10), Some(20)));
        assert_eq!(ix.remove(a, 0), Some(10));
        assert_eq!((ix.get(a, 0), ix.get(b, 0)), (None, Some(20)));
        assert!(matches!(ix.probe(b), Probe::Found(i) if i == ix.home(b)));
    }

    proptest! {
        /// Keys that collide in their home slots (40 units, a table of 64 slots).
        #[test]
        fn index_is_a_map(steps in proptest::collection::vec((0u8..3, 0u32..40), 1..400)) {
            check_against_map(steps, |k| k, 20)?;
        }

        /// 24 units spread over the whole range in the smallest table (16 slots, at most
        /// 8 held): units with equal 7-bit tags share probe runs often.
        #[test]
        fn index_is_a_map_with_sparse_units(
            steps in proptest::collection::vec((0u8..3, 0u32..24), 1..400)
        ) {
            check_against_map(steps, |k| k.wrapping_mul(2_654_435_761) % (u32::MAX - 1), 8)?;
        }
    }
}
