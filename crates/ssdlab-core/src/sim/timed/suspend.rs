//! The suspender: long operations (erases, and programs with `program_suspend`) with their
//! exact work position, suspend points, serving reads while suspended, resume (spec 01,
//! docs/erase-suspend.md).
//!
//! When a host (or mapping) read waits on a die whose erase runs — or, with the policy's
//! `programs_preempt`, a host program — the suspend policy names a work position; at that
//! point the die stops (its pending completion is cancelled through the die's generation
//! counter), pays the suspend penalty (the erase's or the program's), serves reads (those
//! queued at the suspension, or all of them for I-ES) and then, for an erase with
//! `programs_preempt`, host programs (likewise), then resumes the remaining work after the
//! resume penalty. Nothing else runs on a die while its erase is suspended; a program
//! served in a suspension is not itself suspended.

use super::die::{DieExecutor, LongStart};
use super::Event;
use crate::config::{CellMode, Config, MAX_ERASE_LOOPS};
use crate::engine::EventQueue;
use crate::flash::OpKind;
use crate::ftl::Ftl;
use crate::scheduler::suspend::{loop_of_position, next_grid_point};
use crate::scheduler::{Batch, EraseView, Reliability, SuspendDecision, SuspendPolicy, EMPTY_OP};
use crate::stats::{EraseRecord, SuspendSummary};

/// What a die does with its erase or program (the "long operation").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No long operation (idle or a read).
    Idle,
    /// The long operation runs.
    Running,
    /// Suspended: paying the suspend penalty.
    Penalty,
    /// Suspended: the die serves reads.
    Suspended,
}

/// The erase or program a die runs or has suspended, with its exact progress.
#[derive(Clone, Copy)]
struct LongOp {
    phase: Phase,
    kind: OpKind,
    batch: Batch,
    mode: CellMode,
    started_ns: u64,
    /// Start of the current running segment (the operation's start or its last resume).
    seg_start_ns: u64,
    /// When the array work of the current segment starts (after command / transfer / ramp).
    work_start_ns: u64,
    /// Array work done before the current segment.
    work_done_ns: u64,
    loop_ns: u64,
    loops: u32,
    /// Programs: ISPP loops (suspension points); erases: unused.
    points: u32,
    pe_cycles: u32,
    exec_ns: u64,
    penalties_ns: u64,
    suspensions: u32,
    last_suspend_pos_ns: Option<u64>,
    /// A suspension is scheduled at work position `pending_pos_ns`.
    pending: bool,
    pending_pos_ns: u64,
    suspended_at_ns: u64,
    postponed_ns: u64,
    /// Reads the current suspension may still serve (`u32::MAX`: unbounded, I-ES).
    read_budget: u32,
    /// Host programs the current suspension may still serve (erases with
    /// `programs_preempt`; `u32::MAX`: unbounded, I-ES).
    program_budget: u32,
    /// First read waiting on the running erase since it last became readable.
    wait_since_ns: Option<u64>,
    per_loop: [u16; MAX_ERASE_LOOPS as usize],
}

impl LongOp {
    const IDLE: LongOp = LongOp {
        phase: Phase::Idle,
        kind: OpKind::Erase,
        batch: Batch {
            ops: [EMPTY_OP; crate::scheduler::MAX_PLANES_PER_DIE],
            len: 0,
        },
        mode: CellMode::Tlc,
        started_ns: 0,
        seg_start_ns: 0,
        work_start_ns: 0,
        work_done_ns: 0,
        loop_ns: 0,
        loops: 0,
        points: 0,
        pe_cycles: 0,
        exec_ns: 0,
        penalties_ns: 0,
        suspensions: 0,
        last_suspend_pos_ns: None,
        pending: false,
        pending_pos_ns: 0,
        suspended_at_ns: 0,
        postponed_ns: 0,
        read_budget: 0,
        program_budget: 0,
        wait_since_ns: None,
        per_loop: [0; MAX_ERASE_LOOPS as usize],
    };

    fn total_ns(&self) -> u64 {
        self.loop_ns * self.loops as u64
    }

    fn position(&self, now: u64) -> u64 {
        (self.work_done_ns + now.saturating_sub(self.work_start_ns)).min(self.total_ns())
    }
}

pub(super) struct Suspender {
    long: Vec<LongOp>,
    policy: SuspendPolicy,
    /// Waiting host programs suspend erases too (the policy's `programs_preempt`).
    programs_preempt: bool,
    max_suspensions_per_erase: u32,
    max_erase_postponement_ns: u64,
    reliability: Reliability,
    summary: SuspendSummary,
    erase_trace: Option<Vec<EraseRecord>>,
}

impl Suspender {
    pub fn new(cfg: &Config, dies: u32) -> Suspender {
        let sc = &cfg.scheduler;
        let policy = SuspendPolicy::new(&sc.erase_suspend, &());
        let guard = policy.guard().unwrap_or_default();
        Suspender {
            long: vec![LongOp::IDLE; dies as usize],
            programs_preempt: policy.programs_preempt(),
            policy,
            max_suspensions_per_erase: guard.max_suspensions_per_erase,
            max_erase_postponement_ns: guard.max_erase_postponement_ns,
            reliability: Reliability::new(
                sc.safe_suspensions_per_loop.clone(),
                sc.extra_rber_per_excess_suspension,
                sc.extra_rber_exponent,
            ),
            summary: SuspendSummary {
                policy: sc.erase_suspend.name().to_string(),
                ..Default::default()
            },
            erase_trace: None,
        }
    }

    pub fn trace_erases(&mut self) {
        self.erase_trace = Some(Vec::new());
    }

    pub fn summary(&self) -> &SuspendSummary {
        &self.summary
    }

    pub fn finish(self) -> (SuspendSummary, Vec<EraseRecord>) {
        (self.summary, self.erase_trace.unwrap_or_default())
    }

    /// Whether waiting host programs suspend erases (the caller reports their arrival).
    #[inline]
    pub fn programs_preempt(&self) -> bool {
        self.programs_preempt
    }

    #[inline]
    pub fn is_suspended(&self, die: u32) -> bool {
        self.long[die as usize].phase == Phase::Suspended
    }

    /// Track the erase or program that just started on `die`.
    pub fn begin_long(
        &mut self,
        die: u32,
        s: LongStart,
        dies: &mut DieExecutor,
        q: &mut EventQueue<Event>,
        ftl: &Ftl,
    ) {
        let now = q.now_ns();
        let lo = &mut self.long[die as usize];
        *lo = LongOp {
            phase: Phase::Running,
            kind: s.batch.kind(),
            batch: s.batch,
            mode: s.batch.ops[0].mode,
            started_ns: now,
            seg_start_ns: now,
            work_start_ns: s.work_start_ns,
            loop_ns: s.loop_ns,
            loops: s.loops,
            points: s.points,
            pe_cycles: s.pe_cycles,
            ..LongOp::IDLE
        };
        // Reads already waiting (urgent GC went first, or no read priority).
        if dies.sched.host_read_waiting(die) {
            if lo.kind == OpKind::Erase {
                lo.wait_since_ns = Some(now);
            }
            self.try_suspend(die, dies, q, ftl);
        } else if self.programs_waiting(die, dies) {
            self.try_suspend(die, dies, q, ftl);
        }
    }

    /// Whether host programs wait that may suspend `die`'s erase.
    #[inline]
    fn programs_waiting(&self, die: u32, dies: &DieExecutor) -> bool {
        self.programs_preempt
            && self.long[die as usize].kind == OpKind::Erase
            && dies.sched.host_program_waiting(die)
    }

    /// A host program was queued on busy `die` (only with `programs_preempt`): if an erase
    /// runs, the policy decides as for a read.
    pub fn program_arrived(
        &mut self,
        die: u32,
        dies: &mut DieExecutor,
        q: &mut EventQueue<Event>,
        ftl: &Ftl,
    ) {
        let lo = &self.long[die as usize];
        if lo.phase == Phase::Running && lo.kind == OpKind::Erase && !lo.pending {
            self.try_suspend(die, dies, q, ftl);
        }
    }

    /// A read was queued on busy `die`: if an erase or program runs, the policy decides.
    pub fn read_arrived(
        &mut self,
        die: u32,
        dies: &mut DieExecutor,
        q: &mut EventQueue<Event>,
        ftl: &Ftl,
    ) {
        let now = q.now_ns();
        let lo = &mut self.long[die as usize];
        if lo.phase != Phase::Running {
            return;
        }
        if lo.kind == OpKind::Erase && lo.wait_since_ns.is_none() {
            lo.wait_since_ns = Some(now);
        }
        if !lo.pending {
            self.try_suspend(die, dies, q, ftl);
        }
    }

    /// Ask the policy where `die`'s running erase (or program) should stop for the reads
    /// (or, erases with `programs_preempt`, host programs) waiting on it, and schedule the
    /// suspension.
    fn try_suspend(
        &mut self,
        die: u32,
        dies: &mut DieExecutor,
        q: &mut EventQueue<Event>,
        ftl: &Ftl,
    ) {
        let now = q.now_ns();
        let lo = &self.long[die as usize];
        if lo.phase != Phase::Running || lo.pending {
            return;
        }
        let pos = lo.position(now);
        let target = if lo.kind == OpKind::Erase {
            let p = &self.policy;
            if !p.suspends() {
                return;
            }
            if p.guarded()
                && ((self.max_suspensions_per_erase > 0
                    && lo.suspensions >= self.max_suspensions_per_erase)
                    || (self.max_erase_postponement_ns > 0
                        && lo.postponed_ns >= self.max_erase_postponement_ns))
            {
                return;
            }
            let v = EraseView {
                pos_ns: pos,
                last_suspend_pos_ns: lo.last_suspend_pos_ns,
                loop_ns: lo.loop_ns,
                loops: lo.loops,
                pe_cycles: lo.pe_cycles,
            };
            let SuspendDecision::SuspendAt { pos_ns } = p.decide(&v) else {
                return;
            };
            // Urgent GC is not preemptible, except by I-ES, which has no guard at all.
            if p.guarded() && ftl.pressure().die_urgent(die) {
                return;
            }
            pos_ns
        } else {
            let v = EraseView {
                pos_ns: pos,
                last_suspend_pos_ns: lo.last_suspend_pos_ns,
                loop_ns: lo.loop_ns,
                loops: 1,
                pe_cycles: 0,
            };
            match next_grid_point(&v, lo.points) {
                Some(g) => g,
                None => return,
            }
        };
        debug_assert!(target >= pos && target < lo.total_ns());
        let at = lo.work_start_ns + (target - lo.work_done_ns);
        let gen = dies.gen(die);
        let lo = &mut self.long[die as usize];
        lo.pending = true;
        lo.pending_pos_ns = target;
        q.schedule_at(
            at,
            Event::Suspend {
                die: die as u16,
                gen,
            },
        );
    }

    /// The running erase or program reached its suspension point: stop, pay the penalty.
    pub fn on_suspend(
        &mut self,
        die: u32,
        gen: u32,
        dies: &mut DieExecutor,
        q: &mut EventQueue<Event>,
        ftl: &Ftl,
    ) {
        let di = die as usize;
        if gen != dies.gen(die) || self.long[di].phase != Phase::Running || !self.long[di].pending {
            return;
        }
        let now = q.now_ns();
        let late = self.policy.serves_late_reads();
        let queued = dies.sched.host_reads_queued(die);
        let mode = self.long[di].mode;
        let kind = self.long[di].kind;
        let penalty = ftl.timing().suspend_penalty_ns(kind, mode);
        let programs = match self.programs_preempt {
            _ if kind != OpKind::Erase => 0,
            false => 0,
            true if late => u32::MAX,
            true => dies.sched.host_programs_queued(die),
        };
        let lo = &mut self.long[di];
        let pos = lo.pending_pos_ns;
        debug_assert_eq!(pos, lo.position(now), "suspension off its point");
        lo.pending = false;
        lo.work_done_ns = pos;
        lo.exec_ns += now - lo.seg_start_ns + penalty;
        lo.penalties_ns += penalty;
        lo.suspensions += 1;
        lo.last_suspend_pos_ns = Some(pos);
        lo.phase = Phase::Penalty;
        lo.suspended_at_ns = now;
        if lo.kind == OpKind::Erase {
            let l = loop_of_position(pos, lo.loop_ns).min(lo.loops as usize - 1);
            lo.per_loop[l] += 1;
            lo.read_budget = if late { u32::MAX } else { queued };
            lo.program_budget = programs;
            self.summary.erase_suspensions += 1;
        } else {
            lo.read_budget = queued;
            lo.program_budget = 0;
            self.summary.program_suspensions += 1;
        }
        self.summary.penalty_ns_total += penalty;
        let g = dies.bump_gen(die);
        dies.sched.add_busy(die, now - dies.started_ns[di]);
        dies.started_ns[di] = now;
        q.schedule_at(
            now + penalty,
            Event::DieDone {
                die: die as u16,
                gen: g,
            },
        );
    }

    /// A `DieDone` of `die`: if it ends a suspension penalty, the die may now serve reads
    /// (returns true; the caller starts it).
    pub fn penalty_done(
        &mut self,
        die: u32,
        dies: &mut DieExecutor,
        q: &EventQueue<Event>,
    ) -> bool {
        let di = die as usize;
        let lo = &mut self.long[di];
        if lo.phase != Phase::Penalty {
            return false;
        }
        let now = q.now_ns();
        lo.phase = Phase::Suspended;
        if let Some(t) = lo.wait_since_ns.take() {
            self.summary.erase_read_delay_max_ns =
                self.summary.erase_read_delay_max_ns.max(now - t);
        }
        dies.sched.release(die, now - dies.started_ns[di]);
        true
    }

    /// A die with a suspended erase or program is free: serve a waiting read if the
    /// suspension allows, else a waiting host program if it allows, otherwise resume.
    pub fn serve_or_resume(
        &mut self,
        die: u32,
        dies: &mut DieExecutor,
        q: &mut EventQueue<Event>,
        ftl: &Ftl,
    ) {
        let di = die as usize;
        let lo = &self.long[di];
        let (reads, programs) = (lo.read_budget, lo.program_budget);
        if let Some(n) = dies.start_reads(die, reads, q, ftl.timing()) {
            let lo = &mut self.long[di];
            if lo.read_budget != u32::MAX {
                lo.read_budget -= n;
            }
        } else if let Some(n) = dies.start_programs(die, programs, q, ftl.timing()) {
            let lo = &mut self.long[di];
            if lo.program_budget != u32::MAX {
                lo.program_budget -= n;
            }
        } else {
            self.resume(die, dies, q, ftl);
        }
    }

    /// Resume `die`'s suspended erase or program with exactly its remaining work.
    fn resume(&mut self, die: u32, dies: &mut DieExecutor, q: &mut EventQueue<Event>, ftl: &Ftl) {
        let di = die as usize;
        let now = q.now_ns();
        let lo = &mut self.long[di];
        let ramp = ftl.timing().resume_penalty_ns(lo.mode);
        lo.phase = Phase::Running;
        lo.penalties_ns += ramp;
        lo.postponed_ns += now - lo.suspended_at_ns + ramp;
        lo.seg_start_ns = now;
        lo.work_start_ns = now + ramp;
        let end = lo.work_start_ns + (lo.total_ns() - lo.work_done_ns);
        let batch = lo.batch;
        let erase = lo.kind == OpKind::Erase;
        self.summary.penalty_ns_total += ramp;
        dies.sched.resume(die, batch);
        dies.started_ns[di] = now;
        let gen = dies.gen(die);
        q.schedule_at(
            end,
            Event::DieDone {
                die: die as u16,
                gen,
            },
        );
        // Reads (or host programs) that arrived during the suspension and were not served.
        if dies.sched.host_read_waiting(die) {
            if erase {
                self.long[di].wait_since_ns = Some(now);
            }
            self.try_suspend(die, dies, q, ftl);
        } else if self.programs_waiting(die, dies) {
            self.try_suspend(die, dies, q, ftl);
        }
    }

    /// A `DieDone` of `die` that ends its running erase or program: account for it.
    pub fn finish_if_long(
        &mut self,
        die: u32,
        dies: &mut DieExecutor,
        q: &EventQueue<Event>,
        ftl: &mut Ftl,
    ) {
        let di = die as usize;
        if self.long[di].phase != Phase::Running {
            return;
        }
        let now = q.now_ns();
        dies.bump_gen(die);
        let lo = &mut self.long[di];
        lo.phase = Phase::Idle;
        lo.exec_ns += now - lo.seg_start_ns;
        if lo.kind != OpKind::Erase {
            return;
        }
        let lo = *lo;
        if let Some(t) = lo.wait_since_ns {
            self.summary.erase_read_delay_max_ns =
                self.summary.erase_read_delay_max_ns.max(now - t);
        }
        let per_loop = &lo.per_loop[..lo.loops as usize];
        for op in lo.batch.ops() {
            let pe = ftl.erase_counts()[op.block.idx()];
            self.summary.erases += 1;
            for &c in per_loop {
                self.summary.count_loop(c as u32);
            }
            let (exceeded, extra) = self.reliability.assess(per_loop, pe);
            self.summary.erases_exceeding_safe_limit += exceeded as u64;
            self.summary.extra_rber_sum += extra;
            // The RBER model's erase-suspension term for the block's next data.
            ftl.set_suspension_excess(op.block, extra);
        }
        self.summary.erases_suspended += (lo.suspensions > 0) as u64;
        self.summary.max_suspensions_per_erase =
            self.summary.max_suspensions_per_erase.max(lo.suspensions);
        self.summary.erase_postponement_max_ns =
            self.summary.erase_postponement_max_ns.max(lo.postponed_ns);
        if let Some(trace) = self.erase_trace.as_mut() {
            trace.push(EraseRecord {
                die,
                block: lo.batch.ops[0].block.into(),
                blocks: lo.batch.len as u32,
                pe_cycles: lo.pe_cycles,
                loops: lo.loops,
                loop_ns: lo.loop_ns,
                command_ns: dies.command_ns,
                start_ns: lo.started_ns,
                end_ns: now,
                exec_ns: lo.exec_ns,
                penalties_ns: lo.penalties_ns,
                suspensions: lo.suspensions,
                suspensions_per_loop: per_loop.to_vec(),
            });
        }
    }
}
