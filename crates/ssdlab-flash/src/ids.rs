//! Typed ids: zero-cost newtypes over `u32` for the things the FTL and its policies name
//! by number, so a plane cannot be passed where a block is meant. Each is
//! `#[repr(transparent)]`, `Copy`, ordered, and has its own `NONE` (`u32::MAX`); dense
//! arrays are indexed with `.idx()`.

macro_rules! id_type {
    ($($(#[$m:meta])* $Name:ident;)+) => {$(
        $(#[$m])*
        #[repr(transparent)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $Name(pub u32);

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
    BlockId;
    /// A plane of the device (global plane id).
    PlaneId;
    /// A die of the device.
    DieId;
    /// A unit slot on flash (global: block × slots per block + offset).
    SlotId;
    /// A logical mapping unit (logical page number).
    Lpn;
    /// A relocation job (GC, wear leveling, retirement) in the FTL's slab.
    JobId;
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
