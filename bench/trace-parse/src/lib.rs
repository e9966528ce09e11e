//! Nothing here: the crate holds the trace-parsing benchmark (`trace_parse.rs`).
