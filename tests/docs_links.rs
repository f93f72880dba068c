//! Every relative link in the repository's Markdown files leads somewhere: the file exists, and
//! a `#fragment` names a heading of that file (GitHub's anchors). External links are not
//! fetched.

mod common;

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The lines of `text` outside fenced code blocks, with their 1-based line numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        match fence {
            Some(f) if t.starts_with(f) => fence = None,
            Some(_) => {}
            None if t.starts_with("```") || t.starts_with("~~~") => fence = Some(&t[..3]),
            None => out.push((i + 1, line)),
        }
    }
    out
}

/// `line` with its inline code spans (`` `…` ``) blanked out.
fn without_code(line: &str) -> String {
    let mut out = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 0 {
            out.push_str(part);
        } else {
            out.push(' ');
        }
    }
    out
}

/// The anchor GitHub gives a heading's text: lowercase, punctuation other than `-` and `_`
/// dropped, each space a `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor of a Markdown file's headings, duplicates numbered `-1`, `-2`, … as GitHub does.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut a = base.clone();
        let mut n = 0;
        while seen.contains(&a) {
            n += 1;
            a = format!("{base}-{n}");
        }
        seen.insert(a);
    }
    seen
}

/// The targets of the inline links and images of a line of prose (`[text](target "title")`).
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code(line);
    let mut out = Vec::new();
    let mut rest = line.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        out.push(target.trim_matches(['<', '>']).to_string());
        rest = &rest[end..];
    }
    // Reference definitions: `[name]: target`.
    let t = line.trim_start();
    if t.starts_with('[') {
        if let Some(i) = t.find("]: ") {
            out.push(
                t[i + 3..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_string(),
            );
        }
    }
    out
}

/// `base/rel` with `.` and `..` resolved lexically.
fn join(base: &Path, rel: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(rel).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The problems of every relative link in `files` (all of them Markdown files under [`ROOT`]).
fn broken_links(files: &[PathBuf]) -> (usize, Vec<String>) {
    let root = Path::new(ROOT);
    let mut checked = 0;
    let mut bad = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let shown = f.strip_prefix(root).unwrap_or(f).display().to_string();
        for (n, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.is_empty()
                    || target.contains("://")
                    || target.starts_with("mailto:")
                    || target.starts_with("//")
                {
                    continue;
                }
                checked += 1;
                let (path, fragment) = match target.split_once('#') {
                    Some((p, frag)) => (p, Some(frag)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    f.clone()
                } else {
                    join(f.parent().unwrap(), path)
                };
                if !file.starts_with(root) || !file.exists() {
                    bad.push(format!("{shown}:{n}: {target}: no such file"));
                    continue;
                }
                if let Some(frag) = fragment {
                    let is_md = file.extension().is_some_and(|e| e == "md");
                    let text = std::fs::read_to_string(&file).unwrap_or_default();
                    if !is_md || !anchors(&text).contains(&frag.to_lowercase()) {
                        bad.push(format!("{shown}:{n}: {target}: no heading #{frag} there"));
                    }
                }
            }
        }
    }
    (checked, bad)
}

#[test]
fn anchors_follow_githubs_rules() {
    assert_eq!(slug("`INFO bf`"), "info-bf");
    assert_eq!(
        slug("Where false positives come from (`fp_layers.rs`, no server needed)"),
        "where-false-positives-come-from-fp_layersrs-no-server-needed"
    );
    assert_eq!(
        slug("Memory: creating and freeing filters"),
        "memory-creating-and-freeing-filters"
    );
    let doc = "# A\n## B c\n```\n# not a heading\n```\n## B c\n### B  c?\n#nospace\n";
    let want: BTreeSet<String> = ["a", "b-c", "b-c-1", "b--c"].map(String::from).into();
    assert_eq!(anchors(doc), want);
    assert_eq!(
        link_targets("see [x](a.md#b) and ![i](p.png \"t\"), not `[y](z.md)`"),
        ["a.md#b", "p.png"]
    );
}

#[test]
fn a_broken_link_is_reported() {
    let dir = tempfile::Builder::new()
        .prefix("docs-links")
        .tempdir_in(Path::new(ROOT).join("target"))
        .unwrap();
    let doc = dir.path().join("doc.md");
    std::fs::write(
        &doc,
        "# Title\n\n## Part two\n\n[ok](#part-two) [ok](doc.md#title) [gone](missing.md)\n\
         [bad](#part-three) [bad](../../README.md#no-such-heading) [web](https://example.com/x)\n",
    )
    .unwrap();
    let (checked, bad) = broken_links(&[doc]);
    assert_eq!(checked, 5);
    assert_eq!(bad.len(), 3, "{bad:#?}");
    assert!(bad[0].ends_with("missing.md: no such file"), "{}", bad[0]);
    assert!(bad[1].contains("no heading #part-three"), "{}", bad[1]);
    assert!(bad[2].contains("no heading #no-such-heading"), "{}", bad[2]);
}

#[test]
fn every_relative_link_resolves() {
    let files = common::repo_files(Path::new(ROOT), &["md"]);
    let names: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(ROOT).unwrap().display().to_string())
        .collect();
    for must in [
        "README.md",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "ARCHITECTURE.md",
        "BENCHMARKS.md",
        "docs/commands.md",
        "docs/format.md",
        "docs/sizing.md",
        "docs/window-filters.md",
        "docs/checking-locally.md",
        "clients/js/README.md",
    ] {
        assert!(names.iter().any(|n| n == must), "{must} not scanned");
    }
    let (checked, bad) = broken_links(&files);
    assert!(checked > 60, "only {checked} links found");
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}
