//! Typed ids: zero-cost newtypes over `u32` for the things the FTL and its policies name
//! by number, so a plane cannot be passed where a block is meant. Each is
//! `#[repr(transparent)]`, `Copy`, ordered, and has its own `NONE` (`u32::MAX`); dense
//! arrays stay `Vec`s indexed with `.idx()`, so layout and speed are those of a `u32`.
//!
//! Which are opaque (the decision, as rust-analyzer's arena `Idx` is opaque):
//!
//! * [`JobId`] is: only the FTL's job slab makes one ([`JobId::from_slab`]), nothing does
//!   arithmetic on it, and its number means nothing outside the slab.
//! * [`BlockId`], [`PlaneId`], [`DieId`], [`SlotId`], [`Lpn`] keep a public field: they
//!   are positions in the device's address space, and the FTL and the policies compute
//!   with them (a region's block range in a plane, a page's slots, a translation page's
//!   units, a policy's relative block numbers). A private field would turn each such step
//!   into `new(x.get() + k)` without hiding anything. What the types buy is that a block
//!   is never passed as a slot or a unit: conversions between them go through the named
//!   helpers of `Geometry` (`block_of_slot`, `first_slot_of_block`, `plane_of_block`,
//!   `die_of_block`) and `Media` (`page_slot`), never through `.0`. A slot is an
//!   address: `SlotId + k` is the slot `k` further, `SlotId - SlotId` their distance.
//! * Left raw on purpose: the `Oob`'s positions (`usize`: it is a bitmap and arrays
//!   scanned by the word in the copy loops; callers pass `slot.idx()`) and its unit word
//!   (`u32`: an `Lpn`, or a translation page's or a trim record's tag).

macro_rules! id_type {
    ($($(#[$m:meta])* $vis:vis $Name:ident;)+) => {$(
        $(#[$m])*
        #[repr(transparent)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $Name($vis u32);

        impl $Name {
            /// No such id.
            pub const NONE: $Name = $Name(u32::MAX);

            /// Index into a dense array.
            #[inline(always)]
            pub const fn idx(self) -> usize {
                self.0 as usize
            }

            /// Whether this is [`Self::NONE`].
            #[inline(always)]
            pub const fn is_none(self) -> bool {
                self.0 == u32::MAX
            }
        }

        impl From<$Name> for u32 {
            #[inline(always)]
            fn from(id: $Name) -> u32 {
                id.0
            }
        }

        impl std::fmt::Display for $Name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    )+};
}

id_type! {
    /// A block of the device (global block id: plane-major).
    pub BlockId;
    /// A plane of the device (global plane id).
    pub PlaneId;
    /// A die of the device.
    pub DieId;
    /// A unit slot on flash (global: block × slots per block + offset).
    pub SlotId;
    /// A logical mapping unit (logical page number).
    pub Lpn;
    /// A relocation job (GC, wear leveling, retirement) in the FTL's slab (opaque).
    JobId;
}

impl JobId {
    /// The job in entry `index` of the FTL's job slab (the one place a `JobId` is made).
    #[inline(always)]
    pub const fn from_slab(index: usize) -> JobId {
        JobId(index as u32)
    }
}

impl std::ops::Add<u32> for SlotId {
    type Output = SlotId;
    /// The slot `k` further on.
    #[inline(always)]
    fn add(self, k: u32) -> SlotId {
        SlotId(self.0 + k)
    }
}

impl std::ops::Sub for SlotId {
    type Output = u32;
    /// Slots from `other` up to `self`.
    #[inline(always)]
    fn sub(self, other: SlotId) -> u32 {
        self.0 - other.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cost_nothing_and_have_their_own_none() {
        assert_eq!(std::mem::size_of::<BlockId>(), 4);
        assert!(JobId::NONE.is_none());
        assert!(!BlockId(0).is_none());
        assert_eq!(SlotId(7).idx(), 7);
        assert_eq!(u32::from(Lpn(3)), 3);
    }
}
