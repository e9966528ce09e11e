//! How the device loop's thread asks the scheduler for its CPU in realtime mode: EEVDF's
//! shortest slice (no privilege), or, when asked (`--realtime-priority N`), `SCHED_FIFO`
//! at priority N (root, `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` of N).
//!
//! Why `SCHED_FIFO` helps (docs/serve.md, "Speed"): the loop spins near each event's due
//! time, so under the default policy a woken client is often placed on the loop's CPU (a
//! Unix socket's reply is a synchronous wake-up) and runs there first; the replies due
//! meanwhile leave late. A `SCHED_FIFO` thread is not preempted by ordinary threads, which
//! then run on the other CPUs. It needs a CPU to spare: on one CPU the clients would get
//! only what the kernel's real-time throttling leaves them (5 % by default).

use std::io;

/// Ask the scheduler for a slice of `ns` (EEVDF, Linux 6.12 on): a thread with a short
/// slice preempts one with the default slice when it wakes. It gets no more CPU, only
/// sooner, so no privilege is needed; older kernels ignore it.
pub fn short_slice(ns: u64) -> io::Result<()> {
    let mut a = get_attr()?;
    a.sched_runtime = ns;
    set_attr(&a)
}

/// The calling thread runs under `SCHED_FIFO` at `priority` (1 to 99) until the guard is
/// dropped or left, which restores its policy, priority and nice value (and its slice as
/// the kernel reported it). Threads it starts meanwhile do not inherit the policy
/// (`SCHED_FLAG_RESET_ON_FORK`).
pub struct Fifo {
    before: libc::sched_attr,
}

/// `sched_attr.sched_flags`: children of the thread start under the default policy.
const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;

impl Fifo {
    /// Switch the calling thread to `SCHED_FIFO` at `priority`; the error says what it
    /// needs when the kernel refuses.
    pub fn enter(priority: u32) -> Result<Fifo, String> {
        if !(1..=99).contains(&priority) {
            return Err(format!(
                "--realtime-priority {priority}: a SCHED_FIFO priority from 1 to 99"
            ));
        }
        let before = get_attr().map_err(|e| {
            format!("--realtime-priority {priority}: could not read this thread's scheduling attributes ({e})")
        })?;
        let mut a = before;
        a.sched_policy = libc::SCHED_FIFO as u32;
        a.sched_priority = priority;
        a.sched_nice = 0;
        a.sched_runtime = 0;
        a.sched_flags = SCHED_FLAG_RESET_ON_FORK;
        set_attr(&a).map_err(|e| refused(priority, &e))?;
        Ok(Fifo { before })
    }

    /// Check that `priority` would be granted (before long work), leaving the thread as
    /// it was (an error if it could not be left).
    pub fn probe(priority: u32) -> Result<(), String> {
        Fifo::enter(priority)?.leave().map_err(|e| {
            format!("--realtime-priority {priority}: could not leave SCHED_FIFO after checking it ({e})")
        })
    }

    /// Restore the thread's attributes, saying whether the kernel took them.
    pub fn leave(self) -> io::Result<()> {
        let r = set_attr(&self.before);
        std::mem::forget(self);
        r
    }
}

impl Drop for Fifo {
    fn drop(&mut self) {
        // Going back to a normal policy needs no privilege (`leave` says if it failed).
        let _ = set_attr(&self.before);
    }
}

fn refused(priority: u32, e: &io::Error) -> String {
    format!(
        "--realtime-priority {priority}: the scheduler refused SCHED_FIFO ({e}): it needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of at least {priority} (ulimit -r), and a real-time budget in its cgroup (cpu.rt_runtime_us) where one is set"
    )
}

fn get_attr() -> io::Result<libc::sched_attr> {
    // SAFETY: sched_attr is plain data; the call fills this thread's (pid 0) attributes,
    // the structure's size given.
    unsafe {
        let mut a: libc::sched_attr = std::mem::zeroed();
        let size = std::mem::size_of::<libc::sched_attr>() as u32;
        if libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut a as *mut libc::sched_attr,
            size,
            0,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        a.size = size;
        Ok(a)
    }
}

fn set_attr(a: &libc::sched_attr) -> io::Result<()> {
    // SAFETY: `a` is a live, initialised sched_attr with its size set; the call sets this
    // thread's (pid 0) attributes.
    unsafe {
        if libc::syscall(libc::SYS_sched_setattr, 0, a as *const libc::sched_attr, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's policy, without the reset-on-fork flag.
    fn policy() -> i32 {
        raw_policy() & !libc::SCHED_RESET_ON_FORK
    }

    fn raw_policy() -> i32 {
        // SAFETY: no arguments but the pid (0: this thread).
        unsafe { libc::sched_getscheduler(0) }
    }

    /// Out of range is refused naming the flag; granted, the guard restores the policy and
    /// a thread started meanwhile does not inherit it; refused (no privilege), the error
    /// says what is needed; a probe leaves the thread as it was.
    #[test]
    fn fifo_is_entered_and_left_or_refused_with_the_reason() {
        for bad in [0, 100] {
            let e = Fifo::enter(bad).err().expect("out of range");
            assert!(e.contains("from 1 to 99"), "{e}");
        }
        let before = policy();
        match Fifo::enter(1) {
            Ok(g) => {
                assert_eq!(raw_policy(), libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK);
                let child = std::thread::spawn(policy).join().unwrap();
                assert_eq!(child, libc::SCHED_OTHER, "not inherited");
                g.leave().unwrap();
                assert_eq!(policy(), before);
                let g = Fifo::enter(1).unwrap();
                drop(g);
                assert_eq!(policy(), before, "dropped, it is left too");
                Fifo::probe(1).unwrap();
            }
            Err(e) => {
                assert!(e.contains("CAP_SYS_NICE"), "{e}");
                assert!(Fifo::probe(1).is_err());
            }
        }
        assert_eq!(policy(), before, "a probe leaves the thread as it was");
    }
}
