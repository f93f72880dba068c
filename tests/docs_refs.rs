//! The docs stay true: every `docs/format.md` / `docs/commands.md` section cited in a code
//! comment exists, and every repository path named in the contributor docs, the README and the
//! guides in `docs/` exists.

mod common;

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn headings(doc: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(doc)).unwrap();
    text.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim().to_string())
        .collect()
}

#[test]
fn cited_doc_sections_exist() {
    let mut sources = Vec::new();
    for d in [
        "src",
        "core/src",
        "tests",
        "examples",
        "benches",
        "fuzz/fuzz_targets",
        "clients",
    ] {
        sources.extend(common::repo_files(
            &Path::new(ROOT).join(d),
            &["rs", "py", "mjs"],
        ));
    }
    let mut checked = 0;
    let mut bad = Vec::new();
    for f in &sources {
        let text = std::fs::read_to_string(f).unwrap();
        for doc in ["docs/format.md", "docs/commands.md"] {
            let heads = headings(doc);
            let cite = format!("`{doc}` (");
            let mut rest = text.as_str();
            while let Some(i) = rest.find(&cite) {
                rest = &rest[i + cite.len()..];
                let inside = &rest[..rest.find(')').unwrap_or(0)];
                for name in inside.split('"').skip(1).step_by(2) {
                    checked += 1;
                    if !heads.iter().any(|h| h.starts_with(name)) {
                        bad.push(format!("{}: {doc} has no section {name:?}", f.display()));
                    }
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} citations found");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn paths_in_the_docs_exist() {
    let mut bad = Vec::new();
    let mut checked = 0;
    let prefixes = [
        "src/",
        "core/",
        "tests/",
        "examples/",
        "scripts/",
        "bench/",
        "benches/",
        "fuzz/",
        "clients/",
        "docs/",
        ".ci/",
    ];
    // The contributor docs, the README and every guide in docs/.
    let mut docs: Vec<PathBuf> = ["ARCHITECTURE.md", "CONTRIBUTING.md", "README.md"]
        .iter()
        .map(|d| Path::new(ROOT).join(d))
        .collect();
    docs.extend(common::repo_files(&Path::new(ROOT).join("docs"), &["md"]));
    for must in [
        "docs/format.md",
        "docs/commands.md",
        "docs/sizing.md",
        "docs/operations.md",
    ] {
        assert!(
            docs.contains(&Path::new(ROOT).join(must)),
            "{must} not checked"
        );
    }
    for path in &docs {
        let doc = path.strip_prefix(ROOT).unwrap().display();
        let text = std::fs::read_to_string(path).unwrap();
        for (i, span) in text.split('`').enumerate() {
            if i % 2 == 0 || span.contains(' ') {
                continue;
            }
            let path = span.split(['#', ':']).next().unwrap();
            if !prefixes.iter().any(|p| path.starts_with(p)) || path.contains(['*', '<']) {
                continue;
            }
            checked += 1;
            if !Path::new(ROOT).join(path).exists() {
                bad.push(format!("{doc}: `{span}`"));
            }
        }
    }
    assert!(checked > 100, "only {checked} paths found");
    assert!(
        bad.is_empty(),
        "paths that do not exist:\n{}",
        bad.join("\n")
    );
}
