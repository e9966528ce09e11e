//! Write lanes: one [`WriteBuffer`] per lane (an FDP reclaim-unit handle, a zoned
//! device's active-zone slot) sharing one capacity, so a page packs units of one lane
//! only. Without lanes there is one, and everything is the plain buffer's.

use super::WriteBuffer;
use crate::base::{Version, MAX_LANES};

/// Each lane's sequence number at one moment (a flush's marks).
pub type Marks = [u64; MAX_LANES];

/// Bits of a program's owner token that name the lane (the rest is the lane buffer's
/// page token, modulo 2^28).
const LANE_BITS: u32 = 5;
const TOKEN_MASK: u32 = (1 << (32 - LANE_BITS)) - 1;

pub struct LaneBuffers {
    /// Lane 0's buffer, inline (without lanes, the only one: no indirection on the hot
    /// path), and the other lanes'.
    first: WriteBuffer,
    rest: Vec<WriteBuffer>,
    capacity_units: u32,
    /// Lane of each logical unit's newest buffered copy (empty with one lane).
    lane_of: Vec<u8>,
}

impl LaneBuffers {
    /// `lanes` (1 ..= [`MAX_LANES`]) buffers sharing `capacity_units`, for a logical space
    /// of `logical_units`.
    pub fn new(capacity_units: u32, lanes: usize, logical_units: u32) -> LaneBuffers {
        debug_assert!((1..=MAX_LANES).contains(&lanes));
        LaneBuffers {
            first: WriteBuffer::new(capacity_units),
            rest: (1..lanes)
                .map(|_| WriteBuffer::new(capacity_units))
                .collect(),
            capacity_units,
            lane_of: if lanes > 1 {
                vec![0; logical_units as usize]
            } else {
                Vec::new()
            },
        }
    }

    /// Lanes.
    #[inline]
    pub fn count(&self) -> usize {
        1 + self.rest.len()
    }

    #[inline(always)]
    pub fn lane(&self, l: usize) -> &WriteBuffer {
        match l {
            0 => &self.first,
            l => &self.rest[l - 1],
        }
    }

    #[inline(always)]
    pub fn lane_mut(&mut self, l: usize) -> &mut WriteBuffer {
        match l {
            0 => &mut self.first,
            l => &mut self.rest[l - 1],
        }
    }

    /// Every lane's buffer.
    fn all(&self) -> impl Iterator<Item = &WriteBuffer> {
        std::iter::once(&self.first).chain(&self.rest)
    }

    /// Lane holding `lpn`'s newest buffered copy, if any is buffered.
    #[inline(always)]
    fn lane_of(&self, lpn: u32) -> usize {
        if self.lane_of.is_empty() {
            0
        } else {
            self.lane_of[lpn as usize] as usize
        }
    }

    /// Units waiting for a page, every lane.
    #[inline]
    pub fn pending_units(&self) -> u32 {
        self.all().map(|b| b.pending_units()).sum()
    }

    /// Units in pages whose program has not finished, every lane.
    #[inline]
    pub fn inflight_units(&self) -> u32 {
        self.all().map(|b| b.inflight_units()).sum()
    }

    #[inline]
    pub fn free_units(&self) -> u32 {
        self.capacity_units - self.pending_units() - self.inflight_units()
    }

    pub fn is_empty(&self) -> bool {
        self.all().all(|b| b.is_empty())
    }

    /// Version of `lpn` if a lane holds it (waiting or in flight).
    #[inline]
    pub fn lookup(&self, lpn: u32) -> Option<Version> {
        if self.lane_of.is_empty() {
            return self.first.lookup(lpn);
        }
        self.lane(self.lane_of(lpn)).lookup(lpn)
    }

    /// Drop `lpn` (trim).
    #[inline]
    pub fn discard(&mut self, lpn: u32) -> bool {
        let l = self.lane_of(lpn);
        self.lane_mut(l).discard(lpn)
    }

    /// Store `lpn` in `lane` at the version `version()` gives, if there is room
    /// ([`WriteBuffer::try_insert`]); a copy waiting in another lane is dropped first (the
    /// unit moves to its new lane).
    #[inline]
    pub fn try_insert(&mut self, lane: usize, lpn: u32, version: impl FnOnce() -> Version) -> bool {
        if self.rest.is_empty() {
            return self.first.try_insert(lpn, version);
        }
        let old = self.lane_of(lpn);
        let waiting_here = old == lane && !self.lane(lane).needs_space(lpn);
        if !waiting_here && self.free_units() == 0 {
            return false;
        }
        if old != lane && self.lane(old).lookup(lpn).is_some() {
            // Waiting there: drop it (no space change beyond the new copy's); in flight
            // there: its program finishes, and the newer copy here is the one reads see.
            self.lane_mut(old).discard(lpn);
        }
        self.lane_of[lpn as usize] = lane as u8;
        self.lane_mut(lane).try_insert(lpn, version)
    }

    /// Each lane's end sequence number now: a flush arriving now covers every unit below.
    pub fn end_marks(&self) -> Marks {
        let mut m = [0; MAX_LANES];
        for (i, b) in self.all().enumerate() {
            m[i] = b.end_seq();
        }
        m
    }

    /// Whether every unit below `marks` is durable in every lane.
    #[inline]
    pub fn is_durable(&self, marks: &Marks) -> bool {
        self.all().zip(marks).all(|(b, &m)| b.durable_seq() >= m)
    }

    /// The owner token of lane `l`'s next committed page.
    #[inline]
    pub fn next_token(&self, l: usize) -> u32 {
        (self.lane(l).next_token() << LANE_BITS) | l as u32
    }

    /// The program of the page with owner `token`, holding `units` units, finished.
    /// Returns its lane.
    #[inline]
    pub fn program_done(&mut self, units: u32, token: u32) -> usize {
        let l = (token & ((1 << LANE_BITS) - 1)) as usize;
        let b = self.lane_mut(l);
        let low = token >> LANE_BITS;
        let t = b.front_token() + (low.wrapping_sub(b.front_token()) & TOKEN_MASK);
        b.program_done(units, t);
        l
    }
}
