//! The pieces the experiments' plots (and `ssdlab run`'s) share: series colours, a legend
//! beside a chart, a log-log CCDF panel.

use plotters::prelude::*;
use plotters::style::RGBColor;

/// What a plot function returns: plotters' errors, boxed.
pub type PlotResult<T = ()> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Series colours shared by the plots.
pub const COLORS: [RGBColor; 6] = [
    RGBColor(0, 0, 0),
    RGBColor(220, 50, 32),
    RGBColor(0, 114, 178),
    RGBColor(0, 158, 115),
    RGBColor(230, 159, 0),
    RGBColor(204, 121, 167),
];

/// How a legend entry shows its series.
#[derive(Clone, Copy)]
pub enum Mark {
    Line,
    Bar,
}

/// A legend in `area` (a column of its own beside the chart, so it never covers data):
/// one row per entry, its mark in the entry's colour and its name.
pub fn side_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    top_px: i32,
    entries: &[(String, RGBColor, Mark)],
) -> PlotResult
where
    DB::ErrorType: 'static,
{
    for (i, (name, color, mark)) in entries.iter().enumerate() {
        let y = top_px + 22 * i as i32;
        match mark {
            Mark::Line => area.draw(&PathElement::new(
                vec![(4, y), (28, y)],
                color.stroke_width(2),
            ))?,
            Mark::Bar => area.draw(&Rectangle::new([(8, y - 6), (24, y + 6)], color.filled()))?,
        }
        area.draw(&Text::new(
            name.clone(),
            (34, y - 7),
            ("sans-serif", 14).into_font(),
        ))?;
    }
    Ok(())
}

/// One log-log CCDF chart of `series` (name, (latency µs, P(latency > x))) on `area`;
/// `false` (nothing drawn) when no series has a point.
pub fn ccdf_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    series: &[(&str, Vec<(f64, f64)>)],
) -> PlotResult<bool>
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
