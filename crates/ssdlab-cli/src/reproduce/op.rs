//! `ssdlab reproduce op`: the over-provisioning experiment of spec 02 (see
//! `docs/reproduce-op.md`). Prints a markdown report and writes `op.md`, `op.csv`,
//! `op.json` and `op.svg` to `--out`.

use anyhow::{bail, Result};
use clap::Args;
use plotters::prelude::*;
use ssdlab_experiments::op::{self as exp, OpSweep, OpSweepParams};
use ssdlab_experiments::run::with_overrides;
use std::fmt::Write as _;
use std::path::Path;

#[derive(Args)]
pub struct OpArgs {
    #[command(flatten)]
    common: super::ReproduceArgs,
    /// Divide the paper's 100 GiB overwrite volume per OP point by this (1 = the paper's;
    /// 20 ≈ 51 capacities, seconds). Like every `--scale`, a divisor ≥ 1.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Spare blocks used at "OP 0 %" (the GC reserve): 3 the FTL needs (2 open blocks +
    /// gc_hard_free_blocks) plus data spare; at least 4.
    #[arg(long, default_value_t = exp::PAPER_ZERO_OP_SPARE_BLOCKS)]
    zero_op_spare_blocks: u32,
}

pub fn run(a: &OpArgs) -> Result<()> {
    if !(a.scale >= 1.0 && a.scale.is_finite()) {
        bail!(
            "--scale {}: must be a divisor >= 1 (it divides the 100 GiB volume; before 2026-11-23 it was a fraction: --scale 0.05 is now --scale 20)",
            a.scale
        );
    }
    let mut p = OpSweepParams::paper(1.0 / a.scale)?;
    p.base = with_overrides(&p.base, &a.common.sets, "configs/op-paper.toml")?;
    if a.zero_op_spare_blocks < 4 {
        bail!(
            "--zero-op-spare-blocks: {} is below the minimum 4 (2 open blocks + gc_hard_free_blocks = 1 + at least one block of data spare so GC can make progress)",
            a.zero_op_spare_blocks
        );
    }
    p.min_spare_blocks_per_plane = a.zero_op_spare_blocks;
    if let Some(s) = a.common.seed {
        p.base.seed = s;
    }
    let staged = super::stage(&a.common.out("op"), "op")?;
    let pool = a.common.pool(0)?;
    let quiet = a.common.quiet;
    if !quiet {
        eprintln!(
            "reproduce op: {} OP points x {} host writes on {} threads ...",
            p.op_ratios.len(),
            p.host_writes,
            pool.current_num_threads()
        );
    }
    let progress = move |pt: &exp::OpPoint| {
        if !quiet {
            eprintln!(
                "  OP {:>5.1} %: WAF {:.4} (model {:.4}), {:.1} s wall",
                pt.op_ratio * 100.0,
                pt.sim.waf,
                pt.model.waf,
                pt.sim.wall_s
            );
        }
    };
    let sweep = pool.install(|| exp::sweep(&p, &progress))?;
    let md = markdown(&sweep, &p, a.scale);
    super::write_outputs(staged, "op", &md, &sweep.csv(), &sweep, |svg| {
        plot(&sweep, svg)
    })
}

fn markdown(s: &OpSweep, p: &OpSweepParams, scale: f64) -> String {
    let g = &p.base.device.geometry;
    let t = p.base.device.timing.get(p.base.device.cell_mode);
    let zero = &s.points[0];
    let gc_hard = p.base.ftl.gc_hard_free_blocks;
    let mut o = String::new();
    let _ = writeln!(o, "# Over-provisioning sweep (spec 02)\n");
    let _ = writeln!(
        o,
        "* Device: {} user blocks x {} pages x {} B (page-mapped, {} GC, functional mode: one serial resource), seed {}.",
        s.user_blocks_per_plane, g.pages_per_block, g.page_size_bytes, p.base.ftl.gc.name(), p.base.seed
    );
    let _ = writeln!(
        o,
        "* Workload: sequential fill (not counted), then {} uniform random {} B overwrites ({:.3} GiB = the paper's 100 GiB / {}) per OP point.",
        s.host_writes,
        g.mapping_unit_bytes,
        s.host_writes as f64 * g.mapping_unit_bytes as f64 / (1u64 << 30) as f64,
        scale
    );
    let _ = writeln!(
        o,
        "* Cost read : program : erase = {} : {} : {} us.",
        t.read_ns as f64 / 1e3,
        t.program_ns as f64 / 1e3,
        (t.erase_loop_ns * t.erase_loops.first().map_or(1, |e| e.1) as u64) as f64 / 1e3
    );
    let _ = writeln!(
        o,
        "* OP x % = round(x % x {}) spare blocks. **\"OP 0 %\" uses a minimum GC reserve of {} spare blocks** ({:.2} % of the user space): 3 the FTL cannot run without (2 open blocks for host and GC writes + gc_hard_free_blocks = {gc_hard}) and {} more (the bare minimum the simulator accepts is 4 spare blocks: model WAF {}).",
        s.user_blocks_per_plane,
        s.min_spare_blocks_per_plane,
        s.min_spare_blocks_per_plane as f64 / s.user_blocks_per_plane as f64 * 100.0,
        s.min_spare_blocks_per_plane.saturating_sub(3),
        bare_minimum_waf(p)
    );
    let _ = writeln!(
        o,
        "* Model: {}; counts and time from the WAF by `ssdlab_model::predict_costs`; err = (model - sim) / sim.",
        s.model_description
    );
    let _ = writeln!(
        o,
        "* Improvement = 1 - time / time at OP {:.0} % ({} spare blocks).\n",
        zero.op_ratio * 100.0,
        zero.spare_blocks_per_plane
    );
    let _ = writeln!(o, "| OP | spare blocks | NAND reads | NAND programs | NAND erases | time (s) | WAF | model WAF | WAF err | model time (s) | time err | improvement | model improvement |");
    let _ = writeln!(
        o,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for pt in &s.points {
        let _ = writeln!(
            o,
            "| {:.0} % | {} | {} | {} | {} | {:.1} | {:.4} | {:.4} | {:+.2} % | {:.1} | {:+.2} % | {:.2} % | {:.2} % |",
            pt.op_ratio * 100.0,
            pt.spare_blocks_per_plane,
            pt.sim.nand_reads,
            pt.sim.nand_programs,
            pt.sim.nand_erases,
            pt.time_s,
            pt.sim.waf,
            pt.model.waf,
            pt.waf_rel_err * 100.0,
            pt.model.time_ns / 1e9,
            pt.time_rel_err * 100.0,
            pt.improvement_pct,
            pt.model_improvement_pct
        );
    }
    let max_err = s
        .points
        .iter()
        .map(|p| p.waf_rel_err.abs())
        .fold(0.0, f64::max);
    let checks: Vec<_> = s
        .shape()
        .into_iter()
        .map(|(name, ok, d)| (String::new(), name, ok, d))
        .collect();
    o += &super::shape_section(
        "the paper's trend; the model",
        None,
        &checks,
        s.points.len(),
        s.wall_s,
    );
    let _ = writeln!(
        o,
        "\nLargest |WAF error| {:.2} %. Sweep wall time {:.1} s on {} threads (per point: {}).",
        max_err * 100.0,
        s.wall_s,
        s.threads,
        s.points
            .iter()
            .map(|p| format!("{:.0}", p.sim.wall_s))
            .collect::<Vec<_>>()
            .join("/")
    );
    o
}

/// (simulated, model) value of one count of a point.
type Pick = fn(&exp::OpPoint) -> (f64, f64);

/// Model WAF of the sweep's device with the bare minimum of 4 spare blocks.
fn bare_minimum_waf(p: &OpSweepParams) -> String {
    let mut q = p.clone();
    q.min_spare_blocks_per_plane = 4;
    exp::sweep_point_config(&q, 0.0)
        .and_then(|(c, d, _)| exp::model_waf(&c, &d, q.traffic))
        .map_or_else(|e| format!("n/a: {e}"), |(w, _)| format!("{w:.0}"))
}

/// Two panels: NAND counts (log scale) and consumed time vs OP, simulation (markers) and
/// model (lines), so a model line under matching simulation points stays visible.
fn plot(s: &OpSweep, path: &Path) -> Result<()> {
    let root = SVGBackend::new(path, (960, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(470);
    let x_max = s
        .points
        .iter()
        .map(|p| p.op_ratio)
        .fold(0.0, f64::max)
        .max(0.1)
        * 100.0;
    let counts: Vec<f64> = s
        .points
        .iter()
        .flat_map(|p| {
            [
                p.sim.nand_reads as f64,
                p.sim.nand_programs as f64,
                p.sim.nand_erases as f64,
                p.model.nand_reads,
                p.model.nand_programs,
                p.model.nand_erases,
            ]
        })
        .filter(|v| *v > 0.0)
        .collect();
    let lo = counts
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min)
        .max(1.0)
        / 2.0;
    let hi = counts.iter().cloned().fold(1.0, f64::max) * 2.0;
    let mut c = ChartBuilder::on(&top)
        .caption("NAND operations vs over-provisioning", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(-2f64..x_max + 2.0, (lo..hi).log_scale())?;
    c.configure_mesh()
        .x_desc("OP (%)")
        .y_desc("count (log)")
        .y_labels(6)
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()?;
    let series: [(&str, RGBColor, Pick); 3] = [
        ("reads (GC copies)", BLUE, |p| {
            (p.sim.nand_reads as f64, p.model.nand_reads)
        }),
        ("programs", RED, |p| {
            (p.sim.nand_programs as f64, p.model.nand_programs)
        }),
        ("erases", GREEN, |p| {
            (p.sim.nand_erases as f64, p.model.nand_erases)
        }),
    ];
    for (name, color, f) in series {
        let sim: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|p| (p.op_ratio * 100.0, f(p).0.max(lo)))
            .collect();
        let model: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|p| (p.op_ratio * 100.0, f(p).1.max(lo)))
            .collect();
        c.draw_series(LineSeries::new(model, color.stroke_width(2)))?
            .label(format!("{name}, model"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        c.draw_series(
            sim.iter()
                .map(|&p| Circle::new(p, 5, color.stroke_width(2))),
        )?
        .label(format!("{name}, simulated"))
        .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.stroke_width(2)));
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;

    let times = s
        .points
        .iter()
        .flat_map(|p| [p.time_s, p.model.time_ns / 1e9]);
    let t_max = times.clone().fold(1e-9, f64::max);
    let t_min = times.filter(|t| *t > 0.0).fold(t_max, f64::min);
    let mut c = ChartBuilder::on(&bottom)
        .caption("Consumed time vs over-provisioning", ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(-2f64..x_max + 2.0, (t_min / 2.0..t_max * 2.0).log_scale())?;
    c.configure_mesh()
        .x_desc("OP (%)")
        .y_desc("serial time (s, log)")
        .y_labels(6)
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()?;
    let sim: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (p.op_ratio * 100.0, p.time_s.max(t_min / 2.0)))
        .collect();
    c.draw_series(
        sim.iter()
            .map(|&p| Circle::new(p, 5, BLACK.stroke_width(2))),
    )?
    .label("time, simulated")
    .legend(|(x, y)| Circle::new((x + 10, y), 5, BLACK.stroke_width(2)));
    let model: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (p.op_ratio * 100.0, (p.model.time_ns / 1e9).max(t_min / 2.0)))
        .collect();
    c.draw_series(LineSeries::new(model, MAGENTA.stroke_width(2)))?
        .label("time, model")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], MAGENTA.stroke_width(2)));
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
