//! The shape of the source tree, checked: modules (files and folders) as
//! nodes, `crate::…` and `super::…` paths as arrows. No circle anywhere (a
//! circle is a layer that is not one), and no arrow up the layers the
//! architecture names (docs/architecture.md). A module may use its own
//! parent's items and its children's; that is nesting, not layering.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules from the bottom layer up; an arrow may only point to
/// a module in the same layer or a lower one.
const LAYERS: &[&[&str]] = &[
    &["error", "words", "buffer", "payload"],
    &["units"],
    &["measure", "format", "reference"],
    &["transport"],
    &["stream", "flowgraph"],
    &["options", "output"],
    &["result"],
    &["experiment", "compare"],
    &["report"],
    &["command"],
    &["cli"],
    &["app"],
    &["lib"],
    &["main"],
];

/// Every `.rs` file under `dir` as its module path (`transport::plugin`).
fn modules(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(dir).unwrap().with_extension("");
                let mut parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if parts.len() > 1 && parts.last().map(String::as_str) == Some("mod") {
                    parts.pop();
                }
                out.insert(parts.join("::"), p);
            }
        }
    }
    out
}

/// The source without its test module: tests may reach anywhere.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The module paths named after `prefix` in `text` (`crate::a::b::C` → `a::b::C`).
fn paths_after<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        out.push(rest[..end].trim_end_matches(':'));
    }
    out
}

/// The longest known module a path starts with.
fn resolve(mods: &BTreeMap<String, PathBuf>, path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len())
        .rev()
        .map(|i| parts[..i].join("::"))
        .find(|m| mods.contains_key(m))
}

/// Arrows between modules, nesting (a module and its ancestors) left out.
fn arrows(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(dir);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, p) in &mods {
        let text = code(p);
        let segments: Vec<&str> = m.split("::").collect();
        let mut targets = Vec::new();
        for path in paths_after(&text, "crate::") {
            targets.extend(resolve(&mods, path));
        }
        // `super` is the module one level up, for a file or a folder module.
        let base = segments[..segments.len() - 1].join("::");
        for path in paths_after(&text, "super::") {
            let full = if base.is_empty() {
                path.to_string()
            } else {
                format!("{base}::{path}")
            };
            targets.extend(resolve(&mods, &full));
        }
        for t in targets {
            let nested =
                t == *m || m.starts_with(&format!("{t}::")) || t.starts_with(&format!("{m}::"));
            if !nested {
                g.entry(m.clone()).or_default().insert(t);
            }
        }
    }
    g
}

/// Strongly connected components of more than one module: the circles.
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.g.get(v) {
            for w in ws {
                if !t.index.contains_key(w.as_str()) {
                    visit(t, w);
                    let l = t.low[w.as_str()].min(t.low[v]);
                    t.low.insert(v, l);
                } else if t.on.contains(w.as_str()) {
                    let l = t.index[w.as_str()].min(t.low[v]);
                    t.low.insert(v, l);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut c = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                c.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if c.len() > 1 {
                t.out.push(c);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// The graph at `depth` path segments (1: top-level modules).
fn at_depth(
    g: &BTreeMap<String, BTreeSet<String>>,
    depth: usize,
) -> BTreeMap<String, BTreeSet<String>> {
    let top = |m: &str| m.split("::").take(depth).collect::<Vec<_>>().join("::");
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, bs) in g {
        for b in bs {
            let (ta, tb) = (top(a), top(b));
            let nested = ta == tb
                || ta.starts_with(&format!("{tb}::"))
                || tb.starts_with(&format!("{ta}::"));
            if !nested {
                out.entry(ta).or_default().insert(tb);
            }
        }
    }
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every crate's sources: the library and command line, and the crates
/// under `crates/` (Cargo itself refuses a circle between crates; inside
/// one, only this test does).
fn crate_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v = vec![root.join("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .map(|d| d.flatten().map(|e| e.path().join("src")).collect())
        .unwrap_or_default();
    crates.sort();
    v.extend(crates.into_iter().filter(|p| p.is_dir()));
    v
}

#[test]
fn no_import_circle_at_any_depth() {
    for dir in crate_sources() {
        let g = arrows(&dir);
        assert!(g.len() > 5, "{}: the graph was not read: {} modules", dir.display(), g.len());
        for depth in [1, 2, 3, usize::MAX] {
            let c = circles(&at_depth(&g, depth));
            assert!(
                c.is_empty(),
                "{}: import circles at depth {depth}: {c:?}",
                dir.display()
            );
        }
    }
}

#[test]
fn no_arrow_points_up_the_layers() {
    let layer = |m: &str| {
        let top = m.split("::").next().unwrap_or(m);
        LAYERS
            .iter()
            .position(|l| l.contains(&top))
            .unwrap_or_else(|| {
                panic!("module {top} is in no layer: add it to LAYERS and docs/architecture.md")
            })
    };
    let mut up = Vec::new();
    for (a, bs) in at_depth(&arrows(&src()), 1) {
        for b in bs {
            if layer(&b) > layer(&a) {
                up.push(format!("{a} → {b}"));
            }
        }
    }
    assert!(up.is_empty(), "arrows up the layers: {up:?}");
}

/// The checker finds what it is for: a circle planted in a small tree.
#[test]
fn the_checker_sees_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    let w = |p: &str, s: &str| {
        let f = dir.path().join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, s).unwrap();
    };
    w("lib.rs", "mod a; mod b; mod d; mod e;\n");
    // a → b's folder, whose child c → a: a circle between folders only.
    w("a.rs", "use crate::b::X;\n");
    w("b/mod.rs", "mod c;\n");
    w("b/c.rs", "use crate::a::Y;\nuse super::Z;\n");
    // d ↔ e: a circle between files.
    w("d.rs", "fn f() { crate::e::g() }\n");
    w("e.rs", "use crate::d::R;\n");
    let g = arrows(dir.path());
    assert_eq!(circles(&at_depth(&g, 1)).len(), 2, "{g:?}");
    assert_eq!(circles(&at_depth(&g, usize::MAX)).len(), 1, "{g:?}");
}
