//! `run --request-log`: every completed request of a timed run, as zstd-compressed CSV
//! (`DIR/requests.csv.zst`: `submit_ns,complete_ns,op,offset_bytes,size_bytes,flow`; `flow`
//! is the flow's index in `results.json`'s `latency_ns.per_flow`). Rows go through a zstd
//! stream encoder as they are written, so the file is compressed at every moment (an
//! interrupted run no longer leaves hundreds of MB of plain CSV). It is written into the
//! run's staged directory ([`crate::output::StagedDir`]): on an interrupt or error it is
//! removed with it; only a finished (and so complete) log is moved into `DIR`.

use anyhow::{Context, Result};
use ssdlab_core::sim::timed::{Completion, CompletionSink};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub const HEADER: &str = "submit_ns,complete_ns,op,offset_bytes,size_bytes,flow";

/// The request log's file in a run's output directory.
pub const FILE_NAME: &str = "requests.csv.zst";

/// zstd level 1: the fastest of the standard levels; a request log compresses about 5x.
const LEVEL: i32 = 1;

type Encoder = zstd::stream::write::Encoder<'static, File>;

/// The log being written: rows buffered (1 MiB) in front of the encoder, and the first
/// write error (the sink cannot return one; [`RequestLog::finish`] reports it).
struct State {
    w: BufWriter<Encoder>,
    err: Option<std::io::Error>,
}

pub struct RequestLog {
    path: PathBuf,
    state: Arc<Mutex<State>>,
}

impl RequestLog {
    /// Start `dir/requests.csv.zst`.
    pub fn create(dir: &Path) -> Result<RequestLog> {
        let path = dir.join(FILE_NAME);
        let f = File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let enc = Encoder::new(f, LEVEL).with_context(|| format!("starting {}", path.display()))?;
        let mut w = BufWriter::with_capacity(1 << 20, enc);
        writeln!(w, "{HEADER}").with_context(|| format!("writing {}", path.display()))?;
        Ok(RequestLog {
            path,
            state: Arc::new(Mutex::new(State { w, err: None })),
        })
    }

    /// The sink the simulation calls for every completion.
    pub fn sink(&self) -> CompletionSink {
        let state = Arc::clone(&self.state);
        Box::new(move |c: &Completion| {
            if let Ok(mut s) = state.lock() {
                if s.err.is_some() {
                    return;
                }
                if let Err(e) = writeln!(
                    s.w,
                    "{},{},{},{},{},{}",
                    c.submit_ns,
                    c.complete_ns,
                    c.op.name(),
                    c.offset_bytes,
                    c.size_bytes,
                    c.flow
                ) {
                    s.err = Some(e);
                }
            }
        })
    }

    /// End the zstd stream (after the last row) and report a write error, if any.
    pub fn finish(self) -> Result<PathBuf> {
        let state = Arc::try_unwrap(self.state)
            .map_err(|_| anyhow::anyhow!("request log still in use"))?
            .into_inner()
            .map_err(|_| anyhow::anyhow!("request log writer poisoned"))?;
        let ctx = || format!("writing {}", self.path.display());
        if let Some(e) = state.err {
            return Err(e).with_context(ctx);
        }
        let enc = state
            .w
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(ctx)?;
        enc.finish().with_context(ctx)?.flush().with_context(ctx)?;
        Ok(self.path)
    }
}
