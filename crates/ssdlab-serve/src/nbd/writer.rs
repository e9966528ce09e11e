//! A connection's writer thread: writes the replies the device loop could not send
//! directly (`out.rs`), in order, batched into few writes.

use std::io::{self, IoSlice, Write};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::out::{Charge, Out, WriterMsg};
use super::proto::{reply_header, REPLY_HEADER_BYTES};
use super::socket::Socket;

/// Read data up to this size is copied into the writer's batch buffer; larger data goes
/// out with the buffered bytes in one vectored write.
const SMALL_DATA_BYTES: usize = 64 * 1024;
/// The writer flushes its batch buffer once it holds this much.
const BATCH_BYTES: usize = 256 * 1024;

/// Starts connection `id`'s writer on `socket`, fed by `rx`; it ends as
/// [`write_replies`] says, with why if not cleanly.
pub(crate) fn spawn(
    id: u32,
    socket: Arc<Socket>,
    rx: Receiver<WriterMsg>,
    out: Arc<Out>,
) -> io::Result<JoinHandle<Option<String>>> {
    std::thread::Builder::new()
        .name(format!("nbd-write-{id}"))
        .spawn(move || write_replies(&socket, &rx, &out))
}

/// The writer thread: writes the replies queued to it (those the socket did not take at
/// once, `out.rs`), batching those queued together into one write. Ends once the reader is
/// done and every forwarded command was answered, on `Close`, or on a write error
/// (`Some(why)`). Shuts the socket down when it ends.
fn write_replies(socket: &Socket, rx: &Receiver<WriterMsg>, out: &Out) -> Option<String> {
    let why = write_loop(socket, rx, out)
        .err()
        .map(|e| format!("write error ({e}), closing"));
    out.close();
    socket.shutdown();
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
    out.written(w.messages, w.requests, w.bytes);
}

fn write_loop(socket: &Socket, rx: &Receiver<WriterMsg>, out: &Out) -> io::Result<()> {
    let mut stream = socket;
    let mut buf: Vec<u8> = Vec::with_capacity(BATCH_BYTES + SMALL_DATA_BYTES + REPLY_HEADER_BYTES);
    let mut expected: Option<u64> = None;
    let mut written = 0u64;
    // Device replies written: the writer's own and those that went out directly.
    let all_written = |written: u64| written + out.direct_device_replies();
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
                    out.expect_replies();
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
fn write_two(mut stream: &Socket, a: &[u8], b: &[u8]) -> io::Result<()> {
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
