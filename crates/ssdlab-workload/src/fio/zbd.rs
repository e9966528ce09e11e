//! fio `zonemode=zbd`: writes at the zones' write pointers, reads below them, zone resets
//! and finishes, after fio's `zbd.c` (`zbd_adjust_block`, `zbd_convert_to_write_zone`,
//! `zbd_find_zone`).
//!
//! The generator is the device's only writer, so it keeps the write pointers itself: **all
//! zones start empty** (a fresh or freshly reset device). The state is shared by every flow
//! of the job file, as fio shares one zone table per device among its jobs. A write moves
//! its zone's write pointer when it is generated (fio: when it is queued); a write that
//! fills its zone takes the zone off the write-zone list at once (fio: at completion).

use crate::{HostOp, HostRequest, ZoneGeometry};
use std::sync::{Arc, Mutex};

/// The zbd part of one job.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ZbdJob {
    /// Zones of the job's region: `min_zone..max_zone`.
    pub min_zone: u32,
    pub max_zone: u32,
    /// Region size after zone alignment (fio's `f->io_size`).
    pub region_bytes: u64,
    /// Smallest block size of reads and writes (fio's `min_bs`).
    pub min_bs: [u64; 2],
    /// `job_max_open_zones` (0 = no per-job limit).
    pub job_max_open: u32,
    /// `zone_reset_threshold` and `zone_reset_frequency` (0 = unset).
    pub reset_threshold: f64,
    pub reset_frequency: f64,
    pub read_beyond_wp: bool,
}

/// fio's per-device zone table (`zoned_block_device_info`).
#[derive(Debug)]
pub(super) struct ZoneTable {
    geo: ZoneGeometry,
    /// Write pointer of each zone (absolute bytes; a finished zone's is its end).
    wp: Vec<u64>,
    /// Bytes written in each zone since its last reset (what reads may read).
    written: Vec<u64>,
    /// In the write-zone list, and by which flow it was added.
    owner: Vec<Option<u32>>,
    /// fio's `write_zones[]`, in the order zones were added.
    write_zones: Vec<u32>,
    /// fio's `max_write_zones`: the `max_open_zones` in force.
    max_write_zones: u32,
    /// Write zones each flow added (fio's `td->num_write_zones`).
    flow_open: Vec<u32>,
    /// Valid bytes below the write pointers of the zone-reset range (fio's
    /// `wp_valid_data_bytes`), counted when a job sets `zone_reset_threshold`.
    vdb: u64,
    vdb_range: Option<(u32, u32)>,
    /// Writes left before the next threshold reset (fio's `write_cnt`).
    write_cnt: u32,
}

pub(super) type SharedZones = Arc<Mutex<ZoneTable>>;

impl ZoneTable {
    pub fn new(geo: ZoneGeometry, max_write_zones: u32, flows: usize) -> ZoneTable {
        let n = geo.zones as usize;
        ZoneTable {
            geo,
            wp: (0..geo.zones).map(|z| geo.zone_start_bytes(z)).collect(),
            written: vec![0; n],
            owner: vec![None; n],
            write_zones: Vec::new(),
            max_write_zones,
            flow_open: vec![0; flows],
            vdb: 0,
            vdb_range: None,
            write_cnt: u32::MAX,
        }
    }

    /// The zones the `zone_reset_threshold` accounting covers (one range for all jobs).
    pub fn set_vdb_range(&mut self, min_zone: u32, max_zone: u32, frequency: f64) {
        self.vdb_range = Some((min_zone, max_zone));
        self.reset_write_cnt(frequency);
    }

    /// `zone_reset_frequency` without a threshold range (fio: resets every 1/f writes).
    pub fn set_write_cnt(&mut self, frequency: f64) {
        self.reset_write_cnt(frequency);
    }

    /// fio's `setup_zbd_zone_mode`: a sequential write position at the capacity end of
    /// a zone whose capacity is below its size moves to the zone's end.
    pub fn skip_capacity_gap(&self, pos: u64) -> u64 {
        let z = self.geo.zone_of(pos);
        if z < self.geo.zones
            && self.geo.zone_capacity_bytes < self.geo.zone_bytes
            && pos >= self.cap_end(z)
        {
            self.start(z) + self.geo.zone_bytes
        } else {
            pos
        }
    }

    fn reset_write_cnt(&mut self, frequency: f64) {
        self.write_cnt = if frequency > 0.0 {
            (1.0 / frequency).min(u32::MAX as f64) as u32
        } else {
            u32::MAX
        };
    }

    fn start(&self, z: u32) -> u64 {
        self.geo.zone_start_bytes(z)
    }

    fn cap_end(&self, z: u32) -> u64 {
        self.start(z) + self.geo.zone_capacity_bytes
    }

    fn remainder(&self, z: u32) -> u64 {
        self.cap_end(z).saturating_sub(self.wp[z as usize])
    }

    /// Readable end of zone `z` (never above the write pointer nor the zone capacity).
    fn data_end(&self, z: u32) -> u64 {
        self.start(z) + self.written[z as usize]
    }

    fn in_vdb_range(&self, z: u32) -> bool {
        self.vdb_range.is_some_and(|(a, b)| a <= z && z < b)
    }

    /// fio's `zbd_write_zone_get`: `z` is (or now becomes) a write zone of `flow`.
    fn write_zone_get(&mut self, z: u32, flow: u32, job_max_open: u32) -> bool {
        if self.owner[z as usize].is_some() {
            return self.remainder(z) != 0;
        }
        if job_max_open > 0 && self.flow_open[flow as usize] >= job_max_open {
            return false;
        }
        if self.write_zones.len() as u32 >= self.max_write_zones {
            return false;
        }
        self.write_zones.push(z);
        self.flow_open[flow as usize] += 1;
        self.owner[z as usize] = Some(flow);
        true
    }

    /// fio's `zbd_write_zone_put`.
    fn write_zone_put(&mut self, z: u32) {
        if let Some(f) = self.owner[z as usize].take() {
            self.write_zones.retain(|&w| w != z);
            self.flow_open[f as usize] -= 1;
        }
    }

    /// Reset zone `z` (fio's `__zbd_reset_zone`): a Zone Reset when it holds data.
    fn reset(&mut self, z: u32, arrival_ns: u64, out: &mut Vec<HostRequest>) {
        if self.wp[z as usize] == self.start(z) {
            return;
        }
        out.push(mgmt(HostOp::ZoneReset, self.start(z), arrival_ns));
        if self.in_vdb_range(z) {
            self.vdb -= self.written[z as usize];
        }
        self.wp[z as usize] = self.start(z);
        self.written[z as usize] = 0;
    }

    /// Finish zone `z` (fio's `zbd_finish_zone`): its write pointer moves to its end.
    fn finish(&mut self, z: u32, arrival_ns: u64, out: &mut Vec<HostRequest>) {
        out.push(mgmt(HostOp::ZoneFinish, self.start(z), arrival_ns));
        self.wp[z as usize] = self.start(z) + self.geo.zone_bytes;
    }

    /// fio's `pick_random_zone_idx`.
    fn pick_random_index(&self, job: &ZbdJob, offset: u64) -> usize {
        let rel = offset - self.start(job.min_zone);
        (rel as u128 * self.write_zones.len() as u128 / job.region_bytes.max(1) as u128) as usize
    }

    /// fio's `zbd_pick_write_zone`: a write zone inside the job's range, starting from a
    /// quasi-random one.
    fn pick_write_zone(&self, job: &ZbdJob, offset: u64) -> Option<u32> {
        let n = self.write_zones.len();
        let mut i = self.pick_random_index(job, offset);
        for _ in 0..n {
            if i >= n {
                i = 0;
            }
            let z = self.write_zones[i];
            if job.min_zone <= z && z < job.max_zone {
                return Some(z);
            }
            i += 1;
        }
        None
    }

    fn next_zone(&self, job: &ZbdJob, z: u32) -> u32 {
        if z + 1 >= job.max_zone {
            job.min_zone
        } else {
            z + 1
        }
    }

    /// fio's `zbd_convert_to_write_zone`: the zone a write aimed at `zb` goes to.
    #[allow(clippy::too_many_arguments)] // fio's own argument list, plus the output
    fn convert_to_write_zone(
        &mut self,
        job: &ZbdJob,
        flow: u32,
        mut zb: u32,
        offset: u64,
        random: bool,
        arrival_ns: u64,
        out: &mut Vec<HostRequest>,
    ) -> Option<u32> {
        let min_bs = job.min_bs[1];
        let rem = self.remainder(zb);
        if rem > 0 && rem < min_bs {
            self.write_zone_put(zb);
            self.finish(zb, arrival_ns, out);
            if zb + 1 >= job.max_zone && !random {
                return None;
            }
            zb = self.next_zone(job, zb);
        }
        if self.write_zone_get(zb, flow, job.job_max_open) {
            return Some(zb);
        }
        let mut zone = match self.write_zones.get(self.pick_random_index(job, offset)) {
            Some(&z) => z,
            None => self.geo.zone_of(offset),
        }
        .clamp(job.min_zone, job.max_zone - 1);
        let mut z = zone;
        let mut examine = false;
        if !self.write_zones.is_empty() {
            loop {
                let new = self.pick_write_zone(job, offset)?;
                if new == zone {
                    break;
                }
                zone = new;
            }
            z = zone;
            examine = true;
        }
        if examine && self.remainder(z) >= min_bs {
            return Some(z);
        }
        // choose_other_zone
        if random {
            if self.write_zone_get(zb, flow, job.job_max_open) {
                return Some(zb);
            }
            z = zb;
        }
        for _ in 0..job.region_bytes / self.geo.zone_bytes {
            z = self.next_zone(job, z);
            if self.owner[z as usize].is_some() {
                continue;
            }
            if self.write_zone_get(z, flow, job.job_max_open) {
                return Some(z);
            }
        }
        let candidates: Vec<u32> = self
            .write_zones
            .iter()
            .copied()
            .filter(|&w| job.min_zone <= w && w < job.max_zone)
            .collect();
        for w in candidates {
            if self.remainder(w) >= min_bs && self.write_zone_get(w, flow, job.job_max_open) {
                return Some(w);
            }
        }
        if random {
            // Every write zone's remainder is smaller than a block: finish one.
            let w = self.pick_write_zone(job, offset)?;
            self.finish(w, arrival_ns, out);
            return Some(w);
        }
        None
    }

    /// A write of `len` bytes aimed at `offset` (fio's `zbd_adjust_block`, `DDIR_WRITE`):
    /// where it lands and its length, zone resets and finishes before it pushed to `out`;
    /// `None` when no zone can take it (fio's `io_u_eof`: the flow ends).
    #[allow(clippy::too_many_arguments)] // fio's own argument list, plus the output
    pub fn write(
        &mut self,
        job: &ZbdJob,
        flow: u32,
        offset: u64,
        len: u64,
        random: bool,
        arrival_ns: u64,
        out: &mut Vec<HostRequest>,
    ) -> Option<(u64, u64)> {
        let min_bs = job.min_bs[1];
        let mut zb = self.geo.zone_of(offset);
        let mut tries = 0;
        loop {
            zb = self.convert_to_write_zone(job, flow, zb, offset, random, arrival_ns, out)?;
            let rem = self.remainder(zb);
            if !(rem > 0 && rem < min_bs) {
                break;
            }
            tries += 1;
            if tries > self.geo.zones {
                return None;
            }
        }
        let mut reset = false;
        if job.reset_frequency > 0.0 {
            let threshold = job.region_bytes as f64 * job.reset_threshold;
            if self.vdb as f64 >= threshold {
                self.write_cnt = self.write_cnt.saturating_sub(1);
                if self.write_cnt == 0 {
                    self.reset_write_cnt(job.reset_frequency);
                    reset = true;
                }
            }
        }
        if reset || self.remainder(zb) < min_bs {
            self.reset(zb, arrival_ns, out);
        }
        let at = self.wp[zb as usize];
        let len = len.min(self.cap_end(zb) - at) / min_bs * min_bs;
        if len == 0 {
            return None;
        }
        self.wp[zb as usize] = at + len;
        self.written[zb as usize] += len;
        if self.in_vdb_range(zb) {
            self.vdb += len;
        }
        if at + len >= self.cap_end(zb) {
            self.write_zone_put(zb);
        }
        Some((at, len))
    }

    /// fio's `zbd_find_zone`: the next zone (sequential) or the nearest zone (random) with
    /// at least `min_bytes` of data.
    fn find_zone(&self, job: &ZbdJob, zb: u32, min_bytes: u64, random: bool) -> Option<u32> {
        let (mut up, mut down) = (zb as i64 + 1, zb as i64 - 1);
        let (lo, hi) = (job.min_zone as i64, job.max_zone as i64);
        while up < hi || down >= lo {
            if up < hi {
                if self.written[up as usize] >= min_bytes {
                    return Some(up as u32);
                }
            } else if !random {
                break;
            }
            if random && down >= lo && self.written[down as usize] >= min_bytes {
                return Some(down as u32);
            }
            up += 1;
            down -= 1;
        }
        None
    }

    /// A read of `len` bytes aimed at `offset` (fio's `zbd_adjust_block`, `DDIR_READ`):
    /// moved and cut to lie below a write pointer; `None` when no zone holds a block of
    /// data (the flow ends).
    pub fn read(&self, job: &ZbdJob, offset: u64, len: u64, random: bool) -> Option<(u64, u64)> {
        if job.read_beyond_wp {
            return Some((offset, len));
        }
        let min_bs = job.min_bs[0];
        let orig = self.geo.zone_of(offset);
        let mut zb = orig;
        let mut offset = offset;
        let mut range = self.written[zb as usize];
        if range < min_bs || (!random && offset + min_bs > self.data_end(zb)) {
            zb = self.find_zone(job, zb, min_bs, random)?;
            range = self.written[zb as usize];
            if !random {
                offset = self.start(zb);
            }
        }
        if range <= len {
            offset = self.start(zb);
        } else if random {
            offset =
                self.start(zb) + ((offset - self.start(orig)) % (range - len)) / min_bs * min_bs;
        }
        let len = len.min(self.data_end(zb) - offset) / min_bs * min_bs;
        Some((offset, len))
    }

    /// A trim (fio: a zone reset of the zone at `offset`; random trims go to the nearest
    /// zone holding data). `Some(None)`: the zone is empty, nothing is sent (fio sends no
    /// command but counts the I/O); `None`: no zone holds data (the flow ends).
    pub fn trim(
        &mut self,
        job: &ZbdJob,
        offset: u64,
        random: bool,
        arrival_ns: u64,
    ) -> Option<Option<HostRequest>> {
        let mut z = self.geo.zone_of(offset);
        if random && self.wp[z as usize] == self.start(z) {
            z = self.find_zone(job, z, 1, true)?;
        }
        let mut out = Vec::new();
        self.reset(z, arrival_ns, &mut out);
        self.write_zone_put(z);
        Some(out.pop())
    }
}

fn mgmt(op: HostOp, offset_bytes: u64, arrival_ns: u64) -> HostRequest {
    HostRequest {
        arrival_ns,
        op,
        offset_bytes,
        ..Default::default()
    }
}
