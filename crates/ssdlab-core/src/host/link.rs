//! The PCIe link of `[device.host_interface]`: wire bytes of NVMe's transfers, and one
//! direction of the link as a shared server.
//!
//! Rate: PCIe 3.0 moves 8 GT/s per lane with 128b/130b encoding, so one lane carries
//! 64/65 bytes per ns (0.985 GB/s); PCIe 4.0 and 5.0 double it each time. Time is kept in
//! units of 1/65 wire byte, so a link of `lanes` lanes of generation factor `g` serves
//! exactly `64 · g · lanes` units per ns, an integer.
//!
//! Sharing: the transfers in flight in one direction share its bandwidth equally
//! (processor sharing, as interleaved TLPs of concurrent DMAs do), so a 16-byte
//! completion entry does not wait behind a 128 KiB transfer. It is simulated with a
//! virtual clock: `vt` is the service every active transfer has received; a transfer
//! finishes when `vt` reaches its start value plus its size. Only the earliest finish is
//! ever scheduled. The two directions are independent (full duplex). Not modelled: DLLPs
//! (acknowledgements, flow-control updates: a few percent of the wire), flow-control
//! credit stalls, the link's propagation delay.

use ssdlab_workload::{DataDir, HostOp};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

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

/// Scale of the virtual clock beyond the 1/65-byte unit: the share of one of `n` active
/// transfers is kept to 2⁻³² of a unit.
const SCALE: u128 = 1 << 32;

/// One direction of the link: transfers in flight sharing its bandwidth.
#[derive(Debug)]
pub struct Direction {
    /// 1/65-byte units per ns.
    rate: u128,
    /// Service each active transfer has received (units × SCALE).
    vt: u128,
    last_ns: u64,
    /// Active transfers by (finish vt, start order, token).
    active: BinaryHeap<Reverse<(u128, u64, u32)>>,
    started: u64,
    /// Time with at least one transfer in flight, and wire bytes carried.
    pub busy_ns: u64,
    pub wire_bytes: u64,
}

impl Direction {
    /// A direction of a PCIe link of generation factor `gen_factor` (1 = 3.0) and `lanes`.
    pub fn new(gen_factor: u64, lanes: u32) -> Direction {
        Direction {
            rate: 64 * gen_factor as u128 * lanes as u128,
            vt: 0,
            last_ns: 0,
            active: BinaryHeap::new(),
            started: 0,
            busy_ns: 0,
            wire_bytes: 0,
        }
    }

    /// Time to carry `wire_bytes` alone (ns, rounded up).
    pub fn alone_ns(&self, wire_bytes: u64) -> u64 {
        (wire_bytes as u128 * 65).div_ceil(self.rate) as u64
    }

    fn advance(&mut self, now_ns: u64) {
        let n = self.active.len() as u128;
        if n > 0 && now_ns > self.last_ns {
            let dt = (now_ns - self.last_ns) as u128;
            self.vt += dt * self.rate * SCALE / n;
            self.busy_ns += now_ns - self.last_ns;
        }
        self.last_ns = now_ns;
    }

    /// Start carrying `wire_bytes` for `token` at `now_ns`.
    pub fn start(&mut self, now_ns: u64, wire_bytes: u64, token: u32) {
        self.advance(now_ns);
        let finish = self.vt + wire_bytes as u128 * 65 * SCALE;
        self.active.push(Reverse((finish, self.started, token)));
        self.started += 1;
        self.wire_bytes += wire_bytes;
    }

    /// When the earliest active transfer finishes (`None`: nothing in flight).
    pub fn next_finish_ns(&self) -> Option<u64> {
        let Reverse((finish, _, _)) = *self.active.peek()?;
        let left = finish.saturating_sub(self.vt);
        let n = self.active.len() as u128;
        Some(self.last_ns + (left * n).div_ceil(self.rate * SCALE) as u64)
    }

    /// At `now_ns`, the earliest transfer's finish time: it is done (whatever the
    /// rounding of the shares says), and so is every other transfer the clock has reached.
    /// Returns the tokens done, in finish order, into `done`.
    pub fn finish_due(&mut self, now_ns: u64, done: &mut Vec<u32>) {
        self.advance(now_ns);
        if let Some(&Reverse((finish, _, _))) = self.active.peek() {
            self.vt = self.vt.max(finish);
        }
        while let Some(&Reverse((finish, _, token))) = self.active.peek() {
            if finish > self.vt {
                break;
            }
            self.active.pop();
            done.push(token);
        }
    }

    pub fn in_flight(&self) -> usize {
        self.active.len()
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
        assert_eq!((d.busy_ns, d.wire_bytes), (36_660, 144_384));
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
        assert_eq!(d.busy_ns, 71_500);
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
}
