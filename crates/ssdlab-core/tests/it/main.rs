//! The core's integration tests as one binary (one link instead of one per file; a file
//! is a module: `cargo test -p ssdlab-core --test it dftl::` runs one).

mod background;
mod calibration;
mod common;
mod config_docs;
mod config_errors;
mod copy_paths;
mod determinism;
mod dftl;
mod exact_counts;
mod fuzz_config;
mod gc_min_op;
mod golden;
mod host_commands;
mod host_interface;
mod integrity;
mod layers;
mod placement;
mod policies;
mod power_cut;
mod power_cycles;
mod precondition;
mod regions;
mod reliability;
mod retry;
mod serve;
mod slc;
mod subset;
mod suspend;
mod swarm;
mod timing;
mod waf_model;
mod wear_leveling;
mod wear_out;
mod write_tails;
mod zns;
