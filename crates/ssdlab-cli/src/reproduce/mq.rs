//! `ssdlab reproduce mq`: MQSim's multi-queue study (issue 38, docs/host-interface.md).
//! Writes `mq.md`, `mq.csv`, `mq.json` and `mq.svg` (each flow's slowdown under round
//! robin and weighted round robin, without and with GC) to `--out`.

use super::COLORS;
use anyhow::Result;
use clap::Args;
use plotters::prelude::*;
use ssdlab_experiments::mq::{self as exp, MqParams, MqReport, Sharing};
use std::fmt::Write as _;
use std::path::Path;

#[derive(Args)]
pub struct MqArgs {
    #[command(flatten)]
    common: super::ReproduceArgs,
    /// Divide the pages per block (384) and each run's simulated time (2000 ms) by this
    /// power of two ≤ 16 (1 = the study as documented).
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// Simulated time of each run in ms (overrides 2000 / SCALE).
    #[arg(long)]
    duration_ms: Option<f64>,
}

pub fn run(a: &MqArgs) -> Result<()> {
    let mut p = MqParams::paper(a.scale)?;
    p.base = ssdlab_experiments::run::with_overrides(
        &p.base,
        &a.common.sets,
        "configs/nvme-pcie3-tlc.toml (with the study's host interface)",
    )?;
    if let Some(s) = a.common.seed {
        p.base.seed = s;
    }
    if let Some(ms) = a.duration_ms {
        if !(ms > 0.0 && ms.is_finite()) {
            anyhow::bail!("--duration-ms: {ms}: must be a positive number of milliseconds");
        }
        p.duration_ns = (ms * 1e6).round() as u64;
    }
    p.check()?; // a bad scale or --set fails before the banner and any work
    let staged = super::stage(&a.common.out("mq"), "mq")?;
    let pool = a.common.pool(2)?;
    let quiet = a.common.quiet;
    if !quiet {
        eprintln!(
            "reproduce mq: sequential fill, then (no GC | random overwrite + GC) x (reads alone, writes alone, RR, WRR), {:.0} ms simulated each, on {} threads ...",
            p.duration_ns as f64 / 1e6,
            pool.current_num_threads()
        );
    }
    let progress = move |r: &exp::MqRun| {
        if !quiet {
            eprintln!(
                "  {:<5} {:<5} {:<14}: {} GC victims, {:.1} s wall",
                if r.gc { "GC" } else { "no GC" },
                r.sharing.short(),
                r.flows.join(" + "),
                r.gc_victims,
                r.wall_s
            );
        }
        super::say_audit(&r.audit_warnings);
    };
    let report = pool.install(|| exp::run(&p, &progress))?;
    let md = markdown(&report, &p);
    super::write_outputs(staged, "mq", &md, &report.csv(), &report, |svg| {
        plot(&report, svg)
    })
}

fn markdown(r: &MqReport, p: &MqParams) -> String {
    let c = &p.base;
    let g = &c.device.geometry;
    let t = c.device.timing.get(c.device.cell_mode);
    let mut o = String::new();
    let _ = writeln!(o, "# Multi-queue interference (MQSim, FAST 2018)\n");
    let _ = writeln!(
        o,
        "* Device (configs/nvme-pcie3-tlc.toml): TLC, {} channels x {} chips x {} dies x {} planes, {} blocks/plane, {} pages/block{}, {} KiB pages, OP {:.0} %, tR {} µs, tPROG {} µs, greedy GC, {} MiB write buffer; seed {}.",
        g.channels,
        g.chips_per_channel,
        g.dies_per_chip,
        g.planes_per_die,
        g.blocks_per_plane,
        g.pages_per_block,
        if r.scale > 1 {
            format!(" (384 / scale {})", r.scale)
        } else {
            String::new()
        },
        g.page_size_bytes >> 10,
        c.device.over_provisioning_ratio * 100.0,
        t.read_ns / 1000,
        t.program_ns / 1000,
        c.ftl.write_buffer_bytes >> 20,
        c.seed
    );
    let w = &r.wrr;
    let _ = writeln!(
        o,
        "* Host interface: {}, one submission queue per flow, {} controller command slots (fewer than the flows' {} outstanding commands: the arbiter decides whose command is fetched); RR burst {}; WRR weights high {} / medium {} / low {}, burst {}.",
        r.link,
        r.slots,
        r.flows.iter().map(|f| f.queue_depth).sum::<u32>(),
        r.rr_burst,
        w.high_weight,
        w.medium_weight,
        w.low_weight,
        w.burst
    );
    let _ = writeln!(
        o,
        "* Flows: {}; each run {:.0} ms of simulated time, both flows issuing the whole time.",
        r.flows
            .iter()
            .map(|f| format!(
                "`{}` = {} KiB {} {}s at QD {} (WRR class {})",
                f.name,
                f.block_bytes >> 10,
                match f.pattern {
                    ssdlab_workload::synthetic::AddressPattern::Sequential => "sequential",
                    _ => "uniform random",
                },
                f.op(),
                f.queue_depth,
                f.priority.name()
            ))
            .collect::<Vec<_>>()
            .join(", "),
        r.duration_ns as f64 / 1e6
    );
    let _ = writeln!(
        o,
        "* Slowdown = mean latency together / mean latency alone (MQSim's definition); fairness = min slowdown / max slowdown of the run. Preconditioning: sequential fill {:.1} s, random overwrite {:.1} s wall.",
        r.fill_wall_s, r.overwrite_wall_s
    );
    o += &r.markdown();
    let checks: Vec<_> = r
        .shape()
        .into_iter()
        .map(|c| (c.group.to_string(), c.check, c.holds, c.detail))
        .collect();
    o += &super::shape_section(
        "MQSim, FAST 2018",
        Some("device state"),
        &checks,
        r.runs.len(),
        r.wall_s,
    );
    o
}

/// Each flow's slowdown under RR and WRR, without GC (left) and with GC (right).
fn plot(r: &MqReport, path: &Path) -> Result<()> {
    let root = SVGBackend::new(path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(600);
    let shared = [Sharing::RoundRobin, Sharing::WeightedRoundRobin];
    let y_hi = r
        .rows
        .iter()
        .filter_map(|x| x.slowdown)
        .fold(1.0f64, f64::max)
        * 1.2;
    for (gc, area) in [(false, left), (true, right)] {
        let mut c = ChartBuilder::on(&area)
            .caption(
                format!("slowdown, {}", if gc { "GC in effect" } else { "no GC" }),
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..1.5, 0f64..y_hi)?;
        c.configure_mesh()
            .x_labels(2)
            .x_label_formatter(&|x| match x.round() as i64 {
                0 => "round robin".into(),
                1 => "weighted round robin".into(),
                _ => String::new(),
            })
            .y_desc("mean latency together / alone")
            .draw()?;
        c.draw_series(LineSeries::new(
            [(-0.5, 1.0), (1.5, 1.0)],
            BLACK.mix(0.3).stroke_width(1),
        ))?;
        // Bars side by side per arbitration: the two are categories, not points of a line.
        let w = 0.8 / r.flows.len().max(1) as f64;
        for (k, f) in r.flows.iter().enumerate() {
            let color = COLORS[(k + 1) % COLORS.len()];
            let bars: Vec<_> = shared
                .iter()
                .enumerate()
                .filter_map(|(i, s)| {
                    let x0 = i as f64 - 0.4 + k as f64 * w;
                    r.row(gc, *s, f.name)
                        .and_then(|x| x.slowdown)
                        .map(|v| Rectangle::new([(x0, 0.0), (x0 + w, v)], color.filled()))
                })
                .collect();
            c.draw_series(bars)?
                .label(format!("{} ({})", f.name, f.priority.name()))
                .legend(move |(a, b)| {
                    Rectangle::new([(a, b - 5), (a + 15, b + 5)], color.filled())
                });
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The help states the study's real duration and pages per block (it said 400 ms
    /// while the runs lasted 2 s).
    #[test]
    fn the_help_states_the_studys_duration_and_block() {
        use clap::Args as _;
        let help = MqArgs::augment_args(clap::Command::new("mq"))
            .render_long_help()
            .to_string();
        let ms = exp::DURATION_NS / 1_000_000;
        assert!(help.contains(&format!("({ms} ms)")), "{help}");
        assert!(help.contains(&format!("overrides {ms} / SCALE")), "{help}");
        let p = MqParams::paper(1).unwrap();
        let ppb = p.base.device.geometry.pages_per_block;
        assert!(help.contains(&format!("pages per block ({ppb})")), "{help}");
    }
}
