use crate::config::CellMode;

/// Life-cycle state of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockState {
    /// Erased and in its plane's free pool.
    Free,
    /// Being programmed (a host or GC write frontier).
    Open,
    /// Every page programmed; a GC candidate.
    Full,
    /// Chosen by GC; its erase is issued but not finished.
    Erasing,
    /// Retired (erase count reached endurance).
    Bad,
}

/// Per-block state, one dense array per field, indexed by block id.
#[derive(Clone)]
pub struct BlockTable {
    pub state: Vec<BlockState>,
    pub valid_units: Vec<u32>,
    pub erase_count: Vec<u32>,
    pub cell_mode: Vec<CellMode>,
    /// Next page to program (the write pointer).
    pub next_page: Vec<u32>,
    /// Value of the FTL's program sequence when the block became full (its data age).
    pub closed_seq: Vec<u64>,
}

impl BlockTable {
    pub fn new(blocks: u32, mode: CellMode) -> BlockTable {
        let n = blocks as usize;
        BlockTable {
            state: vec![BlockState::Free; n],
            valid_units: vec![0; n],
            erase_count: vec![0; n],
            cell_mode: vec![mode; n],
            next_page: vec![0; n],
            closed_seq: vec![0; n],
        }
    }

    pub fn len(&self) -> usize {
        self.state.len()
    }

    pub fn is_empty(&self) -> bool {
        self.state.is_empty()
    }
}
