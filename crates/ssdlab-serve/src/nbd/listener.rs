//! Listeners (Unix socket, TCP), the acceptor threads, and [`Server`] (shutdown).

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::conn::{self, Context};
use super::socket::Socket;
use super::table::Table;
use super::wire::Wire;
use super::{Export, ListenOptions};

/// What the server shares with its acceptors and handshake threads.
struct Shared {
    conn: Context,
    stopping: Arc<AtomicBool>,
    next_conn: AtomicU32,
    max_connections: u32,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// A running server. Dropping it (or [`Server::shutdown`]) stops accepting, removes the
/// socket file and closes every connection.
pub struct Server {
    shared: Arc<Shared>,
    socket_path: Option<PathBuf>,
    tcp_addr: Option<SocketAddr>,
    acceptors: Vec<JoinHandle<()>>,
}

/// Binds the listeners of `opts` and starts accepting clients for `export` (a thread per
/// listener, a short-lived one per handshake); the connections in transmission are served
/// by the returned [`Wire`], which the caller polls from its own thread (the device loop).
/// Errors: neither `socket` nor `tcp` given, `max_connections` 0, an invalid
/// export (`Export::validate`), a socket path in use by a live server or that is not a
/// socket, and bind failures — all `io::Error`s whose message names the cause.
pub fn listen(opts: &ListenOptions, export: Export) -> io::Result<(Server, Wire)> {
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
    let (handoff, handoffs) = mpsc::channel();
    let (waker, woken) = UnixStream::pair()?;
    waker.set_nonblocking(true)?;
    let table = Arc::new(Table::default());
    let stopping = Arc::new(AtomicBool::new(false));
    let wire = Wire::new(
        export.clone(),
        opts.limits,
        opts.log.clone(),
        Arc::clone(&table),
        handoffs,
        woken,
        Arc::clone(&stopping),
    );
    let shared = Arc::new(Shared {
        conn: Context {
            export,
            handoff,
            waker,
            limits: opts.limits,
            log: opts.log.clone(),
            table,
        },
        stopping,
        next_conn: AtomicU32::new(0),
        max_connections: opts.max_connections,
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
                            Ok(s) => accept(&shared, Socket::Unix(s)),
                            Err(e) => accept_error(&shared, &e),
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
                                accept(&shared, Socket::Tcp(s))
                            }
                            Err(e) => accept_error(&shared, &e),
                        }
                    }
                })?,
        );
    }
    Ok((
        Server {
            shared,
            socket_path: opts.socket.clone(),
            tcp_addr,
            acceptors,
        },
        wire,
    ))
}

fn accept_error(shared: &Shared, e: &io::Error) {
    shared.conn.log.say(&format!("serve: accept failed: {e}"));
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
/// handshake thread.
fn accept(shared: &Arc<Shared>, socket: Socket) {
    if shared.stopping.load(Ordering::SeqCst) {
        socket.shutdown();
        return;
    }
    let mut threads = shared.threads.lock().unwrap_or_else(|e| e.into_inner());
    threads.retain(|t| !t.is_finished());
    let ctx = &shared.conn;
    let socket = Arc::new(socket);
    let next_id = || shared.next_conn.fetch_add(1, Ordering::SeqCst);
    let opened = ctx.table.open(
        shared.max_connections,
        &ctx.limits,
        &ctx.log,
        next_id,
        &socket,
    );
    let Some(id) = opened else {
        socket.shutdown();
        return;
    };
    let shared2 = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name(format!("nbd-conn-{id}"))
        .spawn(move || conn::run(&shared2.conn, id, socket));
    match spawned {
        Ok(t) => threads.push(t),
        Err(e) => {
            ctx.log.say(&format!(
                "serve: connection {id}: cannot start its thread ({e}), closing"
            ));
            ctx.table.remove(id);
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
    /// written are dropped; each connection that reached transmission gets its
    /// `Event::Disconnected` from the wire's next polls, and [`Wire::finished`] turns true
    /// once every one has). Waits for the acceptor and handshake threads to end.
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
        self.shared.conn.table.close_all();
        // Wake the wire if it waits in `poll` (it sees the closed sockets then).
        let _ = io::Write::write(&mut &self.shared.conn.waker, &[1]);
        let threads = std::mem::take(
            &mut *self
                .shared
                .threads
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
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
