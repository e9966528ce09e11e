//! Plots of one run: `latency.svg` (CCDF of read, write and flush latency, log-log) and
//! `timeseries.svg` (throughput, free blocks and buffer, WAF per interval).

use crate::reproduce::COLORS;
use anyhow::Result;
use plotters::prelude::*;
use ssdlab_core::stats::{Latency, TimeSeriesRow};
use ssdlab_experiments::ssr::ccdf;
use std::path::Path;

/// Latency CCDF per operation (operations without samples are left out).
pub fn latency(path: &Path, lat: &Latency) -> Result<()> {
    let series: Vec<(&str, Vec<(f64, f64)>)> = [
        ("read", &lat.read),
        ("write", &lat.write),
        ("flush", &lat.flush),
    ]
    .into_iter()
    .filter(|(_, h)| !h.is_empty())
    .map(|(n, h)| {
        // Start at P = 1 at the smallest sample, so a constant latency still shows.
        let first = (h.min().max(1) as f64 / 1e3, 1.0);
        let pts = std::iter::once(first)
            .chain(
                ccdf(h)
                    .into_iter()
                    .filter(|(_, p)| *p > 0.0)
                    .map(|(v, p)| (v.max(1) as f64 / 1e3, p)),
            )
            .collect();
        (n, pts)
    })
    .collect();
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    ccdf_panel(&root, "latency CCDF", &series)?;
    root.present()?;
    Ok(())
}

/// One log-log CCDF chart of `series` (name, (latency µs, P(latency > x))) on `area`;
/// `false` (nothing drawn) when no series has a point.
pub fn ccdf_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    series: &[(&str, Vec<(f64, f64)>)],
) -> Result<bool>
where
    DB::ErrorType: 'static,
{
    let all: Vec<(f64, f64)> = series.iter().flat_map(|s| s.1.iter().copied()).collect();
    if all.is_empty() {
        return Ok(false);
    }
    let x_lo = all
        .iter()
        .map(|p| p.0)
        .fold(f64::INFINITY, f64::min)
        .max(1e-3);
    let x_hi = all.iter().map(|p| p.0).fold(0.0, f64::max) * 1.5;
    let y_lo = all.iter().map(|p| p.1).fold(1.0, f64::min).min(1e-7) / 2.0;
    let mut c = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..1.0).log_scale())?;
    c.configure_mesh()
        .x_desc("latency (us, log)")
        .y_desc("P(latency > x) (log)")
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()?;
    for (k, (name, pts)) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(*name)
            .legend(move |(a, b)| {
                PathElement::new(vec![(a, b), (a + 20, b)], color.stroke_width(2))
            });
    }
    c.configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(true)
}

type Panel<'a> = (&'a str, Vec<(&'a str, fn(&TimeSeriesRow) -> f64)>);

/// Three panels over simulated time: IOPS, free blocks and buffer occupancy, WAF.
pub fn timeseries(path: &Path, rows: &[TimeSeriesRow]) -> Result<()> {
    let root = SVGBackend::new(path, (900, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels: [Panel; 3] = [
        (
            "IOPS",
            vec![("read", |r| r.read_iops), ("write", |r| r.write_iops)],
        ),
        (
            "free blocks (min over planes), buffer units / 100",
            vec![
                ("free blocks", |r| r.free_blocks_min as f64),
                ("buffer / 100", |r| r.buffer_units as f64 / 100.0),
            ],
        ),
        ("WAF per interval", vec![("WAF", |r| r.waf)]),
    ];
    let t_hi = rows
        .last()
        .map_or(1.0, |r| r.time_ns as f64 / 1e9)
        .max(1e-9);
    for (area, (title, lines)) in root.split_evenly((3, 1)).iter().zip(panels) {
        let y_hi = rows
            .iter()
            .flat_map(|r| lines.iter().map(move |l| (l.1)(r)))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
            .max(1e-9)
            * 1.1;
        let mut c = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..t_hi, 0f64..y_hi)?;
        c.configure_mesh().x_desc("simulated time (s)").draw()?;
        for (k, (name, f)) in lines.into_iter().enumerate() {
            let color = COLORS[k % COLORS.len()];
            let pts = rows
                .iter()
                .map(|r| (r.time_ns as f64 / 1e9, f(r)))
                .filter(|p| p.1.is_finite());
            c.draw_series(LineSeries::new(pts, color.stroke_width(2)))?
                .label(name)
                .legend(move |(a, b)| {
                    PathElement::new(vec![(a, b), (a + 20, b)], color.stroke_width(2))
                });
        }
        c.configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}
