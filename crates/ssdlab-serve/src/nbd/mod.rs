//! The NBD (Network Block Device) server of `ssdlab serve`, std only.
//!
//! Real software (fio's nbd engine via libnbd, qemu-img/qemu-io, nbdcopy, nbdinfo, nbdfuse)
//! connects over a Unix socket (or TCP), negotiates with the fixed newstyle handshake
//! (`handshake.rs`, on a short-lived thread per connection), then the connection goes to
//! the [`Wire`] the device loop owns (`wire.rs`): the loop polls the sockets itself, parses
//! requests incrementally, validates them ([`proto::validate`]) and takes them as
//! [`Event::Command`]s; it answers through the same wire ([`Wire::ok`], [`Wire::ok_read`],
//! [`Wire::error`]), which appends simple replies to the connection's output and sends
//! each connection's batch with one `send` per [`Wire::flush`], in the order the device
//! completes them (out of order, matched by cookie). A request crosses no thread. The
//! protocol reference is `doc/proto.md` of github.com/NetworkBlockDevice/nbd.
//!
//! What the server negotiates: handshake flags `FIXED_NEWSTYLE | NO_ZEROES`; options
//! `NBD_OPT_GO`, `NBD_OPT_INFO`, `NBD_OPT_EXPORT_NAME`, `NBD_OPT_LIST`, `NBD_OPT_ABORT`
//! (everything else, structured replies and TLS included, gets `NBD_REP_ERR_UNSUP`);
//! transmission flags `HAS_FLAGS | SEND_FLUSH | SEND_FUA | SEND_TRIM | SEND_WRITE_ZEROES |
//! CAN_MULTI_CONN` ([`proto::TRANSMISSION_FLAGS`]). One export, reachable under its name and
//! under the default name "".
//!
//! Threads: one acceptor per listener and one thread per handshake (blocking reads with
//! the handshake's deadline); the transmission phase runs on the device loop's thread. A
//! connection's socket (`socket.rs`) is shared by its handshake thread, the wire and the
//! table of open connections (`table.rs`: closing at shutdown, idle eviction), through an
//! `Arc`. Modules depend one way: `socket` ← `table` ← `wire` ← `conn` ← `listener`.
//!
//! Limits ([`Limits`]): a connection holds at most `max_requests` requests and
//! `max_bytes` of their payloads from the moment the wire parses them until their replies
//! are on the socket (the wire stops reading the socket at the bound, so a client that
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
pub mod proto;
mod socket;
mod table;
mod wire;

use crate::ServeError;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::log::Log;
pub use listener::{listen, Server};
pub use wire::{Charge, Pool, Wire};

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
    /// The client's opaque cookie (handle); its reply carries it back.
    pub cookie: u64,
    pub kind: CmdKind,
    pub offset_bytes: u64,
    pub length_bytes: u32,
    /// Force unit access: reply only once the data is durable. Only set on Write, Trim and
    /// WriteZeroes (clients may send it on other commands; it is dropped there).
    pub fua: bool,
    /// WriteZeroes only: the range must stay allocated.
    pub no_hole: bool,
    /// Write payload (`length_bytes` bytes, a buffer of the wire's [`Pool`]: hand it back
    /// with [`Wire::give_back`] when done); empty for other kinds.
    pub data: Vec<u8>,
}

impl Command {
    /// Where its reply goes: keep it to answer the command through the [`Wire`].
    pub fn ticket(&self) -> Ticket {
        Ticket {
            cookie: self.cookie,
            conn: self.conn,
            charge: self.charge,
        }
    }
}

/// A forwarded command's connection, cookie and what it holds there: a reply hands it
/// back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    pub cookie: u64,
    pub conn: u32,
    charge: Charge,
}

/// What the device loop takes from the [`Wire`].
#[derive(Debug)]
pub enum Event {
    /// A connection entered the transmission phase (before its first command).
    Connected { conn: u32 },
    /// A validated command; each must be answered exactly once through the wire.
    Command(Command),
    /// The connection ended; no more commands will come from it. `why` is `None` for a
    /// clean end (`NBD_CMD_DISC` or the client closing between requests, once every reply
    /// was written), else the reason. Replies sent for it afterwards are ignored.
    Disconnected { conn: u32, why: Option<String> },
}

/// What a connection may hold and how long a client may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Requests a connection holds (read, reply not yet on the socket); at this many the
    /// wire stops reading its socket. qemu-nbd serves 16 at a time.
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
