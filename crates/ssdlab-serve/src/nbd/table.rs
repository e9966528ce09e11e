//! The open connections: the acceptors add them (or refuse, or make room by closing the
//! connection idle longest), each connection marks when it enters transmission and leaves
//! when it ends, and the server closes all of them at shutdown.

use std::collections::HashMap;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::out::{Out, WriterMsg};
use super::socket::Socket;
use super::Limits;
use crate::log::Log;

/// An open connection: its socket and writer channel (to close it), and once in
/// transmission its reply path (how long it has been idle).
struct Slot {
    socket: Arc<Socket>,
    tx: Sender<WriterMsg>,
    out: Option<Arc<Out>>,
}

impl Slot {
    fn close(&self) {
        self.socket.shutdown();
        let _ = self.tx.send(WriterMsg::Close);
    }
}

/// Open connections by id.
#[derive(Default)]
pub(crate) struct Table {
    slots: Mutex<HashMap<u32, Slot>>,
}

impl Table {
    fn lock(&self) -> MutexGuard<'_, HashMap<u32, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds the connection on `socket` (its writer listens on `tx`) under the id `next_id`
    /// gives, if fewer than `max` are open or one idle long enough makes room ([`Limits`]);
    /// else says so on `log` and returns `None` (the caller closes the socket).
    pub(crate) fn open(
        &self,
        max: u32,
        limits: &Limits,
        log: &Log,
        next_id: impl FnOnce() -> u32,
        socket: &Arc<Socket>,
        tx: &Sender<WriterMsg>,
    ) -> Option<u32> {
        let mut slots = self.lock();
        if slots.len() >= max as usize && !evict_idle(&mut slots, limits, log) {
            log.say(&format!(
                "serve: refused a connection: {} connections open already (max_connections), closing",
                slots.len()
            ));
            return None;
        }
        let id = next_id();
        slots.insert(
            id,
            Slot {
                socket: Arc::clone(socket),
                tx: tx.clone(),
                out: None,
            },
        );
        Some(id)
    }

    /// Connection `id` entered the transmission phase with reply path `out`.
    pub(crate) fn in_transmission(&self, id: u32, out: &Arc<Out>) {
        if let Some(s) = self.lock().get_mut(&id) {
            s.out = Some(Arc::clone(out));
        }
    }

    /// Connection `id` ended (or never started): its socket is shut down and it leaves.
    pub(crate) fn remove(&self, id: u32) {
        if let Some(s) = self.lock().remove(&id) {
            s.socket.shutdown();
        }
    }

    /// Closes every open connection (they leave as their threads end).
    pub(crate) fn close_all(&self) {
        for s in self.lock().values() {
            s.close();
        }
    }
}

/// With every slot taken: close the connection idle longest if it has been idle
/// `idle_timeout`, logged; true if one was closed.
fn evict_idle(slots: &mut HashMap<u32, Slot>, limits: &Limits, log: &Log) -> bool {
    let Some(limit) = limits.idle_timeout else {
        return false;
    };
    let now = Instant::now();
    let idlest = slots
        .iter()
        .filter_map(|(&id, s)| Some((s.out.as_ref()?.idle_for(now)?, id)))
        .filter(|&(idle, _)| idle >= limit)
        .max();
    let Some((idle, id)) = idlest else {
        return false;
    };
    if let Some(s) = slots.remove(&id) {
        log.say(&format!(
            "serve: connection {id}: idle for {:.1} s with every connection slot taken: closed to make room for a new client",
            idle.as_secs_f64()
        ));
        s.close();
    }
    true
}
