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

/// A generator for `stream` derived from the run's `seed`.
pub fn stream(seed: u64, stream: u64) -> SimRng {
    let lo = mix64(seed ^ mix64(stream));
    let hi = mix64(lo ^ 0xD1B5_4A32_D192_ED03);
    SimRng::from_seed(((hi as u128) << 64 | lo as u128).to_le_bytes())
}
