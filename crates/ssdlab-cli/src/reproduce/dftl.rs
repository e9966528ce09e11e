//! `ssdlab reproduce dftl`: the demand-based FTL experiment of spec 04 (docs/dftl.md).
//! Writes `dftl.md`, `dftl.csv`, `dftl.json` and `dftl.svg` (read-latency CDF and CCDF of
//! the mixed workload, without and with GC) to `--out`.

use super::COLORS;
use anyhow::Result;
use clap::Args;
use plotters::prelude::*;
use ssdlab_experiments::dftl::{self as exp, DftlParams, DftlReport};
use std::fmt::Write as _;
use std::path::Path;

#[derive(Args)]
pub struct DftlArgs {
    #[command(flatten)]
    common: super::ReproduceArgs,
    /// Shrink the device by this divisor (its 32 chips / SCALE: a power of two ≤ 32, the
    /// data set shrinks with it); 1 = the 64 GiB data set.
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// Measured requests per run (each variant × workload × GC state).
    #[arg(long, default_value_t = 500_000)]
    requests: u64,
    /// Mapping variants to run.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "page-map,dftl,dftl-partitioned,dftl-partitioned-log"
    )]
    variants: Vec<String>,
    /// CMT size as a share of the full mapping table (the paper: 0.25).
    #[arg(long, default_value_t = 0.25)]
    cmt_share: f64,
    /// NAND timing: `preset` (configs/dftl-64g.toml: tR 50 µs) or `paper` (the paper's
    /// board, tR 400 µs from its Fig. 1: a CMT miss's two reads in 0.8 ms; docs/dftl.md).
    #[arg(long, value_enum, default_value_t = Timing::Preset)]
    timing: Timing,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Timing {
    Preset,
    Paper,
}

pub fn run(a: &DftlArgs) -> Result<()> {
    let p = DftlParams {
        variants: a.variants.clone(),
        requests: a.requests,
        scale: a.scale,
        cmt_share: a.cmt_share,
        seed: a.common.seed,
        sets: a.common.sets.clone(),
        timing: match a.timing {
            Timing::Preset => exp::DftlTiming::Preset,
            Timing::Paper => exp::DftlTiming::Paper,
        },
    };
    p.check()?; // a bad scale, variant or --set fails before the banner and any work
    let staged = super::stage(&a.common.out("dftl"), "dftl")?;
    let pool = a.common.pool(2)?;
    let quiet = a.common.quiet;
    if !quiet {
        // Measured on this project's 2-core VM (24 runs of 500k requests in 26 s): about 5 s
        // of preconditioning and 0.25 s per 100k requests of each of the 6 runs, per variant,
        // at scale 1.
        let per_variant = (5.0 + 6.0 * 0.25 * a.requests as f64 / 1e5) / a.scale.max(1) as f64;
        let est = per_variant * p.variants.len() as f64 / pool.current_num_threads() as f64;
        eprintln!(
            "reproduce dftl: {} variants x 3 workloads x 2 device states, {} requests each, on {} threads (about {:.0} s) ...",
            p.variants.len(),
            a.requests,
            pool.current_num_threads(),
            est
        );
    }
    let progress = move |rows: &[exp::DftlRow]| {
        for r in rows {
            super::say_audit(&r.audit_warnings);
        }
        if !quiet {
            if let Some(r) = rows.first() {
                let wall: f64 = rows.iter().map(|r| r.wall_s).sum();
                eprintln!("  {:<22} done ({:.1} s measured runs)", r.variant, wall);
            }
        }
    };
    let report = pool.install(|| exp::run(&p, &progress))?;
    let md = markdown(&report, a);
    super::write_outputs(staged, "dftl", &md, &report.csv(), &report, |svg| {
        plot(&report, svg)
    })
}

fn markdown(r: &DftlReport, a: &DftlArgs) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# Demand-based FTL with a partitioned mapping cache (spec 04)\n"
    );
    let _ = writeln!(
        o,
        "* Device (configs/dftl-64g.toml): TLC, {} planes (2 per chip), 16 KiB pages of 4 KiB units, 384 pages per block; 192 data blocks per plane at OP 12.5 % = a {} GiB data set{}; a 6-block-per-plane translation region; tR {:.0} µs{}, tPROG {:.0} µs, erase 11 ms; timed mode.",
        r.planes,
        r.planes,
        if a.scale > 1 { " (scaled down from 64 GiB)" } else { "" },
        r.read_us,
        match r.timing {
            exp::DftlTiming::Paper => " (`--timing paper`: the paper's board, Fig. 1)",
            exp::DftlTiming::Preset => "",
        },
        r.program_us,
    );
    let _ = writeln!(
        o,
        "* Mapping: 4 B entries, 4,096 per 16 KiB translation page; CMT = {:.1} % of the full table (partitioned: half clean pages, half dirty pages or entry log); `dftl` at page granularity (the paper's baseline).",
        r.cmt_share * 100.0
    );
    let _ = writeln!(
        o,
        "* Workloads: uniform random 4 KiB reads, writes, and 70/30 reads/writes, queue depth 32, {} requests each; \"no GC\" runs right after a sequential fill of the whole logical space, \"GC in effect\" after one more capacity of random overwrites; every run starts from the same forked state. × dftl = IOPS over `dftl`'s on the same workload.",
        r.requests
    );
    o += &r.markdown();
    o += &r.breakdown_markdown();
    let checks: Vec<_> = r
        .shape()
        .into_iter()
        .map(|(gc, name, ok, d)| ((if gc { "GC" } else { "no GC" }).to_string(), name, ok, d))
        .collect();
    o += &super::shape_section(
        "the paper's shape, spec 04",
        Some("device state"),
        &checks,
        r.rows.len(),
        r.wall_s,
    );
    o
}

/// Mixed workload read latency: CDF (top, the paper's Fig. 7) and CCDF (bottom, the tail),
/// without GC (left) and with GC (right).
fn plot(r: &DftlReport, path: &Path) -> Result<()> {
    let root = SVGBackend::new(path, (1400, 1000)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(500);
    let (tl, tr) = top.split_horizontally(700);
    let (bl, br) = bottom.split_horizontally(700);
    for (gc, cdf_area, ccdf_area) in [(false, tl, bl), (true, tr, br)] {
        let state = if gc { "GC in effect" } else { "no GC" };
        let series: Vec<(&str, Vec<(f64, f64)>)> = r
            .rows
            .iter()
            .filter(|x| x.gc == gc && x.workload == "mixed")
            .map(|x| {
                let pts = x
                    .read_ccdf
                    .iter()
                    .map(|&(ns, above)| (ns as f64 / 1e3, above))
                    .collect();
                (x.variant.as_str(), pts)
            })
            .collect();
        cdf_panel(
            &cdf_area,
            &format!("mixed 70/30 read latency CDF, {state}"),
            &series,
        )?;
        let tail: Vec<(&str, Vec<(f64, f64)>)> = series
            .iter()
            .map(|(n, pts)| (*n, pts.iter().copied().filter(|p| p.1 > 0.0).collect()))
            .collect();
        crate::plots::ccdf_panel(
            &ccdf_area,
            &format!("read latency tail (CCDF), {state}"),
            &tail,
        )?;
    }
    root.present()?;
    Ok(())
}

/// A CDF chart (latency µs on a log axis, P(latency ≤ x)) of CCDF points.
fn cdf_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    series: &[(&str, Vec<(f64, f64)>)],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let xs = series.iter().flat_map(|s| s.1.iter().map(|p| p.0));
    let x_lo = xs.clone().fold(f64::INFINITY, f64::min).max(1.0) / 1.5;
    let x_hi = xs.fold(0.0, f64::max).max(x_lo * 10.0) * 1.5;
    let mut c = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), 0f64..1.0)?;
    c.configure_mesh()
        .x_desc("read latency (us, log)")
        .y_desc("P(latency <= x)")
        .draw()?;
    for (k, (name, pts)) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        // A step function: the share stays until the next recorded latency.
        let mut cdf: Vec<(f64, f64)> = Vec::with_capacity(2 * pts.len());
        let mut prev = 0.0;
        for &(x, above) in pts {
            cdf.push((x, prev));
            prev = 1.0 - above;
            cdf.push((x, prev));
        }
        c.draw_series(LineSeries::new(cdf, color.stroke_width(2)))?
            .label(*name)
            .legend(move |(a, b)| {
                PathElement::new(vec![(a, b), (a + 20, b)], color.stroke_width(2))
            });
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
