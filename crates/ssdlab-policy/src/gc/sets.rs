//! Index structures shared by victim policies.

use crate::flash::NONE;

const NEXT: usize = 0;
const PREV: usize = 1;

/// Doubly linked lists of blocks, one per (plane, valid count); O(1) move on invalidation.
///
/// The lists are circular through a sentinel entry per bucket (entry `blocks + bucket` of
/// `next`/`prev`; entries below `blocks` are blocks), so linking and unlinking a block
/// take no branch on whether it is first or last (which blocks are is a random pattern
/// under random writes, one the CPU cannot predict). An entry's two links sit side by side
/// (`[next, prev]`): a move between buckets touches four random cache lines, not six (the
/// lists of a large device do not fit the L2 cache).
#[derive(Clone)]
pub struct Buckets {
    units_per_block: u32,
    blocks: u32,
    links: Vec<[u32; 2]>,
    /// Lowest bucket that may be non-empty, per plane.
    min_hint: Vec<u32>,
}

impl Buckets {
    pub fn new(planes: u32, blocks: u32, units_per_block: u32) -> Buckets {
        let buckets = planes as usize * (units_per_block as usize + 1);
        // Blocks start unlinked; every sentinel starts as an empty list (itself).
        let links = (0..blocks as usize)
            .map(|_| [NONE; 2])
            .chain((0..buckets).map(|i| [blocks + i as u32; 2]))
            .collect();
        Buckets {
            units_per_block,
            blocks,
            links,
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
        let h = self.links[s as usize][NEXT];
        self.links[block as usize] = [h, s];
        self.links[h as usize][PREV] = block;
        self.links[s as usize][NEXT] = block;
        let hint = &mut self.min_hint[plane as usize];
        *hint = (*hint).min(valid);
    }

    /// Ask for `block`'s links (read first when it moves).
    #[inline(always)]
    pub fn prefetch(&self, block: u32) {
        crate::prefetch::prefetch(&self.links, block as usize);
    }

    #[inline(always)]
    pub fn remove(&mut self, block: u32) {
        let [n, p] = self.links[block as usize];
        self.links[p as usize][NEXT] = n;
        self.links[n as usize][PREV] = p;
    }

    /// The block most recently added to (plane, valid)'s list, if any.
    #[inline]
    fn first(&self, plane: u32, valid: u32) -> Option<u32> {
        let s = self.sentinel(plane, valid);
        let h = self.links[s as usize][NEXT];
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
        let mut b = self.links[s as usize][NEXT];
        std::iter::from_fn(move || {
            (b != s).then(|| {
                let cur = b;
                b = self.links[b as usize][NEXT];
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
        fn on_full(&mut self, plane: $crate::ids::PlaneId, block: $crate::ids::BlockId, _: u32) {
            let (plane, block) = (plane.0, block.0);
            self.set.insert(plane, block);
        }

        fn remove(&mut self, plane: $crate::ids::PlaneId, block: $crate::ids::BlockId, _: u32) {
            let (plane, block) = (plane.0, block.0);
            self.set.remove(plane, block);
        }

        fn holds(&self, _: $crate::ids::PlaneId, block: $crate::ids::BlockId, _: u32) -> bool {
            let block = block.0;
            self.set.contains(block)
        }

        fn count(&self, plane: $crate::ids::PlaneId) -> usize {
            let plane = plane.0;
            self.set.members[plane as usize].len()
        }
    };
}
pub(super) use full_set_membership;
