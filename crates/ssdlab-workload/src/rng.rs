//! Seeded random streams. One master seed per run; every consumer derives its own stream
//! so adding a consumer never shifts the numbers another one sees.

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// The generator used everywhere in ssdlab.
pub type SimRng = Pcg64Mcg;

/// SplitMix64 finaliser: decorrelates (seed, stream) pairs.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Every stream tag of ssdlab, in one table: a consumer's stream is `stream(seed, tag)`
/// (plus an index where a consumer has several). A new consumer takes a tag of its own
/// here; `tags_are_distinct` checks the ranges do not meet.
pub mod tag {
    /// Synthetic workload flow `f`: `SYNTHETIC + f`.
    pub const SYNTHETIC: u64 = 0x5959_0000;
    /// fio job `j`, flow `n`: `FIO << 32 | j << 16 | n`.
    pub const FIO: u64 = 0xF10;
    /// fio job `j`, flow `n`, FDP placement draws: `FIO_FDP << 32 | j << 16 | n`.
    pub const FIO_FDP: u64 = 0xFD9;
    /// TPC-C workload.
    pub const TPCC: u64 = 0x7470_6363;
    /// ext4 journaling workload.
    pub const EXT4: u64 = 0x6578_7434;
    /// The CacheLib-like flash cache (`kind = "flash-cache"`).
    pub const FLASH_CACHE: u64 = 0x666c_6361;
    /// The LSM-tree store's gets (`kind = "lsm"`).
    pub const LSM: u64 = 0x6c73_6d00;
    /// The FTL's own draws (random and d-choices GC).
    pub const FTL: u64 = 0x6763;
    /// Injected program and erase failures.
    pub const FAILURES: u64 = 0xFA11;
    /// Factory bad blocks.
    pub const FACTORY_BAD: u64 = 0xBAD;
    /// BET wear leveling of region `r`: `BET + r`.
    pub const BET: u64 = 0xBE7;
    /// Preconditioning's random overwrites.
    pub const PRECONDITION: u64 = 0x7072_6563;
    /// The OP sweep's overwrites ("op_sweep").
    pub const OP_SWEEP: u64 = 0x6f70_5f73_7765_6570;
    /// Functional mode's stripe orders: the shared stripe `STRIPE`, region `r`'s own
    /// `STRIPE + 1 + r`.
    pub const STRIPE: u64 = 0x5374_0000;
    /// `reproduce zns`'s raw §5.1 workload (the zone its writers rewrite, its reads).
    pub const ZNS_RAW: u64 = 0x7a72_6177;
    /// Read retry: each read's draw of its first good retry step.
    pub const READ_RETRY: u64 = 0x5254_5259;

    /// Every tag with how many consecutive streams it spans (for the distinctness test).
    pub const ALL: &[(&str, u64, u64)] = &[
        ("SYNTHETIC", SYNTHETIC, 1 << 16),
        ("FIO", FIO << 32, 1 << 32),
        ("FIO_FDP", FIO_FDP << 32, 1 << 32),
        ("TPCC", TPCC, 1),
        ("EXT4", EXT4, 1),
        ("FLASH_CACHE", FLASH_CACHE, 1),
        ("LSM", LSM, 1),
        ("FTL", FTL, 1),
        ("FAILURES", FAILURES, 1),
        ("FACTORY_BAD", FACTORY_BAD, 1),
        ("BET", BET, 8),
        ("PRECONDITION", PRECONDITION, 1),
        ("OP_SWEEP", OP_SWEEP, 1),
        ("STRIPE", STRIPE, 257),
        ("ZNS_RAW", ZNS_RAW, 1),
        ("READ_RETRY", READ_RETRY, 1),
    ];
}

/// A generator for `stream` derived from the run's `seed`.
pub fn stream(seed: u64, stream: u64) -> SimRng {
    let lo = mix64(seed ^ mix64(stream));
    let hi = mix64(lo ^ 0xD1B5_4A32_D192_ED03);
    SimRng::from_seed(((hi as u128) << 64 | lo as u128).to_le_bytes())
}

#[cfg(test)]
mod tests {
    /// No two consumers' stream ranges meet.
    #[test]
    fn tags_are_distinct() {
        let all = super::tag::ALL;
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(
                    a.1 + a.2 <= b.1 || b.1 + b.2 <= a.1,
                    "stream tags {} and {} overlap",
                    a.0,
                    b.0
                );
            }
        }
    }
}
