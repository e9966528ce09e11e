//! A request source drawn on a thread of its own: the simulation takes requests from
//! chunks a worker drew ahead, so reading and parsing a trace overlaps with simulating
//! it on another CPU (trace replay ran ≈ 1.7× as fast on a 2-CPU machine, docs/speed.md).
//!
//! Only sources that ask for it qualify ([`RequestSource::thread_counters`]), and the
//! requests, counters and errors the simulation sees are exactly those of drawing on its
//! own thread, so every result is the same with or without the worker. The worker counts
//! into a private set of workload counters; each chunk notes which request's drawing
//! moved them and by how much, and that share is added to the workload's counters when
//! the request is taken. Requests are handed out one per call, as the source itself
//! gives them, so the simulation draws no further ahead than it would without the worker.
//!
//! Chunks go back to the worker once read, so the steady state allocates nothing. A
//! source error arrives in its place, after the requests drawn before it; a worker that
//! panicked re-raises its panic on the simulating thread (never a silent end of a flow).

use crate::stats::{WorkloadStats, WorkloadStatsSnapshot};
use crate::{HostOp, HostRequest, RequestSource, WorkloadError};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Requests per chunk (32 KiB of requests).
const CHUNK: usize = 1024;
/// Chunks drawn ahead at most.
const DEPTH: usize = 4;

/// Workers started in this process so far (tests check that a run used one).
static WORKERS_STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Workers running now.
static WORKERS_LIVE: AtomicUsize = AtomicUsize::new(0);

/// How many sources have been drawn on a worker in this process so far.
pub fn workers_started() -> u64 {
    WORKERS_STARTED.load(Ordering::Relaxed)
}

/// Most workers running at once in this process: [`set_max_workers`] if called, else
/// `SSDLAB_WORKLOAD_THREADS` when set to a number, else one fewer than the CPUs the
/// process may run on — so simulations run in parallel (a sweep on every CPU) take none
/// beyond the CPUs.
pub fn max_workers() -> usize {
    match MAX_WORKERS.load(Ordering::Relaxed) {
        UNSET => {
            let n = match std::env::var("SSDLAB_WORKLOAD_THREADS") {
                Ok(v) => v.trim().parse().ok(),
                Err(_) => None,
            }
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(0, |n| n.get() - 1));
            let _ = MAX_WORKERS.compare_exchange(UNSET, n, Ordering::Relaxed, Ordering::Relaxed);
            MAX_WORKERS.load(Ordering::Relaxed)
        }
        n => n,
    }
}

/// Set [`max_workers`] for this process (tests; a program that knows better).
pub fn set_max_workers(n: usize) {
    MAX_WORKERS.store(n.min(UNSET - 1), Ordering::Relaxed);
}

const UNSET: usize = usize::MAX;
static MAX_WORKERS: AtomicUsize = AtomicUsize::new(UNSET);

/// A place among the running workers, given back when dropped.
struct Slot;

impl Slot {
    fn take() -> Option<Slot> {
        let max = max_workers();
        WORKERS_LIVE
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        WORKERS_LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

const EMPTY: HostRequest = HostRequest {
    tag: 0,
    placement_id: 0,
    arrival_ns: 0,
    op: HostOp::Write,
    offset_bytes: 0,
    size_bytes: 0,
    journal: None,
};

/// Requests in order; the counts their drawing added (`(i, d)`: drawing request `i`, or
/// for `i == reqs.len()` reaching the end or the error); the source's error, if it
/// raised one. A chunk shorter than [`CHUNK`] is the last.
#[derive(Default)]
struct Chunk {
    reqs: Vec<HostRequest>,
    counts: Vec<(u32, WorkloadStatsSnapshot)>,
    err: Option<WorkloadError>,
}

/// A source drawn on a worker thread (see the module documentation).
pub struct Threaded {
    rx: Option<Receiver<Chunk>>,
    /// Chunks read to the end go back to the worker.
    back: SyncSender<Chunk>,
    cur: Chunk,
    pos: usize,
    /// Next entry of `cur.counts` to add.
    count_pos: usize,
    /// The workload's counters.
    shared: WorkloadStats,
    /// The last chunk arrived: after `cur`, the source is exhausted (or `cur.err`).
    last: bool,
    /// Set when the reader is gone: the worker stops between two draws.
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
}

impl Threaded {
    /// Draw `source` on a new thread; `Err(source)` when it does not ask for one, when
    /// [`max_workers`] are running, or when no thread can be started (the caller then
    /// draws on its own thread).
    pub fn spawn(mut source: Box<dyn RequestSource>) -> Result<Threaded, Box<dyn RequestSource>> {
        if source.thread_counters().is_none() {
            return Err(source);
        }
        let Some(slot) = Slot::take() else {
            return Err(source);
        };
        let Some(stats) = source.thread_counters() else {
            return Err(source);
        };
        let private = WorkloadStats::default();
        let shared = std::mem::replace(stats, private.clone());
        let (tx, rx) = sync_channel::<Chunk>(DEPTH);
        let (back, back_rx) = sync_channel::<Chunk>(DEPTH + 2);
        // The source is handed over once the thread runs, so a failed start keeps it.
        let (give, take) = sync_channel::<Box<dyn RequestSource>>(1);
        let stop = Arc::new(AtomicBool::new(false));
        let worker_stop = Arc::clone(&stop);
        let worker = std::thread::Builder::new()
            .name("ssdlab-workload".into())
            .spawn(move || {
                let _slot = slot; // given back when the worker ends
                if let Ok(source) = take.recv() {
                    draw_chunks(source, &private, &worker_stop, &tx, &back_rx);
                }
            });
        let restore = |mut source: Box<dyn RequestSource>, shared: WorkloadStats| {
            if let Some(stats) = source.thread_counters() {
                *stats = shared;
            }
            source
        };
        let Ok(worker) = worker else {
            return Err(restore(source, shared));
        };
        if let Err(e) = give.send(source) {
            return Err(restore(e.0, shared));
        }
        WORKERS_STARTED.fetch_add(1, Ordering::Relaxed);
        Ok(Threaded {
            rx: Some(rx),
            back,
            cur: Chunk::default(),
            pos: 0,
            count_pos: 0,
            shared,
            last: false,
            stop,
            worker: Some(worker),
        })
    }

    /// Take the next chunk; false when none will come.
    fn next_chunk(&mut self) -> bool {
        let old = std::mem::take(&mut self.cur);
        if old.reqs.capacity() > 0 {
            let _ = self.back.try_send(old); // the worker allocates if it is gone or full
        }
        self.pos = 0;
        self.count_pos = 0;
        match self.rx.as_ref().map(|rx| rx.recv()) {
            Some(Ok(chunk)) => {
                self.last = chunk.reqs.len() < CHUNK || chunk.err.is_some();
                self.cur = chunk;
                true
            }
            _ => {
                // The worker ended without sending its last chunk: it panicked.
                self.last = true;
                self.rx = None;
                if let Some(Err(panic)) = self.worker.take().map(|w| w.join()) {
                    std::panic::resume_unwind(panic);
                }
                false
            }
        }
    }

    /// Add the counts of drawing the chunk's requests up to index `end` (inclusive).
    fn add_counts(&mut self, end: usize) {
        while let Some((i, d)) = self.cur.counts.get(self.count_pos) {
            if *i as usize > end {
                break;
            }
            self.shared.add_snapshot(d);
            self.count_pos += 1;
        }
    }
}

/// The worker: fill chunks, one request per call (the counters `private` compared after
/// each), until the source ends or the reader is gone (`stop`, or a failed send).
fn draw_chunks(
    mut source: Box<dyn RequestSource>,
    private: &WorkloadStats,
    stop: &AtomicBool,
    tx: &SyncSender<Chunk>,
    back: &Receiver<Chunk>,
) {
    let mut seen = private.snapshot();
    loop {
        let mut chunk = back.try_recv().unwrap_or_default();
        chunk.reqs.clear();
        chunk.reqs.resize(CHUNK, EMPTY);
        chunk.counts.clear();
        let mut n = 0;
        while n < CHUNK {
            if stop.load(Ordering::Relaxed) {
                return; // what it would still draw, nobody takes
            }
            let (k, e) = source.next_batch(&mut chunk.reqs[n..n + 1]);
            let now = private.snapshot();
            if now != seen {
                chunk.counts.push((n as u32, now.since(&seen)));
                seen = now;
            }
            n += k;
            if k == 0 || e.is_some() {
                chunk.err = e;
                break;
            }
        }
        chunk.reqs.truncate(n);
        let last = n < CHUNK || chunk.err.is_some();
        if tx.send(chunk).is_err() || last {
            return;
        }
    }
}

impl RequestSource for Threaded {
    fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
        let mut r = EMPTY;
        Ok(self.next_into(&mut r)?.then_some(r))
    }

    fn next_into(&mut self, out: &mut HostRequest) -> Result<bool, WorkloadError> {
        loop {
            if let Some(r) = self.cur.reqs.get(self.pos) {
                *out = *r;
                self.pos += 1;
                self.add_counts(self.pos - 1);
                return Ok(true);
            }
            if self.last {
                self.add_counts(self.pos);
                return match self.cur.err.take() {
                    Some(e) => Err(e),
                    None => Ok(false),
                };
            }
            if !self.next_chunk() {
                return Ok(false);
            }
        }
    }
}

impl Drop for Threaded {
    fn drop(&mut self) {
        // The worker stops before its next draw, or its next send fails once the receiver
        // is gone; wait for it to end.
        self.stop.store(true, Ordering::Relaxed);
        self.rx = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::VecSource;

    fn req(i: u64) -> HostRequest {
        HostRequest {
            offset_bytes: i * 4096,
            size_bytes: 4096,
            ..EMPTY
        }
    }

    /// Yields `good` requests, then an error (`fail`) or the end; counts a filtered
    /// record on drawing every third request and two at the end, as a trace counts the
    /// lines it skips.
    struct Counted {
        next: u64,
        good: u64,
        fail: bool,
        stats: WorkloadStats,
    }

    impl RequestSource for Counted {
        fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
            if self.next == self.good {
                self.stats.add_filtered();
                self.stats.add_filtered();
                if self.fail {
                    return Err(WorkloadError::config("t", format!("bad at {}", self.next)));
                }
                return Ok(None);
            }
            if self.next.is_multiple_of(3) {
                self.stats.add_filtered();
            }
            self.next += 1;
            Ok(Some(req(self.next - 1)))
        }
        fn thread_counters(&mut self) -> Option<&mut WorkloadStats> {
            Some(&mut self.stats)
        }
    }

    fn spawn(s: impl RequestSource + 'static) -> Threaded {
        set_max_workers(1000); // tests run in parallel, on machines of any size
        Threaded::spawn(Box::new(s)).unwrap_or_else(|_| panic!("no worker"))
    }

    /// Up to `limit` requests (batches of `step`): their units and the error, if any.
    fn drain(s: &mut dyn RequestSource, step: usize, limit: usize) -> (Vec<u64>, Option<String>) {
        let mut buf = vec![EMPTY; step];
        let mut got = Vec::new();
        while got.len() < limit {
            let (n, err) = s.next_batch(&mut buf);
            got.extend(buf[..n].iter().map(|r| r.offset_bytes / 4096));
            if let Some(e) = err {
                return (got, Some(e.to_string()));
            }
            if n == 0 {
                break;
            }
        }
        (got, None)
    }

    /// A counting source: the same requests, error and counters as drawing it inline,
    /// wherever the reader stops (mid-chunk, at a chunk's end, at the end, at the error).
    #[test]
    fn counts_and_errors_as_inline() {
        let c = CHUNK as u64;
        for (good, fail) in [
            (0, true),
            (5, true),
            (c, false),
            (2 * c + 1, true),
            (c + 2, false),
        ] {
            for limit in [1, 7, c as usize, c as usize + 1, 3 * c as usize, usize::MAX] {
                let make = || Counted {
                    next: 0,
                    good,
                    fail,
                    stats: WorkloadStats::default(),
                };
                let mut inline = make();
                let inline_stats = inline.stats.clone();
                let want = drain(&mut inline, 64, limit);
                let threaded = make();
                let threaded_stats = threaded.stats.clone();
                let mut t = spawn(threaded);
                let got = drain(&mut t, 64, limit);
                assert_eq!(got, want, "good {good}, limit {limit}");
                assert_eq!(
                    threaded_stats.snapshot(),
                    inline_stats.snapshot(),
                    "good {good}, limit {limit}"
                );
            }
        }
    }

    /// Sources that do not say they may be drawn ahead stay with the caller.
    #[test]
    fn inline_sources_are_handed_back() {
        let s = Threaded::spawn(Box::new(VecSource::new(vec![req(3)])));
        let mut s = s.err().expect("handed back");
        assert_eq!(s.next_request().unwrap().unwrap().offset_bytes, 3 * 4096);
    }

    /// Dropped while the worker is blocked on a full channel: the worker ends.
    #[test]
    fn dropped_early_ends_the_worker() {
        let mut t = spawn(Counted {
            next: 0,
            good: 20 * CHUNK as u64,
            fail: false,
            stats: WorkloadStats::default(),
        });
        let mut one = [EMPTY; 1];
        assert_eq!(t.next_batch(&mut one).0, 1);
        drop(t); // joins the worker: the test would hang otherwise
    }

    /// Dropped while the worker draws from a slow source (a trace on a stalled pipe, or
    /// lines all filtered out): the worker stops at its next draw instead of filling its
    /// chunk.
    #[test]
    fn drop_does_not_wait_for_a_chunk() {
        struct Slow(WorkloadStats);
        impl RequestSource for Slow {
            fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
                std::thread::sleep(std::time::Duration::from_millis(1));
                Ok(Some(req(1)))
            }
            fn thread_counters(&mut self) -> Option<&mut WorkloadStats> {
                Some(&mut self.0)
            }
        }
        let mut t = spawn(Slow(WorkloadStats::default()));
        let mut one = [EMPTY; 1];
        assert_eq!(t.next_batch(&mut one).0, 1);
        let start = std::time::Instant::now();
        drop(t);
        // Another whole chunk would take 1 s; a draw, 1 ms.
        assert!(start.elapsed() < std::time::Duration::from_millis(500));
    }

    /// A panic in the source is raised on the reading thread, not taken as the end.
    #[test]
    #[should_panic(expected = "source broke")]
    fn worker_panic_is_raised_to_the_reader() {
        struct Broken(WorkloadStats);
        impl RequestSource for Broken {
            fn next_request(&mut self) -> Result<Option<HostRequest>, WorkloadError> {
                panic!("source broke");
            }
            fn thread_counters(&mut self) -> Option<&mut WorkloadStats> {
                Some(&mut self.0)
            }
        }
        let mut t = spawn(Broken(WorkloadStats::default()));
        let mut one = [EMPTY; 1];
        let _ = t.next_batch(&mut one);
    }
}
