//! `ssdlab bench`: the speed figures (issues 2 and 15), measured on the bundled presets.
//!
//! 1. functional: `configs/op-paper.toml` (spec-02 device, 880 blocks × 128 pages × 1 KiB,
//!    OP 10 %, greedy) through the path `ssdlab run` takes — build, fill, then the
//!    workload of uniform random 1 KiB overwrites — → host writes per wall second of the
//!    workload phase, WAF, exact GC counts; beside it the hand-written C greedy FTL
//!    (`bench/greedy_ftl.c`, compiled with `cc -O2` when a C compiler is there) on the
//!    same work, the two alternating run by run, and the median of the per-pair ratios;
//! 2. precondition: Table-1 device (256 GiB), sequential fill + one capacity of random 4 KiB
//!    overwrites → wall seconds and peak memory;
//! 3. timed: 4 KiB random 70/30 at QD 16 on the preconditioned Table-1 device → simulated
//!    host requests per wall second; and the same on the device only filled (no random
//!    overwrites in preconditioning): the workload's overwrites, 30 % of its requests, are
//!    far fewer than the free space, so no GC runs;
//! 4. trace replay: the same 70/30 work written as an MSR Cambridge CSV trace (seeded, in a
//!    temporary file) and replayed closed-loop at QD 16 on the filled device, with the trace
//!    read and parsed on a thread of its own (the default on a machine with more than one
//!    CPU) and on the simulating thread — the results are identical, the speed is not.
//!
//! `--link` instead: the link A/B (issue 50) — `configs/nvme-pcie3-tlc.toml` (its own
//! workload: 4 KiB random 70/30 at QD16, `--timed-requests` requests) on copies of one
//! preconditioned state, with its `[device.host_interface]` and without it, alternating
//! run by run → each side's simulated requests per CPU second (and per wall second),
//! events per request, and the ratio with / without (the median of the per-pair ratios).

use crate::output::{peak_rss_bytes, process_cpu_ns};
use anyhow::{Context, Result};
use clap::Args;
use ssdlab_core::{Config, NoProgress, Simulation};
use std::time::Instant;

const OP_PAPER: &str = include_str!("../../../configs/op-paper.toml");
const GREEDY_FTL_C: &str = include_str!("../../../bench/greedy_ftl.c");
const NVME: &str = include_str!("../../../configs/nvme-pcie3-tlc.toml");

#[derive(Args)]
pub struct BenchArgs {
    /// Random 1 KiB overwrites (host write requests after the fill) for the functional
    /// figure and its C reference.
    #[arg(long, default_value_t = 20_000_000)]
    functional_writes: u64,
    /// Shrink the Table-1 device by this factor as `reproduce ssr --scale` does (chips per
    /// channel, then pages per block; 1 = the full 256 GiB device).
    #[arg(long, default_value_t = 1)]
    table1_scale: u32,
    /// Timed-mode requests.
    #[arg(long, default_value_t = 2_000_000)]
    timed_requests: u64,
    /// Lines of the trace-replay figure's trace (default: `--timed-requests`; 0 = no
    /// trace figure).
    #[arg(long)]
    trace_requests: Option<u64>,
    /// Only the functional figure.
    #[arg(long)]
    functional_only: bool,
    /// Runs of the functional and timed figures (the VM's wall clock is noisy: best and
    /// median are printed). Timed repeats start from copies of the preconditioned state.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Only the link A/B: the nvme preset with and without its host interface, `--repeat`
    /// pairs of `--timed-requests` requests (docs/speed.md).
    #[arg(long)]
    link: bool,
}

/// A measured run's results, refused when their audit found figures that cannot be: no
/// speed is reported from a run whose figures are wrong. (Its simulation runs strictly,
/// so it ends with that error first; this holds even for one that does not, e.g. a
/// measurement without the audit's cost.)
fn audited(figure: &str, r: ssdlab_core::Results) -> Result<ssdlab_core::Results> {
    ssdlab_experiments::run::audited(&format!("bench: the {figure} run"), &r)
        .map_err(anyhow::Error::msg)
        .context("no speed is reported from a run whose figures cannot be")?;
    Ok(r)
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
    println!(
        "binary      ssdlab {} ({} build)",
        env!("CARGO_PKG_VERSION"),
        crate::output::BUILD
    );
    if a.link {
        return link_ab(a);
    }
    functional(a)?;
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
    // Building the device is timed apart: its tables are zeroed memory, first touched (and
    // faulted in) by the fill, so the precondition figure carries that cost.
    let t = Instant::now();
    let mut sim = Simulation::new(cfg).context("table-1 config")?;
    let build_wall = t.elapsed().as_secs_f64();
    let t = Instant::now();
    sim.precondition(&mut NoProgress)?;
    let pre_wall = t.elapsed().as_secs_f64();
    let pre_rss = peak_rss_bytes();
    println!(
        "precondition Table-1 device ({} GiB logical, fill + 1x random 4 KiB): {:.1} s wall (building the device before it {:.3} s), peak RSS {:.0} MiB, WAF {:.3}",
        sim.derived.logical_bytes >> 30,
        pre_wall,
        build_wall,
        pre_rss as f64 / (1u64 << 20) as f64,
        sim_precondition_waf(&sim)
    );

    // 3. Timed mode on copies of the preconditioned device (each run sees the same state),
    // then on the device only filled: 30 % of the requests are overwrites, far fewer than
    // the free space, so no GC runs.
    timed("preconditioned", &sim, a.repeat)?;
    let mut filled_cfg = sim.config.clone();
    drop(sim);
    filled_cfg.precondition.random_overwrite_capacity_multiple = 0.0;
    let mut filled = Simulation::new(filled_cfg).context("table-1 config")?;
    filled.precondition(&mut NoProgress)?;
    timed("filled, no GC", &filled, a.repeat)?;
    match a.trace_requests.unwrap_or(a.timed_requests) {
        0 => Ok(()),
        lines => trace_replay(&filled, lines, a.repeat),
    }
}

/// The link A/B: the nvme preset with and without its `[device.host_interface]`, on copies
/// of one preconditioned state, alternating run by run (a noisy minute weighs on both
/// sides of a pair alike): rates per CPU second (the process's, this thread being the one
/// that works) and per wall second, events per request, and the per-pair ratios.
fn link_ab(a: &BenchArgs) -> Result<()> {
    let mut cfg = parse(NVME, "configs/nvme-pcie3-tlc.toml")?;
    anyhow::ensure!(
        cfg.device.host_interface.is_some(),
        "the nvme preset has no [device.host_interface]"
    );
    if let ssdlab_workload::WorkloadConfig::Synthetic(s) = &mut cfg.workload {
        s.requests = a.timed_requests;
    }
    let mut base = Simulation::new(cfg.clone()).context("nvme preset")?;
    let t = Instant::now();
    base.precondition(&mut NoProgress)?;
    println!(
        "link A/B    configs/nvme-pcie3-tlc.toml, {} requests of 4 KiB random 70/30 QD16 per run, preconditioned once ({:.1} s)",
        a.timed_requests,
        t.elapsed().as_secs_f64()
    );
    let mut plain = cfg.clone();
    plain.device.host_interface = None;
    // [with, without]: (per CPU second, per wall second, events per request)
    let mut rates: [Vec<(f64, f64, f64)>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..a.repeat {
        for (k, c) in [&cfg, &plain].into_iter().enumerate() {
            let mut run = Simulation::from_state(c.clone(), &base)?;
            run.workload_threads = 0;
            let (t, cpu) = (Instant::now(), process_cpu_ns());
            let r = audited("link A/B", run.run_workload(&mut NoProgress)?)?;
            let wall = t.elapsed().as_secs_f64();
            let cpu_s = match (cpu, process_cpu_ns()) {
                (Some(a), Some(b)) => (b - a).max(1) as f64 / 1e9,
                _ => wall,
            };
            let m = r.host.requests as f64 / 1e6;
            let events = r.engine.as_ref().map_or(0, |e| e.events) as f64;
            rates[k].push((m / cpu_s, m / wall, events / r.host.requests.max(1) as f64));
        }
    }
    let side = |name: &str, v: &[(f64, f64, f64)]| {
        println!(
            "link A/B    {name}: {} M requests per CPU second ({} per wall second), {:.2} events per request",
            best_median(v.iter().map(|x| x.0).collect()),
            best_median(v.iter().map(|x| x.1).collect()),
            v[0].2
        );
    };
    side("with the link   ", &rates[0]);
    side("without the link", &rates[1]);
    let mut ratios: Vec<f64> = rates[0]
        .iter()
        .zip(&rates[1])
        .map(|(w, wo)| w.0 / wo.0)
        .collect();
    ratios.sort_by(|a, b| a.total_cmp(b));
    println!(
        "link A/B    with / without, per CPU second: median {:.3} (pairs {:.3}–{:.3})",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1]
    );
    Ok(())
}

/// Timed runs of the workload on copies of `base`'s state.
fn timed(state: &str, base: &Simulation, repeat: u32) -> Result<()> {
    let mut rates = Vec::new();
    let mut cpu_rates = Vec::new();
    let mut last = None;
    for _ in 0..repeat {
        let mut run = Simulation::from_state(base.config.clone(), base)?;
        let (t, cpu) = (Instant::now(), process_cpu_ns());
        let r = audited("timed", run.run_workload(&mut NoProgress)?)?;
        let requests_m = r.host.requests as f64 / 1e6;
        rates.push(requests_m / t.elapsed().as_secs_f64());
        if let (Some(a), Some(b)) = (cpu, process_cpu_ns()) {
            cpu_rates.push(requests_m / ((b - a).max(1) as f64 / 1e9));
        }
        last = Some(r);
    }
    let r = last.expect("at least one run");
    let per_cpu = if cpu_rates.is_empty() {
        String::new()
    } else {
        format!(" (per CPU second: {})", best_median(cpu_rates))
    };
    println!(
        "timed       4 KiB random 70/30 QD16, {state}: {} requests per run, {} M requests/s{per_cpu} over {repeat} runs ({} events, GC victims {}); read p99 {} ns, write p99 {} ns; peak RSS {:.0} MiB (two device copies)",
        r.host.requests,
        best_median(rates),
        r.engine.as_ref().map(|e| e.events).unwrap_or(0),
        r.gc.invocations,
        r.latency_ns.as_ref().map_or(0, |l| l.read.p99),
        r.latency_ns.as_ref().map_or(0, |l| l.write.p99),
        peak_rss_bytes() as f64 / (1u64 << 20) as f64
    );
    Ok(())
}

/// Figure 4 (the bench's last line): the timed work as a trace file, replayed on copies of `filled` with the
/// trace drawn on a thread of its own and inline.
fn trace_replay(filled: &Simulation, requests: u64, repeat: u32) -> Result<()> {
    let dir = TempDir::new("trace")?;
    let path = dir.0.join("bench.csv");
    write_msr_trace(&path, requests, filled.derived.logical_bytes)?;
    let mut cfg = filled.config.clone();
    cfg.workload = toml::from_str(&format!(
        "kind = \"trace\"\nformat = \"msr\"\npath = {:?}\nreplay = \"closed\"\nqueue_depth = 16\n",
        path.to_string_lossy()
    ))?;
    let threads = filled.workload_threads.min(1);
    let mut rates = [Vec::new(), Vec::new()];
    let mut results = [None, None];
    for _ in 0..repeat {
        for (k, t) in [threads, 0].into_iter().enumerate() {
            let mut run = Simulation::from_state(cfg.clone(), filled)?;
            run.workload_threads = t;
            let start = Instant::now();
            let r = audited("trace replay", run.run_workload(&mut NoProgress)?)?;
            rates[k].push(r.host.requests as f64 / 1e6 / start.elapsed().as_secs_f64());
            results[k] = Some(serde_json::to_string(&r)?);
        }
    }
    anyhow::ensure!(
        results[0] == results[1],
        "trace replay: results differ with and without the workload thread"
    );
    let [on, off] = rates;
    println!(
        "trace       the timed work as an MSR CSV trace ({requests} lines), closed QD16, filled: {}: {} M requests/s; inline: {} M requests/s over {repeat} runs each (results identical)",
        if threads > 0 { "trace on its own thread" } else { "no thread to spare (one CPU), inline" },
        best_median(on),
        best_median(off)
    );
    Ok(())
}

/// `requests` lines of 4 KiB random 70/30 reads and writes over `logical_bytes`, as an MSR
/// Cambridge CSV trace (seeded: the same file every time).
fn write_msr_trace(path: &std::path::Path, requests: u64, logical_bytes: u64) -> Result<()> {
    use rand::Rng;
    use std::io::Write;
    let mut rng = ssdlab_workload::rng::stream(1, 0x7ace);
    let slots = logical_bytes / 4096;
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let mut ts = 128_166_372_000_000_000u64;
    for _ in 0..requests {
        ts += 100;
        let op = if rng.gen::<f64>() < 0.7 {
            "Read"
        } else {
            "Write"
        };
        let offset = rng.gen_range(0..slots) * 4096;
        writeln!(w, "{ts},bench,0,{op},{offset},4096,100")?;
    }
    w.flush()?;
    Ok(())
}

/// A directory under the system's temporary directory, removed when dropped.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(what: &str) -> Result<TempDir> {
        let dir = std::env::temp_dir().join(format!("ssdlab-bench-{what}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sim_precondition_waf(sim: &Simulation) -> f64 {
    sim.precondition_summary().map(|p| p.waf).unwrap_or(0.0)
}

/// Figure 1: functional mode through the run path, against the C reference on the same
/// work. The two alternate run by run, and the ratio is taken per pair, so that a noisy
/// minute on the machine weighs on both sides of a ratio alike.
fn functional(a: &BenchArgs) -> Result<()> {
    let mut cfg = parse(OP_PAPER, "configs/op-paper.toml")?;
    if let ssdlab_workload::WorkloadConfig::Synthetic(s) = &mut cfg.workload {
        s.requests = a.functional_writes;
    }
    let repeat = a.repeat;
    let c = CReference::build();
    let (mut rates, mut c_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut c_error = None;
    let mut last = None;
    for _ in 0..repeat {
        let mut sim = Simulation::new(cfg.clone())?;
        sim.precondition(&mut NoProgress)?;
        let t = Instant::now();
        let r = audited("functional", sim.run_workload(&mut NoProgress)?)?;
        let ours = r.host.requests as f64 / t.elapsed().as_secs_f64() / 1e6;
        rates.push(ours);
        last = Some(r);
        match c
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{e:#}"))
            .and_then(|c| c.run(a.functional_writes))
        {
            Ok(theirs) => {
                c_rates.push(theirs);
                ratios.push(ours / theirs);
            }
            Err(e) => c_error = Some(e),
        }
    }
    let r = last.expect("at least one run");
    println!("functional  spec-02 device (880 blocks x 128 pages x 1 KiB, OP 10%, greedy), `ssdlab run` path: fill + {} random 1 KiB writes per run, {} M writes/s over {repeat} runs; WAF {:.3}; GC victims {}, copied units {}, erases {}",
        r.host.requests,
        best_median(rates),
        r.waf,
        r.gc.invocations,
        r.gc.copied_units,
        r.nand.erases.total);
    match c_error {
        None => println!(
            "            C greedy FTL (bench/greedy_ftl.c, cc -O2, same device and work, each run after one of ssdlab's): median {:.2} M writes/s; ssdlab / C = {:.2} (median of the {} pairs; range {:.2}-{:.2})",
            median(&c_rates),
            median(&ratios),
            ratios.len(),
            ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratios.iter().copied().fold(0.0, f64::max),
        ),
        Some(e) => println!("            C reference not measured: {e:#}"),
    }
    Ok(())
}

fn median(rates: &[f64]) -> f64 {
    let mut r = rates.to_vec();
    r.sort_by(|a, b| b.total_cmp(a));
    r[r.len() / 2]
}

/// `bench/greedy_ftl.c`, compiled with `cc -O2` (or `$CC`) in a temporary directory that
/// goes when this does.
struct CReference {
    dir: TempDir,
    bin: std::path::PathBuf,
}

impl CReference {
    fn build() -> Result<CReference> {
        let dir = TempDir::new("c")?;
        let c = CReference {
            bin: dir.0.join("greedy_ftl"),
            dir,
        };
        let src = c.dir.0.join("greedy_ftl.c");
        std::fs::write(&src, GREEDY_FTL_C)?;
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let built = std::process::Command::new(&cc)
            .args(["-O2", "-o"])
            .arg(&c.bin)
            .arg(&src)
            .output()
            .with_context(|| format!("no C compiler `{cc}` (set CC)"))?;
        anyhow::ensure!(
            built.status.success(),
            "`{cc} -O2` failed: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        Ok(c)
    }

    /// One run on the spec-02 work (800 user blocks × 128 pages, OP 10 %, `writes`
    /// overwrites): its host writes per second, in millions.
    fn run(&self, writes: u64) -> Result<f64> {
        let out = std::process::Command::new(&self.bin)
            .args(["800", "128", "10", &writes.to_string()])
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        text.split_whitespace()
            .find_map(|w| w.strip_prefix("Mwrites_per_s="))
            .and_then(|v| v.parse::<f64>().ok())
            .with_context(|| format!("unexpected output of greedy_ftl: {text}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bench reports no speed from a run whose audit found figures that cannot be, and
    /// says why; a run with warnings only is measured.
    #[test]
    fn no_speed_from_a_run_whose_audit_failed() {
        let mut cfg = parse(OP_PAPER, "configs/op-paper.toml").unwrap();
        if let ssdlab_workload::WorkloadConfig::Synthetic(s) = &mut cfg.workload {
            s.requests = 1000;
        }
        let mut sim = Simulation::new(cfg).unwrap();
        assert!(
            sim.audit_strict,
            "bench's simulations end with an internal error"
        );
        let r = sim.run_workload(&mut NoProgress).unwrap();
        let r = audited("functional", r).unwrap();
        let mut bad = r.clone();
        bad.nand.programs.gc += 1; // programs by cause no longer add up
        bad.audit = ssdlab_core::sim::audit::audit(&bad, &r.audit.facts);
        let e = format!("{:#}", audited("functional", bad).unwrap_err());
        assert!(
            e.starts_with("no speed is reported from a run whose figures cannot be: bench: the functional run: internal error (please report it")
                && e.contains("nand_by_cause"),
            "{e}"
        );
    }
}
