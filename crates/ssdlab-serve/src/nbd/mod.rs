//! The NBD (Network Block Device) server of `ssdlab serve`, std only.
//!
//! Real software (fio's nbd engine via libnbd, qemu-img/qemu-io, nbdcopy, nbdinfo, nbdfuse)
//! connects over a Unix socket (or TCP), negotiates with the fixed newstyle handshake
//! (`handshake.rs`), then sends requests that each connection parses and validates
//! ([`proto::validate`]) before handing them to the device loop as [`Event::Command`]s over
//! one `std::sync::mpsc` channel. The device answers through the connection's [`Replies`];
//! the connection writes simple replies in the order the device completes them (out of
//! order, matched by cookie). The protocol reference is `doc/proto.md` of
//! github.com/NetworkBlockDevice/nbd.
//!
//! What the server negotiates: handshake flags `FIXED_NEWSTYLE | NO_ZEROES`; options
//! `NBD_OPT_GO`, `NBD_OPT_INFO`, `NBD_OPT_EXPORT_NAME`, `NBD_OPT_LIST`, `NBD_OPT_ABORT`
//! (everything else, structured replies and TLS included, gets `NBD_REP_ERR_UNSUP`);
//! transmission flags `HAS_FLAGS | SEND_FLUSH | SEND_FUA | SEND_TRIM | SEND_WRITE_ZEROES |
//! CAN_MULTI_CONN` ([`proto::TRANSMISSION_FLAGS`]). One export, reachable under its name and
//! under the default name "".
//!
//! Threads: one acceptor per listener; per connection a reader (handshake, then requests,
//! `conn.rs`) and a writer fed by a channel (`writer.rs`), so a client that does not read
//! its replies never blocks the device loop or the other clients. A connection's socket
//! (`socket.rs`) is shared by its reader, its writer, its reply path (`out.rs`: the device
//! loop's direct replies) and the table of open connections (`table.rs`), through an `Arc`:
//! it stays open as long as any of them holds it. Modules depend one way: `socket` ←
//! `out` ← `writer`, `table` ← `conn` ← `listener`.
//!
//! Limits ([`Limits`]): a connection holds at most `max_requests` requests and
//! `max_bytes` of their payloads from the moment its reader takes them until their replies
//! are on the socket (the reader stops reading the socket at the bound, so a client that
//! never reads its replies holds no more); the handshake must end within
//! `handshake_timeout`, in total; with every connection slot taken, a new client takes the
//! place of the connection idle longest, if it has been idle `idle_timeout` (nothing at the
//! device, no request, no reply written).
//!
//! What the device loop sees, per connection that reaches the transmission phase:
//! `Connected` (once, before its first command), `Command`s, and `Disconnected` (once, after
//! the last command it forwarded and after the replies to all of them were written or could
//! no longer be written). Connections that end during the handshake (a `NBD_OPT_LIST`
//! probe, a bad client) produce no events. Connection ids are assigned 0, 1, 2, … in the
//! order the connections are accepted (ids of connections that never reached transmission
//! are not seen by the device).
//!
//! Bad clients are logged with one line, on the [`Log`] of [`ListenOptions`], naming the
//! connection and why (`serve: connection 3: bad request magic 0x12345678, closing`), and
//! never affect the other connections. What a client sent is logged escaped ([`escape`]): no control
//! character, no line of its own.

mod conn;
mod handshake;
mod listener;
mod out;
pub mod proto;
mod socket;
mod table;
mod writer;

use crate::ServeError;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::log::Log;
pub use listener::{listen, Server};
pub use out::Charge;

/// The one export the server offers: the simulated SSD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// Export name (clients may also use the default name "").
    pub name: String,
    /// Human-readable description (`NBD_INFO_DESCRIPTION`, `NBD_OPT_LIST`).
    pub description: String,
    /// Export size; a multiple of `min_block_bytes`.
    pub size_bytes: u64,
    /// Minimum block size: a power of two, 1..=65536. Requests whose offset or length is not
    /// a multiple of it are refused with `NBD_EINVAL`.
    pub min_block_bytes: u32,
    /// Preferred block size: a power of two, at least max(min_block_bytes, 512).
    pub preferred_block_bytes: u32,
    /// Maximum payload of a READ or WRITE: at least `preferred_block_bytes`, at most 32 MiB
    /// ([`proto::MAX_BLOCK_BYTES_CAP`]).
    pub max_block_bytes: u32,
}

impl Export {
    /// Checks the constraints proto.md puts on the advertised sizes ("Size constraints").
    pub fn validate(&self) -> Result<(), ServeError> {
        let (min, pref, max) = (
            self.min_block_bytes,
            self.preferred_block_bytes,
            self.max_block_bytes,
        );
        if !min.is_power_of_two() || min > 65536 {
            return Err(ServeError::Export(format!(
                "min_block_bytes {min} must be a power of two between 1 and 65536"
            )));
        }
        if !pref.is_power_of_two() || pref < min.max(512) {
            return Err(ServeError::Export(format!(
                "preferred_block_bytes {pref} must be a power of two of at least max(min_block_bytes, 512) = {}",
                min.max(512)
            )));
        }
        if max < pref || max > proto::MAX_BLOCK_BYTES_CAP {
            return Err(ServeError::Export(format!(
                "max_block_bytes {max} must be between preferred_block_bytes ({pref}) and {}",
                proto::MAX_BLOCK_BYTES_CAP
            )));
        }
        if !self.size_bytes.is_multiple_of(u64::from(min)) {
            return Err(ServeError::Export(format!(
                "size_bytes {} is not a multiple of min_block_bytes {min}",
                self.size_bytes
            )));
        }
        if self.name.len() > 4096 || self.description.len() > 4096 {
            return Err(ServeError::Export(
                "name and description must be at most 4096 bytes (proto.md)".into(),
            ));
        }
        Ok(())
    }
}

/// The kind of a command handed to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmdKind {
    /// Reply with exactly `length_bytes` bytes of data.
    Read,
    /// `data` holds the `length_bytes` bytes to write.
    Write,
    /// Make every write already replied to (on any connection) durable, then reply.
    Flush,
    /// Discard the range (a hint; reads of it are then unspecified).
    Trim,
    /// Zero the range (`no_hole`: keep it allocated).
    WriteZeroes,
}

/// A validated request: within the export, aligned to the minimum block size, length > 0
/// (except `Flush`: offset and length 0), READ/WRITE lengths at most `max_block_bytes`
/// (TRIM and WRITE_ZEROES may be longer: they carry no payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// What the command holds on its connection until answered (its reply releases it).
    charge: Charge,
    /// Connection id (as in [`Event::Connected`]).
    pub conn: u32,
    /// The client's opaque cookie (handle); pass it back to [`Replies`].
    pub cookie: u64,
    pub kind: CmdKind,
    pub offset_bytes: u64,
    pub length_bytes: u32,
    /// Force unit access: reply only once the data is durable. Only set on Write, Trim and
    /// WriteZeroes (clients may send it on other commands; it is dropped there).
    pub fua: bool,
    /// WriteZeroes only: the range must stay allocated.
    pub no_hole: bool,
    /// Write payload (`length_bytes` bytes); empty for other kinds.
    pub data: Vec<u8>,
}

impl Command {
    /// Where its reply goes ([`Replies`]): keep it to answer the command.
    pub fn ticket(&self) -> Ticket {
        Ticket {
            cookie: self.cookie,
            charge: self.charge,
        }
    }
}

/// A forwarded command's cookie and what it holds on its connection: a reply hands it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    pub cookie: u64,
    charge: Charge,
}

/// What the device loop receives.
#[derive(Debug)]
pub enum Event {
    /// A connection entered the transmission phase; answer its commands through `replies`.
    Connected { conn: u32, replies: Replies },
    /// A validated command.
    Command(Command),
    /// The connection ended; no more commands will come from it. `why` is `None` for a
    /// clean end (`NBD_CMD_DISC` or the client closing between requests), else the reason.
    /// Replies sent for it afterwards are ignored.
    Disconnected { conn: u32, why: Option<String> },
}

/// The reply side of one connection (cheap to clone). Sending after the connection is gone
/// is silently ignored. Each forwarded command must be answered exactly once: the
/// connection closes after `NBD_CMD_DISC` once it has written as many device replies as it
/// forwarded commands.
#[derive(Clone)]
pub struct Replies {
    out: std::sync::Arc<out::Out>,
}

impl std::fmt::Debug for Replies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Replies")
    }
}

impl Replies {
    /// Success. `data` is the read data (exactly the command's `length_bytes`) for a Read,
    /// empty for everything else. Copies `data`; see [`Replies::ok_vec`] to hand over a
    /// buffer instead.
    pub fn ok(&self, t: Ticket, data: &[u8]) {
        self.ok_vec(t, data.to_vec());
    }

    /// Success, handing over the read data buffer (no copy).
    pub fn ok_vec(&self, t: Ticket, data: Vec<u8>) {
        self.out.reply(t.cookie, 0, data, true, t.charge);
    }

    /// Failure with an NBD error value (`proto::NBD_E*`, e.g. [`proto::NBD_EIO`]); no data
    /// is sent. An `errno` of 0 is sent as `NBD_EIO` (0 would mean success).
    pub fn error(&self, t: Ticket, errno: u32) {
        let errno = if errno == 0 { proto::NBD_EIO } else { errno };
        self.out.reply(t.cookie, errno, Vec::new(), true, t.charge);
    }

    /// Requests the connection holds now and their payload bytes (read, not yet answered
    /// on the socket).
    pub fn held(&self) -> (u32, u64) {
        self.out.held()
    }
}

/// What a connection may hold and how long a client may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Requests a connection holds (read, reply not yet on the socket); at this many its
    /// reader stops reading the socket. qemu-nbd serves 16 at a time.
    pub max_requests: u32,
    /// Payload bytes those requests hold (a READ's length, a WRITE's data); a request
    /// alone is always taken, so at least one of the largest size fits.
    pub max_bytes: u64,
    /// The whole handshake (greeting to the transmission phase) must end within this.
    pub handshake_timeout: Duration,
    /// With every connection slot taken, a new client takes the place of the connection
    /// idle longest if it has been idle this long (`None`: never).
    pub idle_timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_requests: 128,
            max_bytes: 64 << 20,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Some(Duration::from_secs(30)),
        }
    }
}

/// `raw` (bytes a client sent) fit for one log line: printable ASCII as is, everything
/// else escaped (`\n`, `\x1b`, `\u{…}`), at most `max_chars` characters (`…` after).
pub fn escape(raw: &[u8], max_chars: usize) -> String {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == max_chars {
            out.push('…');
            break;
        }
        if c == ' ' || c.is_ascii_graphic() {
            out.push(c);
        } else {
            out.extend(c.escape_default());
        }
    }
    out
}

/// Where to listen; at least one of `socket` and `tcp`.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// Unix socket path. A stale socket file is replaced only if nothing listens on it.
    pub socket: Option<PathBuf>,
    /// TCP address (port 0 picks a free port; see [`Server::tcp_addr`]).
    pub tcp: Option<SocketAddr>,
    /// Simultaneous connections; more are accepted and closed at once (logged), unless an
    /// idle one gives its place ([`Limits::idle_timeout`]).
    pub max_connections: u32,
    pub limits: Limits,
    /// Where clients refused or closed, and why, are said.
    pub log: Log,
}
