//! A connection's reply path. A reply goes straight to the socket from the thread that
//! makes it (the device loop), without blocking, when nothing is queued before it; what
//! the socket does not take at once — and every reply behind it — goes through the
//! connection's writer thread, in order. So a client that reads its replies costs no
//! thread switch per reply, and one that does not never blocks the device loop.
//!
//! Replies never interleave: a direct send happens only while the writer has nothing
//! queued (`queued == 0`, under the lock), and the writer counts a message as written only
//! once all of its bytes are out.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::mpsc::Sender;
use std::sync::Mutex;

use super::conn::WriterMsg;
use super::proto::reply_header;

#[derive(Default)]
pub(crate) struct OutState {
    /// Messages handed to the writer and not yet fully written.
    pub queued: u64,
    /// Device replies written directly (the writer adds its own to know when to close).
    pub direct_device_replies: u64,
    /// The writer knows how many device replies to expect (the reader is done): a direct
    /// reply must wake it so it can close.
    pub expecting: bool,
    /// The writer is gone: replies go nowhere.
    pub closed: bool,
}

pub(crate) struct Out {
    pub state: Mutex<OutState>,
    fd: RawFd,
    tx: Sender<WriterMsg>,
}

impl Out {
    /// The reply path of a connection whose socket is `fd` (kept open by the writer's
    /// stream for as long as the writer runs) and whose writer listens on `tx`.
    pub fn new(stream: &impl AsRawFd, tx: Sender<WriterMsg>) -> Out {
        Out {
            state: Mutex::new(OutState::default()),
            fd: stream.as_raw_fd(),
            tx,
        }
    }

    /// Send a reply (`device`: it answers a forwarded command).
    pub fn reply(&self, cookie: u64, errno: u32, data: Vec<u8>, device: bool) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.closed {
            return;
        }
        if st.queued == 0 {
            let head = reply_header(cookie, errno);
            match send_nonblocking(self.fd, &head, &data) {
                Ok(n) if n == head.len() + data.len() => {
                    if device {
                        st.direct_device_replies += 1;
                        if st.expecting {
                            let _ = self.tx.send(WriterMsg::Check);
                        }
                    }
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
        });
    }
}

/// `head` then `data` in one `sendmsg`, never blocking, never raising SIGPIPE: the bytes
/// the socket took.
fn send_nonblocking(fd: RawFd, head: &[u8], data: &[u8]) -> io::Result<usize> {
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
        // SAFETY: `fd` is the connection's socket, open while the writer holds its stream
        // (`closed` is set before the writer drops it, under the same lock).
        let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
