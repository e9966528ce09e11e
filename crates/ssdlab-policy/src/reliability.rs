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
//! returns. The `rber` policies of both families ask for the block's modelled RBER
//! ([`RelocationPolicy::needs_rber`]: computed only then) and compare it with the ECC's
//! hard-decode limit ([`RelocationShape::hard_limit_rber`]).
//!
//! **Urgency.** A job whose block [`RelocationPolicy::urgent`] finds past a second, higher
//! mark (its reads, or its RBER) gets die time: the FTL ranks its plane's GC pressure
//! at least `Pressing(1)`, so host reads and background batches take turns on its die, as
//! they do when GC reaches its hard threshold (docs/reliability.md).

use crate::flash::Cause;

/// Why a block is relocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Its reads since its erase reached the policy's count (read disturb).
    ReadCount,
    /// Its data reached the policy's age (retention).
    Age,
    /// Read reclaim's `rber` policy: the block's modelled RBER reached the margin.
    ReclaimRber,
    /// Retention refresh's `rber` policy: the block's modelled RBER reached the margin.
    RefreshRber,
}

impl Trigger {
    /// The cause the relocation's NAND operations are counted under.
    pub fn cause(self) -> Cause {
        match self {
            Trigger::ReadCount | Trigger::ReclaimRber => Cause::Reclaim,
            Trigger::Age | Trigger::RefreshRber => Cause::Refresh,
        }
    }
}

/// What a policy sees of a full block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockView {
    /// Page reads of the block since its erase.
    pub reads_since_erase: u32,
    /// Time since the block's first program after its erase (simulated ns).
    pub data_age_ns: u64,
    /// The block's P/E cycles.
    pub erase_count: u32,
    /// The block's modelled RBER now (`RberModel::rber` of its cell mode, wear, data age,
    /// reads since erase and erase-suspension excess, as a read of it would see), when a
    /// policy [`needs`](RelocationPolicy::needs_rber) it; 0 otherwise.
    pub rber: f64,
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
    /// Whether [`BlockView::rber`] must be computed (only the `rber` policies: the others
    /// pay nothing for it).
    #[inline]
    fn needs_rber(&self) -> bool {
        false
    }
    /// Whether the job relocating `block` (due, its job started) is urgent: its die then
    /// gives it every other batch even while host reads wait. Never, by default.
    #[inline]
    fn urgent(&self, block: &BlockView) -> bool {
        let _ = block;
        false
    }
    /// Whether [`Self::urgent`] can ever be true (the FTL asks it only then).
    #[inline]
    fn can_be_urgent(&self) -> bool {
        false
    }
}

/// What a reliability policy is built for: the device's ECC limit.
#[derive(Clone, Copy, Debug, Default)]
pub struct RelocationShape {
    /// The **hard-decode limit**: the RBER at which a read of one whole page (all its
    /// codewords) fails the hard decoder at retry step 0 with probability
    /// [`HARD_LIMIT_FAIL`] (`Ecc::rber_at_read_fail`, by bisection). The same for every
    /// cell mode (one ECC); 0 when no policy needs it.
    pub hard_limit_rber: f64,
}

/// The step-0 failure probability of a whole-page read that defines
/// [`RelocationShape::hard_limit_rber`]: one read in a thousand starts retrying.
pub const HARD_LIMIT_FAIL: f64 = 1e-3;

/// What a reliability policy's parameters tell the rest of the device.
pub trait RelocationParams: crate::PolicyParams {
    /// Whether the policy relocates anything (`none` does not).
    fn relocates(&self) -> bool {
        true
    }
}

/// The configuration and runtime methods both families share: `relocates` and
/// `is_default` on the config, and the static dispatch of [`RelocationPolicy`]'s questions
/// on the runtime. Expanded in each family's module, after its `policy_registry!` (whose
/// `dispatch!` it calls).
macro_rules! relocation_family {
    ($Config:ident, $Runtime:ident) => {
        impl $Config {
            /// Whether the policy relocates anything.
            pub fn relocates(&self) -> bool {
                self.params().relocates()
            }

            /// Whether it is the default (`none`): left out of a written config.
            pub fn is_default(&self) -> bool {
                *self == Self::default()
            }
        }

        impl $Runtime {
            #[inline]
            pub fn read_limit(&self) -> u32 {
                dispatch!(self, p => p.read_limit())
            }

            #[inline]
            pub fn scan_interval_ns(&self) -> u64 {
                dispatch!(self, p => p.scan_interval_ns())
            }

            #[inline]
            pub fn due(&self, block: &$crate::reliability::BlockView) -> Option<$crate::reliability::Trigger> {
                dispatch!(self, p => p.due(block))
            }

            #[inline]
            pub fn needs_rber(&self) -> bool {
                dispatch!(self, p => p.needs_rber())
            }

            #[inline]
            pub fn urgent(&self, block: &$crate::reliability::BlockView) -> bool {
                dispatch!(self, p => p.urgent(block))
            }

            #[inline]
            pub fn can_be_urgent(&self) -> bool {
                dispatch!(self, p => p.can_be_urgent())
            }
        }
    };
}

pub(crate) use relocation_family;
