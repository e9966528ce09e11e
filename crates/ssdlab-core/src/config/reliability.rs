//! `[device.reliability]`: raw bit errors, ECC and read retry (docs/reliability.md).

use super::CellMode;
use crate::error::{Result, SimError};
use crate::flash::reliability::{
    Ecc, RberModel, RberParams, DEFAULT_ECC, MAX_RETRY_STEPS, NS_PER_DAY,
};
use crate::policy::retry::RetryConfig;
use serde::{Deserialize, Serialize};

/// The RBER parameters of each cell mode (absent modes take their defaults).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RberTable {
    pub slc: RberParams,
    pub mlc: RberParams,
    pub tlc: RberParams,
    pub qlc: RberParams,
}

impl Default for RberTable {
    fn default() -> Self {
        RberTable {
            slc: RberParams::default_for(CellMode::Slc),
            mlc: RberParams::default_for(CellMode::Mlc),
            tlc: RberParams::default_for(CellMode::Tlc),
            qlc: RberParams::default_for(CellMode::Qlc),
        }
    }
}

/// `[device.reliability]`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ReliabilityConfig {
    /// The model runs (default true); false: every read succeeds at once.
    pub enabled: bool,
    /// P/E cycles every block had before the run (the RBER model's wear only: the block
    /// table's erase counts, wear leveling, endurance retirement and erase loops count
    /// this run's erases).
    pub initial_pe_cycles: u32,
    /// Age (days) of the data present when the measured phase starts.
    pub retention_age_days: f64,
    /// Bytes of data per ECC codeword.
    pub codeword_bytes: u32,
    /// Bit errors the hard decoder corrects per codeword.
    pub correctable_bits_per_codeword: u32,
    /// Bit errors the soft decoder corrects per codeword (0: no soft-decode step).
    pub soft_correctable_bits_per_codeword: u32,
    /// Hard-decode time of a retry step (the first read's decode is in its latency).
    pub hard_decode_ns: u64,
    /// Extra sensings of the soft-decode step.
    pub soft_decode_reads: u32,
    /// Soft-decode time.
    pub soft_decode_ns: u64,
    /// Steps of the read-retry table.
    pub retry_steps: u32,
    /// Each retry step multiplies the effective RBER by this (0 < f < 1).
    pub retry_rber_factor: f64,
    /// The read-retry policy.
    pub retry: RetryConfig,
    /// RBER power-law parameters per cell mode.
    pub rber: RberTable,
}

impl Default for ReliabilityConfig {
    fn default() -> Self {
        ReliabilityConfig {
            enabled: true,
            initial_pe_cycles: 0,
            retention_age_days: 0.0,
            codeword_bytes: DEFAULT_ECC.codeword_bytes,
            correctable_bits_per_codeword: DEFAULT_ECC.correctable_bits,
            soft_correctable_bits_per_codeword: DEFAULT_ECC.soft_correctable_bits,
            hard_decode_ns: 4_000,
            soft_decode_reads: 3,
            soft_decode_ns: 20_000,
            retry_steps: DEFAULT_ECC.retry_steps,
            retry_rber_factor: DEFAULT_ECC.retry_rber_factor,
            retry: RetryConfig::default(),
            rber: RberTable::default(),
        }
    }
}

impl ReliabilityConfig {
    /// Check every key (called by [`super::Config::validate`]).
    pub fn validate(&self) -> Result<()> {
        let k = |key: &str| format!("device.reliability.{key}");
        let d = self.retention_age_days;
        if !(d.is_finite() && (0.0..=36_500.0).contains(&d)) {
            return Err(SimError::config(
                k("retention_age_days"),
                format!("{d} must be a finite number of days in [0, 36500]"),
            ));
        }
        if self.initial_pe_cycles > 1_000_000 {
            return Err(SimError::config(
                k("initial_pe_cycles"),
                format!("{} is above 1000000", self.initial_pe_cycles),
            ));
        }
        let cw = self.codeword_bytes;
        if cw == 0 || cw > 1 << 16 {
            return Err(SimError::config(
                k("codeword_bytes"),
                format!("{cw} must be in 1..=65536"),
            ));
        }
        let t = self.correctable_bits_per_codeword;
        if t == 0 || t >= cw * 8 {
            return Err(SimError::config(
                k("correctable_bits_per_codeword"),
                format!("{t} must be in 1..{} (the codeword's bits)", cw * 8),
            ));
        }
        let s = self.soft_correctable_bits_per_codeword;
        if s != 0 && (s <= t || s >= cw * 8) {
            return Err(SimError::config(
                k("soft_correctable_bits_per_codeword"),
                format!("{s} must be 0 (no soft decoding) or above correctable_bits_per_codeword ({t}) and below the codeword's bits"),
            ));
        }
        if self.retry_steps > MAX_RETRY_STEPS {
            return Err(SimError::config(
                k("retry_steps"),
                format!("{} is above {MAX_RETRY_STEPS}", self.retry_steps),
            ));
        }
        let f = self.retry_rber_factor;
        if !(f.is_finite() && f > 0.0 && f < 1.0) {
            return Err(SimError::config(
                k("retry_rber_factor"),
                format!("{f} must be a number in (0, 1)"),
            ));
        }
        if self.soft_decode_reads > 16 {
            return Err(SimError::config(
                k("soft_decode_reads"),
                format!("{} is above 16", self.soft_decode_reads),
            ));
        }
        for (mode, p) in [
            ("slc", &self.rber.slc),
            ("mlc", &self.rber.mlc),
            ("tlc", &self.rber.tlc),
            ("qlc", &self.rber.qlc),
        ] {
            p.check()
                .map_err(|(key, why)| SimError::config(k(&format!("rber.{mode}.{key}")), why))?;
        }
        self.retry
            .check()
            .map_err(|(key, why)| SimError::config(k(&format!("retry.{key}")), why))
    }

    /// The ECC ladder.
    pub fn ecc(&self) -> Ecc {
        Ecc {
            codeword_bits: self.codeword_bytes * 8,
            codeword_bytes: self.codeword_bytes,
            correctable_bits: self.correctable_bits_per_codeword,
            soft_correctable_bits: self.soft_correctable_bits_per_codeword,
            retry_steps: self.retry_steps,
            retry_rber_factor: self.retry_rber_factor,
        }
    }

    /// The hard-decode limit of a device of `page_bytes` pages: the RBER at which a read
    /// of a whole page fails its hard decode (step 0) with probability
    /// [`HARD_LIMIT_FAIL`](crate::policy::reliability::HARD_LIMIT_FAIL) (what the `rber`
    /// reclaim and refresh policies take their margin of).
    pub fn hard_limit_rber(&self, page_bytes: u32) -> f64 {
        let codewords = page_bytes.div_ceil(self.codeword_bytes.max(1)).max(1);
        self.ecc()
            .rber_at_read_fail(codewords, crate::policy::reliability::HARD_LIMIT_FAIL)
    }

    /// The resolved model for a device of `page_bytes` pages.
    pub fn model(&self, page_bytes: u32) -> RberModel {
        let r = &self.rber;
        RberModel::new(
            [r.slc.clone(), r.mlc.clone(), r.tlc.clone(), r.qlc.clone()],
            self.ecc(),
            self.initial_pe_cycles,
            (self.retention_age_days * NS_PER_DAY) as u64,
            page_bytes.div_ceil(self.codeword_bytes.max(1)),
        )
    }
}
