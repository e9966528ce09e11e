//! `[device.host_interface]`: the PCIe link and the NVMe controller's front end (timed
//! mode). Absent, requests go straight to the FTL with no link and no command cost.

use crate::error::{Result, SimError};
use crate::policy::arbitration::{ArbitrationConfig, Priority};
use serde::{Deserialize, Serialize};

/// A PCIe link and an NVMe controller front end.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HostInterfaceConfig {
    /// PCIe generation: 3, 4 or 5 (8, 16, 32 GT/s per lane, 128b/130b encoding).
    pub pcie_generation: u32,
    /// Lanes: 1, 2, 4, 8 or 16.
    pub lanes: u32,
    /// Max payload size (MPS): data bytes per TLP, a power of two 128–4096.
    pub max_payload_bytes: u32,
    /// Max read request size (MRRS): bytes one memory-read request asks for, a power of two
    /// 128–4096 (the device's reads of write data and of submission-queue entries).
    pub max_read_request_bytes: u32,
    /// Bytes on the wire per TLP besides its payload: framing (4), sequence number (2),
    /// header (16 with 64-bit addresses), LCRC (4).
    pub tlp_overhead_bytes: u32,
    /// The controller's processing time per command, one command at a time (fetch
    /// decode, translation set-up, completion): the interface's IOPS ceiling is 10⁹ / this.
    pub command_ns: u64,
    /// Commands the controller holds at once (fetched, not yet completed); the arbiter
    /// fetches the next command when one completes. 1 to 65,536.
    pub max_commands_in_flight: u32,
    /// Maximum data transfer size (MDTS): the host driver splits larger reads and writes
    /// into commands of at most this many bytes; 2^n × 4096 (NVMe), 0 = no limit.
    pub max_data_transfer_bytes: u64,
    /// Which submission queue the next command comes from (`ssdlab policies`).
    pub arbitration: ArbitrationConfig,
    /// Priority class of each flow's submission queue, in flow order (`urgent`, `high`,
    /// `medium`, `low`; flows not listed are `medium`). Weighted round robin only.
    pub flow_priority: Vec<Priority>,
}

impl Default for HostInterfaceConfig {
    fn default() -> Self {
        HostInterfaceConfig {
            pcie_generation: 3,
            lanes: 4,
            max_payload_bytes: 256,
            max_read_request_bytes: 512,
            tlp_overhead_bytes: 26,
            command_ns: 1_000,
            max_commands_in_flight: 1024,
            max_data_transfer_bytes: 0,
            arbitration: ArbitrationConfig::default(),
            flow_priority: Vec::new(),
        }
    }
}

impl HostInterfaceConfig {
    /// Link speed per lane relative to PCIe 3.0 (8 GT/s): 1, 2 or 4.
    pub fn generation_factor(&self) -> u64 {
        1 << (self.pcie_generation.saturating_sub(3))
    }

    /// Check every key (called by [`super::Config::validate`]).
    pub fn validate(&self) -> Result<()> {
        let key = |k: &str| format!("device.host_interface.{k}");
        let bad = |k: &str, why: String| Err(SimError::config(key(k), why));
        if !(3..=5).contains(&self.pcie_generation) {
            return bad(
                "pcie_generation",
                format!(
                    "{}: generations 3, 4 and 5 are modelled (8, 16, 32 GT/s per lane)",
                    self.pcie_generation
                ),
            );
        }
        if ![1, 2, 4, 8, 16].contains(&self.lanes) {
            return bad(
                "lanes",
                format!("{}: a link has 1, 2, 4, 8 or 16 lanes", self.lanes),
            );
        }
        for (k, v) in [
            ("max_payload_bytes", self.max_payload_bytes),
            ("max_read_request_bytes", self.max_read_request_bytes),
        ] {
            if !(v.is_power_of_two() && (128..=4096).contains(&v)) {
                return bad(
                    k,
                    format!("{v}: PCIe allows a power of two from 128 to 4096"),
                );
            }
        }
        if !(12..=64).contains(&self.tlp_overhead_bytes) {
            return bad(
                "tlp_overhead_bytes",
                format!(
                    "{}: a TLP's header, framing and CRC take 12 to 64 bytes (26 with 64-bit addresses)",
                    self.tlp_overhead_bytes
                ),
            );
        }
        if self.max_commands_in_flight == 0 || self.max_commands_in_flight > 65_536 {
            return bad(
                "max_commands_in_flight",
                format!("{}: 1 to 65536", self.max_commands_in_flight),
            );
        }
        let m = self.max_data_transfer_bytes;
        if m != 0 && !(m.is_multiple_of(4096) && (m / 4096).is_power_of_two()) {
            return bad(
                "max_data_transfer_bytes",
                format!(
                    "{m}: NVMe's MDTS is a power of two times the 4 KiB memory page (4096, 8192, 16384, …, 131072, …), or 0 for no limit"
                ),
            );
        }
        self.arbitration
            .check()
            .map_err(|(k, why)| SimError::config(key(&format!("arbitration.{k}")), why))?;
        if !self.flow_priority.is_empty() && !self.arbitration.priority_classes() {
            return bad(
                "flow_priority",
                format!(
                    "priority classes take effect under weighted round robin only (NVMe ignores them under {:?}): set arbitration = {{ policy = \"weighted-round-robin\" }} or remove flow_priority",
                    self.arbitration.name()
                ),
            );
        }
        Ok(())
    }

    /// Each of `flows` flows' priority class; an error when more classes than flows are given.
    pub fn classes(&self, flows: usize) -> Result<Vec<Priority>> {
        if self.flow_priority.len() > flows {
            return Err(SimError::config(
                "device.host_interface.flow_priority",
                format!(
                    "{} classes given for a workload of {flows} flow(s)",
                    self.flow_priority.len()
                ),
            ));
        }
        let mut v = self.flow_priority.clone();
        v.resize(flows, Priority::Medium);
        Ok(v)
    }
}
