//! docs/config.md documents every key of the configuration (it says so): every key of the
//! bundled configurations, resolved with every default filled in, and of configurations
//! setting the optional keys and the other workload kinds, appears in it as `key`. Workload
//! keys may sit where config.md points for their kind (docs/workloads.md: fio, trace, ext4,
//! as `key` or as a `key = …` line of an example; docs/erase-suspend.md: tpcc; docs/zns.md:
//! the host log-structured layer).

use ssdlab_core::Config;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every dotted key path of `v`'s leaves (tables and arrays of tables walked into).
fn keys(prefix: &str, v: &toml::Value, out: &mut Vec<String>) {
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                keys(&path, x, out);
            }
        }
        toml::Value::Array(a) if a.iter().all(|x| x.is_table()) && !a.is_empty() => {
            for x in a {
                keys(prefix, x, out);
            }
        }
        _ => out.push(prefix.to_string()),
    }
}

/// Optional keys no bundled configuration sets, and the other workload kinds: each
/// replaces configs/default.toml's section from its header to the next one.
const OPTIONAL: &[(&str, &str)] = &[
    (
        "[ftl]",
        r#"[ftl]
mapping = { policy = "dftl", cmt_bytes = 65536 }
regions = [
    { name = "data", content = "data", relocate_to = "data", gc = { policy = "fifo" } },
    { name = "t", content = "translation", bytes = 100000000, pages_per_block = 128, cell_mode = "tlc" },
]
"#,
    ),
    (
        "[workload]",
        "[workload]\nkind = \"trace\"\npath = \"t.csv\"\nformat = \"msr\"\n",
    ),
    (
        "[workload]",
        "[workload]\nkind = \"fio\"\npath = \"j.fio\"\n",
    ),
    ("[workload]", "[workload]\nkind = \"tpcc\"\n"),
    ("[workload]", "[workload]\nkind = \"ext4\"\n"),
];

#[test]
fn every_config_key_is_in_docs_config_md() {
    let doc = std::fs::read_to_string(repo().join("docs/config.md")).unwrap();
    let workload_docs: String = ["docs/workloads.md", "docs/erase-suspend.md", "docs/zns.md"]
        .iter()
        .map(|f| std::fs::read_to_string(repo().join(f)).unwrap())
        .collect();
    let mut texts: Vec<(String, String)> = Vec::new();
    for e in std::fs::read_dir(repo().join("configs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            texts.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
    let default = std::fs::read_to_string(repo().join("configs/default.toml")).unwrap();
    for (section, snippet) in OPTIONAL {
        let (head, tail) = default.split_once(section).unwrap();
        let rest = tail
            .split_once("\n[")
            .map_or(String::new(), |t| format!("\n[{}", t.1));
        let text = format!("{head}{snippet}{rest}");
        texts.push((format!("default.toml with {section} replaced"), text));
    }
    let mut missing = Vec::new();
    for (name, text) in &texts {
        let cfg = Config::from_toml_str(text, name).unwrap();
        let v = toml::Value::try_from(&cfg).unwrap();
        let mut all = Vec::new();
        keys("", &v, &mut all);
        for k in all {
            let top = k.split('.').next().unwrap();
            let last = k.rsplit('.').next().unwrap();
            let ticked = format!("`{last}`");
            let found = doc.contains(&ticked)
                || (top == "workload"
                    && (workload_docs.contains(&ticked)
                        || workload_docs.contains(&format!("\n{last} = "))));
            let section = top == k || doc.contains(&format!("`[{top}]`"));
            if !(found && section) {
                missing.push(format!("{k} ({name})"));
            }
        }
    }
    missing.sort();
    missing.dedup_by(|a, b| a.split(' ').next() == b.split(' ').next());
    assert!(
        missing.is_empty(),
        "keys missing from docs/config.md:\n{}",
        missing.join("\n")
    );
}
