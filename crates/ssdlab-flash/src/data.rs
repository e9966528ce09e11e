//! The bytes the host stored (`ssdlab serve`): kept with the physical slot the FTL put
//! each unit in, so they move exactly as the FTL moves units — host programs, GC,
//! wear-leveling and migration copies — and a mapping bug hands a client the wrong bytes.
//!
//! * A block's bytes are one allocation (`slots_per_block × unit_bytes`, zeroed, made on
//!   the block's first program and freed by its erase): a stored GiB costs about a GiB
//!   times the share of the block's slots still holding data (GC keeps that near the
//!   device's valid ratio), plus the write buffer's units.
//! * A host write's bytes wait by request tag ([`SlotData::put_payload`]) until its units
//!   enter the write buffer; there a unit's bytes wait by unit ([`SlotData::stage`],
//!   merged with the unit's current bytes when the write covers it only in part) until
//!   its page program is issued and they move into the slot ([`SlotData::program`]).
//! * Never-written, trimmed and unmapped units read as zeros.
//!
//! Integrity versions ride along (the FTL checks every read against them): the staged
//! bytes carry the version they belong to, and a program of another version is an error.

use std::collections::HashMap;

/// Bytes of a host write waiting for its units to enter the write buffer.
#[derive(Clone)]
struct Payload {
    offset_bytes: u64,
    len_bytes: u64,
    /// The bytes; empty for zeros (nothing held for them).
    bytes: Vec<u8>,
}

#[derive(Clone)]
pub struct SlotData {
    unit_bytes: usize,
    slots_per_block: usize,
    /// Per block: the bytes of its slots (`None` until its first program since an erase).
    blocks: Vec<Option<Box<[u8]>>>,
    /// Units in a write buffer whose program is not issued yet: unit → (version, bytes).
    staged: HashMap<u32, (crate::base::Version, Box<[u8]>)>,
    /// Host writes submitted and not yet in the buffer, by request tag.
    payloads: HashMap<u32, Payload>,
    /// Blocks holding bytes now.
    blocks_held: u64,
    /// A unit's bytes on their way from one slot to another.
    scratch: Vec<u8>,
    /// Unit buffers no longer staged, reused by the next [`SlotData::stage`] (no
    /// allocation per unit once the buffer has filled once).
    spare_units: Vec<Box<[u8]>>,
    /// Payloads of completed writes, for the server to reuse
    /// ([`SlotData::take_spent_payload`]).
    spent: Vec<Vec<u8>>,
    /// Block buffers, zeroed and faulted in, for the next blocks' first programs.
    spare_blocks: Vec<Box<[u8]>>,
    /// Erased blocks' buffers not zeroed yet, and a buffer being readied by
    /// [`SlotData::ready_spares`] (bytes `..done` zeroed).
    dirty_blocks: Vec<Box<[u8]>>,
    readying: Option<(Box<[u8]>, usize)>,
}

/// Block buffers readied ahead (zeroed, faulted in) by [`SlotData::ready_spares`].
const KEEP_SPARE_BLOCKS: usize = 4;

/// Erased blocks' buffers (ready, dirty or being readied) kept at most, in bytes (at least
/// [`KEEP_SPARE_BLOCKS`] buffers): GC erases blocks in bursts, and a buffer dropped then is
/// a fresh one later, a page fault per 4 KiB (tens of µs each on a VM) where zeroing a kept
/// one costs a memset.
const KEEP_BLOCK_BYTES: usize = 32 << 20;

/// Erased blocks' buffers kept at most, blocks of `block_bytes`.
fn keep_blocks(block_bytes: usize) -> usize {
    (KEEP_BLOCK_BYTES / block_bytes.max(1)).max(KEEP_SPARE_BLOCKS)
}

/// Spare unit buffers and spent payloads kept at most.
const KEEP_SPARE: usize = 1024;

impl SlotData {
    pub fn new(blocks: u32, slots_per_block: u32, unit_bytes: u32) -> SlotData {
        SlotData {
            unit_bytes: unit_bytes as usize,
            slots_per_block: slots_per_block as usize,
            blocks: (0..blocks).map(|_| None).collect(),
            staged: HashMap::new(),
            payloads: HashMap::new(),
            blocks_held: 0,
            scratch: vec![0; unit_bytes as usize],
            spare_units: Vec::new(),
            spent: Vec::new(),
            spare_blocks: Vec::new(),
            dirty_blocks: Vec::new(),
            readying: None,
        }
    }

    /// Bytes held in blocks and in the buffer (the memory the stored data costs).
    pub fn held_bytes(&self) -> u64 {
        self.blocks_held * (self.slots_per_block * self.unit_bytes) as u64
            + (self.staged.len() * self.unit_bytes) as u64
    }

    /// The bytes of a host write tagged `tag` at `offset_bytes`, until its units enter the
    /// write buffer.
    pub fn put_payload(&mut self, tag: u32, offset_bytes: u64, bytes: Vec<u8>) {
        self.payloads.insert(
            tag,
            Payload {
                offset_bytes,
                len_bytes: bytes.len() as u64,
                bytes,
            },
        );
    }

    /// A host write tagged `tag` of `len_bytes` zeros at `offset_bytes` (no bytes held).
    pub fn put_zeros(&mut self, tag: u32, offset_bytes: u64, len_bytes: u64) {
        self.payloads.insert(
            tag,
            Payload {
                offset_bytes,
                len_bytes,
                bytes: Vec::new(),
            },
        );
    }

    /// Forget the payload of `tag` (the write completed: every unit is in the buffer).
    pub fn drop_payload(&mut self, tag: u32) {
        if let Some(p) = self.payloads.remove(&tag) {
            if p.bytes.capacity() > 0 && self.spent.len() < KEEP_SPARE {
                self.spent.push(p.bytes);
            }
        }
    }

    /// A payload buffer of a completed write, to reuse for another.
    pub fn take_spent_payload(&mut self) -> Option<Vec<u8>> {
        self.spent.pop()
    }

    /// A unit buffer (contents unspecified): a spare one, else a new one.
    fn unit_buffer(&mut self) -> Box<[u8]> {
        self.spare_units
            .pop()
            .unwrap_or_else(|| vec![0u8; self.unit_bytes].into_boxed_slice())
    }

    fn spare(&mut self, unit: Box<[u8]>) {
        if self.spare_units.len() < KEEP_SPARE {
            self.spare_units.push(unit);
        }
    }

    fn block_and_offset(&self, slot: u32) -> (usize, usize) {
        let s = slot as usize;
        (
            s / self.slots_per_block,
            (s % self.slots_per_block) * self.unit_bytes,
        )
    }

    /// The bytes of `slot`, if its block holds any.
    pub fn slot_bytes(&self, slot: u32) -> Option<&[u8]> {
        let (b, off) = self.block_and_offset(slot);
        self.blocks[b]
            .as_deref()
            .map(|d| &d[off..off + self.unit_bytes])
    }

    fn slot_bytes_mut(&mut self, slot: u32) -> &mut [u8] {
        let (b, off) = self.block_and_offset(slot);
        let len = self.slots_per_block * self.unit_bytes;
        if self.blocks[b].is_none() {
            self.blocks_held += 1;
        }
        if self.blocks[b].is_none() {
            // A ready one costs nothing; an erased block's buffer a memset; a new one a
            // page fault per page as it fills.
            let fresh = if let Some(d) = self.spare_blocks.pop() {
                d
            } else if let Some(mut d) = self.dirty_blocks.pop() {
                d.fill(0);
                d
            } else {
                vec![0u8; len].into_boxed_slice()
            };
            self.blocks[b] = Some(fresh);
        }
        let d = self.blocks[b].as_mut().expect("just made");
        &mut d[off..off + self.unit_bytes]
    }

    /// The staged bytes of `lpn`, if the buffer holds them at `version`.
    pub fn staged_bytes(&self, lpn: u32, version: crate::base::Version) -> Option<&[u8]> {
        match self.staged.get(&lpn) {
            Some((v, d)) if *v == version => Some(d),
            _ => None,
        }
    }

    /// Unit `lpn` entered the write buffer at `version` for the write tagged `tag`. The
    /// part of the unit the write does not cover keeps the unit's current bytes: those it
    /// has in the buffer, else those of `mapped_slot` (its slot on flash, or `NONE`).
    pub fn stage(&mut self, lpn: u32, version: crate::base::Version, tag: u32, mapped_slot: u32) {
        let u = self.unit_bytes;
        let mut unit = match self.staged.remove(&lpn) {
            Some((_, d)) => d,
            None => {
                let mut unit = self.unit_buffer();
                match (mapped_slot != super::NONE)
                    .then(|| self.slot_bytes(mapped_slot))
                    .flatten()
                {
                    Some(c) => unit.copy_from_slice(c),
                    None => unit.fill(0),
                }
                unit
            }
        };
        if let Some(p) = self.payloads.get(&tag) {
            let start = lpn as u64 * u as u64;
            let lo = start.max(p.offset_bytes);
            let hi = (start + u as u64).min(p.offset_bytes + p.len_bytes);
            if lo < hi {
                let (a, b) = ((lo - start) as usize, (hi - start) as usize);
                let src = (lo - p.offset_bytes) as usize;
                if p.bytes.is_empty() {
                    unit[a..b].fill(0);
                } else {
                    unit[a..b].copy_from_slice(&p.bytes[src..src + (b - a)]);
                }
            }
        }
        self.staged.insert(lpn, (version, unit));
    }

    /// The program of `lpn` at `version` into `slot` was issued: its bytes move there.
    pub fn program(
        &mut self,
        lpn: u32,
        version: crate::base::Version,
        slot: u32,
    ) -> Result<(), String> {
        match self.staged.remove(&lpn) {
            Some((v, d)) if v == version => {
                self.slot_bytes_mut(slot).copy_from_slice(&d);
                self.spare(d);
                Ok(())
            }
            Some((v, d)) => {
                self.staged.insert(lpn, (v, d));
                Err(format!(
                    "data of unit {lpn}: version {version} programmed, version {v} staged"
                ))
            }
            None => Err(format!(
                "data of unit {lpn}: version {version} programmed, nothing staged"
            )),
        }
    }

    /// A copy moved the unit in `src` to `dst`.
    pub fn copy(&mut self, src: u32, dst: u32) {
        let mut unit = std::mem::take(&mut self.scratch);
        match self.slot_bytes(src) {
            Some(d) => unit.copy_from_slice(d),
            None => unit.fill(0),
        }
        self.slot_bytes_mut(dst).copy_from_slice(&unit);
        self.scratch = unit;
    }

    /// `lpn` was trimmed: its buffered bytes go.
    pub fn unstage(&mut self, lpn: u32) {
        if let Some((_, d)) = self.staged.remove(&lpn) {
            self.spare(d);
        }
    }

    /// `block` was erased: its bytes go.
    pub fn erase(&mut self, block: u32) {
        if let Some(d) = self.blocks[block as usize].take() {
            self.blocks_held -= 1;
            let kept = self.spare_blocks.len()
                + self.dirty_blocks.len()
                + usize::from(self.readying.is_some());
            if kept < self.keep_blocks() {
                self.dirty_blocks.push(d);
            }
        }
    }

    /// Erased blocks' buffers kept at most.
    fn keep_blocks(&self) -> usize {
        keep_blocks(self.slots_per_block * self.unit_bytes)
    }

    /// The most memory erased blocks' buffers kept for reuse take, blocks of
    /// `slots_per_block` units of `unit_bytes` (besides [`SlotData::held_bytes`]).
    pub fn kept_buffers_bytes_max(slots_per_block: u32, unit_bytes: u32) -> u64 {
        let block_bytes = slots_per_block as usize * unit_bytes as usize;
        (keep_blocks(block_bytes) * block_bytes) as u64
    }

    /// Idle work (a real-time server between events): ready up to about `max_bytes` of
    /// spare block buffers — zero an erased one, or fault in a new one — so the next
    /// blocks' first programs cost no memset and no page fault. True while work is left.
    pub fn ready_spares(&mut self, max_bytes: usize) -> bool {
        let len = self.slots_per_block * self.unit_bytes;
        let (mut d, mut done) = match self.readying.take() {
            Some(r) => r,
            None => match self.dirty_blocks.pop() {
                Some(d) => (d, 0),
                None if self.spare_blocks.len() < KEEP_SPARE_BLOCKS => {
                    (vec![0u8; len].into_boxed_slice(), 0)
                }
                None => return false,
            },
        };
        let end = (done + max_bytes).min(len);
        // Writing zeros faults a new buffer's pages in and zeroes an erased one's.
        d[done..end].fill(0);
        done = end;
        if done < len {
            self.readying = Some((d, done));
        } else {
            self.spare_blocks.push(d);
        }
        self.readying.is_some()
            || !self.dirty_blocks.is_empty()
            || self.spare_blocks.len() < KEEP_SPARE_BLOCKS
    }

    /// Power is cut: the write buffer and the payloads are lost; in every block only the
    /// slots before `durable_slots(block)` keep their bytes.
    pub fn power_cut(&mut self, durable_slots: impl Fn(u32) -> usize) {
        self.staged.clear();
        self.payloads.clear();
        for (b, d) in self.blocks.iter_mut().enumerate() {
            if let Some(bytes) = d.as_mut() {
                let keep = durable_slots(b as u32) * self.unit_bytes;
                if keep == 0 {
                    *d = None;
                    self.blocks_held -= 1;
                } else {
                    bytes[keep..].fill(0);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes follow a unit from the buffer into its slot, through a copy, and go with the
    /// erase; a partial write keeps the rest of the unit.
    #[test]
    fn bytes_follow_the_unit() {
        let mut d = SlotData::new(4, 8, 16);
        d.put_payload(7, 16 + 4, vec![0xAB; 8]); // unit 1, bytes 4..12
        d.put_payload(1, 16, vec![1; 16]);
        d.stage(1, 2, 1, super::super::NONE);
        d.stage(1, 3, 7, super::super::NONE); // merged with version 2's bytes
        let mut want = [1u8; 16];
        want[4..12].fill(0xAB);
        assert_eq!(d.staged_bytes(1, 3), Some(&want[..]));
        assert_eq!(d.staged_bytes(1, 2), None);
        assert!(d.program(1, 2, 9).is_err(), "another version is an error");
        d.program(1, 3, 9).unwrap();
        assert_eq!(d.slot_bytes(9), Some(&want[..]));
        assert_eq!(d.slot_bytes(8), Some(&[0u8; 16][..]), "same block, zeroed");
        assert_eq!(d.slot_bytes(0), None);
        d.copy(9, 17);
        d.erase(1);
        assert_eq!(d.slot_bytes(9), None);
        assert_eq!(d.slot_bytes(17), Some(&want[..]));
        assert_eq!(d.held_bytes(), 8 * 16);
        d.power_cut(|b| if b == 2 { 1 } else { 0 });
        assert_eq!(
            d.slot_bytes(17),
            Some(&[0u8; 16][..]),
            "slot 1 of block 2 was not durable"
        );
        assert_eq!(d.held_bytes(), 8 * 16);
        d.power_cut(|_| 0);
        assert_eq!(d.held_bytes(), 0);
    }

    /// Idle work readies spare blocks: an erased block's buffer comes back zeroed, new
    /// ones are made up to the number kept, in steps of the bytes asked; a first program
    /// takes a ready buffer (its other slots read zero).
    #[test]
    fn spares_are_readied_in_steps() {
        let mut d = SlotData::new(8, 4, 16); // blocks of 64 bytes
        d.put_payload(1, 0, vec![7; 16]);
        d.stage(0, 1, 1, super::super::NONE);
        d.program(0, 1, 1).unwrap(); // block 0, slot 1
        d.erase(0);
        assert_eq!((d.spare_blocks.len(), d.dirty_blocks.len()), (0, 1));
        // The dirty buffer first, 48 bytes then the rest.
        assert!(d.ready_spares(48));
        assert_eq!(d.readying.as_ref().map(|r| r.1), Some(48));
        assert!(d.ready_spares(48));
        assert_eq!((d.spare_blocks.len(), d.dirty_blocks.len()), (1, 0));
        assert!(d.spare_blocks[0].iter().all(|&b| b == 0), "zeroed");
        // Then new ones, up to KEEP_SPARE_BLOCKS.
        let mut calls = 0;
        while d.ready_spares(64) {
            calls += 1;
        }
        assert_eq!(
            calls,
            KEEP_SPARE_BLOCKS - 2,
            "the last call says no work is left"
        );
        assert_eq!(d.spare_blocks.len(), KEEP_SPARE_BLOCKS);
        assert!(!d.ready_spares(64));
        d.put_payload(2, 32, vec![9; 16]);
        d.stage(2, 2, 2, super::super::NONE);
        d.program(2, 2, 5).unwrap(); // block 1, slot 1
        assert_eq!(
            d.spare_blocks.len(),
            KEEP_SPARE_BLOCKS - 1,
            "a ready one was taken"
        );
        assert_eq!(d.slot_bytes(4), Some(&[0u8; 16][..]));
        assert_eq!(d.slot_bytes(5), Some(&[9u8; 16][..]));
    }

    /// Erased buffers are kept past the number readied (a burst of GC erases is reused,
    /// not freed and faulted in again), up to `KEEP_BLOCK_BYTES`.
    #[test]
    fn erased_buffers_are_kept_up_to_the_byte_cap() {
        let per_block = 64 * 16384; // 1 MiB blocks: 32 kept
        let blocks = 40u32;
        let mut d = SlotData::new(blocks, 64, 16384);
        assert_eq!(d.keep_blocks(), 32);
        assert_eq!(SlotData::kept_buffers_bytes_max(64, 16384), 32 << 20);
        for b in 0..blocks {
            let lpn = b;
            d.put_payload(lpn, 0, vec![1; 16384]);
            d.stage(lpn, 1, 1, super::super::NONE);
            d.program(lpn, 1, b * 64).unwrap();
        }
        assert_eq!(d.held_bytes(), blocks as u64 * per_block);
        for b in 0..blocks {
            d.erase(b);
        }
        assert_eq!(
            d.dirty_blocks.len(),
            32,
            "kept past KEEP_SPARE_BLOCKS, to the cap"
        );
        // Readying zeroes kept buffers and makes no new one while any is dirty.
        while d.ready_spares(1 << 20) {}
        assert_eq!((d.spare_blocks.len(), d.dirty_blocks.len()), (32, 0));
        assert!(d.spare_blocks.iter().all(|b| b.iter().all(|&x| x == 0)));
    }
}
