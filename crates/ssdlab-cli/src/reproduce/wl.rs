//! `ssdlab reproduce wl`: the wear-leveling lifetime experiment of spec 03 (see
//! `docs/reproduce-wl.md`). Writes `wl.md`, `wl.csv`, `wl.json` and `wl.svg` (lifetime
//! bars and erase-count distributions) to `--out`.

use super::COLORS;
use anyhow::{bail, Result};
use clap::Args;
use plotters::prelude::*;
use ssdlab_experiments::wl::{self as exp, WlParams, WlReport};
use std::fmt::Write as _;
use std::path::Path;

#[derive(Args)]
pub struct WlArgs {
    #[command(flatten)]
    common: super::ReproduceArgs,
    /// Shrink the Table-2 device by this factor (2048 blocks / SCALE, SCALE ≤ 32), for a
    /// quick look; 1 = the paper's device.
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// Traces to run (1, 2, 3: hot 15/25/35 % of the addresses get 85/75/65 % of writes).
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    traces: Vec<u32>,
    /// P/E cycles per block (10^3: the paper's lifetime runs; 10^4: its Table 2, 10x
    /// longer).
    #[arg(long, default_value_t = 1000)]
    endurance: u32,
    /// Free-block allocation for every algorithm: `paper` (min-erase for EPET, FIFO for
    /// the others), `fifo` or `min-erase`.
    #[arg(long, default_value = "paper")]
    allocation: String,
}

pub fn run(a: &WlArgs) -> Result<()> {
    let allocation = match a.allocation.as_str() {
        "paper" => None,
        "fifo" => Some("fifo"),
        "min-erase" => Some("min-erase"),
        other => bail!("--allocation {other}: expected paper, fifo or min-erase"),
    };
    let p = WlParams {
        algorithms: exp::paper_algorithms(allocation),
        traces: a.traces.clone(),
        endurance: a.endurance,
        scale: a.scale,
        seed: a.common.seed,
        sets: a.common.sets.clone(),
    };
    p.check()?; // a bad scale, trace or --set fails before the banner and any work
    let staged = super::stage(&a.common.out("wl"), "wl")?;
    let pool = a.common.pool(2)?;
    let quiet = a.common.quiet;
    let runs = p.algorithms.len() * p.traces.len();
    if !quiet {
        // About 2-10 s per run on the full device at endurance 10^3 (scales with both).
        let est = runs as f64 * 5.0 * a.endurance as f64
            / 1000.0
            / a.scale.max(1) as f64
            / pool.current_num_threads() as f64;
        eprintln!(
            "reproduce wl: {} algorithms x {} traces to device failure on {} threads (about {:.0} s) ...",
            p.algorithms.len(),
            p.traces.len(),
            pool.current_num_threads(),
            est
        );
    }
    let progress = move |r: &exp::WlRun| {
        if !quiet {
            eprintln!(
                "  {:<10} trace {}: first bad {:>9.0} s, failure {:>9.0} s, {:.1} s wall",
                r.algorithm, r.trace, r.first_bad_s, r.failure_s, r.wall_s
            );
        }
        super::say_audit(&r.audit_warnings);
    };
    let report = pool.install(|| exp::run(&p, &progress))?;
    let md = markdown(&report, a);
    super::write_outputs(staged, "wl", &md, &report.csv(), &report, |svg| {
        plot(&report, svg)
    })
}

fn markdown(r: &WlReport, a: &WlArgs) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Wear leveling and lifetime (spec 03, EPET paper)\n");
    let _ = writeln!(
        o,
        "* Device: Table 2, {} blocks x 64 pages x 4 KiB MLC{}, 15 % reserve, GC below 5 % free blocks, read/program/erase 60/800/1,500 µs, endurance {} P/E cycles; functional mode (serial clock); seed from the preset.",
        r.blocks,
        if a.scale > 1 { " (scaled down)" } else { "" },
        r.endurance
    );
    let _ = writeln!(
        o,
        "* Traces: 4 KiB writes after a sequential fill; block index ~ centred Normal, σ such that the central hot share of addresses gets the cold share of writes; run until the device fails (usable blocks no longer hold the logical capacity plus the GC reserve)."
    );
    let _ = writeln!(
        o,
        "* Page migrations = valid pages moved by GC and wear leveling; avg response = simulated time per host write; ratios are to GA on the same trace (the paper's seconds come from an undescribed clock)."
    );
    o += &r.markdown();
    let checks: Vec<_> = r
        .shape()
        .into_iter()
        .map(|(t, name, ok, d)| (t.to_string(), name, ok, d))
        .collect();
    o += &super::shape_section(
        "the paper's shape, spec 03",
        Some("trace"),
        &checks,
        r.runs.len(),
        r.wall_s,
    );
    o
}

/// Top: first bad and failure time over GA's, per algorithm, for the first trace. Bottom:
/// erase counts of every block at failure, sorted (GA, DP, BET, Adaptive, PET-TH90,
/// EPET-TH90).
fn plot(r: &WlReport, path: &Path) -> Result<()> {
    use crate::plots::{side_legend, Mark};
    let root = SVGBackend::new(path, (1350, 1000)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(500);
    let (top, top_legend) = top.split_horizontally(1180);
    let (bottom, bottom_legend) = bottom.split_horizontally(1180);
    let Some(trace) = r.runs.first().map(|x| x.trace) else {
        root.present()?;
        return Ok(());
    };
    let rows: Vec<&exp::WlRun> = r.runs.iter().filter(|x| x.trace == trace).collect();
    let ratios: Vec<(f64, f64)> = rows
        .iter()
        .map(|x| {
            let q = r.ratios(x);
            (q[0], q[1])
        })
        .collect();
    let y_hi = ratios
        .iter()
        .flat_map(|p| [p.0, p.1])
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max)
        * 1.15;
    let n = rows.len();
    let mut c = ChartBuilder::on(&top)
        .caption(
            format!("trace {trace}: first bad block and failure time, × GA"),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(60)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..n as f64, 0f64..y_hi)?;
    c.configure_mesh()
        .x_labels(0)
        .y_desc("× GA")
        .disable_x_mesh()
        .draw()?;
    // Each group's name above its bars (tick labels cannot be centred on groups).
    for (i, (x, &(fb, fail))) in rows.iter().zip(&ratios).enumerate() {
        let top = [fb, fail]
            .into_iter()
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        c.draw_series([Text::new(
            x.algorithm.clone(),
            (i as f64 + 0.1, top + 0.03 * y_hi),
            ("sans-serif", 13),
        )])?;
    }
    for (i, &(fb, fail)) in ratios.iter().enumerate() {
        let x = i as f64;
        let bar = |lo: f64, hi: f64, v: f64, color: RGBColor| {
            Rectangle::new([(x + lo, 0.0), (x + hi, v)], color.filled())
        };
        if fb.is_finite() {
            c.draw_series([bar(0.1, 0.45, fb, COLORS[2])])?;
        }
        if fail.is_finite() {
            c.draw_series([bar(0.5, 0.85, fail, COLORS[1])])?;
        }
    }
    side_legend(
        &top_legend,
        60,
        &[
            ("first bad block".into(), COLORS[2], Mark::Bar),
            ("failure".into(), COLORS[1], Mark::Bar),
        ],
    )?;

    let shown = ["GA", "DP", "BET", "Adaptive", "PET-TH90", "EPET-TH90"];
    let curves: Vec<(&str, Vec<u32>)> = shown
        .iter()
        .filter_map(|name| {
            let x = rows.iter().find(|x| x.algorithm == *name)?;
            let mut e = x.erase_counts.clone();
            e.sort_unstable();
            Some((*name, e))
        })
        .collect();
    let blocks = curves.iter().map(|c| c.1.len()).max().unwrap_or(1).max(1);
    let e_hi = curves
        .iter()
        .flat_map(|c| c.1.iter().copied())
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.05;
    let mut c = ChartBuilder::on(&bottom)
        .caption(
            format!("trace {trace}: erase count of every block at failure (sorted)"),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..blocks as f64, 0f64..e_hi)?;
    c.configure_mesh()
        .x_desc("blocks, fewest erases first")
        .y_desc("erase count")
        .draw()?;
    let mut entries = Vec::new();
    for (k, (name, e)) in curves.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let pts: Vec<(f64, f64)> = e
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as f64, v as f64))
            .collect();
        c.draw_series(LineSeries::new(pts, color.stroke_width(2)))?;
        entries.push((name.to_string(), color, Mark::Line));
    }
    side_legend(&bottom_legend, 60, &entries)?;
    root.present()?;
    Ok(())
}
