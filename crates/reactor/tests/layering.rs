//! Each crate's files depend on each other one way only, as a reader sees them.
//!
//! This test finds every library crate of the workspace (the members of the root
//! `Cargo.toml`), walks each one's module tree from its root file through its `mod`
//! declarations (`#[path]` honoured), and reads every path a module names: its `use`
//! declarations and the paths in its code that start with `crate::`, `super::`,
//! `self::`, a child module or a module it imported. A path is an edge to the module
//! it names *as written*: `crate::a::b::Item` names `a::b`, whether `Item` is defined
//! there or only re-exported, because that is the file a reader opens. Declaring a
//! child (`mod child;`) and re-exporting its items without using them is the tree's
//! shape, not an edge. The nodes are files: an inline module belongs to its file.
//! The test fails if a crate's graph has a cycle, printing each group of files that
//! reach each other with the edges between them. Modules under `#[cfg(test)]` are
//! left out (tests may look anywhere).
//!
//! A second test keeps the crates in `DIRECT_IMPORTS` to the stricter rule that an
//! import names the module that defines its item, never one that re-exports it.
//! `docs/ARCHITECTURE.md` draws the layers these keep.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path inside its crate: `["task", "raw"]`; the crate root is `[]`.
type ModPath = Vec<String>;

/// A module: its code without comments, strings, inline test modules and its own
/// inline child modules (each of those is a module of its own), and the module whose
/// file holds it (itself, unless it is an inline module).
struct Module {
    code: String,
    file: ModPath,
}

/// The source with comments and the contents of string and char literals blanked
/// out, byte for byte: an offset in the result is the same offset in the source.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut blank = |from: usize, to: usize| {
        for byte in &mut out[from..to.min(b.len())] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let start = i;
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                blank(start, i);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let start = i;
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
                blank(start, i);
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#')) && (i == 0 || !is_ident(b[i - 1] as char)) => {
                // A raw string: r"…", r#"…"#.
                let mut j = i + 1;
                while b.get(j) == Some(&b'#') {
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(j - i - 1));
                let end = src[j + 1..].find(&close).map_or(b.len(), |e| j + 1 + e);
                blank(j + 1, end);
                i = end + close.len();
            }
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                blank(start, i);
                i += 1;
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') || (b.get(i + 1) == Some(&b'\\')) => {
                // A char literal ('x' or an escape); lifetimes have no closing quote.
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                blank(start, i);
                i += 1;
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).unwrap()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether a `cfg` predicate holds only under `cfg(test)`: `test`, or `all(test, …)`.
fn test_only(cfg: &str) -> bool {
    let cfg: String = cfg.chars().filter(|c| !c.is_whitespace()).collect();
    cfg == "test" || (cfg.starts_with("all(") && cfg[4..].split([',', ')']).any(|p| p == "test"))
}

/// A `mod` declaration found in a module's code.
struct ModDecl {
    name: String,
    /// `#[path = "…"]`, if given.
    path: Option<String>,
    /// The body of an inline module: stripped, and as written.
    inline: Option<(String, String)>,
    test_only: bool,
}

/// Splits `code` into the module's own code and its `mod` declarations; inline
/// modules' bodies are taken out of the module's code.
fn split_modules(code: &str, original: &str) -> (String, Vec<ModDecl>) {
    let mut own = String::new();
    let mut decls = Vec::new();
    let mut rest_from = 0;
    let mut from = 0;
    while let Some(at) = code[from..].find("mod ") {
        let at = from + at;
        from = at + 4;
        if code[..at].chars().last().is_some_and(is_ident) {
            continue;
        }
        let after = &code[at + 4..];
        let name: String = after.trim_start().chars().take_while(|&c| is_ident(c)).collect();
        let tail = after.trim_start()[name.len()..].trim_start();
        if name.is_empty() || !(tail.starts_with('{') || tail.starts_with(';')) {
            continue;
        }
        // The attributes right before the item, over its visibility (`pub(crate)`).
        let mut scan = code[..at].trim_end();
        if scan.ends_with(')')
            && let Some(open) = scan.rfind("pub(")
        {
            scan = scan[..open].trim_end();
        }
        scan = scan.strip_suffix("pub").unwrap_or(scan).trim_end();
        let mut attrs = Vec::new();
        while scan.ends_with(']') {
            let Some(open) = scan.rfind("#[") else { break };
            // `#[path]`'s string is blanked in `code`: read it from the source, whose
            // offsets are the same.
            attrs.push(original[open + 2..scan.len() - 1].to_string());
            scan = scan[..open].trim_end();
        }
        let test_only = attrs.iter().any(|a| {
            a.strip_prefix("cfg(")
                .and_then(|a| a.strip_suffix(')'))
                .is_some_and(test_only)
        });
        let path = attrs.iter().find_map(|a| {
            let value = a.trim().strip_prefix("path")?.trim().strip_prefix('=')?.trim();
            Some(value.trim_matches('"').to_string())
        });
        let body_at = at + 4 + (after.len() - tail.len());
        let inline = if tail.starts_with('{') {
            let mut depth = 0;
            let mut end = body_at;
            for (i, c) in code[body_at..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = body_at + i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            own.push_str(&code[rest_from..body_at + 1]);
            rest_from = end;
            from = end;
            Some((
                code[body_at + 1..end].to_string(),
                original[body_at + 1..end].to_string(),
            ))
        } else {
            None
        };
        decls.push(ModDecl {
            name,
            path,
            inline,
            test_only,
        });
    }
    own.push_str(&code[rest_from..]);
    // A `mod` declaration names nothing: blank it, so that its name is no mention.
    let mut from = 0;
    while let Some(at) = own[from..].find("mod ") {
        let at = from + at;
        from = at + 4;
        if own[..at].chars().last().is_some_and(is_ident) {
            continue;
        }
        let name_end = at
            + 4
            + own[at + 4..]
                .find(|c: char| !is_ident(c) && c != ' ')
                .unwrap_or(own.len() - at - 4);
        own.replace_range(at..name_end, &" ".repeat(name_end - at));
    }
    (own, decls)
}

/// The modules of the crate whose root file is `root`, by walking its `mod` tree.
fn crate_modules(root: &Path) -> BTreeMap<ModPath, Module> {
    let mut modules = BTreeMap::new();
    let source = std::fs::read_to_string(root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    let dir = root.parent().unwrap().to_path_buf();
    add_module(
        Vec::new(),
        Vec::new(),
        &strip(&source),
        &source,
        (dir.clone(), dir),
        &mut modules,
    );
    modules
}

/// Adds the module `path` (in the file of module `file`) with code `code`; `dirs` are
/// the folder its child files are in, and the one a `#[path]` is relative to (its
/// file's).
fn add_module(
    path: ModPath,
    file: ModPath,
    code: &str,
    original: &str,
    dirs: (PathBuf, PathBuf),
    modules: &mut BTreeMap<ModPath, Module>,
) {
    let (dir, file_dir) = dirs;
    let (own, decls) = split_modules(code, original);
    // Two inline modules of one name under different `cfg`s are one module.
    let module = modules.entry(path.clone()).or_insert_with(|| Module {
        code: String::new(),
        file: file.clone(),
    });
    module.code.push_str(&own);
    for decl in decls {
        if decl.test_only {
            continue;
        }
        let mut child = path.clone();
        child.push(decl.name.clone());
        match decl.inline {
            Some((body, original)) => {
                let dirs = (dir.join(&decl.name), file_dir.clone());
                add_module(child, file.clone(), &body, &original, dirs, modules);
            }
            None => {
                let file = match &decl.path {
                    Some(p) => file_dir.join(p),
                    None if dir.join(format!("{}.rs", decl.name)).exists() => dir.join(format!("{}.rs", decl.name)),
                    None => dir.join(&decl.name).join("mod.rs"),
                };
                let source = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                let child_dir = if file.file_name().is_some_and(|n| n == "mod.rs") {
                    file.parent().unwrap().to_path_buf()
                } else {
                    file.with_extension("")
                };
                let file_dir = file.parent().unwrap().to_path_buf();
                add_module(
                    child.clone(),
                    child,
                    &strip(&source),
                    &source,
                    (child_dir, file_dir),
                    modules,
                );
            }
        }
    }
}

/// Expands a `use` tree (`a::{b, c::{d, e as f}}`) into full paths and their names.
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
            Some((p, a)) => (join(prefix, p.trim()), a.trim().to_string()),
            None => {
                let path = join(prefix, tree);
                // `a::b::{self}` is known as `b`.
                let alias = path.rsplit("::").find(|s| *s != "self").unwrap_or("self").to_string();
                (path, alias)
            }
        };
        out.push((path, alias));
    }
}

fn join(prefix: &str, path: &str) -> String {
    match (prefix.is_empty(), path.is_empty()) {
        (true, _) => path.to_string(),
        (_, true) => prefix.to_string(),
        _ => format!("{prefix}::{path}"),
    }
}

/// A `use` declaration's paths: (full path, name it is known by, whether the
/// declaration is `pub`, the crate's API; `pub(crate)` and `pub(super)` are not).
type Uses = Vec<(String, String, bool)>;

/// Every `use` declaration of `code`, and the code with those declarations blanked out.
fn uses(code: &str) -> (Uses, String) {
    let mut out = Vec::new();
    let mut rest = code.to_string();
    let mut from = 0;
    while let Some(at) = rest[from..].find("use ") {
        let at = from + at;
        let before = &rest[..at];
        let boundary = before.chars().last().is_none_or(|c| !is_ident(c));
        let line_start = before.rfind(['\n', ';', '{', '}']).map_or(0, |i| i + 1);
        // The visibility, after the attributes on the same line.
        let prefix = before[line_start..].rsplit(']').next().unwrap().trim();
        let Some(end) = rest[at..].find(';').map(|e| at + e) else {
            break;
        };
        if boundary && (prefix.is_empty() || prefix.starts_with("pub")) {
            let public = prefix == "pub";
            let mut paths = Vec::new();
            expand_use(&rest[at + 4..end], "", &mut paths);
            out.extend(paths.into_iter().map(|(path, alias)| (path, alias, public)));
            rest.replace_range(at..end, &" ".repeat(end - at));
        }
        from = end + 1;
    }
    (out, rest)
}

/// The paths in `code` that start with `crate::`, `super::`, `self::` or one of
/// `locals` (a child module, or a name imported by a `use`).
fn code_paths(code: &str, locals: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("::") {
        let at = from + at;
        from = at + 2;
        let start = code[..at].rfind(|c: char| !is_ident(c)).map_or(0, |i| i + 1);
        let head = &code[start..at];
        // A path's first segment: not after `::`, `$` (`$crate`), `.` or an ident.
        let prev = code[..start].chars().last();
        if head.is_empty() || prev.is_some_and(|c| c == ':' || c == '$' || c == '.') {
            continue;
        }
        if head == "crate" || head == "super" || head == "self" || locals.contains(head) {
            let path: String = code[start..].chars().take_while(|&c| is_ident(c) || c == ':').collect();
            out.push(path.trim_end_matches(':').to_string());
        }
    }
    out
}

/// Whether `word` occurs in `code` as a whole identifier.
fn mentions(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(at, _)| {
        code[..at].chars().last().is_none_or(|c| !is_ident(c))
            && code[at + word.len()..].chars().next().is_none_or(|c| !is_ident(c))
    })
}

/// The module a path names from `module`, as written: the longest prefix of the
/// path that is a module, and the segment after it (`None`: the whole path is one). `None` for a path
/// outside the crate (`std::…`, another crate), and for an imported name that is not
/// a module.
fn named_module(
    path: &str,
    module: &[String],
    modules: &BTreeMap<ModPath, Module>,
    imported: &BTreeMap<String, ModPath>,
) -> Option<(ModPath, Option<String>)> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    if segs.len() > 1 && segs.last() == Some(&"self") {
        segs.pop();
    }
    let mut base: ModPath = match segs.first() {
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
        Some(first) => {
            let mut child = module.to_vec();
            child.push(first.to_string());
            if modules.contains_key(&child) {
                segs.remove(0);
                child
            } else if let Some(target) = imported.get(*first) {
                segs.remove(0);
                target.clone()
            } else {
                return None;
            }
        }
        None => return None,
    };
    for seg in segs {
        base.push(seg.to_string());
        if !modules.contains_key(&base) {
            base.pop();
            return Some((base, Some(seg.to_string())));
        }
    }
    Some((base, None))
}

/// What a bare path's first segment may name in module `name`, given its `uses`: the
/// modules of the crate it imported (`use crate::a;`, by the name imported), and the
/// names a code path may start with (those, and its child modules).
fn scope(
    name: &ModPath,
    uses: &Uses,
    modules: &BTreeMap<ModPath, Module>,
) -> (BTreeMap<String, ModPath>, BTreeSet<String>) {
    let imported: BTreeMap<String, ModPath> = uses
        .iter()
        .filter_map(
            |(path, alias, _)| match named_module(path, name, modules, &BTreeMap::new()) {
                Some((target, None)) => Some((alias.clone(), target)),
                _ => None,
            },
        )
        .collect();
    let mut locals: BTreeSet<String> = imported.keys().cloned().collect();
    locals.extend(
        modules
            .keys()
            .filter(|k| k.len() == name.len() + 1 && k.starts_with(name))
            .map(|k| k.last().unwrap().clone()),
    );
    (imported, locals)
}

/// Each file's edges (a file by the module it holds): the files its modules name,
/// other than itself. A module's `use` of an item of its own descendant that the
/// module's code never mentions is a re-export, the tree's shape rather than a
/// dependency.
fn edges(modules: &BTreeMap<ModPath, Module>) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    let file_of = |m: &ModPath| modules[m].file.clone();
    for (name, module) in modules {
        let (uses, code) = uses(&module.code);
        let (imported, locals) = scope(name, &uses, modules);
        let targets = edges.entry(module.file.clone()).or_default();
        for (path, alias, _) in &uses {
            if let Some((target, _)) = named_module(path, name, modules, &BTreeMap::new())
                && file_of(&target) != module.file
                && (!target.starts_with(&module.file) || mentions(&code, alias))
            {
                targets.insert(file_of(&target));
            }
        }
        for path in code_paths(&code, &locals) {
            if let Some((target, _)) = named_module(&path, name, modules, &imported)
                && file_of(&target) != module.file
            {
                targets.insert(file_of(&target));
            }
        }
    }
    edges
}

/// The imports of a crate that name one of its items through a module that only
/// re-exports it: private `use`s and paths in code (a public `use` is the crate's
/// API, which may gather items from anywhere).
fn indirect_imports(modules: &BTreeMap<ModPath, Module>) -> Vec<String> {
    let show = |m: &ModPath| {
        if m.is_empty() {
            "crate".to_string()
        } else {
            format!("crate::{}", m.join("::"))
        }
    };
    let reexports: BTreeMap<&ModPath, BTreeMap<String, String>> = modules
        .iter()
        .map(|(name, module)| (name, uses(&module.code).0.into_iter().map(|(p, a, _)| (a, p)).collect()))
        .collect();
    let mut out = BTreeSet::new();
    for (name, module) in modules {
        let (uses, code) = uses(&module.code);
        let (imported, locals) = scope(name, &uses, modules);
        let private = uses
            .iter()
            .filter(|(_, _, public)| !public)
            .map(|(path, _, _)| path.clone());
        for path in private.chain(code_paths(&code, &locals)) {
            let Some((target, Some(item))) = named_module(&path, name, modules, &imported) else {
                continue;
            };
            // A re-export of another crate's item (a shim such as `loom`) or of a
            // macro defined beside it (`pub(crate) use name;`) is where the crate
            // defines that name.
            if modules[&target].file != module.file
                && let Some(from) = reexports[&target].get(&item)
                && from.contains("::")
                && named_module(from, &target, modules, &BTreeMap::new()).is_some()
            {
                out.insert(format!(
                    "{}: `{path}` names {}, which re-exports `{item}` from `{from}`",
                    show(name),
                    show(&target)
                ));
            }
        }
    }
    out.into_iter().collect()
}

/// The import cycles among the modules of a crate, each as one line of the modules
/// that reach each other, with the edges between them.
fn import_cycles(modules: &BTreeMap<ModPath, Module>) -> Vec<String> {
    let edges = edges(modules);
    let show = |m: &ModPath| {
        if m.is_empty() {
            "(root)".to_string()
        } else {
            m.join("::")
        }
    };
    strongly_connected(&edges)
        .iter()
        .map(|scc| {
            let members: BTreeSet<&ModPath> = scc.iter().collect();
            let inner: Vec<String> = scc
                .iter()
                .map(|m| {
                    let to: Vec<String> = edges[m].iter().filter(|t| members.contains(t)).map(show).collect();
                    format!("    {} -> {}", show(m), to.join(", "))
                })
                .collect();
            format!(
                "{} modules: {}\n{}",
                scc.len(),
                scc.iter().map(show).collect::<Vec<_>>().join(" <-> "),
                inner.join("\n")
            )
        })
        .collect()
}

/// The root file of each library crate of the workspace: (package folder, root).
fn workspace_crates(workspace: &Path) -> Vec<(String, PathBuf)> {
    let manifest = std::fs::read_to_string(workspace.join("Cargo.toml")).unwrap();
    let members = manifest.split_once("members = [").unwrap().1.split_once(']').unwrap().0;
    let mut out = Vec::new();
    for member in members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
    {
        let dir = workspace.join(member);
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        // `[lib] path = "…"`, else `src/lib.rs`.
        let lib_path = manifest
            .split_once("[lib]")
            .map(|(_, lib)| lib.split_once("\n[").map_or(lib, |(l, _)| l))
            .and_then(|lib| lib.lines().find_map(|l| l.trim().strip_prefix("path")))
            .map(|p| p.trim().trim_start_matches('=').trim().trim_matches('"').to_string());
        let root = dir.join(lib_path.as_deref().unwrap_or("src/lib.rs"));
        if root.exists() {
            out.push((member.to_string(), root));
        }
    }
    out
}

/// Crates whose modules must be found, with the fewest modules each has (a check
/// that found no sources would pass vacuously).
const AT_LEAST: &[(&str, usize)] = &[
    ("crates/reactor", 20),
    ("crates/scheduler", 15),
    ("crates/sync", 10),
    ("crates/io", 10),
    ("crates/net", 20),
    ("crates/macros", 4),
    ("crates/netloop", 3),
    ("crates/tokio", 1),
];

#[test]
fn no_crate_has_an_import_cycle() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let crates = workspace_crates(&workspace);
    let mut failures = Vec::new();
    for (name, root) in &crates {
        let modules = crate_modules(root);
        let cycles = import_cycles(&modules);
        println!("{name}: {} modules, {} import cycles", modules.len(), cycles.len());
        if let Some(&(_, at_least)) = AT_LEAST.iter().find(|(n, _)| n == name) {
            assert!(
                modules.len() >= at_least,
                "found only {} modules in {name}",
                modules.len()
            );
        }
        failures.extend(cycles.into_iter().map(|c| format!("{name}: {c}")));
    }
    for (name, _) in AT_LEAST {
        assert!(
            crates.iter().any(|(n, _)| n == name),
            "{name} is not a workspace member"
        );
    }
    assert!(
        failures.is_empty(),
        "import cycles among a crate's modules, each group of modules that reach each \
         other with the edges inside it (a path names the module it is written with, \
         not the one a re-export leads to); import each item from the module that \
         defines it, and make the lower module independent of the higher one:\n{}",
        failures.join("\n")
    );
}

/// The crates whose imports each name the module that defines their item (the
/// others print how many do not).
const DIRECT_IMPORTS: &[&str] = &["crates/scheduler"];

#[test]
fn imports_name_the_module_that_defines_their_item() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut failures = Vec::new();
    for (name, root) in workspace_crates(&workspace) {
        let found = indirect_imports(&crate_modules(&root));
        println!("{name}: {} imports through a re-export", found.len());
        if DIRECT_IMPORTS.contains(&name.as_str()) {
            failures.extend(found.into_iter().map(|f| format!("{name}: {f}")));
        }
    }
    assert!(
        failures.is_empty(),
        "imports inside a crate that name an item through a module that re-exports it; \
         name the module that defines it:\n{}",
        failures.join("\n")
    );
}

/// Tarjan's algorithm: the groups of two or more modules that reach each other.
fn strongly_connected(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    fn visit<'a>(v: &'a ModPath, s: &mut State<'a>) {
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

/// A crate from `(file, source)` pairs, as `crate_modules` reads one from disk.
fn modules_of(files: &[(&str, &str)]) -> BTreeMap<ModPath, Module> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("layering-{}-{n}", std::process::id()));
    for (file, source) in files {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, source).unwrap();
    }
    let modules = crate_modules(&dir.join("lib.rs"));
    std::fs::remove_dir_all(&dir).unwrap();
    modules
}

fn m(path: &str) -> ModPath {
    path.split("::").filter(|s| !s.is_empty()).map(String::from).collect()
}

#[test]
fn use_trees_expand_to_full_paths() {
    let mut paths = Vec::new();
    expand_use(
        "crate::task::{self, raw::{Header as H, Vtable}, Runnable}",
        "",
        &mut paths,
    );
    assert_eq!(
        paths,
        [
            ("crate::task::self".to_string(), "task".to_string()),
            ("crate::task::raw::Header".to_string(), "H".to_string()),
            ("crate::task::raw::Vtable".to_string(), "Vtable".to_string()),
            ("crate::task::Runnable".to_string(), "Runnable".to_string()),
        ]
    );
    assert_eq!(strip("let s = \"crate::x\"; // y\n"), "let s = \"        \";     \n");
    assert_eq!(strip("r#\"crate\"#; '\"'"), "r#\"     \"#; ' '");
}

#[test]
fn a_path_names_the_module_it_is_written_with_not_where_a_re_export_leads() {
    let modules = modules_of(&[
        ("lib.rs", "mod task; mod handle;"),
        ("task/mod.rs", "mod join; pub use join::Task;"),
        ("task/join.rs", "pub struct Task;"),
        (
            "handle.rs",
            "use crate::task::Task; fn f() { crate::task::join::Task; }",
        ),
    ]);
    let edges = edges(&modules);
    assert_eq!(edges[&m("handle")], BTreeSet::from([m("task"), m("task::join")]));
    // Declaring a child and re-exporting its items is the tree's shape, no dependency.
    assert_eq!(edges[&m("task")], BTreeSet::new());
    assert_eq!(edges[&m("")], BTreeSet::new());
}

#[test]
fn a_child_importing_from_a_parent_that_uses_it_is_a_cycle() {
    let parent = "mod id; mod builder; pub use id::Id; pub use builder::Builder; \
                  pub struct Runtime; impl Runtime { fn new() -> Builder { Builder } }";
    let modules = modules_of(&[
        ("lib.rs", "mod runtime;"),
        ("runtime/mod.rs", parent),
        ("runtime/id.rs", "pub struct Id;"),
        (
            "runtime/builder.rs",
            "use super::{Id, Runtime}; pub struct Builder(Id);",
        ),
    ]);
    let cycles = import_cycles(&modules);
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(
        cycles[0].starts_with("2 modules: runtime <-> runtime::builder"),
        "{}",
        cycles[0]
    );
    // With `Runtime` in a leaf below the builder, the builder names no module above it.
    let modules = modules_of(&[
        ("lib.rs", "mod runtime;"),
        (
            "runtime/mod.rs",
            "mod id; mod rt; mod builder; pub use id::Id; pub use builder::Builder;",
        ),
        ("runtime/id.rs", "pub struct Id;"),
        ("runtime/rt.rs", "pub struct Runtime;"),
        (
            "runtime/builder.rs",
            "use super::id::Id; use super::rt::Runtime; pub struct Builder(Id); \
             impl Runtime { fn new() -> Builder { Builder } }",
        ),
    ]);
    assert_eq!(import_cycles(&modules), Vec::<String>::new());
}

#[test]
fn code_paths_through_child_and_imported_modules_count_and_inline_modules_are_their_file() {
    let modules = modules_of(&[
        (
            "lib.rs",
            "mod a; mod b; pub mod c { pub use super::a::X; } fn main() { a::f(); } \
             #[cfg(test)] mod tests { use crate::b; }",
        ),
        ("a.rs", "use crate::b; pub struct X; fn f() { b::g(); }"),
        ("b.rs", "#[path = \"b_impl.rs\"] mod imp; fn g() { crate::c::X; }"),
        ("b_impl.rs", "fn h() { super::g(); self::h(); }"),
    ]);
    assert!(modules.contains_key(&m("b::imp")));
    assert!(!modules.contains_key(&m("tests")));
    let edges = edges(&modules);
    assert!(!edges.contains_key(&m("c")), "an inline module is part of its file");
    assert_eq!(edges[&m("")], BTreeSet::from([m("a")]));
    assert_eq!(edges[&m("a")], BTreeSet::from([m("b")]));
    assert_eq!(edges[&m("b")], BTreeSet::from([m("")]));
    assert_eq!(edges[&m("b::imp")], BTreeSet::from([m("b")]));
    assert_eq!(import_cycles(&modules).len(), 1);
}
