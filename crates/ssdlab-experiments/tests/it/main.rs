//! The experiments' integration tests as one binary (one link instead of one per file).

mod dftl;
mod op;
mod ssr;
mod wl;
