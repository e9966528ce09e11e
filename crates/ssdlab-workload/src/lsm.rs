//! An LSM-tree key-value store (`[workload] kind = "lsm"`): the block I/O of RocksDB
//! (leveled compaction) on a conventional, a zoned (ZenFS-like) or an FDP device, as
//! Bjørling et al. ran it ("ZNS: Avoiding the Block Interface Tax for Flash-based SSDs",
//! USENIX ATC 2021, §5.2; docs/workloads.md, docs/zns.md). No keys are stored: files carry
//! a key range and an entry count, and merges count duplicates by expectation.
//!
//! * **Puts** of random keys (uniform over `keys`, `key_bytes + value_bytes` each) go to
//!   the memtable and the **WAL**, written `wal_write_bytes` at a time (a file per
//!   memtable, sequential; deleted once its memtable is flushed, its space reused).
//! * A full memtable (`write_buffer_bytes`) becomes immutable and is **flushed** to an L0
//!   file (at most `max_write_buffers` memtables; the writer stalls when all are full).
//! * **Leveled compaction**: L0 compacts into L1 when it holds `l0_compaction_trigger`
//!   files; level `i ≥ 1` when its bytes pass `level_base_bytes · level_multiplier^(i−1)`,
//!   one file at a time (round robin over the key space) with the next level's files it
//!   overlaps (none: a trivial move). Inputs are read sequentially, outputs
//!   (`target_file_bytes` each) written sequentially, the inputs deleted. Writers stall
//!   at `l0_stop_writes_trigger` L0 files. Duplicates: merging `n_u` newer entries over a
//!   range `r_u` with `n_l` older ones over `r_l` keeps `n_l + n_u − n_u · (ov / r_u) ·
//!   (n_l / r_l)` (uniform keys; `ov` the ranges' overlap).
//! * **Gets** (a flow of their own) probe the memtables, then each level's file holding
//!   the key, newest first: the key is there with the file's density (entries / keys in
//!   its range); a level read is one `block_bytes` block (index and bloom filters in
//!   memory), also on a bloom false positive (`bloom_false_positive_percent`); the get
//!   ends at the level holding the key.
//! * **Placement**: a conventional device gets a simple extent allocator (`extent_bytes`
//!   units, next fit), deleted files trimmed (`trim`); a zoned device ZenFS-like zones
//!   — a file goes to the open zone of its lifetime hint (WAL, or its level), a zone is
//!   reset when all its data is dead, and when fewer than `gc_free_zones_percent` of the
//!   zones are empty the full zone with the least live data has its live extents
//!   relocated (read, written to a GC zone) and is reset; an FDP device (`fdp`) the
//!   placement identifier of the file's lifetime class (RocksDB's write-life-time hints:
//!   WAL short, L0–L1 medium, L2 long, deeper extreme → ids 0, 1, 2, 3, capped at the
//!   device's).
//! * Two flows: `lsm-writes` (closed loop, `queue_depth`): WAL writes and, in turns with
//!   them, background I/O (flushes first, then compaction, ZenFS GC before either), trims
//!   and zone resets; `lsm-gets` (`get_queue_depth`, 0 = none) ends with the writes.
//!   Everything a file needs comes from one flow, so zone writes are in order.
//! * **Put rate limit** (`put_rate_limit_bytes_per_s`, db_bench's
//!   `--benchmark_write_rate_limit`, as in its `readwhilewriting` runs): the writer is a
//!   paced flow (`Arrival::Paced`): put `i` of a phase is due at `i · entry bytes / limit`
//!   and its WAL write is held until its last put is due (the flow, in order, waits with
//!   it); background steps carry no time. A limit above what the store sustains changes
//!   nothing; below it, the achieved rate (results.json `workload.lsm.put_rate_bytes_per_s`)
//!   is at most the limit × puts / (puts − 1) (the last put is due at (puts − 1) / rate).
//!
//! Defaults are RocksDB's documented ones (`write_buffer_size` 64 MiB,
//! `max_bytes_for_level_base` 256 MiB, `target_file_size_base` 64 MiB,
//! `max_bytes_for_level_multiplier` 10, `level0_file_num_compaction_trigger` 4,
//! `level0_stop_writes_trigger` 36, `max_write_buffer_number` 2, `num_levels` 7,
//! `block_size` 4 KiB, bloom filter 10 bits/key ≈ 1 % false positives, db_bench's 16-byte
//! keys; RocksDB wiki "RocksDB Tuning Guide" and include/rocksdb/options.h), the sizes
//! divided by `size_divisor` (0 = the power of two that makes the write buffer at most
//! 1/256 of the device's logical space).

use crate::rng::{stream, tag, SimRng};
use crate::stats::{LsmCounts, WorkloadStats};
use crate::{
    Arrival, Flow, HostOp, HostRequest, RequestSource, Workload, WorkloadContext, WorkloadError,
    ZoneGeometry,
};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// RocksDB's `num_levels` default.
pub const NUM_LEVELS: usize = 7;
const NONE: u32 = u32::MAX;
/// Gets in a row answered from memory before the get flow gives up (a store that never
/// reaches the device).
const MAX_MEMORY_GETS: u32 = 1 << 20;

/// `[workload] kind = "lsm"`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LsmConfig {
    /// Distinct keys (0 = as many as fill `db_percent` of the logical space).
    pub keys: u64,
    /// Share of the logical space the keys fill (with `keys = 0`), in percent.
    pub db_percent: f64,
    pub key_bytes: u64,
    pub value_bytes: u64,
    /// Puts before the writes end (0 = no limit: set `duration_ns`).
    pub puts: u64,
    pub duration_ns: u64,
    /// RocksDB's sizes below are divided by this (0 = scaled to the device).
    pub size_divisor: u64,
    /// `write_buffer_size` (before the divisor).
    pub write_buffer_bytes: u64,
    pub max_write_buffers: u32,
    /// `max_bytes_for_level_base` (before the divisor).
    pub level_base_bytes: u64,
    pub level_multiplier: u32,
    /// `target_file_size_base` (before the divisor).
    pub target_file_bytes: u64,
    pub l0_compaction_trigger: u32,
    pub l0_stop_writes_trigger: u32,
    /// Writes stop while a level below L0 holds this many times its target (RocksDB
    /// stops them on its estimate of pending compaction bytes; this stands for it).
    pub stall_score: f64,
    /// Bytes of each WAL write (a multiple of the mapping unit).
    pub wal_write_bytes: u64,
    /// Largest flush, compaction or relocation request (a multiple of the mapping unit).
    pub io_bytes: u64,
    pub block_bytes: u64,
    pub bloom_false_positive_percent: f64,
    /// Conventional devices: the allocation unit (a multiple of the mapping unit).
    pub extent_bytes: u64,
    /// Conventional devices: trim a deleted file's extents.
    pub trim: bool,
    /// Zoned devices: relocate when fewer than this share of the zones are empty.
    pub gc_free_zones_percent: f64,
    /// FDP devices: files carry the placement id of their lifetime class.
    pub fdp: bool,
    pub queue_depth: u32,
    /// Queue depth of the get flow (0 = no gets).
    pub get_queue_depth: u32,
    /// Put rate limit in key + value bytes per second (0 = none), as db_bench's
    /// `--benchmark_write_rate_limit`: put `i` of a phase (from 0) is due at
    /// `i · (key_bytes + value_bytes) / limit` and a WAL write is issued no earlier than
    /// its last put is due (open-loop pacing; the background I/O is not limited).
    pub put_rate_limit_bytes_per_s: u64,
}

impl Default for LsmConfig {
    fn default() -> Self {
        LsmConfig {
            keys: 0,
            db_percent: 50.0,
            key_bytes: 16,
            value_bytes: 1000,
            puts: 1_000_000,
            duration_ns: 0,
            size_divisor: 0,
            write_buffer_bytes: 64 << 20,
            max_write_buffers: 2,
            level_base_bytes: 256 << 20,
            level_multiplier: 10,
            target_file_bytes: 64 << 20,
            l0_compaction_trigger: 4,
            l0_stop_writes_trigger: 36,
            stall_score: 2.0,
            wal_write_bytes: 64 << 10,
            io_bytes: 1 << 20,
            block_bytes: 4096,
            bloom_false_positive_percent: 1.0,
            extent_bytes: 1 << 20,
            trim: true,
            gc_free_zones_percent: 10.0,
            fdp: false,
            queue_depth: 8,
            get_queue_depth: 1,
            put_rate_limit_bytes_per_s: 0,
        }
    }
}

fn bad(key: &str, reason: impl Into<String>) -> WorkloadError {
    WorkloadError::config(key, reason)
}

/// The sizes in use after the divisor, every key checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub divisor: u64,
    pub keys: u64,
    pub entry_bytes: u64,
    pub write_buffer_bytes: u64,
    pub level_base_bytes: u64,
    pub target_file_bytes: u64,
    /// Files are whole granules: the larger of the mapping unit and the block.
    pub granule_bytes: u64,
}

impl LsmConfig {
    /// The sizes on a device, every key checked.
    pub fn sizes(&self, ctx: &WorkloadContext) -> Result<Sizes, WorkloadError> {
        let unit = ctx.unit_bytes.max(1);
        if self.block_bytes == 0
            || !(unit.is_multiple_of(self.block_bytes) || self.block_bytes.is_multiple_of(unit))
        {
            return Err(bad(
                "block_bytes",
                format!(
                    "{}: must divide the mapping unit ({unit} bytes) or be a multiple of it",
                    self.block_bytes
                ),
            ));
        }
        let granule = unit.max(self.block_bytes);
        for (key, v) in [
            ("wal_write_bytes", self.wal_write_bytes),
            ("io_bytes", self.io_bytes),
            ("extent_bytes", self.extent_bytes),
        ] {
            if v == 0 || !v.is_multiple_of(granule) {
                return Err(bad(
                    key,
                    format!("{v}: must be a positive multiple of {granule} bytes (the mapping unit or block)"),
                ));
            }
        }
        if self.key_bytes + self.value_bytes == 0 {
            return Err(bad("value_bytes", "key_bytes + value_bytes must be > 0"));
        }
        if self.level_multiplier < 2 {
            return Err(bad("level_multiplier", "must be at least 2"));
        }
        if self.max_write_buffers < 2 {
            return Err(bad("max_write_buffers", "must be at least 2"));
        }
        if self.l0_compaction_trigger == 0
            || self.l0_stop_writes_trigger <= self.l0_compaction_trigger
        {
            return Err(bad(
                "l0_stop_writes_trigger",
                format!(
                    "{} must be above l0_compaction_trigger ({}, > 0)",
                    self.l0_stop_writes_trigger, self.l0_compaction_trigger
                ),
            ));
        }
        if !(self.stall_score > 1.0 && self.stall_score.is_finite()) {
            return Err(bad("stall_score", "must be above 1"));
        }
        if !(0.0..=100.0).contains(&self.bloom_false_positive_percent) {
            return Err(bad("bloom_false_positive_percent", "must be in 0..=100"));
        }
        if !(self.gc_free_zones_percent > 0.0 && self.gc_free_zones_percent < 100.0) {
            return Err(bad("gc_free_zones_percent", "must be in (0, 100)"));
        }
        if self.queue_depth == 0 {
            return Err(bad("queue_depth", "must be > 0"));
        }
        let entry = self.key_bytes + self.value_bytes;
        if self.put_rate_limit_bytes_per_s > 0 && self.put_rate_limit_bytes_per_s < entry {
            return Err(bad(
                "put_rate_limit_bytes_per_s",
                format!(
                    "{}: 0 (no limit) or at least one entry ({entry} bytes: key_bytes + value_bytes) per second",
                    self.put_rate_limit_bytes_per_s
                ),
            ));
        }
        if self.puts == 0 && self.duration_ns == 0 {
            return Err(bad(
                "puts",
                "set puts or duration_ns (both are 0: the run would never end)",
            ));
        }
        if self.fdp && ctx.placement_ids < 2 {
            return Err(bad(
                "fdp",
                format!("needs a device with FDP and at least 2 placement identifiers ([device.fdp] handles), it has {}", ctx.placement_ids),
            ));
        }
        if self.fdp && ctx.zones.is_some() {
            return Err(bad("fdp", "a zoned device places by zone: leave fdp off"));
        }
        let divisor = if self.size_divisor > 0 {
            self.size_divisor
        } else {
            (self.write_buffer_bytes.saturating_mul(256) / ctx.logical_bytes.max(1))
                .max(1)
                .next_power_of_two()
        };
        let scaled = |v: u64| (v / divisor).div_ceil(granule).max(1) * granule;
        let entry_bytes = self.key_bytes + self.value_bytes;
        let keys = if self.keys > 0 {
            self.keys
        } else {
            if !(self.db_percent > 0.0 && self.db_percent <= 100.0) {
                return Err(bad("db_percent", "must be in (0, 100]"));
            }
            (ctx.logical_bytes as f64 * self.db_percent / 100.0 / entry_bytes as f64) as u64
        };
        if keys == 0 {
            return Err(bad("keys", "the store holds no key"));
        }
        let s = Sizes {
            divisor,
            keys,
            entry_bytes,
            write_buffer_bytes: scaled(self.write_buffer_bytes),
            level_base_bytes: scaled(self.level_base_bytes),
            target_file_bytes: scaled(self.target_file_bytes),
            granule_bytes: granule,
        };
        if s.write_buffer_bytes < entry_bytes {
            return Err(bad(
                "write_buffer_bytes",
                "holds no entry after the divisor",
            ));
        }
        let db = keys as f64 * entry_bytes as f64;
        if db > ctx.logical_bytes as f64 * 0.9 {
            return Err(bad(
                "keys",
                format!(
                    "{keys} keys of {entry_bytes} bytes ({db:.0} bytes) leave the device ({} bytes) no room to compact",
                    ctx.logical_bytes
                ),
            ));
        }
        Ok(s)
    }
}

/// One SST or WAL file: its key range, entries, bytes and where they lie.
#[derive(Clone, Debug, Default)]
struct File {
    live: bool,
    /// Lifetime hint: 0 = WAL, 1 + level.
    hint: u8,
    lo: u64,
    hi: u64,
    entries: u64,
    bytes: u64,
    /// Written bytes, in file order: (device byte, length).
    extents: Vec<(u64, u64)>,
    /// Conventional: allocated, not yet written space at the end of the last extent.
    room: (u64, u64),
}

impl File {
    fn written(&self) -> u64 {
        self.extents.iter().map(|e| e.1).sum()
    }

    /// Device byte of file byte `off` (written).
    fn addr(&self, mut off: u64) -> u64 {
        for &(a, l) in &self.extents {
            if off < l {
                return a + off;
            }
            off -= l;
        }
        self.extents.last().map_or(0, |e| e.0 + e.1)
    }

    /// The contiguous run at file byte `off`, at most `max` bytes.
    fn run(&self, mut off: u64, max: u64) -> (u64, u64) {
        for &(a, l) in &self.extents {
            if off < l {
                return (a + off, (l - off).min(max));
            }
            off -= l;
        }
        (0, 0)
    }
}

/// Where files go.
enum Space {
    /// Conventional / FDP: allocation units, next fit.
    Extents {
        unit: u64,
        used: Vec<bool>,
        cursor: usize,
        free: usize,
    },
    /// ZenFS-like zones.
    Zones {
        g: ZoneGeometry,
        wp: Vec<u64>,
        live: Vec<u64>,
        /// Hint whose open zone it is (u8::MAX: none).
        open_by: Vec<u8>,
        /// Open zone per hint (the last slot: GC's).
        open: Vec<u32>,
        empty: VecDeque<u32>,
    },
}

/// A file being written: flush output or WAL.
#[derive(Clone, Copy, Debug)]
struct Writing {
    file: u32,
    done: u64,
}

#[derive(Debug, Default)]
struct Compaction {
    /// Output level.
    to: usize,
    inputs: Vec<u32>,
    outputs: Vec<u32>,
    read_total: u64,
    read_done: u64,
    write_total: u64,
    write_done: u64,
    /// Input being read and its offset; output being written and its offset.
    rin: usize,
    roff: u64,
    wout: usize,
    woff: u64,
}

#[derive(Debug, Default)]
struct Gc {
    zone: u32,
    /// (file, file offset, length) of the live runs in the zone.
    moves: Vec<(u32, u64, u64)>,
    idx: usize,
    off: u64,
    /// Bytes read and not yet written of the current move.
    pending: u64,
    /// New extents per move: (move index, device byte, length).
    placed: Vec<(usize, u64, u64)>,
}

/// The store's state, shared by its two flows.
struct Lsm {
    c: LsmConfig,
    s: Sizes,
    rng_get: SimRng,
    stats: WorkloadStats,
    counts: LsmCounts,
    space: Space,
    files: Vec<File>,
    free_files: Vec<u32>,
    levels: Vec<Vec<u32>>,
    lbytes: [u64; NUM_LEVELS],
    cursor: [u64; NUM_LEVELS],
    mem_entries: u64,
    mem_bytes: u64,
    wal: u32,
    /// Immutable memtables: (entries, WAL file).
    imm: VecDeque<(u64, u32)>,
    flush: Option<Writing>,
    compaction: Option<Compaction>,
    spare_compaction: Compaction,
    gc: Option<Gc>,
    out: VecDeque<HostRequest>,
    fg_turn: bool,
    puts_left: u64,
    unlimited: bool,
    done: bool,
    placement_ids: u16,
    /// Put rate limit in force (bytes per second, 0 = none) and the puts of the phase
    /// so far (pacing restarts with each phase: `LsmDb::add_puts`).
    put_rate: u64,
    paced_puts: u64,
}

impl Lsm {
    fn new(
        c: &LsmConfig,
        ctx: &WorkloadContext,
        stats: WorkloadStats,
    ) -> Result<Lsm, WorkloadError> {
        let s = c.sizes(ctx)?;
        let space = match ctx.zones {
            Some(g) => {
                if !g.zone_capacity_bytes.is_multiple_of(s.granule_bytes) {
                    return Err(bad(
                        "block_bytes",
                        format!(
                            "the zone capacity ({} bytes) is not a multiple of {} bytes",
                            g.zone_capacity_bytes, s.granule_bytes
                        ),
                    ));
                }
                let hints = hints_for(&g);
                if hints < 2 {
                    return Err(bad(
                        "workload",
                        format!("the zoned device allows {} active zones: the store needs at least 3 (WAL, SST, GC)", g.max_active_zones.min(g.max_open_zones)),
                    ));
                }
                let n = g.zones as usize;
                Space::Zones {
                    g,
                    wp: vec![0; n],
                    live: vec![0; n],
                    open_by: vec![u8::MAX; n],
                    open: vec![NONE; hints + 1],
                    empty: (0..g.zones).collect(),
                }
            }
            None => {
                let n = (ctx.logical_bytes / c.extent_bytes) as usize;
                Space::Extents {
                    unit: c.extent_bytes,
                    used: vec![false; n],
                    cursor: 0,
                    free: n,
                }
            }
        };
        let mut l = Lsm {
            c: c.clone(),
            s,
            rng_get: stream(ctx.seed, tag::LSM),
            stats,
            counts: LsmCounts::default(),
            space,
            files: Vec::new(),
            free_files: Vec::new(),
            levels: vec![Vec::new(); NUM_LEVELS],
            lbytes: [0; NUM_LEVELS],
            cursor: [0; NUM_LEVELS],
            mem_entries: 0,
            mem_bytes: 0,
            wal: NONE,
            imm: VecDeque::new(),
            flush: None,
            compaction: None,
            spare_compaction: Compaction::default(),
            gc: None,
            out: VecDeque::with_capacity(64),
            fg_turn: true,
            puts_left: c.puts,
            unlimited: c.puts == 0,
            done: false,
            placement_ids: ctx.placement_ids,
            put_rate: c.put_rate_limit_bytes_per_s,
            paced_puts: 0,
        };
        l.wal = l.new_file(0, 0, 0, 0, 0);
        Ok(l)
    }

    fn new_file(&mut self, hint: u8, lo: u64, hi: u64, entries: u64, bytes: u64) -> u32 {
        let id = match self.free_files.pop() {
            Some(id) => id,
            None => {
                self.files.push(File::default());
                (self.files.len() - 1) as u32
            }
        };
        let f = &mut self.files[id as usize];
        f.live = true;
        f.hint = hint;
        f.lo = lo;
        f.hi = hi;
        f.entries = entries;
        f.bytes = bytes;
        f.extents.clear();
        f.room = (0, 0);
        id
    }

    fn file_bytes(&self, entries: u64) -> u64 {
        (entries * self.s.entry_bytes)
            .div_ceil(self.s.granule_bytes)
            .max(1)
            * self.s.granule_bytes
    }

    fn level_target(&self, level: usize) -> u64 {
        let mut t = self.s.level_base_bytes;
        for _ in 1..level {
            t = t.saturating_mul(self.c.level_multiplier as u64);
        }
        t
    }

    fn level_bytes(&self, level: usize) -> u64 {
        self.lbytes[level]
    }

    /// The levels changed: their byte totals again.
    fn levels_changed(&mut self) {
        for (l, files) in self.levels.iter().enumerate() {
            self.lbytes[l] = files.iter().map(|&f| self.files[f as usize].bytes).sum();
        }
    }

    /// The highest score of the levels below L0 (bytes / target; the last level none).
    fn max_level_score(&self) -> f64 {
        (1..NUM_LEVELS - 1)
            .map(|l| self.lbytes[l] as f64 / self.level_target(l) as f64)
            .fold(0.0, f64::max)
    }

    fn placement_id(&self, hint: u8) -> u16 {
        if !self.c.fdp {
            return 0;
        }
        // RocksDB's write-life-time hints: WAL short, L0–L1 medium, L2 long, deeper extreme.
        let class = match hint {
            0 => 0,
            1 | 2 => 1,
            3 => 2,
            _ => 3,
        };
        class.min(self.placement_ids.saturating_sub(1))
    }

    fn push(&mut self, op: HostOp, offset_bytes: u64, size_bytes: u64, placement_id: u16) {
        self.out.push_back(HostRequest {
            op,
            offset_bytes,
            size_bytes,
            placement_id,
            ..HostRequest::default()
        });
    }

    /// Append `n` bytes to file `id`: space allocated, extents recorded, write requests
    /// queued (one per contiguous run in one zone or extent). `gc`: into GC's zone.
    fn append(&mut self, id: u32, mut n: u64, gc: bool) -> Result<(), WorkloadError> {
        let hint = self.files[id as usize].hint;
        let pid = self.placement_id(hint);
        while n > 0 {
            let (addr, len) = self.allocate(id, hint, n, gc)?;
            // Zones: an extent never crosses a zone's end.
            let joins = match &self.space {
                Space::Zones { g, .. } => !addr.is_multiple_of(g.zone_bytes),
                Space::Extents { .. } => true,
            };
            let f = &mut self.files[id as usize];
            match f.extents.last_mut() {
                Some(e) if joins && e.0 + e.1 == addr => e.1 += len,
                _ => f.extents.push((addr, len)),
            }
            self.push(HostOp::Write, addr, len, pid);
            n -= len;
        }
        Ok(())
    }

    /// Space for up to `n` bytes of file `id`.
    fn allocate(
        &mut self,
        id: u32,
        hint: u8,
        n: u64,
        gc: bool,
    ) -> Result<(u64, u64), WorkloadError> {
        match &mut self.space {
            Space::Extents {
                unit,
                used,
                cursor,
                free,
            } => {
                let f = &mut self.files[id as usize];
                if f.room.1 == 0 {
                    if *free == 0 {
                        return Err(WorkloadError::config(
                            "keys",
                            "the store filled the device (no free extent): fewer keys or a larger device",
                        ));
                    }
                    // Next fit: the unit after the file's last one when free, else the
                    // next free unit from the cursor.
                    let want = f
                        .extents
                        .last()
                        .map(|e| ((e.0 + e.1) / *unit) as usize)
                        .filter(|&u| u < used.len() && !used[u]);
                    let u = match want {
                        Some(u) => u,
                        None => {
                            let mut u = *cursor;
                            while used[u] {
                                u = (u + 1) % used.len();
                            }
                            u
                        }
                    };
                    used[u] = true;
                    *free -= 1;
                    *cursor = (u + 1) % used.len();
                    f.room = (u as u64 * *unit, *unit);
                }
                let len = n.min(f.room.1);
                let addr = f.room.0;
                f.room = (addr + len, f.room.1 - len);
                Ok((addr, len))
            }
            Space::Zones {
                g,
                wp,
                live,
                open_by,
                open,
                empty,
            } => {
                let slot = if gc {
                    open.len() - 1
                } else {
                    (hint as usize).min(open.len() - 2)
                };
                if open[slot] == NONE {
                    let Some(z) = empty.pop_front() else {
                        return Err(WorkloadError::config(
                            "keys",
                            "the store filled the zoned device (no empty zone, nothing to relocate): fewer keys or a larger device",
                        ));
                    };
                    open[slot] = z;
                    open_by[z as usize] = slot as u8;
                }
                let z = open[slot] as usize;
                let len = n.min(g.zone_capacity_bytes - wp[z]);
                let addr = g.zone_start_bytes(z as u32) + wp[z];
                wp[z] += len;
                live[z] += len;
                if wp[z] == g.zone_capacity_bytes {
                    open[slot] = NONE;
                    open_by[z] = u8::MAX;
                }
                Ok((addr, len))
            }
        }
    }

    /// The zone of device byte `a` loses `len` live bytes; reset it when it is full and dead.
    fn zone_release(&mut self, a: u64, len: u64) {
        let Space::Zones {
            g,
            wp,
            live,
            open_by,
            empty,
            ..
        } = &mut self.space
        else {
            return;
        };
        let z = g.zone_of(a) as usize;
        live[z] -= len;
        if live[z] == 0 && wp[z] == g.zone_capacity_bytes && open_by[z] == u8::MAX {
            wp[z] = 0;
            empty.push_back(z as u32);
            let start = g.zone_start_bytes(z as u32);
            self.counts.zone_resets += 1;
            self.push(HostOp::ZoneReset, start, 0, 0);
        }
    }

    /// File `id` is deleted: its space freed (trimmed, or its zones' live bytes dropped).
    fn delete(&mut self, id: u32) {
        let mut extents = std::mem::take(&mut self.files[id as usize].extents);
        self.files[id as usize].live = false;
        self.counts.files_deleted += 1;
        match &mut self.space {
            Space::Extents {
                unit, used, free, ..
            } => {
                let unit = *unit;
                // Whole allocation units, contiguous runs trimmed as one.
                let mut run: Option<(u64, u64)> = None;
                let mut trims = 0usize;
                for &(a, l) in &extents {
                    let (u0, u1) = (a / unit, (a + l).div_ceil(unit));
                    for u in u0..u1 {
                        if used[u as usize] {
                            used[u as usize] = false;
                            *free += 1;
                            match &mut run {
                                Some((s, e)) if *e == u * unit => *e += unit,
                                _ => {
                                    if let Some((s, e)) = run.take() {
                                        self.out.push_back(trim(s, e - s));
                                        trims += 1;
                                    }
                                    run = Some((u * unit, (u + 1) * unit));
                                }
                            }
                        }
                    }
                }
                if let Some((s, e)) = run {
                    self.out.push_back(trim(s, e - s));
                    trims += 1;
                }
                if !self.c.trim {
                    for _ in 0..trims {
                        self.out.pop_back();
                    }
                } else {
                    let n = self.out.len();
                    for r in self.out.range(n - trims..) {
                        self.counts.trim_bytes += r.size_bytes;
                    }
                }
            }
            Space::Zones { .. } => {
                for &(a, l) in &extents {
                    self.zone_release(a, l);
                }
            }
        }
        extents.clear();
        self.files[id as usize].extents = extents;
        self.free_files.push(id);
    }

    fn stalled(&self) -> bool {
        self.mem_bytes >= self.s.write_buffer_bytes
            || self.levels[0].len() >= self.c.l0_stop_writes_trigger as usize
            || self.max_level_score() >= self.c.stall_score
    }

    /// Start what is due: a memtable switch, a flush, a compaction, zone GC.
    fn schedule(&mut self) {
        if self.mem_bytes >= self.s.write_buffer_bytes
            && self.imm.len() < self.c.max_write_buffers as usize - 1
        {
            self.imm.push_back((self.mem_entries, self.wal));
            self.mem_entries = 0;
            self.mem_bytes = 0;
            self.wal = self.new_file(0, 0, 0, 0, 0);
        }
        if self.flush.is_none() {
            if let Some(&(entries, _)) = self.imm.front() {
                let bytes = self.file_bytes(entries);
                let file = self.new_file(1, 0, self.s.keys, entries, bytes);
                self.flush = Some(Writing { file, done: 0 });
            }
        }
        while self.compaction.is_none() && self.pick_compaction() {}
        if self.gc.is_none() {
            self.pick_gc();
        }
    }

    /// Pick the level with the highest score ≥ 1 (L0: files / trigger; others: bytes /
    /// target; the last level none). A trivial move is done at once (true: pick again).
    fn pick_compaction(&mut self) -> bool {
        let mut best = (1.0f64, usize::MAX);
        let l0 = self.levels[0].len() as f64 / self.c.l0_compaction_trigger as f64;
        if l0 >= best.0 {
            best = (l0, 0);
        }
        for level in 1..NUM_LEVELS - 1 {
            let score = self.level_bytes(level) as f64 / self.level_target(level) as f64;
            if score > best.0 || (score >= 1.0 && best.1 == usize::MAX) {
                best = (score, level);
            }
        }
        let level = best.1;
        if level == usize::MAX {
            return false;
        }
        let mut c = std::mem::take(&mut self.spare_compaction);
        c.inputs.clear();
        c.outputs.clear();
        c.to = level + 1;
        // Upper inputs: all of L0 (its files span the key space), or one file round robin.
        let (lo, hi) = if level == 0 {
            c.inputs.extend_from_slice(&self.levels[0]);
            (0, self.s.keys)
        } else {
            let files = &self.levels[level];
            let cur = self.cursor[level];
            let i = files
                .iter()
                .position(|&f| self.files[f as usize].lo >= cur)
                .unwrap_or(0);
            let f = files[i];
            c.inputs.push(f);
            let fl = &self.files[f as usize];
            self.cursor[level] = if fl.hi >= self.s.keys { 0 } else { fl.hi };
            (fl.lo, fl.hi)
        };
        let upper = c.inputs.len();
        for &f in &self.levels[level + 1] {
            let x = &self.files[f as usize];
            if x.lo < hi && lo < x.hi {
                c.inputs.push(f);
            }
        }
        if level > 0 && upper == c.inputs.len() {
            // Trivial move: no overlap below.
            let f = c.inputs[0];
            self.levels[level].retain(|&x| x != f);
            self.files[f as usize].hint = (level + 2) as u8;
            self.insert_sorted(level + 1, f);
            self.counts.trivial_moves += 1;
            self.levels_changed();
            self.spare_compaction = c;
            return true;
        }
        // Entries after the merge: newer over older, duplicates by expectation.
        let k = self.s.keys as f64;
        let mut n_u = 0f64;
        for &f in &c.inputs[..upper] {
            let e = self.files[f as usize].entries as f64;
            // L0 files (oldest first) each span the key space.
            n_u = n_u + e - if level == 0 { n_u * e / k } else { 0.0 };
        }
        let (mut n_l, mut llo, mut lhi) = (0f64, u64::MAX, 0u64);
        for &f in &c.inputs[upper..] {
            let x = &self.files[f as usize];
            n_l += x.entries as f64;
            llo = llo.min(x.lo);
            lhi = lhi.max(x.hi);
        }
        let (olo, ohi) = if upper == c.inputs.len() {
            (lo, hi)
        } else {
            (lo.min(llo), hi.max(lhi))
        };
        let n = if n_l > 0.0 {
            let r_u = (hi - lo).max(1) as f64;
            let r_l = (lhi - llo).max(1) as f64;
            let ov = (hi.min(lhi).saturating_sub(lo.max(llo))) as f64;
            n_l + n_u - n_u * (ov / r_u) * (n_l / r_l)
        } else {
            n_u
        };
        let n = (n.round() as u64).max(1);
        let nfiles = (n * self.s.entry_bytes)
            .div_ceil(self.s.target_file_bytes)
            .max(1);
        let hint = (c.to + 1) as u8;
        for i in 0..nfiles {
            let entries = n / nfiles + u64::from(i < n % nfiles);
            let span = (ohi - olo) as u128;
            let flo = olo + (span * i as u128 / nfiles as u128) as u64;
            let fhi = olo + (span * (i + 1) as u128 / nfiles as u128) as u64;
            let bytes = self.file_bytes(entries);
            let id = self.new_file(hint, flo, fhi, entries, bytes);
            c.outputs.push(id);
        }
        c.read_total = c
            .inputs
            .iter()
            .map(|&f| self.files[f as usize].written())
            .sum();
        c.write_total = c
            .outputs
            .iter()
            .map(|&f| self.files[f as usize].bytes)
            .sum();
        c.read_done = 0;
        c.write_done = 0;
        c.rin = 0;
        c.roff = 0;
        c.wout = 0;
        c.woff = 0;
        self.compaction = Some(c);
        true
    }

    fn insert_sorted(&mut self, level: usize, f: u32) {
        let lo = self.files[f as usize].lo;
        let files = &self.files;
        let at = self.levels[level].partition_point(|&x| files[x as usize].lo < lo);
        self.levels[level].insert(at, f);
    }

    /// Zoned: start GC when fewer than the threshold of zones are empty and a full zone
    /// holds dead data (the one with the least live data).
    fn pick_gc(&mut self) {
        let Space::Zones {
            g,
            wp,
            live,
            open_by,
            empty,
            ..
        } = &self.space
        else {
            return;
        };
        if (empty.len() as f64) >= g.zones as f64 * self.c.gc_free_zones_percent / 100.0 {
            return;
        }
        let cap = g.zone_capacity_bytes;
        let mut best = (cap, NONE);
        for z in 0..g.zones as usize {
            if wp[z] == cap && open_by[z] == u8::MAX && live[z] > 0 && live[z] < best.0 {
                best = (live[z], z as u32);
            }
        }
        if best.1 == NONE {
            return;
        }
        let (start, end) = (g.zone_start_bytes(best.1), g.zone_start_bytes(best.1) + cap);
        let mut gc = Gc {
            zone: best.1,
            ..Gc::default()
        };
        for (id, f) in self.files.iter().enumerate() {
            if !f.live {
                continue;
            }
            let mut off = 0;
            for &(a, l) in &f.extents {
                if a >= start && a < end {
                    gc.moves.push((id as u32, off, l));
                }
                off += l;
            }
        }
        self.counts.gc_zones += 1;
        self.gc = Some(gc);
    }

    /// One GC step: a read of a live run, then its write into GC's zone; at the end the
    /// files point at their new extents and the zone is reset.
    fn gc_step(&mut self) -> Result<(), WorkloadError> {
        let Some(mut gc) = self.gc.take() else {
            return Ok(());
        };
        if gc.pending > 0 {
            // Write what was read: into GC's open zone (possibly split).
            let (id, _, _) = gc.moves[gc.idx];
            let n = gc.pending;
            let mut left = n;
            while left > 0 {
                let (addr, len) = self.allocate(id, 0, left, true)?;
                self.push(HostOp::Write, addr, len, 0);
                gc.placed.push((gc.idx, addr, len));
                left -= len;
            }
            self.counts.gc_write_bytes += n;
            gc.pending = 0;
            gc.off += n;
            if gc.off == gc.moves[gc.idx].2 {
                gc.idx += 1;
                gc.off = 0;
            }
            self.gc = Some(gc);
            return Ok(());
        }
        if gc.idx < gc.moves.len() {
            let (id, foff, len) = gc.moves[gc.idx];
            let f = &self.files[id as usize];
            let (addr, n) = f.run(foff + gc.off, (len - gc.off).min(self.c.io_bytes));
            self.push(HostOp::Read, addr, n, 0);
            self.counts.gc_read_bytes += n;
            gc.pending = n;
            self.gc = Some(gc);
            return Ok(());
        }
        // Done: rebuild the moved files' extents (files deleted meanwhile release the
        // new copies), then the zone has no live data: reset.
        let g = match &self.space {
            Space::Zones { g, .. } => *g,
            Space::Extents { .. } => unreachable!("GC runs on zones only"),
        };
        let (zs, ze) = (
            g.zone_start_bytes(gc.zone),
            g.zone_start_bytes(gc.zone) + g.zone_capacity_bytes,
        );
        let mut p = 0;
        let mut m = 0;
        while m < gc.moves.len() {
            let id = gc.moves[m].0;
            // All moves of this file (consecutive).
            let mut m_end = m;
            while m_end < gc.moves.len() && gc.moves[m_end].0 == id {
                m_end += 1;
            }
            let p_end = p + gc.placed[p..].iter().take_while(|x| x.0 < m_end).count();
            let alive = self.files[id as usize].live;
            if alive {
                let mut ext = std::mem::take(&mut self.files[id as usize].extents);
                // The new pieces where the old extents in the zone were, in file order.
                let mut out = Vec::with_capacity(ext.len() + p_end - p);
                let mut moved = 0;
                let mut pi = p;
                for &(a, l) in &ext {
                    if a >= zs && a < ze {
                        moved += l;
                        let mut need = l;
                        while need > 0 && pi < p_end {
                            let (_, na, nl) = gc.placed[pi];
                            out.push((na, nl));
                            need -= nl.min(need);
                            pi += 1;
                        }
                    } else {
                        out.push((a, l));
                    }
                }
                ext.clear();
                self.files[id as usize].extents = out;
                if let Space::Zones { live, .. } = &mut self.space {
                    live[gc.zone as usize] -= moved;
                }
            } else {
                for &(_, a, l) in &gc.placed[p..p_end] {
                    self.zone_release(a, l);
                }
            }
            m = m_end;
            p = p_end;
        }
        // The zone is full and holds no live data: reset it.
        self.zone_release(zs, 0);
        Ok(())
    }

    /// One flush step: the next chunk of the L0 file; at its end the file joins L0 and
    /// its memtable's WAL is deleted.
    fn flush_step(&mut self) -> Result<(), WorkloadError> {
        let Some(mut w) = self.flush else {
            return Ok(());
        };
        let bytes = self.files[w.file as usize].bytes;
        let n = (bytes - w.done).min(self.c.io_bytes);
        self.append(w.file, n, false)?;
        self.counts.flush_write_bytes += n;
        w.done += n;
        if w.done == bytes {
            self.flush = None;
            self.levels[0].push(w.file);
            self.levels_changed();
            self.counts.flushes += 1;
            if let Some((_, wal)) = self.imm.pop_front() {
                self.delete(wal);
            }
        } else {
            self.flush = Some(w);
        }
        Ok(())
    }

    /// One compaction step: a read of the inputs or a write of the outputs, in
    /// proportion; at the end the outputs replace the inputs.
    fn compaction_step(&mut self) -> Result<(), WorkloadError> {
        let Some(mut c) = self.compaction.take() else {
            return Ok(());
        };
        let write = c.read_done == c.read_total
            || (c.write_done as u128 * c.read_total as u128)
                < (c.read_done as u128 * c.write_total as u128);
        if write && c.write_done < c.write_total {
            let id = c.outputs[c.wout];
            let bytes = self.files[id as usize].bytes;
            let n = (bytes - c.woff).min(self.c.io_bytes);
            self.append(id, n, false)?;
            self.counts.compaction_write_bytes += n;
            c.write_done += n;
            c.woff += n;
            if c.woff == bytes {
                c.wout += 1;
                c.woff = 0;
            }
        } else if c.read_done < c.read_total {
            // Skip inputs with nothing written (none in practice).
            while self.files[c.inputs[c.rin] as usize].written() == c.roff {
                c.rin += 1;
                c.roff = 0;
            }
            let f = &self.files[c.inputs[c.rin] as usize];
            let (addr, n) = f.run(c.roff, self.c.io_bytes);
            self.push(HostOp::Read, addr, n, 0);
            self.counts.compaction_read_bytes += n;
            c.read_done += n;
            c.roff += n;
        }
        if c.read_done == c.read_total && c.write_done == c.write_total {
            // Install: inputs out of their levels and deleted, outputs in.
            let from = c.to - 1;
            for i in 0..c.inputs.len() {
                let f = c.inputs[i];
                self.levels[from].retain(|&x| x != f);
                self.levels[c.to].retain(|&x| x != f);
                self.delete(f);
            }
            for i in 0..c.outputs.len() {
                self.insert_sorted(c.to, c.outputs[i]);
            }
            self.counts.compactions += 1;
            self.levels_changed();
            self.spare_compaction = c;
        } else {
            self.compaction = Some(c);
        }
        Ok(())
    }

    /// One WAL write of the puts it carries.
    fn put_step(&mut self) -> Result<(), WorkloadError> {
        let per = (self.c.wal_write_bytes / self.s.entry_bytes).max(1);
        let n = if self.unlimited {
            per
        } else {
            per.min(self.puts_left)
        };
        // A put's key decides nothing here (the memtable counts entries; merges count
        // duplicates by expectation): none is drawn.
        let bytes = (n * self.s.entry_bytes).div_ceil(self.s.granule_bytes) * self.s.granule_bytes;
        let wal = self.wal;
        let queued = self.out.len();
        self.append(wal, bytes, false)?;
        if self.put_rate > 0 {
            // Due when its last put is: the WAL write's requests wait until then.
            let due = self.put_due_ns(self.paced_puts + n - 1);
            for r in self.out.range_mut(queued..) {
                r.arrival_ns = due;
            }
        }
        self.paced_puts += n;
        self.files[wal as usize].bytes += bytes;
        self.counts.wal_write_bytes += bytes;
        self.counts.puts += n;
        self.counts.user_bytes += n * self.s.entry_bytes;
        if !self.unlimited {
            self.puts_left -= n;
        }
        self.mem_entries += n;
        self.mem_bytes += n * self.s.entry_bytes;
        Ok(())
    }

    /// When put `i` of the phase (from 0) is due under the rate limit.
    fn put_due_ns(&self, i: u64) -> u64 {
        (i as u128 * self.s.entry_bytes as u128 * 1_000_000_000 / self.put_rate.max(1) as u128)
            .min(u64::MAX as u128) as u64
    }

    fn publish(&mut self) {
        if self.counts != LsmCounts::default() {
            self.counts.put_rate_limit_bytes_per_s = self.put_rate;
            self.stats.add_lsm(&self.counts);
            self.counts = LsmCounts::default();
        }
    }

    /// The writer's next request.
    fn next_write(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        let r = self.next_write_inner();
        self.publish();
        r
    }

    fn next_write_inner(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        loop {
            if let Some(r) = self.out.pop_front() {
                return Ok(Some(r));
            }
            // A paced run with a duration: puts due past it are not made.
            let past_end = self.put_rate > 0
                && self.c.duration_ns > 0
                && self.put_due_ns(self.paced_puts) >= self.c.duration_ns;
            let more_puts = (self.unlimited || self.puts_left > 0) && !past_end;
            if !more_puts {
                self.done = true;
                return Ok(None);
            }
            self.schedule();
            if self.gc.is_some() {
                self.gc_step()?;
                continue;
            }
            let bg = self.flush.is_some() || self.compaction.is_some();
            let can_put = !self.stalled();
            if can_put && (self.fg_turn || !bg) {
                self.put_step()?;
                self.fg_turn = false;
            } else if bg {
                if self.flush.is_some() {
                    self.flush_step()?;
                } else {
                    self.compaction_step()?;
                }
                self.fg_turn = true;
            } else {
                return Err(WorkloadError::config(
                    "workload",
                    "the store stalled with no background work (an internal error)",
                ));
            }
        }
    }

    /// The get flow's next block read.
    fn next_get(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        let r = self.next_get_inner();
        self.publish();
        r
    }

    fn next_get_inner(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        let k = self.s.keys;
        let fp = self.c.bloom_false_positive_percent / 100.0;
        for _ in 0..MAX_MEMORY_GETS {
            if self.done {
                return Ok(None);
            }
            self.counts.gets += 1;
            if self.levels.iter().all(Vec::is_empty) {
                // A cold store has no file to read yet: the get reads the WAL's last
                // block (its cost; the store serves it from the memtable).
                let w = &self.files[self.wal as usize];
                let end = w.written();
                let addr = if end >= self.c.block_bytes {
                    w.addr(end - self.c.block_bytes)
                } else {
                    0
                };
                self.counts.get_reads += 1;
                self.counts.get_read_bytes += self.c.block_bytes;
                return Ok(Some(HostRequest {
                    op: HostOp::Read,
                    offset_bytes: addr,
                    size_bytes: self.c.block_bytes,
                    ..HostRequest::default()
                }));
            }
            let key = self.rng_get.gen_range(0..k);
            let mem: u64 = self.mem_entries + self.imm.iter().map(|x| x.0).sum::<u64>();
            if self.rng_get.gen::<f64>() < mem as f64 / k as f64 {
                self.counts.get_memory_hits += 1;
                continue;
            }
            // Newest first: L0 newest to oldest, then the levels.
            let mut read = NONE;
            let l0 = self.levels[0].len();
            let probe = (0..l0)
                .rev()
                .map(|i| self.levels[0][i])
                .chain((1..NUM_LEVELS).filter_map(|lv| {
                    let files = &self.levels[lv];
                    let i = files.partition_point(|&f| self.files[f as usize].hi <= key);
                    files
                        .get(i)
                        .copied()
                        .filter(|&f| self.files[f as usize].lo <= key)
                }));
            for f in probe {
                let x = &self.files[f as usize];
                let density = x.entries as f64 / (x.hi - x.lo).max(1) as f64;
                let u: f64 = self.rng_get.gen();
                if u < density {
                    read = f;
                    break;
                }
                if self.rng_get.gen::<f64>() < fp && read == NONE {
                    // A false positive: its block is the get's read unless a level
                    // holds the key (one request per get).
                    read = f;
                }
            }
            if read == NONE {
                self.counts.get_memory_hits += 1;
                continue;
            }
            let x = &self.files[read as usize];
            let span = (x.hi - x.lo).max(1) as u128;
            let blocks = (x.written() / self.c.block_bytes).max(1) as u128;
            let b = ((key.saturating_sub(x.lo)) as u128 * blocks / span).min(blocks - 1) as u64;
            let addr = x.addr(b * self.c.block_bytes);
            self.counts.get_reads += 1;
            self.counts.get_read_bytes += self.c.block_bytes;
            return Ok(Some(HostRequest {
                op: HostOp::Read,
                offset_bytes: addr,
                size_bytes: self.c.block_bytes,
                ..HostRequest::default()
            }));
        }
        Err(WorkloadError::config(
            "get_queue_depth",
            format!("{MAX_MEMORY_GETS} gets in a row found nothing on the device"),
        ))
    }
}

fn trim(offset_bytes: u64, size_bytes: u64) -> HostRequest {
    HostRequest {
        op: HostOp::Trim,
        offset_bytes,
        size_bytes,
        ..HostRequest::default()
    }
}

/// Lifetime hints with a zone of their own (WAL + levels), one active zone left for GC.
fn hints_for(g: &ZoneGeometry) -> usize {
    let active = g.max_active_zones.min(g.max_open_zones) as usize;
    (1 + NUM_LEVELS).min(active.saturating_sub(1))
}

/// The store, shared by its flows and by an experiment's phases.
#[derive(Clone)]
pub struct LsmDb(Arc<Mutex<Lsm>>);

impl LsmDb {
    /// A store on a device; its counters go to `stats`.
    pub fn new(
        c: &LsmConfig,
        ctx: &WorkloadContext,
        stats: WorkloadStats,
    ) -> Result<LsmDb, WorkloadError> {
        Ok(LsmDb(Arc::new(Mutex::new(Lsm::new(c, ctx, stats)?))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lsm> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The sizes in use.
    pub fn sizes(&self) -> Sizes {
        self.lock().s
    }

    /// Allow `n` more puts (an experiment's next phase; the writer ends when they are done).
    pub fn add_puts(&self, n: u64) {
        let mut l = self.lock();
        l.puts_left += n;
        l.unlimited = false;
        l.done = false;
        l.paced_puts = 0;
    }

    /// Limit the puts of the next phases to `bytes_per_s` key + value bytes per second
    /// (0 = none; see [`LsmConfig::put_rate_limit_bytes_per_s`]); pacing restarts.
    pub fn set_put_rate_limit(&self, bytes_per_s: u64) {
        let mut l = self.lock();
        l.put_rate = bytes_per_s;
        l.paced_puts = 0;
    }

    /// Bytes of each level's files.
    pub fn level_bytes(&self) -> Vec<u64> {
        let l = self.lock();
        (0..NUM_LEVELS).map(|i| l.level_bytes(i)).collect()
    }

    /// Files per level.
    pub fn level_files(&self) -> Vec<usize> {
        self.lock().levels.iter().map(Vec::len).collect()
    }

    /// The flows: the writer (paced under a put rate limit), and the gets at
    /// `get_queue_depth` (0 = none).
    pub fn flows(&self, queue_depth: u32, get_queue_depth: u32) -> Vec<Flow> {
        let arrival = match self.lock().put_rate {
            0 => Arrival::Closed { queue_depth },
            _ => Arrival::Paced { queue_depth },
        };
        let mut flows = vec![Flow {
            name: "lsm-writes".into(),
            arrival,
            source: Box::new(Writer(self.clone())),
        }];
        if get_queue_depth > 0 {
            flows.push(Flow {
                name: "lsm-gets".into(),
                arrival: Arrival::Closed {
                    queue_depth: get_queue_depth,
                },
                source: Box::new(Getter(self.clone())),
            });
        }
        flows
    }
}

/// The `lsm-writes` flow.
struct Writer(LsmDb);

impl RequestSource for Writer {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        self.0.lock().next_write()
    }

    fn request_failed(&mut self, r: &HostRequest, status: &str) -> Result<(), WorkloadError> {
        Err(WorkloadError::config(
            "workload",
            format!(
                "the device refused the store's {:?} of {} bytes at byte {} ({status}): its files would no longer match the device",
                r.op, r.size_bytes, r.offset_bytes
            ),
        ))
    }
}

/// The `lsm-gets` flow.
struct Getter(LsmDb);

impl RequestSource for Getter {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        self.0.lock().next_get()
    }
}

/// Build the LSM workload for a device.
pub fn build(c: &LsmConfig, ctx: &WorkloadContext) -> Result<Workload, WorkloadError> {
    let stats = WorkloadStats::default();
    let db = LsmDb::new(c, ctx, stats.clone())?;
    Ok(Workload {
        flows: db.flows(c.queue_depth, c.get_queue_depth),
        duration_ns: (c.duration_ns > 0).then_some(c.duration_ns),
        stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64 MiB device of 4 KiB units (zoned: 256 zones of 256 KiB, 8 active).
    fn ctx(zoned: bool, placement_ids: u16) -> WorkloadContext {
        WorkloadContext {
            logical_bytes: 64 << 20,
            unit_bytes: 4096,
            seed: 3,
            base_dir: None,
            zones: zoned.then_some(ZoneGeometry {
                zone_bytes: 256 << 10,
                zone_capacity_bytes: 256 << 10,
                zones: 256,
                max_open_zones: 8,
                max_active_zones: 8,
            }),
            placement_ids,
        }
    }

    /// 1 KiB entries, a 64-entry memtable (64 KiB), 64 KiB files, L1 256 KiB, 8-put WAL
    /// writes, 16 KiB I/O, 64 KiB extents, 10,000 keys.
    fn tiny(puts: u64) -> LsmConfig {
        LsmConfig {
            keys: 10_000,
            key_bytes: 24,
            value_bytes: 1000,
            puts,
            size_divisor: 1,
            write_buffer_bytes: 64 << 10,
            level_base_bytes: 256 << 10,
            target_file_bytes: 64 << 10,
            wal_write_bytes: 8 << 10,
            io_bytes: 16 << 10,
            extent_bytes: 64 << 10,
            get_queue_depth: 0,
            ..Default::default()
        }
    }

    /// Background I/O 16 times a WAL write's (RocksDB's 1 MiB vs 64 KiB): compaction
    /// keeps up.
    fn fast(c: LsmConfig) -> LsmConfig {
        LsmConfig {
            wal_write_bytes: 4 << 10,
            io_bytes: 64 << 10,
            ..c
        }
    }

    /// Every request of the writer, the store's counts.
    fn drain(c: &LsmConfig, x: &WorkloadContext) -> (Vec<HostRequest>, LsmCounts, LsmDb) {
        let stats = WorkloadStats::default();
        let db = LsmDb::new(c, x, stats.clone()).unwrap();
        let mut w = Writer(db.clone());
        let mut out = Vec::new();
        while let Some(r) = w.next_request().unwrap() {
            out.push(r);
        }
        (out, stats.snapshot().lsm, db)
    }

    /// 320 puts = 40 WAL writes of 8 puts (8 KiB) = 5 memtables. The writer alternates a
    /// WAL write and a background step: memtable k is full after WAL write 8k, its flush
    /// (4 writes of 16 KiB) ends after WAL write 8k + 4, so memtables 1–4 are flushed
    /// (the 5th fills at the last put, when the writer ends), each flush deleting its
    /// 64 KiB WAL file (one trim). Four L0 files trigger L0 → L1 after the 4th flush
    /// (WAL write 36): 4 × 64 entries merge into 64 + 64 + 64 + 64 − duplicates
    /// (E[dup] over 10,000 keys: 253.6 → 254 entries, 254 KiB → 4 files of 64 KiB); its
    /// 16 reads and 16 writes alternate with the last 4 WAL writes: 4 background steps,
    /// so it is not done when the puts end.
    #[test]
    fn a_tiny_store_counts_exactly() {
        let (reqs, n, db) = drain(&tiny(320), &ctx(false, 0));
        assert_eq!(n.puts, 320);
        assert_eq!(n.user_bytes, 320 * 1024);
        assert_eq!(n.wal_write_bytes, 320 * 1024);
        assert_eq!(n.flushes, 4);
        assert_eq!(n.flush_write_bytes, 4 * (64 << 10));
        assert_eq!(n.files_deleted, 4);
        assert_eq!(n.trim_bytes, 4 * (64 << 10));
        assert_eq!(n.compactions, 0);
        // 4 background steps after the compaction started: read, write, read, write
        // (writes follow reads in proportion: 256 KiB read for 256 KiB written).
        assert_eq!(n.compaction_read_bytes, 2 * (16 << 10));
        assert_eq!(n.compaction_write_bytes, 2 * (16 << 10));
        assert_eq!(db.level_files()[0], 4);
        let trims = reqs.iter().filter(|r| r.op == HostOp::Trim).count();
        assert_eq!(trims, 4);
        let written: u64 = reqs
            .iter()
            .filter(|r| r.op == HostOp::Write)
            .map(|r| r.size_bytes)
            .sum();
        assert_eq!(written, n.device_write_bytes());
        let read: u64 = reqs
            .iter()
            .filter(|r| r.op == HostOp::Read)
            .map(|r| r.size_bytes)
            .sum();
        assert_eq!(read, n.device_read_bytes());
    }

    /// The first L0 → L1 compaction needs 32 background steps (16 reads, 16 writes):
    /// flushes take 4 of the 8 between two memtables, so it gets WAL writes 37–40 and
    /// then 4 steps per memtable: its last step follows WAL write 96; with 97 WAL writes
    /// (776 puts) it is done once, its 4 inputs deleted, 4 L1 files of 64 KiB in place
    /// (254 entries: 64 + 64 + 63 + 63, each rounded up to 64 KiB).
    #[test]
    fn a_compaction_replaces_its_inputs() {
        let (_, n, db) = drain(&tiny(97 * 8), &ctx(false, 0));
        assert_eq!(n.compactions, 1, "{n:?}");
        assert_eq!(n.flushes, 11);
        // 11 WAL files and 4 L0 files deleted.
        assert_eq!(n.files_deleted, 15);
        assert_eq!(db.level_files()[1], 4, "{:?}", db.level_files());
        assert_eq!(db.level_bytes()[1], 4 * (64 << 10));
        // Each compaction's outputs: 254 entries in 4 files, written whole.
        assert_eq!(n.compaction_write_bytes % (16 << 10), 0);
    }

    /// Without `trim`, deleted files free their extents silently.
    #[test]
    fn deleted_files_are_trimmed_unless_told_not_to() {
        let (reqs, n, _) = drain(
            &LsmConfig {
                trim: false,
                ..tiny(320)
            },
            &ctx(false, 0),
        );
        assert_eq!(n.files_deleted, 4);
        assert_eq!(n.trim_bytes, 0);
        assert!(reqs.iter().all(|r| r.op != HostOp::Trim));
    }

    /// On zones: writes stay inside a zone at its write pointer, files of a level share
    /// zones apart from other levels', and zones whose files all died are reset (here the
    /// WAL zones once their memtables are flushed); no trims.
    #[test]
    fn zones_are_written_in_order_and_reset_when_dead() {
        let x = ctx(true, 0);
        let g = x.zones.unwrap();
        let (reqs, n, _) = drain(&tiny(20_000), &x);
        let mut wp = vec![0u64; g.zones as usize];
        let mut resets = 0;
        for r in &reqs {
            let z = g.zone_of(r.offset_bytes) as usize;
            match r.op {
                HostOp::Write => {
                    assert_eq!(
                        r.offset_bytes,
                        g.zone_start_bytes(z as u32) + wp[z],
                        "{r:?}"
                    );
                    wp[z] += r.size_bytes;
                    assert!(wp[z] <= g.zone_capacity_bytes);
                }
                HostOp::ZoneReset => {
                    assert_eq!(wp[z], g.zone_capacity_bytes, "a reset of a zone not full");
                    wp[z] = 0;
                    resets += 1;
                }
                HostOp::Read => {
                    assert!(r.offset_bytes + r.size_bytes <= g.zone_start_bytes(z as u32) + wp[z]);
                }
                op => panic!("{op:?} on zones"),
            }
        }
        assert!(resets > 10, "{resets}");
        assert_eq!(resets, n.zone_resets);
        assert_eq!(n.trim_bytes, 0);
        assert!(n.compactions > 5, "{n:?}");
    }

    /// A zoned device too small for the store's garbage relocates: GC moves live data
    /// and resets zones, and the writes still land at write pointers.
    #[test]
    fn zone_gc_relocates_live_files() {
        let mut x = ctx(true, 0);
        x.logical_bytes = 8 << 20;
        x.zones = Some(ZoneGeometry {
            zones: 32,
            ..x.zones.unwrap()
        });
        let c = LsmConfig {
            keys: 2500,
            gc_free_zones_percent: 50.0,
            ..fast(tiny(30_000))
        };
        let (reqs, n, _) = drain(&c, &x);
        assert!(n.gc_zones > 0 && n.gc_write_bytes > 0, "{n:?}");
        assert_eq!(n.gc_read_bytes, n.gc_write_bytes);
        let g = x.zones.unwrap();
        let mut wp = vec![0u64; g.zones as usize];
        for r in &reqs {
            let z = g.zone_of(r.offset_bytes) as usize;
            match r.op {
                HostOp::Write => {
                    assert_eq!(r.offset_bytes, g.zone_start_bytes(z as u32) + wp[z]);
                    wp[z] += r.size_bytes;
                }
                HostOp::ZoneReset => wp[z] = 0,
                _ => {}
            }
        }
    }

    /// FDP: WAL writes on id 0, L0 files on 1, and deeper levels on 2 and 3.
    #[test]
    fn fdp_places_by_lifetime_class() {
        let c = LsmConfig {
            fdp: true,
            ..fast(tiny(60_000))
        };
        let (reqs, _, db) = drain(&c, &ctx(false, 4));
        assert!(db.level_files()[3] > 0, "{:?}", db.level_files());
        let mut ids = [0u64; 4];
        for r in reqs.iter().filter(|r| r.op == HostOp::Write) {
            ids[r.placement_id as usize] += 1;
        }
        assert!(ids.iter().all(|&n| n > 0), "{ids:?}");
        let e = build(&c, &ctx(false, 0)).err().unwrap().to_string();
        assert!(e.contains("workload.fdp"), "{e}");
    }

    /// Gets read one block of a live file (or nothing); same seed, same requests.
    #[test]
    fn gets_are_seeded_and_read_blocks() {
        let draw = |seed: u64| {
            let mut x = ctx(false, 0);
            x.seed = seed;
            let c = LsmConfig {
                get_queue_depth: 1,
                ..tiny(5_000)
            };
            let w = build(&c, &x).unwrap();
            let mut flows = w.flows;
            let mut out = Vec::new();
            // Interleave: 4 writer requests per get.
            'outer: loop {
                for _ in 0..4 {
                    match flows[0].source.next_request().unwrap() {
                        Some(r) => out.push(r),
                        None => break 'outer,
                    }
                }
                if let Some(r) = flows[1].source.next_request().unwrap() {
                    assert_eq!(r.op, HostOp::Read);
                    assert_eq!(r.size_bytes, 4096);
                    out.push(r);
                }
            }
            assert!(flows[1].source.next_request().unwrap().is_none());
            (out, w.stats.snapshot().lsm)
        };
        let (a, na) = draw(1);
        assert_eq!(a, draw(1).0);
        assert_ne!(a, draw(2).0);
        assert!(na.get_reads > 100, "{na:?}");
    }

    /// Pacing, exactly: 4 KiB entries (one put per 4 KiB WAL write) at 1000 puts/s: put
    /// i's WAL write is due at i ms, the last of N puts at (N − 1) ms; background steps
    /// (flushes, compactions, trims) carry no time; a new phase restarts the pacing. With
    /// 8 puts per WAL write each write is due when its last put is.
    #[test]
    fn puts_are_paced_exactly() {
        let one = LsmConfig {
            key_bytes: 96,
            value_bytes: 4000,
            wal_write_bytes: 4096,
            keys: 100,
            put_rate_limit_bytes_per_s: 4096 * 1000,
            ..tiny(40)
        };
        let x = ctx(false, 0);
        let (reqs, n, db) = drain(&one, &x);
        assert_eq!(n.puts, 40);
        assert_eq!(n.put_rate_limit_bytes_per_s, 4096 * 1000);
        let (wal, bg): (Vec<&HostRequest>, Vec<&HostRequest>) = reqs
            .iter()
            .partition(|r| r.op == HostOp::Write && r.size_bytes == 4096);
        let due: Vec<u64> = wal.iter().map(|r| r.arrival_ns).collect();
        assert_eq!(due, (0..40).map(|i| i * 1_000_000).collect::<Vec<_>>());
        assert_eq!(*due.last().unwrap(), 39 * 1_000_000);
        assert!(
            !bg.is_empty() && bg.iter().all(|r| r.arrival_ns == 0),
            "{bg:?}"
        );
        // The next phase starts its pacing at 0.
        db.add_puts(3);
        let mut w = Writer(db.clone());
        let mut next = Vec::new();
        while let Some(r) = w.next_request().unwrap() {
            if r.op == HostOp::Write && r.size_bytes == 4096 {
                next.push(r.arrival_ns);
            }
        }
        assert_eq!(next, vec![0, 1_000_000, 2_000_000]);
        // 8 puts of 1 KiB per WAL write at 1000 puts/s: write k due at (8k + 7) ms.
        let eight = LsmConfig {
            put_rate_limit_bytes_per_s: 1024 * 1000,
            ..tiny(40)
        };
        let (reqs, _, _) = drain(&eight, &x);
        let due: Vec<u64> = reqs
            .iter()
            .filter(|r| r.op == HostOp::Write && r.size_bytes == 8192 && r.arrival_ns > 0)
            .map(|r| r.arrival_ns)
            .collect();
        assert_eq!(
            due,
            (0..5).map(|k| (8 * k + 7) * 1_000_000).collect::<Vec<_>>()
        );
        // The writer is paced only under a limit.
        let flows = |c: &LsmConfig| build(c, &x).unwrap().flows[0].arrival;
        assert_eq!(flows(&one), Arrival::Paced { queue_depth: 8 });
        assert_eq!(flows(&tiny(1)), Arrival::Closed { queue_depth: 8 });
    }

    /// With a duration, puts due past it are not made.
    #[test]
    fn paced_puts_stop_at_the_duration() {
        let c = LsmConfig {
            key_bytes: 96,
            value_bytes: 4000,
            wal_write_bytes: 4096,
            keys: 100,
            puts: 0,
            duration_ns: 10_500_000,
            put_rate_limit_bytes_per_s: 4096 * 1000,
            ..tiny(0)
        };
        let (_, n, _) = drain(&c, &ctx(false, 0));
        // Puts due at 0, 1, …, 10 ms.
        assert_eq!(n.puts, 11);
    }

    #[test]
    fn errors_name_the_key() {
        let err = |c: LsmConfig| build(&c, &ctx(false, 0)).err().unwrap().to_string();
        assert!(err(LsmConfig {
            io_bytes: 1000,
            ..tiny(1)
        })
        .contains("workload.io_bytes"));
        assert!(err(LsmConfig {
            keys: 1 << 30,
            ..tiny(1)
        })
        .contains("workload.keys"));
        assert!(err(LsmConfig {
            l0_stop_writes_trigger: 2,
            ..tiny(1)
        })
        .contains("l0_stop_writes_trigger"));
        assert!(err(LsmConfig {
            put_rate_limit_bytes_per_s: 1000,
            ..tiny(1)
        })
        .contains("workload.put_rate_limit_bytes_per_s"));
        let e = toml::from_str::<crate::WorkloadConfig>("kind = \"lsm\"\nputz = 4").unwrap_err();
        assert!(e.to_string().contains("putz"), "{e}");
        let w: crate::WorkloadConfig = toml::from_str("kind = \"lsm\"\nkeys = 5").unwrap();
        assert_eq!(
            w,
            crate::WorkloadConfig::Lsm(LsmConfig {
                keys: 5,
                ..Default::default()
            })
        );
        // Auto sizing: a 64 MiB device divides RocksDB's 64 MiB write buffer by 256.
        let s = LsmConfig::default().sizes(&ctx(false, 0)).unwrap();
        assert_eq!(s.divisor, 256);
        assert_eq!(s.write_buffer_bytes, 256 << 10);
        assert_eq!(s.level_base_bytes, 1 << 20);
    }
}
