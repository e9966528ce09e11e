//! The out-of-band area of every slot: which logical unit it holds (the reverse map) and,
//! in integrity mode, that unit's version; and a dense bit per slot saying whether the
//! slot still holds its unit's current data.
//!
//! Validity lives in its own bitmap (a bit per slot: 8 MiB for a 64 Mi-slot device,
//! against 256 MiB of unit numbers) so that invalidating a slot — every overwrite, trim
//! and copy — touches a line of a small, mostly cached array instead of a random line of
//! the large one. The unit number of an invalid slot stays as it was (stale); readers
//! test the bit first.
//!
//! The arrays start as zeroed memory ([`large_zeroed`](crate::prefetch::large_zeroed)):
//! a unit word is stored complemented ([`OobWord`]), so zero bits read as `NONE` and an
//! empty device's OOB costs nothing until its slots are written.

use super::NONE;
use crate::base::Version;

/// Bits per bitmap word.
const WORD_BITS: usize = 64;

/// The unit word of one slot (an `Lpn`, or a translation page's or a trim record's tag;
/// `NONE` if never written), stored as its bitwise complement so that zero bits read as
/// `NONE`. Copying a word between slots needs no decoding.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OobWord(u32);

impl OobWord {
    /// A slot never written (or whose OOB an erase cleared).
    pub const NONE: OobWord = OobWord(!NONE);

    /// The word holding `lpn`.
    #[inline(always)]
    pub const fn new(lpn: u32) -> OobWord {
        OobWord(!lpn)
    }

    /// The unit (or tag) this word holds, `NONE` if never written.
    #[inline(always)]
    pub const fn get(self) -> u32 {
        !self.0
    }
}

// SAFETY: a `u32`; zero bits are the word of `NONE`.
unsafe impl crate::prefetch::Zeroable for OobWord {}

pub struct Oob {
    /// Unit last stored in each slot (`NONE` if never); meaningful only while the slot's
    /// valid bit is set.
    pub lpn: Vec<OobWord>,
    /// Bit `slot % 64` of word `slot / 64`: the slot holds its unit's current data.
    valid: Vec<u64>,
    /// Version of the unit stored in each slot (integrity mode; empty otherwise).
    pub version: Vec<Version>,
}

impl Clone for Oob {
    fn clone(&self) -> Self {
        Oob {
            lpn: crate::prefetch::large_copy(&self.lpn),
            valid: crate::prefetch::large_copy(&self.valid),
            version: crate::prefetch::large_copy(&self.version),
        }
    }
}

impl Oob {
    /// Bits of memory per physical slot: unit, valid bit, version (with `integrity`).
    pub fn bits_per_slot(integrity: bool) -> u64 {
        let o = Oob::new(0, integrity);
        use crate::prefetch::elem_bytes;
        let version = if integrity { elem_bytes(&o.version) } else { 0 };
        8 * (elem_bytes(&o.lpn) + version) + 8 * elem_bytes(&o.valid) / WORD_BITS as u64
    }

    pub fn new(slots: u64, integrity: bool) -> Oob {
        let slots = slots as usize;
        Oob {
            lpn: crate::prefetch::large_zeroed(slots),
            valid: crate::prefetch::large_zeroed(slots.div_ceil(WORD_BITS)),
            version: if integrity {
                crate::prefetch::large_zeroed(slots)
            } else {
                Vec::new()
            },
        }
    }

    /// Fault in every array now ([`crate::prefetch::populate`]): a phase is about to
    /// write all of them.
    pub fn populate(&mut self) {
        crate::prefetch::populate(&mut self.lpn);
        crate::prefetch::populate(&mut self.valid);
        crate::prefetch::populate(&mut self.version);
    }

    /// Whether `slot` holds its unit's current data.
    #[inline(always)]
    pub fn is_valid(&self, slot: usize) -> bool {
        (self.valid[slot / WORD_BITS] >> (slot % WORD_BITS)) & 1 != 0
    }

    /// The unit `slot` holds, when valid.
    #[inline(always)]
    pub fn unit(&self, slot: usize) -> Option<u32> {
        self.is_valid(slot).then(|| self.lpn[slot].get())
    }

    /// `slot` now holds the current data of `lpn`.
    #[inline(always)]
    pub fn store(&mut self, slot: usize, lpn: u32) {
        self.lpn[slot] = OobWord::new(lpn);
        self.valid[slot / WORD_BITS] |= 1 << (slot % WORD_BITS);
    }

    /// `slot`'s data is no longer current (its unit number stays, stale).
    #[inline(always)]
    pub fn clear(&mut self, slot: usize) {
        self.valid[slot / WORD_BITS] &= !(1 << (slot % WORD_BITS));
    }

    /// Slots `first..first + n` all hold `lpn` (a translation page's tag), valid.
    pub fn store_range(&mut self, first: usize, n: usize, lpn: u32) {
        self.lpn[first..first + n].fill(OobWord::new(lpn));
        self.set_valid(first, n);
    }

    /// Set the valid bits of slots `first..first + n` (their unit numbers written already).
    #[inline]
    pub fn set_valid(&mut self, first: usize, n: usize) {
        let end = first + n;
        let mut s = first;
        while s < end {
            let w = s / WORD_BITS;
            let lo = s % WORD_BITS;
            let hi = (end - w * WORD_BITS).min(WORD_BITS);
            self.valid[w] |= span(lo, hi);
            s = (w + 1) * WORD_BITS;
        }
    }

    /// Valid slots among `first..first + n`.
    pub fn count_valid(&self, first: usize, n: usize) -> u32 {
        let end = first + n;
        let mut s = first;
        let mut count = 0;
        while s < end {
            let w = s / WORD_BITS;
            let hi = (end - w * WORD_BITS).min(WORD_BITS);
            count += (self.valid[w] & span(s % WORD_BITS, hi)).count_ones();
            s = (w + 1) * WORD_BITS;
        }
        count
    }

    /// Valid bits of the word holding `slot`, from `slot` up to (not including) `end`,
    /// as (word index, bits).
    #[inline(always)]
    pub fn valid_bits_from(&self, slot: usize, end: usize) -> (usize, u64) {
        let w = slot / WORD_BITS;
        let hi = (end - w * WORD_BITS).min(WORD_BITS);
        (w, self.valid[w] & span(slot % WORD_BITS, hi))
    }

    /// Clear the bits `bits` of word `w` (slots taken by a copy run).
    #[inline(always)]
    pub fn clear_bits(&mut self, w: usize, bits: u64) {
        self.valid[w] &= !bits;
    }

    /// Ask for the cache line of `slot`'s valid bit.
    #[inline(always)]
    pub fn prefetch_valid(&self, slot: usize) {
        crate::prefetch::prefetch(&self.valid, slot / WORD_BITS);
    }

    /// Slot of bit `bit` of word `w`.
    #[inline(always)]
    pub const fn slot_of(w: usize, bit: u32) -> usize {
        w * WORD_BITS + bit as usize
    }
}

/// Bits `lo..hi` of a word (`lo < hi <= 64`).
#[inline(always)]
fn span(lo: usize, hi: usize) -> u64 {
    let upper = if hi >= WORD_BITS {
        !0
    } else {
        (1u64 << hi) - 1
    };
    upper & (!0u64 << lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_clear_and_scan() {
        let mut oob = Oob::new(200, false);
        assert!(
            oob.lpn.iter().all(|w| w.get() == NONE),
            "a new OOB reads as never written"
        );
        for s in [0, 63, 64, 130, 199] {
            oob.store(s, s as u32 * 10);
        }
        oob.clear(64);
        assert_eq!(oob.unit(63), Some(630));
        assert_eq!(oob.unit(64), None);
        assert_eq!(
            oob.lpn[64].get(),
            640,
            "an invalid slot keeps its stale unit"
        );
        assert_eq!(oob.valid_bits_from(1, 200), (0, 1 << 63));
        assert_eq!(
            oob.valid_bits_from(0, 63),
            (0, 1),
            "slots from `end` on are left out"
        );
        assert_eq!(oob.valid_bits_from(64, 200), (1, 0));
        assert_eq!(oob.valid_bits_from(129, 200), (2, 1 << 2));
        assert_eq!(oob.valid_bits_from(192, 199), (3, 0));
        assert_eq!(oob.valid_bits_from(192, 200), (3, 1 << 7));
        assert_eq!(oob.count_valid(0, 200), 4);
        assert_eq!(oob.count_valid(1, 129), 1);
        assert_eq!(oob.count_valid(60, 140), 3);
        assert_eq!(oob.count_valid(60, 70), 1);
    }

    #[test]
    fn ranges_across_words() {
        let mut oob = Oob::new(300, false);
        oob.store_range(60, 70, 7);
        assert_eq!(oob.count_valid(0, 300), 70);
        assert_eq!(oob.count_valid(59, 2), 1);
        assert_eq!(oob.count_valid(129, 2), 1);
        assert!(!oob.is_valid(59) && oob.is_valid(60) && oob.is_valid(129) && !oob.is_valid(130));
        let (w, bits) = oob.valid_bits_from(100, 128);
        assert_eq!((w, bits.count_ones()), (1, 28));
        let (w, bits) = oob.valid_bits_from(120, 130);
        assert_eq!((w, bits.count_ones()), (1, 8));
        oob.clear_bits(w, bits);
        assert_eq!(oob.count_valid(0, 300), 62);
        assert_eq!(oob.count_valid(100, 28), 20);
        assert_eq!(Oob::slot_of(w, bits.trailing_zeros()), 120);
    }
}
