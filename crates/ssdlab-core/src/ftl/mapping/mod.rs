//! Logical-to-physical mapping. The FTL owns the mapping and drivers never read it:
//! every lookup goes through the FTL, so a mapping with a cache (DFTL, spec 04) can charge
//! translation reads and write-backs for it. The table itself is the ground truth of where
//! each unit lives; a cached mapping models which part of it the controller's DRAM holds.
//!
//! A new mapping is one file here (a `Params` struct and a type implementing
//! [`MappingPolicy`]) plus one registration line below.

super::registry::policy_registry! {
    $
    /// `[ftl.mapping]`: the mapping scheme.
    config MappingConfig default Page;
    /// The mapping of the device.
    runtime Mapping: MappingPolicy(MappingShape);
    "page" => Page(page::PageMap),
}

/// What a mapping is built for.
#[derive(Clone, Copy, Debug)]
pub struct MappingShape {
    pub logical_units: u32,
}

/// A logical-to-physical mapping scheme.
pub trait MappingPolicy: Sized {
    type Params;
    fn new(params: &Self::Params, shape: &MappingShape) -> Self;
    /// Slot holding `lpn`, or `NONE` when unmapped.
    fn lookup(&self, lpn: u32) -> u32;
    /// Point `lpn` at `slot` (or `NONE`); returns the previous slot.
    fn update(&mut self, lpn: u32, slot: u32) -> u32;
    fn logical_units(&self) -> u32;
    /// DRAM the mapping keeps (bytes).
    fn dram_bytes(&self) -> u64;
}

impl Mapping {
    #[inline]
    pub fn lookup(&self, lpn: u32) -> u32 {
        dispatch!(self, p => p.lookup(lpn))
    }

    #[inline]
    pub fn update(&mut self, lpn: u32, slot: u32) -> u32 {
        dispatch!(self, p => p.update(lpn, slot))
    }

    pub fn logical_units(&self) -> u32 {
        dispatch!(self, p => p.logical_units())
    }

    pub fn dram_bytes(&self) -> u64 {
        dispatch!(self, p => p.dram_bytes())
    }

    /// Units currently mapped (a scan; tests and summaries).
    pub fn mapped_units(&self) -> u64 {
        (0..self.logical_units())
            .filter(|&l| self.lookup(l) != crate::flash::NONE)
            .count() as u64
    }
}
