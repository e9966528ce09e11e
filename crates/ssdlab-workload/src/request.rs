/// Kind of a host command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostOp {
    Read,
    Write,
    /// Deallocate (NVMe DSM / ATA TRIM / discard).
    Trim,
    /// Flush (fsync): drains the device's volatile write buffer. Offset and size are ignored.
    Flush,
    /// NVMe ZNS Zone Append: write `size_bytes` at the write pointer of the zone that starts
    /// at `offset_bytes` (the zone start LBA); the device returns where it landed.
    ZoneAppend,
    /// Zone Management Send, Open Zone (explicit open) of the zone starting at `offset_bytes`.
    ZoneOpen,
    /// Zone Management Send, Close Zone.
    ZoneClose,
    /// Zone Management Send, Finish Zone (the write pointer moves to the zone's end).
    ZoneFinish,
    /// Zone Management Send, Reset Zone (the zone's data is gone; its blocks are erased).
    ZoneReset,
    /// Zone Management Receive, Report Zones from the zone holding `offset_bytes`;
    /// `size_bytes` is the report buffer's size (a 64-byte header and 64 bytes per zone).
    ZoneReport,
}

impl HostOp {
    /// Every kind, in order.
    pub const ALL: [HostOp; 10] = [
        HostOp::Read,
        HostOp::Write,
        HostOp::Trim,
        HostOp::Flush,
        HostOp::ZoneAppend,
        HostOp::ZoneOpen,
        HostOp::ZoneClose,
        HostOp::ZoneFinish,
        HostOp::ZoneReset,
        HostOp::ZoneReport,
    ];

    /// Lower-case name (`read`, `write`, `trim`, `flush`, `zone_append`, `zone_open`,
    /// `zone_close`, `zone_finish`, `zone_reset`, `zone_report`).
    pub fn name(self) -> &'static str {
        match self {
            HostOp::Read => "read",
            HostOp::Write => "write",
            HostOp::Trim => "trim",
            HostOp::Flush => "flush",
            HostOp::ZoneAppend => "zone_append",
            HostOp::ZoneOpen => "zone_open",
            HostOp::ZoneClose => "zone_close",
            HostOp::ZoneFinish => "zone_finish",
            HostOp::ZoneReset => "zone_reset",
            HostOp::ZoneReport => "zone_report",
        }
    }

    /// A zone command (append, management, report): only a zoned device takes it.
    #[inline]
    pub fn is_zone_command(self) -> bool {
        match self {
            HostOp::Read | HostOp::Write | HostOp::Trim | HostOp::Flush => false,
            HostOp::ZoneAppend
            | HostOp::ZoneOpen
            | HostOp::ZoneClose
            | HostOp::ZoneFinish
            | HostOp::ZoneReset
            | HostOp::ZoneReport => true,
        }
    }

    /// Zone Management Send (open, close, finish, reset): moves a zone's state, carries
    /// no data; `offset_bytes` names the zone's first byte.
    #[inline]
    pub fn is_zone_management(self) -> bool {
        match self {
            HostOp::ZoneOpen | HostOp::ZoneClose | HostOp::ZoneFinish | HostOp::ZoneReset => true,
            HostOp::Read
            | HostOp::Write
            | HostOp::Trim
            | HostOp::Flush
            | HostOp::ZoneAppend
            | HostOp::ZoneReport => false,
        }
    }

    /// Carries data to the device (write, zone append).
    #[inline]
    pub fn writes_data(self) -> bool {
        self.data() == DataDir::ToDevice
    }

    /// Which way the command's data crosses the link between host memory and the device
    /// (the bytes are the request's `size_bytes`): the one answer every driver and the
    /// host link read.
    #[inline]
    pub fn data(self) -> DataDir {
        match self {
            HostOp::Write | HostOp::ZoneAppend => DataDir::ToDevice,
            HostOp::Read => DataDir::ToHost,
            HostOp::Trim
            | HostOp::Flush
            | HostOp::ZoneOpen
            | HostOp::ZoneClose
            | HostOp::ZoneFinish
            | HostOp::ZoneReset
            // The report buffer is not modelled on the link (docs/zns.md).
            | HostOp::ZoneReport => DataDir::None,
        }
    }

    /// How a completed request of this kind is counted (results' `host` section, latency
    /// histograms).
    #[inline]
    pub fn class(self) -> OpClass {
        match self {
            HostOp::Read => OpClass::Read,
            HostOp::Write | HostOp::ZoneAppend => OpClass::Write,
            HostOp::Trim => OpClass::Trim,
            HostOp::Flush => OpClass::Flush,
            HostOp::ZoneOpen
            | HostOp::ZoneClose
            | HostOp::ZoneFinish
            | HostOp::ZoneReset
            | HostOp::ZoneReport => OpClass::Zone,
        }
    }

    /// Whether `offset_bytes .. + size_bytes` names logical units the request touches
    /// (read, write, trim, zone append); a flush and the zone management and report
    /// commands address no units (their offset names a zone, if anything).
    #[inline]
    pub fn addresses_units(self) -> bool {
        match self {
            HostOp::Read | HostOp::Write | HostOp::Trim | HostOp::ZoneAppend => true,
            HostOp::Flush
            | HostOp::ZoneOpen
            | HostOp::ZoneClose
            | HostOp::ZoneFinish
            | HostOp::ZoneReset
            | HostOp::ZoneReport => false,
        }
    }

    /// Whether a host driver splits a request of this kind into several commands at the
    /// device's maximum data transfer size (NVMe MDTS): reads and writes. A zone append is
    /// not split (it must land whole at one write pointer; docs/zns.md), a trim carries
    /// ranges, not data.
    #[inline]
    pub fn splits_at_max_transfer(self) -> bool {
        match self {
            HostOp::Read | HostOp::Write => true,
            HostOp::Trim
            | HostOp::Flush
            | HostOp::ZoneAppend
            | HostOp::ZoneOpen
            | HostOp::ZoneClose
            | HostOp::ZoneFinish
            | HostOp::ZoneReset
            | HostOp::ZoneReport => false,
        }
    }
}

/// Which way a command's data crosses the link ([`HostOp::data`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataDir {
    /// No data (the command and its completion only).
    None,
    /// Host memory → device (write data).
    ToDevice,
    /// Device → host memory (read data).
    ToHost,
}

/// How a completed request is counted ([`HostOp::class`]): one of the host counters'
/// request kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClass {
    Read,
    /// Writes and zone appends.
    Write,
    Trim,
    Flush,
    /// Zone management and report commands.
    Zone,
}

impl OpClass {
    /// The latency histogram the class's requests go to (read, write, flush), if any.
    #[inline]
    pub fn latency_index(self) -> Option<usize> {
        match self {
            OpClass::Read => Some(0),
            OpClass::Write => Some(1),
            OpClass::Flush => Some(2),
            OpClass::Trim | OpClass::Zone => None,
        }
    }
}

/// One host request as a workload produces it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostRequest {
    /// Arrival time for open-loop flows, not-before time for paced ones ([`crate::Arrival`]);
    /// ignored (0) for closed-loop flows.
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
    /// (`ssdlab serve`: the server's request slot). A workload that names its requests'
    /// origins ([`crate::stats::WorkloadStats::set_origins`]: the host log-structured
    /// layer's user and relocation I/O) puts the origin's index here; 0 for the others.
    pub tag: u32,
    /// NVMe FDP placement identifier of a write (the directive's DSPEC): the device's
    /// `[device.fdp]` maps it to a reclaim-unit handle. 0 (the default handle) otherwise.
    pub placement_id: u16,
}

impl Default for HostRequest {
    fn default() -> Self {
        HostRequest {
            arrival_ns: 0,
            op: HostOp::Read,
            offset_bytes: 0,
            size_bytes: 0,
            journal: None,
            tag: 0,
            placement_id: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What each kind carries over the link, how it is counted, whether it addresses
    /// units, splits at the maximum transfer size, is a zone (management) command: the table the drivers, the link and
    /// the counters read (each method matches every kind: a new kind must answer each).
    #[test]
    fn every_kind_answers_each_question() {
        use DataDir::{None as N, ToDevice as Down, ToHost as Up};
        use OpClass::*;
        let table = [
            (HostOp::Read, Up, Read, true, true, false, false),
            (HostOp::Write, Down, Write, true, true, false, false),
            (HostOp::Trim, N, Trim, true, false, false, false),
            (HostOp::Flush, N, Flush, false, false, false, false),
            (HostOp::ZoneAppend, Down, Write, true, false, true, false),
            (HostOp::ZoneOpen, N, Zone, false, false, true, true),
            (HostOp::ZoneClose, N, Zone, false, false, true, true),
            (HostOp::ZoneFinish, N, Zone, false, false, true, true),
            (HostOp::ZoneReset, N, Zone, false, false, true, true),
            (HostOp::ZoneReport, N, Zone, false, false, true, false),
        ];
        assert_eq!(table.map(|t| t.0), HostOp::ALL);
        for (op, data, class, units, splits, zone, management) in table {
            assert_eq!(op.data(), data, "{op:?}");
            assert_eq!(op.writes_data(), data == Down, "{op:?}");
            assert_eq!(op.class(), class, "{op:?}");
            assert_eq!(op.addresses_units(), units, "{op:?}");
            assert_eq!(op.splits_at_max_transfer(), splits, "{op:?}");
            assert_eq!(op.is_zone_command(), zone, "{op:?}");
            assert_eq!(op.is_zone_management(), management, "{op:?}");
        }
        let latency = [Read, Write, Trim, Flush, Zone].map(OpClass::latency_index);
        assert_eq!(latency, [Some(0), Some(1), None, Some(2), None]);
    }
}
