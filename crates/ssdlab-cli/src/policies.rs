//! `ssdlab policies [--markdown]`: every policy family, its policies and their parameters
//! with defaults, generated from the core's policy registry
//! (`ssdlab_core::policy::families`). The docs' policy lists are generated from it too
//! (`ssdlab doc-tables policies policy-names`: docs/config.md's table, README's list).

use clap::Args as ClapArgs;
use ssdlab_core::policy::families;
use std::fmt::Write as _;

#[derive(ClapArgs)]
pub struct Args {
    /// Print the families as a Markdown table (docs/config.md's policy table).
    #[arg(long)]
    markdown: bool,
}

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

/// The listing as a Markdown table: config table (on its family's first row), policy (the
/// default marked), parameters with their defaults, meaning (the registration line's doc).
pub fn markdown() -> String {
    let mut o =
        String::from("| table | policy | parameters (default) | meaning |\n|---|---|---|---|\n");
    for f in families() {
        for (i, p) in f.policies.iter().enumerate() {
            let table = if i == 0 {
                format!("`{}`", f.table)
            } else {
                String::new()
            };
            let default = if p.name == f.default {
                " (default)"
            } else {
                ""
            };
            let params = if p.params.is_empty() {
                "—".to_string()
            } else {
                let kv: Vec<String> = p
                    .params
                    .iter()
                    .map(|(k, v)| format!("`{k}` = `{v}`"))
                    .collect();
                kv.join(", ")
            };
            let _ = writeln!(
                o,
                "| {table} | `{}`{default} | {params} | {} |",
                p.name,
                p.doc.replace('|', "\\|")
            );
        }
    }
    o
}

/// README's sentence naming every family and its policies, wrapped at 100 columns.
pub fn names_markdown() -> String {
    let fams: Vec<String> = families()
        .iter()
        .map(|f| {
            let names: Vec<String> = f.policies.iter().map(|p| format!("`{}`", p.name)).collect();
            format!("{} (`{}`: {})", f.what, f.table, names.join(", "))
        })
        .collect();
    let (last, rest) = fams.split_last().expect("at least one family");
    let sentence = format!("{} and {last}.", rest.join(", "));
    let mut o = String::new();
    let mut line = String::new();
    for word in sentence.split(' ') {
        if !line.is_empty() && line.len() + 1 + word.len() > 100 {
            o.push_str(&line);
            o.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    o.push_str(&line);
    o.push('\n');
    o
}

pub fn run(a: &Args) -> anyhow::Result<()> {
    if a.markdown {
        print!("{}", markdown());
    } else {
        print!("{}", text());
    }
    Ok(())
}
