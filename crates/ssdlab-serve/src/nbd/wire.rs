//! The transmission phase, run by the device loop's own thread: [`Wire`] owns every
//! connection that finished its handshake, waits for their sockets' readiness with
//! `poll(2)`, reads and parses requests incrementally, and writes replies batched per
//! connection (one `send` per connection per [`Wire::flush`]).
//!
//! Why `poll(2)` through `libc` (already a dependency for `sendmsg`): a served device has a
//! handful of connections (at most `max_connections`, 256), so `poll`'s cost linear in the
//! descriptors is below a `mio`/epoll registration's bookkeeping, level-triggered readiness
//! is all the loop needs, and no new crate comes in. The wait is `ppoll` (a nanosecond
//! timeout: realtime mode sleeps until the next event's due time).
//!
//! A connection's bytes: an input buffer (`IN_BYTES`, reused) the socket is read into and
//! the parser consumes (a header, then a WRITE's payload, which goes into a buffer from the
//! [`Pool`]; one larger than the input buffer is read straight into it), and an output
//! buffer replies are appended to (header, then a READ's bytes written there by the
//! device: no copy, no allocation once it has grown) and sent from at the flush. A reply's
//! end in the output stream and its charge are kept in order: the charge goes once its
//! last byte is on the socket.

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use super::proto::*;
use super::socket::Socket;
use super::table::{Activity, Table};
use super::{CmdKind, Command, Event, Export, Limits, Ticket};
use crate::log::Log;

/// Bytes of a connection's input buffer (a WRITE payload larger than this is read straight
/// into its own buffer).
const IN_BYTES: usize = 256 * 1024;
/// An output buffer that grew past this (large READs) is shrunk back once it is empty.
const OUT_KEEP_BYTES: usize = 4 << 20;
/// Rejected requests logged per connection (a misbehaving client could otherwise flood).
const MAX_LOGGED_REJECTIONS: u32 = 8;
/// Reads of one connection per intake (others get their turn).
const READS_PER_TURN: u32 = 4;

/// What a request holds until its reply is written: one request and `bytes` of payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Charge {
    pub bytes: u64,
}

/// A connection handed over by its handshake thread.
pub(crate) struct Handoff {
    pub(crate) id: u32,
    pub(crate) socket: Arc<Socket>,
    /// Bytes the handshake's reader took past the handshake (pipelined requests).
    pub(crate) leftover: Vec<u8>,
    pub(crate) activity: Arc<Activity>,
}

/// Buffers for WRITE payloads, reused: the device hands them back
/// ([`Wire::give_back`]) once their bytes are in its write buffer.
#[derive(Default)]
pub struct Pool {
    free: Vec<Vec<u8>>,
    /// Buffers made because none was free (for tests and the summary).
    pub made: u64,
}

impl Pool {
    /// Free buffers kept at most.
    const KEEP: usize = 1024;
    /// Larger buffers are not kept.
    const KEEP_BYTES: usize = 1 << 20;

    /// A buffer of `len` bytes (contents unspecified).
    pub fn take(&mut self, len: usize) -> Vec<u8> {
        let mut v = match self.free.iter().rposition(|b| b.capacity() >= len) {
            Some(i) => self.free.swap_remove(i),
            None => {
                self.made += 1;
                Vec::with_capacity(len)
            }
        };
        v.clear();
        v.resize(len, 0);
        v
    }

    /// `v` is free again.
    pub fn put(&mut self, v: Vec<u8>) {
        if v.capacity() > 0 && v.capacity() <= Self::KEEP_BYTES && self.free.len() < Self::KEEP {
            self.free.push(v);
        }
    }
}

/// Where the parser is in a connection's byte stream.
enum State {
    /// Waiting for (the rest of) a request header.
    Header,
    /// A WRITE's payload: `got` of `cmd.length_bytes` bytes in `cmd.data`.
    Payload { cmd: Command, got: usize },
    /// A rejected WRITE's payload being dropped; its error reply is queued once it is.
    Skip {
        left: u64,
        cookie: u64,
        errno: u32,
        length: u32,
    },
}

/// How a connection ends.
enum Ending {
    /// Still reading requests.
    Open,
    /// The client sent `NBD_CMD_DISC` or closed between requests: close once every
    /// forwarded command is answered and written.
    Draining,
}

struct Conn {
    socket: Arc<Socket>,
    fd: RawFd,
    activity: Arc<Activity>,
    /// Input: bytes `lo..inb.len()` are unparsed.
    inb: Vec<u8>,
    lo: usize,
    state: State,
    /// Output: bytes `sent..out.len()` are not yet on the socket.
    out: Vec<u8>,
    sent: usize,
    /// Bytes of output ever sent, and per reply queued: where it ends in that count and
    /// its charge.
    sent_total: u64,
    queued_total: u64,
    ends: VecDeque<(u64, Charge)>,
    /// Requests held (read, reply not yet on the socket) and their payload bytes.
    held_requests: u32,
    held_bytes: u64,
    /// Commands forwarded to the device and not yet answered by it.
    at_device: u32,
    ending: Ending,
    /// A header was parsed that does not fit the connection's bound: not read further
    /// until a reply is written.
    blocked: bool,
    rejections: u32,
    /// In the list of connections with output to send.
    dirty: bool,
}

/// The transmission phase of every connection, owned by the device loop.
pub struct Wire {
    export: Export,
    limits: Limits,
    log: Log,
    table: Arc<Table>,
    handoffs: Receiver<Handoff>,
    /// The read end of the handshake threads' wake-up: a byte per handoff.
    waker: UnixStream,
    /// The server stopped (no handoff will come).
    stopping: Arc<std::sync::atomic::AtomicBool>,
    conns: BTreeMap<u32, Conn>,
    dirty: Vec<u32>,
    fds: Vec<libc::pollfd>,
    ids: Vec<u32>,
    pool: Pool,
    /// Events made while answering (a write error found by a flush).
    pending: Vec<Event>,
}

impl Wire {
    pub(crate) fn new(
        export: Export,
        limits: Limits,
        log: Log,
        table: Arc<Table>,
        handoffs: Receiver<Handoff>,
        waker: UnixStream,
        stopping: Arc<std::sync::atomic::AtomicBool>,
    ) -> Wire {
        let _ = waker.set_nonblocking(true);
        Wire {
            export,
            limits,
            log,
            table,
            handoffs,
            waker,
            stopping,
            conns: BTreeMap::new(),
            dirty: Vec::new(),
            fds: Vec::new(),
            ids: Vec::new(),
            pool: Pool::default(),
            pending: Vec::new(),
        }
    }

    /// The server was shut down and every connection has ended: nothing more will come.
    pub fn finished(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::SeqCst) && self.conns.is_empty()
    }

    /// Connections in the transmission phase.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Payload buffers made because the pool had none free.
    pub fn buffers_made(&self) -> u64 {
        self.pool.made
    }

    /// A WRITE payload buffer is free again.
    pub fn give_back(&mut self, buf: Vec<u8>) {
        self.pool.put(buf);
    }

    /// Requests connection `conn` holds now and their payload bytes.
    pub fn held(&self, conn: u32) -> (u32, u64) {
        self.conns
            .get(&conn)
            .map_or((0, 0), |c| (c.held_requests, c.held_bytes))
    }

    /// Success with no data (every command but a READ).
    pub fn ok(&mut self, t: Ticket) {
        self.reply_with(t, 0, 0, |_| {});
    }

    /// Success of a READ: `fill` appends exactly the command's length of bytes (the read
    /// data) to the buffer it is given.
    pub fn ok_read(&mut self, t: Ticket, len: usize, fill: impl FnOnce(&mut Vec<u8>)) {
        self.reply_with(t, 0, len, fill);
    }

    /// Success of a READ with the bytes `data`.
    pub fn ok_data(&mut self, t: Ticket, data: &[u8]) {
        self.reply_with(t, 0, data.len(), |b| b.extend_from_slice(data));
    }

    /// Failure with an NBD error value (`proto::NBD_E*`); an `errno` of 0 is sent as
    /// `NBD_EIO` (0 would mean success).
    pub fn error(&mut self, t: Ticket, errno: u32) {
        let errno = if errno == 0 { NBD_EIO } else { errno };
        self.reply_with(t, errno, 0, |_| {});
    }

    /// A device reply: ignored when the connection is gone.
    fn reply_with(&mut self, t: Ticket, errno: u32, len: usize, fill: impl FnOnce(&mut Vec<u8>)) {
        let Some(c) = self.conns.get_mut(&t.conn) else {
            return;
        };
        c.at_device = c.at_device.saturating_sub(1);
        c.activity.touch(c.at_device);
        let start = c.out.len();
        c.out.extend_from_slice(&reply_header(t.cookie, errno));
        if errno == 0 && len > 0 {
            c.out.reserve(len);
            fill(&mut c.out);
            debug_assert_eq!(c.out.len(), start + REPLY_HEADER_BYTES + len);
        }
        c.queue_end(t.charge, start);
        if !c.dirty {
            c.dirty = true;
            self.dirty.push(t.conn);
        }
    }

    /// Sends what every connection has queued: one `send` each (what the socket does not
    /// take waits for it to be writable).
    pub fn flush(&mut self) {
        let dirty = std::mem::take(&mut self.dirty);
        for &id in &dirty {
            let Some(c) = self.conns.get_mut(&id) else {
                continue;
            };
            c.dirty = false;
            if let Err(e) = c.send_some() {
                let why = format!("write error ({e}), closing");
                self.close(id, Some(why));
                continue;
            }
            self.maybe_done(id);
        }
        self.dirty = dirty;
        self.dirty.clear();
    }

    /// Flushes, then waits up to `timeout` for a connection to be readable (or writable
    /// with replies waiting, or a new connection), and takes what came: `Connected`,
    /// `Command`s (in the order read, per connection), `Disconnected` onto `events`.
    /// `Duration::ZERO` does not wait.
    pub fn poll(&mut self, timeout: Duration, events: &mut Vec<Event>) {
        self.flush();
        self.take(timeout, events);
    }

    /// Takes what the sockets hold now, without waiting and without sending the replies
    /// queued (the caller flushes when it chooses: a batch per turn).
    pub fn read(&mut self, events: &mut Vec<Event>) {
        self.take(Duration::ZERO, events);
    }

    fn take(&mut self, timeout: Duration, events: &mut Vec<Event>) {
        events.append(&mut self.pending);
        self.take_handoffs(events);
        if !events.is_empty() && !timeout.is_zero() {
            return;
        }
        // Bytes already read that a released bound lets the parser take now.
        self.ids.clear();
        self.ids.extend(
            self.conns
                .iter()
                .filter(|(_, c)| c.wants_read() && c.lo < c.inb.len())
                .map(|(id, _)| *id),
        );
        for i in 0..self.ids.len() {
            let id = self.ids[i];
            self.parse(id, events);
        }
        // Few connections and no wait: reading each directly costs one system call less.
        if timeout.is_zero() && self.conns.len() <= 2 {
            self.ids.clear();
            self.ids.extend(
                self.conns
                    .iter()
                    .filter(|(_, c)| c.wants_read())
                    .map(|(id, _)| *id),
            );
            for i in 0..self.ids.len() {
                let id = self.ids[i];
                self.read_conn(id, events);
            }
            events.append(&mut self.pending);
            return;
        }
        self.fds.clear();
        self.ids.clear();
        self.fds.push(libc::pollfd {
            fd: self.waker.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        for (id, c) in &self.conns {
            let mut ev = 0;
            if c.wants_read() {
                ev |= libc::POLLIN;
            }
            if c.sent < c.out.len() {
                ev |= libc::POLLOUT;
            }
            // A connection that wants nothing is left out (a hung-up peer would make
            // `poll` return at once, over and over).
            self.fds.push(libc::pollfd {
                fd: if ev == 0 { -1 } else { c.fd },
                events: ev,
                revents: 0,
            });
            self.ids.push(*id);
        }
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `fds` is a live, initialised array of `fds.len()` pollfds; `ts` lives for
        // the call; a null signal mask keeps the thread's.
        let n = unsafe {
            libc::ppoll(
                self.fds.as_mut_ptr(),
                self.fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        if n <= 0 {
            return;
        }
        if self.fds[0].revents != 0 {
            let mut sink = [0u8; 64];
            while matches!((&self.waker).read(&mut sink), Ok(k) if k > 0) {}
            self.take_handoffs(events);
        }
        for i in 0..self.ids.len() {
            let (re, id) = (self.fds[i + 1].revents, self.ids[i]);
            if re == 0 {
                continue;
            }
            if re & libc::POLLOUT != 0 {
                if let Some(c) = self.conns.get_mut(&id) {
                    if let Err(e) = c.send_some() {
                        self.close(id, Some(format!("write error ({e}), closing")));
                        continue;
                    }
                }
                self.maybe_done(id);
            }
            if re & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                self.read_conn(id, events);
            }
        }
        events.append(&mut self.pending);
    }

    fn take_handoffs(&mut self, events: &mut Vec<Event>) {
        loop {
            match self.handoffs.try_recv() {
                Ok(h) => {
                    let fd = std::os::fd::AsFd::as_fd(&*h.socket).as_raw_fd();
                    let mut inb = Vec::with_capacity(IN_BYTES);
                    inb.extend_from_slice(&h.leftover);
                    self.conns.insert(
                        h.id,
                        Conn {
                            socket: h.socket,
                            fd,
                            activity: h.activity,
                            inb,
                            lo: 0,
                            state: State::Header,
                            out: Vec::new(),
                            sent: 0,
                            sent_total: 0,
                            queued_total: 0,
                            ends: VecDeque::new(),
                            held_requests: 0,
                            held_bytes: 0,
                            at_device: 0,
                            ending: Ending::Open,
                            blocked: false,
                            rejections: 0,
                            dirty: false,
                        },
                    );
                    events.push(Event::Connected { conn: h.id });
                    // Requests pipelined behind the handshake.
                    if self.conns[&h.id].lo < self.conns[&h.id].inb.len() {
                        self.parse(h.id, events);
                    }
                }
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => return,
            }
        }
    }

    /// Reads what connection `id` has sent (a few reads at most) and parses it.
    fn read_conn(&mut self, id: u32, events: &mut Vec<Event>) {
        for _ in 0..READS_PER_TURN {
            let Some(c) = self.conns.get_mut(&id) else {
                return;
            };
            if !c.wants_read() {
                return;
            }
            match c.recv() {
                Ok(0) => {
                    self.eof(id, events);
                    return;
                }
                Ok(_) => {
                    self.parse(id, events);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let why = match &self.conns[&id].state {
                        State::Payload { cmd, .. } => {
                            payload_error(&e, cmd.length_bytes, cmd.cookie)
                        }
                        State::Skip { cookie, length, .. } => payload_error(&e, *length, *cookie),
                        State::Header => format!("read error ({e}), closing"),
                    };
                    self.fail(id, why, events);
                    return;
                }
            }
        }
    }

    /// The client closed its side.
    fn eof(&mut self, id: u32, events: &mut Vec<Event>) {
        let c = &self.conns[&id];
        let why = match &c.state {
            State::Header if c.lo == c.inb.len() => None,
            State::Header => Some(format!(
                "truncated request header ({} of {REQUEST_HEADER_BYTES} bytes) before the client closed, closing",
                c.inb.len() - c.lo
            )),
            State::Payload { cmd, .. } => Some(payload_error(
                &io::ErrorKind::UnexpectedEof.into(),
                cmd.length_bytes,
                cmd.cookie,
            )),
            State::Skip { cookie, length, .. } => Some(payload_error(
                &io::ErrorKind::UnexpectedEof.into(),
                *length,
                *cookie,
            )),
        };
        match why {
            None => {
                if let Some(c) = self.conns.get_mut(&id) {
                    c.ending = Ending::Draining;
                }
                self.maybe_done(id);
                events.append(&mut self.pending);
            }
            Some(why) => self.fail(id, why, events),
        }
    }

    /// The stream is unusable (or the client gone): logged, closed now.
    fn fail(&mut self, id: u32, why: String, events: &mut Vec<Event>) {
        self.log.say(&format!("serve: connection {id}: {why}"));
        self.close(id, Some(why));
        events.append(&mut self.pending);
    }

    /// Closes connection `id` now (its `Disconnected` goes to the pending events).
    fn close(&mut self, id: u32, why: Option<String>) {
        let Some(mut c) = self.conns.remove(&id) else {
            return;
        };
        c.socket.shutdown();
        self.table.remove(id);
        if let State::Payload { cmd, .. } = std::mem::replace(&mut c.state, State::Header) {
            self.pool.put(cmd.data);
        }
        self.pending.push(Event::Disconnected { conn: id, why });
    }

    /// A draining connection whose every reply is written ends cleanly.
    fn maybe_done(&mut self, id: u32) {
        let done = self.conns.get(&id).is_some_and(|c| {
            matches!(c.ending, Ending::Draining) && c.at_device == 0 && c.sent == c.out.len()
        });
        if done {
            self.close(id, None);
        }
    }

    /// Parses what connection `id`'s input buffer holds.
    fn parse(&mut self, id: u32, events: &mut Vec<Event>) {
        loop {
            let Some(c) = self.conns.get_mut(&id) else {
                return;
            };
            if !matches!(c.ending, Ending::Open) {
                return;
            }
            match &mut c.state {
                State::Payload { cmd, got } => {
                    let want = cmd.length_bytes as usize - *got;
                    let n = want.min(c.inb.len() - c.lo);
                    cmd.data[*got..*got + n].copy_from_slice(&c.inb[c.lo..c.lo + n]);
                    *got += n;
                    c.lo += n;
                    compact(&mut c.inb, &mut c.lo);
                    if *got < cmd.length_bytes as usize {
                        return;
                    }
                    let State::Payload { cmd, .. } = std::mem::replace(&mut c.state, State::Header)
                    else {
                        unreachable!()
                    };
                    c.forward();
                    events.push(Event::Command(cmd));
                }
                State::Skip {
                    left,
                    cookie,
                    errno,
                    ..
                } => {
                    let n = (*left).min((c.inb.len() - c.lo) as u64);
                    *left -= n;
                    c.lo += n as usize;
                    compact(&mut c.inb, &mut c.lo);
                    if *left > 0 {
                        return;
                    }
                    let (cookie, errno) = (*cookie, *errno);
                    c.state = State::Header;
                    c.reject_reply(cookie, errno);
                    if !c.dirty {
                        c.dirty = true;
                        self.dirty.push(id);
                    }
                }
                State::Header => {
                    if c.inb.len() - c.lo < REQUEST_HEADER_BYTES {
                        compact(&mut c.inb, &mut c.lo);
                        return;
                    }
                    let head: &[u8; REQUEST_HEADER_BYTES] = c.inb
                        [c.lo..c.lo + REQUEST_HEADER_BYTES]
                        .try_into()
                        .expect("28 bytes");
                    let h = match parse_request(head) {
                        Ok(h) => h,
                        Err(magic) => {
                            let why = format!("bad request magic {magic:#010x}, closing");
                            return self.fail(id, why, events);
                        }
                    };
                    let verdict = validate(&h, &self.export);
                    if verdict == Verdict::Disconnect {
                        c.lo += REQUEST_HEADER_BYTES;
                        c.ending = Ending::Draining;
                        self.maybe_done(id);
                        events.append(&mut self.pending);
                        return;
                    }
                    // Every reply counts against the connection's bound, a rejection's
                    // too; a READ or WRITE holds its length.
                    let charge = Charge {
                        bytes: match verdict {
                            Verdict::Forward {
                                kind: CmdKind::Read | CmdKind::Write,
                                ..
                            } => u64::from(h.length),
                            _ => 0,
                        },
                    };
                    let room = c.held_requests == 0
                        || (c.held_requests < self.limits.max_requests.max(1)
                            && c.held_bytes + charge.bytes <= self.limits.max_bytes);
                    if !room {
                        c.blocked = true;
                        return;
                    }
                    c.lo += REQUEST_HEADER_BYTES;
                    c.held_requests += 1;
                    c.held_bytes += charge.bytes;
                    match verdict {
                        Verdict::Disconnect => unreachable!(),
                        Verdict::Forward { kind, fua, no_hole } => {
                            let mut cmd = Command {
                                charge,
                                conn: id,
                                cookie: h.cookie,
                                kind,
                                offset_bytes: h.offset,
                                length_bytes: h.length,
                                fua,
                                no_hole,
                                data: Vec::new(),
                            };
                            if kind == CmdKind::Write {
                                cmd.data = self.pool.take(h.length as usize);
                                c.state = State::Payload { cmd, got: 0 };
                            } else {
                                c.forward();
                                events.push(Event::Command(cmd));
                            }
                        }
                        Verdict::Reject { errno, why: reason } => {
                            if h.kind == NBD_CMD_WRITE && h.length > MAX_SKIP_PAYLOAD_BYTES {
                                let why = format!(
                                    "{} cookie {:#x}: {reason}, and its {}-byte payload is too large to skip, closing",
                                    command_name(h.kind),
                                    h.cookie,
                                    h.length
                                );
                                return self.fail(id, why, events);
                            }
                            c.rejections += 1;
                            if c.rejections <= MAX_LOGGED_REJECTIONS {
                                self.log.say(&format!(
                                    "serve: connection {id}: {} cookie {:#x} offset {} length {} flags {:#x}: {reason}, replying error {errno}{}",
                                    command_name(h.kind),
                                    h.cookie,
                                    h.offset,
                                    h.length,
                                    h.flags,
                                    if c.rejections == MAX_LOGGED_REJECTIONS { " (further rejections not logged)" } else { "" }
                                ));
                            }
                            c.state = State::Skip {
                                left: if h.kind == NBD_CMD_WRITE {
                                    u64::from(h.length)
                                } else {
                                    0
                                },
                                cookie: h.cookie,
                                errno,
                                length: h.length,
                            };
                        }
                    }
                }
            }
        }
    }
}

impl Conn {
    /// The parser wants bytes and the connection may take more.
    fn wants_read(&self) -> bool {
        matches!(self.ending, Ending::Open) && !self.blocked
    }

    /// Reads once from the socket: into a large WRITE payload directly when the input
    /// buffer is drained, else into the input buffer.
    fn recv(&mut self) -> io::Result<usize> {
        if let State::Payload { cmd, got } = &mut self.state {
            if self.lo == self.inb.len() && cmd.data.len() - *got >= IN_BYTES / 2 {
                let n = recv_into(self.fd, &mut cmd.data[*got..])?;
                *got += n;
                return Ok(n);
            }
        }
        if self.inb.capacity() - self.inb.len() < IN_BYTES / 4 {
            self.compact_now();
        }
        let len = self.inb.len();
        let room = self.inb.capacity() - len;
        if room == 0 {
            self.inb.reserve(IN_BYTES);
        }
        let spare = self.inb.spare_capacity_mut();
        // SAFETY: `recv` writes at most `spare.len()` bytes into the spare capacity; the
        // length is then set to the bytes it wrote.
        let n = loop {
            let r = unsafe {
                libc::recv(
                    self.fd,
                    spare.as_mut_ptr() as *mut libc::c_void,
                    spare.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if r >= 0 {
                break r as usize;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        };
        unsafe { self.inb.set_len(len + n) };
        Ok(n)
    }

    /// Moves the unparsed bytes to the front.
    fn compact_now(&mut self) {
        self.inb.copy_within(self.lo.., 0);
        self.inb.truncate(self.inb.len() - self.lo);
        self.lo = 0;
    }

    /// A command went to the device.
    fn forward(&mut self) {
        self.at_device += 1;
        self.activity.touch(self.at_device);
    }

    /// A reply ends here in the output; its charge goes once it is sent.
    fn queue_end(&mut self, charge: Charge, start: usize) {
        self.queued_total += (self.out.len() - start) as u64;
        self.ends.push_back((self.queued_total, charge));
    }

    /// A rejection's reply (not a device reply).
    fn reject_reply(&mut self, cookie: u64, errno: u32) {
        let start = self.out.len();
        self.out.extend_from_slice(&reply_header(cookie, errno));
        self.queue_end(Charge::default(), start);
    }

    /// Sends queued output (one `send`), releases the charges of replies now written.
    fn send_some(&mut self) -> io::Result<()> {
        if self.sent == self.out.len() {
            return Ok(());
        }
        let n = loop {
            // SAFETY: the pointer and length name the live unsent part of `out`.
            let r = unsafe {
                libc::send(
                    self.fd,
                    self.out[self.sent..].as_ptr() as *const libc::c_void,
                    self.out.len() - self.sent,
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if r >= 0 {
                break r as usize;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => {}
                io::ErrorKind::WouldBlock => return Ok(()),
                _ => return Err(e),
            }
        };
        self.sent += n;
        self.sent_total += n as u64;
        let mut released = false;
        while let Some(&(end, charge)) = self.ends.front() {
            if end > self.sent_total {
                break;
            }
            self.ends.pop_front();
            self.held_requests = self.held_requests.saturating_sub(1);
            self.held_bytes = self.held_bytes.saturating_sub(charge.bytes);
            released = true;
        }
        if released {
            self.activity.touch(self.at_device);
            self.blocked = false;
        }
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
            if self.out.capacity() > OUT_KEEP_BYTES {
                self.out = Vec::new();
            }
        } else if self.sent > self.out.capacity() / 2 {
            self.out.copy_within(self.sent.., 0);
            self.out.truncate(self.out.len() - self.sent);
            self.sent = 0;
        }
        Ok(())
    }
}

/// Drops the parsed bytes once every byte of the input is parsed (cheap).
fn compact(inb: &mut Vec<u8>, lo: &mut usize) {
    if *lo == inb.len() {
        inb.clear();
        *lo = 0;
    }
}

/// One nonblocking `recv` into `buf`.
fn recv_into(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is a live writable slice of `buf.len()` bytes.
        let r = unsafe {
            libc::recv(
                fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn payload_error(e: &io::Error, length: u32, cookie: u64) -> String {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        format!(
            "client disconnected in the middle of the {length}-byte payload of WRITE cookie {cookie:#x} (not applied), closing"
        )
    } else {
        format!("read error in the payload of WRITE cookie {cookie:#x} ({e}), closing")
    }
}

fn command_name(kind: u16) -> String {
    match kind {
        NBD_CMD_READ => "READ".into(),
        NBD_CMD_WRITE => "WRITE".into(),
        NBD_CMD_FLUSH => "FLUSH".into(),
        NBD_CMD_TRIM => "TRIM".into(),
        NBD_CMD_CACHE => "CACHE".into(),
        NBD_CMD_WRITE_ZEROES => "WRITE_ZEROES".into(),
        NBD_CMD_BLOCK_STATUS => "BLOCK_STATUS".into(),
        k => format!("command type {k}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;

    fn export() -> Export {
        Export {
            name: "t".into(),
            description: "t".into(),
            size_bytes: 1 << 20,
            min_block_bytes: 512,
            preferred_block_bytes: 4096,
            max_block_bytes: 1 << 20,
        }
    }

    fn request(kind: u16, cookie: u64, offset: u64, length: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&NBD_REQUEST_MAGIC.to_be_bytes());
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&kind.to_be_bytes());
        b.extend_from_slice(&cookie.to_be_bytes());
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&length.to_be_bytes());
        b
    }

    /// A wire with one connection (id 7) whose client end is returned; `leftover` is what
    /// its handshake read past the handshake.
    fn wire_with_client(leftover: &[u8]) -> (Wire, UnixStream) {
        let (client, server) = UnixStream::pair().unwrap();
        server.set_nonblocking(true).unwrap();
        let (htx, hrx) = mpsc::channel();
        let (_wake, woken) = UnixStream::pair().unwrap();
        let wire = Wire::new(
            export(),
            Limits::default(),
            Log::discard(),
            Arc::new(Table::default()),
            hrx,
            woken,
            Arc::new(AtomicBool::new(false)),
        );
        htx.send(Handoff {
            id: 7,
            socket: Arc::new(Socket::Unix(server)),
            leftover: leftover.to_vec(),
            activity: Arc::new(Activity::new()),
        })
        .unwrap();
        (wire, client)
    }

    /// Requests split at every byte (a WRITE's payload included) come out whole, once,
    /// in order; a READ pipelined behind the handshake is taken from the leftover bytes.
    #[test]
    fn parses_requests_fed_a_byte_at_a_time() {
        let read = request(NBD_CMD_READ, 1, 4096, 512);
        let (mut wire, mut client) = wire_with_client(&read[..10]);
        let mut events = Vec::new();
        wire.read(&mut events);
        assert!(matches!(events[..], [Event::Connected { conn: 7 }]));
        events.clear();
        let mut bytes = read[10..].to_vec();
        let payload: Vec<u8> = (0..1024u32).map(|i| (i * 7) as u8).collect();
        bytes.extend(request(NBD_CMD_WRITE, 2, 512, 1024));
        bytes.extend(&payload);
        bytes.extend(request(NBD_CMD_FLUSH, 3, 0, 0));
        let mut seen = Vec::new();
        for (i, b) in bytes.iter().enumerate() {
            client.write_all(&[*b]).unwrap();
            wire.read(&mut events);
            for ev in events.drain(..) {
                let Event::Command(c) = ev else {
                    panic!("unexpected {ev:?}")
                };
                seen.push((i, c.cookie, c.kind, c.offset_bytes, c.length_bytes, c.data));
            }
        }
        let (r, w, f) = (18, 18 + 28 + 1024, bytes.len() - 1);
        assert_eq!(seen.len(), 3);
        assert_eq!(
            (seen[0].0, seen[0].1, seen[0].2, seen[0].3, seen[0].4),
            (r - 1, 1, CmdKind::Read, 4096, 512)
        );
        assert_eq!(
            (seen[1].0, seen[1].1, seen[1].2),
            (w - 1, 2, CmdKind::Write)
        );
        assert_eq!(seen[1].5, payload);
        assert_eq!((seen[2].0, seen[2].1, seen[2].2), (f, 3, CmdKind::Flush));
    }

    /// Replies made in one turn leave together, in the order made, with a READ's bytes;
    /// the payload buffer handed back is reused for the next WRITE.
    #[test]
    fn replies_are_batched_and_buffers_reused() {
        let (mut wire, mut client) = wire_with_client(&[]);
        let mut all = request(NBD_CMD_WRITE, 1, 0, 4096);
        all.extend(vec![9u8; 4096]);
        all.extend(request(NBD_CMD_READ, 2, 0, 512));
        client.write_all(&all).unwrap();
        let mut events = Vec::new();
        let start = std::time::Instant::now();
        while events.len() < 3 && start.elapsed() < Duration::from_secs(5) {
            wire.read(&mut events);
        }
        let mut cmds: Vec<Command> = events
            .drain(..)
            .filter_map(|e| match e {
                Event::Command(c) => Some(c),
                _ => None,
            })
            .collect();
        assert_eq!(cmds.len(), 2);
        let rd = cmds.pop().unwrap();
        let wr = cmds.pop().unwrap();
        assert_eq!(wire.buffers_made(), 1);
        wire.ok_read(rd.ticket(), 512, |b| b.extend_from_slice(&[5u8; 512]));
        wire.ok(wr.ticket());
        wire.give_back(wr.data);
        assert_eq!(wire.held(7), (2, 4096 + 512));
        wire.flush();
        assert_eq!(wire.held(7), (0, 0));
        let mut got = vec![0u8; 16 + 512 + 16];
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got[..16], &reply_header(2, 0));
        assert_eq!(&got[16..528], &[5u8; 512]);
        assert_eq!(&got[528..], &reply_header(1, 0));
        let mut again = request(NBD_CMD_WRITE, 3, 0, 4096);
        again.extend(vec![1u8; 4096]);
        client.write_all(&again).unwrap();
        let start = std::time::Instant::now();
        while events.is_empty() && start.elapsed() < Duration::from_secs(5) {
            wire.read(&mut events);
        }
        assert!(matches!(&events[..], [Event::Command(c)] if c.data == vec![1u8; 4096]));
        assert_eq!(wire.buffers_made(), 1, "the WRITE reused the buffer");
    }
}
