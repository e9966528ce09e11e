//! The die executor: per-die queues (the scheduler), channel buses, and the timing of the
//! batch a die runs. Read: command + tR on the die (`Sensed`), then the transfer on the
//! channel (`DieDone`). Program: command + transfer, then tPROG. Erase: command, then its
//! ISPE loops. A multi-plane batch is timed by its slowest member.

use super::Event;
use crate::config::{Config, Geometry};
use crate::engine::{EventQueue, Generation};
use crate::flash::{ArrayTime, Channels, OpKind, TimingModel};
use crate::ftl::Ftl;
use crate::scheduler::{Batch, Scheduler, MAX_PLANES_PER_DIE};

/// An erase or program that just started, for the suspender to track.
#[derive(Clone, Copy)]
pub(super) struct LongStart {
    pub batch: Batch,
    /// When the array work starts (after command and, for programs, the transfer).
    pub work_start_ns: u64,
    pub loop_ns: u64,
    pub loops: u32,
    /// Programs: ISPP loops (suspension points); erases: 0.
    pub points: u32,
    /// P/E cycles of the most worn block of the batch.
    pub pe_cycles: u32,
}

pub(super) struct DieExecutor {
    pub sched: Scheduler,
    pub channels: Channels,
    /// Per die: generation of its DieDone/Suspend events (bumped to cancel them).
    gen: Vec<Generation>,
    /// Per die: when the current batch (or segment of it) started.
    pub started_ns: Vec<u64>,
    pub command_ns: u64,
    /// The device's geometry (die of a block, channel of a die).
    pub geo: Geometry,
    /// Per die: its channel.
    channel_of: Vec<u32>,
    /// Bus time of `k` units (a read batch's data), `k` up to a batch's most.
    units_xfer_ns: Vec<u64>,
    /// Bus time of `k` pages (a program batch's data).
    pages_xfer_ns: [u64; MAX_PLANES_PER_DIE + 1],
    program_suspend: bool,
}

impl DieExecutor {
    pub fn new(cfg: &Config, g: &Geometry, t: &TimingModel) -> DieExecutor {
        DieExecutor {
            sched: Scheduler::new(&cfg.scheduler, g),
            channels: Channels::new(g.channels),
            gen: vec![Generation::default(); g.dies as usize],
            started_ns: vec![0; g.dies as usize],
            command_ns: t.command_overhead_ns,
            geo: *g,
            channel_of: (0..g.dies).map(|d| g.channel_of_die(d)).collect(),
            units_xfer_ns: (0..=MAX_PLANES_PER_DIE as u64 * g.slots_per_page as u64)
                .map(|k| t.transfer_ns(k * g.unit_bytes as u64))
                .collect(),
            pages_xfer_ns: std::array::from_fn(|k| t.transfer_ns(k as u64 * g.page_bytes as u64)),
            program_suspend: cfg.scheduler.program_suspend,
        }
    }

    #[inline]
    pub fn gen(&self, die: u32) -> u32 {
        self.gen[die as usize].0
    }

    /// Cancel the die's pending DieDone/Suspend events; returns the new generation.
    #[inline]
    pub fn bump_gen(&mut self, die: u32) -> u32 {
        self.gen[die as usize].bump().0
    }

    pub fn busy_ns(&self) -> Vec<u64> {
        self.sched.dies.iter().map(|d| d.busy_ns).collect()
    }

    /// Start idle `die`'s next batch; for an erase (or a program with program suspend)
    /// returns what the suspender tracks.
    pub fn start_next(
        &mut self,
        die: u32,
        writes_blocked: bool,
        q: &mut EventQueue<Event>,
        ftl: &Ftl,
    ) -> Option<LongStart> {
        let pressure = || ftl.pressure().die_gc_pressure(die);
        let batch = self.sched.start_next(die, pressure, writes_blocked)?;
        let now = q.now_ns();
        self.started_ns[die as usize] = now;
        let t = ftl.timing();
        let gen = self.gen[die as usize].0;
        let d = die as u16;
        match batch.kind() {
            OpKind::Read => {
                let sense = batch_array(batch, t).ns();
                let at = now + self.command_ns + sense;
                q.schedule_in_lane(super::LANE_SENSED, at, Event::Sensed { die: d });
                None
            }
            OpKind::Program => {
                let ch = self.channel_of[die as usize];
                let xfer = self.pages_xfer_ns[batch.len];
                let end = self.channels.reserve(ch, now + self.command_ns, xfer);
                let prog = batch_array(batch, t).ns();
                q.schedule_at(end + prog, Event::DieDone { die: d, gen });
                self.program_suspend.then(|| LongStart {
                    batch: *batch,
                    work_start_ns: end,
                    loop_ns: prog,
                    loops: 1,
                    points: batch
                        .ops()
                        .iter()
                        .map(|o| t.program_loops[o.mode.index()])
                        .max()
                        .unwrap_or(0),
                    pe_cycles: 0,
                })
            }
            OpKind::Erase => {
                let ArrayTime { loops, loop_ns } = batch_array(batch, t);
                let loops = loops.max(1);
                let pe = batch
                    .ops()
                    .iter()
                    .map(|o| ftl.erase_counts()[o.block.idx()])
                    .max()
                    .unwrap_or(0);
                let work_start = now + self.command_ns;
                q.schedule_at(
                    work_start + loops as u64 * loop_ns,
                    Event::DieDone { die: d, gen },
                );
                Some(LongStart {
                    batch: *batch,
                    work_start_ns: work_start,
                    loop_ns,
                    loops,
                    points: 0,
                    pe_cycles: pe,
                })
            }
        }
    }

    /// Start a batch of at most `max` host reads on `die` while its erase or program is
    /// suspended; false when none waits.
    pub fn start_reads(
        &mut self,
        die: u32,
        max: u32,
        q: &mut EventQueue<Event>,
        t: &TimingModel,
    ) -> Option<u32> {
        let now = q.now_ns();
        self.started_ns[die as usize] = now;
        let batch = self.sched.start_reads(die, max)?;
        let sense = batch_array(batch, t).ns();
        let at = now + self.command_ns + sense;
        q.schedule_in_lane(super::LANE_SENSED, at, Event::Sensed { die: die as u16 });
        Some(batch.len as u32)
    }

    /// Start a batch of at most `max` host programs on `die` while its erase is suspended
    /// for them (command + transfer, then tPROG, as any program; never itself suspended:
    /// no suspension within a suspension); `None` when none waits.
    pub fn start_programs(
        &mut self,
        die: u32,
        max: u32,
        q: &mut EventQueue<Event>,
        t: &TimingModel,
    ) -> Option<u32> {
        let now = q.now_ns();
        self.started_ns[die as usize] = now;
        let batch = self.sched.start_programs(die, max)?;
        let ch = self.channel_of[die as usize];
        let xfer = self.pages_xfer_ns[batch.len];
        let end = self.channels.reserve(ch, now + self.command_ns, xfer);
        let prog = batch_array(batch, t).ns();
        let n = batch.len as u32;
        let gen = self.gen(die);
        q.schedule_at(
            end + prog,
            Event::DieDone {
                die: die as u16,
                gen,
            },
        );
        Some(n)
    }

    /// The read batch of `die` is sensed: move its data over the channel.
    pub fn on_sensed(&mut self, die: u32, q: &mut EventQueue<Event>, t: &TimingModel) {
        let batch = &self.sched.dies[die as usize].running;
        let units: u32 = batch.ops().iter().map(|o| o.units).sum();
        let ch = self.channel_of[die as usize];
        let xfer = match self.units_xfer_ns.get(units as usize) {
            Some(&ns) => ns,
            None => t.transfer_ns(units as u64 * self.geo.unit_bytes as u64),
        };
        let end = self.channels.reserve(ch, q.now_ns(), xfer);
        let gen = self.gen(die);
        q.schedule_at(
            end,
            Event::DieDone {
                die: die as u16,
                gen,
            },
        );
    }

    /// `die` finished its batch at `now`; returns how many operations it held (read
    /// them with [`DieExecutor::finished_op`]).
    pub fn finish(&mut self, die: u32, now: u64) -> usize {
        let started = self.started_ns[die as usize];
        self.sched.finish(die, now - started)
    }

    /// Operation `i` of the batch `die` just finished.
    #[inline]
    pub fn finished_op(&self, die: u32, i: usize) -> crate::flash::NandOp {
        self.sched.dies[die as usize].running.ops[i]
    }
}

/// The array phase of a multi-plane batch: its members' array times (the timing model's)
/// combined, the most loops at the slowest loop time; one kind and one cell mode per batch,
/// so its slowest member's.
#[inline(always)]
fn batch_array(batch: &Batch, t: &TimingModel) -> ArrayTime {
    batch
        .ops()
        .iter()
        .fold(ArrayTime::default(), |a, o| a.with(t.op_array(o)))
}
