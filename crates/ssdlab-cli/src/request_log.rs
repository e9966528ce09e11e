//! `run --request-log`: every completed request of a timed run, as zstd-compressed CSV
//! (`DIR/requests.csv.zst`: `submit_ns,complete_ns,op,offset_bytes,size_bytes,flow`; `flow`
//! is the flow's index in `results.json`'s `latency_ns.per_flow`). Rows stream to a plain
//! temporary file during the run (bounded memory) and are compressed when it ends.

use anyhow::{Context, Result};
use ssdlab_core::sim::timed::{Completion, CompletionSink};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub const HEADER: &str = "submit_ns,complete_ns,op,offset_bytes,size_bytes,flow";

/// The request log's file in a run's output directory.
pub const FILE_NAME: &str = "requests.csv.zst";

pub struct RequestLog {
    part: PathBuf,
    dest: PathBuf,
    writer: Arc<Mutex<BufWriter<File>>>,
}

impl RequestLog {
    /// Start `dir/requests.csv.zst`.
    pub fn create(dir: &Path) -> Result<RequestLog> {
        let part = dir.join("requests.csv.part");
        let dest = dir.join(FILE_NAME);
        let f = File::create(&part).with_context(|| format!("creating {}", part.display()))?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        writeln!(w, "{HEADER}").with_context(|| format!("writing {}", part.display()))?;
        Ok(RequestLog {
            part,
            dest,
            writer: Arc::new(Mutex::new(w)),
        })
    }

    /// The sink the simulation calls for every completion.
    pub fn sink(&self) -> CompletionSink {
        let w = Arc::clone(&self.writer);
        Box::new(move |c: &Completion| {
            if let Ok(mut w) = w.lock() {
                // A write error shows when the log is finished (flush reports it).
                let _ = writeln!(
                    w,
                    "{},{},{},{},{},{}",
                    c.submit_ns,
                    c.complete_ns,
                    c.op.name(),
                    c.offset_bytes,
                    c.size_bytes,
                    c.flow
                );
            }
        })
    }

    /// Flush, compress into `requests.csv.zst` and remove the temporary file.
    pub fn finish(self) -> Result<PathBuf> {
        {
            let mut w = self
                .writer
                .lock()
                .map_err(|_| anyhow::anyhow!("request log writer poisoned"))?;
            w.flush()
                .with_context(|| format!("writing {}", self.part.display()))?;
        }
        let src =
            File::open(&self.part).with_context(|| format!("reading {}", self.part.display()))?;
        let dst = File::create(&self.dest)
            .with_context(|| format!("creating {}", self.dest.display()))?;
        let mut dst = BufWriter::new(dst);
        ruzstd::encoding::compress(
            std::io::BufReader::new(src),
            &mut dst,
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        dst.flush()
            .with_context(|| format!("writing {}", self.dest.display()))?;
        std::fs::remove_file(&self.part)
            .with_context(|| format!("removing {}", self.part.display()))?;
        Ok(self.dest)
    }
}
