//! Plots of one run: `latency.svg` (CCDF of read, write and flush latency, log-log) and
//! `timeseries.svg` (throughput, free blocks, buffer, WAF per interval), with the legend
//! beside each chart as in the reproduce plots ([`ssdlab_experiments::plot`]).

use anyhow::Result;
use plotters::prelude::*;
use ssdlab_core::stats::{Latency, TimeSeriesRow};
use ssdlab_experiments::plot::{side_legend, Mark, COLORS};
use ssdlab_experiments::ssr::ccdf;
use std::path::Path;

/// The CCDF curve of `h` (latency µs, P(latency > x)): from P = 1 at the smallest sample
/// (so a constant latency still shows), through every recorded value, down to 1/N at the
/// largest sample — the smallest probability N samples can tell, where the curve stops
/// (below it the plot would show what no sample measured). Empty without samples.
pub fn ccdf_curve(h: &ssdlab_core::stats::hdr::Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let lo = h.min().max(1) as f64 / 1e3;
    let hi = h.max().max(1) as f64 / 1e3;
    let mut pts: Vec<(f64, f64)> = std::iter::once((lo, 1.0))
        .chain(
            ccdf(h)
                .into_iter()
                .filter(|(_, p)| *p > 0.0)
                .map(|(v, p)| (v.max(1) as f64 / 1e3, p)),
        )
        .collect();
    pts.push((hi, 1.0 / h.len() as f64)); // the last sample: the drop stops at 1/N
    pts
}

/// Latency CCDF per operation (operations without samples are left out), log-log, legend
/// beside the chart. Each curve ends with a drop at its largest sample to 1/N
/// ([`ccdf_curve`]), so an operation whose every sample has one latency (writes into the
/// buffer) shows as a vertical line at it, named in the legend.
pub fn latency(path: &Path, lat: &Latency) -> Result<()> {
    let root = SVGBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (chart, legend) = root.split_horizontally(790);
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (name, h) in [
        ("read", &lat.read),
        ("write", &lat.write),
        ("flush", &lat.flush),
    ] {
        if h.is_empty() {
            continue;
        }
        let (lo, hi) = (h.min().max(1) as f64 / 1e3, h.max().max(1) as f64 / 1e3);
        let label = if lo == hi {
            format!("{name}: all {lo:.1} µs")
        } else {
            name.to_string()
        };
        series.push((label, ccdf_curve(h)));
    }
    let all: Vec<(f64, f64)> = series.iter().flat_map(|s| s.1.iter().copied()).collect();
    if all.is_empty() {
        root.present()?;
        return Ok(());
    }
    // Room on both sides, so a curve at the smallest or largest latency is not the axis.
    let x_lo = all
        .iter()
        .map(|p| p.0)
        .fold(f64::INFINITY, f64::min)
        .max(1e-3)
        / 1.5;
    let x_hi = all.iter().map(|p| p.0).fold(0.0, f64::max) * 1.5;
    let y_lo = all
        .iter()
        .map(|p| p.1)
        .filter(|p| *p > 0.0)
        .fold(1.0, f64::min)
        .min(1e-7)
        / 2.0;
    let mut c = ChartBuilder::on(&chart)
        .caption("latency CCDF", ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..1.0).log_scale())?;
    c.configure_mesh()
        .x_desc("latency (µs, log)")
        .y_desc("P(latency > x) (log)")
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()?;
    let mut entries = Vec::new();
    for (k, (name, pts)) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let pts: Vec<(f64, f64)> = pts.iter().map(|&(x, p)| (x, p.max(y_lo))).collect();
        c.draw_series(LineSeries::new(pts, color.stroke_width(2)))?;
        entries.push((name.clone(), color, Mark::Line));
    }
    side_legend(&legend, 60, &entries).map_err(|e| anyhow::anyhow!(e))?;
    root.present()?;
    Ok(())
}

type Panel<'a> = (&'a str, &'a str, Vec<(&'a str, fn(&TimeSeriesRow) -> f64)>);

/// Four panels over simulated time, each with its unit on the y axis and its legend beside
/// it: IOPS, free blocks, write-buffer occupancy, WAF per interval.
pub fn timeseries(path: &Path, rows: &[TimeSeriesRow]) -> Result<()> {
    let root = SVGBackend::new(path, (1000, 1100)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels: [Panel; 4] = [
        (
            "host requests completed per second",
            "IOPS (requests / s)",
            vec![("read", |r| r.read_iops), ("write", |r| r.write_iops)],
        ),
        (
            "free blocks, fewest of any plane",
            "free blocks",
            vec![("free blocks", |r| r.free_blocks_min as f64)],
        ),
        (
            "write buffer occupancy",
            "mapping units",
            vec![("buffered units", |r| r.buffer_units as f64)],
        ),
        (
            "write amplification per interval",
            "WAF (NAND / host pages)",
            vec![("WAF", |r| r.waf)],
        ),
    ];
    let t_hi = rows
        .last()
        .map_or(1.0, |r| r.time_ns as f64 / 1e9)
        .max(1e-9);
    for (area, (title, unit, lines)) in root.split_evenly((4, 1)).iter().zip(panels) {
        let (chart, legend) = area.split_horizontally(810);
        let y_hi = rows
            .iter()
            .flat_map(|r| lines.iter().map(move |l| (l.1)(r)))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
            .max(1e-9)
            * 1.1;
        let mut c = ChartBuilder::on(&chart)
            .caption(title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..t_hi, 0f64..y_hi)?;
        c.configure_mesh()
            .x_desc("simulated time (s)")
            .y_desc(unit)
            .draw()?;
        let mut entries = Vec::new();
        for (k, (name, f)) in lines.into_iter().enumerate() {
            let color = COLORS[k % COLORS.len()];
            let pts = rows
                .iter()
                .map(|r| (r.time_ns as f64 / 1e9, f(r)))
                .filter(|p| p.1.is_finite());
            c.draw_series(LineSeries::new(pts, color.stroke_width(2)))?;
            entries.push((name.to_string(), color, Mark::Line));
        }
        side_legend(&legend, 50, &entries).map_err(|e| anyhow::anyhow!(e))?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A latency CCDF stops at 1/N at the largest sample (it dropped to the bottom of the
    /// axis: probabilities no sample measured), and starts at P = 1 at the smallest.
    #[test]
    fn the_ccdf_stops_at_one_over_n() {
        let mut h = ssdlab_core::stats::new_histogram();
        for v in [1_000u64, 2_000, 2_000, 5_000, 40_000] {
            h.record(v).unwrap();
        }
        let pts = ccdf_curve(&h);
        let min_p = pts.iter().map(|p| p.1).fold(1.0, f64::min);
        assert_eq!(min_p, 1.0 / 5.0);
        assert_eq!(pts.first().unwrap().1, 1.0);
        let last = *pts.last().unwrap();
        assert_eq!(last.1, 0.2);
        assert!((last.0 - 40.0).abs() < 0.1, "{last:?}");
        // A constant latency: a vertical line from 1 to 1/N at it.
        let mut h = ssdlab_core::stats::new_histogram();
        h.record_n(1_000, 4).unwrap();
        assert_eq!(ccdf_curve(&h), vec![(1.0, 1.0), (1.0, 0.25)]);
    }
}
