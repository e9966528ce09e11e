//! Listeners (Unix socket, TCP), the acceptor threads, and [`Server`] (shutdown).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::conn::{self, WriterMsg};
use super::out::Out;
use super::{Event, Export, Limits, ListenOptions};

/// A connected client socket (Unix or TCP).
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }

    pub(crate) fn shutdown(&self) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }

    pub(crate) fn set_read_timeout(&self, t: Option<std::time::Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }

    pub(crate) fn set_write_timeout(&self, t: Option<std::time::Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(t),
            Stream::Tcp(s) => s.set_write_timeout(t),
        }
    }
}

impl std::os::fd::AsRawFd for Stream {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write_vectored(bufs),
            Stream::Tcp(s) => s.write_vectored(bufs),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What the server shares with its acceptors and connections.
pub(crate) struct Shared {
    pub(crate) export: Export,
    pub(crate) events: Sender<Event>,
    pub(crate) stopping: AtomicBool,
    next_conn: AtomicU32,
    max_connections: u32,
    pub(crate) limits: Limits,
    /// Open connections, to close them.
    pub(crate) conns: Mutex<HashMap<u32, Slot>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// An open connection: a handle on its socket and on its writer channel, and once in
/// transmission its reply path (how long it has been idle).
pub(crate) struct Slot {
    pub(crate) stream: Stream,
    pub(crate) tx: Sender<WriterMsg>,
    out: Option<Arc<Out>>,
}

impl Slot {
    fn close(&self) {
        self.stream.shutdown();
        let _ = self.tx.send(WriterMsg::Close);
    }
}

impl Shared {
    /// Connection `id` entered the transmission phase.
    pub(crate) fn in_transmission(&self, id: u32, out: &Arc<Out>) {
        if let Some(s) = self.conns.lock().unwrap().get_mut(&id) {
            s.out = Some(Arc::clone(out));
        }
    }
}

/// With every slot taken: close the connection idle longest if it has been idle
/// `idle_timeout`, logged; true if one was closed.
fn evict_idle(conns: &mut HashMap<u32, Slot>, limits: &Limits) -> bool {
    let Some(limit) = limits.idle_timeout else {
        return false;
    };
    let now = std::time::Instant::now();
    let idlest = conns
        .iter()
        .filter_map(|(&id, s)| Some((s.out.as_ref()?.idle_for(now)?, id)))
        .filter(|&(idle, _)| idle >= limit)
        .max();
    let Some((idle, id)) = idlest else {
        return false;
    };
    if let Some(s) = conns.remove(&id) {
        eprintln!(
            "serve: connection {id}: idle for {:.1} s with every connection slot taken: closed to make room for a new client",
            idle.as_secs_f64()
        );
        s.close();
    }
    true
}

/// A running server. Dropping it (or [`Server::shutdown`]) stops accepting, removes the
/// socket file and closes every connection.
pub struct Server {
    shared: Arc<Shared>,
    socket_path: Option<PathBuf>,
    tcp_addr: Option<SocketAddr>,
    acceptors: Vec<JoinHandle<()>>,
}

/// Binds the listeners of `opts` and starts accepting clients for `export`; events go to
/// `events`. Errors: neither `socket` nor `tcp` given, `max_connections` 0, an invalid
/// export (`Export::validate`), a socket path in use by a live server or that is not a
/// socket, and bind failures — all `io::Error`s whose message names the cause.
pub fn listen(opts: &ListenOptions, export: Export, events: Sender<Event>) -> io::Result<Server> {
    let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
    if opts.socket.is_none() && opts.tcp.is_none() {
        return Err(invalid(
            "serve: no listener: give a Unix socket path or a TCP address".into(),
        ));
    }
    if opts.max_connections == 0 {
        return Err(invalid("serve: max_connections must be at least 1".into()));
    }
    export
        .validate()
        .map_err(|e| invalid(format!("serve: export '{}': {e}", export.name)))?;

    let unix = match &opts.socket {
        Some(path) => Some(bind_unix(path)?),
        None => None,
    };
    let tcp = match opts.tcp {
        Some(addr) => Some(TcpListener::bind(addr).map_err(|e| {
            io::Error::new(e.kind(), format!("serve: cannot listen on {addr}: {e}"))
        })?),
        None => None,
    };
    let tcp_addr = match &tcp {
        Some(l) => Some(l.local_addr()?),
        None => None,
    };
    let shared = Arc::new(Shared {
        export,
        events,
        stopping: AtomicBool::new(false),
        next_conn: AtomicU32::new(0),
        max_connections: opts.max_connections,
        limits: opts.limits,
        conns: Mutex::new(HashMap::new()),
        threads: Mutex::new(Vec::new()),
    });
    let mut acceptors = Vec::new();
    if let Some(l) = unix {
        let shared = Arc::clone(&shared);
        acceptors.push(
            std::thread::Builder::new()
                .name("nbd-accept-unix".into())
                .spawn(move || {
                    for s in l.incoming() {
                        if shared.stopping.load(Ordering::SeqCst) {
                            break;
                        }
                        match s {
                            Ok(s) => accept(&shared, Stream::Unix(s)),
                            Err(e) => accept_error(&e),
                        }
                    }
                })?,
        );
    }
    if let Some(l) = tcp {
        let shared = Arc::clone(&shared);
        acceptors.push(
            std::thread::Builder::new()
                .name("nbd-accept-tcp".into())
                .spawn(move || {
                    for s in l.incoming() {
                        if shared.stopping.load(Ordering::SeqCst) {
                            break;
                        }
                        match s {
                            Ok(s) => {
                                let _ = s.set_nodelay(true);
                                accept(&shared, Stream::Tcp(s))
                            }
                            Err(e) => accept_error(&e),
                        }
                    }
                })?,
        );
    }
    Ok(Server {
        shared,
        socket_path: opts.socket.clone(),
        tcp_addr,
        acceptors,
    })
}

fn accept_error(e: &io::Error) {
    eprintln!("serve: accept failed: {e}");
    // EMFILE and friends: do not spin.
    std::thread::sleep(std::time::Duration::from_millis(10));
}

/// Binds a Unix socket at `path`, replacing a stale socket file only if nothing listens on
/// it.
fn bind_unix(path: &Path) -> io::Result<UnixListener> {
    let shown = path.display();
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("serve: {shown} exists and is not a socket; refusing to replace it"),
            ));
        }
        match UnixStream::connect(path) {
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("serve: {shown}: another server is listening on this socket"),
                ))
            }
            Err(_) => std::fs::remove_file(path).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("serve: {shown}: cannot remove the stale socket: {e}"),
                )
            })?,
        }
    }
    UnixListener::bind(path)
        .map_err(|e| io::Error::new(e.kind(), format!("serve: cannot listen on {shown}: {e}")))
}

/// Takes one accepted socket: refuses it over the connection limit, else starts its
/// connection thread.
fn accept(shared: &Arc<Shared>, stream: Stream) {
    if shared.stopping.load(Ordering::SeqCst) {
        stream.shutdown();
        return;
    }
    let mut threads = shared.threads.lock().unwrap();
    threads.retain(|t| !t.is_finished());
    let mut conns = shared.conns.lock().unwrap();
    if conns.len() >= shared.max_connections as usize && !evict_idle(&mut conns, &shared.limits) {
        eprintln!(
            "serve: refused a connection: {} connections open already (max_connections), closing",
            conns.len()
        );
        stream.shutdown();
        return;
    }
    let id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
    let (tx, rx) = mpsc::channel();
    let handle = match stream.try_clone() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("serve: connection {id}: cannot clone the socket ({e}), closing");
            return;
        }
    };
    conns.insert(
        id,
        Slot {
            stream: handle,
            tx: tx.clone(),
            out: None,
        },
    );
    drop(conns);
    let shared2 = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name(format!("nbd-conn-{id}"))
        .spawn(move || conn::run(&shared2, id, stream, tx, rx));
    match spawned {
        Ok(t) => threads.push(t),
        Err(e) => {
            eprintln!("serve: connection {id}: cannot start its thread ({e}), closing");
            if let Some(s) = shared.conns.lock().unwrap().remove(&id) {
                s.stream.shutdown();
            }
        }
    }
}

impl Server {
    /// The Unix socket path, if listening on one.
    pub fn socket_path(&self) -> Option<&Path> {
        self.socket_path.as_deref()
    }

    /// The bound TCP address (the actual port when 0 was asked), if listening on TCP.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp_addr
    }

    /// Stops accepting, removes the socket file and closes every connection (replies not yet
    /// written are dropped; each connection that reached transmission still gets its
    /// `Event::Disconnected`). Waits for the server's threads to end.
    pub fn shutdown(self) {
        drop(self)
    }

    fn stop(&mut self) {
        if self.shared.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        // Wake the acceptors (blocked in accept) with a connection of our own.
        let mut woken = true;
        if let Some(path) = &self.socket_path {
            woken &= UnixStream::connect(path).is_ok();
        }
        if let Some(addr) = self.tcp_addr {
            let target = match addr {
                SocketAddr::V4(a) if a.ip().is_unspecified() => {
                    SocketAddr::from((Ipv4Addr::LOCALHOST, a.port()))
                }
                SocketAddr::V6(a) if a.ip().is_unspecified() => {
                    SocketAddr::from((Ipv6Addr::LOCALHOST, a.port()))
                }
                a => a,
            };
            woken &= TcpStream::connect(target).is_ok();
        }
        if woken {
            for a in self.acceptors.drain(..) {
                let _ = a.join();
            }
        }
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
        for s in self.shared.conns.lock().unwrap().values() {
            s.close();
        }
        let threads = std::mem::take(&mut *self.shared.threads.lock().unwrap());
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
