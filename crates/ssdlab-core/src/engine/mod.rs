//! Discrete-event engine: a priority queue of `(time_ns, sequence)`-ordered events.
//!
//! The engine knows nothing of SSDs. Events scheduled for the same time fire in the order
//! they were scheduled (FIFO), which makes runs deterministic. Entries are never removed
//! from the heap: a component that wants to cancel a pending event bumps its own
//! generation counter and ignores events that carry an older one (see [`Generation`]).
//! The heap grows to the peak number of pending events and is reused; pushing and popping
//! allocate nothing once it has grown.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Simulated time in nanoseconds.
pub type SimTime = u64;

struct Entry<E> {
    time_ns: SimTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time_ns == other.time_ns && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // BinaryHeap is a max-heap: invert so the earliest (time, seq) is on top.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time_ns, other.seq).cmp(&(self.time_ns, self.seq))
    }
}

/// The event queue and the simulated clock.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    now_ns: SimTime,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
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
        let time_ns = time_ns.max(self.now_ns);
        self.heap.push(Entry {
            time_ns,
            seq: self.next_seq,
            event,
        });
        self.next_seq += 1;
    }

    /// Schedule `event` `delay_ns` from now.
    #[inline]
    pub fn schedule_in(&mut self, delay_ns: SimTime, event: E) {
        self.schedule_at(self.now_ns + delay_ns, event);
    }

    /// Remove the earliest event and advance the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let e = self.heap.pop()?;
        self.now_ns = e.time_ns;
        Some((e.time_ns, e.event))
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time_ns(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.time_ns)
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
