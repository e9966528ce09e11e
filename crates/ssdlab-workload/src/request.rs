/// Kind of a host command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostOp {
    Read,
    Write,
    /// Deallocate (NVMe DSM / ATA TRIM / discard).
    Trim,
    /// Flush (fsync): drains the device's volatile write buffer. Offset and size are ignored.
    Flush,
}

impl HostOp {
    /// Lower-case name (`read`, `write`, `trim`, `flush`).
    pub fn name(self) -> &'static str {
        match self {
            HostOp::Read => "read",
            HostOp::Write => "write",
            HostOp::Trim => "trim",
            HostOp::Flush => "flush",
        }
    }
}

/// One host request as a workload produces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostRequest {
    /// Arrival time for open-loop flows; ignored (0) for closed-loop flows.
    pub arrival_ns: u64,
    pub op: HostOp,
    /// Byte offset in the logical space; any alignment.
    pub offset_bytes: u64,
    /// Length in bytes; 0 only for flushes.
    pub size_bytes: u64,
    /// Ground truth, when the source knows it: whether the request is file-system journal
    /// traffic (the ext4 model; blkparse requests of `journal_process`). Only counted
    /// against the journal detector (spec 05), never used to place data.
    pub journal: Option<bool>,
    /// The submitter's own name for the request, handed back with its completion
    /// (`ssdlab serve`: the server's request slot); 0 for workloads.
    pub tag: u32,
}
