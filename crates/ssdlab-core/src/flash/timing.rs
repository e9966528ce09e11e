use crate::config::{CellMode, Config};

/// Per-cell-mode operation latencies, resolved from the config once.
#[derive(Clone, Debug)]
pub struct TimingModel {
    pub read_ns: [u64; 4],
    pub program_ns: [u64; 4],
    pub program_loops: [u32; 4],
    pub erase_loop_ns: [u64; 4],
    erase_loops: [Vec<(u32, u32)>; 4],
    pub suspend_penalty_ns: [u64; 4],
    pub endurance_pe_cycles: [u32; 4],
    pub command_overhead_ns: u64,
    channel_rate_mb_per_s: u64,
}

impl TimingModel {
    pub fn new(c: &Config) -> TimingModel {
        let t = |m: CellMode| c.device.timing.get(m);
        let each = |f: &dyn Fn(CellMode) -> u64| CellMode::ALL.map(f);
        TimingModel {
            read_ns: each(&|m| t(m).read_ns),
            program_ns: each(&|m| t(m).program_ns),
            program_loops: CellMode::ALL.map(|m| t(m).program_loops),
            erase_loop_ns: each(&|m| t(m).erase_loop_ns),
            erase_loops: CellMode::ALL.map(|m| t(m).erase_loops.clone()),
            suspend_penalty_ns: each(&|m| t(m).suspend_penalty_ns),
            endurance_pe_cycles: CellMode::ALL.map(|m| t(m).endurance_pe_cycles),
            command_overhead_ns: c.device.command_overhead_ns,
            channel_rate_mb_per_s: c.device.channel_rate_mb_per_s,
        }
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
        self.erase_loop_ns[mode.index()] * self.erase_loops(mode, pe_cycles) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erase_loop_table_steps() {
        let mut c: Config = toml::from_str(crate::testutil::TINY_TOML).unwrap();
        c.device.timing.tlc.erase_loops = vec![(0, 3), (100, 4), (1000, 6)];
        let t = TimingModel::new(&c);
        assert_eq!(t.erase_loops(CellMode::Tlc, 0), 3);
        assert_eq!(t.erase_loops(CellMode::Tlc, 99), 3);
        assert_eq!(t.erase_loops(CellMode::Tlc, 100), 4);
        assert_eq!(t.erase_loops(CellMode::Tlc, 5000), 6);
        assert_eq!(t.transfer_ns(4096), 5120);
        assert_eq!(t.transfer_ns(4097), 5122, "rounded up");
    }
}
