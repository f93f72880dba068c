//! No import circle between the files of `src/`: each file's `crate::…`, `super::…` and
//! `self::…` paths, and a parent's bare paths into the child modules it declares (`use
//! stats::info;` in a `mod.rs`), in `use` lines and inline, name the files it depends on, and that graph must have no
//! cycle, so every layer of the module depends only on the ones below it. A parent `mod.rs`
//! declaring `mod child;` is not an edge by itself; a path into the crate root (`crate::bloom`, the
//! core's re-export) is not a file of `src/module`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
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

/// The module path of a file relative to `src/`: `lib.rs` → [], `module/mod.rs` →
/// [module], `module/bloom/commands/add.rs` → [module, bloom, commands, add].
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// The source without comments and without a trailing `#[cfg(test)]` module (whose
/// `use super::*` names the file itself).
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(p) => &text[..p],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(p) => &l[..p],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Parses a path (`a::b::{c, d::e}`) at the start of `s`, appending every full path it names
/// (each prefixed with `prefix`) to `out`. Returns the bytes consumed.
fn parse_tree(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix.to_vec();
    let mut i = 0;
    let b = s.as_bytes();
    loop {
        while i < b.len() && (b[i] as char).is_whitespace() {
            i += 1;
        }
        if i < b.len() && b[i] == b'{' {
            i += 1;
            loop {
                while i < b.len() && (b[i] == b',' || (b[i] as char).is_whitespace()) {
                    i += 1;
                }
                if i >= b.len() || b[i] == b'}' {
                    return i + 1;
                }
                let used = parse_tree(&s[i..], &path, out);
                if used == 0 {
                    i += 1;
                } else {
                    i += used;
                }
            }
        }
        let start = i;
        while i < b.len() && is_ident(b[i] as char) {
            i += 1;
        }
        if i == start {
            // `*` or the end of the path.
            out.push(path);
            return i + usize::from(i < b.len() && b[i] == b'*');
        }
        path.push(s[start..i].to_string());
        if s[i..].starts_with("::") {
            i += 2;
        } else {
            out.push(path);
            return i;
        }
    }
}

/// The files (relative to `src/`) that `path` may name, longest prefix first: a path naming
/// an item of a parent `mod.rs` maps to that `mod.rs`. None for the crate root.
fn file_of(src: &Path, path: &[String]) -> Option<PathBuf> {
    for k in (1..=path.len()).rev() {
        let dir: PathBuf = path[..k].iter().collect();
        let file = dir.with_extension("rs");
        if src.join(&file).is_file() {
            return Some(file);
        }
        let module = dir.join("mod.rs");
        if src.join(&module).is_file() {
            return Some(module);
        }
    }
    None
}

/// The child modules `code` declares (`mod x;`, `pub mod x;`, `pub(crate) mod x;`).
fn child_modules(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.split_once("mod ")?;
            let vis = rest.0.trim();
            let name = rest.1.strip_suffix(';')?.trim();
            let plain = vis.is_empty() || vis == "pub" || vis.starts_with("pub(");
            (plain && !name.is_empty() && name.chars().all(is_ident)).then(|| name.to_string())
        })
        .collect()
}

/// The files each file of `src/` depends on.
fn import_graph(src: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap().to_path_buf();
        let here = module_path(&rel);
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        let mut paths = Vec::new();
        // Paths from the crate root, from the parent, from this module, and (in a file that
        // declares child modules, e.g. a `mod.rs`) the bare paths into its children.
        let mut roots = vec![
            ("crate::".to_string(), Vec::new()),
            (
                "super::".to_string(),
                here[..here.len().saturating_sub(1)].to_vec(),
            ),
            ("self::".to_string(), here.clone()),
        ];
        for child in child_modules(&code) {
            let mut base = here.clone();
            base.push(child.clone());
            roots.push((format!("{child}::"), base));
        }
        for (keyword, base) in &roots {
            let keyword = keyword.as_str();
            let mut from = 0;
            while let Some(p) = code[from..].find(keyword) {
                let at = from + p;
                from = at + keyword.len();
                let before = code[..at].chars().next_back();
                if before.is_some_and(is_ident) || code[..at].ends_with("::") {
                    continue; // `$crate::`, or `x::super::`
                }
                parse_tree(&code[from..], base, &mut paths);
            }
        }
        let deps: BTreeSet<PathBuf> = paths
            .iter()
            .filter_map(|p| file_of(src, p))
            .filter(|f| *f != rel)
            .collect();
        graph.insert(rel, deps);
    }
    graph
}

/// A cycle of `graph` (its files in order, the first repeated at the end), if any.
fn find_cycle(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Option<Vec<PathBuf>> {
    fn visit(
        node: &PathBuf,
        graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        done: &mut BTreeSet<PathBuf>,
        stack: &mut Vec<PathBuf>,
    ) -> Option<Vec<PathBuf>> {
        if let Some(p) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[p..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, done, stack) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

#[test]
fn no_import_cycle_between_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = import_graph(&src);
    // The graph is real: the commands depend on the filter kinds, which depend on the types.
    let deps = |f: &str| graph.get(Path::new(f)).cloned().unwrap_or_default();
    assert!(deps("module/bloom/commands/add.rs").contains(Path::new("module/bloom/filter/mod.rs")));
    assert!(
        deps("module/bloom/filter/window.rs").contains(Path::new("module/bloom/window_type.rs"))
    );
    assert!(deps("module/stats.rs").contains(Path::new("module/alloc.rs")));
    if let Some(cycle) = find_cycle(&graph) {
        let names: Vec<String> = cycle.iter().map(|p| p.display().to_string()).collect();
        panic!("import cycle between files of src/: {}", names.join(" -> "));
    }
}

#[test]
fn paths_and_cycles_are_found() {
    let mut out = Vec::new();
    parse_tree(
        "module::{args::Arg, reply::{self, Reply}, stats};",
        &[],
        &mut out,
    );
    let joined: Vec<String> = out.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        joined,
        [
            "module::args::Arg",
            "module::reply::self",
            "module::reply::Reply",
            "module::stats"
        ]
    );
    let edge = |a: &str, b: &str| (PathBuf::from(a), BTreeSet::from([PathBuf::from(b)]));
    let cyclic = BTreeMap::from([edge("a.rs", "b.rs"), edge("b.rs", "a.rs")]);
    assert_eq!(
        find_cycle(&cyclic).unwrap(),
        [
            PathBuf::from("a.rs"),
            PathBuf::from("b.rs"),
            PathBuf::from("a.rs")
        ]
    );
    let acyclic = BTreeMap::from([edge("a.rs", "b.rs"), edge("b.rs", "c.rs")]);
    assert_eq!(find_cycle(&acyclic), None);
}

/// A child that uses its parent's item while the parent uses the child's: found through the
/// parent's bare path into its child.
#[test]
fn a_parent_child_circle_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("m")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod m;\n").unwrap();
    std::fs::write(
        src.join("m/mod.rs"),
        "pub mod c;\npub const V: i32 = 1;\npub fn f() -> i32 { c::g() }\n",
    )
    .unwrap();
    std::fs::write(src.join("m/c.rs"), "pub fn g() -> i32 { super::V }\n").unwrap();
    let graph = import_graph(src);
    let cycle: Vec<String> = find_cycle(&graph)
        .expect("the circle m/mod.rs <-> m/c.rs")
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(cycle, ["m/c.rs", "m/mod.rs", "m/c.rs"]);
    // Without the parent's use of its child, no circle.
    std::fs::write(src.join("m/mod.rs"), "pub mod c;\npub const V: i32 = 1;\n").unwrap();
    assert_eq!(find_cycle(&import_graph(src)), None);
}
