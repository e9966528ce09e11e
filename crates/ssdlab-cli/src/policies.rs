//! `ssdlab policies`: every policy family, its policies and their parameters with defaults,
//! generated from the core's policy registry (`ssdlab_core::policy::families`).

use clap::Args as ClapArgs;
use ssdlab_core::policy::families;
use std::fmt::Write as _;

#[derive(ClapArgs)]
pub struct Args {}

/// The listing: per family its config table and default, then one line per policy (name
/// and doc) and its parameters with their defaults, as TOML.
pub fn text() -> String {
    let mut o = String::new();
    for f in families() {
        let _ = writeln!(o, "[{}]  policy = \"…\" (default {:?})", f.table, f.default);
        for p in &f.policies {
            let _ = writeln!(o, "  {:<22} {}", p.name, p.doc);
            for (k, v) in &p.params {
                let _ = writeln!(o, "  {:<22}   {k} = {v}", "");
            }
        }
        o.push('\n');
    }
    o
}

pub fn run(_: &Args) -> anyhow::Result<()> {
    print!("{}", text());
    Ok(())
}
