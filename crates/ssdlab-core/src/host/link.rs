//! The PCIe link of `[device.host_interface]`: wire bytes of NVMe's transfers, and one
//! direction of the link as a shared server.
//!
//! Rate: PCIe 3.0 moves 8 GT/s per lane with 128b/130b encoding, so one lane carries
//! 64/65 bytes per ns (0.985 GB/s); PCIe 4.0 and 5.0 double it each time. Time is kept in
//! units of 1/65 wire byte, so a link of `lanes` lanes of generation factor `g` serves
//! exactly `64 · g · lanes` units per ns, an integer.
//!
//! Sharing: NVMe's small messages (doorbells, submission entries and their read
//! requests, completion entries and interrupts, a write's data read requests) go between
//! data TLPs as they come, one after another at the full rate, so a completion entry
//! does not wait behind a 128 KiB transfer and its end is known when it is sent; the data
//! transfers in flight share what the messages leave equally (processor sharing, as
//! interleaved TLPs of concurrent DMAs do), simulated with a virtual clock of which only
//! the earliest finish is ever scheduled ([`Direction`]). The two directions are
//! independent (full duplex). Not modelled: DLLPs (acknowledgements, flow-control
//! updates: a few percent of the wire), flow-control credit stalls, the link's
//! propagation delay, a message's wait for the data TLP on the wire when it comes.

use ssdlab_workload::{DataDir, HostOp};

/// The data a command of `op` for `size_bytes` moves between host and memory of the
/// device: host → device (writes, zone appends), device → host (reads). The one place
/// every driver and the link learn a command's payload from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Payload {
    pub down_bytes: u64,
    pub up_bytes: u64,
}

impl Payload {
    #[inline]
    pub fn of(op: HostOp, size_bytes: u64) -> Payload {
        match op.data() {
            DataDir::ToDevice => Payload {
                down_bytes: size_bytes,
                up_bytes: 0,
            },
            DataDir::ToHost => Payload {
                down_bytes: 0,
                up_bytes: size_bytes,
            },
            DataDir::None => Payload::default(),
        }
    }

    /// Both directions' bytes.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.down_bytes + self.up_bytes
    }
}

/// The host data path without a modelled link (`device.host_transfer_mb_per_s`): one
/// transfer at a time in the order they are asked for (a transfer asked for ahead of
/// its start, a buffer access away, keeps its place), both directions sharing it, so no
/// run moves more than its rate.
#[derive(Clone, Debug, Default)]
pub struct HostPath {
    /// When the transfer last started ends.
    free_at_ns: u64,
    /// Time of the transfers started (up to their ends).
    busy_ns: u64,
    /// The last transfer's size and time (requests mostly have one size: no division).
    last: (u64, u64),
}

impl HostPath {
    /// The time of `bytes`, `ns_of(bytes)` remembered for the next transfer of that size.
    #[inline]
    pub fn time_of(&mut self, bytes: u64, ns_of: impl FnOnce(u64) -> u64) -> u64 {
        if self.last.0 != bytes {
            self.last = (bytes, ns_of(bytes));
        }
        self.last.1
    }

    /// A transfer taking `ns` that can start at `now_ns`: when it ends.
    #[inline]
    pub fn reserve(&mut self, now_ns: u64, ns: u64) -> u64 {
        let end = self.free_at_ns.max(now_ns) + ns;
        self.free_at_ns = end;
        self.busy_ns += ns;
        end
    }

    /// Time with a transfer in progress up to `now_ns`, reservations made by then: exact
    /// once every transfer reserved has ended, a lower bound while some are pending (a
    /// running transfer counts its part so far, or less when the path waits for a
    /// transfer's start).
    pub fn busy_ns_at(&self, now_ns: u64) -> u64 {
        self.busy_ns
            .saturating_sub(self.free_at_ns.saturating_sub(now_ns))
    }
}

/// Host → device (doorbells, submission entries, write data) and device → host (read
/// data, completion entries, interrupts, memory-read requests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Down = 0,
    Up = 1,
}

/// Wire sizes of one configured link.
#[derive(Clone, Copy, Debug)]
pub struct Wire {
    pub payload_bytes: u32,
    pub read_request_bytes: u32,
    pub overhead_bytes: u32,
}

/// NVMe's submission-queue entry and completion-queue entry; an MSI-X message and a
/// doorbell write carry one dword.
pub const SQE_BYTES: u64 = 64;
pub const CQE_BYTES: u64 = 16;
pub const DWORD_BYTES: u64 = 4;

impl Wire {
    /// `bytes` of data in TLPs of at most the max payload each.
    pub fn data(&self, bytes: u64) -> u64 {
        let tlps = bytes.div_ceil(self.payload_bytes as u64).max(1);
        bytes + tlps * self.overhead_bytes as u64
    }

    /// The memory-read requests (header-only TLPs) that ask for `bytes`.
    pub fn read_requests(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.read_request_bytes as u64).max(1) * self.overhead_bytes as u64
    }

    /// A doorbell write (host → device).
    pub fn doorbell(&self) -> u64 {
        self.data(DWORD_BYTES)
    }

    /// A command's completion entry and its MSI-X interrupt (device → host).
    pub fn completion(&self) -> u64 {
        self.data(CQE_BYTES) + self.data(DWORD_BYTES)
    }
}

/// Scale of the virtual clock beyond the tick: the share of one of `n` active transfers
/// is kept to 2⁻³² of a tick.
const SCALE: u128 = 1 << 32;

/// One direction of the link, in *ticks*: a tick is the time one unit of 1/65 wire byte
/// takes at the full rate, so a nanosecond is `rate` ticks and every time is exact.
///
/// Two kinds of traffic share it. *Messages* (a doorbell, a submission entry and the
/// read request that fetches it, a completion entry with its interrupt, a write's data
/// read requests: one or a few TLPs each) are sent between data TLPs as they come: they
/// take the wire one after another at the full rate, and the data transfers in flight
/// wait meanwhile, so a message's end is known when it is sent (no event). *Data
/// transfers* share what the messages leave equally (processor sharing, as interleaved
/// TLPs of concurrent DMAs do): a virtual clock `vt` holds the service every active
/// transfer has received, a transfer finishes when it reaches its start value plus its
/// size, and only the earliest finish is ever scheduled. Work is conserved: the
/// direction is busy exactly while a message or a transfer is on it.
#[derive(Debug)]
pub struct Direction {
    /// Ticks per ns: 64 · g · lanes, a power of two (`rate_shift` its log).
    rate: u64,
    rate_shift: u32,
    /// Service each active transfer has received (ticks × SCALE).
    vt: u128,
    /// The time `vt` is for (ticks).
    last_t: u64,
    /// Messages are on the wire until then (ticks): data transfers wait.
    hold_t: u64,
    /// Active transfers: (finish vt, start order, token); a handful at most in practice.
    active: Vec<(u128, u64, u32)>,
    started: u64,
    /// Ticks with a message or a transfer on the wire (a message counted when sent).
    busy_t: u64,
    /// Wire bytes carried (a message's and a transfer's counted when started).
    pub wire_bytes: u64,
}

impl Direction {
    /// A direction of a PCIe link of generation factor `gen_factor` (1 = 3.0) and `lanes`.
    pub fn new(gen_factor: u64, lanes: u32) -> Direction {
        let rate = 64 * gen_factor * lanes as u64;
        assert!(
            rate.is_power_of_two(),
            "lanes and generation factor are powers of two"
        );
        Direction {
            rate,
            rate_shift: rate.trailing_zeros(),
            vt: 0,
            last_t: 0,
            hold_t: 0,
            active: Vec::new(),
            started: 0,
            busy_t: 0,
            wire_bytes: 0,
        }
    }

    /// Ticks per ns.
    #[inline]
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// Time to carry `wire_bytes` alone (ns, rounded up).
    pub fn alone_ns(&self, wire_bytes: u64) -> u64 {
        self.ns_of(wire_bytes * 65)
    }

    /// The nanosecond a time in ticks falls in (rounded up).
    #[inline]
    pub fn ns_of(&self, ticks: u64) -> u64 {
        (ticks + self.rate - 1) >> self.rate_shift
    }

    /// Serve the data transfers up to `now_ns` (what the messages leave of it).
    #[inline]
    fn advance(&mut self, now_ns: u64) {
        let now_t = now_ns * self.rate;
        if now_t <= self.last_t {
            return;
        }
        let from = self.last_t.max(self.hold_t);
        let n = self.active.len() as u64;
        if n > 0 && now_t > from {
            let dt = now_t - from;
            // dt · SCALE / n, exactly (no 128-bit division when it fits 64 bits).
            self.vt += if n == 1 {
                dt as u128 * SCALE
            } else if dt < 1 << 32 {
                ((dt << 32) / n) as u128
            } else {
                dt as u128 * SCALE / n as u128
            };
            self.busy_t += dt;
        }
        self.last_t = now_t;
    }

    /// Send a message of `wire_bytes` at `now_ns`, after the messages already on the
    /// wire: the time (ticks) its last byte arrives.
    #[inline]
    pub fn send_message(&mut self, now_ns: u64, wire_bytes: u64) -> u64 {
        self.advance(now_ns);
        let ticks = wire_bytes * 65;
        let end = self.hold_t.max(now_ns * self.rate) + ticks;
        self.hold_t = end;
        self.busy_t += ticks;
        self.wire_bytes += wire_bytes;
        end
    }

    /// Start a data transfer of `wire_bytes` for `token` at `now_ns`.
    pub fn start(&mut self, now_ns: u64, wire_bytes: u64, token: u32) {
        self.advance(now_ns);
        let finish = self.vt + (wire_bytes * 65) as u128 * SCALE;
        self.active.push((finish, self.started, token));
        self.started += 1;
        self.wire_bytes += wire_bytes;
    }

    /// The active transfer that finishes first (its index).
    #[inline]
    fn first(&self) -> Option<usize> {
        if self.active.len() <= 1 {
            return (!self.active.is_empty()).then_some(0);
        }
        let mut best: Option<(usize, (u128, u64))> = None;
        for (i, &(f, s, _)) in self.active.iter().enumerate() {
            if best.is_none_or(|(_, b)| (f, s) < b) {
                best = Some((i, (f, s)));
            }
        }
        best.map(|(i, _)| i)
    }

    /// When the earliest active transfer finishes if nothing else is sent (`None`:
    /// nothing in flight).
    #[inline]
    pub fn next_finish_ns(&self) -> Option<u64> {
        let (finish, _, _) = self.active[self.first()?];
        let left = finish.saturating_sub(self.vt);
        let n = self.active.len() as u128;
        let from = self.last_t.max(self.hold_t);
        let at_t = from + (left * n).div_ceil(SCALE) as u64;
        Some(self.ns_of(at_t))
    }

    /// At `now_ns`, the earliest transfer's finish time: it is done (whatever the
    /// rounding of the shares says), and so is every other transfer the clock has reached.
    /// Returns the tokens done, in finish order, into `done`.
    pub fn finish_due(&mut self, now_ns: u64, done: &mut Vec<u32>) {
        self.advance(now_ns);
        if let [(finish, _, token)] = self.active[..] {
            // One transfer (the usual case): it is the one done.
            self.vt = self.vt.max(finish);
            self.active.clear();
            done.push(token);
            return;
        }
        let Some(i) = self.first() else { return };
        self.vt = self.vt.max(self.active[i].0);
        while let Some(i) = self.first() {
            let (finish, _, token) = self.active[i];
            if finish > self.vt {
                break;
            }
            self.active.swap_remove(i);
            done.push(token);
        }
    }

    pub fn in_flight(&self) -> usize {
        self.active.len()
    }

    /// Time with a message or a transfer on the wire up to `now_ns` (messages sent by
    /// then counted up to it).
    pub fn busy_ns_at(&self, now_ns: u64) -> u64 {
        let ahead = self.hold_t.saturating_sub(now_ns * self.rate);
        self.busy_t.saturating_sub(ahead) / self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command's data, by direction: writes and zone appends down, reads up, the
    /// others none (a zone append once crossed the link without its data).
    #[test]
    fn payload_of_each_command() {
        let p = |op| Payload::of(op, 65_536);
        assert_eq!(
            p(HostOp::Write),
            Payload {
                down_bytes: 65_536,
                up_bytes: 0
            }
        );
        assert_eq!(p(HostOp::ZoneAppend), p(HostOp::Write));
        assert_eq!(
            p(HostOp::Read),
            Payload {
                down_bytes: 0,
                up_bytes: 65_536
            }
        );
        for op in [
            HostOp::Trim,
            HostOp::Flush,
            HostOp::ZoneReset,
            HostOp::ZoneReport,
        ] {
            assert_eq!(p(op).bytes(), 0, "{op:?}");
        }
    }

    /// The host data path serves one transfer at a time in request order; its busy time
    /// up to a moment counts a running transfer's part so far.
    #[test]
    fn the_host_path_serves_one_transfer_at_a_time() {
        let mut h = HostPath::default();
        assert_eq!(h.reserve(100, 50), 150);
        assert_eq!(h.reserve(120, 50), 200, "waits for the first");
        assert_eq!(h.reserve(500, 10), 510, "idle path: at once");
        assert_eq!(h.busy_ns_at(510), 110);
        assert_eq!(h.busy_ns_at(505), 105);
    }

    /// PCIe 3.0 x4 carries 4 · 64/65 bytes per ns: 128 KiB of payload in 256-byte TLPs with
    /// 26 bytes each is 144,384 wire bytes, 36,660 ns (⌈144384 · 65 / 256⌉), 3.575 GB/s.
    #[test]
    fn one_transfer_takes_its_wire_bytes_over_the_rate() {
        let w = Wire {
            payload_bytes: 256,
            read_request_bytes: 512,
            overhead_bytes: 26,
        };
        assert_eq!(w.data(131072), 131072 + 512 * 26);
        assert_eq!(w.data(1), 27);
        assert_eq!(w.read_requests(131072), 256 * 26);
        assert_eq!(w.completion(), 16 + 26 + 4 + 26);
        let mut d = Direction::new(1, 4);
        assert_eq!(d.alone_ns(144_384), 36_660);
        d.start(1_000, 144_384, 7);
        assert_eq!(d.next_finish_ns(), Some(37_660));
        let mut done = Vec::new();
        d.finish_due(37_660, &mut done);
        assert_eq!(done, [7]);
        assert_eq!(d.next_finish_ns(), None);
        assert_eq!((d.busy_ns_at(37_660), d.wire_bytes), (36_660, 144_384));
        // PCIe 5.0 x16: 16 times as fast.
        assert_eq!(Direction::new(4, 16).alone_ns(144_384), 36_660 / 16 + 1);
    }

    /// Two transfers share the bandwidth: started together, the small one ends at twice its
    /// alone time; the large one ends when all bytes are carried (work conserved).
    #[test]
    fn transfers_in_flight_share_the_bandwidth() {
        let mut d = Direction::new(1, 1); // 64/65 B per ns
        d.start(0, 6_400, 1); // alone: 6,500 ns
        d.start(0, 64_000, 2); // alone: 65,000 ns
        assert_eq!(d.next_finish_ns(), Some(13_000));
        let mut done = Vec::new();
        d.finish_due(13_000, &mut done);
        assert_eq!(done, [1]);
        // 64,000 − 6,400 bytes left for the second at the full rate: 58,500 ns more.
        assert_eq!(d.next_finish_ns(), Some(71_500));
        d.finish_due(71_500, &mut done);
        assert_eq!(done, [1, 2]);
        assert_eq!(d.busy_ns_at(71_500), 71_500);
        // A transfer that starts while another runs halves its rate from then on.
        let mut d = Direction::new(1, 1);
        d.start(0, 6_400, 1);
        d.start(3_250, 640, 2); // at 3,250 ns the first has 3,200 bytes left
                                // Both at half rate: the second's 640 bytes take 1,300 ns.
        assert_eq!(d.next_finish_ns(), Some(4_550));
        done.clear();
        d.finish_due(4_550, &mut done);
        assert_eq!(done, [2]);
        // The first had 3,200 − 640 = 2,560 bytes left: 2,600 ns alone.
        assert_eq!(d.next_finish_ns(), Some(7_150));
    }

    /// Two transfers in flight long enough that a step of the clock is 2³² ticks or more
    /// (the 128-bit share, not the 64-bit one): 64 MB each on one PCIe 3.0 lane with a
    /// 64-byte message at 100 ms end together when every byte is carried, 2 · 65 ms + 65 ns,
    /// in start order; on the 64-bit path (a message at 1 ms) the same.
    #[test]
    fn long_steps_share_exactly() {
        for message_ns in [100_000_000, 1_000_000] {
            let mut d = Direction::new(1, 1);
            d.start(0, 64_000_000, 1);
            d.start(0, 64_000_000, 2);
            assert_eq!(d.next_finish_ns(), Some(130_000_000));
            let at = d.send_message(message_ns, 64);
            assert_eq!(at, (message_ns + 65) * 64);
            assert_eq!(d.next_finish_ns(), Some(130_000_065), "{message_ns}");
            let mut done = Vec::new();
            d.finish_due(130_000_065, &mut done);
            assert_eq!(done, [1, 2]);
            assert_eq!(d.busy_ns_at(130_000_065), 130_000_065);
        }
    }

    /// Messages go one after another at the full rate, their ends known when sent; a
    /// transfer in flight waits while they are on the wire (work conserved). One PCIe 3.0
    /// lane: 64 wire bytes take 65 ns.
    #[test]
    fn messages_go_first_and_delay_the_transfers() {
        let mut d = Direction::new(1, 1);
        d.start(0, 6_400, 1); // alone: 6,500 ns
        assert_eq!(d.next_finish_ns(), Some(6_500));
        // At 1,000 ns a 640-byte message (650 ns), at 1,200 ns a 64-byte one (65 ns) behind
        // it: they end at 1,650 and 1,715 ns.
        assert_eq!(d.send_message(1_000, 640), 1_650 * 64);
        assert_eq!(d.send_message(1_200, 64), 1_715 * 64);
        // The transfer had 1,000 ns of service, then waits 715 ns.
        assert_eq!(d.next_finish_ns(), Some(6_500 + 715));
        // Its busy time so far counts the messages sent only up to now.
        assert_eq!(d.busy_ns_at(1_200), 1_200);
        let mut done = Vec::new();
        d.finish_due(7_215, &mut done);
        assert_eq!(done, [1]);
        assert_eq!(d.busy_ns_at(7_215), 7_215);
        assert_eq!(d.wire_bytes, 6_400 + 640 + 64);
        // Idle: a message goes at once.
        assert_eq!(d.send_message(8_000, 64), 8_065 * 64);
        assert_eq!(d.busy_ns_at(9_000), 7_215 + 65);
        assert_eq!(d.next_finish_ns(), None);
    }

    /// The reference for [`Direction`]: the same model stepped tick by tick (a tick is
    /// 1/65 wire byte at the full rate): a message takes the wire whole ticks after the
    /// messages before it; else each of the `n` transfers in flight gets 1/n of the tick.
    /// Returns each message's end (ticks) and each transfer's end (ticks), in op order.
    fn reference(rate: u64, ops: &[(u64, bool, u64)]) -> Vec<u64> {
        const L: u64 = 840; // lcm(1..=8): 1/n of a tick is exact for n ≤ 8
        let mut ends = vec![0; ops.len()];
        let mut hold = 0u64;
        let mut active: Vec<(usize, u64)> = Vec::new(); // (op, remaining ticks · L)
        let mut next = 0;
        let mut t = 0u64;
        while next < ops.len() || !active.is_empty() {
            while next < ops.len() && ops[next].0 * rate == t {
                let (_, message, bytes) = ops[next];
                if message {
                    hold = hold.max(t) + bytes * 65;
                    ends[next] = hold;
                } else {
                    active.push((next, bytes * 65 * L));
                }
                next += 1;
            }
            if t >= hold && !active.is_empty() {
                let share = L / active.len() as u64;
                for a in active.iter_mut() {
                    a.1 = a.1.saturating_sub(share);
                }
                active.retain(|&(i, left)| {
                    if left == 0 {
                        ends[i] = t + 1;
                    }
                    left > 0
                });
            }
            t += 1;
        }
        ends
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Random messages and transfers on one lane: every message ends exactly when the
        /// tick-by-tick reference says; every transfer within a nanosecond per transfer
        /// finished before it (the direction sees time in whole nanoseconds at its events,
        /// the reference in ticks), and never before the reference.
        #[test]
        fn direction_matches_the_tick_by_tick_reference(
            raw in proptest::collection::vec((0u64..400, proptest::bool::ANY, 1u64..400), 1..8)
        ) {
            let mut ops = raw;
            ops.sort_by_key(|o| o.0);
            let rate = 64;
            let want = reference(rate, &ops);
            let mut d = Direction::new(1, 1);
            let mut got = vec![0u64; ops.len()];
            let mut done = Vec::new();
            let mut next = 0;
            loop {
                let due = d.next_finish_ns();
                let op_at = ops.get(next).map(|o| o.0);
                match (due, op_at) {
                    (Some(f), o) if o.is_none_or(|o| f <= o) => {
                        d.finish_due(f, &mut done);
                        for &tok in &done {
                            got[tok as usize] = f;
                        }
                        done.clear();
                    }
                    (_, Some(o)) => {
                        let (_, message, bytes) = ops[next];
                        if message {
                            got[next] = d.send_message(o, bytes).div_ceil(rate);
                        } else {
                            d.start(o, bytes, next as u32);
                        }
                        next += 1;
                    }
                    (None, None) => break,
                    (Some(_), None) => unreachable!(),
                }
            }
            let mut finished_before = 0;
            let mut order: Vec<usize> = (0..ops.len()).collect();
            order.sort_by_key(|&i| want[i]);
            for i in order {
                let exact = want[i].div_ceil(rate);
                if ops[i].1 {
                    proptest::prop_assert_eq!(got[i], exact, "message {}", i);
                } else {
                    proptest::prop_assert!(
                        got[i] >= exact && got[i] <= exact + finished_before + 1,
                        "transfer {}: {} ns, reference {} ns ({:?})", i, got[i], exact, ops
                    );
                    finished_before += 1;
                }
            }
            let total: u64 = ops.iter().map(|o| o.2).sum();
            proptest::prop_assert_eq!(d.wire_bytes, total);
        }
    }
}
