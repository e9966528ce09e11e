//! DRAM write buffer of the timed mode: host units wait here until a page's worth is packed
//! and programmed. A rewrite of a unit still waiting replaces it in place (no second NAND
//! write). A unit keeps its buffer space until its page program finishes, so reads and
//! back-pressure see the buffer a real controller would have.

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

pub struct WriteBuffer {
    capacity_units: u32,
    /// Units waiting for a page, oldest first; `lpn == NONE` marks a trimmed entry.
    pending: VecDeque<(u32, u32)>,
    /// Position (absolute sequence number) of each waiting unit.
    index: UnitMap<u64>,
    head_seq: u64,
    live_pending: u32,
    inflight_units: u32,
    /// Pages on their way to NAND in commit order: (sequence number of the page's first
    /// unit, program finished). Flushes complete when the front has passed their mark.
    inflight_pages: VecDeque<(u64, bool)>,
    /// Token of `inflight_pages.front()`; tokens number pages in commit order.
    front_token: u32,
    next_token: u32,
}

impl WriteBuffer {
    pub fn new(capacity_units: u32) -> WriteBuffer {
        WriteBuffer {
            capacity_units,
            pending: VecDeque::with_capacity(capacity_units as usize),
            index: UnitMap::default(),
            head_seq: 0,
            live_pending: 0,
            inflight_units: 0,
            inflight_pages: VecDeque::new(),
            front_token: 0,
            next_token: 0,
        }
    }

    pub fn capacity_units(&self) -> u32 {
        self.capacity_units
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

    /// Units of `lpns` that would need new space (those not already waiting).
    pub fn space_needed(&self, lpns: std::ops::Range<u32>) -> u32 {
        lpns.filter(|l| !self.index.contains_key(l)).count() as u32
    }

    /// Store `lpn` at `version`; the caller has checked the space.
    pub fn insert(&mut self, lpn: u32, version: u32) {
        if let Some(&seq) = self.index.get(&lpn) {
            self.pending[(seq - self.head_seq) as usize].1 = version;
            return;
        }
        debug_assert!(self.free_units() > 0);
        self.index
            .insert(lpn, self.head_seq + self.pending.len() as u64);
        self.pending.push_back((lpn, version));
        self.live_pending += 1;
    }

    /// Version of `lpn` if it is waiting in the buffer.
    #[inline]
    pub fn lookup(&self, lpn: u32) -> Option<u32> {
        self.index
            .get(&lpn)
            .map(|&seq| self.pending[(seq - self.head_seq) as usize].1)
    }

    /// Drop a waiting copy of `lpn` (trim). Returns whether one was waiting.
    pub fn discard(&mut self, lpn: u32) -> bool {
        match self.index.remove(&lpn) {
            Some(seq) => {
                self.pending[(seq - self.head_seq) as usize].0 = NONE;
                self.live_pending -= 1;
                self.drop_leading_tombstones();
                true
            }
            None => false,
        }
    }

    /// Copy the oldest waiting units (at most `lpns.len()`) into `lpns`/`versions`
    /// without removing them; returns how many.
    pub fn peek_page(&self, lpns: &mut [u32], versions: &mut [u32]) -> usize {
        let mut n = 0;
        for &(lpn, v) in self.pending.iter() {
            if n == lpns.len() {
                break;
            }
            if lpn != NONE {
                lpns[n] = lpn;
                versions[n] = v;
                n += 1;
            }
        }
        n
    }

    /// Trimmed entries at the front carry no data: drop them so that `head_seq` is always
    /// the oldest unit still waiting (or the end).
    fn drop_leading_tombstones(&mut self) {
        while let Some(&(NONE, _)) = self.pending.front() {
            self.pending.pop_front();
            self.head_seq += 1;
        }
    }

    /// Sequence number the next inserted unit will get: a flush arriving now covers every
    /// unit below it.
    pub fn end_seq(&self) -> u64 {
        self.head_seq + self.pending.len() as u64
    }

    /// Every unit with a sequence number below this is on NAND (its program finished).
    pub fn durable_seq(&self) -> u64 {
        self.inflight_pages.front().map_or(self.head_seq, |p| p.0)
    }

    /// Token the next committed page will get.
    pub fn next_token(&self) -> u32 {
        self.next_token
    }

    /// Sequence number of the oldest unit still waiting for a page.
    pub fn head_seq(&self) -> u64 {
        self.head_seq
    }

    /// Remove the `n` units last peeked: they are now in flight to NAND. Returns the page's
    /// token, to hand back to [`WriteBuffer::program_done`].
    pub fn commit_page(&mut self, n: usize) -> u32 {
        let token = self.next_token;
        self.next_token = self.next_token.wrapping_add(1);
        self.inflight_pages.push_back((self.head_seq, false));
        let mut left = n;
        while left > 0 {
            let Some((lpn, _)) = self.pending.pop_front() else {
                break;
            };
            self.head_seq += 1;
            if lpn != NONE {
                self.index.remove(&lpn);
                left -= 1;
            }
        }
        self.drop_leading_tombstones();
        self.live_pending -= n as u32;
        self.inflight_units += n as u32;
        token
    }

    /// The program of page `token`, holding `units` buffer units, finished.
    pub fn program_done(&mut self, units: u32, token: u32) {
        self.inflight_units -= units;
        let i = token.wrapping_sub(self.front_token) as usize;
        if let Some(page) = self.inflight_pages.get_mut(i) {
            page.1 = true;
        }
        while self.inflight_pages.front().is_some_and(|p| p.1) {
            self.inflight_pages.pop_front();
            self.front_token = self.front_token.wrapping_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let n = b.peek_page(&mut l, &mut v);
        let t0 = b.commit_page(n);
        let n = b.peek_page(&mut l, &mut v);
        let t1 = b.commit_page(n);
        assert_eq!(b.durable_seq(), 0);
        b.program_done(2, t1); // finishes out of order
        assert_eq!(b.durable_seq(), 0);
        b.program_done(2, t0);
        assert_eq!(
            b.durable_seq(),
            4,
            "both pages done; units 4 and 5 still wait"
        );
    }

    #[test]
    fn merges_rewrites_and_packs_in_order() {
        let mut b = WriteBuffer::new(8);
        b.insert(5, 1);
        b.insert(6, 2);
        b.insert(5, 3);
        assert_eq!(b.pending_units(), 2);
        assert_eq!(b.lookup(5), Some(3));
        b.insert(7, 4);
        assert!(b.discard(6));
        let (mut l, mut v) = ([0; 4], [0; 4]);
        let n = b.peek_page(&mut l, &mut v);
        assert_eq!((&l[..n], &v[..n]), (&[5, 7][..], &[3, 4][..]));
        let flush_mark = b.end_seq();
        let t = b.commit_page(n);
        assert_eq!(
            (b.pending_units(), b.inflight_units(), b.free_units()),
            (0, 2, 6)
        );
        assert_eq!(b.lookup(5), None);
        b.insert(9, 5); // arrives after the flush mark
        assert!(b.durable_seq() < flush_mark);
        b.program_done(2, t);
        assert!(
            b.durable_seq() >= flush_mark,
            "the page before the mark is on NAND"
        );
        assert_eq!(b.pending_units(), 1);
    }
}
