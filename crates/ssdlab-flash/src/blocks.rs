use crate::base::CellMode;
use crate::ids::BlockId;
use crate::CellState;

/// Life-cycle state of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockState {
    /// Erased and in its region's free pool of its plane.
    Free,
    /// A write frontier of some stream (pages being programmed).
    Open,
    /// Every page programmed; a GC candidate of its region.
    Full,
    /// The source of a relocation job (GC, wear leveling, retirement): its valid units
    /// are being moved out.
    Victim,
    /// Erase issued, not finished.
    Erasing,
    /// Retired: factory bad, worn out, or failed a program or an erase.
    Bad,
}

impl BlockState {
    /// Whether `self → to` is a legal life-cycle step: a free block opens (or is found bad
    /// at the factory), an open block fills (or, its program failed, becomes a retirement
    /// job's source), a full block becomes a job's source, a source is erased (or retired),
    /// an erase frees the block (or retires it).
    #[inline]
    pub const fn may_become(self, to: BlockState) -> bool {
        use BlockState::*;
        matches!(
            (self, to),
            (Free, Open)
                | (Free, Bad)
                | (Open, Full)
                | (Open, Victim)
                | (Full, Victim)
                | (Victim, Erasing)
                | (Victim, Bad)
                | (Erasing, Free)
                | (Erasing, Bad)
        )
    }
}

/// Per-block state, one dense array per field, indexed by block id.
#[derive(Clone)]
pub struct BlockTable {
    pub state: Vec<BlockState>,
    /// Region the block belongs to (fixed for the device's life).
    pub region: Vec<u8>,
    /// Index of the block's (region, plane) state in the FTL: `region · planes + plane`.
    pub rp: Vec<u32>,
    pub valid_units: Vec<u32>,
    pub erase_count: Vec<u32>,
    pub cell_mode: Vec<CellMode>,
    /// Next page to program (the write pointer: programs issued).
    pub next_page: Vec<u32>,
    /// Pages whose program has completed (≤ `next_page`; programs of one block complete
    /// in order).
    pub programmed: Vec<u32>,
    /// Value of the FTL's program sequence when the block became full (its data age).
    pub closed_seq: Vec<u64>,
    /// Reads queued or running on the block (timed mode): its erase waits for them.
    pub pins: Vec<u16>,
    /// Retire instead of erasing once its data has moved (a program on it failed).
    pub doomed: Vec<bool>,
    /// Closed by a power-on recovery with only its first `programmed` pages written (the
    /// rest stay unused until its erase, which clears this).
    pub sealed: Vec<bool>,
    /// The write lane of the stream that opened the block (FDP handle, zoned device's
    /// active-zone slot; 0 otherwise): GC copies its data into that lane's GC stream.
    pub lane: Vec<u8>,
    /// Page reads of the block since its last erase (host, GC, migration and translation
    /// reads alike, counted as issued; saturating): its read disturb.
    pub reads_since_erase: Vec<u32>,
    /// Simulated time (ns, the driver's clock: [`BlockTable::NOT_PROGRAMMED`] while
    /// erased) when the block's first program after its erase completed: its data's age
    /// is measured from here (retention).
    pub first_program_ns: Vec<u64>,
}

impl BlockTable {
    pub fn new(blocks: u32, mode: CellMode) -> BlockTable {
        let n = blocks as usize;
        BlockTable {
            state: vec![BlockState::Free; n],
            region: vec![0; n],
            rp: vec![0; n],
            valid_units: vec![0; n],
            erase_count: vec![0; n],
            cell_mode: vec![mode; n],
            next_page: vec![0; n],
            programmed: vec![0; n],
            closed_seq: vec![0; n],
            pins: vec![0; n],
            doomed: vec![false; n],
            sealed: vec![false; n],
            lane: vec![0; n],
            reads_since_erase: vec![0; n],
            first_program_ns: vec![BlockTable::NOT_PROGRAMMED; n],
        }
    }

    /// [`BlockTable::first_program_ns`] of a block not programmed since its erase.
    pub const NOT_PROGRAMMED: u64 = u64::MAX;

    /// `times` page reads of `block` were issued.
    #[inline(always)]
    pub fn count_reads(&mut self, block: BlockId, times: u32) {
        let r = &mut self.reads_since_erase[block.idx()];
        *r = r.saturating_add(times);
    }

    /// `block`'s programmed pages went from `before` to more, the last completing at
    /// `now_ns`: the first program after its erase stamps the block.
    #[inline(always)]
    pub fn note_programmed(&mut self, block: BlockId, before: u32, now_ns: u64) {
        if before == 0 {
            self.first_program_ns[block.idx()] = now_ns;
        }
    }

    /// `block` was erased: no reads since, nothing programmed.
    #[inline]
    pub fn note_erased(&mut self, block: BlockId) {
        self.reads_since_erase[block.idx()] = 0;
        self.first_program_ns[block.idx()] = BlockTable::NOT_PROGRAMMED;
    }

    /// A new measured phase starts its clock at 0: data programmed before it (during
    /// preconditioning, on another driver's clock) counts as programmed at time 0.
    pub fn restart_program_clock(&mut self) {
        for t in &mut self.first_program_ns {
            if *t != BlockTable::NOT_PROGRAMMED {
                *t = 0;
            }
        }
    }

    /// Age (ns) at `now_ns` of the data `block` holds (0 while erased, or when `now_ns`
    /// is earlier than its first program).
    #[inline]
    pub fn data_age_ns(&self, block: BlockId, now_ns: u64) -> u64 {
        match self.first_program_ns[block.idx()] {
            BlockTable::NOT_PROGRAMMED => 0,
            t => now_ns.saturating_sub(t),
        }
    }

    pub fn len(&self) -> usize {
        self.state.len()
    }

    pub fn is_empty(&self) -> bool {
        self.state.is_empty()
    }

    /// Move `block` from state `from` to `to`. Checked in every build (a block, not a
    /// unit, changes state: cheap): when the block is not in `from` or the step is not a
    /// legal one ([`BlockState::may_become`]) the state is set anyway and the violation is
    /// returned for the FTL to record (it becomes the core's `SimError::Internal`).
    #[inline]
    pub fn set_state(
        &mut self,
        block: BlockId,
        from: BlockState,
        to: BlockState,
    ) -> Result<(), String> {
        let s = &mut self.state[block.idx()];
        let was = *s;
        *s = to;
        if was == from && from.may_become(to) {
            Ok(())
        } else {
            Err(illegal_transition(block, was, from, to))
        }
    }

    /// What the timing model may read of `block` ([`crate::TimingModel::array`]).
    #[inline(always)]
    pub fn cell_state(&self, block: BlockId) -> CellState {
        let b = block.idx();
        CellState {
            mode: self.cell_mode[b],
            pe_cycles: self.erase_count[b],
        }
    }

    /// Blocks not retired.
    pub fn usable(&self) -> usize {
        self.state.iter().filter(|&&s| s != BlockState::Bad).count()
    }
}

#[cold]
#[inline(never)]
fn illegal_transition(block: BlockId, was: BlockState, from: BlockState, to: BlockState) -> String {
    if was == from {
        format!("block {block}: illegal state change {from:?} -> {to:?}")
    } else {
        format!("block {block}: state change {from:?} -> {to:?} found it {was:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads saturate, the first program stamps once, an erase clears both, a new phase
    /// moves stamped blocks to time 0 and leaves erased ones unset.
    #[test]
    fn read_disturb_and_data_age_per_block() {
        let mut t = BlockTable::new(2, CellMode::Tlc);
        let (a, b) = (BlockId(0), BlockId(1));
        t.count_reads(a, 3);
        t.count_reads(a, u32::MAX);
        assert_eq!(t.reads_since_erase[0], u32::MAX);
        t.note_programmed(a, 0, 40);
        t.note_programmed(a, 1, 90);
        assert_eq!((t.first_program_ns[0], t.data_age_ns(a, 100)), (40, 60));
        assert_eq!((t.data_age_ns(a, 10), t.data_age_ns(b, 100)), (0, 0));
        t.restart_program_clock();
        assert_eq!(t.first_program_ns, [0, BlockTable::NOT_PROGRAMMED]);
        t.note_erased(a);
        assert_eq!(t.reads_since_erase[0], 0);
        assert_eq!(t.first_program_ns[0], BlockTable::NOT_PROGRAMMED);
    }
}
