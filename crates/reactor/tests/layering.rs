//! Each crate's modules depend on each other one way only.
//!
//! This test reads every crate's sources, finds every path a module names through
//! `crate::` or `super::` (in `use` declarations and in code), follows re-exports to
//! the module that defines the item, and fails if the resulting graph has a cycle,
//! printing the modules of each cycle. A module declaring and re-exporting its own
//! children is not a dependency; inline `#[cfg(test)]` modules are left out (tests
//! may look anywhere). `docs/ARCHITECTURE.md` draws the layers this keeps.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module: its path (`["task", "raw"]`), its code without comments, strings and
/// inline test modules, and what it re-exports (`name` -> full path named).
struct Module {
    code: String,
    reexports: BTreeMap<String, String>,
}

fn main_path(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source with comments, string and char literals blanked out.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') || (b.get(i + 1) == Some(&b'\\')) => {
                // A char literal ('x' or an escape); lifetimes have no closing quote.
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("' '");
            }
            c => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

/// The code before the file's inline test module (by convention at its end).
fn without_inline_tests(code: &str) -> &str {
    let mut end = code.len();
    for marker in ["#[cfg(test)]", "#[cfg(all(test"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(marker) {
            let at = from + at;
            let rest = code[at..].split_once(']').map_or("", |(_, r)| r).trim_start();
            // `mod name {` is inline; `mod name;` is a file of its own, read separately.
            if let Some(after) = rest.strip_prefix("mod ")
                && after
                    .split_once(['{', ';'])
                    .is_some_and(|(_, _)| after.find('{') < after.find(';'))
            {
                end = end.min(at);
            }
            from = at + marker.len();
        }
    }
    &code[..end]
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Expands a `use` tree (`a::{b, c::{d, e as f}}`) into full paths.
fn expand_use(tree: &str, prefix: &str, out: &mut Vec<(String, String)>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim_end_matches("::").trim();
        let inner = &tree[open + 1..tree.rfind('}').unwrap()];
        let base = join(prefix, head);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&inner[start..i], &base, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand_use(&inner[start..], &base, out);
    } else if !tree.is_empty() {
        let (path, alias) = match tree.split_once(" as ") {
            Some((p, a)) => (p.trim(), a.trim()),
            None => (tree, tree.rsplit("::").next().unwrap()),
        };
        out.push((join(prefix, path), alias.to_string()));
    }
}

fn join(prefix: &str, path: &str) -> String {
    match (prefix.is_empty(), path.is_empty()) {
        (true, _) => path.to_string(),
        (_, true) => prefix.to_string(),
        _ => format!("{prefix}::{path}"),
    }
}

/// Every `use` declaration of `code`: (full path, name it is known by, public?).
fn uses(code: &str) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = &rest[..at];
        let boundary = before.chars().last().is_none_or(|c| !is_ident(c));
        let line_start = before.rfind(['\n', ';', '{', '}']).map_or(0, |i| i + 1);
        let prefix = before[line_start..].trim();
        let public = prefix.starts_with("pub");
        let Some(end) = rest[at..].find(';') else { break };
        if boundary && (prefix.is_empty() || public || prefix.starts_with('#')) {
            let mut paths = Vec::new();
            expand_use(&rest[at + 4..at + end], "", &mut paths);
            out.extend(paths.into_iter().map(|(p, a)| (p, a, public)));
        }
        rest = &rest[at + end + 1..];
    }
    out
}

/// Every path starting with `crate::` or `super::` in `code`, outside `use` lines too.
fn paths(code: &str) -> Vec<String> {
    let mut out: Vec<String> = uses(code).into_iter().map(|(p, _, _)| p).collect();
    let chars: Vec<char> = code.chars().collect();
    let text: String = chars.iter().collect();
    for root in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = text[from..].find(root) {
            let at = from + at;
            let boundary = text[..at].chars().last().is_none_or(|c| !is_ident(c) && c != '$');
            let path: String = text[at..].chars().take_while(|&c| is_ident(c) || c == ':').collect();
            if boundary {
                out.push(path.trim_end_matches(':').to_string());
            }
            from = at + root.len();
        }
    }
    out
}

/// The module a path names from `module`, following re-exports: the defining module.
fn resolve(path: &str, module: &[String], modules: &BTreeMap<Vec<String>, Module>, depth: usize) -> Vec<String> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = match segs.first() {
        Some(&"crate") => {
            segs.remove(0);
            Vec::new()
        }
        Some(&"super") => {
            let mut base = module.to_vec();
            while segs.first() == Some(&"super") {
                segs.remove(0);
                base.pop();
            }
            base
        }
        Some(&"self") => {
            segs.remove(0);
            module.to_vec()
        }
        _ => module.to_vec(),
    };
    for seg in segs {
        let mut next = base.clone();
        next.push(seg.to_string());
        if modules.contains_key(&next) {
            base = next;
            continue;
        }
        // An item of `base`: defined there, or re-exported from elsewhere.
        if depth < 8
            && let Some(target) = modules.get(&base).and_then(|m| m.reexports.get(seg))
        {
            return resolve(target, &base, modules, depth + 1);
        }
        break;
    }
    base
}

/// The import cycles among the modules of the crate whose sources are under `root`,
/// each as one line of the modules that reach each other.
fn import_cycles(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut modules = BTreeMap::new();
    for file in &files {
        let code = strip(&std::fs::read_to_string(file).unwrap());
        let code = without_inline_tests(&code).to_string();
        let reexports = uses(&code)
            .into_iter()
            .filter(|(_, _, public)| *public)
            .map(|(path, name, _)| (name, path))
            .collect();
        modules.insert(main_path(root, file), Module { code, reexports });
    }

    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (name, module) in &modules {
        let targets = edges.entry(name.clone()).or_default();
        for path in paths(&module.code) {
            let target = resolve(&path, name, &modules, 0);
            // Not a dependency: itself, the crate root's facade, or its own children.
            if target == *name || target.is_empty() || target.starts_with(name) {
                continue;
            }
            targets.insert(target);
        }
    }

    strongly_connected(&edges)
        .iter()
        .map(|scc| scc.iter().map(|m| m.join("::")).collect::<Vec<_>>().join(" <-> "))
        .collect()
}

/// The workspace's crates whose modules keep layers, by their folder under `crates/`,
/// with the fewest modules each must have (a check that found no sources would pass
/// vacuously).
const CRATES: &[(&str, usize)] = &[
    ("reactor", 20),
    ("scheduler", 15),
    ("net", 20),
    ("macros", 4),
    ("netloop", 3),
    ("sync", 3),
];

#[test]
fn no_crate_has_an_import_cycle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut failures = Vec::new();
    for &(name, at_least) in CRATES {
        let root = crates.join(name).join("src");
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        assert!(
            files.len() >= at_least,
            "found only {} modules under {}",
            files.len(),
            root.display()
        );
        let cycles = import_cycles(&root);
        println!("{name}: {} modules, {} import cycles", files.len(), cycles.len());
        failures.extend(cycles.into_iter().map(|c| format!("{name}: {c}")));
    }
    assert!(
        failures.is_empty(),
        "import cycles among a crate's modules (each line is one group of modules that \
         reach each other); make the lower module independent of the higher one:\n{}",
        failures.join("\n")
    );
}

/// Tarjan's algorithm: the groups of two or more modules that reach each other.
fn strongly_connected(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(v: &'a Vec<String>, s: &mut State<'a>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            let Some((w, _)) = s.edges.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(w, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                group.push(w.clone());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.out.push(group);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(v, &mut s);
        }
    }
    s.out
}

#[test]
fn the_checker_sees_a_cycle() {
    let mut edges = BTreeMap::new();
    let a = vec!["a".to_string()];
    let b = vec!["b".to_string()];
    let c = vec!["c".to_string()];
    edges.insert(a.clone(), BTreeSet::from([b.clone()]));
    edges.insert(b.clone(), BTreeSet::from([a.clone(), c.clone()]));
    edges.insert(c.clone(), BTreeSet::new());
    assert_eq!(strongly_connected(&edges), vec![vec![a, b]]);
}

#[test]
fn use_trees_and_re_exports_resolve_to_the_defining_module() {
    let mut paths = Vec::new();
    expand_use(
        "crate::task::{self, raw::{Header as H, Vtable}, Runnable}",
        "",
        &mut paths,
    );
    let names: Vec<&str> = paths.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "crate::task::self",
            "crate::task::raw::Header",
            "crate::task::raw::Vtable",
            "crate::task::Runnable"
        ]
    );
    let module = |code: &str| Module {
        code: code.to_string(),
        reexports: uses(code)
            .into_iter()
            .filter(|(_, _, p)| *p)
            .map(|(p, n, _)| (n, p))
            .collect(),
    };
    let mut modules = BTreeMap::new();
    modules.insert(vec![], module("mod task;"));
    modules.insert(vec!["task".to_string()], module("mod join; pub use join::Task;"));
    modules.insert(vec!["task".to_string(), "join".to_string()], module("pub struct Task;"));
    modules.insert(vec!["handle".to_string()], module("use crate::task::Task;"));
    let from = vec!["handle".to_string()];
    assert_eq!(resolve("crate::task::Task", &from, &modules, 0), ["task", "join"]);
    assert_eq!(strip("let s = \"crate::x\"; // crate::y\n"), "let s = \"\"; \n");
}
