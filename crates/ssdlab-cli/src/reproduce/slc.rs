//! `ssdlab reproduce slc`: the SLC buffer / journal region experiment of spec 05
//! (docs/slc-journal.md). Writes `slc.md`, `slc.csv`, `slc.json` and `slc.svg` to `--out`.

use super::COLORS;
use anyhow::Result;
use clap::Args;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::RGBColor;
use ssdlab_experiments::slc::{self as exp, SlcParams, SlcReport};
use std::fmt::Write as _;
use std::path::Path;

#[derive(Args)]
pub struct SlcArgs {
    #[command(flatten)]
    common: super::ReproduceArgs,
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
    /// `slc-journal`'s journal region in SLC blocks per plane (4 ..= 20; the buffer keeps
    /// the rest of the 24). Below 11 the padded journal ring no longer fits and the
    /// region's GC copies (docs/slc-journal.md).
    #[arg(long, default_value_t = exp::JOURNAL_BLOCKS_PER_PLANE)]
    journal_blocks_per_plane: u32,
    /// The journal region's pages take planes from a stripe cursor of their own (region key
    /// `own_stripe`) instead of the one all host pages share: no GC copies where a commit's
    /// pages alias with the 32-plane stripe (docs/slc-journal.md).
    #[arg(long)]
    journal_own_stripe: bool,
}

pub fn run(a: &SlcArgs) -> Result<()> {
    let p = SlcParams {
        scale: a.scale,
        fsync_every: a.fsync_every.clone(),
        filebench_requests: a.filebench_requests,
        journal_blocks_per_plane: a.journal_blocks_per_plane,
        journal_own_stripe: a.journal_own_stripe,
        seed: a.common.seed,
        sets: a.common.sets.clone(),
    };
    p.check()?; // a bad scale or --set fails before the banner and any work
    let staged = super::stage(&a.common.out("slc"), "slc")?;
    let pool = a.common.pool(2)?;
    let quiet = a.common.quiet;
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
        super::say_audit(&r.audit_warnings);
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
    let d = &r.device;
    let _ = writeln!(
        o,
        "* Device (configs/slc-journal-64g.toml{}): {} {} logical, {} pages, {} planes; SLC per plane: `slc-buffer` {} blocks of buffer ({} in all), `slc-journal` {} blocks of buffer ({}) + {} of journal region ({} for the {} journal: its padded ring, up to 2 ×, + the region's reserve); SLC 20/200/2000 µs, TLC 5× slower; migration only after 100 ms of host idle time; timed mode, no power-loss protection (a flush waits for NAND).",
        if r.scale > 1 { format!(", scaled down by {}", r.scale) } else { String::new() },
        d.cell_mode.to_uppercase(),
        exp::size_text(d.logical_bytes),
        exp::size_text(d.page_size_bytes as u64),
        d.planes,
        d.buffer_blocks_per_plane,
        exp::size_text(d.buffer_bytes),
        d.split_buffer_blocks_per_plane,
        exp::size_text(d.split_buffer_bytes),
        d.journal_region_blocks_per_plane,
        exp::size_text(d.journal_region_bytes),
        exp::size_text(d.journal_bytes),
    );
    let _ = writeln!(
        o,
        "* Workload: the ext4 model (journal of {} at mid-volume, commits = descriptor + blocks, flush, commit block, flush); fio = 8 KiB random writes with an fsync every N, {} of application data (2 × the SLC), queue depth 1; Filebench personalities at block level. Gain = slc-buffer's simulated time / slc-journal's − 1 (same request stream). Journal write latency = a journal write's time until durable.",
        exp::size_text(d.journal_bytes),
        exp::size_text(d.fio_app_write_bytes),
    );
    o += &r.markdown();
    let checks: Vec<_> = r
        .shape()
        .into_iter()
        .map(|(name, ok, d)| (String::new(), name, ok, d))
        .collect();
    o += &super::shape_section(
        "the paper's shape, spec 05",
        None,
        &checks,
        r.runs.len(),
        r.wall_s,
    );
    o
}

/// Top: fio throughput vs fsync interval (log2 axis, a tick at every interval run), both
/// modes and policies. Bottom: Filebench throughput of slc-journal over slc-buffer, a bar
/// per journal mode under each personality's name, against the 1.0 of slc-buffer. Legends
/// beside the charts.
fn plot(r: &SlcReport, path: &Path) -> Result<()> {
    use crate::plots::{side_legend, Mark};
    let root = SVGBackend::new(path, (1100, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(480);
    let (top, top_legend) = top.split_horizontally(850);
    let (bottom, bottom_legend) = bottom.split_horizontally(850);
    let fio: Vec<&exp::SlcRun> = r.runs.iter().filter(|x| x.app == "fio").collect();
    let mut intervals: Vec<u32> = fio.iter().filter_map(|x| x.fsync_every).collect();
    intervals.sort_unstable();
    intervals.dedup();
    let log2 = |f: u32| (f.max(1) as f64).log2();
    let x_lo = intervals.first().map_or(0.0, |&f| log2(f)) - 0.5;
    let x_hi = intervals.last().map_or(1.0, |&f| log2(f)) + 0.5;
    let y_hi = fio.iter().map(|x| x.app_mb_per_s).fold(1.0, f64::max) * 1.15;
    let mut c = ChartBuilder::on(&top)
        .caption(
            "fio 8 KiB random writes: throughput vs fsync interval",
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x_lo..x_hi, 0f64..y_hi)?;
    // Ticks at whole log2 values (the default intervals 2 … 128), labelled as intervals.
    c.configure_mesh()
        .x_desc("writes per fsync (log2 scale)")
        .y_desc("application MB/s")
        .x_labels((x_hi - x_lo).ceil() as usize + 1)
        .x_label_formatter(&|v| {
            if (v - v.round()).abs() < 1e-9 {
                format!("{}", v.exp2().round())
            } else {
                String::new()
            }
        })
        .draw()?;
    let mut k = 0;
    let mut entries = Vec::new();
    for mode in ["data", "ordered"] {
        for pol in exp::POLICIES {
            let mut pts: Vec<(f64, f64)> = fio
                .iter()
                .filter(|x| x.mode == mode && x.policy == pol)
                .filter_map(|x| Some((log2(x.fsync_every?), x.app_mb_per_s)))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let color = COLORS[k % COLORS.len()];
            k += 1;
            c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
            c.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
            entries.push((format!("{pol}, {mode} mode"), color, Mark::Line));
        }
    }
    side_legend(&top_legend, 60, &entries)?;

    let apps: Vec<String> = exp::FILEBENCH
        .iter()
        .map(|a| format!("{a:?}").to_lowercase())
        .collect();
    let modes = ["data", "ordered"];
    let mode_colors = [COLORS[2], COLORS[4]];
    let ratio = |app: &str, mode: &str| r.gain_pct(app, mode, None).map(|g| 1.0 + g / 100.0);
    let y_hi = apps
        .iter()
        .flat_map(|a| modes.iter().filter_map(move |m| ratio(a, m)))
        .fold(1.2, f64::max)
        * 1.1;
    let n = apps.len().max(1);
    let mut c = ChartBuilder::on(&bottom)
        .caption(
            "Filebench: slc-journal throughput / slc-buffer",
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..n as f64, 0f64..y_hi)?;
    c.configure_mesh()
        .y_desc("normalized throughput")
        .x_labels(0)
        .disable_x_mesh()
        .draw()?;
    // Each personality's name under its pair of bars, as a tick label would be.
    let centred = ("sans-serif", 15)
        .into_font()
        .into_text_style(&root)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (i, app) in apps.iter().enumerate() {
        let (x, y) = c.backend_coord(&(i as f64 + 0.5, 0.0));
        root.draw(&Text::new(app.clone(), (x, y + 8), centred.clone()))?;
    }
    for (i, app) in apps.iter().enumerate() {
        for (m, mode) in modes.iter().enumerate() {
            if let Some(v) = ratio(app, mode) {
                let x = i as f64 + 0.1 + 0.4 * m as f64;
                c.draw_series([Rectangle::new(
                    [(x, 0.0), (x + 0.38, v)],
                    mode_colors[m].filled(),
                )])?;
            }
        }
    }
    // The reference over the bars (no text near it: bar names are tick labels).
    c.draw_series([PathElement::new(
        vec![(0.0, 1.0), (n as f64, 1.0)],
        BLACK.stroke_width(2),
    )])?;
    let mut entries: Vec<(String, RGBColor, Mark)> = modes
        .iter()
        .zip(mode_colors)
        .map(|(m, c)| (format!("{m} mode"), c, Mark::Bar))
        .collect();
    entries.push(("1.0 = slc-buffer".into(), BLACK, Mark::Line));
    side_legend(&bottom_legend, 60, &entries)?;
    root.present()?;
    Ok(())
}
