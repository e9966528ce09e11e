//! One connection: the reader (handshake, then requests: parse, validate, forward) and the
//! writer (replies, in the order they come, batched into few writes).

use std::io::{self, BufReader, IoSlice, Read, Write};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::Instant;

use super::handshake::{self, Outcome};
use super::listener::{Shared, Stream};
use super::out::{Charge, Out};
use super::proto::*;
use super::{CmdKind, Command, Event, Replies};
/// Rejected requests logged per connection (a misbehaving client could otherwise flood).
const MAX_LOGGED_REJECTIONS: u32 = 8;
/// Read data up to this size is copied into the writer's batch buffer; larger data goes
/// out with the buffered bytes in one vectored write.
const SMALL_DATA_BYTES: usize = 64 * 1024;
/// The writer flushes its batch buffer once it holds this much.
const BATCH_BYTES: usize = 256 * 1024;

/// What the writer thread receives.
pub(crate) enum WriterMsg {
    /// A reply; `device` when it answers a forwarded command (counted against `forwarded`);
    /// `charge` is released once it is written.
    Reply {
        cookie: u64,
        errno: u32,
        data: Vec<u8>,
        device: bool,
        charge: Charge,
    },
    /// The rest of a reply the socket took only in part (`out.rs`): the next bytes to write.
    Raw {
        bytes: Vec<u8>,
        device: bool,
        charge: Charge,
    },
    /// A reply went out directly: see whether every device reply is written.
    Check,
    /// The reader stopped after forwarding this many commands: close once that many device
    /// replies are written.
    ReaderDone { forwarded: u64 },
    /// Close now (server shutdown, or the stream is unusable).
    Close,
}

/// Reads from the buffered socket, writes to the raw one (the handshake needs both), each
/// no later than `deadline` (the whole handshake's: a client that trickles its bytes gets
/// no more time than one that sends nothing).
struct Duplex<'a> {
    r: &'a mut BufReader<Stream>,
    w: &'a mut Stream,
    deadline: Instant,
}

impl Duplex<'_> {
    /// The time left, or `TimedOut` once the deadline has passed.
    fn left(&self) -> io::Result<std::time::Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(io::ErrorKind::TimedOut.into())
        } else {
            Ok(left)
        }
    }
}

impl Read for Duplex<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.r.buffer().is_empty() {
            let left = self.left()?;
            self.r.get_ref().set_read_timeout(Some(left))?;
        }
        self.r.read(buf)
    }
}

impl Write for Duplex<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.w.set_write_timeout(Some(left))?;
        self.w.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The connection thread: runs the connection, then unregisters it.
pub(crate) fn run(
    shared: &Arc<Shared>,
    id: u32,
    stream: Stream,
    tx: Sender<WriterMsg>,
    rx: Receiver<WriterMsg>,
) {
    serve(shared, id, stream, tx, rx);
    if let Some(s) = shared.conns.lock().unwrap().remove(&id) {
        s.stream.shutdown();
    }
}

fn serve(
    shared: &Arc<Shared>,
    id: u32,
    stream: Stream,
    tx: Sender<WriterMsg>,
    rx: Receiver<WriterMsg>,
) {
    let log = |why: &str| eprintln!("serve: connection {id}: {why}");
    let mut write_half = match stream.try_clone() {
        Ok(w) => w,
        Err(e) => return log(&format!("cannot clone the socket ({e}), closing")),
    };
    let limits = shared.limits;
    let mut reader = BufReader::with_capacity(128 * 1024, stream);
    let export = &shared.export;
    match handshake::negotiate(
        &mut Duplex {
            r: &mut reader,
            w: &mut write_half,
            deadline: Instant::now() + limits.handshake_timeout,
        },
        export,
    ) {
        Ok(Outcome::Transmission) => {}
        Ok(Outcome::Ended) => return,
        Err(why) => return log(&why),
    }
    // Clients may then idle as long as they like (a slot they hold is given to a new
    // client only when every slot is taken: `Limits::idle_timeout`).
    let cleared =
        (reader.get_ref().set_read_timeout(None)).and_then(|_| write_half.set_write_timeout(None));
    if let Err(e) = cleared {
        return log(&format!(
            "cannot clear the socket's timeouts ({e}), closing"
        ));
    }
    let out = Arc::new(Out::new(
        &write_half,
        tx.clone(),
        limits.max_requests,
        limits.max_bytes,
    ));
    shared.in_transmission(id, &out);
    let writer_out = Arc::clone(&out);
    let writer = match std::thread::Builder::new()
        .name(format!("nbd-write-{id}"))
        .spawn(move || write_replies(write_half, rx, &writer_out))
    {
        Ok(w) => w,
        Err(e) => return log(&format!("cannot start the writer thread ({e}), closing")),
    };
    let events = &shared.events;
    let replies = Replies {
        out: Arc::clone(&out),
    };
    let mut why = None;
    let mut forwarded = 0u64;
    if events.send(Event::Connected { conn: id, replies }).is_err() {
        why = Some("the device loop is gone, closing".to_string());
    }
    let mut rejections = 0u32;
    while why.is_none() {
        let mut head = [0u8; REQUEST_HEADER_BYTES];
        match read_header(&mut reader, &mut head) {
            Ok(true) => {}
            Ok(false) => break, // clean end between requests
            Err(e) => {
                why = Some(e);
                break;
            }
        }
        let h = match parse_request(&head) {
            Ok(h) => h,
            Err(magic) => {
                why = Some(format!("bad request magic {magic:#010x}, closing"));
                break;
            }
        };
        let verdict = validate(&h, export);
        if verdict == Verdict::Disconnect {
            break;
        }
        // Every reply counts against the connection's bound, a rejection's too; a request
        // with a payload (a WRITE's data, a READ's reply) holds its length.
        let charge = Charge {
            bytes: match verdict {
                Verdict::Forward {
                    kind: CmdKind::Read | CmdKind::Write,
                    ..
                } => u64::from(h.length),
                _ => 0,
            },
        };
        if !out.admit(charge) {
            why = Some("the connection closed while its requests were held, closing".into());
            break;
        }
        match verdict {
            Verdict::Disconnect => break,
            Verdict::Forward { kind, fua, no_hole } => {
                let data = if kind == CmdKind::Write {
                    let mut data = vec![0u8; h.length as usize];
                    if let Err(e) = reader.read_exact(&mut data) {
                        why = Some(payload_error(&e, &h));
                        break;
                    }
                    data
                } else {
                    Vec::new()
                };
                let cmd = Command {
                    charge,
                    conn: id,
                    cookie: h.cookie,
                    kind,
                    offset_bytes: h.offset,
                    length_bytes: h.length,
                    fua,
                    no_hole,
                    data,
                };
                out.forwarded();
                if events.send(Event::Command(cmd)).is_err() {
                    why = Some("the device loop is gone, closing".to_string());
                    break;
                }
                forwarded += 1;
            }
            Verdict::Reject { errno, why: reason } => {
                if h.kind == NBD_CMD_WRITE {
                    if h.length > MAX_SKIP_PAYLOAD_BYTES {
                        why = Some(format!(
                            "{} cookie {:#x}: {reason}, and its {}-byte payload is too large to skip, closing",
                            command_name(h.kind),
                            h.cookie,
                            h.length
                        ));
                        break;
                    }
                    let skipped = io::copy(
                        &mut (&mut reader).take(u64::from(h.length)),
                        &mut io::sink(),
                    );
                    match skipped {
                        Ok(n) if n == u64::from(h.length) => {}
                        Ok(_) => {
                            why = Some(payload_error(&io::ErrorKind::UnexpectedEof.into(), &h));
                            break;
                        }
                        Err(e) => {
                            why = Some(payload_error(&e, &h));
                            break;
                        }
                    }
                }
                rejections += 1;
                if rejections <= MAX_LOGGED_REJECTIONS {
                    log(&format!(
                        "{} cookie {:#x} offset {} length {} flags {:#x}: {reason}, replying error {errno}{}",
                        command_name(h.kind),
                        h.cookie,
                        h.offset,
                        h.length,
                        h.flags,
                        if rejections == MAX_LOGGED_REJECTIONS { " (further rejections not logged)" } else { "" }
                    ));
                }
                out.reply(h.cookie, errno, Vec::new(), false, charge);
            }
        }
    }
    if let Some(w) = &why {
        log(w);
        // The stream is unusable (or the client gone): close now.
        reader.get_ref().shutdown();
        let _ = tx.send(WriterMsg::Close);
    } else {
        let _ = tx.send(WriterMsg::ReaderDone { forwarded });
    }
    drop(tx);
    let writer_why = writer
        .join()
        .unwrap_or_else(|_| Some("the writer thread panicked".into()));
    if why.is_none() {
        if let Some(w) = &writer_why {
            log(w);
        }
        why = writer_why;
    }
    let _ = events.send(Event::Disconnected { conn: id, why });
}

/// Reads one request header. `Ok(false)`: the client closed cleanly before it.
fn read_header(r: &mut impl Read, head: &mut [u8; REQUEST_HEADER_BYTES]) -> Result<bool, String> {
    let mut n = 0;
    while n < head.len() {
        match r.read(&mut head[n..]) {
            Ok(0) if n == 0 => return Ok(false),
            Ok(0) => {
                return Err(format!(
                    "truncated request header ({n} of {REQUEST_HEADER_BYTES} bytes) before the client closed, closing"
                ))
            }
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read error ({e}), closing")),
        }
    }
    Ok(true)
}

fn payload_error(e: &io::Error, h: &RequestHeader) -> String {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        format!(
            "client disconnected in the middle of the {}-byte payload of WRITE cookie {:#x} (not applied), closing",
            h.length, h.cookie
        )
    } else {
        format!(
            "read error in the payload of WRITE cookie {:#x} ({e}), closing",
            h.cookie
        )
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

/// The writer thread: writes the replies queued to it (those the socket did not take at
/// once, `out.rs`), batching those queued together into one write. Ends once the reader is
/// done and every forwarded command was answered, on `Close`, or on a write error
/// (`Some(why)`). Shuts the socket down when it ends.
fn write_replies(mut stream: Stream, rx: Receiver<WriterMsg>, out: &Out) -> Option<String> {
    let why = write_loop(&mut stream, &rx, out)
        .err()
        .map(|e| format!("write error ({e}), closing"));
    out.close();
    stream.shutdown();
    why
}

/// Queued messages fully written since the last call: how many, and the requests and
/// payload bytes they held.
#[derive(Default)]
struct Written {
    messages: u64,
    requests: u32,
    bytes: u64,
}

impl Written {
    fn add(&mut self, charge: Charge) {
        self.messages += 1;
        self.requests += 1;
        self.bytes += charge.bytes;
    }
}

/// The messages of `w` are fully written: the writer's queue shrinks, their charges go.
fn written_out(out: &Out, w: Written) {
    if w.messages > 0 {
        out.state.lock().unwrap_or_else(|e| e.into_inner()).queued -= w.messages;
        out.release(w.requests, w.bytes);
    }
}

fn write_loop(stream: &mut Stream, rx: &Receiver<WriterMsg>, out: &Out) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(BATCH_BYTES + SMALL_DATA_BYTES + REPLY_HEADER_BYTES);
    let mut expected: Option<u64> = None;
    let mut written = 0u64;
    // Device replies written: the writer's own and those that went out directly.
    let all_written = |written: u64| {
        written
            + out
                .state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .direct_device_replies
    };
    loop {
        if expected.is_some_and(|n| all_written(written) >= n) {
            return Ok(());
        }
        let Ok(mut msg) = rx.recv() else {
            return Ok(());
        };
        let mut in_buf = Written::default();
        loop {
            match msg {
                WriterMsg::Reply {
                    cookie,
                    errno,
                    data,
                    device,
                    charge,
                } => {
                    buf.extend_from_slice(&reply_header(cookie, errno));
                    in_buf.add(charge);
                    if data.len() <= SMALL_DATA_BYTES {
                        buf.extend_from_slice(&data);
                        if buf.len() >= BATCH_BYTES {
                            stream.write_all(&buf)?;
                            buf.clear();
                            written_out(out, std::mem::take(&mut in_buf));
                        }
                    } else {
                        write_two(stream, &buf, &data)?;
                        buf.clear();
                        written_out(out, std::mem::take(&mut in_buf));
                    }
                    if device {
                        written += 1;
                    }
                }
                WriterMsg::Raw {
                    bytes,
                    device,
                    charge,
                } => {
                    buf.extend_from_slice(&bytes);
                    in_buf.add(charge);
                    if device {
                        written += 1;
                    }
                }
                WriterMsg::Check => {}
                WriterMsg::ReaderDone { forwarded } => {
                    expected = Some(forwarded);
                    out.state
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .expecting = true;
                }
                WriterMsg::Close => return Ok(()),
            }
            if expected.is_some_and(|n| all_written(written) >= n) {
                break;
            }
            match rx.try_recv() {
                Ok(m) => msg = m,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => break,
            }
        }
        if !buf.is_empty() {
            stream.write_all(&buf)?;
            buf.clear();
        }
        written_out(out, in_buf);
    }
}

/// Writes `a` then `b` with vectored writes (one system call when the socket takes it all).
fn write_two(stream: &mut Stream, a: &[u8], b: &[u8]) -> io::Result<()> {
    let mut bufs = [IoSlice::new(a), IoSlice::new(b)];
    let mut slices = &mut bufs[..];
    while !slices.is_empty() {
        match stream.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
