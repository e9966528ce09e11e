//! Garbage-collection victim selection. Every policy keeps its own index of the full blocks
//! of each plane, updated on three events: a block becomes full, a unit in a full block is
//! invalidated, a block is taken as a victim. Selection never scans the device for
//! `greedy` (buckets by valid count) or `fifo` (close order); `cost-benefit` scans the
//! plane's full blocks (its score changes with time, so no static order exists) and
//! `random` draws one.

use crate::config::GcVictimPolicy;
use crate::flash::{BlockTable, NONE};
use rand::Rng;
use ssdlab_workload::rng::SimRng;
use std::collections::VecDeque;

/// Doubly linked lists of blocks, one per (plane, valid count); O(1) move on invalidation.
#[derive(Clone)]
pub struct Buckets {
    units_per_block: u32,
    head: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Lowest bucket that may be non-empty, per plane.
    min_hint: Vec<u32>,
}

impl Buckets {
    fn new(planes: u32, blocks: u32, units_per_block: u32) -> Buckets {
        Buckets {
            units_per_block,
            head: vec![NONE; planes as usize * (units_per_block as usize + 1)],
            next: vec![NONE; blocks as usize],
            prev: vec![NONE; blocks as usize],
            min_hint: vec![0; planes as usize],
        }
    }

    #[inline]
    fn bucket(&self, plane: u32, valid: u32) -> usize {
        plane as usize * (self.units_per_block as usize + 1) + valid as usize
    }

    #[inline]
    fn insert(&mut self, plane: u32, block: u32, valid: u32) {
        let b = self.bucket(plane, valid);
        let h = self.head[b];
        self.next[block as usize] = h;
        self.prev[block as usize] = NONE;
        if h != NONE {
            self.prev[h as usize] = block;
        }
        self.head[b] = block;
        let hint = &mut self.min_hint[plane as usize];
        *hint = (*hint).min(valid);
    }

    #[inline]
    fn remove(&mut self, plane: u32, block: u32, valid: u32) {
        let (n, p) = (self.next[block as usize], self.prev[block as usize]);
        if p != NONE {
            self.next[p as usize] = n;
        } else {
            let b = self.bucket(plane, valid);
            self.head[b] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
    }

    /// Fewest valid units, at most `max_valid`; ties: the block most recently added.
    fn select(&mut self, plane: u32, max_valid: u32) -> Option<u32> {
        let start = self.min_hint[plane as usize];
        for v in start..=max_valid {
            let h = self.head[self.bucket(plane, v)];
            if h != NONE {
                self.min_hint[plane as usize] = v;
                return Some(h);
            }
        }
        self.min_hint[plane as usize] = max_valid + 1;
        None
    }
}

/// Full blocks of each plane in an unordered array with O(1) removal.
#[derive(Clone)]
pub struct FullSet {
    members: Vec<Vec<u32>>,
    pos: Vec<u32>,
}

impl FullSet {
    fn new(planes: u32, blocks: u32) -> FullSet {
        FullSet {
            members: (0..planes).map(|_| Vec::new()).collect(),
            pos: vec![NONE; blocks as usize],
        }
    }
    fn insert(&mut self, plane: u32, block: u32) {
        let m = &mut self.members[plane as usize];
        self.pos[block as usize] = m.len() as u32;
        m.push(block);
    }
    fn remove(&mut self, plane: u32, block: u32) {
        let m = &mut self.members[plane as usize];
        let i = self.pos[block as usize] as usize;
        m.swap_remove(i);
        if i < m.len() {
            self.pos[m[i] as usize] = i as u32;
        }
        self.pos[block as usize] = NONE;
    }
}

/// The GC victim index of the configured policy.
#[derive(Clone)]
pub enum VictimIndex {
    Greedy(Buckets),
    CostBenefit(FullSet),
    Fifo(Vec<VecDeque<u32>>),
    Random(FullSet),
}

impl VictimIndex {
    pub fn new(
        policy: GcVictimPolicy,
        planes: u32,
        blocks: u32,
        units_per_block: u32,
    ) -> VictimIndex {
        match policy {
            GcVictimPolicy::Greedy => {
                VictimIndex::Greedy(Buckets::new(planes, blocks, units_per_block))
            }
            GcVictimPolicy::CostBenefit => VictimIndex::CostBenefit(FullSet::new(planes, blocks)),
            GcVictimPolicy::Fifo => {
                VictimIndex::Fifo((0..planes).map(|_| VecDeque::new()).collect())
            }
            GcVictimPolicy::Random => VictimIndex::Random(FullSet::new(planes, blocks)),
        }
    }

    /// `block` of `plane` has just become full with `valid` valid units.
    #[inline]
    pub fn on_full(&mut self, plane: u32, block: u32, valid: u32) {
        match self {
            VictimIndex::Greedy(b) => b.insert(plane, block, valid),
            VictimIndex::CostBenefit(s) | VictimIndex::Random(s) => s.insert(plane, block),
            VictimIndex::Fifo(q) => q[plane as usize].push_back(block),
        }
    }

    /// A unit of full block `block` was invalidated: its count went from `valid + 1` to `valid`.
    #[inline]
    pub fn on_invalidate(&mut self, plane: u32, block: u32, valid: u32) {
        if let VictimIndex::Greedy(b) = self {
            b.remove(plane, block, valid + 1);
            b.insert(plane, block, valid);
        }
    }

    /// Take a full block out of the index (wear leveling chose it).
    pub fn remove(&mut self, plane: u32, block: u32, blocks: &BlockTable) {
        match self {
            VictimIndex::Greedy(b) => b.remove(plane, block, blocks.valid_units[block as usize]),
            VictimIndex::CostBenefit(s) | VictimIndex::Random(s) => s.remove(plane, block),
            VictimIndex::Fifo(q) => {
                let q = &mut q[plane as usize];
                if let Some(i) = q.iter().position(|&b| b == block) {
                    q.remove(i);
                }
            }
        }
    }

    /// Choose a victim among the full blocks of `plane` with at most `max_valid` valid
    /// units (so collecting it frees at least a page), and remove it from the index.
    pub fn take_victim(
        &mut self,
        plane: u32,
        blocks: &BlockTable,
        units_per_block: u32,
        max_valid: u32,
        now_seq: u64,
        rng: &mut SimRng,
    ) -> Option<u32> {
        match self {
            VictimIndex::Greedy(b) => {
                let v = b.select(plane, max_valid)?;
                b.remove(plane, v, blocks.valid_units[v as usize]);
                Some(v)
            }
            VictimIndex::Fifo(q) => {
                let q = &mut q[plane as usize];
                let i = q
                    .iter()
                    .position(|&b| blocks.valid_units[b as usize] <= max_valid)?;
                q.remove(i)
            }
            VictimIndex::CostBenefit(s) => {
                // Score (1 − u) · age / (1 + u), compared exactly in integers:
                // (U − v) · age / (U + v), cross-multiplied.
                let u = units_per_block as u128;
                let mut best: Option<(u32, u128, u128)> = None;
                for &b in &s.members[plane as usize] {
                    let v = blocks.valid_units[b as usize] as u128;
                    if v > max_valid as u128 {
                        continue;
                    }
                    let age = (now_seq - blocks.closed_seq[b as usize]) as u128 + 1;
                    let (num, den) = ((u - v) * age, u + v);
                    let better = match best {
                        None => true,
                        Some((bb, bn, bd)) => {
                            num * bd > bn * den || (num * bd == bn * den && b < bb)
                        }
                    };
                    if better {
                        best = Some((b, num, den));
                    }
                }
                let (victim, _, _) = best?;
                s.remove(plane, victim);
                Some(victim)
            }
            VictimIndex::Random(s) => {
                let m = &s.members[plane as usize];
                if m.is_empty() {
                    return None;
                }
                // A few draws, then a scan from a random start so the choice stays fair and bounded.
                let mut pick = None;
                for _ in 0..8 {
                    let b = m[rng.gen_range(0..m.len())];
                    if blocks.valid_units[b as usize] <= max_valid {
                        pick = Some(b);
                        break;
                    }
                }
                if pick.is_none() {
                    let start = rng.gen_range(0..m.len());
                    pick = (0..m.len())
                        .map(|i| m[(start + i) % m.len()])
                        .find(|&b| blocks.valid_units[b as usize] <= max_valid);
                }
                let victim = pick?;
                s.remove(plane, victim);
                Some(victim)
            }
        }
    }
}
