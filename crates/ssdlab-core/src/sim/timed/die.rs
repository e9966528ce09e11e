//! Die execution: choosing and running a die's next batch, and its completion.

use super::*;

impl TimedSim<'_> {
    pub(super) fn gc_pressure(&self, die: u32) -> GcPressure {
        let ppd = self.ftl.geo.planes_per_die;
        let planes = die * ppd..(die + 1) * ppd;
        if planes.clone().any(|p| self.ftl.gc_urgent(p)) {
            GcPressure::Urgent
        } else if planes.into_iter().any(|p| self.ftl.gc_pressing(p)) {
            GcPressure::Pressing
        } else {
            GcPressure::Normal
        }
    }

    pub(super) fn die_urgent(&self, die: u32) -> bool {
        let ppd = self.ftl.geo.planes_per_die;
        (die * ppd..(die + 1) * ppd).any(|p| self.ftl.gc_urgent(p))
    }

    pub(super) fn start_die(&mut self, die: u32) {
        if self.sched.dies[die as usize].busy {
            return;
        }
        if self.long[die as usize].phase == Phase::Suspended {
            self.serve_or_resume(die);
            return;
        }
        let writes_blocked = !self.buffer_waiters.is_empty();
        let Some(batch) = self
            .sched
            .start_next(die, self.gc_pressure(die), writes_blocked)
        else {
            return;
        };
        let now = self.q.now_ns();
        self.die_started_ns[die as usize] = now;
        let first = batch.ops[0];
        let m = first.mode.index();
        let gen = self.gen[die as usize].0;
        match first.kind {
            OpKind::Read => self.q.schedule_at(
                now + self.command_ns + self.ftl.timing.read_ns[m],
                Event::Sensed { die: die as u16 },
            ),
            OpKind::Program => {
                let t = &self.ftl.timing;
                let ch = self.ftl.geo.channel_of_die(die);
                let xfer = t.transfer_ns(self.page_bytes * batch.len as u64);
                let end = self.channels.reserve(ch, now + self.command_ns, xfer);
                let prog = t.program_ns[m];
                let points = t.program_loops[m];
                self.q.schedule_at(
                    end + prog,
                    Event::DieDone {
                        die: die as u16,
                        gen,
                    },
                );
                if self.program_suspend {
                    self.begin_long(die, batch, end, prog, 1, points, 0);
                }
            }
            OpKind::Erase => {
                let loops = batch
                    .ops()
                    .iter()
                    .map(|o| o.loops)
                    .max()
                    .unwrap_or(1)
                    .max(1) as u32;
                let loop_ns = self.ftl.timing.erase_loop_ns[m];
                let pe = batch
                    .ops()
                    .iter()
                    .map(|o| self.ftl.blocks.erase_count[o.block as usize])
                    .max()
                    .unwrap_or(0);
                let work_start = now + self.command_ns;
                self.q.schedule_at(
                    work_start + loops as u64 * loop_ns,
                    Event::DieDone {
                        die: die as u16,
                        gen,
                    },
                );
                self.begin_long(die, batch, work_start, loop_ns, loops, 0, pe);
            }
        }
    }

    pub(super) fn on_sensed(&mut self, die: u32) {
        let batch = &self.sched.dies[die as usize].running;
        let units: u64 = batch.ops().iter().map(|o| o.units as u64).sum();
        let ch = self.ftl.geo.channel_of_die(die);
        let end = self.channels.reserve(
            ch,
            self.q.now_ns(),
            self.ftl.timing.transfer_ns(units * self.unit_bytes),
        );
        let gen = self.gen[die as usize].0;
        self.q.schedule_at(
            end,
            Event::DieDone {
                die: die as u16,
                gen,
            },
        );
    }

    pub(super) fn on_die_done(&mut self, die: u32, gen: u32) -> Result<()> {
        let di = die as usize;
        if gen != self.gen[di].0 {
            return Ok(()); // the operation was suspended: this completion is void
        }
        let now = self.q.now_ns();
        match self.long[di].phase {
            Phase::Penalty => {
                // Suspension penalty paid: the die may serve reads now.
                let lo = &mut self.long[di];
                lo.phase = Phase::Suspended;
                if let Some(t) = lo.wait_since_ns.take() {
                    self.susp.erase_read_delay_max_ns =
                        self.susp.erase_read_delay_max_ns.max(now - t);
                }
                self.sched.release(die, now - self.die_started_ns[di]);
                self.wake.idle.push(die);
                return Ok(());
            }
            Phase::Running => self.finish_long(die),
            Phase::Suspended | Phase::Idle => {}
        }
        let batch = self
            .sched
            .finish(die, now - self.die_started_ns[die as usize]);
        let mut freed_buffer = false;
        for op in batch.ops() {
            match (op.kind, op.cause) {
                (OpKind::Read, _) if op.tag != NONE => self.op_done(op.tag)?,
                (OpKind::Program, Cause::Host) => {
                    self.buffer.program_done(op.units, op.tag);
                    self.host_programs_queued[die as usize] -= 1;
                    freed_buffer = true;
                }
                (OpKind::Erase, _) => {
                    let mut sink = queue_sink!(self);
                    self.ftl.erase_done(op.block, &mut sink)?;
                    let plane = self.ftl.geo.plane_of_block(op.block);
                    self.maybe_gc(plane)?;
                    self.pump_buffer()?;
                }
                _ => {}
            }
        }
        if freed_buffer {
            self.serve_buffer_waiters()?;
            // Complete the flushes whose mark is now durable, keeping the others in order.
            let durable = self.buffer.durable_seq();
            let mut kept = 0;
            for i in 0..self.drain_waiters.len() {
                let (id, mark) = self.drain_waiters[i];
                if mark <= durable {
                    self.finish_after_buffer(id);
                } else {
                    self.drain_waiters[kept] = (id, mark);
                    kept += 1;
                }
            }
            self.drain_waiters.truncate(kept);
        }
        self.wake.idle.push(die);
        Ok(())
    }
}
