//! What a served device needs in memory, checked before the server listens: a server that
//! runs out of memory later aborts, dropping every client and the stored data.
//!
//! * the simulator's structures ([`ssdlab_core::config::Derived::estimated_memory_bytes`] with
//!   integrity versions, which serving turns on);
//! * the stored bytes: a block's bytes are allocated whole at its first program and freed
//!   by its erase, and the FTL writes into free blocks until GC must reclaim some, so once
//!   about the device's physical size has been written (whatever the addresses) nearly
//!   every block holds bytes: the device's physical bytes, or `--max-stored-bytes` (writes
//!   past it get `ENOSPC`) and the blocks being filled when it is reached
//!   ([`open_blocks_bytes`]); plus the write buffer's units and the erased blocks'
//!   buffers kept for reuse (up to 32 MiB, or 4 blocks);
//! * a recovery after a power cut builds the FTL twice beside the old one (a placeholder
//!   while the old one is moved out, and the recovered one), and keeps the newest version
//!   per unit while it scans.

use crate::ServeError;
use ssdlab_core::config::Derived;
use ssdlab_core::flash::SlotData;

/// Bytes per logical unit a recovery keeps while it scans (`ftl/recover.rs`: the newest
/// copy's version, block age and slot, and the unit's version; 32 with 64-bit versions),
/// besides the FTLs.
const RECOVERY_SCAN_BYTES_PER_UNIT: u64 = 32;

/// The stored bytes may pass `--max-stored-bytes` by the blocks being filled when it is
/// reached: a host and a GC block per plane, whole.
pub fn open_blocks_bytes(d: &Derived) -> u64 {
    let g = &d.geometry;
    2 * g.planes as u64 * g.units_per_block as u64 * g.unit_bytes as u64
}

/// The memory a served device needs, in parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Need {
    /// Map, out-of-band area, versions, block state, write-buffer index.
    pub structures_bytes: u64,
    /// The stored bytes when every block holds data (or `--max-stored-bytes`), the write
    /// buffer's units and the erased blocks' buffers kept for reuse.
    pub stored_bytes: u64,
    /// A recovery's two more FTLs and scan state (0 when power cuts are refused).
    pub recovery_bytes: u64,
    /// The stored bytes are capped by `--max-stored-bytes`.
    pub capped: bool,
}

impl Need {
    /// The need of device `d` served (integrity versions on), its stored bytes capped at
    /// `max_stored_bytes`, with power cuts possible (`cuts`).
    pub fn of(d: &Derived, max_stored_bytes: Option<u64>, cuts: bool) -> Need {
        let structures_bytes = d.estimated_memory_bytes(true);
        let g = &d.geometry;
        let buffer_bytes = d.write_buffer_units as u64 * g.unit_bytes as u64
            + SlotData::kept_buffers_bytes_max(g.units_per_block, g.unit_bytes);
        let stored_bytes = match max_stored_bytes {
            Some(max) => (max + open_blocks_bytes(d)).min(d.physical_bytes),
            None => d.physical_bytes,
        } + buffer_bytes;
        let recovery_bytes = if cuts {
            2 * structures_bytes + RECOVERY_SCAN_BYTES_PER_UNIT * d.logical_units as u64
        } else {
            0
        };
        Need {
            structures_bytes,
            stored_bytes,
            recovery_bytes,
            capped: max_stored_bytes.is_some(),
        }
    }

    pub fn total_bytes(&self) -> u64 {
        self.structures_bytes + self.stored_bytes + self.recovery_bytes
    }

    /// One line: the parts.
    pub fn describe(&self) -> String {
        format!(
            "about {} of structures now; up to {} with the stored bytes{}, {} during a recovery",
            size(self.structures_bytes),
            size(self.structures_bytes + self.stored_bytes),
            if self.capped {
                " (--max-stored-bytes)"
            } else {
                " (every block written)"
            },
            size(self.total_bytes())
        )
    }

    /// An error naming `label` when this machine has less memory available.
    pub fn check(&self, label: &str) -> Result<(), ServeError> {
        let Some(avail) = available_memory_bytes() else {
            return Ok(());
        };
        if self.total_bytes() <= avail {
            return Ok(());
        }
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        Err(ServeError::Config {
            label: label.into(),
            why: format!(
            "serving this device needs about {:.1} GiB of memory ({:.1} GiB of structures, {:.1} GiB of stored bytes {}, {:.1} GiB for a recovery after a power cut), more than the {:.1} GiB this machine has available; serve a smaller device, cap the stored bytes with --max-stored-bytes (writes past it get ENOSPC), or pass --allow-large-memory",
            gib(self.total_bytes()),
            gib(self.structures_bytes),
            gib(self.stored_bytes),
            if self.capped {
                "(--max-stored-bytes)"
            } else {
                "(every block written: a block's bytes are kept whole from its first program to its erase)"
            },
            gib(self.recovery_bytes),
            gib(avail)
        )})
    }
}

/// `bytes` in MiB below a GiB, else in GiB.
fn size(bytes: u64) -> String {
    if bytes < 1 << 30 {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
    }
}

/// Memory this process may still take: the machine's available memory, within the
/// cgroup's limit (v2 `memory.max`) and the address-space limit (`ulimit -v`).
pub fn available_memory_bytes() -> Option<u64> {
    let machine = ssdlab_output::available_memory_bytes();
    [machine, cgroup_room_bytes(), address_space_room_bytes()]
        .into_iter()
        .flatten()
        .min()
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// cgroup v2: `memory.max − memory.current` of this process's cgroup, if limited.
fn cgroup_room_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = format!("/sys/fs/cgroup{}", rel.trim_end_matches('/'));
    let max = read_u64(&format!("{dir}/memory.max"))?; // "max" (no limit) does not parse
    let current = read_u64(&format!("{dir}/memory.current")).unwrap_or(0);
    Some(max.saturating_sub(current))
}

/// `RLIMIT_AS` minus the address space in use (`VmSize`), if limited.
fn address_space_room_bytes() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find(|l| l.starts_with("VmSize:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(r.rlim_cur.saturating_sub(kib * 1024))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ssdlab_core::Config;

    const DEVICE: &str = r#"
[device]
over_provisioning_ratio = 0.25
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 2
blocks_per_plane = 64
pages_per_block = 32
page_size_bytes = 16384
mapping_unit_bytes = 4096
[ftl]
write_buffer_bytes = 1048576
"#;

    #[test]
    fn stored_bytes_are_the_physical_size_or_the_cap_plus_the_buffer() {
        let cfg = Config::from_toml_str(DEVICE, "t").unwrap();
        let d = cfg.validate().unwrap();
        assert_eq!(d.physical_bytes, 2 * 64 * 32 * 16384);
        let full = Need::of(&d, None, true);
        // The write buffer (1 MiB) and the erased buffers kept for reuse (32 MiB: 64
        // blocks of 512 KiB).
        let buffers = (1 << 20) + (32 << 20);
        assert_eq!(full.stored_bytes, d.physical_bytes + buffers);
        assert_eq!(
            full.recovery_bytes,
            2 * full.structures_bytes + 32 * d.logical_units as u64
        );
        let capped = Need::of(&d, Some(8 << 20), false);
        let open = 2 * 2 * 32 * 16384;
        assert_eq!(open_blocks_bytes(&d), open);
        assert_eq!(capped.stored_bytes, (8 << 20) + open + buffers);
        assert_eq!(capped.recovery_bytes, 0);
        assert!(capped.capped && !full.capped);
    }

    /// Serving keeps a version per logical unit (the last written) and one per physical
    /// slot (the out-of-band sequence number recovery orders copies by): both counted.
    #[test]
    fn the_estimate_counts_a_version_per_unit_and_per_slot() {
        let cfg = Config::from_toml_str(DEVICE, "t").unwrap();
        let d = cfg.validate().unwrap();
        let (units, slots) = (d.logical_units as u64, d.geometry.pages * 4);
        assert!(slots > units);
        let versions = d.estimated_memory_bytes(true) - d.estimated_memory_bytes(false);
        assert!(
            versions >= 4 * units + 4 * slots,
            "{versions} bytes for the versions of {units} units in {slots} slots"
        );
    }
}
