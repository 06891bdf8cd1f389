//! The shape of the source tree, checked: modules (files and folders) as
//! nodes, `crate::…` and `super::…` paths as arrows. No circle anywhere (a
//! circle is a layer that is not one), and no arrow up the layers the
//! architecture names (docs/architecture.md). A module may use its own
//! parent's items and its children's; that is nesting, not layering.
//! And every `unsafe` block or impl anywhere in the repository says why it
//! is sound, in a `// SAFETY:` comment right before it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each crate's source folder and its top-level modules from the bottom
/// layer up; an arrow may only point to a module in the same layer or a
/// lower one. Between crates Cargo itself refuses a circle, and the crate
/// graph is checked against docs/architecture.md below.
const CRATES: &[(&str, &[&[&str]])] = &[
    (
        "crates/core/src",
        &[
            &["error", "words", "children"],
            &["units", "buffer", "payload", "fifo"],
            &["measure"],
            &["limits"],
            &["lib"],
        ],
    ),
    (
        "crates/transport/src",
        &[
            &["guard", "slots", "peer"],
            &["fd"],
            &["thread", "shm", "pipe", "tcp", "udp", "unix", "unix_dgram"],
            &["plugin", "cuda", "mpi", "remote"],
            &["lib"],
        ],
    ),
    (
        "crates/fio/src",
        &[
            &["distribution", "pattern", "diskstats", "logs"],
            &["job"],
            &["checksum", "offsets", "net", "jobfile"],
            &["blocksizes", "content", "files", "verify", "cmdline"],
            &["engine"],
            &["intervals", "fiostats"],
            &["resources"],
            &["worker"],
            &["result"],
            &["output"],
            &["lib"],
        ],
    ),
    (
        "crates/xferbench/src",
        &[
            &["format", "reference", "flowgraph", "output"],
            &["options"],
            &["result"],
            &["experiment", "compare"],
            &["report"],
            &["command"],
            &["lib"],
        ],
    ),
    ("src", &[&["cli"], &["app"], &["main"]]),
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

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every crate's sources: the command line's and the crates under
/// `crates/`, each of which must be named in `CRATES`.
fn crate_sources() -> Vec<PathBuf> {
    let mut v = vec![root().join("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .map(|d| d.flatten().map(|e| e.path().join("src")).collect())
        .unwrap_or_default();
    crates.sort();
    v.extend(crates.into_iter().filter(|p| p.is_dir()));
    for dir in &v {
        let rel = dir.strip_prefix(root()).unwrap();
        assert!(
            CRATES.iter().any(|(d, _)| Path::new(d) == rel),
            "{}: a crate no layer table names: add it to CRATES and docs/architecture.md",
            rel.display()
        );
    }
    v
}

#[test]
fn no_import_circle_at_any_depth() {
    let mut total = 0;
    for dir in crate_sources() {
        let g = arrows(&dir);
        total += g.values().map(BTreeSet::len).sum::<usize>();
        for depth in [1, 2, 3, usize::MAX] {
            let c = circles(&at_depth(&g, depth));
            assert!(
                c.is_empty(),
                "{}: import circles at depth {depth}: {c:?}",
                dir.display()
            );
        }
    }
    assert!(total > 100, "the graph was not read: {total} arrows in all");
}

#[test]
fn no_arrow_points_up_the_layers() {
    let mut up = Vec::new();
    for (dir, layers) in CRATES {
        let layer = |m: &str| {
            let top = m.split("::").next().unwrap_or(m);
            layers.iter().position(|l| l.contains(&top)).unwrap_or_else(|| {
                panic!("{dir}: module {top} is in no layer: add it to CRATES and docs/architecture.md")
            })
        };
        let g = at_depth(&arrows(&root().join(dir)), 1);
        for (a, bs) in &g {
            for b in bs {
                if layer(b) > layer(a) {
                    up.push(format!("{dir}: {a} → {b}"));
                }
            }
        }
        // Every module is in a layer, also one that imports nothing.
        for m in modules(&root().join(dir)).keys() {
            layer(m);
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

/// `cargo metadata` for the workspace's own crates (no resolution: works
/// offline with nothing downloaded).
fn metadata() -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--no-deps",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The crate graph Cargo builds is the one docs/architecture.md draws: its
/// table of crates lists each workspace crate and the workspace crates it
/// depends on, and nothing else.
#[test]
fn the_crate_graph_is_the_documented_one() {
    let meta = metadata();
    let members: BTreeSet<String> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["source"].is_null())
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    let mut cargo: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["source"].is_null())
    {
        let deps = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null() && members.contains(d["name"].as_str().unwrap()))
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect();
        cargo.insert(p["name"].as_str().unwrap().to_string(), deps);
    }
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let section = doc
        .split("<!-- crate graph -->")
        .nth(1)
        .expect("docs/architecture.md has no <!-- crate graph --> table");
    let mut documented: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
    {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let names = |c: &str| -> BTreeSet<String> {
            c.split(',')
                .map(|n| n.trim().trim_matches('`').to_string())
                .filter(|n| members.contains(n))
                .collect()
        };
        if let Some(name) = names(cells[1]).into_iter().next() {
            documented.insert(name, names(cells[3]));
        }
    }
    assert_eq!(
        cargo, documented,
        "Cargo's crate graph (left) and the documented one (right)"
    );
}

/// Every crate a package needs to build on this machine, as `cargo tree`
/// lists them: its normal dependencies and theirs (dev and build aside).
fn normal_closure(name: &str) -> BTreeSet<String> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            name,
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The library needs no command-line crate, and the measurement core no
/// plotting either: an embedder pulls only what measuring needs.
#[test]
fn the_library_needs_no_command_line() {
    let cli = ["clap", "indicatif", "signal-hook"];
    let lib = normal_closure("xferbench");
    assert!(
        lib.len() > 10,
        "the library's dependencies were not read: {lib:?}"
    );
    for c in cli {
        assert!(!lib.contains(c), "the xferbench library depends on {c}");
    }
    for krate in ["xferbench-core", "xferbench-transport", "xferbench-fio"] {
        let deps = normal_closure(krate);
        for c in cli.iter().chain(&["plotters"]) {
            assert!(!deps.contains(*c), "{krate} depends on {c}");
        }
    }
    assert!(
        normal_closure("xferbench-cli").contains("clap"),
        "the check reads nothing"
    );
}

/// Each line of `text` with comments and the insides of string and char
/// literals blanked out (a literal may span lines), so that a word in a
/// comment or a string is not taken for code.
fn code_lines(text: &str) -> Vec<String> {
    #[derive(PartialEq)]
    enum In {
        Code,
        Str,
        /// A raw string closed by `"` and this many `#`.
        Raw(usize),
        Block,
    }
    let mut state = In::Code;
    let mut out = Vec::new();
    for line in text.lines() {
        let c: Vec<char> = line.chars().collect();
        let mut kept = String::new();
        let mut i = 0;
        while i < c.len() {
            match state {
                In::Code if c[i] == '/' && c.get(i + 1) == Some(&'/') => break,
                In::Code if c[i] == '/' && c.get(i + 1) == Some(&'*') => {
                    state = In::Block;
                    i += 2;
                    continue;
                }
                In::Code if c[i] == '"' => state = In::Str,
                In::Code if c[i] == 'r' && matches!(c.get(i + 1), Some('"' | '#')) => {
                    let hashes = c[i + 1..].iter().take_while(|&&x| x == '#').count();
                    let ident = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
                    if c.get(i + 1 + hashes) == Some(&'"') && (!ident || c[i - 1] == 'b') {
                        state = In::Raw(hashes);
                        i += hashes + 2;
                        continue;
                    }
                    kept.push(c[i]);
                }
                In::Code if c[i] == '\'' => {
                    // A char literal ('x', '\n', '\u{1F600}'), not a lifetime.
                    let end = if c.get(i + 1) == Some(&'\\') {
                        let rest = c.get(i + 3..).unwrap_or_default();
                        rest.iter().position(|&x| x == '\'').map(|p| i + 3 + p)
                    } else {
                        (c.get(i + 2) == Some(&'\'')).then_some(i + 2)
                    };
                    match end {
                        Some(e) => {
                            kept.push_str("' '");
                            i = e + 1;
                            continue;
                        }
                        None => kept.push(c[i]),
                    }
                }
                In::Code => kept.push(c[i]),
                In::Str if c[i] == '\\' => i += 1,
                In::Str if c[i] == '"' => state = In::Code,
                In::Raw(n)
                    if c[i] == '"' && c[i + 1..].iter().take_while(|&&x| x == '#').count() >= n =>
                {
                    state = In::Code;
                    i += n;
                }
                In::Block if c[i] == '*' && c.get(i + 1) == Some(&'/') => {
                    state = In::Code;
                    i += 1;
                }
                In::Str | In::Raw(_) | In::Block => {}
            }
            i += 1;
        }
        out.push(kept);
    }
    out
}

/// Whether a line of code (from [`code_lines`]) opens an `unsafe` block or
/// an `unsafe impl`: the places whose soundness the code must argue.
fn opens_unsafe(code: &str) -> bool {
    // Words and opening braces; other punctuation only separates them.
    let mut tokens: Vec<String> = Vec::new();
    let mut word = String::new();
    for ch in code.chars().chain([' ']) {
        if ch.is_alphanumeric() || ch == '_' {
            word.push(ch);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        if ch == '{' {
            tokens.push("{".into());
        }
    }
    tokens
        .windows(2)
        .any(|w| w[0] == "unsafe" && (w[1] == "{" || w[1] == "impl"))
        || tokens.last().is_some_and(|t| t == "unsafe")
}

/// The lines (1-based) of `text` that open an unsafe block or impl with no
/// `// SAFETY:` comment of their own: one on the same line, or a comment
/// ending within the 3 lines before it (a longer comment may start further
/// up) that says `SAFETY:`, with no other unsafe block in between, so one
/// comment does not stand for two blocks.
fn unsafe_without_safety(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let code = code_lines(text);
    let is_comment = |l: &str| l.trim_start().starts_with("//");
    let mut bare = Vec::new();
    for (i, c) in code.iter().enumerate() {
        if !opens_unsafe(c) || lines[i].contains("SAFETY:") {
            continue;
        }
        let mut argued = false;
        for j in (i.saturating_sub(3)..i).rev() {
            if opens_unsafe(&code[j]) {
                break;
            }
            if is_comment(lines[j]) {
                let top = (0..=j).rev().take_while(|&k| is_comment(lines[k])).last();
                argued = (top.unwrap_or(j)..=j).any(|k| lines[k].contains("SAFETY:"));
                break;
            }
        }
        if !argued {
            bare.push(i + 1);
        }
    }
    bare
}

/// Every `.rs` file of the repository's own (build output aside).
fn rust_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            // A symlink is not followed: the fake sysfs trees under
            // tests/data link back to their parents, as sysfs does.
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if name != "target" && !name.starts_with('.') {
                    stack.push(p);
                }
            } else if name.ends_with(".rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Every unsafe block and `unsafe impl`, in every crate, the command line,
/// the examples, tests and fuzz targets, says why it is sound in a
/// `// SAFETY:` comment right before it: the invariant it relies on, how
/// long the pointer lives, which length was checked.
#[test]
fn every_unsafe_block_says_why_it_is_sound() {
    let (mut seen, mut bare) = (0, Vec::new());
    for p in rust_files() {
        let text = std::fs::read_to_string(&p).unwrap();
        seen += code_lines(&text).iter().filter(|c| opens_unsafe(c)).count();
        for line in unsafe_without_safety(&text) {
            bare.push(format!(
                "{}:{line}",
                p.strip_prefix(root()).unwrap().display()
            ));
        }
    }
    assert!(
        seen > 100,
        "the unsafe blocks were not found: {seen} in all"
    );
    assert!(
        bare.is_empty(),
        "unsafe without a `// SAFETY:` comment right before it (say what makes it sound):\n{}",
        bare.join("\n")
    );
}

/// The check finds what it is for, and only that: blocks without their
/// own comment, not words in comments and strings.
#[test]
fn the_checker_sees_an_unexplained_unsafe_block() {
    let u = "unsafe";
    let text = [
        "fn f(p: *const u8) -> u8 {".to_string(),
        "    // SAFETY: p points to a live byte.".to_string(),
        format!("    let a = {u} {{ *p }};"),
        format!("    let b = {u} {{ *p }};"),
        "    // Only a comment.".to_string(),
        format!("    let c = {u} {{ *p }};"),
        format!("    let d = {u} {{ *p }}; // SAFETY: as above."),
        "    // SAFETY: a comment longer than three lines,".to_string(),
        "    // still one comment,".to_string(),
        "    // so it still counts,".to_string(),
        "    // for the block after it.".to_string(),
        format!("    let e = {u} {{ *p }};"),
        format!("    let s = \"{u} {{ in a string\"; // {u} {{ in a comment"),
        format!("    let r = r#\"{u} {{\"#; let q = '\"'; let t = \"{u} {{\";"),
        format!("    /* {u} {{ */ a + b + c + d + e"),
        "}".to_string(),
        "struct P(*const u8);".to_string(),
        format!("{u} impl Send for P {{}}"),
    ]
    .join("\n");
    assert_eq!(unsafe_without_safety(&text), vec![4, 6, 18]);
    let seen = code_lines(&text).iter().filter(|c| opens_unsafe(c)).count();
    assert_eq!(seen, 6, "{:#?}", code_lines(&text));
}
