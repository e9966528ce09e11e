//! A FIFO of `Copy` values in a ring whose size is a power of two (an index is a mask,
//! not a compare-and-wrap), grown by doubling when full: the per-die operation queues of
//! the scheduler and the event queue's lanes. `std`'s `VecDeque` wraps with a compare and
//! a subtraction on every access; this one allocates nothing once grown either.

#[derive(Clone)]
pub struct Ring<T> {
    ring: Vec<T>,
    head: u32,
    len: u32,
}

impl<T> Default for Ring<T> {
    fn default() -> Self {
        Ring {
            ring: Vec::new(),
            head: 0,
            len: 0,
        }
    }
}

impl<T: Copy> Ring<T> {
    /// The smallest ring allocated.
    const MIN_SLOTS: usize = 8;

    #[inline(always)]
    fn mask(&self) -> u32 {
        (self.ring.len() as u32).wrapping_sub(1)
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    #[inline(always)]
    pub fn push_back(&mut self, value: T) {
        if self.len as usize == self.ring.len() {
            self.grow(value);
        }
        let i = (self.head + self.len) & self.mask();
        self.ring[i as usize] = value;
        self.len += 1;
    }

    /// Double the ring, oldest value first (`fill` pads the new slots).
    #[cold]
    fn grow(&mut self, fill: T) {
        let size = (2 * self.ring.len()).max(Self::MIN_SLOTS);
        let mut ring = Vec::with_capacity(size);
        ring.extend(self.iter().copied());
        ring.resize(size, fill);
        self.ring = ring;
        self.head = 0;
    }

    #[inline(always)]
    pub fn front(&self) -> Option<&T> {
        (self.len > 0).then(|| &self.ring[self.head as usize])
    }

    #[inline(always)]
    pub fn back(&self) -> Option<&T> {
        (self.len > 0).then(|| &self.ring[((self.head + self.len - 1) & self.mask()) as usize])
    }

    /// Drop the front value (the ring is not empty).
    #[inline(always)]
    pub fn advance(&mut self) {
        debug_assert!(self.len > 0);
        self.head = (self.head + 1) & self.mask();
        self.len -= 1;
    }

    /// Ask for the cache lines of the front two values (a hint; nothing changes): a deep
    /// queue's front was written long ago, its lines have left the caches.
    #[inline(always)]
    pub fn prefetch_front_two(&self) {
        let second = ((self.head + 1) & self.mask()) as usize;
        crate::prefetch::prefetch_bytes(&self.ring, self.head as usize, 0);
        let last_byte = std::mem::size_of::<T>().saturating_sub(1);
        crate::prefetch::prefetch_bytes(&self.ring, second, last_byte);
    }

    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        let v = *self.front()?;
        self.advance();
        Some(v)
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        let mask = self.mask();
        (0..self.len).map(move |k| &self.ring[((self.head + k) & mask) as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;
    use proptest::prelude::*;

    proptest! {
        /// The ring keeps FIFO order through wrap-around and growth (against `VecDeque`).
        #[test]
        fn ring_is_a_fifo(steps in proptest::collection::vec(0u8..3, 1..200)) {
            let mut q = Ring::default();
            let mut model = std::collections::VecDeque::new();
            for (i, step) in steps.into_iter().enumerate() {
                if step < 2 {
                    q.push_back(i);
                    model.push_back(i);
                } else if step == 2 && i % 2 == 0 {
                    prop_assert_eq!(q.pop_front(), model.pop_front());
                } else if let Some(&front) = q.front() {
                    prop_assert_eq!(Some(front), model.pop_front());
                    q.advance();
                } else {
                    prop_assert!(model.is_empty());
                }
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.back(), model.back());
                prop_assert!(q.iter().eq(model.iter()));
            }
        }
    }
}
