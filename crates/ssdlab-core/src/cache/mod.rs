//! DRAM write buffer of the timed mode: host units wait here until a page's worth is packed
//! and programmed. A rewrite of a unit still waiting replaces it in place (no second NAND
//! write). A unit keeps its buffer space, and stays readable from the buffer, until its
//! page program completes: a read never goes to NAND before the program of its data.

pub mod lanes;
pub use lanes::{LaneBuffers, Marks};

use crate::base::Version;
use crate::flash::NONE;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// Multiplicative hash for `u32` keys (lookups only; nothing iterates the map).
#[derive(Default)]
pub struct UnitHasher(u64);

impl Hasher for UnitHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = (v as u64 ^ 0x5bd1_e995).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type UnitMap<V> = HashMap<u32, V, BuildHasherDefault<UnitHasher>>;

/// The sequence number from `base` on whose low 32 bits are `low` (the buffer's index
/// keeps only those: it never spans 2^32 sequence numbers).
#[inline(always)]
fn seq_from(base: u64, low: u32) -> u64 {
    base + low.wrapping_sub(base as u32) as u64
}

/// A page on its way to NAND.
#[derive(Clone, Copy, Debug)]
struct InflightPage {
    /// Sequence numbers of its entries (tombstones of trimmed units included).
    first_seq: u64,
    end_seq: u64,
    done: bool,
}

pub struct WriteBuffer {
    capacity_units: u32,
    /// Entries `(lpn, version)` by sequence number from `base_seq`: first those of pages in
    /// flight (up to `head_seq`), then those waiting for a page. `lpn == NONE` marks a
    /// trimmed entry.
    entries: VecDeque<(u32, Version)>,
    base_seq: u64,
    head_seq: u64,
    /// Sequence number of the newest copy of each buffered unit, its low 32 bits (the
    /// buffer spans far fewer sequence numbers: [`WriteBuffer::seq_of`] restores it). A
    /// smaller table: 8 bytes per bucket, not 16, so more of it stays in the caches.
    index: UnitMap<u32>,
    live_pending: u32,
    inflight_units: u32,
    /// Pages in flight in commit order; flushes complete when the front has passed their mark.
    inflight_pages: VecDeque<InflightPage>,
    /// Token of `inflight_pages.front()`; tokens number pages in commit order.
    front_token: u32,
    next_token: u32,
    /// Test hook: pretend units in flight are gone (a broken buffer, to show the integrity
    /// check at read completion catches a read that overtakes the program of its data).
    #[cfg(test)]
    pub(crate) forget_inflight: bool,
}

impl WriteBuffer {
    pub fn new(capacity_units: u32) -> WriteBuffer {
        WriteBuffer {
            capacity_units,
            entries: VecDeque::with_capacity(capacity_units as usize),
            base_seq: 0,
            head_seq: 0,
            index: UnitMap::default(),
            live_pending: 0,
            inflight_units: 0,
            inflight_pages: VecDeque::new(),
            front_token: 0,
            next_token: 0,
            #[cfg(test)]
            forget_inflight: false,
        }
    }

    /// Units waiting to be packed into a page.
    pub fn pending_units(&self) -> u32 {
        self.live_pending
    }

    /// Units packed into pages whose program has not finished.
    pub fn inflight_units(&self) -> u32 {
        self.inflight_units
    }

    pub fn free_units(&self) -> u32 {
        self.capacity_units - self.live_pending - self.inflight_units
    }

    pub fn is_empty(&self) -> bool {
        self.live_pending == 0 && self.inflight_units == 0
    }

    /// The sequence number whose low 32 bits are `low` among those the buffer holds
    /// (`base_seq ..`).
    #[inline(always)]
    fn seq_of(&self, low: u32) -> u64 {
        seq_from(self.base_seq, low)
    }

    #[inline]
    fn entry(&self, seq: u64) -> &(u32, Version) {
        &self.entries[(seq - self.base_seq) as usize]
    }

    #[inline]
    fn entry_mut(&mut self, seq: u64) -> &mut (u32, Version) {
        &mut self.entries[(seq - self.base_seq) as usize]
    }

    /// Whether storing `lpn` takes new space (it is not already waiting for a page).
    #[inline]
    pub fn needs_space(&self, lpn: u32) -> bool {
        self.index
            .get(&lpn)
            .is_none_or(|&low| self.seq_of(low) < self.head_seq)
    }

    /// Store `lpn` at the version `version()` gives, if there is room: a copy still
    /// waiting is replaced in place (no new space); otherwise a free unit is needed, and
    /// without one nothing happens (`version` is not called) and the result is false.
    /// [`WriteBuffer::needs_space`] + [`WriteBuffer::insert`] in one index lookup.
    #[inline]
    pub fn try_insert(&mut self, lpn: u32, version: impl FnOnce() -> Version) -> bool {
        use std::collections::hash_map::Entry;
        let end = self.end_seq();
        let full = self.free_units() == 0;
        let (base, head) = (self.base_seq, self.head_seq);
        match self.index.entry(lpn) {
            Entry::Occupied(e) if seq_from(base, *e.get()) >= head => {
                let seq = seq_from(base, *e.get());
                self.entries[(seq - base) as usize].1 = version();
                return true;
            }
            _ if full => return false,
            Entry::Occupied(mut e) => *e.get_mut() = end as u32,
            Entry::Vacant(e) => {
                e.insert(end as u32);
            }
        }
        self.entries.push_back((lpn, version()));
        self.live_pending += 1;
        true
    }

    /// Store `lpn` at `version`; the caller has checked the space. A copy still waiting is
    /// replaced in place; a copy in flight stays (its program is under way) and the new
    /// one waits for a page.
    #[cfg(test)]
    pub fn insert(&mut self, lpn: u32, version: Version) {
        if let Some(&low) = self.index.get(&lpn) {
            let seq = self.seq_of(low);
            if seq >= self.head_seq {
                self.entry_mut(seq).1 = version;
                return;
            }
        }
        debug_assert!(self.free_units() > 0);
        self.index.insert(lpn, self.end_seq() as u32);
        self.entries.push_back((lpn, version));
        self.live_pending += 1;
    }

    /// Version of `lpn` if the buffer holds it (waiting or in flight).
    #[inline]
    pub fn lookup(&self, lpn: u32) -> Option<Version> {
        let seq = self.seq_of(*self.index.get(&lpn)?);
        #[cfg(test)]
        if self.forget_inflight && seq < self.head_seq {
            return None;
        }
        Some(self.entry(seq).1)
    }

    /// Drop `lpn` (trim): a waiting copy is discarded, one in flight is forgotten (its
    /// page still programs it; the FTL unmaps it). Returns whether the buffer held it.
    pub fn discard(&mut self, lpn: u32) -> bool {
        match self.index.remove(&lpn).map(|low| self.seq_of(low)) {
            Some(seq) if seq >= self.head_seq => {
                self.entry_mut(seq).0 = NONE;
                self.live_pending -= 1;
                self.skip_leading_tombstones();
                true
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Copy the oldest waiting units (at most `lpns.len()`) into `lpns`/`versions`
    /// without removing them; returns how many. A page holds units of one `class` only
    /// (journal or not, `slc-journal`): it ends where the class changes.
    pub fn peek_page<C: Fn(u32) -> u32>(
        &self,
        lpns: &mut [u32],
        versions: &mut [Version],
        class: C,
    ) -> usize {
        let mut n = 0;
        let from = (self.head_seq - self.base_seq) as usize;
        let mut first_class = 0;
        for &(lpn, v) in self.entries.range(from..) {
            if n == lpns.len() {
                break;
            }
            if lpn != NONE {
                let c = class(lpn);
                if n == 0 {
                    first_class = c;
                } else if c != first_class {
                    break;
                }
                lpns[n] = lpn;
                versions[n] = v;
                n += 1;
            }
        }
        n
    }

    /// The oldest unit still waiting whose sequence number is `from` or later (the first
    /// of a page not yet closed, when `from` is where the last close left off).
    pub fn first_waiting_from(&self, from: u64) -> Option<u32> {
        let at = (from.max(self.head_seq) - self.base_seq) as usize;
        self.entries
            .range(at.min(self.entries.len())..)
            .map(|e| e.0)
            .find(|&l| l != NONE)
    }

    /// The units of the (at most `max`) waiting entries after the first `skip` (those of
    /// the pages after the next, as far as they are known: a prefetch hint).
    pub fn waiting_after(&self, skip: usize, max: usize) -> impl Iterator<Item = u32> + '_ {
        let from = (self.head_seq - self.base_seq) as usize + skip;
        let to = (from + max).min(self.entries.len());
        self.entries
            .range(from.min(to)..to)
            .map(|e| e.0)
            .filter(|&l| l != NONE)
    }

    /// Trimmed entries at the head of the waiting units carry no data: step over them so
    /// that `head_seq` is always the oldest unit still waiting (or the end).
    fn skip_leading_tombstones(&mut self) {
        while self.head_seq < self.end_seq() && self.entry(self.head_seq).0 == NONE {
            self.head_seq += 1;
        }
        self.pop_finished();
    }

    /// Sequence number the next inserted unit will get: a flush arriving now covers every
    /// unit below it.
    pub fn end_seq(&self) -> u64 {
        self.base_seq + self.entries.len() as u64
    }

    /// Every unit with a sequence number below this is on NAND (its program finished).
    pub fn durable_seq(&self) -> u64 {
        self.inflight_pages
            .front()
            .map_or(self.head_seq, |p| p.first_seq)
    }

    /// Token of the oldest page in flight (the next page's when none is).
    pub fn front_token(&self) -> u32 {
        self.front_token
    }

    /// Token the next committed page will get.
    pub fn next_token(&self) -> u32 {
        self.next_token
    }

    /// Sequence number of the oldest unit still waiting for a page.
    pub fn head_seq(&self) -> u64 {
        self.head_seq
    }

    /// The `n` units last peeked are now in flight to NAND. Returns the page's token, to
    /// hand back to [`WriteBuffer::program_done`].
    pub fn commit_page(&mut self, n: usize) -> u32 {
        let token = self.next_token;
        self.next_token = self.next_token.wrapping_add(1);
        let first_seq = self.head_seq;
        let mut left = n;
        while left > 0 && self.head_seq < self.end_seq() {
            if self.entry(self.head_seq).0 != NONE {
                left -= 1;
            }
            self.head_seq += 1;
        }
        while self.head_seq < self.end_seq() && self.entry(self.head_seq).0 == NONE {
            self.head_seq += 1;
        }
        self.inflight_pages.push_back(InflightPage {
            first_seq,
            end_seq: self.head_seq,
            done: false,
        });
        self.live_pending -= n as u32;
        self.inflight_units += n as u32;
        token
    }

    /// The program of page `token`, holding `units` buffer units, finished: its units are
    /// on NAND (reads go there from now on).
    pub fn program_done(&mut self, units: u32, token: u32) {
        self.inflight_units -= units;
        let i = token.wrapping_sub(self.front_token) as usize;
        let Some(page) = self.inflight_pages.get_mut(i) else {
            return;
        };
        page.done = true;
        let (first, end) = (page.first_seq, page.end_seq);
        for seq in first..end {
            let lpn = self.entry(seq).0;
            if lpn == NONE {
                continue;
            }
            // The unit leaves the buffer unless a newer copy of it is buffered.
            if let std::collections::hash_map::Entry::Occupied(e) = self.index.entry(lpn) {
                if *e.get() == seq as u32 {
                    e.remove();
                }
            }
        }
        self.pop_finished();
    }

    /// Drop finished pages (and their entries) from the front.
    fn pop_finished(&mut self) {
        while let Some(p) = self.inflight_pages.front().copied().filter(|p| p.done) {
            self.inflight_pages.pop_front();
            self.front_token = self.front_token.wrapping_add(1);
            self.entries.drain(..(p.end_seq - self.base_seq) as usize);
            self.base_seq = p.end_seq;
        }
        if self.inflight_pages.is_empty() {
            // Tombstones before the first waiting unit.
            while self.base_seq < self.head_seq {
                self.entries.pop_front();
                self.base_seq += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `try_insert` is `needs_space` + `insert`: a full buffer still takes a rewrite of a
    /// waiting unit (in place), refuses a new unit without asking for its version.
    #[test]
    fn try_insert_takes_rewrites_in_place_and_refuses_new_units_when_full() {
        let mut b = WriteBuffer::new(2);
        assert!(b.try_insert(1, || 10) && b.try_insert(2, || 20));
        assert_eq!(b.free_units(), 0);
        assert!(
            b.try_insert(1, || 11),
            "a waiting copy is replaced in place"
        );
        assert_eq!(b.lookup(1), Some(11));
        assert!(!b.try_insert(3, || panic!("no version drawn for a refused unit")));
        assert_eq!((b.lookup(3), b.pending_units()), (None, 2));
    }

    #[test]
    fn trimmed_units_do_not_hold_back_a_flush() {
        let mut b = WriteBuffer::new(8);
        b.insert(1, 1);
        b.insert(2, 2);
        let mark = b.end_seq();
        assert!(b.discard(2) && b.discard(1));
        assert!(b.durable_seq() >= mark, "nothing left to program");
    }

    #[test]
    fn durable_frontier_follows_the_oldest_unfinished_page() {
        let mut b = WriteBuffer::new(16);
        let (mut l, mut v) = ([0; 2], [0; 2]);
        for lpn in 0..6 {
            b.insert(lpn, 1);
        }
        let n = b.peek_page(&mut l, &mut v, |_| 0);
        let t0 = b.commit_page(n);
        let n = b.peek_page(&mut l, &mut v, |_| 0);
        let t1 = b.commit_page(n);
        assert_eq!(b.durable_seq(), 0);
        b.program_done(2, t1); // finishes out of order
        assert_eq!(b.durable_seq(), 0);
        assert_eq!(
            b.lookup(0),
            Some(1),
            "in flight: still read from the buffer"
        );
        assert_eq!(b.lookup(2), None, "programmed: read from NAND");
        b.program_done(2, t0);
        assert_eq!(
            b.durable_seq(),
            4,
            "both pages done; units 4 and 5 still wait"
        );
        assert_eq!(b.lookup(0), None);
    }

    /// An empty buffer whose next sequence number is `seq` (as after `seq` units).
    fn buffer_at(capacity: u32, seq: u64) -> WriteBuffer {
        let mut b = WriteBuffer::new(capacity);
        (b.base_seq, b.head_seq) = (seq, seq);
        b
    }

    #[test]
    fn merges_rewrites_and_packs_in_order() {
        // The index keeps sequence numbers' low 32 bits: the same behaviour across 2^32.
        for start in [0, (1 << 32) - 3, (1 << 33) - 1, u64::MAX >> 1] {
            merges_rewrites_and_packs_in_order_from(buffer_at(8, start));
        }
    }

    fn merges_rewrites_and_packs_in_order_from(mut b: WriteBuffer) {
        b.insert(5, 1);
        b.insert(6, 2);
        b.insert(5, 3);
        assert_eq!(b.pending_units(), 2);
        assert_eq!(b.lookup(5), Some(3));
        b.insert(7, 4);
        assert!(b.discard(6));
        let (mut l, mut v) = ([0; 4], [0; 4]);
        let n = b.peek_page(&mut l, &mut v, |_| 0);
        assert_eq!((&l[..n], &v[..n]), (&[5, 7][..], &[3, 4][..]));
        let flush_mark = b.end_seq();
        let t = b.commit_page(n);
        assert_eq!(
            (b.pending_units(), b.inflight_units(), b.free_units()),
            (0, 2, 6)
        );
        assert_eq!(b.lookup(5), Some(3), "in flight");
        b.insert(5, 9); // rewrite while the old copy is in flight: a new waiting copy
        assert_eq!((b.pending_units(), b.lookup(5)), (1, Some(9)));
        b.insert(9, 5); // arrives after the flush mark
        assert!(b.durable_seq() < flush_mark);
        b.program_done(2, t);
        assert!(
            b.durable_seq() >= flush_mark,
            "the page before the mark is on NAND"
        );
        assert_eq!(b.lookup(5), Some(9), "the newer copy stays");
        assert_eq!(b.lookup(7), None);
        assert_eq!(b.pending_units(), 2);
    }
}

#[cfg(test)]
mod class_tests {
    use super::*;

    /// Journal units (≥ 100 here) and other units never share a page: a page ends where
    /// the class changes.
    #[test]
    fn pages_hold_one_class() {
        let mut b = WriteBuffer::new(16);
        for (i, l) in [1u32, 2, 100, 101, 102, 3].into_iter().enumerate() {
            b.insert(l, i as u64);
        }
        let journal = |l: u32| (l >= 100) as u32;
        let (mut l, mut v) = ([0; 4], [0; 4]);
        let n = b.peek_page(&mut l, &mut v, journal);
        assert_eq!(&l[..n], &[1, 2]);
        b.commit_page(n);
        let n = b.peek_page(&mut l, &mut v, journal);
        assert_eq!(&l[..n], &[100, 101, 102]);
        b.commit_page(n);
        let n = b.peek_page(&mut l, &mut v, journal);
        assert_eq!(&l[..n], &[3]);
    }
}
