//! Write amplification of uniform random writes under greedy and FIFO GC over a range of OP,
//! against independent calculations written for this test: the closed-form FIFO model
//! (Hu et al. 2009; Desnoyers 2012) and a minimal greedy simulator that shares no code with
//! the FTL.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use ssdlab_core::config::GcConfig;
use ssdlab_core::flash::OpKind;
use ssdlab_core::sim::functional::FunctionalDriver;
use ssdlab_core::{Config, Simulation};

const BLOCKS: u32 = 256;
const PAGES: u32 = 64;

fn device(op: f64, victim: GcConfig) -> Config {
    let text = format!(
        r#"
mode = "functional"
[device]
over_provisioning_ratio = {op}
[device.geometry]
channels = 1
chips_per_channel = 1
dies_per_chip = 1
planes_per_die = 1
blocks_per_plane = {BLOCKS}
pages_per_block = {PAGES}
page_size_bytes = 4096
[ftl]
gc_soft_free_blocks = 2
gc_hard_free_blocks = 1
"#
    );
    let mut c = Config::from_toml_str(&text, "waf").unwrap();
    c.ftl.gc = victim;
    c
}

/// Steady-state WAF of the FTL: fill, warm up, then measure over `measure` capacities.
fn simulated_waf(op: f64, victim: GcConfig) -> (f64, u32) {
    let mut sim = Simulation::new(device(op, victim)).unwrap();
    let units = sim.derived.logical_units;
    let mut rng = Pcg64Mcg::seed_from_u64(21);
    let mut d = FunctionalDriver::new(&mut sim.ftl);
    for lpn in 0..units {
        d.write_unit(lpn).unwrap();
    }
    for _ in 0..units * 4 {
        d.write_unit(rng.gen_range(0..units)).unwrap();
    }
    let before = d.ftl.nand_counts().total(OpKind::Program);
    let n = units as u64 * 8;
    for _ in 0..n {
        d.write_unit(rng.gen_range(0..units)).unwrap();
    }
    (
        (d.ftl.nand_counts().total(OpKind::Program) - before) as f64 / n as f64,
        units,
    )
}

/// Principal branch of Lambert W on [−1/e, 0) by Halley's iteration.
fn lambert_w0(x: f64) -> f64 {
    let mut w = if x < -0.3 {
        -1.0 + (2.0 * (1.0 + std::f64::consts::E * x)).sqrt()
    } else {
        x
    };
    for _ in 0..100 {
        let e = w.exp();
        let f = w * e - x;
        let step = f / (e * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
        w -= step;
        if step.abs() < 1e-15 {
            break;
        }
    }
    w
}

/// FIFO cleaning under uniform random writes: WAF = α / (α + W0(−α e^−α)), α = spare factor
/// physical/logical counted over the space that can hold data: blocks kept free (the soft
/// threshold) and the half-written frontiers (one block on average) hold none.
fn fifo_model_waf(units: u32) -> f64 {
    let alpha = (BLOCKS - 2 - 1) as f64 * PAGES as f64 / units as f64;
    alpha / (alpha + lambert_w0(-alpha * (-alpha).exp()))
}

/// A minimal page-mapped FTL with greedy cleaning (lowest valid count, lowest id on ties),
/// separate host and GC frontiers, GC while fewer than 2 blocks are free.
struct ReferenceFtl {
    np: usize,
    owner: Vec<u32>,    // physical page → logical page
    where_: Vec<usize>, // logical page → physical page
    valid: Vec<usize>,
    full: Vec<bool>,
    free: std::collections::VecDeque<usize>,
    frontier: [usize; 2],
    next: [usize; 2],
    programs: u64,
}

impl ReferenceFtl {
    fn new(units: u32) -> ReferenceFtl {
        let (nb, np) = (BLOCKS as usize, PAGES as usize);
        ReferenceFtl {
            np,
            owner: vec![u32::MAX; nb * np],
            where_: vec![usize::MAX; units as usize],
            valid: vec![0; nb],
            full: vec![false; nb],
            free: (0..nb).collect(),
            frontier: [usize::MAX; 2],
            next: [0; 2],
            programs: 0,
        }
    }

    fn place(&mut self, lpn: u32, stream: usize) {
        if self.frontier[stream] == usize::MAX {
            self.frontier[stream] = self
                .free
                .pop_front()
                .expect("reference FTL ran out of blocks");
            self.next[stream] = 0;
        }
        let b = self.frontier[stream];
        let p = b * self.np + self.next[stream];
        let old = self.where_[lpn as usize];
        if old != usize::MAX {
            self.owner[old] = u32::MAX;
            self.valid[old / self.np] -= 1;
        }
        self.owner[p] = lpn;
        self.where_[lpn as usize] = p;
        self.valid[b] += 1;
        self.programs += 1;
        self.next[stream] += 1;
        if self.next[stream] == self.np {
            self.full[b] = true;
            self.frontier[stream] = usize::MAX;
        }
    }

    fn write(&mut self, lpn: u32) {
        self.place(lpn, 0);
        while self.free.len() < 2 {
            let np = self.np;
            let victim = (0..self.valid.len())
                .filter(|&b| self.full[b] && self.valid[b] < np)
                .min_by_key(|&b| (self.valid[b], b))
                .expect("no victim");
            self.full[victim] = false;
            for p in victim * np..(victim + 1) * np {
                if self.owner[p] != u32::MAX {
                    self.place(self.owner[p], 1);
                }
            }
            self.free.push_back(victim);
        }
    }
}

fn greedy_reference_waf(units: u32) -> f64 {
    let mut ftl = ReferenceFtl::new(units);
    let mut rng = Pcg64Mcg::seed_from_u64(21);
    for lpn in 0..units {
        ftl.write(lpn);
    }
    for _ in 0..units * 4 {
        ftl.write(rng.gen_range(0..units));
    }
    let before = ftl.programs;
    let n = units as u64 * 8;
    for _ in 0..n {
        ftl.write(rng.gen_range(0..units));
    }
    (ftl.programs - before) as f64 / n as f64
}

#[test]
fn lambert_w_reference_values() {
    assert!((lambert_w0(-0.35) - -0.716_638_816_456_073_8).abs() < 1e-12);
    assert!((lambert_w0(-0.2) - -0.259_171_101_819_073_7).abs() < 1e-12);
}

#[test]
fn fifo_waf_matches_closed_form() {
    for op in [0.15, 0.25, 0.5, 1.0] {
        let (sim, units) = simulated_waf(op, GcConfig::Fifo(Default::default()));
        let model = fifo_model_waf(units);
        let err = (sim - model).abs() / model;
        println!(
            "FIFO OP {op}: simulated {sim:.4}, model {model:.4}, error {:.2}%",
            err * 100.0
        );
        assert!(
            err < 0.03,
            "OP {op}: simulated FIFO WAF {sim:.3} vs model {model:.3} ({:.1}%)",
            err * 100.0
        );
    }
}

#[test]
fn greedy_waf_matches_reference_simulator() {
    let mut last = f64::INFINITY;
    for op in [0.15, 0.25, 0.5, 1.0] {
        let (sim, units) = simulated_waf(op, GcConfig::Greedy(Default::default()));
        let reference = greedy_reference_waf(units);
        let err = (sim - reference).abs() / reference;
        println!(
            "greedy OP {op}: FTL {sim:.4}, reference {reference:.4}, error {:.2}%",
            err * 100.0
        );
        assert!(
            err < 0.03,
            "OP {op}: FTL greedy WAF {sim:.3} vs reference {reference:.3} ({:.1}%)",
            err * 100.0
        );
        assert!(sim < last, "WAF falls as OP grows");
        assert!(sim < fifo_model_waf(units), "greedy beats FIFO at OP {op}");
        last = sim;
    }
}
