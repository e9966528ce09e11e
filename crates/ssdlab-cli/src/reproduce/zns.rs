//! `ssdlab reproduce zns`: the block-interface tax (issue 37, docs/zns.md): conventional,
//! zoned (with the host log-structured layer) and FDP devices of the same raw flash under
//! the same random writes. Writes `zns.md`, `zns.csv`, `zns.json` and `zns.svg` (total WAF
//! per device, spare and workload) to `--out`.

use super::COLORS;
use anyhow::Result;
use clap::Args;
use plotters::prelude::*;
use ssdlab_experiments::zns::{self as exp, Device, Mix, ZnsParams, ZnsReport};
use std::fmt::Write as _;
use std::path::Path;

#[derive(Args)]
pub struct ZnsArgs {
    #[command(flatten)]
    common: super::ReproduceArgs,
    /// Divide the 4 channels (one die each) by 1, 2 or 4: the device and each run's writes
    /// shrink with it (1 = the study as documented).
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// User writes of the functional warm-up after the fill, in multiples of the user space.
    #[arg(long, default_value_t = exp::WARMUP_CAPACITY_MULTIPLE)]
    warmup: f64,
    /// User writes of the timed, measured phase, in multiples of the user space.
    #[arg(long, default_value_t = exp::MEASURE_CAPACITY_MULTIPLE)]
    measure: f64,
}

pub fn run(a: &ZnsArgs) -> Result<()> {
    let mut p = ZnsParams::paper(a.scale)?;
    p.base = ssdlab_experiments::run::with_overrides(&p.base, &a.common.sets, "configs/zns.toml")?;
    if let Some(s) = a.common.seed {
        p.base.seed = s;
    }
    for (flag, v) in [("--warmup", a.warmup), ("--measure", a.measure)] {
        if !(v > 0.0 && v.is_finite()) {
            anyhow::bail!("{flag}: {v}: must be a positive multiple of the device's capacity");
        }
    }
    p.warmup_capacity_multiple = a.warmup;
    p.measure_capacity_multiple = a.measure;
    p.check()?; // a bad scale or --set fails before the banner and any work
    let staged = super::stage(&a.common.out("zns"), "zns")?;
    let pool = a.common.pool(2)?;
    let quiet = a.common.quiet;
    if !quiet {
        eprintln!(
            "reproduce zns: {} runs (conventional, zns + host layer, fdp) x (uniform, hot-cold) x spare {}, each a fill, {}x its user space at random (functional), then {}x measured (timed), on {} threads ...",
            p.jobs().len(),
            p.spare
                .iter()
                .map(|s| format!("{:.0} %", s * 100.0))
                .collect::<Vec<_>>()
                .join(", "),
            p.warmup_capacity_multiple,
            p.measure_capacity_multiple,
            pool.current_num_threads()
        );
    }
    let progress = move |r: &exp::ZnsRun| {
        if !quiet {
            eprintln!(
                "  {:<8} {:>3.0} % {:<12}: total WAF {:.3}, {:.1} s wall",
                r.mix.name(),
                r.spare * 100.0,
                r.device.name(),
                r.total_waf,
                r.wall_s
            );
        }
        super::say_audit(&r.audit_warnings);
    };
    let report = pool.install(|| exp::run(&p, &progress))?;
    let md = markdown(&report, &p);
    super::write_outputs(staged, "zns", &md, &report.csv(), &report, |svg| {
        plot(&report, svg)
    })
}

fn markdown(r: &ZnsReport, p: &ZnsParams) -> String {
    let c = &p.base;
    let g = &c.device.geometry;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# The block-interface tax: conventional vs ZNS vs FDP (ZNS, USENIX ATC 2021)\n"
    );
    let _ = writeln!(
        o,
        "* Raw flash (configs/zns.toml): {}, {} channels{} x {} chips x {} dies x {} planes, {} blocks/plane, {} pages/block, {} KiB pages: {} MiB; seed {}.",
        format!("{:?}", c.device.cell_mode).to_uppercase(),
        g.channels,
        if r.scale > 1 {
            format!(" (4 / scale {})", r.scale)
        } else {
            String::new()
        },
        g.chips_per_channel,
        g.dies_per_chip,
        g.planes_per_die,
        g.blocks_per_plane,
        g.pages_per_block,
        g.page_size_bytes >> 10,
        r.raw_bytes >> 20,
        c.seed
    );
    if let Some(z) = &c.device.zns {
        let _ = writeln!(
            o,
            "* ZNS: {} zones of {} MiB (zone_dies = {} (0 = all), {} block(s) per plane), max {} open / {} active zones, {} spare blocks per plane; the host log-structured layer (greedy zone GC) with spare ratio = the spare column. Conventional and FDP: greedy GC at OP = the spare column; FDP with 2 reclaim-unit handles, hot writes on placement id 1.",
            r.zones,
            r.zone_bytes >> 20,
            z.zone_dies,
            z.blocks_per_plane,
            z.max_open_zones,
            z.max_active_zones,
            z.spare_blocks_per_plane
        );
    }
    let _ = writeln!(
        o,
        "* Workload: {} KiB requests (one page, one mapping unit) at QD {}, {:.0} % reads, the rest writes. Each run fills its user space sequentially, writes {}x it at random in the functional mode (steady state), then {}x in the timed mode (measured), in user writes. Host WAF = device writes / user writes; total = host x device; user MB/s = user reads + writes per simulated second; latencies are the device's requests (on ZNS the layer's relocations too). Zone resets per GB of device writes.",
        r.block_bytes >> 10,
        r.queue_depth,
        r.read_percent,
        r.warmup_capacity_multiple,
        r.measure_capacity_multiple
    );
    o += &r.markdown();
    let checks: Vec<_> = r
        .shape()
        .into_iter()
        .map(|c| (c.group.to_string(), c.check, c.holds, c.detail))
        .collect();
    o += &super::shape_section(
        "ZNS, USENIX ATC 2021; FDP",
        Some("workload"),
        &checks,
        r.runs.len(),
        r.wall_s,
    );
    o
}

/// The three write amplifications (device, host layer, total = host × device) per device
/// and spare: a row of panels per workload, one panel per figure on a shared scale.
fn plot(r: &ZnsReport, path: &Path) -> Result<()> {
    let root = SVGBackend::new(path, (1500, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut spares: Vec<f64> = Vec::new();
    for x in &r.runs {
        if !spares.contains(&x.spare) {
            spares.push(x.spare);
        }
    }
    let y_hi = r
        .runs
        .iter()
        .flat_map(|x| [x.total_waf, x.host_waf, x.device_waf])
        .fold(1.0f64, f64::max)
        * 1.2;
    let n = spares.len() as f64;
    type Figure = fn(&exp::ZnsRun) -> f64;
    let figures: [(&str, &str, Figure); 3] = [
        ("device WAF", "NAND writes / device writes", |x| {
            x.device_waf
        }),
        ("host WAF", "device writes / user writes", |x| x.host_waf),
        ("total WAF", "host WAF x device WAF", |x| x.total_waf),
    ];
    let rows = root.split_evenly((2, 3));
    for (m, mix) in [Mix::Uniform, Mix::HotCold].into_iter().enumerate() {
        for (f, (name, desc, value)) in figures.iter().enumerate() {
            let area = &rows[m * 3 + f];
            let mut c = ChartBuilder::on(area)
                .caption(format!("{name}, {}", mix.name()), ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(35)
                .y_label_area_size(50)
                .build_cartesian_2d(-0.5f64..n - 0.5, 0f64..y_hi)?;
            let labels = spares.clone();
            c.configure_mesh()
                .x_labels(spares.len())
                .x_label_formatter(&|x| {
                    let i = x.round();
                    if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                        format!("spare {:.0} %", labels[i as usize] * 100.0)
                    } else {
                        String::new()
                    }
                })
                .y_desc(*desc)
                .draw()?;
            for (k, d) in Device::ALL.iter().enumerate() {
                let color = COLORS[(k + 1) % COLORS.len()];
                let w = 0.25;
                let x0 = |i: usize| i as f64 - 0.375 + k as f64 * w;
                let bars: Vec<_> = spares
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| {
                        r.run_of(*d, mix, *s).map(|x| {
                            Rectangle::new([(x0(i), 0.0), (x0(i) + w, value(x))], color.filled())
                        })
                    })
                    .collect();
                c.draw_series(bars)?.label(d.name()).legend(move |(a, b)| {
                    Rectangle::new([(a, b - 5), (a + 15, b + 5)], color.filled())
                });
            }
            c.configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
        }
    }
    root.present()?;
    Ok(())
}
