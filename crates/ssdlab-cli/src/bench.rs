//! `ssdlab bench`: the speed figures of issue 2, measured on the bundled presets.
//!
//! 1. functional: spec-02 device (880 blocks × 128 pages × 1 KiB, OP 10%), greedy GC,
//!    uniform random 1 KiB overwrites → host writes per wall second, WAF, exact GC counts;
//! 2. precondition: Table-1 device (256 GiB), sequential fill + one capacity of random 4 KiB
//!    overwrites → wall seconds and peak memory;
//! 3. timed: 4 KiB random 70/30 at QD 16 on the preconditioned Table-1 device → simulated
//!    host requests per wall second.

use crate::output::peak_rss_bytes;
use anyhow::{Context, Result};
use clap::Args;
use ssdlab_core::{Config, NoProgress, Simulation};
use std::time::Instant;

const OP_PAPER: &str = include_str!("../../../configs/op-paper.toml");

#[derive(Args)]
pub struct BenchArgs {
    /// Random 1 KiB overwrites for the functional figure, in multiples of the logical capacity.
    #[arg(long, default_value_t = 100.0)]
    functional_capacity_multiple: f64,
    /// Shrink the Table-1 device by this factor as `reproduce ssr --scale` does (chips per
    /// channel, then pages per block; 1 = the full 256 GiB device).
    #[arg(long, default_value_t = 1)]
    table1_scale: u32,
    /// Timed-mode requests.
    #[arg(long, default_value_t = 2_000_000)]
    timed_requests: u64,
    /// Only the functional figure.
    #[arg(long)]
    functional_only: bool,
    /// Runs of the functional and timed figures (the VM's wall clock is noisy: best and
    /// median are printed). Timed repeats start from copies of the preconditioned state.
    #[arg(long, default_value_t = 3)]
    repeat: u32,
}

/// "best x, median y" of rates.
fn best_median(mut rates: Vec<f64>) -> String {
    rates.sort_by(|a, b| b.total_cmp(a));
    format!("best {:.2}, median {:.2}", rates[0], rates[rates.len() / 2])
}

fn parse(text: &str, name: &str) -> Result<Config> {
    Ok(Config::from_toml_str(text, name)?)
}

pub fn run(a: &BenchArgs) -> Result<()> {
    // 1. Functional mode on the spec-02 device.
    let mut cfg = parse(OP_PAPER, "configs/op-paper.toml")?;
    cfg.precondition.random_overwrite_capacity_multiple = a.functional_capacity_multiple;
    let repeat = a.repeat.max(1);
    let mut rates = Vec::new();
    let mut last = None;
    for _ in 0..repeat {
        let mut sim = Simulation::new(cfg.clone())?;
        let units = sim.derived.logical_units as u64;
        let t = Instant::now();
        sim.precondition(&mut NoProgress)?;
        let wall = t.elapsed().as_secs_f64();
        let writes = units + (a.functional_capacity_multiple * units as f64) as u64;
        rates.push(writes as f64 / wall / 1e6);
        last = Some((sim, writes));
    }
    let (sim, writes) = last.expect("at least one run");
    let c = sim.ftl.counters;
    println!("functional  spec-02 device (880 blocks x 128 pages x 1 KiB, OP 10%, greedy): {writes} host writes per run, {} M writes/s over {repeat} runs; WAF (random phase) {:.3}; GC victims {}, copied units {}, erases {}",
        best_median(rates),
        sim_precondition_waf(&sim),
        c.gc_invocations, c.gc_copied_units, c.nand.total(ssdlab_core::flash::OpKind::Erase));
    if a.functional_only {
        return Ok(());
    }

    // 2. Preconditioning the Table-1 device.
    // Scaled as `reproduce ssr --scale` scales it (chips per channel, then pages per
    // block), so the 7 % OP stays valid at every scale.
    let mut cfg = ssdlab_experiments::ssr::SsrParams::paper(a.table1_scale.max(1))?.base;
    // The same work as the figure has always measured: no suspension of any kind (the
    // preset turns program suspend on for `reproduce ssr`).
    cfg.scheduler.program_suspend = false;
    if let ssdlab_workload::WorkloadConfig::Synthetic(s) = &mut cfg.workload {
        s.requests = a.timed_requests;
    }
    let mut sim = Simulation::new(cfg).context("table-1 config")?;
    let t = Instant::now();
    sim.precondition(&mut NoProgress)?;
    let pre_wall = t.elapsed().as_secs_f64();
    let pre_rss = peak_rss_bytes();
    println!(
        "precondition Table-1 device ({} GiB logical, fill + 1x random 4 KiB): {:.1} s wall, peak RSS {:.0} MiB, WAF {:.3}",
        sim.derived.logical_bytes >> 30,
        pre_wall,
        pre_rss as f64 / (1u64 << 20) as f64,
        sim_precondition_waf(&sim)
    );

    // 3. Timed mode on copies of the preconditioned device (each run sees the same state).
    let mut rates = Vec::new();
    let mut last = None;
    for _ in 0..repeat {
        let mut run = Simulation::from_state(sim.config.clone(), &sim)?;
        let t = Instant::now();
        let r = run.run_workload(&mut NoProgress)?;
        rates.push(r.host.requests as f64 / t.elapsed().as_secs_f64() / 1e6);
        last = Some(r);
    }
    let r = last.expect("at least one run");
    println!(
        "timed       4 KiB random 70/30 QD16: {} requests per run, {} M requests/s over {repeat} runs ({} events); read p99 {} ns, write p99 {} ns; peak RSS {:.0} MiB (two device copies)",
        r.host.requests,
        best_median(rates),
        r.engine.as_ref().map(|e| e.events).unwrap_or(0),
        r.latency_ns.as_ref().map_or(0, |l| l.read.p99),
        r.latency_ns.as_ref().map_or(0, |l| l.write.p99),
        peak_rss_bytes() as f64 / (1u64 << 20) as f64
    );
    Ok(())
}

fn sim_precondition_waf(sim: &Simulation) -> f64 {
    sim.precondition_summary().map(|p| p.waf).unwrap_or(0.0)
}
