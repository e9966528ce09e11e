//! `bet`: the Block Erasing Table of Chang, Hsieh and Kuo ("Endurance enhancement of
//! flash-memory storage systems: an efficient static wear leveling design", DAC 2007).
//! One flag per set of 2^k blocks records whether the set was erased in the current
//! resetting interval; `e` counts erases and `f` flags set in the interval. When
//! `e / f ≥ T` (erases concentrate on few sets), a set whose flag is clear is chosen
//! scanning from a random index, and one full block of it (in the plane of the erase) has
//! its data moved out and is erased, so cold blocks join the rotation. When every flag is
//! set, the interval ends and the table resets. Defaults from the paper's evaluation:
//! T = 100, k = 0 (one flag per block).

use crate::ids::BlockId;
use super::{WearAction, WearCtx, WearPolicy, WearShape};
use crate::flash::BlockState;
use rand::Rng;
use serde::{Deserialize, Serialize};
use ssdlab_workload::rng::{stream, tag, SimRng};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Unevenness threshold T on erases per flag set in the interval.
    pub threshold: u32,
    /// log2 of the blocks per flag (k).
    pub blocks_per_flag_log2: u32,
}

impl super::WearParams for Params {}

impl crate::PolicyParams for Params {}

impl Default for Params {
    fn default() -> Self {
        Params {
            threshold: 100,
            blocks_per_flag_log2: 0,
        }
    }
}

#[derive(Clone)]
pub struct Bet {
    threshold: u64,
    k: u32,
    /// Flag per set of 2^k blocks (set index = region-relative index >> k).
    flags: Vec<bool>,
    erases: u64,
    set_flags: u64,
    rng: SimRng,
    shape: WearShape,
    /// Migrations chosen so far (tests).
    pub migrations: u64,
    /// Intervals completed (tests).
    pub resets: u64,
}

impl Bet {
    /// Region-relative index of `block` (planes stacked).
    fn rel(&self, block: u32) -> u32 {
        let s = &self.shape;
        let plane = block / s.blocks_per_plane;
        plane * s.region_blocks_per_plane + (block % s.blocks_per_plane - s.first_index)
    }

    fn block_of_rel(&self, rel: u32) -> u32 {
        let s = &self.shape;
        let plane = rel / s.region_blocks_per_plane;
        plane * s.blocks_per_plane + s.first_index + rel % s.region_blocks_per_plane
    }

    /// A full block of an unflagged set in `ctx.plane`, scanning sets from a random index.
    /// A set whose blocks are all retired can never be erased: it is flagged on the way.
    fn cold_block(&mut self, ctx: &WearCtx) -> Option<u32> {
        let sets = self.flags.len();
        let start = self.rng.gen_range(0..sets);
        let total = self.shape.planes * self.shape.region_blocks_per_plane;
        for i in 0..sets {
            let set = (start + i) % sets;
            if self.flags[set] {
                continue;
            }
            let first = (set as u32) << self.k;
            let last = (first + (1 << self.k)).min(total);
            let mut usable = false;
            for rel in first..last {
                let b = self.block_of_rel(rel);
                usable |= ctx.blocks.state[b as usize] != BlockState::Bad;
                if self.shape.plane_blocks(ctx.plane.0).contains(&b) && ctx.migratable(b) {
                    return Some(b);
                }
            }
            if !usable {
                self.flags[set] = true;
                self.set_flags += 1;
            }
        }
        None
    }

    /// Every set is flagged: the interval ends.
    fn maybe_reset(&mut self) -> bool {
        if self.set_flags < self.flags.len() as u64 {
            return false;
        }
        self.flags.fill(false);
        self.set_flags = 0;
        self.erases = 0;
        self.resets += 1;
        true
    }
}

impl WearPolicy for Bet {
    type Params = Params;

    fn new(p: &Params, s: &WearShape) -> Bet {
        let blocks = s.planes * s.region_blocks_per_plane;
        let k = p.blocks_per_flag_log2.min(20);
        Bet {
            threshold: p.threshold.max(1) as u64,
            k,
            flags: vec![false; (blocks as usize).div_ceil(1 << k)],
            erases: 0,
            set_flags: 0,
            rng: stream(s.seed, tag::BET + s.region as u64),
            shape: *s,
            migrations: 0,
            resets: 0,
        }
    }

    fn on_erase(&mut self, block: BlockId, ctx: &WearCtx) -> WearAction {
        let block = block.0;
        self.erases += 1;
        let set = (self.rel(block) >> self.k) as usize;
        if !self.flags[set] {
            self.flags[set] = true;
            self.set_flags += 1;
        }
        if self.maybe_reset() || self.erases < self.threshold * self.set_flags.max(1) {
            return WearAction::Idle;
        }
        let cold = self.cold_block(ctx);
        if self.maybe_reset() {
            return WearAction::Idle;
        }
        match cold {
            Some(from) => {
                self.migrations += 1;
                WearAction::Migrate {
                    from: BlockId(from),
                    into: BlockId::NONE,
                }
            }
            None => WearAction::Idle,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::CellMode;
    use crate::flash::BlockTable;
    use crate::ids::PlaneId;

    /// 1 plane of 4 blocks, one flag per block, T = 2.
    fn setup() -> (Bet, BlockTable, WearShape) {
        let shape = WearShape {
            region: 0,
            planes: 1,
            blocks_per_plane: 4,
            first_index: 0,
            region_blocks_per_plane: 4,
            units_per_block: 4,
            seed: 1,
        };
        let p = Params {
            threshold: 2,
            blocks_per_flag_log2: 0,
        };
        let mut blocks = BlockTable::new(4, CellMode::Tlc);
        blocks.state.fill(BlockState::Full);
        (Bet::new(&p, &shape), blocks, shape)
    }

    #[test]
    fn migrates_an_unflagged_block_once_erases_concentrate_and_resets() {
        let (mut bet, mut blocks, shape) = setup();
        let erase = |bet: &mut Bet, blocks: &BlockTable, b: u32| {
            let ctx = WearCtx {
                blocks,
                shape: &shape,
                plane: PlaneId(0),
                after_gc: true,
            };
            bet.on_erase(BlockId(b), &ctx)
        };
        // Block 0 erased once: 1 erase, 1 flag: below T · flags.
        assert_eq!(erase(&mut bet, &blocks, 0), WearAction::Idle);
        // Again: 2 erases on 1 flagged set reach T = 2: an unflagged (cold) block moves.
        let WearAction::Migrate {
            from: BlockId(from),
            into,
        } = erase(&mut bet, &blocks, 0)
        else {
            panic!("BET should migrate a cold block")
        };
        assert!(from != 0 && into.is_none(), "{from}");
        assert_eq!(bet.migrations, 1);
        // The cold block is erased (flagged): 3 erases, 2 flags: below 2 · 2.
        blocks.state[from as usize] = BlockState::Erasing;
        assert_eq!(erase(&mut bet, &blocks, from), WearAction::Idle);
        // Flag the other two: the last flag ends the interval and resets the table.
        let rest: Vec<u32> = (1..4).filter(|&b| b != from).collect();
        erase(&mut bet, &blocks, rest[0]);
        assert_eq!(bet.resets, 0);
        assert_eq!(erase(&mut bet, &blocks, rest[1]), WearAction::Idle);
        assert_eq!((bet.resets, bet.erases, bet.set_flags), (1, 0, 0));
    }

    #[test]
    fn retired_blocks_do_not_stall_the_interval() {
        let (mut bet, mut blocks, shape) = setup();
        blocks.state[3] = BlockState::Bad;
        let ctx = WearCtx {
            blocks: &blocks,
            shape: &shape,
            plane: PlaneId(0),
            after_gc: true,
        };
        // Blocks 0, 1, 2 flagged; erases keep coming: the next search for a cold block
        // passes the retired block's set, flags it, and the interval ends.
        for b in [0, 1, 2, 0, 0] {
            assert_eq!(bet.on_erase(BlockId(b), &ctx), WearAction::Idle);
        }
        assert_eq!(bet.resets, 0);
        assert_eq!(bet.on_erase(BlockId(0), &ctx), WearAction::Idle);
        assert_eq!(bet.resets, 1, "the retired block's set counts as flagged");
    }
}
