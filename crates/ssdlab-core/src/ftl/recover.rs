//! Power-on recovery after a power cut (`ssdlab serve`): the FTL is rebuilt from what was
//! durably programmed, as a controller does it — scan every durable page's out-of-band
//! area, keep the newest version of each unit (integrity versions are the OOB sequence
//! numbers), rebuild the map and the block state — and the scan's cost.
//!
//! What survives a cut: per block its erase count and whether it is retired (a bad-block
//! table on flash), and the pages whose program had completed (`programmed`: programs of a
//! block complete in page order). What is lost: the DRAM write buffer, programs issued and
//! not completed, erases under way (the recovery erases those blocks again), and all
//! volatile state: jobs, read pins, wear-leveler, placement and journal-detector state,
//! the stripe cursor (they start fresh). Trims survive as far as their records are durable
//! (`trims.rs`, with the hold: a record's range of units, at its version, competes with
//! their copies; without the hold a trimmed unit's last durable version comes back).
//!
//! Choices:
//! * a block with durable pages becomes `Full` (sealed: its remaining pages stay unused
//!   until GC erases it; some controllers resume programming an open block instead) and
//!   enters its region's victim index; a block with none is free; but a plane left without
//!   a free block resumes its sealed block with the most pages left as its GC stream's
//!   open block, after the pages the cut interrupted (GC needs room for its copies);
//! * ties (one version in a GC source and in its completed copy) go to the block closed
//!   later, an open block counting as newest (as a per-block sequence number written on
//!   flash would tell a controller), then to the higher slot;
//! * a block doomed by a failed program is recovered like any other (the failure is
//!   forgotten); an interrupted erase is redone without a failure draw;
//! * the recovery's reads and erases are counted in [`RecoverySummary`] only, not in the
//!   FTL's per-cause NAND counters (which carry over from before the cut);
//! * every plane's background step is queued, and the next driver runs it when it begins
//!   ([`Ftl::run_pending`]): a running device starts GC on a plane when a host page
//!   lands there, but a plane the recovery left at its GC reserve takes no host page, so
//!   without this it never collected again (its share of the writes went to the other
//!   planes until none had a victim, and writes stopped completing).

use super::region::Stream;
use super::translation::TRANS_TAG;
use super::trims::{is_record, Record, TRIM_TAG};
use super::Ftl;
use crate::base::Version;
use crate::config::{Config, Derived};
use crate::error::{Result, SimError};
use crate::flash::{BlockState, OobWord, NONE};
use crate::ids::{BlockId, Lpn, PlaneId, SlotId};
use serde::Serialize;

/// What a power-on recovery did and what it cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RecoverySummary {
    /// NAND page reads: one per durable page (its OOB area read with the page).
    pub pages_scanned: u64,
    /// Erases the cut interrupted, done again.
    pub erases: u64,
    /// Time of the scan: the dies work in parallel, each reading its durable pages one
    /// after another (command overhead + array read in the page's cell mode + the whole
    /// page over the channel) and redoing its erases; the slowest die's sum. Dies sharing
    /// a channel are not serialised on it (a lower bound when the channel is the limit).
    pub time_ns: u64,
    /// Units mapped after the recovery.
    pub units_recovered: u64,
    /// Blocks with some durable pages but not all (open at the cut), now sealed.
    pub blocks_closed_partial: u64,
    /// Blocks open at the cut resumed instead, as the GC stream's open block of a plane
    /// left without a free block (after the pages the cut interrupted).
    pub blocks_resumed: u64,
}

/// Whether a power cut (and the recovery after it) is supported for `cfg`: the
/// mapping must live in DRAM (the translation pages of `dftl*` are not recovered yet) and
/// integrity versions must be on (they are the OOB sequence numbers).
pub fn power_cut_supported(cfg: &Config) -> Result<()> {
    if cfg.ftl.mapping.is_demand() {
        return Err(SimError::config(
            "ftl.mapping",
            "power cuts are supported with `page-map` only: recovering a demand-based \
             mapping's translation pages from flash is not modelled",
        ));
    }
    if !cfg.integrity {
        return Err(SimError::config(
            "integrity",
            "power cuts need integrity = true: its versions are the sequence numbers \
             the recovery orders a unit's copies by",
        ));
    }
    let modes = std::iter::once(cfg.device.cell_mode)
        .chain(cfg.ftl.regions.iter().filter_map(|r| r.cell_mode));
    for m in modes {
        if cfg.device.timing.get(m).partial_programs_per_page > 1 {
            return Err(SimError::config(
                format!("device.timing.{}.partial_programs_per_page", m.name()),
                "power cuts are not modelled with partial-page programs: a power-on scan \
                 takes a block's first programmed pages as durable, and a page's later \
                 partial programs may still have been in flight; set 1",
            ));
        }
    }
    if cfg.device.zns.is_some() || cfg.device.fdp.is_some() {
        return Err(SimError::config(
            if cfg.device.zns.is_some() {
                "device.zns"
            } else {
                "device.fdp"
            },
            "power cuts are not modelled on zoned or FDP devices (zone write pointers and \
             handles are not recovered)",
        ));
    }
    Ok(())
}

impl Ftl {
    /// The FTL of the next power-on after `old` lost power: built fresh for `cfg` (same
    /// seed: same factory bad blocks), with the erase counts, retired blocks, lifetime and
    /// counters of `old`, and the map rebuilt from the OOB of `old`'s durable pages.
    /// `old` is the FTL as the cut left it (the timed phase dropped mid-run).
    pub fn recover(cfg: &Config, d: &Derived, old: Ftl) -> Result<(Ftl, RecoverySummary)> {
        power_cut_supported(cfg)?;
        old.check_internal()?;
        let mut ftl = Ftl::new(cfg, d)?;
        let g = ftl.media.geo;
        if old.media.geo != g || old.media.oob.version.is_empty() {
            return Err(SimError::Internal {
                what: "recovery: the FTL before the cut has another geometry or no versions".into(),
            });
        }
        if old.durable.held.is_some() {
            // Crash consistency set on the device (not by its config) stays on.
            ftl.hold_overwritten_until_durable();
        }
        let spp = g.slots_per_page;
        let nb = g.blocks as usize;
        let mut sum = RecoverySummary::default();
        let mut die_ns = vec![0u64; g.dies as usize];
        let t = &ftl.media.timing;
        // Each durable page read whole (command, tR, transfer), one after another per die.
        let page_read_ns = |cell| t.op_ns(crate::flash::OpKind::Read, cell, g.page_bytes as u64);

        ftl.counters = old.counters;
        ftl.health = old.health.clone();
        ftl.media.program_seq = old.media.program_seq;
        ftl.placer.journal_truth = old.placer.journal_truth;
        ftl.checks.every_ops = old.checks.every_ops;

        ftl.checks.until_next = old.checks.every_ops;
        // Fresh plane states (empty pools, no open blocks, no jobs), the cumulative
        // per-plane counters carried over.
        for (rp, ps) in ftl.media.ps.iter_mut().enumerate() {
            let (r, plane) = (ps.region as usize, ps.plane);
            let mut fresh = ftl.media.regions[r].plane_state(plane, &cfg.ftl.allocation);
            fresh.host_units = old.media.ps[rp].host_units;
            fresh.relocated_units = old.media.ps[rp].relocated_units;
            *ps = fresh;
        }

        // Durable pages per block, and the blocks' states.
        let mut durable = vec![0u32; nb];
        let mut erased = Vec::new();
        for (b, dur) in durable.iter_mut().enumerate() {
            let bt = &mut ftl.media.blocks;
            bt.erase_count[b] = old.media.blocks.erase_count[b];
            let rp = bt.rp[b] as usize;
            match old.media.blocks.state[b] {
                BlockState::Bad => bt.state[b] = BlockState::Bad,
                BlockState::Erasing => {
                    erased.push(BlockId(b as u32));
                    bt.state[b] = BlockState::Free;
                }
                _ => {
                    *dur = old.media.blocks.programmed[b];
                    bt.state[b] = if *dur > 0 {
                        BlockState::Full
                    } else {
                        BlockState::Free
                    };
                }
            }
            let ps = &mut ftl.media.ps[rp];
            if bt.state[b] == BlockState::Bad {
                ps.usable_blocks -= 1;
                continue;
            }
            bt.next_page[b] = *dur;
            bt.programmed[b] = *dur;
            if *dur > 0 {
                // The data keeps its age; the scan read each durable page once more.
                bt.first_program_ns[b] = old.media.blocks.first_program_ns[b];
                bt.reads_since_erase[b] = old.media.blocks.reads_since_erase[b];
                bt.count_reads(BlockId(b as u32), *dur);
                sum.pages_scanned += *dur as u64;
                die_ns[g.die_of_block(BlockId(b as u32)) as usize] +=
                    *dur as u64 * page_read_ns(bt.cell_state(BlockId(b as u32)));
                if *dur < ps.pages_per_block {
                    bt.sealed[b] = true;
                    sum.blocks_closed_partial += 1;
                }
                bt.closed_seq[b] = match old.media.blocks.state[b] {
                    BlockState::Open => old.media.program_seq,
                    _ => old.media.blocks.closed_seq[b],
                };
            }
        }

        // Copy the OOB of every durable slot (stale ones too) and keep each unit's newest
        // version: (version, closing order of its block, slot). Trim records (durable
        // trims) are read too: per record its newest copy, then each unit it covers has
        // the record's version as a candidate; a record winning leaves the unit unmapped.
        let mut best: Vec<(Version, u64, u32)> =
            vec![(0, 0, NONE); ftl.media.logical_units as usize];
        let no_records = Vec::new();
        let old_records = old
            .durable
            .trims
            .as_ref()
            .map_or(&no_records, |t| &t.records);
        let mut records: Vec<Record> = vec![Record::default(); old_records.len()];
        let mut record_best: Vec<Option<(u64, u32)>> = vec![None; old_records.len()];
        for (b, &dur) in durable.iter().enumerate() {
            let age = match old.media.blocks.state[b] {
                BlockState::Open => u64::MAX,
                _ => old.media.blocks.closed_seq[b],
            };
            let first = g.first_slot_of_block(BlockId(b as u32)).0;
            for slot in first..first + dur * spp {
                let s = slot as usize;
                let (lpn, v) = (old.media.oob.lpn[s].get(), old.media.oob.version[s]);
                if v == 0 || lpn == NONE {
                    continue; // padding, or a copy whose unit was rewritten meanwhile
                }
                if is_record(lpn) {
                    let id = (lpn & !TRIM_TAG) as usize;
                    if old_records.get(id).is_none_or(|r| r.version != v) {
                        return Err(SimError::Internal {
                            what: format!(
                                "recovery: slot {slot} holds trim record {id} v{v}, not kept"
                            ),
                        });
                    }
                    ftl.media.oob.lpn[s] = OobWord::new(lpn);
                    ftl.media.oob.version[s] = v;
                    records[id].on_flash += 1;
                    record_best[id] = record_best[id].max(Some((age, slot)));
                    continue;
                }
                if lpn & TRANS_TAG != 0 || lpn >= ftl.media.logical_units {
                    return Err(SimError::Internal {
                        what: format!("recovery: slot {slot} holds unit {lpn:#x}"),
                    });
                }
                ftl.media.oob.lpn[s] = OobWord::new(lpn);
                ftl.media.oob.version[s] = v;
                let e = &mut best[lpn as usize];
                if (v, age, slot) > *e {
                    *e = (v, age, slot);
                }
            }
        }
        for (id, &best_copy) in record_best.iter().enumerate() {
            let Some((age, slot)) = best_copy else {
                continue;
            };
            let r = &old_records[id];
            records[id].version = r.version;
            records[id].ranges.clone_from(&r.ranges);
            for &(lo, hi, v) in &r.ranges {
                for e in &mut best[lo as usize..hi as usize] {
                    if (v, age, slot) > *e {
                        *e = (v, age, slot);
                    }
                }
            }
        }
        let mut expected: Vec<Version> = vec![0; ftl.media.logical_units as usize];
        let mut live: Vec<(u32, u32, u32)> = Vec::new();
        for (lpn, &(v, _, slot)) in best.iter().enumerate() {
            if slot == NONE {
                continue;
            }
            let tag = ftl.media.oob.lpn[slot as usize].get();
            if is_record(tag) {
                let id = tag & !TRIM_TAG;
                records[id as usize].live += 1;
                match live.last_mut() {
                    Some((_, end, i)) if *i == id && *end == lpn as u32 => *end += 1,
                    _ => live.push((lpn as u32, lpn as u32 + 1, id)),
                }
                continue;
            }
            ftl.media.table.update(Lpn(lpn as u32), SlotId(slot));
            ftl.media.oob.store(slot as usize, lpn as u32);
            let b = g.block_of_slot(SlotId(slot)).idx();
            ftl.media.blocks.valid_units[b] += 1;
            ftl.media.ps[ftl.media.blocks.rp[b] as usize].valid_units += 1;
            expected[lpn] = v;
            sum.units_recovered += 1;
        }
        for (id, r) in records.iter_mut().enumerate() {
            let Some((_, slot)) = record_best[id] else {
                continue;
            };
            if r.live == 0 {
                continue;
            }
            r.slot = SlotId(slot);
            ftl.media.oob.store(slot as usize, TRIM_TAG | id as u32);
            let b = g.block_of_slot(SlotId(slot)).idx();
            ftl.media.blocks.valid_units[b] += 1;
            ftl.media.ps[ftl.media.blocks.rp[b] as usize].valid_units += 1;
        }
        if let Some(t) = ftl.durable.trims.as_mut() {
            t.restore(records, live);
        }
        if let (Some(i), Some(o)) = (ftl.integrity.as_mut(), old.integrity.as_ref()) {
            i.restore(expected, o);
        }

        // Interrupted erases, done again (endurance as `erase_done`; no failure draw).
        for &block in &erased {
            let b = block.idx();
            sum.erases += 1;
            let mode = ftl.media.blocks.cell_mode[b];
            let cell = ftl.media.blocks.cell_state(block);
            die_ns[g.die_of_block(block) as usize] +=
                ftl.media.timing.op_ns(crate::flash::OpKind::Erase, cell, 0);
            ftl.media.blocks.erase_count[b] += 1;
            if ftl.media.blocks.erase_count[b] >= ftl.media.timing.endurance_pe_cycles[mode.index()]
            {
                ftl.retire(block, BlockState::Free);
            }
        }
        sum.time_ns = die_ns.into_iter().max().unwrap_or(0);

        ftl.resume_for_gc(&old, &mut sum);

        // Pools and victim indexes.
        for b in 0..g.blocks {
            let bi = b as usize;
            let rp = ftl.media.blocks.rp[bi] as usize;
            match ftl.media.blocks.state[bi] {
                BlockState::Free => {
                    ftl.media.ps[rp]
                        .free
                        .push(BlockId(b), ftl.media.blocks.erase_count[bi]);
                }
                BlockState::Full => {
                    let (r, plane) = (ftl.media.ps[rp].region as usize, ftl.media.ps[rp].plane);
                    ftl.media.regions[r].victims.on_full(
                        plane,
                        BlockId(b),
                        ftl.media.blocks.valid_units[bi],
                    );
                }
                _ => {}
            }
        }
        if let Err(why) = ftl.media.update_capacity() {
            ftl.health.fail(why);
        }
        // The pools were rebuilt at once: every plane's need for GC is checked when the
        // next driver begins (see the module's choices).
        for r in 0..ftl.media.regions.len() as u8 {
            for p in (0..g.planes).map(PlaneId) {
                ftl.jobs.wake(&mut ftl.media, r, p);
            }
        }
        ftl.durable.data = old.durable.data.map(|mut data| {
            data.power_cut(|b| (durable[b as usize] * spp) as usize);
            data
        });
        ftl.check_invariants().map_err(|e| {
            SimError::Integrity(format!("FTL invariant broken after recovery: {e}"))
        })?;
        ftl.check_internal()?;
        Ok((ftl, sum))
    }
}

impl Ftl {
    /// A (region, plane) the cut left without a free block would have no room for GC's
    /// copies (GC had taken its reserve, and the blocks it wrote were sealed): its sealed
    /// block with the most pages left after the last one issued before the cut is resumed
    /// as its GC stream's open block (the pages whose program the cut interrupted stay
    /// empty, never programmed again), and GC starts on its full block with the fewest
    /// valid units, whatever the victim policy (the room left must hold its copies).
    fn resume_for_gc(&mut self, old: &Ftl, sum: &mut RecoverySummary) {
        let mut free = vec![0u32; self.media.ps.len()];
        let mut best = vec![(0u32, BlockId::NONE); self.media.ps.len()];
        for b in 0..self.media.blocks.len() {
            let rp = self.media.blocks.rp[b] as usize;
            match self.media.blocks.state[b] {
                BlockState::Free => free[rp] += 1,
                BlockState::Full if self.media.blocks.sealed[b] => {
                    let left = self.media.ps[rp].pages_per_block - old.media.blocks.next_page[b];
                    if left > best[rp].0 {
                        best[rp] = (left, BlockId(b as u32));
                    }
                }
                _ => {}
            }
        }
        for (rp, &(_, block)) in best.iter().enumerate() {
            if free[rp] > 0 || block.is_none() {
                continue;
            }
            let b = block.idx();
            self.media.blocks.state[b] = BlockState::Open;
            self.media.blocks.sealed[b] = false;
            self.media.blocks.next_page[b] = old.media.blocks.next_page[b];
            self.media.blocks.programmed[b] = old.media.blocks.next_page[b];
            self.media.blocks.lane[b] = 0;
            self.media.ps[rp].open.set(Stream::GC, block);
            sum.blocks_closed_partial -= 1;
            sum.blocks_resumed += 1;
            let victim = (0..self.media.blocks.len())
                .filter(|&v| {
                    self.media.blocks.rp[v] as usize == rp
                        && self.media.blocks.state[v] == BlockState::Full
                })
                .min_by_key(|&v| self.media.blocks.valid_units[v]);
            if let Some(v) = victim {
                let r = self.media.ps[rp].region;
                self.start_gc_on(r, v as u32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TINY_TOML;

    /// Interrupted erases are done again (counted, timed, wear + 1; a block reaching its
    /// endurance is retired, as `erase_done` would); a block retired before the cut stays
    /// retired; both stay out of the pools.
    #[test]
    fn recover_redoes_interrupted_erases_and_keeps_retired_blocks() {
        let mut c = Config::from_toml_str(TINY_TOML, "tiny").unwrap();
        c.integrity = true;
        let d = c.validate().unwrap();
        let mut old = Ftl::new(&c, &d).unwrap();
        let mode = old.media.blocks.cell_mode[0];
        let endurance = old.media.timing.endurance_pe_cycles[mode.index()];
        old.media.blocks.state[1] = BlockState::Erasing;
        old.media.blocks.erase_count[1] = 5;
        old.media.blocks.state[2] = BlockState::Erasing;
        old.media.blocks.erase_count[2] = endurance - 1;
        old.media.blocks.state[3] = BlockState::Bad;
        old.counters.blocks_retired = 1;
        let (ftl, sum) = Ftl::recover(&c, &d, old).unwrap();
        assert_eq!(ftl.media.blocks.state[1], BlockState::Free);
        assert_eq!(ftl.media.blocks.erase_count[1], 6);
        assert_eq!(
            ftl.media.blocks.state[2],
            BlockState::Bad,
            "worn out by the redone erase"
        );
        assert_eq!(ftl.media.blocks.state[3], BlockState::Bad);
        assert_eq!(ftl.counters.blocks_retired, 2);
        assert_eq!(ftl.media.plane_state(0, PlaneId(0)).usable_blocks, 6);
        assert_eq!(ftl.media.free_blocks(0, PlaneId(0)), 6);
        let t = &ftl.media.timing;
        // One die: both erases one after the other (TINY has no command overhead).
        let want = t.erase_ns(mode, 5) + t.erase_ns(mode, endurance - 1);
        assert_eq!((sum.erases, sum.pages_scanned, sum.time_ns), (2, 0, want));
        assert!(ftl.lifetime().first_bad_block.is_some());
    }
}
