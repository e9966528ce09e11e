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

    /// The value `k` places behind the front (`k < len`).
    #[inline(always)]
    pub fn get(&self, k: usize) -> &T {
        debug_assert!(k < self.len as usize);
        &self.ring[((self.head + k as u32) & self.mask()) as usize]
    }

    /// Remove the values at the positions from the front whose bits are set in `taken`
    /// (all below `len`), keeping the others in order: the values ahead of the last one
    /// taken move back over the gaps, so the cost is that position, not the length.
    #[inline]
    pub fn remove_at(&mut self, taken: u32) {
        if taken == 0 {
            return;
        }
        let last = 31 - taken.leading_zeros();
        debug_assert!(last < self.len);
        let mask = self.mask();
        let mut to = last;
        for from in (0..last).rev() {
            if taken & (1 << from) == 0 {
                self.ring[((self.head + to) & mask) as usize] =
                    self.ring[((self.head + from) & mask) as usize];
                to -= 1;
            }
        }
        let n = taken.count_ones();
        self.head = (self.head + n) & mask;
        self.len -= n;
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

        /// Removing values from the middle keeps the others in order (against `Vec`).
        #[test]
        fn remove_at_keeps_the_rest_in_order(
            pushed in 1usize..40,
            popped in 0usize..20,
            taken in any::<u32>(),
        ) {
            let mut q = Ring::default();
            for i in 0..pushed + popped {
                q.push_back(i);
            }
            for _ in 0..popped {
                q.pop_front();
            }
            let window = pushed.min(32);
            let taken = if window == 32 { taken } else { taken & ((1u32 << window) - 1) };
            let mut model: Vec<usize> = q.iter().copied().collect();
            let gets: Vec<usize> = (0..q.len()).map(|k| *q.get(k)).collect();
            prop_assert_eq!(&gets, &model);
            let mut k = 0;
            model.retain(|_| {
                k += 1;
                k > 32 || taken & (1 << (k - 1)) == 0
            });
            q.remove_at(taken);
            prop_assert!(q.iter().eq(model.iter()));
            q.push_back(1000);
            model.push(1000);
            prop_assert!(q.iter().eq(model.iter()));
        }
    }
}
