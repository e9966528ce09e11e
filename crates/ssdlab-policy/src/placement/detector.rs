//! The journal detector of `slc-journal` (spec 05): it learns where the file system's
//! journal is from the write pattern alone — a fixed LBA range written sequentially and
//! wrapping around — with no hint from the workload.
//!
//! It follows up to [`STREAMS`] sequential write streams (a write that starts where a
//! stream's last write ended continues it; any other write starts a stream, replacing the
//! least recently used one never continued). A write at or before the start of a stream
//! that has covered at least `min_journal_bytes`, or to no later than the end of that
//! stream's first write (a header written just before the log, such as jbd2's journal
//! superblock: the log wraps to the block after it), starts a *second lap* of it; when that lap has reached the first
//! lap's start and itself covered `min_journal_bytes`, the range from the lower of the two
//! laps' starts to the highest address either reached is the journal (if it spans
//! `min_journal_bytes ..= max_journal_bytes`). From then on a write is journal when it
//! starts inside that range.
//!
//! A lap must cover the minimum itself because a real journal rewrites its first block
//! between laps: jbd2 rewrites the journal superblock (at the start of the first lap seen
//! after mount) whenever a checkpoint moves the log's tail, a write "at the first lap's
//! start" that is no wrap; taking it for one learned a range ending wherever the head
//! happened to be (issue 35, point 7: a real ext4 over `ssdlab serve`). Covering the
//! minimum also lets the writes the block layer reorders at the real wrap (the first blocks
//! after the wrap before the last ones before it) land before the range is fixed.
//!
//! A sequential writer that never comes back (a file copy, a log that does not wrap) never
//! fires, nor do random writes (their streams never cover the minimum span).

use crate::flash::NONE;

/// Sequential streams followed at once.
pub const STREAMS: usize = 16;

#[derive(Clone, Copy, Debug)]
pub struct DetectorParams {
    pub min_journal_bytes: u64,
    pub max_journal_bytes: u64,
    pub unit_bytes: u32,
    pub logical_units: u32,
}

#[derive(Clone, Copy, Debug)]
struct Stream {
    /// First unit of the first lap (as observed).
    start: u32,
    /// Unit after the last write.
    next: u32,
    /// Unit after the first write.
    first_end: u32,
    /// Highest unit reached + 1.
    hi: u32,
    /// The stream this one is a second lap of (`NONE`: none), and that stream's start.
    wrap: u32,
    parent_start: u32,
    /// Writes that continued it.
    hits: u32,
    last_use: u64,
}

const EMPTY: Stream = Stream {
    start: NONE,
    next: NONE,
    first_end: NONE,
    hi: 0,
    wrap: NONE,
    parent_start: NONE,
    hits: 0,
    last_use: 0,
};

#[derive(Clone)]
pub struct JournalDetector {
    min_units: u32,
    max_units: u32,
    /// `STREAMS` streams (boxed: the placement enum stays small).
    streams: Box<[Stream; STREAMS]>,
    tick: u64,
    /// The journal, `[lo, hi)` units, once found.
    range: Option<(u32, u32)>,
}

impl JournalDetector {
    pub fn new(p: &DetectorParams) -> JournalDetector {
        let u = p.unit_bytes.max(1) as u64;
        JournalDetector {
            min_units: (p.min_journal_bytes / u).clamp(2, p.logical_units as u64) as u32,
            max_units: (p.max_journal_bytes / u).min(p.logical_units as u64) as u32,
            streams: Box::new([EMPTY; STREAMS]),
            tick: 0,
            range: None,
        }
    }

    /// The journal found so far.
    pub fn range(&self) -> Option<(u32, u32)> {
        self.range
    }

    #[inline]
    pub fn is_journal(&self, lpn: u32) -> bool {
        matches!(self.range, Some((lo, hi)) if lpn >= lo && lpn < hi)
    }

    /// A write of `units` units at `lpn`: learn from it; returns whether it is journal
    /// (by what was known before it).
    pub fn observe(&mut self, lpn: u32, units: u32) -> bool {
        let journal = self.is_journal(lpn);
        self.tick += 1;
        let end = lpn.saturating_add(units);
        if let Some(i) = self.streams.iter().position(|s| s.next == lpn) {
            let s = &mut self.streams[i];
            s.next = end;
            s.hi = s.hi.max(end);
            s.hits += 1;
            s.last_use = self.tick;
            self.check_lap(i);
            return journal;
        }
        // A jump back to or before the start of a long stream, or to no later than the end
        // of its first write (a header before the log), may be its wrap: follow it as a child stream (the parent
        // keeps its place, so a random write that merely lands there does not break the
        // real stream).
        let (min, max) = (self.min_units, self.max_units);
        let parent = (0..STREAMS).find(|&i| {
            let s = &self.streams[i];
            s.start != NONE
                && s.hi - s.start >= min
                && (lpn <= s.start || lpn <= s.first_end)
                && s.hi - lpn.min(s.start) <= max
        });
        let i = self.victim();
        self.streams[i] = Stream {
            start: lpn,
            next: end,
            first_end: end,
            hi: end,
            wrap: parent.map_or(NONE, |p| p as u32),
            parent_start: parent.map_or(NONE, |p| self.streams[p].start),
            hits: 0,
            last_use: self.tick,
        };
        self.check_lap(i);
        journal
    }

    /// The slot a new stream takes: the least recently used stream that was never
    /// continued (random writes churn those), then short ones; a stream that has covered
    /// the minimum span goes only when all have.
    fn victim(&self) -> usize {
        let min = self.min_units;
        (0..STREAMS)
            .min_by_key(|&i| {
                let s = &self.streams[i];
                let long = s.start != NONE && s.hi - s.start >= min;
                (long, s.hits > 0, s.last_use)
            })
            .unwrap_or(0)
    }

    /// Stream `i` is the second lap of its parent, has reached the parent's start and
    /// covered the minimum span: the journal runs from the lower start to the highest unit
    /// either lap reached.
    fn check_lap(&mut self, i: usize) {
        let s = self.streams[i];
        if s.wrap == NONE || s.next < s.parent_start {
            return;
        }
        let p = self.streams[s.wrap as usize];
        if p.start != s.parent_start {
            self.streams[i].wrap = NONE; // the parent was replaced meanwhile
            return;
        }
        if s.hi - s.start < self.min_units {
            return; // not a lap yet (e.g. a header rewritten at the first lap's start)
        }
        let (lo, hi) = (s.start.min(p.start), p.hi.max(s.hi));
        let span = hi - lo;
        if span >= self.min_units && span <= self.max_units && self.range.is_none() {
            self.range = Some((lo, hi));
        }
        self.streams[s.wrap as usize] = EMPTY;
        self.streams[i] = EMPTY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det() -> JournalDetector {
        JournalDetector::new(&DetectorParams {
            min_journal_bytes: 64 * 4096,
            max_journal_bytes: 4096 * 4096,
            unit_bytes: 4096,
            logical_units: 1 << 20,
        })
    }

    /// A journal of 1,000 units at `base`, written in commits of 1–9 units from an offset
    /// inside it, interleaved with random writes elsewhere.
    fn journal_run(base: u32, d: &mut JournalDetector, laps: u32) -> u32 {
        let mut x = 12345u64;
        let mut rnd = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            (x >> 33) as u32
        };
        let (len, mut head) = (1000u32, 370u32);
        let mut written = 0;
        let mut found_after = u32::MAX;
        while written < laps * len {
            let n = 1 + rnd() % 9;
            let n = n.min(len - head);
            d.observe(base + head, n);
            head = (head + n) % len;
            written += n;
            d.observe(2_000_000 % (1 << 20) + rnd() % 100_000, 2);
            if d.range().is_some() && found_after == u32::MAX {
                found_after = written;
            }
        }
        found_after
    }

    #[test]
    fn finds_a_journal_anywhere_within_two_laps() {
        for base in [0u32, 777, 500_000, (1 << 20) - 1000] {
            let mut d = det();
            let after = journal_run(base, &mut d, 3);
            assert_eq!(d.range(), Some((base, base + 1000)), "base {base}");
            assert!(after <= 2000, "found after {after} units");
            assert!(d.is_journal(base + 999) && !d.is_journal(base + 1000));
        }
    }

    /// jbd2 as a real ext4 writes it (seen through `ssdlab serve`): the journal
    /// superblock (unit 0 of the journal) written at mount, the log from unit 1 in
    /// commits of 2–5 units (descriptor and blocks, then the commit block), the superblock
    /// rewritten every ~300 units (a checkpoint moving the log's tail), the log wrapping to
    /// unit 1 with the block layer sending the blocks after the wrap before the last one
    /// before it, random writes elsewhere. Returns units written when the range was found.
    fn jbd2_run(base: u32, len: u32, d: &mut JournalDetector, laps: u32) -> u32 {
        let mut x = 777u64;
        let mut rnd = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            (x >> 33) as u32
        };
        d.observe(base, 1); // mount: the superblock
        let (mut head, mut written, mut since_sb) = (1u32, 0u32, 0u32);
        let mut found_after = u32::MAX;
        while written < laps * len {
            let n = 2 + rnd() % 4;
            if head + n > len {
                // Wrapping commit: the blocks after the wrap arrive first.
                let tail = len - head;
                d.observe(base + 1, n - tail);
                d.observe(base + head, tail);
                head = 1 + n - tail;
            } else {
                d.observe(base + head, n - 1);
                d.observe(base + head + n - 1, 1);
                head = if head + n == len { 1 } else { head + n };
            }
            written += n;
            since_sb += n;
            if since_sb >= 300 {
                d.observe(base, 1);
                since_sb = 0;
            }
            d.observe(2_000_000 % (1 << 20) + rnd() % 100_000, 1);
            if d.range().is_some() && found_after == u32::MAX {
                found_after = written;
            }
        }
        found_after
    }

    #[test]
    fn finds_a_jbd2_journal_whose_superblock_is_rewritten_between_laps() {
        for base in [0u32, 777, 500_000, (1 << 20) - 1000] {
            let mut d = det();
            let after = jbd2_run(base, 1000, &mut d, 3);
            assert_eq!(d.range(), Some((base, base + 1000)), "base {base}");
            assert!(after <= 1000 + 64 + 5, "found after {after} units");
        }
    }

    #[test]
    fn ignores_sequential_data_logs_that_never_wrap_and_random_writes() {
        let mut d = det();
        // A sequential fill of the whole space, in 32-unit writes.
        for l in (0..(1u32 << 20)).step_by(32) {
            d.observe(l, 32);
        }
        // A log appending forever, interleaved with random writes.
        let mut x = 99u64;
        for i in 0..100_000u32 {
            d.observe(300_000 + i * 3, 3);
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            d.observe((x >> 40) as u32 % (1 << 20), 2);
        }
        assert_eq!(d.range(), None);
    }

    #[test]
    fn a_sequential_pass_repeated_over_more_than_the_maximum_is_not_a_journal() {
        let mut d = det();
        for _ in 0..3 {
            for l in (0..100_000u32).step_by(16) {
                d.observe(l, 16);
            }
        }
        assert_eq!(
            d.range(),
            None,
            "100,000 units exceed the 4,096-unit maximum"
        );
    }
}
