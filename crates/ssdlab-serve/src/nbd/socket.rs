//! A client's socket (Unix or TCP), shared by everything that uses it.
//!
//! One connection's socket is used by its handshake thread, then by the device loop's
//! wire (`wire.rs`: requests and replies); the server's connection table shuts it down to
//! close the connection. They share one [`Socket`] through an `Arc`: the file descriptor
//! is closed when the last of them lets go, so none of them can use a descriptor that was
//! closed (or reused) under it. Reads and writes go through `&Socket`, as std's streams
//! allow.

use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// A connected client socket.
#[derive(Debug)]
pub(crate) enum Socket {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Socket {
    /// Shuts both directions down (the peer sees the end; blocked reads and writes on it
    /// return); errors (already shut down, the peer gone) are of no interest.
    pub(crate) fn shutdown(&self) {
        let _ = match self {
            Socket::Unix(s) => s.shutdown(Shutdown::Both),
            Socket::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }

    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Socket::Unix(s) => s.set_read_timeout(t),
            Socket::Tcp(s) => s.set_read_timeout(t),
        }
    }

    pub(crate) fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Socket::Unix(s) => s.set_nonblocking(on),
            Socket::Tcp(s) => s.set_nonblocking(on),
        }
    }

    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Socket::Unix(s) => s.set_write_timeout(t),
            Socket::Tcp(s) => s.set_write_timeout(t),
        }
    }
}

impl AsFd for Socket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Socket::Unix(s) => s.as_fd(),
            Socket::Tcp(s) => s.as_fd(),
        }
    }
}

impl Read for &Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Unix(s) => (&*s).read(buf),
            Socket::Tcp(s) => (&*s).read(buf),
        }
    }
}

impl Write for &Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Unix(s) => (&*s).write(buf),
            Socket::Tcp(s) => (&*s).write(buf),
        }
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Socket::Unix(s) => (&*s).write_vectored(bufs),
            Socket::Tcp(s) => (&*s).write_vectored(bufs),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
