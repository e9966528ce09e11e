//! Index structures shared by victim policies.

use crate::flash::NONE;

/// Doubly linked lists of blocks, one per (plane, valid count); O(1) move on invalidation.
///
/// The lists are circular through a sentinel entry per bucket (entry `blocks + bucket` of
/// `next`/`prev`; entries below `blocks` are blocks), so linking and unlinking a block
/// take no branch on whether it is first or last (which blocks are is a random pattern
/// under random writes, one the CPU cannot predict).
#[derive(Clone)]
pub struct Buckets {
    units_per_block: u32,
    blocks: u32,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Lowest bucket that may be non-empty, per plane.
    min_hint: Vec<u32>,
}

impl Buckets {
    pub fn new(planes: u32, blocks: u32, units_per_block: u32) -> Buckets {
        let buckets = planes as usize * (units_per_block as usize + 1);
        // Blocks start unlinked; every sentinel starts as an empty list (itself).
        let links: Vec<u32> = (0..blocks as usize)
            .map(|_| NONE)
            .chain((0..buckets).map(|i| blocks + i as u32))
            .collect();
        Buckets {
            units_per_block,
            blocks,
            next: links.clone(),
            prev: links,
            min_hint: vec![0; planes as usize],
        }
    }

    pub fn units_per_block(&self) -> u32 {
        self.units_per_block
    }

    /// The sentinel entry of (plane, valid)'s list.
    #[inline]
    fn sentinel(&self, plane: u32, valid: u32) -> u32 {
        self.blocks + plane * (self.units_per_block + 1) + valid
    }

    #[inline(always)]
    pub fn insert(&mut self, plane: u32, block: u32, valid: u32) {
        let s = self.sentinel(plane, valid);
        let h = self.next[s as usize];
        self.next[block as usize] = h;
        self.prev[block as usize] = s;
        self.prev[h as usize] = block;
        self.next[s as usize] = block;
        let hint = &mut self.min_hint[plane as usize];
        *hint = (*hint).min(valid);
    }

    #[inline(always)]
    pub fn remove(&mut self, block: u32) {
        let (n, p) = (self.next[block as usize], self.prev[block as usize]);
        self.next[p as usize] = n;
        self.prev[n as usize] = p;
    }

    /// The block most recently added to (plane, valid)'s list, if any.
    #[inline]
    fn first(&self, plane: u32, valid: u32) -> Option<u32> {
        let s = self.sentinel(plane, valid);
        let h = self.next[s as usize];
        (h != s).then_some(h)
    }

    /// Fewest valid units, at most `max_valid`; ties: the block most recently added.
    pub fn min(&mut self, plane: u32, max_valid: u32) -> Option<u32> {
        let start = self.min_hint[plane as usize];
        for v in start..=max_valid {
            if let Some(h) = self.first(plane, v) {
                self.min_hint[plane as usize] = v;
                return Some(h);
            }
        }
        self.min_hint[plane as usize] = max_valid + 1;
        None
    }

    /// Every block of `plane`'s bucket `valid`, most recently added first (checker).
    pub fn members(&self, plane: u32, valid: u32) -> impl Iterator<Item = u32> + '_ {
        let s = self.sentinel(plane, valid);
        let mut b = self.next[s as usize];
        std::iter::from_fn(move || {
            (b != s).then(|| {
                let cur = b;
                b = self.next[b as usize];
                cur
            })
        })
    }
}

/// Full blocks of each plane in an unordered array with O(1) insertion and removal.
#[derive(Clone)]
pub struct FullSet {
    pub members: Vec<Vec<u32>>,
    pos: Vec<u32>,
}

impl FullSet {
    pub fn new(planes: u32, blocks: u32) -> FullSet {
        FullSet {
            members: (0..planes).map(|_| Vec::new()).collect(),
            pos: vec![NONE; blocks as usize],
        }
    }

    pub fn insert(&mut self, plane: u32, block: u32) {
        let m = &mut self.members[plane as usize];
        self.pos[block as usize] = m.len() as u32;
        m.push(block);
    }

    pub fn remove(&mut self, plane: u32, block: u32) {
        let m = &mut self.members[plane as usize];
        let i = self.pos[block as usize] as usize;
        m.swap_remove(i);
        if i < m.len() {
            self.pos[m[i] as usize] = i as u32;
        }
        self.pos[block as usize] = NONE;
    }

    pub fn contains(&self, block: u32) -> bool {
        self.pos[block as usize] != NONE
    }
}

/// The membership methods of a [`VictimPolicy`](super::VictimPolicy) whose candidates are
/// every full block, kept in a [`FullSet`] field named `set`: `on_full`, `remove`, `holds`,
/// `count` (used inside the policy's `impl VictimPolicy` block).
macro_rules! full_set_membership {
    () => {
        fn on_full(&mut self, plane: u32, block: u32, _: u32) {
            self.set.insert(plane, block);
        }

        fn remove(&mut self, plane: u32, block: u32, _: u32) {
            self.set.remove(plane, block);
        }

        fn holds(&self, _: u32, block: u32, _: u32) -> bool {
            self.set.contains(block)
        }

        fn count(&self, plane: u32) -> usize {
            self.set.members[plane as usize].len()
        }
    };
}
pub(super) use full_set_membership;
