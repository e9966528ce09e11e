//! A connection's reply path, and what the connection holds. A reply goes straight to the
//! socket from the thread that makes it (the device loop), without blocking, when nothing
//! is queued before it; what the socket does not take at once — and every reply behind it —
//! goes through the connection's writer thread (`writer.rs`), in order, as [`WriterMsg`]s. So a client that reads its
//! replies costs no thread switch per reply, and one that does not never blocks the device
//! loop.
//!
//! Replies never interleave: a direct send happens only while the writer has nothing
//! queued (`queued == 0`, under the lock), and the writer counts a message as written only
//! once all of its bytes are out.
//!
//! What a connection holds is bounded ([`super::Limits`]): every request the reader takes
//! is charged (one request, and its payload bytes: a READ's length, a WRITE's data) until
//! its reply is entirely on the socket; the reader waits ([`Out::admit`]) while the
//! connection is at its bound, so it stops reading the socket, and a client that sends
//! without reading its replies holds at most the bound, whatever it sends.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::proto::reply_header;
use super::socket::Socket;

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
    /// The rest of a reply the socket took only in part: the next bytes to write.
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

/// What a request holds until its reply is written: one request and `bytes` of payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Charge {
    pub bytes: u64,
}

struct OutState {
    /// Messages handed to the writer and not yet fully written.
    queued: u64,
    /// Device replies written directly (the writer adds its own to know when to close).
    direct_device_replies: u64,
    /// The writer knows how many device replies to expect (the reader is done): a direct
    /// reply must wake it so it can close.
    expecting: bool,
    /// The writer is gone: replies go nowhere.
    closed: bool,
    /// Requests taken and not yet answered on the socket, and their payload bytes.
    held_requests: u32,
    held_bytes: u64,
    /// Commands forwarded to the device and not yet answered by it.
    at_device: u64,
    /// The last request forwarded or reply written (idle connections: [`Out::idle_for`]).
    last_active: Instant,
    /// The reader waits for room (a release must wake it; otherwise no wake-up is paid).
    reader_waiting: bool,
}

pub(crate) struct Out {
    state: Mutex<OutState>,
    /// Signalled when a charge is released or the connection closes.
    room: Condvar,
    /// The connection's socket, shared with its reader and writer: open as long as this
    /// reply path exists, whatever the connection's threads do.
    socket: Arc<Socket>,
    tx: Sender<WriterMsg>,
    max_requests: u32,
    max_bytes: u64,
}

impl Out {
    /// The reply path of a connection on `socket` whose writer listens on `tx`, holding at
    /// most `max_requests` requests and `max_bytes` of payload.
    pub fn new(
        socket: Arc<Socket>,
        tx: Sender<WriterMsg>,
        max_requests: u32,
        max_bytes: u64,
    ) -> Out {
        Out {
            state: Mutex::new(OutState {
                queued: 0,
                direct_device_replies: 0,
                expecting: false,
                closed: false,
                held_requests: 0,
                held_bytes: 0,
                at_device: 0,
                last_active: Instant::now(),
                reader_waiting: false,
            }),
            room: Condvar::new(),
            socket,
            tx,
            max_requests: max_requests.max(1),
            max_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, OutState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The writer wrote `messages` queued messages out, holding `requests` requests and
    /// `bytes` of payload: its queue shrinks, their charges go.
    pub fn written(&self, messages: u64, requests: u32, bytes: u64) {
        if messages == 0 {
            return;
        }
        let mut st = self.lock();
        st.queued -= messages;
        if requests > 0 {
            self.release_locked(&mut st, requests, bytes);
        }
    }

    /// Device replies that went out directly (not through the writer).
    pub fn direct_device_replies(&self) -> u64 {
        self.lock().direct_device_replies
    }

    /// The writer knows how many device replies to expect: a direct reply must wake it.
    pub fn expect_replies(&self) {
        self.lock().expecting = true;
    }

    /// Take a request of `charge` (the reader, before it reads the payload or forwards it):
    /// waits while the connection holds its most requests or bytes (a request alone is
    /// always taken). False once the connection is closed.
    pub fn admit(&self, charge: Charge) -> bool {
        let mut st = self.lock();
        loop {
            if st.closed {
                return false;
            }
            let room = st.held_requests == 0
                || (st.held_requests < self.max_requests
                    && st.held_bytes + charge.bytes <= self.max_bytes);
            if room {
                st.held_requests += 1;
                st.held_bytes += charge.bytes;
                return true;
            }
            // Woken by a release or the close; the timeout only guards against a missed one.
            st.reader_waiting = true;
            st = self
                .room
                .wait_timeout(st, Duration::from_millis(200))
                .unwrap_or_else(|e| e.into_inner())
                .0;
            st.reader_waiting = false;
        }
    }

    /// A command went to the device.
    pub fn forwarded(&self) {
        let mut st = self.lock();
        st.at_device += 1;
        st.last_active = Instant::now();
    }

    /// Release under the lock; wakes the reader if it waits for room.
    fn release_locked(&self, st: &mut OutState, n: u32, charge_bytes: u64) {
        st.held_requests = st.held_requests.saturating_sub(n);
        st.held_bytes = st.held_bytes.saturating_sub(charge_bytes);
        st.last_active = Instant::now();
        if st.reader_waiting {
            self.room.notify_all();
        }
    }

    /// The writer is gone: nothing more is written, a waiting reader wakes.
    pub fn close(&self) {
        self.lock().closed = true;
        self.room.notify_all();
    }

    /// How long the connection has been idle: nothing at the device, no request forwarded
    /// and no reply written for that long (`None` while a command is at the device).
    pub fn idle_for(&self, now: Instant) -> Option<Duration> {
        let st = self.lock();
        (st.at_device == 0).then(|| now.saturating_duration_since(st.last_active))
    }

    /// Requests and payload bytes held now.
    pub fn held(&self) -> (u32, u64) {
        let st = self.lock();
        (st.held_requests, st.held_bytes)
    }

    /// Send a reply (`device`: it answers a forwarded command) for a request of `charge`.
    pub fn reply(&self, cookie: u64, errno: u32, data: Vec<u8>, device: bool, charge: Charge) {
        let mut st = self.lock();
        if device {
            st.at_device = st.at_device.saturating_sub(1);
        }
        if st.closed {
            return;
        }
        if st.queued == 0 {
            let head = reply_header(cookie, errno);
            match send_nonblocking(self.socket.as_fd(), &head, &data) {
                Ok(n) if n == head.len() + data.len() => {
                    if device {
                        st.direct_device_replies += 1;
                        if st.expecting {
                            let _ = self.tx.send(WriterMsg::Check);
                        }
                    }
                    self.release_locked(&mut st, 1, charge.bytes);
                    return;
                }
                Ok(n) => {
                    // Part went out: the rest must be the next bytes on the socket.
                    let mut rest = Vec::with_capacity(head.len() + data.len() - n);
                    if n < head.len() {
                        rest.extend_from_slice(&head[n..]);
                        rest.extend_from_slice(&data);
                    } else {
                        rest.extend_from_slice(&data[n - head.len()..]);
                    }
                    st.queued += 1;
                    let _ = self.tx.send(WriterMsg::Raw {
                        bytes: rest,
                        device,
                        charge,
                    });
                    return;
                }
                // Would block, or an error the writer will meet too: queue it.
                Err(_) => {}
            }
        }
        st.queued += 1;
        let _ = self.tx.send(WriterMsg::Reply {
            cookie,
            errno,
            data,
            device,
            charge,
        });
    }
}

/// `head` then `data` in one `sendmsg`, never blocking, never raising SIGPIPE: the bytes
/// the socket took.
fn send_nonblocking(fd: BorrowedFd<'_>, head: &[u8], data: &[u8]) -> io::Result<usize> {
    let mut iov = [
        libc::iovec {
            iov_base: head.as_ptr() as *mut libc::c_void,
            iov_len: head.len(),
        },
        libc::iovec {
            iov_base: data.as_ptr() as *mut libc::c_void,
            iov_len: data.len(),
        },
    ];
    // SAFETY: a zeroed msghdr is valid; it points at the two iovecs above, which point at
    // live slices, for the duration of the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = if data.is_empty() { 1 } else { 2 };
    loop {
        // SAFETY: `fd` is borrowed from a socket this reply path owns a share of (open for
        // the call); `msg` is valid as above.
        let n = unsafe {
            libc::sendmsg(
                fd.as_raw_fd(),
                &msg,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
