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

/// The event queue and the simulated clock.
pub struct EventQueue<E: Copy> {
    /// Binary min-heap on `(time_ns, seq)`: `heap[i]` fires no later than its children
    /// `heap[2i + 1]`, `heap[2i + 2]`.
    heap: Vec<Entry<E>>,
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

    /// Schedule `event` `delay_ns` from now.
    #[inline]
    pub fn schedule_in(&mut self, delay_ns: SimTime, event: E) {
        self.schedule_at(self.now_ns + delay_ns, event);
    }

    /// Remove the earliest event and advance the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let last = self.heap.pop()?;
        let top = match self.heap.first() {
            Some(&top) => {
                self.sift_down_from_root(last);
                top
            }
            None => last,
        };
        self.now_ns = top.time_ns;
        Some((top.time_ns, top.event))
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
        self.heap.first().map(|e| e.time_ns)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
    /// sort of what was scheduled says.
    #[test]
    fn pops_in_time_then_schedule_order_under_random_interleaving() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut q = EventQueue::new();
        let mut pending: Vec<(u64, u32)> = Vec::new();
        let mut id = 0u32;
        for _ in 0..20_000 {
            if rng.gen_bool(0.55) || q.is_empty() {
                let t = q.now_ns() + rng.gen_range(0..50u64);
                q.schedule_at(t, id);
                pending.push((t, id));
                id += 1;
            } else {
                // The earliest pending (time, id): ids grow in schedule order.
                let (i, &want) = pending.iter().enumerate().min_by_key(|(_, p)| **p).unwrap();
                pending.swap_remove(i);
                assert_eq!(q.pop(), Some(want));
                assert_eq!(q.peek_time_ns(), pending.iter().min().map(|p| p.0));
            }
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
