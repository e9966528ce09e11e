//! What the two reliability-job families share: read reclaim ([`crate::reclaim`],
//! `ftl.read_reclaim`) and retention refresh ([`crate::refresh`], `ftl.refresh`). Each
//! names when a full block's data must move before its raw bit errors outgrow the ECC:
//! after many reads of the block since its erase (read disturb) or once its data is old
//! (retention loss). The FTL then relocates the block's valid units (a relocation job of
//! the background engine, its operations counted under cause `reclaim` or `refresh`) and
//! erases it.
//!
//! The FTL asks a policy in two places only: on a read of a block whose reads since its
//! erase reached [`RelocationPolicy::read_limit`] (and when such a block fills), and in a
//! scan of every full block each [`RelocationPolicy::scan_interval_ns`] of simulated time.
//! Both ask [`RelocationPolicy::due`] with a [`BlockView`] and act on the [`Trigger`] it
//! returns. A new trigger (an RBER estimate near the ECC's capability, once the device
//! has an RBER model) is a [`Trigger`] variant, a field of [`BlockView`] and a policy
//! answering it in `due`.

use crate::flash::Cause;

/// Why a block is relocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Its reads since its erase reached the policy's count (read disturb).
    ReadCount,
    /// Its data reached the policy's age (retention).
    Age,
}

impl Trigger {
    /// The cause the relocation's NAND operations are counted under.
    pub fn cause(self) -> Cause {
        match self {
            Trigger::ReadCount => Cause::Reclaim,
            Trigger::Age => Cause::Refresh,
        }
    }
}

/// What a policy sees of a full block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockView {
    /// Page reads of the block since its erase.
    pub reads_since_erase: u32,
    /// Time since the block's first program after its erase (simulated ns).
    pub data_age_ns: u64,
    /// The block's P/E cycles.
    pub erase_count: u32,
}

/// A reliability-job policy (both families implement it).
pub trait RelocationPolicy: Sized {
    type Params;
    fn new(params: &Self::Params, shape: &RelocationShape) -> Self;
    /// Reads of a block since its erase from which the FTL asks [`Self::due`] on each
    /// read of it (`u32::MAX`: never on reads).
    #[inline]
    fn read_limit(&self) -> u32 {
        u32::MAX
    }
    /// Simulated time between two scans of every full block (0: no scans).
    #[inline]
    fn scan_interval_ns(&self) -> u64 {
        0
    }
    /// Whether `block` must be relocated now, and why.
    fn due(&self, block: &BlockView) -> Option<Trigger>;
}

/// What a reliability policy is built for (nothing yet: the device's shape, later its
/// ECC capability).
#[derive(Clone, Copy, Debug, Default)]
pub struct RelocationShape;

/// What a reliability policy's parameters tell the rest of the device.
pub trait RelocationParams: crate::PolicyParams {
    /// Whether the policy relocates anything (`none` does not).
    fn relocates(&self) -> bool {
        true
    }
}
