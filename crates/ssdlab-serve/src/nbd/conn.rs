//! One connection's reader: the handshake, then requests (parse, validate, forward to the
//! device loop); its replies go out through `out.rs` and its writer (`writer.rs`).

use std::io::{self, BufReader, Read, Write};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Instant;

use super::handshake::{self, Outcome};
use super::out::{Charge, Out, WriterMsg};
use super::proto::*;
use super::socket::Socket;
use super::table::Table;
use super::writer;
use super::{CmdKind, Command, Event, Export, Limits, Replies};
use crate::log::Log;

/// Rejected requests logged per connection (a misbehaving client could otherwise flood).
const MAX_LOGGED_REJECTIONS: u32 = 8;

/// What every connection of a server shares.
pub(crate) struct Context {
    pub(crate) export: Export,
    pub(crate) events: Sender<Event>,
    pub(crate) limits: Limits,
    pub(crate) log: Log,
    /// The open connections (each leaves it when it ends).
    pub(crate) table: Table,
}

/// Reads from the buffered socket, writes to the raw one (the handshake needs both), each
/// no later than `deadline` (the whole handshake's: a client that trickles its bytes gets
/// no more time than one that sends nothing).
struct Duplex<'a, 's> {
    r: &'a mut BufReader<&'s Socket>,
    w: &'s Socket,
    deadline: Instant,
}

impl Duplex<'_, '_> {
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

impl Read for Duplex<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.r.buffer().is_empty() {
            let left = self.left()?;
            self.r.get_ref().set_read_timeout(Some(left))?;
        }
        self.r.read(buf)
    }
}

impl Write for Duplex<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let left = self.left()?;
        self.w.set_write_timeout(Some(left))?;
        let mut w = self.w;
        w.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The connection thread: runs connection `id` on `socket` (its writer to be fed through
/// `tx`/`rx`), then takes it out of the table.
pub(crate) fn run(
    ctx: &Context,
    id: u32,
    socket: Arc<Socket>,
    tx: Sender<WriterMsg>,
    rx: Receiver<WriterMsg>,
) {
    serve(ctx, id, &socket, tx, rx);
    ctx.table.remove(id);
}

fn serve(
    ctx: &Context,
    id: u32,
    socket: &Arc<Socket>,
    tx: Sender<WriterMsg>,
    rx: Receiver<WriterMsg>,
) {
    let log = |why: &str| ctx.log.say(&format!("serve: connection {id}: {why}"));
    let limits = ctx.limits;
    let mut reader = BufReader::with_capacity(128 * 1024, &**socket);
    let export = &ctx.export;
    match handshake::negotiate(
        &mut Duplex {
            r: &mut reader,
            w: socket,
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
    let cleared = (socket.set_read_timeout(None)).and_then(|_| socket.set_write_timeout(None));
    if let Err(e) = cleared {
        return log(&format!(
            "cannot clear the socket's timeouts ({e}), closing"
        ));
    }
    let out = Arc::new(Out::new(
        Arc::clone(socket),
        tx.clone(),
        limits.max_requests,
        limits.max_bytes,
    ));
    ctx.table.in_transmission(id, &out);
    let writer = match writer::spawn(id, Arc::clone(socket), rx, Arc::clone(&out)) {
        Ok(w) => w,
        Err(e) => return log(&format!("cannot start the writer thread ({e}), closing")),
    };
    let events = &ctx.events;
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
        socket.shutdown();
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
