//! The open connections: the acceptors add them (or refuse, or make room by closing the
//! connection idle longest), each connection marks when it enters transmission and leaves
//! when it ends, and the server closes all of them at shutdown.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::socket::Socket;
use super::Limits;
use crate::log::Log;

/// When a connection in transmission was last active and what it has at the device,
/// written by the device loop (the wire), read by the acceptors (idle eviction).
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// Nanoseconds since [`epoch`] of the last request forwarded or reply written.
    last_ns: AtomicU64,
    at_device: AtomicU32,
}

/// The instant `Activity` times count from.
fn epoch() -> Instant {
    static E: OnceLock<Instant> = OnceLock::new();
    *E.get_or_init(Instant::now)
}

impl Activity {
    pub(crate) fn new() -> Activity {
        let a = Activity::default();
        a.touch(0);
        a
    }

    /// Active now, with `at_device` commands at the device.
    pub(crate) fn touch(&self, at_device: u32) {
        let ns = Instant::now().saturating_duration_since(epoch()).as_nanos() as u64;
        self.last_ns.store(ns, Ordering::Relaxed);
        self.at_device.store(at_device, Ordering::Relaxed);
    }

    /// How long the connection has been idle (`None` while a command is at the device).
    fn idle_for(&self, now: Instant) -> Option<Duration> {
        if self.at_device.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let now_ns = now.saturating_duration_since(epoch()).as_nanos() as u64;
        Some(Duration::from_nanos(
            now_ns.saturating_sub(self.last_ns.load(Ordering::Relaxed)),
        ))
    }
}

/// An open connection: its socket (to close it), and once in transmission its activity
/// (how long it has been idle).
struct Slot {
    socket: Arc<Socket>,
    activity: Option<Arc<Activity>>,
}

impl Slot {
    fn close(&self) {
        self.socket.shutdown();
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

    /// Adds the connection on `socket` under the id `next_id`
    /// gives, if fewer than `max` are open or one idle long enough makes room ([`Limits`]);
    /// else says so on `log` and returns `None` (the caller closes the socket).
    pub(crate) fn open(
        &self,
        max: u32,
        limits: &Limits,
        log: &Log,
        next_id: impl FnOnce() -> u32,
        socket: &Arc<Socket>,
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
                activity: None,
            },
        );
        Some(id)
    }

    /// Connection `id` entered the transmission phase; `activity` says when it is idle.
    /// False if it was closed meanwhile (shutdown, or evicted).
    pub(crate) fn in_transmission(&self, id: u32, activity: &Arc<Activity>) -> bool {
        match self.lock().get_mut(&id) {
            Some(s) => {
                s.activity = Some(Arc::clone(activity));
                true
            }
            None => false,
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
        .filter_map(|(&id, s)| Some((s.activity.as_ref()?.idle_for(now)?, id)))
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
