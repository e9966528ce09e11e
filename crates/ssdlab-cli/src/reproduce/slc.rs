//! `ssdlab reproduce slc`: the SLC buffer / journal region experiment of spec 05
//! (docs/slc-journal.md). Writes `slc.md`, `slc.csv`, `slc.json` and `slc.svg` to `--out`.

use super::COLORS;
use anyhow::Result;
use clap::Args;
use plotters::prelude::*;
use ssdlab_experiments::slc::{self as exp, SlcParams, SlcReport};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct SlcArgs {
    /// Output directory for slc.md, slc.csv, slc.json and slc.svg.
    #[arg(long, default_value = "out/reproduce-slc")]
    out: PathBuf,
    /// Shrink the device by this divisor (its 16 chips / SCALE, a power of two ≤ 16; the
    /// SLC, journal and data written shrink with it); 1 = the 64 GiB device.
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// fsync intervals of the fio runs.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16,32,64,128")]
    fsync_every: Vec<u32>,
    /// Requests per Filebench run.
    #[arg(long, default_value_t = 400_000)]
    filebench_requests: u64,
    /// Runs in parallel.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Override the preset's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// No per-run progress lines on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Override a key of the experiment's base configuration (as `run --set`); repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

pub fn run(a: &SlcArgs) -> Result<()> {
    let p = SlcParams {
        scale: a.scale,
        fsync_every: a.fsync_every.clone(),
        filebench_requests: a.filebench_requests,
        seed: a.seed,
        sets: a.sets.clone(),
    };
    let staged = super::stage(&a.out, "slc")?;
    let pool = super::pool(a.jobs.max(1))?;
    let quiet = a.quiet;
    let runs = 2 * 2 * (p.fsync_every.len() + exp::FILEBENCH.len());
    if !quiet {
        // Measured on this project's 2-core VM: 44 runs in 6 s at scale 1 (0.28 s per run).
        let est = runs as f64 * 0.28 / a.scale.max(1) as f64 / pool.current_num_threads() as f64;
        eprintln!(
            "reproduce slc: {runs} runs (2 policies x 2 journal modes x ({} fsync intervals + 4 Filebench personalities)) on {} threads (about {:.0} s) ...",
            p.fsync_every.len(),
            pool.current_num_threads(),
            est
        );
    }
    let progress = move |r: &exp::SlcRun| {
        if !quiet {
            eprintln!(
                "  {:<11} {:<11} {:<7} {:>4} {:>8.2} s simulated, {:.1} s wall",
                r.policy,
                r.app,
                r.mode,
                r.fsync_every.map_or(String::new(), |f| f.to_string()),
                r.sim_s,
                r.wall_s
            );
        }
    };
    let report = pool.install(|| exp::run(&p, &progress))?;
    let md = markdown(&report);
    super::write_outputs(staged, "slc", &md, &report.csv(), &report, |svg| {
        plot(&report, svg)
    })
}

fn markdown(r: &SlcReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# SLC write buffer with a journal region (spec 05)\n");
    let _ = writeln!(
        o,
        "* Device (configs/slc-journal-64g.toml){}: TLC 64 GiB logical, 16 KiB pages; SLC per plane: `slc-buffer` 24 blocks of buffer (768 MiB at scale 1), `slc-journal` 13 blocks of buffer + 11 of journal region (2 × the 128 MiB journal + the region's reserve); SLC 20/200/2000 µs, TLC 5× slower; migration only after 100 ms of host idle time; timed mode, no power-loss protection (a flush waits for NAND).",
        if r.scale > 1 { format!(" scaled down by {}", r.scale) } else { String::new() }
    );
    let _ = writeln!(
        o,
        "* Workload: the ext4 model (journal of 128 MiB / scale at mid-volume, commits = descriptor + blocks, flush, commit block, flush); fio = 8 KiB random writes with an fsync every N, 2 × the SLC of application data, queue depth 1; Filebench personalities at block level. Gain = slc-buffer's simulated time / slc-journal's − 1 (same request stream). Journal write latency = a journal write's time until durable."
    );
    o += &r.markdown();
    let checks: Vec<_> = r
        .shape()
        .into_iter()
        .map(|(name, ok, d)| (String::new(), name, ok, d))
        .collect();
    o += &super::shape_section("issue 12, item 6", None, &checks, r.runs.len(), r.wall_s);
    o
}

/// Top: fio throughput vs fsync interval, both modes and policies. Bottom: Filebench
/// normalized throughput.
fn plot(r: &SlcReport, path: &Path) -> Result<()> {
    let root = SVGBackend::new(path, (1000, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(480);
    let fio: Vec<&exp::SlcRun> = r.runs.iter().filter(|x| x.app == "fio").collect();
    let x_hi = fio
        .iter()
        .filter_map(|x| x.fsync_every)
        .max()
        .unwrap_or(128) as f64
        * 1.5;
    let y_hi = fio.iter().map(|x| x.app_mb_per_s).fold(1.0, f64::max) * 1.15;
    let mut c = ChartBuilder::on(&top)
        .caption(
            "fio 8 KiB random writes: throughput vs fsync interval",
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((1.5f64..x_hi).log_scale(), 0f64..y_hi)?;
    c.configure_mesh()
        .x_desc("writes per fsync (log)")
        .y_desc("application MB/s")
        .draw()?;
    let mut k = 0;
    for mode in ["data", "ordered"] {
        for pol in exp::POLICIES {
            let mut pts: Vec<(f64, f64)> = fio
                .iter()
                .filter(|x| x.mode == mode && x.policy == pol)
                .filter_map(|x| Some((x.fsync_every? as f64, x.app_mb_per_s)))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let color = COLORS[k % COLORS.len()];
            k += 1;
            c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                .label(format!("{pol}, {mode} mode"))
                .legend(move |(a, b)| {
                    PathElement::new(vec![(a, b), (a + 20, b)], color.stroke_width(2))
                });
            c.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
        }
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;

    let mut bars = Vec::new();
    for mode in ["data", "ordered"] {
        for app in exp::FILEBENCH {
            let a = format!("{app:?}").to_lowercase();
            if let Some(g) = r.gain_pct(&a, mode, None) {
                bars.push((format!("{a}-{mode}"), 1.0 + g / 100.0));
            }
        }
    }
    let y_hi = bars.iter().map(|b| b.1).fold(1.2, f64::max) * 1.15;
    let mut c = ChartBuilder::on(&bottom)
        .caption(
            "Filebench: slc-journal throughput / slc-buffer",
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..bars.len().max(1) as f64, 0f64..y_hi)?;
    c.configure_mesh()
        .x_labels(0)
        .y_desc("normalized throughput")
        .disable_x_mesh()
        .draw()?;
    for (i, (name, v)) in bars.iter().enumerate() {
        let x = i as f64;
        c.draw_series([Rectangle::new(
            [(x + 0.15, 0.0), (x + 0.85, *v)],
            COLORS[2].filled(),
        )])?;
        c.draw_series([Text::new(
            name.clone(),
            (x + 0.1, v + 0.03 * y_hi),
            ("sans-serif", 12),
        )])?;
    }
    c.draw_series([PathElement::new(
        vec![(0.0, 1.0), (bars.len() as f64, 1.0)],
        BLACK,
    )])?;
    root.present()?;
    Ok(())
}
