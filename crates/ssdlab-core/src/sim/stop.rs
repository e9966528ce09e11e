//! Stopping running simulations from outside (Ctrl-C, SIGTERM, Python's
//! KeyboardInterrupt). One process-wide flag: a front end sets it ([`request_stop`], safe
//! in a signal handler: one atomic store); every simulation of the process polls it where
//! it already does periodic work (every 64 Ki events of the timed loop, every 64 Ki
//! requests of the functional mode and units of preconditioning) and returns
//! [`SimError::Interrupted`]. Process-wide so that simulations started deep inside an
//! experiment (`reproduce`, on rayon's threads) stop too. Between polls nothing changes:
//! a run that is not stopped gives the same results.

use crate::error::{Result, SimError};
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Ask every running simulation of the process to stop at its next poll.
/// Async-signal-safe (a relaxed atomic store).
pub fn request_stop() {
    STOP.store(true, Ordering::Relaxed);
}

/// Whether a stop was requested (and not cleared since).
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Forget a stop request (a front end that goes on after an interrupt: Python).
pub fn clear_stop() {
    STOP.store(false, Ordering::Relaxed);
}

/// `Err(SimError::Interrupted)` once a stop was requested; for loops that poll it.
#[inline]
pub fn check() -> Result<()> {
    if STOP.load(Ordering::Relaxed) {
        Err(SimError::Interrupted)
    } else {
        Ok(())
    }
}
