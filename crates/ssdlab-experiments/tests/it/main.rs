//! The experiments' integration tests as one binary (one link instead of one per file).

mod dftl;
mod mq;
mod op;
mod registry;
mod shape;
mod slc;
mod ssr;
mod wl;
mod zns;
