//! The server's figures as files: `results.json` (the usual document plus a `serve`
//! section), `latency.csv`, `timeseries.csv`, each written to a temporary file and renamed
//! into place, so a reader never sees half a file. When a power cycle ends (a cut), its
//! files are also kept in `power-cycle-N/`.

use crate::device::{Reporter, ServeSummary};
use ssdlab_core::stats::TimeSeriesRow;
use ssdlab_core::Results;
use ssdlab_output::{latency_csv, timeseries_csv, write_atomic};
use std::io;
use std::path::{Path, PathBuf};

pub struct Files {
    pub dir: PathBuf,
}

/// results.json with the `serve` section.
pub fn results_json(r: &Results, serve: &ServeSummary) -> io::Result<String> {
    let mut v = serde_json::to_value(r).map_err(io::Error::other)?;
    if let serde_json::Value::Object(m) = &mut v {
        m.insert(
            "serve".into(),
            serde_json::to_value(serve).map_err(io::Error::other)?,
        );
    }
    Ok(serde_json::to_string_pretty(&v).map_err(io::Error::other)? + "\n")
}

impl Files {
    fn write_into(
        dir: &Path,
        r: &Results,
        serve: &ServeSummary,
        series: &[TimeSeriesRow],
    ) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        if let Some(l) = &r.latency_ns {
            write_atomic(dir, "latency.csv", latency_csv(l).as_bytes())?;
        }
        if !series.is_empty() {
            write_atomic(dir, "timeseries.csv", timeseries_csv(series).as_bytes())?;
        }
        write_atomic(dir, "results.json", results_json(r, serve)?.as_bytes())
    }
}

impl Reporter for Files {
    fn place(&self) -> String {
        self.dir.display().to_string()
    }

    fn report(
        &mut self,
        r: &Results,
        serve: &ServeSummary,
        series: &[TimeSeriesRow],
        cycle_ended: Option<u32>,
    ) -> io::Result<()> {
        if let Some(n) = cycle_ended {
            Self::write_into(&self.dir.join(format!("power-cycle-{n}")), r, serve, series)?;
        }
        Self::write_into(&self.dir, r, serve, series)
    }
}
