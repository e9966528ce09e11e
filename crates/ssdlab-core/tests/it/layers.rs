//! The core's modules form layers: each top-level module (`src/<m>.rs` or `src/<m>/`) may
//! refer (`crate::…`, `$crate::…`) only to modules on lower layers, so there is no import
//! cycle. Read from the sources with `syn`; test code (`#[cfg(test)]` items, `testutil`)
//! is left out. A new top-level module must be given a layer here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Bottom to top; a module may use the modules of the layers before its own.
const LAYERS: &[&[&str]] = &[
    // The ground floor: constants, small shared types, helpers without crate imports.
    &["base", "ids", "prefetch"],
    &["ring", "error", "integrity"],
    &["engine", "flash"],
    // Policy families: their parameters, checks, capabilities and the policies.
    &["policy"],
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

/// Every `crate::<name>` a file refers to, outside test code.
#[derive(Default)]
struct Refs(BTreeSet<String>);

impl Refs {
    fn tokens(&mut self, ts: proc_macro2::TokenStream) {
        let toks: Vec<proc_macro2::TokenTree> = ts.into_iter().collect();
        for (i, t) in toks.iter().enumerate() {
            match t {
                proc_macro2::TokenTree::Group(g) => self.tokens(g.stream()),
                proc_macro2::TokenTree::Ident(id) if id == "crate" => {
                    if let (
                        Some(proc_macro2::TokenTree::Punct(a)),
                        Some(proc_macro2::TokenTree::Punct(b)),
                        Some(proc_macro2::TokenTree::Ident(name)),
                    ) = (toks.get(i + 1), toks.get(i + 2), toks.get(i + 3))
                    {
                        if a.as_char() == ':' && b.as_char() == ':' {
                            self.0.insert(name.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn use_tree(&mut self, t: &syn::UseTree, under_crate: bool) {
        match t {
            syn::UseTree::Path(p) if p.ident == "crate" => self.use_tree(&p.tree, true),
            syn::UseTree::Path(p) if under_crate => {
                self.0.insert(p.ident.to_string());
            }
            syn::UseTree::Name(n) if under_crate => {
                self.0.insert(n.ident.to_string());
            }
            syn::UseTree::Rename(n) if under_crate => {
                self.0.insert(n.ident.to_string());
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|i| self.use_tree(i, under_crate)),
            _ => {}
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
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&u.tree, false);
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let mut segs = p.segments.iter();
        if let (Some(first), Some(second)) = (segs.next(), segs.next()) {
            if first.ident == "crate" {
                self.0.insert(second.ident.to_string());
            }
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// The module graph: top-level module → modules it refers to.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = src();
    let lib = syn::parse_file(&std::fs::read_to_string(root.join("lib.rs")).unwrap()).unwrap();
    // Root items re-exported by lib.rs (`crate::MAX_SLOTS_PER_PAGE`) belong to their module.
    let mut root_items: BTreeMap<String, String> = BTreeMap::new();
    let mut test_only: BTreeSet<String> = BTreeSet::new();
    for item in &lib.items {
        match item {
            syn::Item::Use(u) => {
                fn leaves(
                    t: &syn::UseTree,
                    module: Option<&str>,
                    out: &mut BTreeMap<String, String>,
                ) {
                    match t {
                        syn::UseTree::Path(p) => {
                            let m = module.map(str::to_string).unwrap_or(p.ident.to_string());
                            leaves(&p.tree, Some(&m), out)
                        }
                        syn::UseTree::Name(n) => {
                            out.insert(n.ident.to_string(), module.unwrap_or("").to_string());
                        }
                        syn::UseTree::Rename(r) => {
                            out.insert(r.rename.to_string(), module.unwrap_or("").to_string());
                        }
                        syn::UseTree::Group(g) => {
                            g.items.iter().for_each(|i| leaves(i, module, out))
                        }
                        syn::UseTree::Glob(_) => {}
                    }
                }
                leaves(&u.tree, None, &mut root_items);
            }
            syn::Item::Mod(m) if is_test_only(&m.attrs) => {
                test_only.insert(m.ident.to_string());
            }
            _ => {}
        }
    }
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || test_only.contains(&module) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let mut refs = Refs::default();
        refs.visit_file(&file);
        let deps = g.entry(module.clone()).or_default();
        for r in refs.0 {
            let target = root_items.get(&r).cloned().unwrap_or(r);
            if target != module && !target.is_empty() {
                deps.insert(target);
            }
        }
    }
    g
}

#[test]
fn core_modules_are_layered_without_cycles() {
    let g = graph();
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
    assert!(
        g["base"].is_empty(),
        "base imports nothing: {:?}",
        g["base"]
    );
    for bad in ["ftl", "scheduler", "sim"] {
        assert!(!g["config"].contains(bad), "config uses {bad}");
    }
    for bad in ["config", "ftl", "scheduler", "sim"] {
        assert!(!g["policy"].contains(bad), "policy uses {bad}");
    }
    assert!(g["config"].contains("policy") && g["ftl"].contains("policy"));
}

/// The checker sees the references it must: a path, a grouped `use`, a macro's tokens,
/// and leaves test code out.
#[test]
fn reference_collector_finds_every_form() {
    let text = r#"
        use crate::{a::X, b};
        use crate::c::Y as Z;
        fn f() { crate::d::g(); m!(crate::e::h); }
        #[cfg(test)]
        mod tests { use crate::t::T; }
    "#;
    let mut refs = Refs::default();
    refs.visit_file(&syn::parse_file(text).unwrap());
    let got: Vec<&str> = refs.0.iter().map(String::as_str).collect();
    assert_eq!(got, ["a", "b", "c", "d", "e"]);
}
