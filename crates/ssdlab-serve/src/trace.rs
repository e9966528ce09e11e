//! `--record-trace FILE`: every request the device receives, at its simulated arrival, in
//! blkparse's text format (nanosecond timestamps, 512-byte sectors), which `ssdlab run`
//! replays (`[workload] kind = "trace"`, `format = "blkparse"`, open loop) with the same
//! FTL counters. Reads `R`, writes `W`, trims `D`, flushes `FN` (a flush alone).

use crate::log::Log;
use ssdlab_workload::HostOp;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct TraceWriter {
    path: PathBuf,
    out: Option<BufWriter<std::fs::File>>,
    seq: u64,
    error: Option<std::io::Error>,
}

impl TraceWriter {
    pub fn create(path: &Path) -> std::io::Result<TraceWriter> {
        let f = std::fs::File::create(path)?;
        Ok(TraceWriter {
            path: path.to_path_buf(),
            out: Some(BufWriter::with_capacity(1 << 20, f)),
            seq: 0,
            error: None,
        })
    }

    /// One request arriving at `time_ns`.
    pub fn record(&mut self, time_ns: u64, op: HostOp, offset_bytes: u64, size_bytes: u64) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        self.seq += 1;
        let (s, ns) = (time_ns / 1_000_000_000, time_ns % 1_000_000_000);
        let head = format!("8,0 0 {} {s}.{ns:09} 0 Q", self.seq);
        let r = match op {
            HostOp::Flush => writeln!(out, "{head} FN [ssdlab-serve]"),
            _ => {
                let rwbs = match op {
                    HostOp::Read => "R",
                    HostOp::Write => "W",
                    _ => "D",
                };
                writeln!(
                    out,
                    "{head} {rwbs} {} + {} [ssdlab-serve]",
                    offset_bytes / 512,
                    size_bytes / 512
                )
            }
        };
        if let Err(e) = r {
            self.error = Some(e);
            self.out = None;
        }
    }

    /// Stop recording (what was recorded stays), saying why on `log`. A write error is
    /// kept for [`TraceWriter::finish`].
    pub fn stop(&mut self, why: &str, log: &Log) {
        if self.out.is_some() {
            log.say(&format!(
                "serve: --record-trace {}: {why}",
                self.path.display()
            ));
        }
        self.flush();
        self.out = None;
    }

    /// Flush what is buffered, keeping the first write error.
    fn flush(&mut self) {
        if let Some(out) = self.out.as_mut() {
            if let Err(e) = out.flush() {
                self.error.get_or_insert(e);
            }
        }
    }

    /// Flush what is buffered; the first write error, if any.
    pub fn finish(&mut self) -> std::io::Result<()> {
        self.flush();
        self.error.take().map_or(Ok(()), Err)
    }
}
