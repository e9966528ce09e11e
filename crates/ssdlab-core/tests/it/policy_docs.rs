//! README.md and docs/config.md list exactly the registry's policies, family by family
//! (the lists are marked with HTML comments; `ssdlab policies` prints the registry).

use ssdlab_core::policy::families;
use std::collections::BTreeMap;
use std::path::Path;

type Lists = BTreeMap<String, Vec<String>>;

fn read(doc: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(doc),
    )
    .unwrap()
}

fn registry() -> Lists {
    families()
        .into_iter()
        .map(|f| {
            let names = f.policies.iter().map(|p| p.name.to_string()).collect();
            (f.table.to_string(), names)
        })
        .collect()
}

/// The words in backticks of `s`, in order.
fn ticked(s: &str) -> Vec<String> {
    s.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// README: the paragraph after `<!-- policy names … -->`, where each family reads
/// ``(`table`: `a`, `b`, …)``.
fn readme_lists(text: &str) -> Lists {
    let start = text
        .find("<!-- policy names")
        .expect("README.md marks its policy names with <!-- policy names … -->");
    let para = text[start..].split("\n\n").next().unwrap();
    let mut out = Lists::new();
    for chunk in para.split('(').skip(1) {
        let inner = chunk.split(')').next().unwrap();
        let Some((table, names)) = inner.split_once(':') else {
            continue;
        };
        let table = ticked(table);
        if table.len() == 1 {
            out.insert(table[0].clone(), ticked(names));
        }
    }
    out
}

/// docs/config.md: the rows between `<!-- policy table -->` and `<!-- /policy table -->`:
/// | `table` (empty: the row above's) | `policy` | … |.
fn config_md_lists(text: &str) -> Lists {
    let start = text
        .find("<!-- policy table -->")
        .expect("docs/config.md marks its policy table");
    let end = text[start..].find("<!-- /policy table -->").unwrap() + start;
    let mut out = Lists::new();
    let mut table = String::new();
    for line in text[start..end]
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
    {
        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
        if let Some(t) = ticked(cols[1]).first() {
            table = t.clone();
        }
        let policy = ticked(cols[2]);
        out.entry(table.clone())
            .or_default()
            .push(policy[0].clone());
    }
    out
}

#[test]
fn docs_list_the_registry_policies() {
    let want = registry();
    assert_eq!(want.len(), 7, "{want:?}");
    assert_eq!(readme_lists(&read("README.md")), want, "README.md");
    assert_eq!(
        config_md_lists(&read("docs/config.md")),
        want,
        "docs/config.md"
    );
}

/// The parsers see a missing or extra name.
#[test]
fn doc_list_parsers_see_every_name() {
    let readme = "x\n<!-- policy names -->\nGC (`ftl.gc`: `greedy`, `fifo`), pools (`ftl.allocation`: `fifo`)\nand more.\n\nnext";
    let got = readme_lists(readme);
    assert_eq!(got["ftl.gc"], ["greedy", "fifo"]);
    assert_eq!(got["ftl.allocation"], ["fifo"]);
    let md = "<!-- policy table -->\n| table | policy | p | m |\n|---|---|---|---|\n| `ftl.gc` | `greedy` | — | x |\n| | `fifo` | — | (`a`) |\n| `ftl.wear_leveling` | `none` | — | y |\n<!-- /policy table -->";
    let got = config_md_lists(md);
    assert_eq!(got["ftl.gc"], ["greedy", "fifo"]);
    assert_eq!(got["ftl.wear_leveling"], ["none"]);
}
