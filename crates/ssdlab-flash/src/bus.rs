/// Channel buses of the timed mode. A transfer holds its channel exclusively; requests are
/// served first come, first served, which is exact because the engine asks in time order.
pub struct Channels {
    free_at_ns: Vec<u64>,
    busy_ns: Vec<u64>,
}

impl Channels {
    pub fn new(channels: u32) -> Channels {
        Channels {
            free_at_ns: vec![0; channels as usize],
            busy_ns: vec![0; channels as usize],
        }
    }

    /// Reserve `channel` for `duration_ns` from `ready_ns` or as soon as it is free after
    /// that; returns the end of the transfer.
    #[inline]
    pub fn reserve(&mut self, channel: u32, ready_ns: u64, duration_ns: u64) -> u64 {
        let c = channel as usize;
        let start = self.free_at_ns[c].max(ready_ns);
        self.free_at_ns[c] = start + duration_ns;
        self.busy_ns[c] += duration_ns;
        start + duration_ns
    }

    pub fn len(&self) -> usize {
        self.free_at_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.free_at_ns.is_empty()
    }

    /// Total time each channel spent transferring.
    pub fn busy_ns(&self) -> &[u64] {
        &self.busy_ns
    }

    /// When each channel's last reserved transfer ends.
    pub fn free_at_ns(&self) -> &[u64] {
        &self.free_at_ns
    }
}
