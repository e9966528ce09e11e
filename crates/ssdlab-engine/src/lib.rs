//! Discrete-event engine: a priority queue of `(time_ns, sequence)`-ordered events.
//!
//! The engine knows nothing of SSDs. Events scheduled for the same time fire in the order
//! they were scheduled (FIFO), which makes runs deterministic. Entries are never removed
//! from the heap: a component that wants to cancel a pending event bumps its own
//! generation counter and ignores events that carry an older one (see [`Generation`]).
//! The heap grows to the peak number of pending events and is reused; pushing and popping
//! allocate nothing once it has grown.
//!
//! The heap is our own binary min-heap rather than `std::collections::BinaryHeap`: std's
//! sift-up writes the new entry into the vector and reads it straight back (a 16-byte
//! load over three 8-byte stores, a store-forwarding stall on every push); here the
//! moving entry stays in registers and is written once, where it lands. `(time, seq)`
//! is a strict total order, so any correct heap pops the same sequence.
//!
//! Beside the heap, a few *lanes*: FIFOs for events that come a fixed delay after they
//! are scheduled (a request's completion after the buffer access, a read's sensing).
//! The clock never goes back, so such events are scheduled in `(time, seq)` order and a
//! FIFO keeps them sorted for a push and a pop of a few instructions each, instead of a
//! sift through the heap. `pop` takes the earliest of the heap's top and the lanes'
//! fronts, so the order is exactly the heap's alone; an event that would break a lane's
//! order (a shorter delay than the lane's last) goes to the heap instead.

pub mod prefetch;
pub mod ring;

use crate::ring::Ring;

/// Lanes beside the heap (see the module documentation).
pub const LANES: usize = 4;

/// Simulated time in nanoseconds.
pub type SimTime = u64;

#[derive(Clone, Copy)]
struct Entry<E> {
    time_ns: SimTime,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    /// Whether `self` fires before `other`.
    #[inline(always)]
    fn before(&self, other: &Self) -> bool {
        (self.time_ns, self.seq) < (other.time_ns, other.seq)
    }
}

/// Sequence bit of events that go after every other event of their instant
/// ([`EventQueue::schedule_last_at`]).
const LAST_OF_INSTANT: u64 = 1 << 63;

/// The event queue and the simulated clock.
pub struct EventQueue<E: Copy> {
    /// Binary min-heap on `(time_ns, seq)`: `heap[i]` fires no later than its children
    /// `heap[2i + 1]`, `heap[2i + 2]`.
    heap: Vec<Entry<E>>,
    /// FIFOs in `(time, seq)` order (fixed-delay events).
    lanes: [Ring<Entry<E>>; LANES],
    now_ns: SimTime,
    next_seq: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: Vec::with_capacity(1024),
            lanes: std::array::from_fn(|_| Ring::default()),
            now_ns: 0,
            next_seq: 0,
        }
    }

    /// Current simulated time: the time of the last event popped.
    #[inline]
    pub fn now_ns(&self) -> SimTime {
        self.now_ns
    }

    /// Schedule `event` at absolute time `time_ns` (never in the past).
    #[inline]
    pub fn schedule_at(&mut self, time_ns: SimTime, event: E) {
        debug_assert!(time_ns >= self.now_ns, "event scheduled in the past");
        let e = Entry {
            time_ns: time_ns.max(self.now_ns),
            seq: self.next_seq,
            event,
        };
        self.next_seq += 1;
        self.push(e);
    }

    /// Put `e` in the heap.
    #[inline]
    fn push(&mut self, e: Entry<E>) {
        // Sift up: parents later than `e` move down one level; `e` is written once.
        let mut i = self.heap.len();
        self.heap.push(e);
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if !e.before(&p) {
                break;
            }
            self.heap[i] = p;
            i = parent;
        }
        self.heap[i] = e;
    }

    /// Move the clock to `time_ns` without an event (never back, never past the next
    /// event): what is scheduled from now on counts from there.
    pub fn advance_to(&mut self, time_ns: SimTime) {
        debug_assert!(self.peek_time_ns().is_none_or(|t| t >= time_ns));
        self.now_ns = self.now_ns.max(time_ns);
    }

    /// Schedule `event` at `time_ns` after every other event of that instant, whenever
    /// scheduled (such events keep their own order): a host request's arrival sees the
    /// device as every event of its instant left it. The rule a server that admits requests
    /// between events follows too, so its recorded trace replays in the same order.
    #[inline]
    pub fn schedule_last_at(&mut self, time_ns: SimTime, event: E) {
        debug_assert!(time_ns >= self.now_ns, "event scheduled in the past");
        let e = Entry {
            time_ns: time_ns.max(self.now_ns),
            seq: self.next_seq | LAST_OF_INSTANT,
            event,
        };
        self.next_seq += 1;
        self.push(e);
    }

    /// Schedule `event` `delay_ns` from now.
    #[inline]
    pub fn schedule_in(&mut self, delay_ns: SimTime, event: E) {
        self.schedule_at(self.now_ns + delay_ns, event);
    }

    /// Schedule `event` at `time_ns` on lane `lane` (for events a fixed delay from now);
    /// the heap takes it when it would fire before the lane's last event. Pops in the
    /// same order as [`EventQueue::schedule_at`].
    #[inline(always)]
    pub fn schedule_in_lane(&mut self, lane: usize, time_ns: SimTime, event: E) {
        let time_ns = time_ns.max(self.now_ns);
        let q = &mut self.lanes[lane];
        if q.back().is_some_and(|b| b.time_ns > time_ns) {
            return self.schedule_at(time_ns, event);
        }
        q.push_back(Entry {
            time_ns,
            seq: self.next_seq,
            event,
        });
        self.next_seq += 1;
    }

    /// Remove the earliest event and advance the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        // The earliest of the heap's top and the lanes' fronts.
        let mut from = LANES;
        let mut best = self.heap.first();
        for (k, lane) in self.lanes.iter().enumerate() {
            if let Some(f) = lane.front() {
                if best.is_none_or(|b| f.before(b)) {
                    best = Some(f);
                    from = k;
                }
            }
        }
        let e = if from < LANES {
            self.lanes[from].pop_front()?
        } else {
            self.pop_heap()?
        };
        self.now_ns = e.time_ns;
        Some((e.time_ns, e.event))
    }

    /// Remove the heap's top.
    #[inline(always)]
    fn pop_heap(&mut self) -> Option<Entry<E>> {
        let last = self.heap.pop()?;
        Some(match self.heap.first() {
            Some(&top) => {
                self.sift_down_from_root(last);
                top
            }
            None => last,
        })
    }

    /// Put `e` in the root's place: earlier children move up one level.
    #[inline(always)]
    fn sift_down_from_root(&mut self, e: Entry<E>) {
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.heap[right].before(&self.heap[left]) {
                right
            } else {
                left
            };
            let c = self.heap[child];
            if !c.before(&e) {
                break;
            }
            self.heap[i] = c;
            i = child;
        }
        self.heap[i] = e;
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time_ns(&self) -> Option<SimTime> {
        let lanes = self.lanes.iter().filter_map(|l| l.front());
        self.heap
            .first()
            .into_iter()
            .chain(lanes)
            .map(|e| e.time_ns)
            .min()
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.lanes.iter().map(Ring::len).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events scheduled so far (a cheap progress and determinism fingerprint).
    pub fn scheduled_count(&self) -> u64 {
        self.next_seq
    }
}

/// Generation counter for cancellable events: an event carries the generation current when
/// it was scheduled; bumping the counter cancels every pending event of the older generation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Generation(pub u32);

impl Generation {
    pub fn bump(&mut self) -> Generation {
        self.0 = self.0.wrapping_add(1);
        *self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_fifo() {
        let mut q = EventQueue::new();
        q.schedule_at(10, 'a');
        q.schedule_at(5, 'b');
        q.schedule_at(10, 'c');
        q.schedule_at(5, 'd');
        let order: Vec<(u64, char)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(5, 'b'), (5, 'd'), (10, 'a'), (10, 'c')]);
        assert_eq!(q.now_ns(), 10);
    }

    /// Random schedules interleaved with pops come out in (time, schedule order), as a
    /// sort of what was scheduled says. With `lanes`, half the events go on the lanes,
    /// each with its own delay and now and then a shorter one (which the heap must take):
    /// the lanes change nothing in the order. Returns how many events the lanes took.
    fn check_random_interleaving(seed: u64, lanes: bool) -> u32 {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut q = EventQueue::new();
        let mut pending: Vec<(u64, u32)> = Vec::new();
        let delays: [u64; LANES] =
            std::array::from_fn(|k| rng.gen_range(0..if k % 2 == 0 { 5u64 } else { 40 }));
        let (mut id, mut laned) = (0u32, 0);
        for _ in 0..20_000 {
            if rng.gen_bool(0.55) || q.is_empty() {
                let now = q.now_ns();
                let lane = if lanes {
                    rng.gen_range(0..2 * LANES)
                } else {
                    LANES
                };
                let t = if lane < LANES {
                    let t = now + delays[lane].saturating_sub(rng.gen_range(0..3) / 2);
                    laned += q.lanes[lane].back().is_none_or(|b| b.time_ns <= t) as u32;
                    q.schedule_in_lane(lane, t, id);
                    t
                } else {
                    let t = now + rng.gen_range(0..50u64);
                    q.schedule_at(t, id);
                    t
                };
                pending.push((t, id));
                id += 1;
            } else {
                // The earliest pending (time, id): ids grow in schedule order.
                let (i, &want) = pending.iter().enumerate().min_by_key(|(_, p)| **p).unwrap();
                pending.swap_remove(i);
                assert_eq!(q.pop(), Some(want));
                assert_eq!(q.peek_time_ns(), pending.iter().min().map(|p| p.0));
            }
            assert_eq!(q.len(), pending.len());
        }
        laned
    }

    #[test]
    fn pops_in_time_then_schedule_order_under_random_interleaving() {
        assert_eq!(check_random_interleaving(7, false), 0);
    }

    #[test]
    fn lanes_pop_in_the_heap_order_under_random_interleaving() {
        for seed in 0..8 {
            let laned = check_random_interleaving(seed, true);
            assert!(laned > 3_000, "the lanes took {laned} events");
        }
    }

    #[test]
    fn generation_cancels_older_events() {
        let mut q = EventQueue::new();
        let mut gen = Generation::default();
        q.schedule_at(10, gen);
        let newer = gen.bump();
        q.schedule_at(20, newer);
        let live: Vec<u64> = std::iter::from_fn(|| q.pop())
            .filter(|(_, g)| *g == gen)
            .map(|(t, _)| t)
            .collect();
        assert_eq!(live, vec![20]);
    }
}
