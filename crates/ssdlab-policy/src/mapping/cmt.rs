//! Building blocks of the cached mapping tables: intrusive doubly linked lists over dense
//! `u32` ids (LRU orders, count buckets; O(1), no allocation after construction), the
//! greedy "most entries" index of the log variant, and the CMT budget.

use super::MappingShape;
use crate::flash::NONE;

/// The links of lists over ids `0..n`; an id is in at most one list at a time (the
/// caller knows which).
#[derive(Clone)]
pub struct Links {
    prev: Vec<u32>,
    next: Vec<u32>,
}

/// One list: `head` is the most recently inserted (MRU), `tail` the oldest (LRU).
#[derive(Clone, Copy, Debug)]
pub struct List {
    head: u32,
    tail: u32,
    pub len: u32,
}

impl Default for List {
    fn default() -> List {
        List {
            head: NONE,
            tail: NONE,
            len: 0,
        }
    }
}

impl Links {
    pub fn new(n: u32) -> Links {
        Links {
            prev: vec![NONE; n as usize],
            next: vec![NONE; n as usize],
        }
    }

    /// Insert `id` at the head of `l`.
    #[inline]
    pub fn push_front(&mut self, l: &mut List, id: u32) {
        self.prev[id as usize] = NONE;
        self.next[id as usize] = l.head;
        if l.head != NONE {
            self.prev[l.head as usize] = id;
        } else {
            l.tail = id;
        }
        l.head = id;
        l.len += 1;
    }

    /// Take `id` out of `l`.
    #[inline]
    pub fn remove(&mut self, l: &mut List, id: u32) {
        let (p, n) = (self.prev[id as usize], self.next[id as usize]);
        match p {
            NONE => l.head = n,
            p => self.next[p as usize] = n,
        }
        match n {
            NONE => l.tail = p,
            n => self.prev[n as usize] = p,
        }
        l.len -= 1;
    }

    /// Move `id` (in `l`) to its head.
    #[inline]
    pub fn touch(&mut self, l: &mut List, id: u32) {
        if l.head != id {
            self.remove(l, id);
            self.push_front(l, id);
        }
    }

    /// Remove and return the oldest id of `l`.
    #[inline]
    pub fn pop_back(&mut self, l: &mut List) -> Option<u32> {
        let t = l.tail;
        if t == NONE {
            return None;
        }
        self.remove(l, t);
        Some(t)
    }

    /// Remove and return the newest id of `l`.
    #[inline]
    pub fn pop_front(&mut self, l: &mut List) -> Option<u32> {
        let h = l.head;
        if h == NONE {
            return None;
        }
        self.remove(l, h);
        Some(h)
    }
}

/// Ids with a count, the largest found in amortized O(1): one list per count.
#[derive(Clone)]
pub struct MaxCount {
    links: Links,
    buckets: Vec<List>,
    count: Vec<u32>,
    max: u32,
}

impl MaxCount {
    /// Ids `0..n`, counts up to `max_count`.
    pub fn new(n: u32, max_count: u32) -> MaxCount {
        MaxCount {
            links: Links::new(n),
            buckets: vec![List::default(); max_count as usize + 1],
            count: vec![0; n as usize],
            max: 0,
        }
    }

    #[inline]
    pub fn count(&self, id: u32) -> u32 {
        self.count[id as usize]
    }

    /// Add one to `id`'s count.
    #[inline]
    pub fn increment(&mut self, id: u32) {
        let c = self.count[id as usize];
        if c > 0 {
            self.links.remove(&mut self.buckets[c as usize], id);
        }
        let c = c + 1;
        self.count[id as usize] = c;
        self.links.push_front(&mut self.buckets[c as usize], id);
        self.max = self.max.max(c);
    }

    /// Remove and return the id with the largest count (the oldest among equals), with
    /// its count; its count becomes 0.
    pub fn take_max(&mut self) -> Option<(u32, u32)> {
        while self.max > 0 && self.buckets[self.max as usize].len == 0 {
            self.max -= 1;
        }
        if self.max == 0 {
            return None;
        }
        let c = self.max;
        let id = self.links.pop_back(&mut self.buckets[c as usize])?;
        self.count[id as usize] = 0;
        Some((id, c))
    }
}

/// The CMT budget: `cmt_share` of the full table (`logical units × entry_bytes`) or
/// `cmt_bytes` (one of them; default 25 %).
pub struct Budget;

/// The default CMT share: the paper's 25 % of the table.
pub const DEFAULT_CMT_SHARE: f64 = 0.25;

impl Budget {
    /// The budget in bytes for a table of `table_bytes`.
    pub fn bytes(cmt_share: Option<f64>, cmt_bytes: Option<u64>, table_bytes: u64) -> u64 {
        match (cmt_share, cmt_bytes) {
            (_, Some(b)) => b,
            (s, None) => (table_bytes as f64 * s.unwrap_or(DEFAULT_CMT_SHARE)).floor() as u64,
        }
    }

    /// Check the budget keys (shared by the variants).
    pub fn check(
        cmt_share: Option<f64>,
        cmt_bytes: Option<u64>,
        entry_bytes: u32,
        shape: &MappingShape,
    ) -> Result<(), (&'static str, String)> {
        if cmt_share.is_some() && cmt_bytes.is_some() {
            return Err(("cmt_share", "give cmt_share or cmt_bytes, not both".into()));
        }
        if let Some(s) = cmt_share {
            if !(s.is_finite() && s > 0.0 && s <= 1.0) {
                return Err(("cmt_share", format!("{s} must be > 0 and <= 1")));
            }
        }
        if entry_bytes == 0
            || entry_bytes > shape.page_bytes
            || !shape.page_bytes.is_multiple_of(entry_bytes)
        {
            return Err((
                "entry_bytes",
                format!(
                    "{entry_bytes} must divide the {} B translation page (one flash page)",
                    shape.page_bytes
                ),
            ));
        }
        if shape.logical_units >= crate::base::TRANS_TAG {
            return Err((
                "policy",
                "demand-based mapping supports at most 2^31 - 1 logical units".into(),
            ));
        }
        Ok(())
    }
}

/// Translation pages of a table of `logical_units` entries, `per_page` per page.
#[inline]
pub fn tpages(logical_units: u32, per_page: u32) -> u32 {
    logical_units.div_ceil(per_page)
}

/// A dense bit set over ids.
#[derive(Clone)]
pub struct Bits {
    words: Vec<u64>,
}

impl Bits {
    pub fn new(n: u32) -> Bits {
        Bits {
            words: vec![0; (n as usize).div_ceil(64)],
        }
    }
    #[inline]
    pub fn get(&self, i: u32) -> bool {
        self.words[(i / 64) as usize] >> (i % 64) & 1 == 1
    }
    #[inline]
    pub fn set(&mut self, i: u32, v: bool) {
        let w = &mut self.words[(i / 64) as usize];
        if v {
            *w |= 1 << (i % 64);
        } else {
            *w &= !(1 << (i % 64));
        }
    }
    /// Clear ids `lo..hi`.
    pub fn clear_range(&mut self, lo: u32, hi: u32) {
        for i in lo..hi {
            self.set(i, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_order_and_touch() {
        let mut links = Links::new(4);
        let mut l = List::default();
        for id in 0..4 {
            links.push_front(&mut l, id);
        }
        links.touch(&mut l, 0);
        assert_eq!(links.pop_back(&mut l), Some(1));
        links.remove(&mut l, 3);
        assert_eq!(links.pop_back(&mut l), Some(2));
        assert_eq!(links.pop_back(&mut l), Some(0));
        assert_eq!(links.pop_back(&mut l), None);
        assert_eq!(l.len, 0);
    }

    #[test]
    fn max_count_takes_the_largest_oldest_first() {
        let mut m = MaxCount::new(5, 10);
        for (id, n) in [(0, 2), (1, 3), (2, 3), (3, 1)] {
            for _ in 0..n {
                m.increment(id);
            }
        }
        assert_eq!(m.take_max(), Some((1, 3)));
        assert_eq!(m.take_max(), Some((2, 3)));
        assert_eq!(m.take_max(), Some((0, 2)));
        m.increment(4);
        m.increment(4);
        assert_eq!(m.take_max(), Some((4, 2)));
        assert_eq!(m.take_max(), Some((3, 1)));
        assert_eq!(m.take_max(), None);
    }
}
