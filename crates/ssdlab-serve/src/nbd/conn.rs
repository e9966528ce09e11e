//! One connection's handshake thread: the handshake (blocking, with its deadline), then
//! the socket goes to the device loop's [`super::Wire`] for the transmission phase.

use std::io::{self, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

use super::handshake::{self, Outcome};
use super::socket::Socket;
use super::table::{Activity, Table};
use super::wire::Handoff;
use super::{Export, Limits};
use crate::log::Log;

/// What every connection of a server shares.
pub(crate) struct Context {
    pub(crate) export: Export,
    /// Connections in transmission go to the wire this way, with a byte on `waker`.
    pub(crate) handoff: Sender<Handoff>,
    pub(crate) waker: UnixStream,
    pub(crate) limits: Limits,
    pub(crate) log: Log,
    /// The open connections (each leaves it when it ends).
    pub(crate) table: Arc<Table>,
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

/// The handshake thread of connection `id`: negotiates, then hands the socket (and any
/// bytes read past the handshake) to the device loop's [`super::Wire`]; a connection that
/// ends in the handshake leaves the table here.
pub(crate) fn run(ctx: &Context, id: u32, socket: Arc<Socket>) {
    if !handshake(ctx, id, &socket) {
        ctx.table.remove(id);
    }
}

/// True when the connection went to the wire.
fn handshake(ctx: &Context, id: u32, socket: &Arc<Socket>) -> bool {
    let log = |why: &str| ctx.log.say(&format!("serve: connection {id}: {why}"));
    let limits = ctx.limits;
    let mut reader = BufReader::with_capacity(64 * 1024, &**socket);
    match handshake::negotiate(
        &mut Duplex {
            r: &mut reader,
            w: socket,
            deadline: Instant::now() + limits.handshake_timeout,
        },
        &ctx.export,
    ) {
        Ok(Outcome::Transmission) => {}
        Ok(Outcome::Ended) => return false,
        Err(why) => {
            log(&why);
            return false;
        }
    }
    // Clients may then idle as long as they like (a slot they hold is given to a new
    // client only when every slot is taken: `Limits::idle_timeout`).
    let cleared = (socket.set_read_timeout(None))
        .and_then(|_| socket.set_write_timeout(None))
        .and_then(|_| socket.set_nonblocking(true));
    if let Err(e) = cleared {
        log(&format!(
            "cannot make the socket nonblocking ({e}), closing"
        ));
        return false;
    }
    let activity = Arc::new(Activity::new());
    if !ctx.table.in_transmission(id, &activity) {
        return false;
    }
    let leftover = reader.buffer().to_vec();
    let handoff = Handoff {
        id,
        socket: Arc::clone(socket),
        leftover,
        activity,
    };
    if ctx.handoff.send(handoff).is_err() {
        log("the device loop is gone, closing");
        return false;
    }
    // Wake the device loop if it waits in `poll`.
    let _ = (&ctx.waker).write(&[1]);
    true
}
