//! Ctrl-C (SIGINT) and SIGTERM during `run` and `reproduce`: the first asks every running
//! simulation to stop ([`ssdlab_core::sim::stop`]); the command then fails with
//! `SimError::Interrupted`, its staged outputs are dropped ([`crate::output::StagedDir`])
//! and the process exits with 128 + the signal number (130 for Ctrl-C) and one line on
//! stderr. A second signal ends the process at once (exit status the same; its temporary
//! directory `OUT/.ssdlab-tmp-<pid>` may then stay).

use std::sync::atomic::{AtomicI32, Ordering};

/// The first signal received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work here: atomics and _exit.
    if RECEIVED
        .compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        // SAFETY: _exit is async-signal-safe and ends the process at once.
        unsafe { libc::_exit(128 + sig) };
    }
    ssdlab_core::sim::stop::request_stop();
}

/// Catch SIGINT and SIGTERM (instead of dying at once) for the rest of the process.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; the handler only touches atomics and
        // calls _exit, both async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The signal that interrupted the command, if one did: its name and the exit status.
pub fn received() -> Option<(&'static str, i32)> {
    match RECEIVED.load(Ordering::Relaxed) {
        0 => None,
        s if s == libc::SIGINT => Some(("Ctrl-C (SIGINT)", 128 + s)),
        s if s == libc::SIGTERM => Some(("SIGTERM", 128 + s)),
        s => Some(("a signal", 128 + s)),
    }
}
