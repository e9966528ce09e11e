use crate::base::CellMode;
use crate::{NandOp, OpKind};
use serde::{Deserialize, Serialize};

/// Latencies and wear of one cell mode.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CellTiming {
    /// Array read time tR.
    pub read_ns: u64,
    /// Array program time tPROG.
    pub program_ns: u64,
    /// ISPP program loops making up `program_ns` (program-suspend granularity).
    #[serde(default = "default_program_loops")]
    pub program_loops: u32,
    /// Duration of one ISPE erase loop (pulse + verify).
    pub erase_loop_ns: u64,
    /// Erase loops as a step table of [from_pe_cycles, loops], first entry from 0.
    pub erase_loops: Vec<(u32, u32)>,
    /// Cost of suspending an erase, paid when it is suspended, before the first read (or
    /// program) can start (voltage recovery; Table 1 of the SSR paper: 100 µs).
    #[serde(default)]
    pub erase_suspend_penalty_ns: u64,
    /// Cost of suspending a program (`[scheduler] program_suspend`), paid when it is
    /// suspended, before the first read can start.
    #[serde(default)]
    pub program_suspend_penalty_ns: u64,
    /// Split into `erase_suspend_penalty_ns` and `program_suspend_penalty_ns`: refused.
    #[doc(hidden)]
    #[serde(
        default,
        skip_serializing,
        rename = "suspend_penalty_ns",
        deserialize_with = "split_penalty_key"
    )]
    pub moved_suspend_penalty_ns: SplitKey,
    /// Cost of resuming a suspended erase or program, paid before its remaining work
    /// continues (voltage re-ramp). Default 0: Table 1's penalty is charged whole at suspend.
    #[serde(default)]
    pub resume_penalty_ns: u64,
    /// Erase count at which a block is retired as bad.
    pub endurance_pe_cycles: u32,
    /// Programs a page may take (NOP, "number of partial page programs"): above 1 a host
    /// page flushed before it is full programs only its units and the next host page of
    /// the same stream on that plane appends to it, each a program of its own (command,
    /// its bytes over the channel, a whole tPROG), instead of padding. SLC NAND datasheets
    /// give NOP 4 (Micron MT29F4G08ABADA, Kioxia TC58NVG2S0H); MLC/TLC allow 1.
    #[serde(default = "default_partial_programs", skip_serializing_if = "is_one")]
    pub partial_programs_per_page: u32,
}

fn default_partial_programs() -> u32 {
    1
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

/// A key that was split in two (`suspend_penalty_ns`); refused, its value never used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitKey;

/// Why `suspend_penalty_ns` (value `value`) is refused, and what to write instead.
pub fn split_penalty_reason(value: &dyn std::fmt::Display) -> String {
    format!("split into erase_suspend_penalty_ns (suspending an erase) and program_suspend_penalty_ns (suspending a program): write both, e.g. erase_suspend_penalty_ns = {value} and program_suspend_penalty_ns = {value} (docs/erase-suspend.md)")
}

/// Serde side of the refusal (text that does not come through `Config::from_toml_str`,
/// which names the file and line).
fn split_penalty_key<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SplitKey, D::Error> {
    let v = toml::Value::deserialize(d)?;
    Err(serde::de::Error::custom(format!(
        "suspend_penalty_ns: {}",
        split_penalty_reason(&v)
    )))
}

fn default_program_loops() -> u32 {
    10
}

/// The cell modes a device may use; absent ones take the built-in defaults.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TimingTable {
    pub slc: CellTiming,
    pub mlc: CellTiming,
    pub tlc: CellTiming,
    pub qlc: CellTiming,
}

impl Default for TimingTable {
    fn default() -> Self {
        let t = |read_us: u64, prog_us: u64, loop_us: u64, loops: u32, endurance: u32| CellTiming {
            read_ns: read_us * 1000,
            program_ns: prog_us * 1000,
            program_loops: 10,
            erase_loop_ns: loop_us * 1000,
            erase_loops: vec![(0, loops)],
            erase_suspend_penalty_ns: 100_000,
            program_suspend_penalty_ns: 100_000,
            moved_suspend_penalty_ns: SplitKey,
            resume_penalty_ns: 0,
            endurance_pe_cycles: endurance,
            partial_programs_per_page: 1,
        };
        TimingTable {
            slc: t(25, 200, 1_000, 2, 50_000),
            mlc: t(60, 800, 1_500, 1, 10_000),
            tlc: t(40, 660, 5_000, 5, 3_000),
            qlc: t(120, 2_000, 6_000, 5, 1_000),
        }
    }
}

impl TimingTable {
    pub fn get(&self, mode: CellMode) -> &CellTiming {
        match mode {
            CellMode::Slc => &self.slc,
            CellMode::Mlc => &self.mlc,
            CellMode::Tlc => &self.tlc,
            CellMode::Qlc => &self.qlc,
        }
    }
}

/// What the timing of an operation may read of its block: the block's cell mode and wear
/// (later also retention and the read-retry step). Built from the block table
/// ([`crate::BlockTable::cell_state`]) when the operation is issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellState {
    pub mode: CellMode,
    /// Erases the block has had (P/E cycles).
    pub pe_cycles: u32,
}

impl CellState {
    /// A never-erased block of `mode`.
    #[inline]
    pub fn fresh(mode: CellMode) -> CellState {
        CellState { mode, pe_cycles: 0 }
    }
}

/// The array phase of an operation: `loops` loops of `loop_ns` each (a read or a program
/// is one loop of tR or tPROG; an erase its ISPE loops). The suspender works on this grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArrayTime {
    pub loops: u32,
    pub loop_ns: u64,
}

impl ArrayTime {
    /// The whole array time, without suspensions.
    #[inline(always)]
    pub fn ns(self) -> u64 {
        self.loop_ns * self.loops as u64
    }

    /// A multi-plane batch with `other`: the most loops at the slowest loop time. A batch
    /// has one kind and one cell mode, so this is its slowest member's array time.
    #[inline(always)]
    pub fn with(self, other: ArrayTime) -> ArrayTime {
        ArrayTime {
            loops: self.loops.max(other.loops),
            loop_ns: self.loop_ns.max(other.loop_ns),
        }
    }
}

/// The NAND timing model, resolved from the config once: the one place an operation's
/// array time, bus transfer and command overhead come from, for both drivers, recovery
/// and the suspender. Array time depends on the operation's kind and its block's
/// [`CellState`] ([`TimingModel::array`]); an issued [`NandOp`] carries that state
/// resolved (its cell mode and erase loops, [`TimingModel::stamp`]) and is timed by
/// [`TimingModel::op_array`].
#[derive(Clone, Debug)]
pub struct TimingModel {
    read_ns: [u64; 4],
    program_ns: [u64; 4],
    pub program_loops: [u32; 4],
    erase_loop_ns: [u64; 4],
    erase_loops: [Vec<(u32, u32)>; 4],
    erase_suspend_penalty_ns: [u64; 4],
    program_suspend_penalty_ns: [u64; 4],
    resume_penalty_ns: [u64; 4],
    pub endurance_pe_cycles: [u32; 4],
    pub command_overhead_ns: u64,
    channel_rate_mb_per_s: u64,
    host_transfer_mb_per_s: u64,
    /// Read retry (`[device.reliability]`): hard-decode time per step, extra sensings
    /// and decode time of the soft-decode step, bytes per mapping unit (a retry moves the
    /// read's units again). Set by [`TimingModel::set_retry`]; all 0 until then.
    hard_decode_ns: u64,
    soft_decode_reads: u64,
    soft_decode_ns: u64,
    unit_bytes: u64,
}

impl TimingModel {
    /// The model of `timing` with `command_overhead_ns` per operation, a channel of
    /// `channel_rate_mb_per_s` and a host data path of `host_transfer_mb_per_s` (the
    /// `[device]` keys of the same names).
    pub fn new(
        timing: &TimingTable,
        command_overhead_ns: u64,
        channel_rate_mb_per_s: u64,
        host_transfer_mb_per_s: u64,
    ) -> TimingModel {
        let t = |m: CellMode| timing.get(m);
        let each = |f: &dyn Fn(CellMode) -> u64| CellMode::ALL.map(f);
        TimingModel {
            read_ns: each(&|m| t(m).read_ns),
            program_ns: each(&|m| t(m).program_ns),
            program_loops: CellMode::ALL.map(|m| t(m).program_loops),
            erase_loop_ns: each(&|m| t(m).erase_loop_ns),
            erase_loops: CellMode::ALL.map(|m| t(m).erase_loops.clone()),
            erase_suspend_penalty_ns: each(&|m| t(m).erase_suspend_penalty_ns),
            program_suspend_penalty_ns: each(&|m| t(m).program_suspend_penalty_ns),
            resume_penalty_ns: each(&|m| t(m).resume_penalty_ns),
            endurance_pe_cycles: CellMode::ALL.map(|m| t(m).endurance_pe_cycles),
            command_overhead_ns,
            channel_rate_mb_per_s,
            host_transfer_mb_per_s,
            hard_decode_ns: 0,
            soft_decode_reads: 0,
            soft_decode_ns: 0,
            unit_bytes: 0,
        }
    }

    /// The read-retry costs (`[device.reliability]`): a retry step is another tR, the
    /// read's units over the channel and a hard decode (`hard_decode_ns`); the soft-decode
    /// step `soft_decode_reads` × (tR + transfer) and `soft_decode_ns`.
    pub fn set_retry(
        &mut self,
        hard_decode_ns: u64,
        soft_decode_reads: u32,
        soft_decode_ns: u64,
        unit_bytes: u32,
    ) {
        self.hard_decode_ns = hard_decode_ns;
        self.soft_decode_reads = soft_decode_reads as u64;
        self.soft_decode_ns = soft_decode_ns;
        self.unit_bytes = unit_bytes as u64;
    }

    /// The time `retries` read retries of `units` mapping units add to a read in `mode`
    /// (`soft`: the last one is the soft-decode step): each hard step tR + transfer +
    /// hard decode, the soft step `soft_decode_reads` × (tR + transfer) + soft decode.
    /// The die is busy for all of it (the channel is not booked for the retries' transfers).
    #[inline]
    pub fn retry_ns(&self, mode: CellMode, retries: u32, soft: bool, units: u32) -> u64 {
        if retries == 0 {
            return 0;
        }
        let t_r = self.read_ns[mode.index()];
        let xfer = self.transfer_ns(units as u64 * self.unit_bytes);
        let hard = (retries - soft as u32) as u64;
        let mut ns = hard * (t_r + xfer + self.hard_decode_ns);
        if soft {
            ns += self.soft_decode_reads * (t_r + xfer) + self.soft_decode_ns;
        }
        ns
    }

    /// The array phase of a `kind` operation on a block in `cell`: tR, tPROG, or the
    /// erase's loops (from the block's P/E cycles) of the mode's loop time. Every array
    /// time of the simulator comes from here.
    #[inline(always)]
    pub fn array(&self, kind: OpKind, cell: CellState) -> ArrayTime {
        let loops = match kind {
            OpKind::Erase => self.erase_loops(cell.mode, cell.pe_cycles),
            OpKind::Read | OpKind::Program => 1,
        };
        self.timed(kind, cell.mode, loops)
    }

    /// [`TimingModel::array`] in nanoseconds.
    #[inline(always)]
    pub fn array_ns(&self, kind: OpKind, cell: CellState) -> u64 {
        self.array(kind, cell).ns()
    }

    /// Resolve `cell` (the state of `op`'s block as it is issued) into `op`: its cell mode
    /// and, for an erase, its loops. [`TimingModel::op_array`] then times it.
    #[inline(always)]
    pub fn stamp(&self, op: &mut NandOp, cell: CellState) {
        op.mode = cell.mode;
        if op.kind == OpKind::Erase {
            op.loops = self.erase_loops(cell.mode, cell.pe_cycles) as u16;
        } else if op.kind == OpKind::Read {
            op.loops = 0;
        }
    }

    /// The array phase of an issued (stamped) operation: [`TimingModel::array`] of the
    /// state its block had when it was issued.
    #[inline(always)]
    pub fn op_array(&self, op: &NandOp) -> ArrayTime {
        let loops = match op.kind {
            OpKind::Erase => op.loops as u32,
            OpKind::Read | OpKind::Program => 1,
        };
        let mut t = self.timed(op.kind, op.mode, loops);
        if op.kind == OpKind::Read && op.loops > 0 {
            // A read's retries: one longer loop (reads are not suspended).
            let soft = op.flags & crate::OP_SOFT_DECODE != 0;
            t.loop_ns += self.retry_ns(op.mode, op.loops as u32, soft, op.units);
        }
        t
    }

    /// `loops` loops of `kind`'s loop time in `mode`.
    #[inline(always)]
    fn timed(&self, kind: OpKind, mode: CellMode, loops: u32) -> ArrayTime {
        let m = mode.index();
        let loop_ns = match kind {
            OpKind::Read => self.read_ns[m],
            OpKind::Program => self.program_ns[m],
            OpKind::Erase => self.erase_loop_ns[m],
        };
        ArrayTime { loops, loop_ns }
    }

    /// One operation alone on an idle die and channel: command overhead, array time and
    /// the bus transfer of `bytes` (their order does not change the sum). The timed
    /// driver's batches overlap transfers with other dies' work, so it uses the parts.
    #[inline]
    pub fn op_ns(&self, kind: OpKind, cell: CellState, bytes: u64) -> u64 {
        self.command_overhead_ns + self.array_ns(kind, cell) + self.transfer_ns(bytes)
    }

    /// Cost of suspending a `kind` operation (an erase or a program) in `mode`, paid
    /// before the first operation served in the suspension starts.
    #[inline]
    pub fn suspend_penalty_ns(&self, kind: OpKind, mode: CellMode) -> u64 {
        match kind {
            OpKind::Erase => self.erase_suspend_penalty_ns[mode.index()],
            OpKind::Program => self.program_suspend_penalty_ns[mode.index()],
            OpKind::Read => 0,
        }
    }

    /// Cost of resuming a suspended operation in `mode`, before its remaining work.
    #[inline]
    pub fn resume_penalty_ns(&self, mode: CellMode) -> u64 {
        self.resume_penalty_ns[mode.index()]
    }

    /// Time to move `bytes` of a request's data between host and device without a
    /// modelled link (`device.host_transfer_mb_per_s`), rounded up.
    #[inline]
    pub fn host_transfer_ns(&self, bytes: u64) -> u64 {
        (bytes * 1000).div_ceil(self.host_transfer_mb_per_s.max(1))
    }

    /// The host data path's rate without a modelled link (MB/s).
    pub fn host_transfer_mb_per_s(&self) -> u64 {
        self.host_transfer_mb_per_s
    }

    /// Bus time to move `bytes` over a channel (1 MB/s = 1 byte/µs), rounded up.
    #[inline]
    pub fn transfer_ns(&self, bytes: u64) -> u64 {
        (bytes * 1000).div_ceil(self.channel_rate_mb_per_s)
    }

    /// ISPE loops of an erase on a block that has been erased `pe_cycles` times.
    #[inline]
    pub fn erase_loops(&self, mode: CellMode, pe_cycles: u32) -> u32 {
        let table = &self.erase_loops[mode.index()];
        let i = table.partition_point(|e| e.0 <= pe_cycles);
        table[i.saturating_sub(1)].1
    }

    /// Whole erase time (all loops, no suspension).
    #[inline]
    pub fn erase_ns(&self, mode: CellMode, pe_cycles: u32) -> u64 {
        self.array_ns(OpKind::Erase, CellState { mode, pe_cycles })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cause, Owner};

    #[test]
    fn one_array_time_for_a_block_and_its_issued_op() {
        let mut table = TimingTable::default();
        table.tlc.erase_loops = vec![(0, 3), (100, 4)];
        let t = TimingModel::new(&table, 7_000, 800, 8_000);
        for kind in [OpKind::Read, OpKind::Program, OpKind::Erase] {
            for mode in CellMode::ALL {
                for pe_cycles in [0, 99, 100, 5_000] {
                    let cell = CellState { mode, pe_cycles };
                    let mut op =
                        NandOp::new(kind, Cause::Host, crate::ids::BlockId(0), 0, 1, Owner::None);
                    t.stamp(&mut op, cell);
                    assert_eq!(t.op_array(&op), t.array(kind, cell));
                    assert_eq!(
                        t.op_ns(kind, cell, 4096),
                        7_000 + t.array_ns(kind, cell) + 5_120
                    );
                }
            }
        }
        let tlc = |pe_cycles| CellState {
            mode: CellMode::Tlc,
            pe_cycles,
        };
        assert_eq!(t.array_ns(OpKind::Read, tlc(0)), 40_000);
        assert_eq!(t.array_ns(OpKind::Program, tlc(0)), 660_000);
        assert_eq!(t.array_ns(OpKind::Erase, tlc(99)), 3 * 5_000_000);
        assert_eq!(t.erase_ns(CellMode::Tlc, 100), 4 * 5_000_000);
        let a = ArrayTime {
            loops: 3,
            loop_ns: 10,
        };
        let b = ArrayTime {
            loops: 4,
            loop_ns: 5,
        };
        assert_eq!(
            a.with(b),
            ArrayTime {
                loops: 4,
                loop_ns: 10
            }
        );
    }
}
