//! Address samplers shared by the synthetic generator and the fio job reader.
//!
//! A sampler picks a *slot*: an index in `0..slots` of an aligned start position in the
//! working set. The caller turns the slot into a byte offset. No sampler allocates per
//! request.

use crate::rng::{mix64, SimRng};
use crate::WorkloadError;
use rand::Rng;
use rand_distr::{Distribution, Normal, Zipf};

/// Which distribution a sampler draws from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum AddressKind {
    /// Consecutive slots, advancing by the request size, wrapping at the end.
    Sequential,
    /// Every slot equally likely, independently.
    Uniform,
    /// Every slot exactly once per pass, in a seeded pseudo-random order (fio's random map).
    Permutation,
    /// Zipf over slots with exponent `theta`; ranks scattered by a fixed bijection.
    Zipf { theta: f64 },
    /// fio's pareto: `(slots - 1) * u^(ln h / ln(1 - h))`, scattered like zipf.
    Pareto { h: f64 },
    /// `hot_io` of the draws go uniformly to the first `hot_slots`, the rest to the remainder.
    HotCold { hot_slots: u64, hot_io: f64 },
    /// Slot ~ Normal(centre, sigma), redrawn until it falls in `0..slots` (not scattered).
    Normal { centre: f64, sigma: f64 },
    /// fio `zoned`: list of (cumulative probability, first slot, end slot) zones.
    Zoned(Vec<(f64, u64, u64)>),
}

enum State {
    Sequential { next: u64 },
    Uniform,
    Permutation(Permutation),
    Zipf(Zipf<f64>),
    Pareto { pow: f64 },
    HotCold { hot_slots: u64, hot_io: f64 },
    Normal(Normal<f64>),
    Zoned(Vec<(f64, u64, u64)>),
}

/// A pre-built sampler over `0..slots`.
pub(crate) struct AddressSampler {
    slots: u64,
    scatter_mul: u64,
    /// Added (mod `slots`) to the scattered rank of zipf and pareto draws (fio's `:centre`).
    rotate: u64,
    state: State,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl AddressSampler {
    /// Build a sampler. `key` names the configuration key reported on a bad parameter;
    /// `rotate_fraction` (0..1) shifts zipf/pareto ranks, 0 for no shift.
    pub(crate) fn new(
        kind: &AddressKind,
        slots: u64,
        rotate_fraction: f64,
        rng: &mut SimRng,
        key: &str,
    ) -> Result<AddressSampler, WorkloadError> {
        let bad = |reason: String| WorkloadError::config(key, reason);
        if slots == 0 {
            return Err(bad("the working set holds no request".into()));
        }
        // Odd multiplier coprime with the slot count: a bijection that scatters ranks.
        let mut scatter_mul = 0x9E37_79B9_7F4A_7C15u64 % slots;
        while slots > 1 && (scatter_mul == 0 || gcd(scatter_mul, slots) != 1) {
            scatter_mul = (scatter_mul + 1) % slots;
        }
        let state = match kind {
            AddressKind::Sequential => State::Sequential { next: 0 },
            AddressKind::Uniform => State::Uniform,
            AddressKind::Permutation => State::Permutation(Permutation::new(slots, rng)),
            AddressKind::Zipf { theta } => {
                if *theta <= 0.0 || theta.is_nan() {
                    return Err(bad(format!("zipf exponent {theta} must be > 0")));
                }
                State::Zipf(Zipf::new(slots, *theta).map_err(|e| bad(e.to_string()))?)
            }
            AddressKind::Pareto { h } => {
                if !(*h > 0.0 && *h < 1.0) {
                    return Err(bad(format!("pareto power {h} must be in (0, 1)")));
                }
                State::Pareto {
                    pow: h.ln() / (1.0 - h).ln(),
                }
            }
            AddressKind::HotCold { hot_slots, hot_io } => State::HotCold {
                hot_slots: *hot_slots,
                hot_io: *hot_io,
            },
            AddressKind::Normal { centre, sigma } => {
                State::Normal(Normal::new(*centre, *sigma).map_err(|e| bad(e.to_string()))?)
            }
            AddressKind::Zoned(z) => State::Zoned(z.clone()),
        };
        let rotate = ((rotate_fraction.clamp(0.0, 1.0) * slots as f64) as u64).min(slots - 1);
        Ok(AddressSampler {
            slots,
            scatter_mul: scatter_mul.max(1),
            rotate,
            state,
        })
    }

    fn scatter(&self, rank: u64) -> u64 {
        let s = ((rank as u128 * self.scatter_mul as u128) % self.slots as u128) as u64;
        (s + self.rotate) % self.slots
    }

    /// Next slot. `step_slots` is how far a sequential sampler advances (>= 1).
    #[inline(always)]
    pub(crate) fn next_slot(&mut self, rng: &mut SimRng, step_slots: u64) -> u64 {
        // The uniform draw inline (the hot case of the benchmarks), the rest out of line.
        match self.state {
            State::Uniform => rng.gen_range(0..self.slots),
            _ => self.next_slot_other(rng, step_slots),
        }
    }

    #[inline(never)]
    fn next_slot_other(&mut self, rng: &mut SimRng, step_slots: u64) -> u64 {
        let slots = self.slots;
        match &mut self.state {
            State::Sequential { next } => {
                let s = *next;
                let step = step_slots.max(1);
                *next = if s + step >= slots { 0 } else { s + step };
                s
            }
            State::Uniform => rng.gen_range(0..slots),
            State::Permutation(p) => p.next(rng),
            State::Zipf(z) => {
                let rank = (z.sample(rng) as u64).clamp(1, slots) - 1;
                self.scatter(rank)
            }
            State::Pareto { pow } => {
                let u: f64 = rng.gen();
                let rank = (((slots - 1) as f64) * u.powf(*pow)) as u64;
                self.scatter(rank.min(slots - 1))
            }
            State::HotCold { hot_slots, hot_io } => {
                if *hot_slots == slots || rng.gen::<f64>() < *hot_io {
                    rng.gen_range(0..*hot_slots)
                } else {
                    rng.gen_range(*hot_slots..slots)
                }
            }
            State::Normal(n) => loop {
                let x = n.sample(rng);
                if x >= 0.0 && x < slots as f64 {
                    break x as u64;
                }
            },
            State::Zoned(zones) => {
                let u: f64 = rng.gen();
                let &(_, lo, hi) = zones
                    .iter()
                    .find(|z| u < z.0)
                    .unwrap_or(&zones[zones.len() - 1]);
                rng.gen_range(lo..hi)
            }
        }
    }
}

/// A seeded bijection on `0..n`: a 4-round Feistel network over the next even power of two,
/// cycle-walked into range. Each pass visits every slot once; a new pass draws new keys.
struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
    index: u64,
}

impl Permutation {
    fn new(n: u64, rng: &mut SimRng) -> Permutation {
        let bits = 64 - (n.max(2) - 1).leading_zeros();
        let mut p = Permutation {
            n,
            half_bits: bits.div_ceil(2),
            keys: [0; 4],
            index: 0,
        };
        p.rekey(rng);
        p
    }

    fn rekey(&mut self, rng: &mut SimRng) {
        for k in &mut self.keys {
            *k = rng.gen();
        }
    }

    fn permute(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = mix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    fn next(&mut self, rng: &mut SimRng) -> u64 {
        if self.index >= self.n {
            self.index = 0;
            self.rekey(rng);
        }
        let mut y = self.permute(self.index);
        while y >= self.n {
            y = self.permute(y);
        }
        self.index += 1;
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn permutation_visits_every_slot_once_per_pass() {
        for n in [1u64, 2, 3, 7, 100, 1000, 4097] {
            let mut rng = stream(1, n);
            let mut s =
                AddressSampler::new(&AddressKind::Permutation, n, 0.0, &mut rng, "k").unwrap();
            for _pass in 0..2 {
                let mut seen = vec![false; n as usize];
                for _ in 0..n {
                    let x = s.next_slot(&mut rng, 1) as usize;
                    assert!(!seen[x], "slot {x} twice in a pass of {n}");
                    seen[x] = true;
                }
            }
        }
    }

    #[test]
    fn zoned_respects_zones() {
        let mut rng = stream(2, 0);
        // 90% of draws to slots 0..10, 10% to 10..100.
        let kind = AddressKind::Zoned(vec![(0.9, 0, 10), (1.0, 10, 100)]);
        let mut s = AddressSampler::new(&kind, 100, 0.0, &mut rng, "k").unwrap();
        let n = 20_000;
        let low = (0..n).filter(|_| s.next_slot(&mut rng, 1) < 10).count() as f64 / n as f64;
        assert!((low - 0.9).abs() < 0.02, "{low}");
    }

    #[test]
    fn pareto_is_skewed() {
        let mut rng = stream(3, 0);
        let mut s =
            AddressSampler::new(&AddressKind::Pareto { h: 0.2 }, 1000, 0.0, &mut rng, "k").unwrap();
        let mut counts = vec![0u32; 1000];
        for _ in 0..20_000 {
            counts[s.next_slot(&mut rng, 1) as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top20: u32 = counts[..200].iter().sum();
        assert!(top20 > 14_000, "top 20% of slots got {top20} of 20000");
        assert!(
            AddressSampler::new(&AddressKind::Pareto { h: 1.5 }, 10, 0.0, &mut rng, "k").is_err()
        );
    }
}
