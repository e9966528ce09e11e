//! The layers of the simulator. The lowest are crates of their own, where the compiler keeps
//! them apart (a crate cannot name one that depends on it): `ssdlab-engine` (event queue,
//! rings, large arrays) → `ssdlab-flash` (with `base` and `ids`) → `ssdlab-policy`; the core
//! re-exports them under their old module paths. Inside the core, this test keeps the
//! layering: each top-level module (`src/<m>.rs` or `src/<m>/`) may refer only to modules
//! on lower layers, by whichever path it takes — `crate::m`, `$crate::m`, a `super::` chain
//! that reaches the crate root (`super::super::m`), or a root item lib.rs re-exports
//! (`crate::Config`) — so there is no import cycle. An import that would hide what it uses
//! is refused: a glob of the crate root (`use crate::*`, `use super::*` in a top-level
//! module) and a rename of the root (`use crate as c`, `extern crate self as c`). Read from
//! the sources with `syn`; test code (`#[cfg(test)]` items, `testutil`) is left out. A new
//! top-level module must be given a layer here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Bottom to top; a module may use the modules of the layers before its own.
const LAYERS: &[&[&str]] = &[
    // The crates below the core (engine; flash, base, ids; policy families) and the
    // workload crate: the compiler keeps them below.
    &[
        "ssdlab_engine",
        "ssdlab_flash",
        "ssdlab_policy",
        "ssdlab_workload",
    ],
    &["error", "integrity"],
    // Configuration: holds the families' config enums; knows no FTL or scheduler.
    &["config"],
    &["cache", "scheduler"],
    &["ftl"],
    &["stats"],
    // What a host request means (`host::command`), for every driver.
    &["host"],
    &["sim"],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// The module path of a source file below `src/`: `ftl/jobs/copy.rs` → `[ftl, jobs, copy]`,
/// `ftl/mod.rs` → `[ftl]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut p: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if p.last().is_some_and(|l| l == "mod") {
        p.pop();
    }
    p
}

fn is_punct(t: Option<&proc_macro2::TokenTree>, c: char) -> bool {
    matches!(t, Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == c)
}

/// Every root name (top-level module or re-exported item) a file refers to, outside test
/// code, and the imports that would hide what they use.
struct Refs {
    /// The module being read: the file's module path, then any inline `mod`s.
    here: Vec<String>,
    names: BTreeSet<String>,
    hidden: Vec<String>,
}

impl Refs {
    fn new(here: Vec<String>) -> Self {
        Refs {
            here,
            names: BTreeSet::new(),
            hidden: Vec::new(),
        }
    }

    /// The module a path's first segment stands for (`crate`, `self`, `super`), or `None`
    /// (another crate, or a name in scope).
    fn start(&self, first: &str) -> Option<Vec<String>> {
        match first {
            "crate" => Some(Vec::new()),
            "self" => Some(self.here.clone()),
            "super" => self.here.split_last().map(|(_, parent)| parent.to_vec()),
            _ => None,
        }
    }

    /// A path `crate::m::…`, `super::super::m::…`, …: the root name it reaches, if any.
    /// A chain that stays below the crate root stays inside the file's own top-level
    /// module.
    fn path(&mut self, segs: &[String]) {
        let Some(mut at) = segs.first().and_then(|s| self.start(s)) else {
            return;
        };
        for s in &segs[1..] {
            if s == "super" {
                at.pop();
                continue;
            }
            if at.is_empty() {
                self.names.insert(s.clone());
            }
            return;
        }
    }

    /// A `use` tree; `at` is the module reached so far (`None` before the first segment).
    fn use_tree(&mut self, t: &syn::UseTree, at: Option<&[String]>) {
        let root = at.is_some_and(|m| m.is_empty());
        match t {
            syn::UseTree::Path(p) => {
                let id = p.ident.to_string();
                let next = match at {
                    None => match self.start(&id) {
                        Some(m) => m,
                        None => return,
                    },
                    Some(m) if id == "super" => m.split_last().map_or(vec![], |(_, p)| p.to_vec()),
                    Some(_) if root => {
                        self.names.insert(id);
                        return;
                    }
                    Some(_) => return,
                };
                self.use_tree(&p.tree, Some(&next));
            }
            syn::UseTree::Name(n) if root => {
                self.names.insert(n.ident.to_string());
            }
            syn::UseTree::Rename(r) => {
                let id = r.ident.to_string();
                let names_root = match at {
                    None => self.start(&id).is_some_and(|m| m.is_empty()),
                    Some(m) => id == "self" && m.is_empty(),
                };
                if names_root {
                    self.hidden.push(format!(
                        "`{id} as {}`: a rename of the crate root",
                        r.rename
                    ));
                } else if root {
                    self.names.insert(id);
                }
            }
            syn::UseTree::Glob(_) if root => {
                self.hidden
                    .push("a glob import of the crate root".to_string());
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|i| self.use_tree(i, at)),
            _ => {}
        }
    }

    /// Paths inside a macro's tokens (`$crate::m`, `crate::m`, `super::m`).
    fn tokens(&mut self, ts: proc_macro2::TokenStream) {
        let toks: Vec<proc_macro2::TokenTree> = ts.into_iter().collect();
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                proc_macro2::TokenTree::Group(g) => self.tokens(g.stream()),
                proc_macro2::TokenTree::Ident(id)
                    if !(i >= 2
                        && is_punct(toks.get(i - 1), ':')
                        && is_punct(toks.get(i - 2), ':')) =>
                {
                    let mut segs = vec![id.to_string()];
                    let mut j = i + 1;
                    while is_punct(toks.get(j), ':') && is_punct(toks.get(j + 1), ':') {
                        let Some(proc_macro2::TokenTree::Ident(next)) = toks.get(j + 2) else {
                            break;
                        };
                        segs.push(next.to_string());
                        j += 3;
                    }
                    self.path(&segs);
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Refs {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs = match i {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Const(c) => &c.attrs,
            _ => return syn::visit::visit_item(self, i),
        };
        if !is_test_only(attrs) {
            syn::visit::visit_item(self, i);
        }
    }
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let inline = m.content.is_some();
        if inline {
            self.here.push(m.ident.to_string());
        }
        syn::visit::visit_item_mod(self, m);
        if inline {
            self.here.pop();
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&u.tree, None);
    }
    fn visit_item_extern_crate(&mut self, e: &'ast syn::ItemExternCrate) {
        if e.ident == "self" {
            self.hidden
                .push("`extern crate self`: a rename of the crate root".to_string());
        }
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() {
            let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            self.path(&segs);
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// lib.rs: its modules, and what each root name it re-exports stands for (the top-level
/// module or the crate it comes from: `crate::Config` → `config`, `crate::flash` →
/// `ssdlab_flash`).
struct Root {
    modules: BTreeSet<String>,
    test_only: BTreeSet<String>,
    reexports: BTreeMap<String, Vec<String>>,
}

impl Root {
    fn read(root: &Path) -> Root {
        let lib = syn::parse_file(&std::fs::read_to_string(root.join("lib.rs")).unwrap()).unwrap();
        fn leaves(
            t: &syn::UseTree,
            prefix: &mut Vec<String>,
            out: &mut BTreeMap<String, Vec<String>>,
        ) {
            match t {
                syn::UseTree::Path(p) => {
                    prefix.push(p.ident.to_string());
                    leaves(&p.tree, prefix, out);
                    prefix.pop();
                }
                syn::UseTree::Name(n) => {
                    let mut full = prefix.clone();
                    full.push(n.ident.to_string());
                    out.insert(n.ident.to_string(), full);
                }
                syn::UseTree::Rename(r) => {
                    let mut full = prefix.clone();
                    if r.ident != "self" {
                        full.push(r.ident.to_string());
                    }
                    out.insert(r.rename.to_string(), full);
                }
                syn::UseTree::Group(g) => g.items.iter().for_each(|i| leaves(i, prefix, out)),
                syn::UseTree::Glob(_) => panic!("lib.rs: a glob re-export hides what it brings"),
            }
        }
        let mut r = Root {
            modules: BTreeSet::new(),
            test_only: BTreeSet::new(),
            reexports: BTreeMap::new(),
        };
        for item in &lib.items {
            match item {
                syn::Item::Use(u) => leaves(&u.tree, &mut Vec::new(), &mut r.reexports),
                syn::Item::Mod(m) if is_test_only(&m.attrs) => {
                    r.test_only.insert(m.ident.to_string());
                }
                syn::Item::Mod(m) => {
                    r.modules.insert(m.ident.to_string());
                }
                _ => {}
            }
        }
        r
    }

    /// The top-level module or crate a root name stands for.
    fn resolve(&self, name: &str) -> String {
        let mut name = name.to_string();
        for _ in 0..8 {
            if self.modules.contains(&name) {
                return name;
            }
            match self.reexports.get(&name).and_then(|p| p.first()) {
                Some(first) if first == "crate" || first == "self" => {
                    name = self.reexports[&name][1].clone()
                }
                Some(first) if *first != name => name = first.clone(),
                _ => return name,
            }
        }
        name
    }
}

/// The module graph (top-level module → modules and crates it refers to) and the imports
/// that hide what they use.
fn graph() -> (BTreeMap<String, BTreeSet<String>>, Vec<String>) {
    let root = src();
    let lib = Root::read(&root);
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut hidden = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap();
        let here = module_path(rel);
        let module = here[0].clone();
        if module == "lib" || lib.test_only.contains(&module) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let mut refs = Refs::new(here);
        refs.visit_file(&file);
        hidden.extend(
            refs.hidden
                .iter()
                .map(|h| format!("{}: {h}", rel.display())),
        );
        let deps = g.entry(module.clone()).or_default();
        for r in refs.names {
            let target = lib.resolve(&r);
            if target != module {
                deps.insert(target);
            }
        }
    }
    (g, hidden)
}

#[test]
fn core_modules_are_layered_without_cycles() {
    let (g, hidden) = graph();
    assert!(
        hidden.is_empty(),
        "imports that hide what they use:\n{}",
        hidden.join("\n")
    );
    let layer_of = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let mut wrong = Vec::new();
    for (m, deps) in &g {
        let Some(lm) = layer_of(m) else {
            wrong.push(format!("module `{m}` has no layer in tests/it/layers.rs"));
            continue;
        };
        for d in deps {
            match layer_of(d) {
                Some(ld) if ld < lm => {}
                Some(ld) => wrong.push(format!(
                    "`{m}` (layer {lm}) uses `{d}` (layer {ld}): a module may use lower layers only"
                )),
                None => wrong.push(format!("`{m}` uses `{d}`, which has no layer")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}\ngraph: {g:#?}", wrong.join("\n"));
    // The graph is what the layers say it is: the rules the refactor set.
    for bad in ["ftl", "scheduler", "sim"] {
        assert!(!g["config"].contains(bad), "config uses {bad}");
    }
    // The re-exported crates resolve: the core reaches the policies through `crate::policy`.
    assert!(g["config"].contains("ssdlab_policy") && g["ftl"].contains("ssdlab_policy"));
    assert!(g["ftl"].contains("ssdlab_flash") && g["sim"].contains("ssdlab_engine"));
}

fn refs_of(here: &[&str], text: &str) -> Refs {
    let mut refs = Refs::new(here.iter().map(|s| s.to_string()).collect());
    refs.visit_file(&syn::parse_file(text).unwrap());
    refs
}

/// The checker sees the references it must: a path, a grouped `use`, a macro's tokens,
/// and leaves test code out.
#[test]
fn reference_collector_finds_every_form() {
    let text = r#"
        use crate::{a::X, b};
        use crate::c::Y as Z;
        fn f() { crate::d::g(); m!(crate::e::h); }
        macro_rules! k { () => { $crate::f::F } }
        #[cfg(test)]
        mod tests { use crate::t::T; }
    "#;
    let refs = refs_of(&["m"], text);
    let got: Vec<&str> = refs.names.iter().map(String::as_str).collect();
    assert_eq!(got, ["a", "b", "c", "d", "e", "f"]);
    assert!(refs.hidden.is_empty());
}

/// The ways around a `crate::` check are seen: `super` chains reaching the crate root (in
/// paths, grouped and nested `use`s, macros, inline modules), while chains that stay in
/// the file's own top-level module are not references.
#[test]
fn super_chains_are_resolved() {
    let text = r#"
        use super::super::super::config::Config;
        use super::{super::super::host, sibling::S};
        fn f() -> super::super::super::stats::Stats { super::super::is_record(0); m!(super::super::super::sim::run) }
        mod inner {
            use super::super::super::super::cache::WriteBuffer;
            use super::super::not_root::X;
        }
    "#;
    let refs = refs_of(&["ftl", "jobs", "copy"], text);
    let got: Vec<&str> = refs.names.iter().map(String::as_str).collect();
    assert_eq!(got, ["cache", "config", "host", "sim", "stats"]);
    assert!(refs.hidden.is_empty());
    // One level up from a top-level module is the root.
    let refs = refs_of(&["cache"], "fn f() { super::ftl::Ftl::new(); }");
    assert_eq!(refs.names.iter().collect::<Vec<_>>(), ["ftl"]);
}

/// Imports that would hide what a file uses are reported, and globs below the root are not.
#[test]
fn root_globs_and_renames_are_refused() {
    for (here, text) in [
        (&["cache"][..], "use crate::*;"),
        (&["cache"][..], "use super::*;"),
        (&["ftl", "jobs"][..], "use super::super::*;"),
        (&["ftl", "jobs"][..], "use super::{super::*, x};"),
        (&["cache"][..], "use crate as c;"),
        (&["cache"][..], "use super as c;"),
        (&["cache"][..], "extern crate self as c;"),
        (&["cache"][..], "mod inner { use super::super::*; }"),
    ] {
        let refs = refs_of(here, text);
        assert_eq!(
            refs.hidden.len(),
            1,
            "{text} in {here:?}: {:?}",
            refs.hidden
        );
    }
    for (here, text) in [
        (&["ftl", "jobs"][..], "use super::*;"),
        (&["ftl"][..], "use crate::ftl::jobs::*;"),
        (&["ftl"][..], "use std::collections::*;"),
        (
            &["ftl"][..],
            "#[cfg(test)] mod tests { use super::*; use crate::*; }",
        ),
    ] {
        let refs = refs_of(here, text);
        assert!(
            refs.hidden.is_empty(),
            "{text} in {here:?}: {:?}",
            refs.hidden
        );
    }
}

/// Root names resolve through lib.rs's re-exports to their module or crate.
#[test]
fn root_reexports_resolve() {
    let lib = Root::read(&src());
    assert_eq!(lib.resolve("Config"), "config");
    assert_eq!(lib.resolve("MAX_SLOTS_PER_PAGE"), "ssdlab_flash");
    assert_eq!(lib.resolve("flash"), "ssdlab_flash");
    assert_eq!(lib.resolve("base"), "ssdlab_flash");
    assert_eq!(lib.resolve("ring"), "ssdlab_engine");
    assert_eq!(lib.resolve("policy"), "ssdlab_policy");
    assert_eq!(lib.resolve("ftl"), "ftl");
}
