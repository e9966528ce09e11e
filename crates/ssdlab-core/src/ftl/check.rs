//! The full invariant checker (tests, and every N operations in debug builds).

use super::jobs::JobKind;
use super::translation::TRANS_TAG;
use super::trims::{is_record, TRIM_TAG};
use super::Ftl;
use crate::flash::{BlockState, NONE};
use crate::ids::{BlockId, Lpn, PlaneId, SlotId};

impl Ftl {
    /// Check the FTL's internal consistency: map ⇔ out-of-band area, valid counts per
    /// block, plane and region, free pools, write streams, victim indexes, jobs, usable
    /// blocks. Returns the first violation found.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.check_map()?;
        self.check_blocks()?;
        self.check_regions()?;
        self.check_jobs()
    }

    fn check_map(&self) -> Result<(), String> {
        let g = &self.media.geo;
        let mut valid = vec![0u32; g.blocks as usize];
        for (slot, lpn) in self.media.oob.lpn.iter().map(|w| w.get()).enumerate() {
            if !self.media.oob.is_valid(slot) {
                continue;
            }
            if lpn == NONE {
                return Err(format!("slot {slot} is valid but was never written"));
            }
            if is_record(lpn) {
                let id = lpn & !TRIM_TAG;
                let r = self
                    .durable
                    .trims
                    .as_ref()
                    .and_then(|t| t.records.get(id as usize));
                if r.is_none_or(|r| r.slot != SlotId(slot as u32) || r.live == 0) {
                    return Err(format!(
                        "slot {slot} holds trim record {id}, which is {:?}",
                        r.map(|r| (r.slot.0, r.live))
                    ));
                }
            } else if lpn & TRANS_TAG != 0 {
                let t = (lpn & !TRANS_TAG) as usize;
                let first = SlotId(slot as u32 - slot as u32 % g.slots_per_page);
                if self.trans.gtd.get(t) != Some(&first) {
                    return Err(format!(
                        "slot {slot} claims translation page {t}, which the GTD places at {:?}",
                        self.trans.gtd.get(t).map(|s| s.0)
                    ));
                }
            } else if lpn >= self.media.logical_units
                || self.media.table.lookup(Lpn(lpn)) != SlotId(slot as u32)
            {
                return Err(format!(
                    "slot {slot} claims unit {lpn}, which maps to {}",
                    self.media
                        .table
                        .lookup(Lpn(lpn.min(self.media.logical_units - 1)))
                ));
            }
            valid[g.block_of_slot(SlotId(slot as u32)).idx()] += 1;
        }
        for (b, (&counted, &recorded)) in
            valid.iter().zip(&self.media.blocks.valid_units).enumerate()
        {
            if counted != recorded {
                return Err(format!(
                    "block {b}: valid count {recorded} but {counted} valid slots"
                ));
            }
        }
        for lpn in 0..self.media.logical_units {
            let s = self.media.table.lookup(Lpn(lpn));
            if !s.is_none() && self.media.oob.unit(s.idx()) != Some(lpn) {
                return Err(format!(
                    "unit {lpn} maps to slot {s} holding {:?}",
                    self.media.oob.unit(s.idx())
                ));
            }
        }
        self.check_trim_records()?;
        for (t, &first) in self.trans.gtd.iter().enumerate() {
            let tag = TRANS_TAG | t as u32;
            if !first.is_none()
                && (first.0 % g.slots_per_page != 0
                    || (0..g.slots_per_page)
                        .any(|k| self.media.oob.unit((first + k).idx()) != Some(tag)))
            {
                return Err(format!(
                    "translation page {t} is placed at slot {first}, whose page does not hold it"
                ));
            }
        }
        Ok(())
    }

    /// Durable trims: every unit a record keeps unmapped is unmapped, each record's live
    /// count is its units', and a record with any sits valid in its slot.
    fn check_trim_records(&self) -> Result<(), String> {
        let Some(t) = self.durable.trims.as_ref() else {
            return Ok(());
        };
        let mut live = vec![0u32; t.records.len()];
        for (s, e, id) in t.live_ranges() {
            live[id as usize] += e - s;
            if let Some(u) = (s..e).find(|&u| !self.media.table.lookup(Lpn(u)).is_none()) {
                return Err(format!(
                    "unit {u} is mapped but trim record {id} keeps it trimmed"
                ));
            }
        }
        for (id, (r, &n)) in t.records.iter().zip(&live).enumerate() {
            if r.live != n {
                return Err(format!(
                    "trim record {id} counts {} live units, {n} found",
                    r.live
                ));
            }
            let tag = TRIM_TAG | id as u32;
            if n > 0 && (r.slot.is_none() || self.media.oob.unit(r.slot.idx()) != Some(tag)) {
                return Err(format!(
                    "trim record {id} is live but its slot {} does not hold it",
                    r.slot
                ));
            }
        }
        Ok(())
    }

    fn check_blocks(&self) -> Result<(), String> {
        let bt = &self.media.blocks;
        for b in 0..bt.len() {
            let r = &self.media.regions[bt.region[b] as usize];
            let (next, done) = (bt.next_page[b], bt.programmed[b]);
            if done > next || next > r.geo.pages_per_block {
                return Err(format!(
                    "block {b}: {done} pages programmed, {next} issued, {} per block",
                    r.geo.pages_per_block
                ));
            }
            let s = bt.state[b];
            if matches!(s, BlockState::Free | BlockState::Bad | BlockState::Erasing)
                && bt.valid_units[b] != 0
            {
                return Err(format!(
                    "block {b} in state {s:?} holds {} valid units",
                    bt.valid_units[b]
                ));
            }
            let sealed = bt.sealed[b] && done == next;
            if s == BlockState::Full && done != r.geo.pages_per_block && !sealed {
                return Err(format!("block {b} is full with {done} pages programmed"));
            }
            if s == BlockState::Erasing && bt.pins[b] != 0 {
                return Err(format!(
                    "block {b} is being erased with {} reads queued",
                    bt.pins[b]
                ));
            }
        }
        Ok(())
    }

    fn check_regions(&self) -> Result<(), String> {
        let g = &self.media.geo;
        let bt = &self.media.blocks;
        for r in &self.media.regions {
            let name = &r.geo.name;
            for plane in (0..g.planes).map(PlaneId) {
                let ps = self.media.plane_state(r.id(), plane);
                let mut free = 0u32;
                let mut full = 0usize;
                let mut usable = 0u32;
                let mut valid = 0u64;
                for b in r.plane_blocks(plane.0) {
                    let bi = b as usize;
                    if bt.region[bi] != r.id() {
                        return Err(format!(
                            "block {b} of region {name:?} is marked region {}",
                            bt.region[bi]
                        ));
                    }
                    valid += bt.valid_units[bi] as u64;
                    match bt.state[bi] {
                        BlockState::Free => free += 1,
                        BlockState::Full => {
                            full += 1;
                            if !r.victims.holds(plane, BlockId(b), bt.valid_units[bi]) {
                                return Err(format!(
                                    "full block {b} ({} valid) of region {name:?} is missing from its victim index",
                                    bt.valid_units[bi]
                                ));
                            }
                        }
                        _ => {}
                    }
                    if bt.state[bi] != BlockState::Bad {
                        usable += 1;
                    }
                }
                if ps.valid_units != valid {
                    return Err(format!(
                        "region {name:?} plane {plane}: {} valid units recorded, {valid} counted",
                        ps.valid_units
                    ));
                }
                if ps.usable_blocks != usable {
                    return Err(format!("region {name:?} plane {plane}: {} usable blocks recorded, {usable} counted", ps.usable_blocks));
                }
                if r.victims.count(plane) != full {
                    return Err(format!("region {name:?} plane {plane}: victim index holds {} blocks, {full} are full", r.victims.count(plane)));
                }
                let pool = ps.free.blocks();
                if pool.len() as u32 != free {
                    return Err(format!(
                        "region {name:?} plane {plane}: pool holds {} blocks, {free} are free",
                        pool.len()
                    ));
                }
                for BlockId(b) in pool {
                    if bt.state[b as usize] != BlockState::Free
                        || !r.plane_blocks(plane.0).contains(&b)
                    {
                        return Err(format!(
                            "block {b} in the pool of region {name:?} plane {plane} is {:?}",
                            bt.state[b as usize]
                        ));
                    }
                }
                for (s, b) in ps.open.iter() {
                    if b.is_none() {
                        continue;
                    }
                    if bt.state[b.idx()] != BlockState::Open
                        || !r.plane_blocks(plane.0).contains(&b.0)
                        || bt.next_page[b.idx()] >= r.geo.pages_per_block
                    {
                        return Err(format!(
                            "open block {b} of stream {:?} (region {name:?}, plane {plane}) is {:?} with {} pages issued",
                            s,
                            bt.state[b.idx()],
                            bt.next_page[b.idx()]
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn check_jobs(&self) -> Result<(), String> {
        let bt = &self.media.blocks;
        let mut sources = 0usize;
        for &j in self.jobs.live() {
            let job = self.jobs.get(j);
            let s = bt.state[job.src.idx()];
            if !matches!(s, BlockState::Victim | BlockState::Erasing) {
                return Err(format!("job {j} moves block {} in state {s:?}", job.src));
            }
            let reloc = job.relocation();
            if let Some(r) = reloc
                .filter(|r| r.copies.len() > r.copies_in_flight * self.media.geo.slots_per_page)
            {
                return Err(format!(
                    "job {j}: {} units in flight for {} copies",
                    r.copies.len(),
                    r.copies_in_flight
                ));
            }
            sources += 1;
        }
        let victims = bt
            .state
            .iter()
            .filter(|&&s| matches!(s, BlockState::Victim | BlockState::Erasing))
            .count();
        if victims != sources {
            return Err(format!(
                "{victims} blocks are being collected but {sources} jobs run"
            ));
        }
        for ps in &self.media.ps {
            if !ps.gc_job.is_none() && !self.jobs.live().contains(&ps.gc_job) {
                return Err(format!(
                    "region {} plane {} points at ended job {}",
                    ps.region, ps.plane, ps.gc_job
                ));
            }
            // An urgent plane has the reliability job that made it so (it ends with it).
            if ps.urgent_relocation
                && !self.jobs.live().iter().any(|&j| {
                    let job = self.jobs.get(j);
                    job.plane == ps.plane
                        && job.src_region == ps.region
                        && (job.is(JobKind::Reclaim) || job.is(JobKind::Refresh))
                })
            {
                return Err(format!(
                    "region {} plane {} is urgent without a reclaim or refresh job",
                    ps.region, ps.plane
                ));
            }
            // Liveness: a plane below its GC target has its GC job, or a step queued, or
            // found no victim (an invalidation wakes it), or a job whose end wakes it
            // (swarm seed 2007706: a trim-record page took a block, GC never heard of it).
            if ps.gc_job.is_none()
                && ps.needs_gc(self.jobs.host_idle())
                && !ps.starved
                && !ps.woken
                && !self.worn_out()
                && !self
                    .jobs
                    .live()
                    .iter()
                    .any(|&j| self.jobs.get(j).plane == ps.plane)
            {
                return Err(format!(
                    "region {} plane {} needs GC ({} free, {} erasing) but no job runs or will wake it, no step is queued and no victim was missed",
                    ps.region,
                    ps.plane,
                    ps.free.len(),
                    ps.erasing
                ));
            }
        }
        Ok(())
    }
}
