//! Where the server's messages go. The library never prints: each line it has to say (a
//! client refused or closed and why, a power cut, a recovery, results that could not be
//! written, late replies) goes to the [`Log`] its caller gives it, from whichever thread
//! says it; `ssdlab serve` prints them on stderr.

use std::fmt;
use std::sync::Arc;

/// A sink for the server's messages, one line each (no trailing newline), e.g.
/// `serve: connection 3: bad request magic 0x12345678, closing`. Cheap to clone; called
/// from the acceptor, connection and device-loop threads (never on a request's path).
#[derive(Clone)]
pub struct Log(Arc<dyn Fn(&str) + Send + Sync>);

impl Log {
    /// Each line to `sink`.
    pub fn new(sink: impl Fn(&str) + Send + Sync + 'static) -> Log {
        Log(Arc::new(sink))
    }

    /// Lines go nowhere (the default).
    pub fn discard() -> Log {
        Log::new(|_| {})
    }

    /// Say one line.
    pub fn say(&self, line: &str) {
        (self.0)(line)
    }
}

impl Default for Log {
    fn default() -> Log {
        Log::discard()
    }
}

impl fmt::Debug for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Log")
    }
}
