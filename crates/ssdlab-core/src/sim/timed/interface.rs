//! The host interface of the timed mode (`[device.host_interface]`): NVMe submission
//! queues (one per flow), the controller's arbitration and command processing, and the
//! PCIe link every command's packets and data cross.
//!
//! A command's steps, each a message or a data transfer on one direction of the link
//! (`host::link`: a message's end is known when it is sent, a transfer shares the
//! direction and ends with an event) or the controller's processor:
//!
//! 1. the host writes the submission entry and rings the doorbell (a message down);
//! 2. the command waits in its flow's submission queue until the controller has a free
//!    command slot (`max_commands_in_flight`) and the arbiter picks its queue;
//! 3. the controller fetches the entry: a memory-read request (a message up), then the
//!    64-byte entry (a message down, after the doorbell);
//! 4. the controller processes it (`command_ns`, one command at a time): steps 1–4 end
//!    in one event, `Processed`, whose time is known at the fetch;
//! 5. a write or zone append fetches its data (read requests up as a message, data down
//!    as a transfer: `host::link::Payload`), then goes to the front end;
//!    other commands go to the front end at once (`HostFrontEnd::dispatch`);
//! 6. when the front end is done, a read's data and the completion entry with its MSI-X
//!    interrupt go up (a transfer); a write's (trim's, flush's) completion goes up (a
//!    message, its arrival an event `Completion`);
//! 7. the host sees the completion: the request's latency ends, the slot is free.
//!
//! Requests larger than `max_data_transfer_bytes` are split into commands as the host
//! driver splits them; the request completes with its last command.

use super::{Cx, Event};
use crate::config::HostInterfaceConfig;
use crate::flash::NONE;
use crate::ftl::zones::ZoneError;
use crate::host::link::{Dir, Direction, Payload, Wire, SQE_BYTES};
use crate::host::UnitSpan;
use crate::policy::arbitration::{ArbiterCtx, ArbitrationPolicy};
use crate::stats::HostCounters;
use ssdlab_workload::{HostOp, HostRequest};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// In its submission queue (the doorbell sent).
    Queued,
    /// Its entry on the way and on the controller's processor.
    Processing,
    WriteData,
    /// With the front end.
    Device,
    Completion,
}

#[derive(Clone, Copy, Debug)]
struct Cmd {
    flow: u16,
    step: Step,
    req: HostRequest,
    /// The units of a whole request (split once, at submission); a part's are split
    /// when it is dispatched.
    span: UnitSpan,
    /// The request this command is a part of (`NONE`: the whole request).
    parent: u32,
    submit_ns: u64,
    down_bytes: u64,
    up_bytes: u64,
    /// Why the device failed the command, if it did.
    error: Option<ZoneError>,
}

impl Cmd {
    /// Its units if it is a whole request (`None`: a part, split when dispatched).
    #[inline]
    fn whole_span(&self) -> Option<UnitSpan> {
        (self.parent == NONE).then_some(self.span)
    }
}

/// A request split into several commands.
#[derive(Clone, Copy, Debug)]
struct Parent {
    req: HostRequest,
    span: UnitSpan,
    submit_ns: u64,
    left: u32,
    /// A part's failure fails the request.
    error: Option<ZoneError>,
    /// Of the parts completed: the bytes of those that succeeded, whether the first is
    /// one of them, how many failed ([`HostInterface::count_taken`]).
    done_bytes: u64,
    first_done: bool,
    failed_parts: u32,
}

/// A slab of reusable slots.
struct Slab<T> {
    slots: Vec<T>,
    free: Vec<u32>,
}

impl<T: Copy> Slab<T> {
    fn new() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }

    fn insert(&mut self, v: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = v;
                i
            }
            None => {
                self.slots.push(v);
                (self.slots.len() - 1) as u32
            }
        }
    }

    fn remove(&mut self, i: u32) -> T {
        self.free.push(i);
        self.slots[i as usize]
    }

    fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The values held, with their ids (figures taken mid-phase: not for hot paths).
    fn live(&self) -> impl Iterator<Item = (u32, &T)> {
        let mut free = vec![false; self.slots.len()];
        for &i in &self.free {
            free[i as usize] = true;
        }
        (0u32..)
            .zip(&self.slots)
            .zip(free)
            .filter(|(_, f)| !f)
            .map(|(v, _)| v)
    }
}

/// Per-flow traffic over the interface.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowTraffic {
    pub commands: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub link_down_bytes: u64,
    pub link_up_bytes: u64,
}

/// What the front end must do for a command.
#[derive(Clone, Copy, Debug)]
pub(super) enum Action {
    /// Hand the command to the device (decode, FTL): flow, request, its units (`None`:
    /// a part of a split request, split now), command id.
    Dispatch(u16, HostRequest, Option<UnitSpan>, u32),
    /// The host saw the completion of (the last command of) a request: flow, request,
    /// its units, host submission time, the status it failed with (if it did), that
    /// command's id.
    Completed(u16, HostRequest, UnitSpan, u64, Option<ZoneError>, u32),
}

/// Wire bytes of the messages every command sends (computed once: no division per
/// message).
#[derive(Clone, Copy, Debug)]
struct Messages {
    doorbell: u64,
    /// The submission entry's read request (up) and the entry (down).
    entry_request: u64,
    entry: u64,
    /// A completion entry with its interrupt.
    completion: u64,
}

pub(super) struct HostInterface {
    wire: Wire,
    messages: Messages,
    /// The last data size asked for and its wire bytes (commands mostly have one size).
    last_data: (u64, u64),
    dirs: [Direction; 2],
    gens: [u32; 2],
    /// The time of each direction's scheduled event (`u64::MAX`: none).
    due_ns: [u64; 2],
    arbiter: ArbitrationPolicy,
    /// Per flow: commands whose doorbell arrived, waiting to be fetched.
    queues: Vec<VecDeque<u32>>,
    waiting: Vec<u32>,
    /// Commands in all the queues.
    queued: u32,
    slots_used: u32,
    max_slots: u32,
    command_ns: u64,
    processor_free_ns: u64,
    max_transfer_bytes: u64,
    cmds: Slab<Cmd>,
    parents: Slab<Parent>,
    done: Vec<u32>,
    /// What the front end must do, in order ([`HostInterface::next_action`]).
    actions: VecDeque<Action>,
    pub split_requests: u64,
    pub traffic: Vec<FlowTraffic>,
}

impl HostInterface {
    /// The interface for `flows` flows (their number checked against `flow_priority`
    /// before the run: [`HostInterfaceConfig::classes`]).
    pub fn new(cfg: &HostInterfaceConfig, flows: usize) -> HostInterface {
        let mut classes = cfg.flow_priority.clone();
        classes.resize(flows, Default::default());
        let g = cfg.generation_factor();
        let wire = Wire {
            payload_bytes: cfg.max_payload_bytes,
            read_request_bytes: cfg.max_read_request_bytes,
            overhead_bytes: cfg.tlp_overhead_bytes,
        };
        HostInterface {
            wire,
            messages: Messages {
                doorbell: wire.doorbell(),
                entry_request: wire.read_requests(SQE_BYTES),
                entry: wire.data(SQE_BYTES),
                completion: wire.completion(),
            },
            last_data: (0, wire.data(0)),
            dirs: [Direction::new(g, cfg.lanes), Direction::new(g, cfg.lanes)],
            gens: [0; 2],
            due_ns: [u64::MAX; 2],
            arbiter: ArbitrationPolicy::new(&cfg.arbitration, &ArbiterCtx { classes }),
            queues: (0..flows).map(|_| VecDeque::new()).collect(),
            waiting: vec![0; flows],
            queued: 0,
            slots_used: 0,
            max_slots: cfg.max_commands_in_flight,
            command_ns: cfg.command_ns,
            processor_free_ns: 0,
            max_transfer_bytes: cfg.max_data_transfer_bytes,
            cmds: Slab::new(),
            parents: Slab::new(),
            done: Vec::new(),
            actions: VecDeque::new(),
            split_requests: 0,
            traffic: vec![FlowTraffic::default(); flows],
        }
    }

    /// Time each direction (down, up) had a message or a transfer on the wire up to
    /// `now_ns`.
    pub fn busy_ns_at(&self, now_ns: u64) -> [u64; 2] {
        [
            self.dirs[0].busy_ns_at(now_ns),
            self.dirs[1].busy_ns_at(now_ns),
        ]
    }

    /// Commands and requests held (submitted, not yet completed to the host).
    pub fn in_flight(&self) -> u32 {
        self.cmds.len() as u32
    }

    /// Command `id` is a later part of a split request (not its first).
    pub fn continues(&self, id: u32) -> bool {
        let c = &self.cmds.slots[id as usize];
        c.parent != NONE
            && c.req.offset_bytes != self.parents.slots[c.parent as usize].req.offset_bytes
    }

    /// Count in `c`, as figures taken now count them, the commands the device took that
    /// the host has not seen complete: those with the front end (`with_device`, their
    /// status so far), those whose completion is on its way, and the parts completed of
    /// requests split at the maximum transfer size. Each counts its bytes, or as failed;
    /// a split request counts as one request, with its first part.
    pub fn count_taken<'r>(
        &self,
        with_device: impl Iterator<Item = &'r crate::host::Request>,
        c: &mut HostCounters,
    ) {
        let mut part = |id: u32, op: HostOp, bytes: u64, error: Option<ZoneError>| {
            if error.is_none() && self.continues(id) {
                c.count_part(op, bytes);
            } else {
                c.complete(op, bytes, error);
            }
        };
        for r in with_device {
            part(r.cmd, r.op, r.bytes, r.error);
        }
        for (id, cmd) in self.cmds.live() {
            if cmd.step == Step::Completion {
                part(id, cmd.req.op, cmd.req.size_bytes, cmd.error);
            }
        }
        for (_, p) in self.parents.live() {
            if p.first_done {
                c.complete(p.req.op, 0, None);
            }
            c.count_part(p.req.op, p.done_bytes);
            c.failed_requests += p.failed_parts as u64;
        }
    }

    /// What the front end must do next, if anything (in the order asked).
    #[inline]
    pub fn next_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// `bytes` of data in TLPs: their wire bytes.
    #[inline]
    fn data_wire_bytes(&mut self, bytes: u64) -> u64 {
        if self.last_data.0 != bytes {
            self.last_data = (bytes, self.wire.data(bytes));
        }
        self.last_data.1
    }

    /// The host submits request `r` of flow `f` (its units `span`): split at the maximum
    /// transfer size, each command's doorbell goes down.
    pub fn submit(&mut self, f: usize, r: HostRequest, span: UnitSpan, cx: &mut Cx) {
        let now = cx.now();
        let m = self.max_transfer_bytes;
        if !r.op.splits_at_max_transfer() || m == 0 || r.size_bytes <= m {
            self.new_command(f, r, span, NONE, now);
            self.fetch(cx);
            return;
        }
        let parts = r.size_bytes.div_ceil(m);
        self.split_requests += 1;
        let parent = self.parents.insert(Parent {
            req: r,
            span,
            submit_ns: now,
            left: parts as u32,
            error: None,
            done_bytes: 0,
            first_done: false,
            failed_parts: 0,
        });
        for k in 0..parts {
            let off = k * m;
            let part = HostRequest {
                offset_bytes: r.offset_bytes + off,
                size_bytes: m.min(r.size_bytes - off),
                ..r
            };
            self.new_command(f, part, UnitSpan::default(), parent, now);
        }
        self.fetch(cx);
    }

    /// Command `req` of flow `f` (a part of request `parent`, or `NONE`): its doorbell goes
    /// down and it waits in its flow's queue (the controller sees it when the doorbell
    /// arrives; its entry comes after the doorbell on the same direction).
    fn new_command(&mut self, f: usize, req: HostRequest, span: UnitSpan, parent: u32, now: u64) {
        let id = self.cmds.insert(Cmd {
            flow: f as u16,
            step: Step::Queued,
            req,
            span,
            parent,
            submit_ns: now,
            down_bytes: 0,
            up_bytes: 0,
            error: None,
        });
        self.traffic[f].commands += 1;
        let b = self.messages.doorbell;
        self.message(Dir::Down, id, b, now);
        self.queues[f].push_back(id);
        self.waiting[f] += 1;
        self.queued += 1;
    }

    /// Send a message of `wire_bytes` for command `id` at `now`: when it arrives (ticks).
    #[inline]
    fn message(&mut self, dir: Dir, id: u32, wire_bytes: u64, now: u64) -> u64 {
        let c = &mut self.cmds.slots[id as usize];
        match dir {
            Dir::Down => c.down_bytes += wire_bytes,
            Dir::Up => c.up_bytes += wire_bytes,
        }
        self.dirs[dir as usize].send_message(now, wire_bytes)
    }

    /// Start a data transfer of `wire_bytes` for command `id`.
    fn transfer(&mut self, dir: Dir, id: u32, wire_bytes: u64, cx: &mut Cx) {
        let c = &mut self.cmds.slots[id as usize];
        match dir {
            Dir::Down => c.down_bytes += wire_bytes,
            Dir::Up => c.up_bytes += wire_bytes,
        }
        self.dirs[dir as usize].start(cx.now(), wire_bytes, id);
        self.reschedule(dir, cx);
    }

    /// Schedule the direction's next finish when it came earlier than the event pending (a
    /// later finish waits for that event, which schedules it again: [`Self::on_link`]).
    fn reschedule(&mut self, dir: Dir, cx: &mut Cx) {
        let d = dir as usize;
        let next = self.dirs[d].next_finish_ns().unwrap_or(u64::MAX);
        self.schedule_link(d, next, cx);
    }

    /// Schedule direction `d`'s event at `next` if that is earlier than the one pending.
    #[inline]
    fn schedule_link(&mut self, d: usize, next: u64, cx: &mut Cx) {
        if next >= self.due_ns[d] {
            return;
        }
        self.due_ns[d] = next;
        self.gens[d] = self.gens[d].wrapping_add(1);
        cx.q.schedule_in_lane(
            super::LANE_LINK,
            next,
            Event::Link {
                dir: d as u8,
                gen: self.gens[d],
            },
        );
    }

    /// A direction's scheduled event: if its earliest transfer finishes now, move every
    /// transfer done to its next step; if messages sent since delayed it, wait for it.
    pub fn on_link(&mut self, d: u8, gen: u32, cx: &mut Cx) {
        let d = d as usize;
        if gen != self.gens[d] {
            return;
        }
        let dir = if d == 0 { Dir::Down } else { Dir::Up };
        self.due_ns[d] = u64::MAX;
        let next = self.dirs[d].next_finish_ns();
        if next.is_none_or(|t| t > cx.now()) {
            // Messages sent since delayed it: wait for the new finish.
            self.schedule_link(d, next.unwrap_or(u64::MAX), cx);
            return;
        }
        let slots = self.slots_used;
        let mut done = std::mem::take(&mut self.done);
        self.dirs[d].finish_due(cx.now(), &mut done);
        for &id in &done {
            self.transferred(id);
        }
        done.clear();
        self.done = done;
        self.reschedule(dir, cx);
        if self.slots_used < slots {
            self.fetch(cx);
        }
    }

    /// Command `id`'s data transfer is done: its next step.
    fn transferred(&mut self, id: u32) {
        let c = self.cmds.slots[id as usize];
        match c.step {
            Step::WriteData => {
                self.actions
                    .push_back(Action::Dispatch(c.flow, c.req, c.whole_span(), id));
                self.cmds.slots[id as usize].step = Step::Device;
            }
            Step::Completion => {
                if let Some(a) = self.complete(id) {
                    self.actions.push_back(a);
                }
            }
            Step::Queued | Step::Processing | Step::Device => {
                unreachable!("only a command's data and completion are transfers")
            }
        }
    }

    /// Fetch commands while slots are free and some queue has one (arbiter's order): the
    /// entry's read request goes up, then the entry comes down (after the messages on the
    /// wire there, its doorbell among them); the processor takes it when it has arrived
    /// and the commands before it are done.
    fn fetch(&mut self, cx: &mut Cx) {
        let now = cx.now();
        while self.slots_used < self.max_slots && self.queued > 0 {
            // One queue: the arbiter has nothing to choose (and no state that matters).
            let q = if self.queues.len() == 1 {
                0
            } else {
                match self.arbiter.pick(&self.waiting) {
                    Some(q) => q,
                    None => return,
                }
            };
            let id = self.queues[q as usize]
                .pop_front()
                .expect("the arbiter picks a queue with a command");
            self.waiting[q as usize] -= 1;
            self.queued -= 1;
            self.slots_used += 1;
            self.cmds.slots[id as usize].step = Step::Processing;
            let request = self.message(Dir::Up, id, self.messages.entry_request, now);
            let entry = self.message(Dir::Down, id, self.messages.entry, now);
            // The request's time on its direction, then the entry's on its own (both
            // directions have one rate).
            let arrived_ns = self.dirs[0].ns_of(entry + request - now * self.dirs[0].rate());
            let at = arrived_ns.max(self.processor_free_ns) + self.command_ns;
            self.processor_free_ns = at;
            cx.q.schedule_in_lane(super::LANE_PROCESSED, at, Event::Processed { cmd: id });
        }
    }

    /// The controller processed command `id`: a write fetches its data, the others go to
    /// the front end (the action returned, to be carried out before any other).
    #[must_use]
    pub fn on_processed(&mut self, id: u32, cx: &mut Cx) -> Option<Action> {
        let c = self.cmds.slots[id as usize];
        debug_assert_eq!(c.step, Step::Processing);
        let down = Payload::of(c.req.op, c.req.size_bytes).down_bytes;
        if down > 0 {
            self.cmds.slots[id as usize].step = Step::WriteData;
            let req = self.wire.read_requests(down);
            self.message(Dir::Up, id, req, cx.now());
            let data = self.data_wire_bytes(down);
            self.transfer(Dir::Down, id, data, cx);
            None
        } else {
            self.cmds.slots[id as usize].step = Step::Device;
            Some(Action::Dispatch(c.flow, c.req, c.whole_span(), id))
        }
    }

    /// The front end is done with command `id` (failed with `error`, if so): a read's data
    /// and the completion go up (a failed command's completion only).
    pub fn device_done(&mut self, id: u32, error: Option<ZoneError>, cx: &mut Cx) {
        let c = self.cmds.slots[id as usize];
        debug_assert_eq!(c.step, Step::Device);
        let b = self.messages.completion;
        let up = Payload::of(c.req.op, c.req.size_bytes).up_bytes;
        let cmd = &mut self.cmds.slots[id as usize];
        cmd.step = Step::Completion;
        cmd.error = error;
        if up > 0 && error.is_none() {
            let data = self.data_wire_bytes(up);
            self.transfer(Dir::Up, id, b + data, cx);
        } else {
            let end = self.message(Dir::Up, id, b, cx.now());
            let at = self.dirs[1].ns_of(end);
            cx.q.schedule_in_lane(super::LANE_LINK, at, Event::Completion { cmd: id });
        }
    }

    /// Command `id`'s completion (a message) arrived at the host: its slot takes the next
    /// command; what the host then does is returned (to be carried out before any other).
    #[must_use]
    pub fn on_completion(&mut self, id: u32, cx: &mut Cx) -> Option<Action> {
        debug_assert_eq!(self.cmds.slots[id as usize].step, Step::Completion);
        let a = self.complete(id);
        self.fetch(cx);
        a
    }

    /// The host has command `id`'s completion: free its slot; the request completes with
    /// its last command (the action returned).
    fn complete(&mut self, id: u32) -> Option<Action> {
        let c = self.cmds.remove(id);
        self.slots_used -= 1;
        let t = &mut self.traffic[c.flow as usize];
        t.link_down_bytes += c.down_bytes;
        t.link_up_bytes += c.up_bytes;
        if c.error.is_none() {
            // A failed command's bytes are no throughput (its wire bytes are counted).
            let p = Payload::of(c.req.op, c.req.size_bytes);
            t.read_bytes += p.up_bytes;
            t.write_bytes += p.down_bytes;
        }
        if c.parent == NONE {
            return Some(Action::Completed(
                c.flow,
                c.req,
                c.span,
                c.submit_ns,
                c.error,
                id,
            ));
        }
        let p = &mut self.parents.slots[c.parent as usize];
        p.left -= 1;
        p.error = p.error.or(c.error);
        match c.error {
            Some(_) => p.failed_parts += 1,
            None => {
                p.done_bytes += c.req.size_bytes;
                p.first_done |= c.req.offset_bytes == p.req.offset_bytes;
            }
        }
        if p.left == 0 {
            let p = self.parents.remove(c.parent);
            return Some(Action::Completed(
                c.flow,
                p.req,
                p.span,
                p.submit_ns,
                p.error,
                id,
            ));
        }
        None
    }
}

/// One direction of the link over the measured phase.
#[derive(serde::Serialize, Debug, Clone, PartialEq)]
pub struct LinkDirection {
    /// Bytes on the wire (payload and TLP overhead).
    pub wire_bytes: u64,
    /// Share of the phase with a transfer in flight.
    pub utilization: f64,
}

/// One flow (submission queue) over the host interface.
#[derive(serde::Serialize, Debug, Clone, PartialEq)]
pub struct FlowInterface {
    pub flow: String,
    pub priority: &'static str,
    /// NVMe commands (a request split at the maximum transfer size is several).
    pub commands: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Over the phase (10⁶ bytes per second).
    pub read_mb_per_s: f64,
    pub write_mb_per_s: f64,
    /// Wire bytes of the flow's commands: host → device, device → host.
    pub link_down_bytes: u64,
    pub link_up_bytes: u64,
}

/// `host_interface` in results.json (present when the device has one, timed mode).
#[derive(serde::Serialize, Debug, Clone, PartialEq)]
pub struct HostInterfaceSummary {
    /// e.g. "PCIe 3.0 x4".
    pub link: String,
    /// Each direction's rate after 128b/130b encoding, before TLP overhead (10⁹ B/s).
    pub link_gb_per_s: f64,
    pub arbitration: &'static str,
    pub commands: u64,
    /// Requests split into several commands at the maximum data transfer size.
    pub split_requests: u64,
    /// Host → device: doorbells, submission entries, write data.
    pub down: LinkDirection,
    /// Device → host: read data, completion entries, interrupts, read requests.
    pub up: LinkDirection,
    pub per_flow: Vec<FlowInterface>,
}

impl HostInterface {
    /// The phase's figures, `sim_time_ns` long, for flows named `names`.
    pub fn summary(
        &self,
        cfg: &HostInterfaceConfig,
        names: &[String],
        sim_time_ns: u64,
    ) -> HostInterfaceSummary {
        let t = sim_time_ns.max(1) as f64;
        let rate = |bytes: u64| crate::stats::round6(bytes as f64 / t * 1e3);
        let dir = |d: &Direction| LinkDirection {
            wire_bytes: d.wire_bytes,
            utilization: crate::stats::round6(
                d.busy_ns_at(sim_time_ns).min(sim_time_ns) as f64 / t,
            ),
        };
        let g = cfg.generation_factor();
        HostInterfaceSummary {
            link: format!("PCIe {}.0 x{}", cfg.pcie_generation, cfg.lanes),
            link_gb_per_s: crate::stats::round6((64 * g * cfg.lanes as u64) as f64 / 65.0),
            arbitration: cfg.arbitration.name(),
            commands: self.traffic.iter().map(|f| f.commands).sum(),
            split_requests: self.split_requests,
            down: dir(&self.dirs[0]),
            up: dir(&self.dirs[1]),
            per_flow: self
                .traffic
                .iter()
                .zip(names)
                .enumerate()
                .map(|(i, (f, name))| FlowInterface {
                    flow: name.clone(),
                    priority: cfg.flow_priority.get(i).copied().unwrap_or_default().name(),
                    commands: f.commands,
                    read_bytes: f.read_bytes,
                    write_bytes: f.write_bytes,
                    read_mb_per_s: rate(f.read_bytes),
                    write_mb_per_s: rate(f.write_bytes),
                    link_down_bytes: f.link_down_bytes,
                    link_up_bytes: f.link_up_bytes,
                })
                .collect(),
        }
    }
}
