//! `ssdlab reproduce ssr`: the erase-suspend experiment of spec 01 (see
//! `docs/erase-suspend.md`). Prints a markdown report and writes `ssr.md`, `ssr.csv`,
//! `ssr.json` and `ssr.svg` (log-scale CCDF of read and write latency per policy) to `--out`.

use anyhow::{bail, Result};
use clap::Args;
use plotters::prelude::*;
use ssdlab_core::config::SuspendConfig;
use ssdlab_experiments::ssr::{self as exp, SsrParams, SsrReport, SsrWorkload};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

#[derive(Args)]
pub struct SsrArgs {
    #[command(flatten)]
    common: super::ReproduceArgs,
    /// Shrink the Table-1 device by this factor (chips per channel first, then pages per
    /// block) and divide the requests per run by it (1 = the paper's 256 GiB device and
    /// ~10^7 reads per run).
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// Requests per run (overrides the default derived from the p99.9999 sample target).
    #[arg(long)]
    requests: Option<u64>,
}

pub fn run(a: &SsrArgs) -> Result<()> {
    let wall = Instant::now();
    let mut p = SsrParams::paper(a.scale)?;
    p.base = ssdlab_experiments::run::with_overrides(
        &p.base,
        &a.common.sets,
        "configs/ssr-table1.toml",
    )?;
    if let Some(s) = a.common.seed {
        p.base.seed = s;
    }
    if let Some(n) = a.requests {
        if n == 0 {
            bail!("--requests: must be > 0");
        }
        p.requests = vec![n; p.workloads.len()];
    }
    let staged = super::stage(&a.common.out("ssr"), "ssr")?;
    let pool = a.common.pool(2)?;
    let quiet = a.common.quiet;
    if !quiet {
        eprintln!(
            "reproduce ssr: preconditioning the Table-1 device ({} chips/channel, {} pages/block), then {} policies x {} workloads ({} requests per run) on {} threads ...",
            p.base.device.geometry.chips_per_channel,
            p.base.device.geometry.pages_per_block,
            p.policies.len(),
            p.workloads.len(),
            p.requests.iter().map(|n| n.to_string()).collect::<Vec<_>>().join("/"),
            pool.current_num_threads()
        );
    }
    let progress = move |r: &exp::SsrRun| {
        if !quiet {
            eprintln!(
                "  {:<11} {:<4}: read p99.99 {:>9.1} us, write p99.99 {:>9.1} us, {} suspensions, {:.1} s wall",
                r.policy,
                r.workload,
                r.read.p99_99 as f64 / 1e3,
                r.write.p99_99 as f64 / 1e3,
                r.suspend.erase_suspensions,
                r.wall_s
            );
        }
    };
    let report = pool.install(|| exp::run(&p, &progress))?;
    let total_wall = wall.elapsed().as_secs_f64();
    let md = markdown(&report, &p, total_wall);
    super::write_outputs(staged, "ssr", &md, &report.csv(), &report, |svg| {
        plot(&report, svg)
    })
}

fn markdown(r: &SsrReport, p: &SsrParams, total_wall_s: f64) -> String {
    let c = &p.base;
    let g = &c.device.geometry;
    let t = c.device.timing.get(c.device.cell_mode);
    let s = &c.scheduler;
    // The SSR policies' own parameters (`scheduler.erase_suspend` tables).
    let (mut ssr_n, mut ssr_table) = (0, Vec::new());
    for pol in &p.policies {
        match p.policy_config(pol) {
            SuspendConfig::SsrStatic(q) => ssr_n = q.points_per_loop,
            SuspendConfig::SsrDynamic(q) => ssr_table = q.safe_points,
            _ => {}
        }
    }
    let mut o = String::new();
    let _ = writeln!(o, "# Erase suspend/resume policies (spec 01, SSR paper)\n");
    let _ = writeln!(
        o,
        "* Device: {} channels x {} chips x {} die, {} planes/die, {} blocks/plane, {} pages/block ({}), {} B pages, OP {:.0} %, page mapping, greedy preemptible GC (urgent below {} free blocks per plane), seed {}.",
        g.channels, g.chips_per_channel, g.dies_per_chip, g.planes_per_die, g.blocks_per_plane, g.pages_per_block, r.scale_note, g.page_size_bytes,
        c.device.over_provisioning_ratio * 100.0, c.ftl.gc_hard_free_blocks, c.seed
    );
    let _ = writeln!(
        o,
        "* Timing: read {} us, program {} us, erase {} loops x {} ms, erase-suspend penalty {} us, resume penalty {} us.",
        t.read_ns as f64 / 1e3,
        t.program_ns as f64 / 1e3,
        t.erase_loops.first().map_or(0, |e| e.1),
        t.erase_loop_ns as f64 / 1e6,
        t.erase_suspend_penalty_ns as f64 / 1e3,
        t.resume_penalty_ns as f64 / 1e3
    );
    let _ = writeln!(
        o,
        "* Policies: none, ies, des, ssr-static (N = {}), ssr-dynamic (N by P/E: {:?}); safe limit N_safe(PE) {:?}; extra RBER = {:e} x excess^{}.",
        ssr_n, ssr_table, s.safe_suspensions_per_loop, s.extra_rber_per_excess_suspension, s.extra_rber_exponent
    );
    let _ = writeln!(
        o,
        "* Workloads: fio = 4 KiB random 70 % reads QD 16; tpcc = TPC-C-like OLTP model (8 KiB pages, 65 % reads, sequential log writes, group-commit flushes), QD 16. Requests per run: {}.",
        p.workloads.iter().zip(&p.requests).map(|(w, n)| format!("{} {}", w.name(), n)).collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(
        o,
        "* Program suspend: {}; write buffer {} MiB, power-loss protected: {} (a flush {}).",
        if s.program_suspend {
            "on (reads wait at most one ISPP loop for a program)"
        } else {
            "off"
        },
        c.ftl.write_buffer_bytes >> 20,
        if c.ftl.power_loss_protection {
            "yes"
        } else {
            "no"
        },
        if c.ftl.power_loss_protection {
            "completes at once"
        } else {
            "waits until the data before it is programmed"
        }
    );
    let w = &r.start_wear;
    let n_at = |pe: u32| ssr_table.iter().rfind(|e| e.0 <= pe).map_or(0, |e| e.1);
    let _ = writeln!(o, "* Preconditioned once (functional: sequential fill + 1 capacity of random 4 KiB overwrites, the whole device including OP) in {:.1} s; every run starts from that state: P/E cycles per block min {}, mean {:.2}, max {}, so SSR(d) starts with N = {}..{} safe points per loop.\n", r.precondition_wall_s, w.erase_count_min, w.erase_count_mean, w.erase_count_max, n_at(w.erase_count_max), n_at(w.erase_count_min));
    o += &r.markdown();
    let _ = writeln!(
        o,
        "\nRuns: {:.1} s wall; whole command {:.1} s.",
        r.runs_wall_s, total_wall_s
    );
    o
}

/// 2 x 2 panels (workload x read/write): CCDF of latency, both axes log scale.
fn plot(r: &SsrReport, path: &Path) -> Result<()> {
    let root = SVGBackend::new(path, (1200, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((2, 2));
    for (i, area) in panels.iter().enumerate() {
        let w = SsrWorkload::ALL[i / 2];
        let op = if i % 2 == 0 { "read" } else { "write" };
        let runs: Vec<_> = r.runs.iter().filter(|x| x.workload == w.name()).collect();
        let note = |why: &str| -> Result<()> {
            let (w_px, h_px) = area.dim_in_pixel();
            area.draw(&Text::new(
                format!("{} {op}: {why}", w.name()),
                (w_px as i32 / 4, h_px as i32 / 2),
                ("sans-serif", 18),
            ))?;
            Ok(())
        };
        if runs.is_empty() {
            note("not run")?;
            continue;
        }
        let pts = |x: &exp::SsrRun| -> Vec<(f64, f64)> {
            let c = if op == "read" {
                &x.read_ccdf
            } else {
                &x.write_ccdf
            };
            c.iter()
                .filter(|(_, p)| *p > 0.0)
                .map(|&(v, p)| (v.max(1) as f64 / 1e3, p))
                .collect()
        };
        let series: Vec<(&str, Vec<(f64, f64)>)> =
            runs.iter().map(|x| (x.policy, pts(x))).collect();
        let caption = format!("{} {op} latency CCDF", w.name());
        if !crate::plots::ccdf_panel(area, &caption, &series)? {
            note("every latency equal (no tail to plot)")?;
        }
    }
    root.present()?;
    Ok(())
}
