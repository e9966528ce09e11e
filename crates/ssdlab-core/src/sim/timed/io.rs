//! Host side of the timed mode: request submission, the write buffer, GC triggers.

use super::*;

impl TimedSim<'_> {
    pub(super) fn submit(&mut self, f: usize, r: HostRequest) -> Result<()> {
        let span = split(&r, self.ftl.geo.unit_bytes, self.ftl.logical_units())?;
        self.host.count(r.op, r.size_bytes);
        self.flows[f].in_flight += 1;
        let now = self.q.now_ns();
        let id = self.reqs.insert(Request {
            flow: f as u16,
            op: r.op,
            stage: Stage::Reading,
            submit_ns: now,
            bytes: r.size_bytes,
            span,
            pending_ops: 0,
        });
        match r.op {
            HostOp::Read => {
                let n = self.read_units(span, id)?;
                if n == 0 {
                    self.finish_after_buffer(id);
                }
            }
            HostOp::Write => {
                self.host.write_units += span.count as u64;
                let mut n = 0;
                let last = span.first + span.count - 1;
                for (partial, lpn) in [
                    (span.head_partial, span.first),
                    (span.tail_partial && last != span.first, last),
                ] {
                    if partial
                        && self.buffer.lookup(lpn).is_none()
                        && self.ftl.map.lookup(lpn) != NONE
                    {
                        self.host.rmw_reads += 1;
                        n += self.read_units(
                            UnitSpan {
                                first: lpn,
                                count: 1,
                                head_partial: false,
                                tail_partial: false,
                            },
                            id,
                        )?;
                    }
                }
                if n == 0 {
                    self.admit_write(id)?;
                }
            }
            HostOp::Trim => {
                for lpn in span.lpns() {
                    self.buffer.discard(lpn);
                    self.ftl.trim(lpn);
                }
                self.finish_after_buffer(id);
            }
            HostOp::Flush => {
                // Covers the units written before it; later writes do not delay it.
                let mark = self.buffer.end_seq();
                if self.buffer.durable_seq() >= mark {
                    self.finish_after_buffer(id);
                } else {
                    self.reqs.get_mut(id).stage = Stage::AwaitingDrain;
                    self.drain_waiters.push((id, mark));
                    self.pump_buffer()?;
                }
            }
        }
        Ok(())
    }

    /// Issue NAND reads for the units of `span` not in the buffer; returns how many.
    pub(super) fn read_units(&mut self, span: UnitSpan, id: u32) -> Result<u32> {
        let mut sink = queue_sink!(self);
        let buffer = &self.buffer;
        let out = self
            .ftl
            .read_units(span.lpns(), |l| buffer.lookup(l), id, &mut sink)?;
        self.host.buffer_read_hits += out.buffer_hits as u64;
        self.host.unmapped_read_units += out.unmapped as u64;
        self.reqs.get_mut(id).pending_ops += out.nand_reads;
        // A read queued behind a running erase or program: the suspend policy decides.
        while let Some(die) = self.wake.read_waiting.pop() {
            let now = self.q.now_ns();
            let lo = &mut self.long[die as usize];
            if lo.phase != Phase::Running {
                continue;
            }
            if lo.kind == OpKind::Erase && lo.wait_since_ns.is_none() {
                lo.wait_since_ns = Some(now);
            }
            if !lo.pending {
                self.try_suspend(die);
            }
        }
        Ok(out.nand_reads)
    }

    pub(super) fn finish_after_buffer(&mut self, id: u32) {
        self.reqs.get_mut(id).stage = Stage::Completing;
        self.q
            .schedule_in(self.buffer_access_ns, Event::Complete { req: id });
    }

    /// Put a write's units into the buffer as space allows (oldest waiting write first).
    pub(super) fn admit_write(&mut self, id: u32) -> Result<()> {
        self.reqs.get_mut(id).stage = Stage::AwaitingBuffer;
        self.buffer_waiters.push_back(id);
        if self.buffer_waiters.len() == 1 {
            self.serve_buffer_waiters()?;
        }
        Ok(())
    }

    pub(super) fn serve_buffer_waiters(&mut self) -> Result<()> {
        while let Some(&id) = self.buffer_waiters.front() {
            let r = *self.reqs.get(id);
            // `pending_ops` counts the units already inserted while the write waits here.
            let mut done = r.pending_ops;
            while done < r.span.count {
                let lpn = r.span.first + done;
                if self.buffer.lookup(lpn).is_none() && self.buffer.free_units() == 0 {
                    break;
                }
                let v = self.ftl.new_version(lpn);
                self.buffer.insert(lpn, v);
                done += 1;
                if self.buffer.pending_units() >= self.ftl.geo.slots_per_page {
                    self.pump_buffer()?;
                }
            }
            self.reqs.get_mut(id).pending_ops = done;
            if done < r.span.count {
                break;
            }
            self.buffer_waiters.pop_front();
            self.reqs.get_mut(id).pending_ops = 0;
            self.finish_after_buffer(id);
        }
        self.pump_buffer()
    }

    /// Program full pages from the buffer (and partial ones when a flush asked).
    pub(super) fn pump_buffer(&mut self) -> Result<()> {
        let spp = self.ftl.geo.slots_per_page;
        let integrity = self.ftl.integrity.is_some();
        // A flush forces out partial pages until every unit before its mark is in flight.
        let flush_mark = if self.settling {
            u64::MAX
        } else {
            self.drain_waiters.iter().map(|w| w.1).max().unwrap_or(0)
        };
        let limit = HOST_PROGRAMS_PER_PLANE * self.ftl.geo.planes_per_die;
        while self.buffer.pending_units() >= spp
            || (self.buffer.pending_units() > 0 && self.buffer.head_seq() < flush_mark)
        {
            if self.host_programs_queued.iter().all(|&q| q >= limit) {
                break; // every die has its fill of host programs; a completion calls again
            }
            let mut lpns = [0u32; MAX_SLOTS_PER_PAGE];
            let mut vers = [0u32; MAX_SLOTS_PER_PAGE];
            let n = self
                .buffer
                .peek_page(&mut lpns[..spp as usize], &mut vers[..spp as usize]);
            let mut sink = queue_sink!(self);
            let versions: &[u32] = if integrity { &vers[..n] } else { &[] };
            let token = self.buffer.next_token();
            let (queued, ppd) = (&self.host_programs_queued, self.ftl.geo.planes_per_die);
            let has_room = |plane: u32| queued[(plane / ppd) as usize] < limit;
            let Some(plane) =
                self.ftl
                    .write_host_page(&lpns[..n], versions, token, &mut sink, has_room)
            else {
                // No plane can take the page. If only the per-die limits are in the way, a
                // program completion will call again. Otherwise planes are down to their
                // reserve; a plane whose GC found no victim when it last looked may have one
                // now (writes elsewhere invalidated its data): look again everywhere, or
                // host writes could wait for ever.
                if self.host_programs_queued.iter().any(|&q| q < limit) {
                    for plane in 0..self.ftl.geo.planes {
                        self.maybe_gc(plane)?;
                    }
                }
                break;
            };
            self.buffer.commit_page(n);
            self.host_programs_queued[(plane / ppd) as usize] += 1;
            self.maybe_gc(plane)?;
        }
        Ok(())
    }

    /// Start GC on `plane` if it is below the soft threshold and not already collecting.
    pub(super) fn maybe_gc(&mut self, plane: u32) -> Result<()> {
        if !self.ftl.gc_in_progress(plane) && self.ftl.wants_gc(plane) {
            let mut sink = queue_sink!(self);
            self.ftl.collect(plane, Cause::Gc, &mut sink)?;
        }
        Ok(())
    }
}
