//! Transaction scheduler: per-die queues by class and the choice of what a die runs next.
//!
//! Classes: host reads (and translation reads, which are on a host read's path), mapping
//! operations, GC/wear-leveling (background), host writes. Host reads go first; GC and
//! host programs then share the die at the ratio the FTL names from free space
//! ([`GcPressure`]: 1:1, `k`:1 when a plane is `k` blocks below its soft threshold, GC
//! first at the hard threshold), so that host programs never wait behind a whole victim
//! and GC keeps up when space runs short. Two kinds of pressure make reads take every
//! other batch instead of all of them: a plane at its hard threshold, and host writes
//! waiting for write-buffer space. A plane below its hard threshold makes GC urgent: it
//! runs first, before reads (and is not suspended). The head of the chosen queue runs
//! together with each other plane's first operation in that queue when it has the head's
//! kind and cell mode, as one multi-plane operation (look-ahead: a plane's operations keep
//! their order; those of different planes need none). Background work (GC, wear leveling,
//! retirement) waits in one queue per plane, served round-robin: a victim's copies are
//! queued at once, so in one FIFO the other planes' work lay too deep for any look-ahead;
//! with `multi_plane_gc` (the default) a background batch takes each other plane's first
//! operation when it has the head's kind and cell mode, the same rule as host programs.
//! The suspender
//! (`sim::timed::suspend`, policies in [`suspend`]) is asked whenever a read waits on a
//! die running an erase (and, with `programs_preempt`, whenever a host program does);
//! while the erase is suspended the die serves reads ([`Scheduler::start_reads`]) and, if
//! suspended for programs, host programs ([`Scheduler::start_programs`]).

pub use crate::policy::suspend;

pub use suspend::{EraseView, Reliability, SuspendDecision, SuspendPolicy};

use crate::config::{CellMode, FastDiv, Geometry, SchedulerConfig};
use crate::flash::{Cause, NandOp, OpKind, Owner};
use crate::ids::BlockId;

pub use crate::base::MAX_PLANES_PER_DIE;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Class {
    HostRead = 0,
    Mapping = 1,
    HostWrite = 2,
    Background = 3,
}

const CLASSES: usize = 4;

/// How badly a die's planes need GC (ordered: the most pressing plane of a die counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GcPressure {
    /// No plane below its soft threshold: GC (finishing a job) and host programs take
    /// turns 1:1 after host reads.
    Normal,
    /// A plane is below its soft threshold: after host reads, `k` GC program (or erase)
    /// batches per host-program batch.
    Behind(u32),
    /// A plane is down to its GC reserve, so host writes cannot use it: GC and host reads
    /// take turns, one batch each, so neither starves the other; host programs (for the
    /// die's other planes) still get one batch per `k` GC programs, so they are never
    /// starved either.
    Pressing(u32),
    /// A plane is below its reserve: GC runs first (non-preemptible).
    Urgent,
}

/// The operation(s) a die is running.
#[derive(Clone, Copy)]
pub struct Batch {
    pub ops: [NandOp; MAX_PLANES_PER_DIE],
    pub len: usize,
}

impl Batch {
    pub fn ops(&self) -> &[NandOp] {
        &self.ops[..self.len]
    }
    pub fn kind(&self) -> OpKind {
        self.ops[0].kind
    }
}

/// Operations queued beyond which the front of a queue is taken to be out of the caches.
const DEEP_QUEUE: usize = 8;

/// Batches of other classes a waiting mapping operation (translation work of the write
/// path and of relocations) lets start before it runs, ahead of host reads: without a
/// bound it waits for as long as host reads keep coming (liveness; the classes that
/// nobody waits on are bounded by feedback instead: host programs by the write buffer
/// filling, GC by free space).
pub const MAPPING_MAX_WAIT: u32 = 8;

/// A die's queue of one class (FIFO).
type OpQueue = crate::ring::Ring<NandOp>;

pub struct DieQueue {
    /// One queue per class; `Background`'s stays empty (its work is in `gc`).
    queues: [OpQueue; CLASSES],
    /// Background work, one queue per plane of the die.
    gc: [OpQueue; MAX_PLANES_PER_DIE],
    /// Operations in `gc`.
    gc_queued: u32,
    /// The plane whose background work heads the next background batch (round-robin).
    gc_next: u8,
    pub busy: bool,
    pub running: Batch,
    pub busy_ns: u64,
    /// Class of the last batch started (for read turn-taking).
    last_class: Class,
    /// GC programs (and erases) started since the last host-program batch.
    gc_streak: u32,
    /// Batches of other classes, urgent GC aside, started since a mapping operation began
    /// waiting.
    mapping_waited: u32,
    /// Liveness check (debug builds): batches of other classes, urgent GC aside, started
    /// while host-read-class work waited; at most two (under pressure reads take every
    /// other batch, and a mapping operation past its wait may come first once).
    #[cfg(debug_assertions)]
    read_waited: u32,
}

impl DieQueue {
    /// `class` starts a batch: count it against the classes left waiting (liveness).
    #[inline]
    fn note_waiting(&mut self, class: Class, pressure: GcPressure) {
        let urgent = pressure == GcPressure::Urgent && class == Class::Background;
        let mapping_waits = class != Class::Mapping && self.waiting(Class::Mapping);
        // Urgent GC runs first whatever waits, so its batches are no wait of mapping work
        // behind the others: counted, a long urgent spell let mapping work jump the host
        // reads at every gap in it (MAPPING_MAX_WAIT urgent batches apart), and reads
        // waited behind one such jump after another.
        self.mapping_waited = if urgent {
            self.mapping_waited
        } else if mapping_waits {
            self.mapping_waited + 1
        } else {
            0
        };
        #[cfg(debug_assertions)]
        {
            if class == Class::HostRead || self.queues[Class::HostRead as usize].is_empty() {
                self.read_waited = 0;
            } else if !urgent {
                self.read_waited += 1;
                assert!(
                    self.read_waited <= 2,
                    "liveness: host-read-class work waited behind {} batches of other classes",
                    self.read_waited
                );
            }
        }
    }

    /// Whether work of `class` waits.
    #[inline(always)]
    fn waiting(&self, class: Class) -> bool {
        if class == Class::Background {
            self.gc_queued != 0
        } else {
            !self.queues[class as usize].is_empty()
        }
    }

    /// Whether work other than host reads waits.
    fn other_waiting(&self) -> bool {
        self.gc_queued != 0
            || !self.queues[Class::Mapping as usize].is_empty()
            || !self.queues[Class::HostWrite as usize].is_empty()
    }

    /// The class [`Scheduler::start_next`] runs when work other than host reads waits
    /// (so that when neither mapping work nor host programs wait, GC does).
    fn choose(&self, pressure: GcPressure, writes_blocked: bool) -> Class {
        debug_assert!(self.other_waiting());
        let waiting = |c: Class| self.waiting(c);
        let turns = matches!(pressure, GcPressure::Pressing(_)) || writes_blocked;
        if pressure == GcPressure::Urgent && waiting(Class::Background) {
            Class::Background
        } else if waiting(Class::Mapping) && self.mapping_waited >= MAPPING_MAX_WAIT {
            Class::Mapping
        } else if waiting(Class::HostRead) && !(turns && self.last_class == Class::HostRead) {
            Class::HostRead
        } else if waiting(Class::Mapping) {
            Class::Mapping
        } else {
            let k = match pressure {
                GcPressure::Normal => 1,
                GcPressure::Behind(k) | GcPressure::Pressing(k) => k,
                GcPressure::Urgent => u32::MAX,
            };
            match (waiting(Class::Background), waiting(Class::HostWrite)) {
                (true, true) if self.gc_streak < k => Class::Background,
                (_, true) => Class::HostWrite,
                (_, false) => Class::Background,
            }
        }
    }

    /// Pop a batch of up to `max` operations of one kind on distinct planes from
    /// `class`'s queue into `running`, and mark the die busy; `None` when the queue is
    /// empty. The head runs with, for each other plane of the die, that plane's first
    /// operation in the queue (within [`PlaneOf::look_ahead`] entries) when it has the
    /// head's kind and cell mode: the operations of one plane keep their order (a plane
    /// whose first operation is of another kind adds nothing), those of different planes
    /// need none.
    #[inline(always)]
    fn take_batch(&mut self, class: Class, max: usize, planes: PlaneOf) -> Option<()> {
        let q = &mut self.queues[class as usize];
        let first = *q.front()?;
        q.advance();
        let batch = &mut self.running;
        batch.ops[0] = first;
        batch.len = 1;
        self.busy = true;
        let limit = (planes.per_die as usize).min(max);
        // Planes are worked out only when an operation could join (often none waits).
        if limit > 1 && !q.is_empty() {
            let all = planes.all();
            // Planes whose first operation has been seen (taken, or of another kind).
            let mut seen = planes.bit(first.block);
            let mut taken: u32 = 0;
            for k in 0..q.len().min(planes.look_ahead()) {
                let next = q.get(k);
                let plane_bit = planes.bit(next.block);
                if seen & plane_bit != 0 {
                    continue;
                }
                seen |= plane_bit;
                // One kind and one cell mode per multi-plane operation; page offsets may
                // differ (independent plane addressing).
                if next.kind == first.kind && next.mode == first.mode {
                    batch.ops[batch.len] = *next;
                    batch.len += 1;
                    taken |= 1 << k;
                    if batch.len == limit {
                        break;
                    }
                }
                if seen == all {
                    break;
                }
            }
            q.remove_at(taken);
        }
        // The next batch from a deep queue (GC's: its front was written long ago, its
        // lines have left the caches). Two operations: one per plane on two-plane dies.
        if q.len() > DEEP_QUEUE {
            q.prefetch_front_two();
        }
        Some(())
    }
}

impl DieQueue {
    /// Pop a background batch into `running` and mark the die busy; `None` when no
    /// background work waits. The head is the first operation of the next plane with work
    /// (round-robin from the last head's); with `multi`, each other plane's first
    /// operation joins when it has the head's kind and cell mode (a plane whose first
    /// operation is of another kind adds nothing: each plane keeps its order).
    #[inline(always)]
    fn take_gc_batch(&mut self, max: usize, multi: bool, planes: PlaneOf) -> Option<()> {
        if self.gc_queued == 0 {
            return None;
        }
        let n = planes.per_die as usize;
        let mut h = self.gc_next as usize;
        while self.gc[h].is_empty() {
            h = if h + 1 == n { 0 } else { h + 1 };
        }
        let first = *self.gc[h].front()?;
        self.gc[h].advance();
        let batch = &mut self.running;
        batch.ops[0] = first;
        batch.len = 1;
        self.busy = true;
        self.gc_next = if h + 1 == n { 0 } else { h as u8 + 1 };
        if multi && self.gc_queued > 1 {
            let limit = n.min(max);
            let mut p = h;
            for _ in 1..n {
                p = if p + 1 == n { 0 } else { p + 1 };
                let q = &mut self.gc[p];
                if let Some(next) = q.front() {
                    // One kind and one cell mode per multi-plane operation.
                    if next.kind == first.kind && next.mode == first.mode {
                        batch.ops[batch.len] = *next;
                        batch.len += 1;
                        q.advance();
                        if batch.len == limit {
                            break;
                        }
                    }
                }
            }
        }
        self.gc_queued -= batch.len as u32;
        // The next batch from a deep queue (its front was written long ago, its lines
        // have left the caches).
        let q = &self.gc[self.gc_next as usize];
        if q.len() > DEEP_QUEUE {
            q.prefetch_front_two();
        }
        Some(())
    }
}

/// The plane of a block within its die (plane ids are die-major), as a bit.
#[derive(Clone, Copy)]
struct PlaneOf {
    per_die: u32,
    blocks_per_plane: FastDiv,
}

impl PlaneOf {
    /// Queued operations (past the head) a die looks through for the other planes' first
    /// operations of a multi-plane batch: 2 per plane, the most host programs a die holds
    /// (`HOST_PROGRAMS_PER_PLANE`), so they are all seen; 16 (a bit each) at 8 planes.
    /// A victim's copies are queued at once, so GC work of two planes rarely meets within it.
    #[inline(always)]
    fn look_ahead(self) -> usize {
        2 * self.per_die as usize
    }

    /// Every plane of the die, as bits.
    #[inline(always)]
    fn all(self) -> u32 {
        (1u32 << self.per_die) - 1
    }

    /// No hardware divide: a multiply-high, then a mask when the planes per die are a
    /// power of two.
    #[inline(always)]
    fn bit(self, block: BlockId) -> u32 {
        1 << self.index(block)
    }

    /// The plane of `block` within its die.
    #[inline(always)]
    fn index(self, block: BlockId) -> u32 {
        let plane = self.blocks_per_plane.div(block.0);
        if self.per_die.is_power_of_two() {
            plane & (self.per_die - 1)
        } else {
            plane % self.per_die
        }
    }
}

pub struct Scheduler {
    pub dies: Vec<DieQueue>,
    read_priority: bool,
    planes_per_die: u32,
    blocks_per_plane: FastDiv,
    /// Background batches run multi-plane (`multi_plane_gc`).
    multi_plane_gc: bool,
    /// Host-program batches started, and the host programs in them (plane parallelism).
    pub host_program_batches: u64,
    pub host_programs: u64,
    /// Background (GC, wear-leveling, retirement) program batches and the programs in
    /// them; erase batches and the erases in them.
    pub gc_program_batches: u64,
    pub gc_programs: u64,
    pub gc_erase_batches: u64,
    pub gc_erases: u64,
}

pub const EMPTY_OP: NandOp = NandOp {
    kind: OpKind::Read,
    cause: Cause::Host,
    mode: CellMode::Tlc,
    flags: 0,
    stage: 0,
    loops: 0,
    block: BlockId(0),
    page: 0,
    units: 0,
    owner: Owner::None,
};

impl Scheduler {
    pub fn new(cfg: &SchedulerConfig, g: &Geometry) -> Scheduler {
        Scheduler {
            dies: (0..g.dies)
                .map(|_| DieQueue {
                    queues: Default::default(),
                    gc: Default::default(),
                    gc_queued: 0,
                    gc_next: 0,
                    busy: false,
                    running: Batch {
                        ops: [EMPTY_OP; MAX_PLANES_PER_DIE],
                        len: 0,
                    },
                    busy_ns: 0,
                    last_class: Class::HostRead,
                    gc_streak: 0,
                    mapping_waited: 0,
                    #[cfg(debug_assertions)]
                    read_waited: 0,
                })
                .collect(),
            read_priority: cfg.read_priority,
            planes_per_die: g.planes_per_die,
            blocks_per_plane: FastDiv::new(g.blocks_per_plane),
            multi_plane_gc: cfg.multi_plane_gc,
            host_program_batches: 0,
            host_programs: 0,
            gc_program_batches: 0,
            gc_programs: 0,
            gc_erase_batches: 0,
            gc_erases: 0,
        }
    }

    fn class_of(&self, op: &NandOp) -> Class {
        match (op.cause, op.kind) {
            // Translation reads are on a host read's path: they rank, and suspend erases,
            // like host reads.
            (Cause::Host | Cause::Mapping, OpKind::Read) => Class::HostRead,
            // So is the write-back of a dirty CMT victim that a host read's plan starts
            // with: as a mapping operation it waited behind every later host read.
            (Cause::Mapping, _) if op.owner.host_read_path() => Class::HostRead,
            // Without read priority, host reads and writes share one FIFO.
            (Cause::Host, _) if !self.read_priority => Class::HostRead,
            (Cause::Host, _) => Class::HostWrite,
            (Cause::Mapping, _) => Class::Mapping,
            _ => Class::Background,
        }
    }

    /// Queue `op` on `die`. Returns true when the die is idle (the caller should start it).
    #[inline]
    pub fn enqueue(&mut self, die: u32, op: NandOp) -> bool {
        let class = self.class_of(&op);
        let d = &mut self.dies[die as usize];
        if class == Class::Background {
            let plane = PlaneOf {
                per_die: self.planes_per_die,
                blocks_per_plane: self.blocks_per_plane,
            }
            .index(op.block);
            d.gc[plane as usize].push_back(op);
            d.gc_queued += 1;
        } else {
            d.queues[class as usize].push_back(op);
        }
        !d.busy
    }

    /// Pick the next batch for idle `die` under GC `pressure` (asked only when the choice
    /// depends on it: some work other than host reads waits); `writes_blocked` = host
    /// writes wait for write-buffer space. Marks the die busy and returns the batch, or
    /// `None`.
    ///
    /// 1. Urgent GC runs first.
    /// 2. Host (and translation) reads run next, except that under pressure (a plane at its
    ///    hard threshold, or writes blocked on buffer space) they take every other batch,
    ///    so that neither reads nor the pressured work starves.
    /// 3. Then mapping operations, then GC and host programs share the die: `k` GC programs
    ///    (or erases; GC reads run between them) per host-program batch when both wait
    ///    (`k` = 1 `Normal`, `k` for `Behind(k)` and `Pressing(k)`, GC only when `Urgent`).
    #[inline]
    pub fn start_next(
        &mut self,
        die: u32,
        pressure: impl FnOnce() -> GcPressure,
        writes_blocked: bool,
    ) -> Option<&Batch> {
        let planes = PlaneOf {
            per_die: self.planes_per_die,
            blocks_per_plane: self.blocks_per_plane,
        };
        let d = &mut self.dies[die as usize];
        debug_assert!(!d.busy);
        let class = if d.other_waiting() {
            let pressure = pressure();
            let class = d.choose(pressure, writes_blocked);
            d.note_waiting(class, pressure);
            class
        } else if d.queues[Class::HostRead as usize].is_empty() {
            return None;
        } else {
            #[cfg(debug_assertions)]
            {
                d.read_waited = 0;
            }
            Class::HostRead // only reads wait: pressure cannot change the choice
        };
        d.last_class = class;
        if class == Class::Background {
            d.take_gc_batch(MAX_PLANES_PER_DIE, self.multi_plane_gc, planes)?;
            // GC's share is counted in programs and erases (its reads are short).
            match d.running.kind() {
                OpKind::Read => {}
                OpKind::Program => {
                    d.gc_streak = d.gc_streak.saturating_add(1);
                    self.gc_program_batches += 1;
                    self.gc_programs += d.running.len as u64;
                }
                OpKind::Erase => {
                    d.gc_streak = d.gc_streak.saturating_add(1);
                    self.gc_erase_batches += 1;
                    self.gc_erases += d.running.len as u64;
                }
            }
            return Some(&d.running);
        }
        d.take_batch(class, MAX_PLANES_PER_DIE, planes)?;
        if class == Class::HostWrite {
            d.gc_streak = 0;
        }
        if d.running.kind() == OpKind::Program && d.running.ops[0].cause == Cause::Host {
            self.host_program_batches += 1;
            self.host_programs += d.running.len as u64;
        }
        Some(&d.running)
    }

    /// Whether the next host-class operation queued on `die` is a read (host or
    /// translation).
    #[inline]
    pub fn host_read_waiting(&self, die: u32) -> bool {
        self.dies[die as usize].queues[Class::HostRead as usize]
            .front()
            .is_some_and(|o| o.kind == OpKind::Read)
    }

    /// Host reads queued on `die` (the reads a deferred suspension serves).
    pub fn host_reads_queued(&self, die: u32) -> u32 {
        let q = &self.dies[die as usize].queues[Class::HostRead as usize];
        if self.read_priority {
            q.len() as u32
        } else {
            q.iter().filter(|o| o.kind == OpKind::Read).count() as u32
        }
    }

    /// While `die`'s erase or program is suspended: start a batch of at most `max` host
    /// reads from the head of the host queue (nothing else may run on a suspended die).
    pub fn start_reads(&mut self, die: u32, max: u32) -> Option<&Batch> {
        debug_assert!(!self.dies[die as usize].busy);
        if max == 0 || !self.host_read_waiting(die) {
            return None;
        }
        let planes = PlaneOf {
            per_die: self.planes_per_die,
            blocks_per_plane: self.blocks_per_plane,
        };
        let d = &mut self.dies[die as usize];
        let max = max.min(MAX_PLANES_PER_DIE as u32) as usize;
        d.take_batch(Class::HostRead, max, planes)?;
        Some(&d.running)
    }

    /// The queue host programs wait in: their own with read priority, else the host FIFO.
    #[inline]
    fn host_program_class(&self) -> Class {
        if self.read_priority {
            Class::HostWrite
        } else {
            Class::HostRead
        }
    }

    /// Whether the next operation of `die`'s host-program queue is a host program (one that
    /// may suspend an erase with `programs_preempt`).
    #[inline]
    pub fn host_program_waiting(&self, die: u32) -> bool {
        self.dies[die as usize].queues[self.host_program_class() as usize]
            .front()
            .is_some_and(|o| o.kind == OpKind::Program && o.cause == Cause::Host)
    }

    /// Host programs queued on `die` (the programs a suspension for programs serves).
    pub fn host_programs_queued(&self, die: u32) -> u32 {
        let q = &self.dies[die as usize].queues[self.host_program_class() as usize];
        q.iter()
            .filter(|o| o.kind == OpKind::Program && o.cause == Cause::Host)
            .count() as u32
    }

    /// While `die`'s erase is suspended for programs: start a batch of at most `max` host
    /// programs from the head of their queue.
    pub fn start_programs(&mut self, die: u32, max: u32) -> Option<&Batch> {
        debug_assert!(!self.dies[die as usize].busy);
        if max == 0 || !self.host_program_waiting(die) {
            return None;
        }
        let planes = PlaneOf {
            per_die: self.planes_per_die,
            blocks_per_plane: self.blocks_per_plane,
        };
        let class = self.host_program_class();
        let d = &mut self.dies[die as usize];
        let max = max.min(MAX_PLANES_PER_DIE as u32) as usize;
        d.take_batch(class, max, planes)?;
        Some(&d.running)
    }

    /// Background batches so far: `[(program batches, programs), (erase batches, erases)]`.
    pub fn gc_batches(&self) -> [(u64, u64); 2] {
        [
            (self.gc_program_batches, self.gc_programs),
            (self.gc_erase_batches, self.gc_erases),
        ]
    }

    /// The die finished its batch (still readable as `dies[die].running`).
    pub fn finish(&mut self, die: u32, busy_ns: u64) -> usize {
        let d = &mut self.dies[die as usize];
        d.busy = false;
        d.busy_ns += busy_ns;
        d.running.len
    }

    /// The die stops working on its (suspended) batch for now.
    pub fn release(&mut self, die: u32, busy_ns: u64) {
        let d = &mut self.dies[die as usize];
        d.busy = false;
        d.busy_ns += busy_ns;
    }

    /// The die takes up `batch` (a suspended erase or program) again.
    pub fn resume(&mut self, die: u32, batch: Batch) {
        let d = &mut self.dies[die as usize];
        debug_assert!(!d.busy);
        d.busy = true;
        d.running = batch;
    }

    /// Add busy time of a running batch (a segment that ended in a suspension).
    pub fn add_busy(&mut self, die: u32, busy_ns: u64) {
        self.dies[die as usize].busy_ns += busy_ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn op(kind: OpKind, cause: Cause, block: u32) -> NandOp {
        NandOp::new(kind, cause, BlockId(block), 0, 1, Owner::None)
    }

    #[test]
    fn reads_first_then_multiplane_batches() {
        let cfg: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        let d = cfg.validate().unwrap();
        let g = d.geometry; // 2 planes per die, 8 blocks per plane
        let mut s = Scheduler::new(&cfg.scheduler, &g);
        s.enqueue(0, op(OpKind::Program, Cause::Host, 0));
        s.enqueue(0, op(OpKind::Program, Cause::Host, 8));
        s.enqueue(0, op(OpKind::Read, Cause::Gc, 1));
        assert!(s.enqueue(0, op(OpKind::Read, Cause::Host, 9)));
        let b = s.start_next(0, || GcPressure::Normal, false).unwrap();
        assert_eq!((b.len, b.ops[0].block.0), (1, 9));
        s.finish(0, 1);
        let b = s.start_next(0, || GcPressure::Normal, false).unwrap();
        assert_eq!(b.ops[0].cause, Cause::Gc, "GC before host writes");
        s.finish(0, 1);
        let b = s.start_next(0, || GcPressure::Normal, false).unwrap();
        assert_eq!(
            b.ops().iter().map(|o| o.block.0).collect::<Vec<_>>(),
            vec![0, 8],
            "two planes, one program"
        );
        s.finish(0, 1);
        s.enqueue(0, op(OpKind::Read, Cause::Host, 2));
        s.enqueue(0, op(OpKind::Erase, Cause::Gc, 3));
        let b = s.start_next(0, || GcPressure::Urgent, false).unwrap();
        assert_eq!(b.ops[0].cause, Cause::Gc, "urgent GC before host reads");
        s.finish(0, 1);
        assert_eq!(
            s.start_next(0, || GcPressure::Urgent, false).unwrap().ops[0]
                .block
                .0,
            2
        );
        s.finish(0, 1);
        assert!(s.start_next(0, || GcPressure::Normal, false).is_none());
        // Pressing: GC and host reads alternate.
        for b in [1, 2, 3] {
            s.enqueue(0, op(OpKind::Read, Cause::Host, 10 + b));
            s.enqueue(0, op(OpKind::Program, Cause::Gc, 20 + b));
        }
        let mut order = Vec::new();
        while let Some(b) = s.start_next(0, || GcPressure::Pressing(4), false) {
            order.push(b.ops[0].block.0);
            s.finish(0, 1);
        }
        assert_eq!(order, vec![21, 11, 22, 12, 23, 13]);
        // Writes blocked on buffer space: host programs and reads alternate.
        for b in [1, 2] {
            // Same plane each (blocks 32, 34 on plane 0; 41, 43 on plane 1): no batching.
            s.enqueue(0, op(OpKind::Read, Cause::Host, 30 + 2 * b));
            s.enqueue(0, op(OpKind::Program, Cause::Host, 39 + 2 * b));
        }
        let mut order = Vec::new();
        while let Some(b) = s.start_next(0, || GcPressure::Normal, true) {
            order.push(b.ops[0].block.0);
            s.finish(0, 1);
        }
        assert_eq!(order, vec![41, 32, 43, 34]);
    }

    /// Liveness: a write-back on a host read's plan queues with the host reads (FIFO); a
    /// mapping operation of the write path waits behind at most `MAPPING_MAX_WAIT` batches
    /// of host reads that keep coming.
    #[test]
    fn mapping_work_is_not_starved_by_reads() {
        let cfg: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        let g = cfg.validate().unwrap().geometry;
        let mut s = Scheduler::new(&cfg.scheduler, &g);
        let mapping = |req| {
            NandOp::new(
                OpKind::Program,
                Cause::Mapping,
                BlockId(0),
                0,
                1,
                Owner::Mapping { req },
            )
        };
        s.enqueue(0, op(OpKind::Read, Cause::Host, 1));
        s.enqueue(0, mapping(7)); // on request 7's read path
        s.enqueue(0, mapping(crate::flash::NONE)); // the write path's
        let mut order = Vec::new();
        for i in 0..30 {
            // Every batch, one more host read arrives (a closed loop at depth 1).
            s.enqueue(0, op(OpKind::Read, Cause::Host, 2 + i));
            let b = s.start_next(0, || GcPressure::Normal, false).unwrap();
            order.push((b.ops[0].kind, b.ops[0].owner));
            s.finish(0, 1);
        }
        let first_program = |owner| order.iter().position(|&o| o == (OpKind::Program, owner));
        assert_eq!(
            first_program(Owner::Mapping { req: 7 }),
            Some(1),
            "in FIFO order with reads"
        );
        assert_eq!(
            first_program(Owner::Mapping {
                req: crate::flash::NONE
            }),
            Some(MAPPING_MAX_WAIT as usize),
            "after exactly MAPPING_MAX_WAIT batches of others: {order:?}"
        );
    }

    /// Liveness (swarm seeds 40169, 49875): urgent GC batches are no wait of mapping work
    /// behind other classes. Counted, a long urgent spell made waiting mapping work jump
    /// the host reads at every gap in it, and reads waited behind 3 batches of others.
    #[test]
    fn urgent_gc_does_not_count_as_mapping_wait() {
        let cfg: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        let g = cfg.validate().unwrap().geometry; // 2 planes per die, 8 blocks per plane
        let mut s = Scheduler::new(&cfg.scheduler, &g);
        let mapping = || {
            NandOp::new(
                OpKind::Program,
                Cause::Mapping,
                BlockId(1),
                0,
                1,
                Owner::Mapping {
                    req: crate::flash::NONE,
                },
            )
        };
        s.enqueue(0, op(OpKind::Read, Cause::Host, 2));
        s.enqueue(0, mapping());
        s.enqueue(0, mapping());
        // One plane (block 0): every GC program is a batch of its own.
        for _ in 0..2 * MAPPING_MAX_WAIT {
            s.enqueue(0, op(OpKind::Program, Cause::Gc, 0));
        }
        let mut order = Vec::new();
        let mut next = |s: &mut Scheduler, n: u32| {
            for _ in 0..n {
                let b = s.start_next(0, || GcPressure::Urgent, false).unwrap();
                order.push(b.ops[0].cause);
                s.finish(0, 1);
            }
        };
        next(&mut s, 2 * MAPPING_MAX_WAIT);
        next(&mut s, 1); // the first gap in urgent GC
        s.enqueue(0, op(OpKind::Read, Cause::Host, 3));
        for _ in 0..MAPPING_MAX_WAIT {
            s.enqueue(0, op(OpKind::Program, Cause::Gc, 0));
        }
        next(&mut s, MAPPING_MAX_WAIT + 2);
        assert!(order[..2 * MAPPING_MAX_WAIT as usize]
            .iter()
            .all(|&c| c == Cause::Gc));
        use Cause::{Gc as G, Host as H, Mapping as M};
        assert_eq!(
            order[2 * MAPPING_MAX_WAIT as usize..],
            [[H].as_slice(), &[G; MAPPING_MAX_WAIT as usize], &[H, M]].concat(),
            "the reads first at each gap"
        );
    }

    /// Every batch die 0 starts until its queues are empty (each finishing at once), as
    /// (kind, block) per operation.
    fn started_batches(s: &mut Scheduler) -> Vec<Vec<(OpKind, u32)>> {
        let mut out = Vec::new();
        while let Some(b) = s.start_next(0, || GcPressure::Normal, false) {
            out.push(b.ops().iter().map(|o| (o.kind, o.block.0)).collect());
            s.finish(0, 1);
        }
        out
    }

    /// Look-ahead (issue 36): each other plane's first queued operation of the head's kind
    /// and cell mode joins the head's batch, past operations of the head's plane; a plane
    /// whose first operation is of another kind adds nothing, so each plane keeps its order.
    #[test]
    fn multi_plane_batches_look_past_the_head() {
        let cfg: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        let g = cfg.validate().unwrap().geometry; // 2 planes per die, 8 blocks per plane
        let mut s = Scheduler::new(&cfg.scheduler, &g);
        let batches = |s: &mut Scheduler, ops: &[(OpKind, Cause, u32)]| {
            for &(kind, cause, block) in ops {
                s.enqueue(0, op(kind, cause, block));
            }
            started_batches(s)
        };
        use Cause::Host;
        use OpKind::Program as P;
        // Host programs: two on plane 0 (blocks 0, 1), then one on plane 1 (block 8).
        assert_eq!(
            batches(&mut s, &[(P, Host, 0), (P, Host, 1), (P, Host, 8)]),
            [vec![(P, 0), (P, 8)], vec![(P, 1)]],
            "plane 1's program runs with plane 0's first"
        );
        assert_eq!((s.host_program_batches, s.host_programs), (2, 3));
        // Beyond the look-ahead window (4 entries past the head on two planes) nothing
        // joins: plane 1's program is 5 entries past the head, then 4.
        let mut ops = vec![(P, Host, 0); 6];
        ops.push((P, Host, 8));
        let got = batches(&mut s, &ops);
        assert_eq!(got.len(), 6);
        assert_eq!(got[..2], [vec![(P, 0)], vec![(P, 0)]]);
        assert_eq!(got[2], [(P, 0), (P, 8)]);
    }

    /// Multi-plane GC (issue 48): background work waits per plane, so a plane's first
    /// operation joins the head's batch however deep the queue (a victim's copies are
    /// queued at once), when it has the head's kind and cell mode; heads go round-robin
    /// over the planes. With `multi_plane_gc = false`, one plane at a time.
    #[test]
    fn gc_batches_take_each_planes_first_operation() {
        use Cause::{Gc, WearLeveling as Wl};
        use OpKind::{Erase as E, Program as P, Read as R};
        let run = |multi: bool| {
            let mut cfg: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
            cfg.scheduler.multi_plane_gc = multi;
            let g = cfg.validate().unwrap().geometry; // 2 planes per die, 8 blocks per plane
            let mut s = Scheduler::new(&cfg.scheduler, &g);
            // Plane 0's victim (block 1): 3 reads and 3 programs into block 2, its erase;
            // then plane 1's (block 9, copies into block 10, one of them wear leveling).
            let plane0 = [(R, 1), (P, 2), (R, 1), (P, 2), (R, 1), (P, 2), (E, 1)];
            let plane1 = [(R, 9), (P, 10), (R, 9), (P, 10), (E, 9)];
            for &(kind, block) in &plane0 {
                s.enqueue(0, op(kind, Gc, block));
            }
            for (i, &(kind, block)) in plane1.iter().enumerate() {
                s.enqueue(0, op(kind, if i == 3 { Wl } else { Gc }, block));
            }
            (started_batches(&mut s), s.gc_batches())
        };
        let (on, counts) = run(true);
        assert_eq!(
            on,
            [
                vec![(R, 1), (R, 9)],
                vec![(P, 10), (P, 2)],
                vec![(R, 1), (R, 9)],
                vec![(P, 10), (P, 2)],
                vec![(R, 1)],
                vec![(E, 9)],
                vec![(P, 2)],
                vec![(E, 1)],
            ],
            "each plane's first operation joins; heads alternate between the planes"
        );
        // Programs: 2 batches of 2 and one of 1; erases: two batches of 1 (plane 1's erase
        // was ready while plane 0 still had a program before its own).
        assert_eq!(counts, [(3, 5), (2, 2)]);
        let (off, counts) = run(false);
        assert!(off.iter().all(|b| b.len() == 1), "single-plane: {off:?}");
        assert_eq!(off.len(), 12);
        assert_eq!(counts, [(5, 5), (2, 2)]);
        // Both erases ready at once: they run as one two-plane erase (off: two).
        for (multi, want) in [(true, (1, 2)), (false, (2, 2))] {
            let mut cfg: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
            cfg.scheduler.multi_plane_gc = multi;
            let g = cfg.validate().unwrap().geometry;
            let mut s = Scheduler::new(&cfg.scheduler, &g);
            s.enqueue(0, op(E, Gc, 3));
            s.enqueue(0, op(E, Gc, 12));
            while s.start_next(0, || GcPressure::Normal, false).is_some() {
                s.finish(0, 1);
            }
            assert_eq!(s.gc_batches()[1], want, "multi_plane_gc = {multi}");
        }
    }

    #[test]
    fn multi_plane_batches_keep_one_cell_mode() {
        let cfg: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        let g = cfg.validate().unwrap().geometry; // 2 planes per die, 8 blocks per plane
        let mut s = Scheduler::new(&cfg.scheduler, &g);
        let mut slc = op(OpKind::Program, Cause::Host, 0);
        slc.mode = CellMode::Slc;
        s.enqueue(0, slc);
        s.enqueue(0, op(OpKind::Program, Cause::Host, 8)); // TLC, other plane
        s.enqueue(0, op(OpKind::Program, Cause::Host, 9)); // TLC, same plane as 8
        let b = s.start_next(0, || GcPressure::Normal, false).unwrap();
        assert_eq!(b.len, 1, "SLC and TLC programs do not join");
        s.finish(0, 1);
        let b = s.start_next(0, || GcPressure::Normal, false).unwrap();
        assert_eq!(b.len, 1, "one plane, one operation");
        s.finish(0, 1);
        // GC and host programs share the die 2:1 when a plane is behind by that ratio.
        for i in 0..4 {
            s.enqueue(0, op(OpKind::Program, Cause::Gc, 2 * (i % 2)));
            s.enqueue(0, op(OpKind::Program, Cause::Host, 4));
        }
        let mut order = Vec::new();
        while let Some(b) = s.start_next(0, || GcPressure::Behind(2), false) {
            order.push(b.ops[0].cause);
            s.finish(0, 1);
        }
        use Cause::{Gc as G, Host as H};
        assert_eq!(order, [G, G, H, G, G, H, H, H]);
    }
}
