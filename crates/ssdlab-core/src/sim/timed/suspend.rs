//! Long operations (erases, programs) with suspension: position tracking, suspend
//! points, serving reads while suspended, resume (spec 01, docs/erase-suspend.md).

use super::*;

/// What a die does with its erase or program (the "long operation").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// No long operation (idle or a read).
    Idle,
    /// The long operation runs.
    Running,
    /// Suspended: paying the suspend penalty.
    Penalty,
    /// Suspended: the die serves host reads.
    Suspended,
}

/// The erase or program a die runs or has suspended, with its exact progress.
#[derive(Clone, Copy)]
pub(super) struct LongOp {
    pub(super) phase: Phase,
    pub(super) kind: OpKind,
    pub(super) batch: Batch,
    pub(super) mode: usize,
    pub(super) started_ns: u64,
    /// Start of the current running segment (the operation's start or its last resume).
    pub(super) seg_start_ns: u64,
    /// When the array work of the current segment starts (after command / transfer / ramp).
    pub(super) work_start_ns: u64,
    /// Array work done before the current segment.
    pub(super) work_done_ns: u64,
    pub(super) loop_ns: u64,
    pub(super) loops: u32,
    /// Programs: ISPP loops (suspension points); erases: unused.
    pub(super) points: u32,
    pub(super) pe_cycles: u32,
    pub(super) exec_ns: u64,
    pub(super) penalties_ns: u64,
    pub(super) suspensions: u32,
    pub(super) last_suspend_pos_ns: Option<u64>,
    /// A suspension is scheduled at work position `pending_pos_ns`.
    pub(super) pending: bool,
    pub(super) pending_pos_ns: u64,
    pub(super) suspended_at_ns: u64,
    pub(super) postponed_ns: u64,
    /// Reads the current suspension may still serve (`u32::MAX`: unbounded, I-ES).
    pub(super) read_budget: u32,
    /// First host read waiting on the running erase since it last became readable.
    pub(super) wait_since_ns: Option<u64>,
    pub(super) per_loop: [u16; MAX_ERASE_LOOPS as usize],
}

impl LongOp {
    pub(super) fn total_ns(&self) -> u64 {
        self.loop_ns * self.loops as u64
    }
    pub(super) fn position(&self, now: u64) -> u64 {
        (self.work_done_ns + now.saturating_sub(self.work_start_ns)).min(self.total_ns())
    }
}

impl TimedSim<'_> {
    /// Track the erase or program `batch` that just started on `die`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn begin_long(
        &mut self,
        die: u32,
        batch: Batch,
        work_start_ns: u64,
        loop_ns: u64,
        loops: u32,
        points: u32,
        pe_cycles: u32,
    ) {
        let now = self.q.now_ns();
        let lo = &mut self.long[die as usize];
        lo.phase = Phase::Running;
        lo.kind = batch.kind();
        lo.batch = batch;
        lo.mode = batch.ops[0].mode.index();
        lo.started_ns = now;
        lo.seg_start_ns = now;
        lo.work_start_ns = work_start_ns;
        lo.work_done_ns = 0;
        lo.loop_ns = loop_ns;
        lo.loops = loops;
        lo.points = points;
        lo.pe_cycles = pe_cycles;
        lo.exec_ns = 0;
        lo.penalties_ns = 0;
        lo.suspensions = 0;
        lo.last_suspend_pos_ns = None;
        lo.pending = false;
        lo.postponed_ns = 0;
        lo.wait_since_ns = None;
        lo.per_loop[..loops as usize].fill(0);
        // Host reads already waiting (urgent GC went first, or no read priority).
        if self.sched.host_read_waiting(die) {
            if lo.kind == OpKind::Erase {
                lo.wait_since_ns = Some(now);
            }
            self.try_suspend(die);
        }
    }

    /// Ask the policy where `die`'s running erase (or program) should stop for the host
    /// reads waiting on it, and schedule the suspension.
    pub(super) fn try_suspend(&mut self, die: u32) {
        let now = self.q.now_ns();
        let lo = &self.long[die as usize];
        if lo.phase != Phase::Running || lo.pending {
            return;
        }
        let pos = lo.position(now);
        let target = if lo.kind == OpKind::Erase {
            let p = &self.sched.suspend;
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
            // Urgent GC is not preemptible.
            if self.die_urgent(die) {
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
        let gen = self.gen[die as usize].0;
        let lo = &mut self.long[die as usize];
        lo.pending = true;
        lo.pending_pos_ns = target;
        self.q.schedule_at(
            at,
            Event::Suspend {
                die: die as u16,
                gen,
            },
        );
    }

    /// The running erase or program reached its suspension point: stop, pay the penalty.
    pub(super) fn on_suspend(&mut self, die: u32, gen: u32) {
        let di = die as usize;
        if gen != self.gen[di].0 || self.long[di].phase != Phase::Running || !self.long[di].pending
        {
            return;
        }
        let now = self.q.now_ns();
        let late = self.sched.suspend.serves_late_reads();
        let queued = self.sched.host_reads_queued(die);
        let penalty = self.ftl.timing.suspend_penalty_ns[self.long[di].mode];
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
            self.susp.erase_suspensions += 1;
        } else {
            lo.read_budget = queued;
            self.susp.program_suspensions += 1;
        }
        self.susp.penalty_ns_total += penalty;
        let g = self.gen[di].bump().0;
        self.sched.add_busy(die, now - self.die_started_ns[di]);
        self.die_started_ns[di] = now;
        self.q.schedule_at(
            now + penalty,
            Event::DieDone {
                die: die as u16,
                gen: g,
            },
        );
    }

    /// A die with a suspended erase or program is free: serve a waiting host read if the
    /// suspension allows, otherwise resume.
    pub(super) fn serve_or_resume(&mut self, die: u32) {
        let di = die as usize;
        let lo = &self.long[di];
        let budget =
            if lo.kind == OpKind::Erase && lo.read_budget == u32::MAX && self.die_urgent(die) {
                0
            } else {
                lo.read_budget
            };
        if let Some(batch) = self.sched.start_reads(die, budget) {
            let lo = &mut self.long[di];
            if lo.read_budget != u32::MAX {
                lo.read_budget -= batch.len as u32;
            }
            let now = self.q.now_ns();
            self.die_started_ns[di] = now;
            let m = batch.ops[0].mode.index();
            self.q.schedule_at(
                now + self.command_ns + self.ftl.timing.read_ns[m],
                Event::Sensed { die: die as u16 },
            );
        } else {
            self.resume(die);
        }
    }

    /// Resume `die`'s suspended erase or program with exactly its remaining work.
    pub(super) fn resume(&mut self, die: u32) {
        let di = die as usize;
        let now = self.q.now_ns();
        let lo = &mut self.long[di];
        let ramp = self.resume_penalty_ns[lo.mode];
        lo.phase = Phase::Running;
        lo.penalties_ns += ramp;
        lo.postponed_ns += now - lo.suspended_at_ns + ramp;
        lo.seg_start_ns = now;
        lo.work_start_ns = now + ramp;
        let end = lo.work_start_ns + (lo.total_ns() - lo.work_done_ns);
        let batch = lo.batch;
        let erase = lo.kind == OpKind::Erase;
        self.susp.penalty_ns_total += ramp;
        self.sched.resume(die, batch);
        self.die_started_ns[di] = now;
        let gen = self.gen[di].0;
        self.q.schedule_at(
            end,
            Event::DieDone {
                die: die as u16,
                gen,
            },
        );
        // Reads that arrived during the suspension and were not served.
        if self.sched.host_read_waiting(die) {
            if erase {
                self.long[di].wait_since_ns = Some(now);
            }
            self.try_suspend(die);
        }
    }

    /// `die`'s erase or program finished: account for it.
    pub(super) fn finish_long(&mut self, die: u32) {
        let di = die as usize;
        let now = self.q.now_ns();
        self.gen[di].bump();
        let lo = &mut self.long[di];
        lo.phase = Phase::Idle;
        lo.exec_ns += now - lo.seg_start_ns;
        if lo.kind != OpKind::Erase {
            return;
        }
        let lo = *lo;
        if let Some(t) = lo.wait_since_ns {
            self.susp.erase_read_delay_max_ns = self.susp.erase_read_delay_max_ns.max(now - t);
        }
        let per_loop = &lo.per_loop[..lo.loops as usize];
        for op in lo.batch.ops() {
            let pe = self.ftl.blocks.erase_count[op.block as usize];
            self.susp.erases += 1;
            for &c in per_loop {
                self.susp.count_loop(c as u32);
            }
            let (exceeded, extra) = self.reliability.assess(per_loop, pe);
            self.susp.erases_exceeding_safe_limit += exceeded as u64;
            self.susp.extra_rber_sum += extra;
        }
        self.susp.erases_suspended += (lo.suspensions > 0) as u64;
        self.susp.max_suspensions_per_erase =
            self.susp.max_suspensions_per_erase.max(lo.suspensions);
        self.susp.erase_postponement_max_ns =
            self.susp.erase_postponement_max_ns.max(lo.postponed_ns);
        if let Some(trace) = self.erase_trace.as_mut() {
            trace.push(EraseRecord {
                die,
                block: lo.batch.ops[0].block,
                blocks: lo.batch.len as u32,
                pe_cycles: lo.pe_cycles,
                loops: lo.loops,
                loop_ns: lo.loop_ns,
                command_ns: self.command_ns,
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
