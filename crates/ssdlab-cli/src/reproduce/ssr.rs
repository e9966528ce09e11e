//! `ssdlab reproduce ssr`: the erase-suspend experiment of spec 01 (see
//! `docs/erase-suspend.md`). Prints a markdown report and writes `ssr.md`, `ssr.csv`,
//! `ssr.json`, `ssr.svg` (log-scale CCDF of read and write latency per policy),
//! `ssr-intensity.csv` and `ssr-intensity.svg` (the read-intensity axis) to `--out`.

use anyhow::{bail, Context, Result};
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
    /// Points of the read-intensity axis: reads per die per suspend + resume cycle (ρ),
    /// comma-separated, ascending (default 0.125,0.25,0.5,0.75,1,1.5,2).
    #[arg(long, value_delimiter = ',', conflicts_with = "no_intensity")]
    intensity: Option<Vec<f64>>,
    /// Simulated milliseconds per run of the read-intensity axis (default 10000).
    #[arg(long)]
    intensity_duration_ms: Option<u64>,
    /// Skip the read-intensity axis (only the two QD 16 workloads).
    #[arg(long)]
    no_intensity: bool,
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
    if a.no_intensity {
        p.intensity = None;
    }
    if let Some(ip) = p.intensity.as_mut() {
        if let Some(v) = &a.intensity {
            if v.is_empty() || v.iter().any(|x| !(*x > 0.0 && x.is_finite())) {
                bail!("--intensity: every point must be a number > 0 (reads per die per suspend + resume cycle)");
            }
            if v.windows(2).any(|w| w[1] <= w[0]) {
                bail!("--intensity: points must be ascending without repeats");
            }
            ip.reads_per_cycle = v.clone();
        }
        if let Some(ms) = a.intensity_duration_ms {
            if ms == 0 {
                bail!("--intensity-duration-ms: must be > 0");
            }
            ip.duration_ns = ms * 1_000_000;
        }
        if exp::suspend_cycle_ns(&p.base) == 0 {
            bail!("the read-intensity axis counts reads per suspend + resume cycle, which is 0 here (device.timing.*.erase_suspend_penalty_ns + resume_penalty_ns); pass --no-intensity");
        }
    }
    let out = a.common.out("ssr");
    let staged = crate::output::StagedDir::new(
        &out,
        &[
            "ssr.json",
            "ssr.md",
            "ssr.csv",
            "ssr.svg",
            "ssr-intensity.csv",
            "ssr-intensity.svg",
        ],
    )
    .with_context(|| format!("--out {}", out.display()))?;
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
        super::say_audit(&r.audit_warnings);
    };
    let progress_i = move |r: &exp::IntensityRun| {
        if !quiet {
            eprintln!(
                "  rho {:<5} {:<11}: erase postponement max {:>8.1} ms, write p99.99 {:>9.1} ms, {:.2} MB/s written, {:.1} s wall",
                r.reads_per_cycle,
                r.policy,
                r.suspend.erase_postponement_max_ns as f64 / 1e6,
                r.write.p99_99 as f64 / 1e6,
                r.write_mb_per_s,
                r.wall_s
            );
        }
        super::say_audit(&r.audit_warnings);
    };
    let report = pool.install(|| exp::run(&p, &progress, &progress_i))?;
    let total_wall = wall.elapsed().as_secs_f64();
    let md = markdown(&report, &p, total_wall);
    if !report.intensity.is_empty() {
        let dir = staged.path();
        super::write(&dir.join("ssr-intensity.csv"), &report.intensity_csv())?;
        plot_intensity(&report, &dir.join("ssr-intensity.svg"))
            .context("drawing ssr-intensity.svg")?;
    }
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
    o += &r.intensity_markdown();
    o += &super::shape_section(
        "the paper's shape, spec 01",
        Some("panel"),
        &r.shape(),
        r.runs.len() + r.intensity.len(),
        r.runs_wall_s + r.intensity_wall_s,
    );
    let _ = writeln!(
        o,
        "\nQD 16 runs: {:.1} s wall; intensity axis: {:.1} s wall; whole command {:.1} s.",
        r.runs_wall_s, r.intensity_wall_s, total_wall_s
    );
    o
}

/// The read-intensity axis: erase postponement, write p99.99 (both log scale) and host
/// write MB/s against ρ, one line per policy.
fn plot_intensity(r: &SsrReport, path: &Path) -> Result<()> {
    let root = SVGBackend::new(path, (1500, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 3));
    let pts = r.intensity_points();
    let (x0, x1) = (
        pts.first().copied().unwrap_or(0.1),
        pts.last().copied().unwrap_or(1.0),
    );
    type Get = fn(&exp::IntensityRun) -> f64;
    let specs: [(&str, &str, Get); 3] = [
        ("erase postponement (max)", "ms", |x| {
            x.suspend.erase_postponement_max_ns as f64 / 1e6
        }),
        ("write p99.99", "ms", |x| x.write.p99_99 as f64 / 1e6),
        ("host write throughput", "MB/s", |x| x.write_mb_per_s),
    ];
    let policies: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for x in &r.intensity {
            if !v.contains(&x.policy) {
                v.push(x.policy);
            }
        }
        v
    };
    for (area, (title, unit, get)) in panels.iter().zip(specs) {
        let series: Vec<(&str, Vec<(f64, f64)>)> = policies
            .iter()
            .map(|pol| {
                let v = r
                    .intensity
                    .iter()
                    .filter(|x| x.policy == *pol)
                    .map(|x| (x.reads_per_cycle, get(x)))
                    .filter(|p| p.1 > 0.0)
                    .collect();
                (*pol, v)
            })
            .collect();
        let ys = series.iter().flat_map(|s| s.1.iter().map(|p| p.1));
        let (lo, hi) = ys.fold((f64::INFINITY, 0f64), |(a, b), y| (a.min(y), b.max(y)));
        let (lo, hi) = if lo.is_finite() && hi > 0.0 {
            (lo, hi)
        } else {
            (0.1, 1.0)
        };
        let caption = format!("{title} (log) vs reads per die per suspend+resume cycle");
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (x0 * 0.9..x1 * 1.1).log_scale(),
                (lo * 0.8..hi * 1.25).log_scale(),
            )?;
        chart
            .configure_mesh()
            .x_desc("rho (1 = one read per suspend+resume cycle)")
            .y_desc(unit)
            .draw()?;
        for (i, (pol, v)) in series.iter().enumerate() {
            let c = super::COLORS[i % super::COLORS.len()];
            chart
                .draw_series(LineSeries::new(v.iter().copied(), c.stroke_width(2)))?
                .label(*pol)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], c));
            chart.draw_series(v.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
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
