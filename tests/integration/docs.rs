//! The documentation's links, checked offline: every relative link and anchor in README.md,
//! DESIGN.md, CONTRIBUTING.md and `docs/` resolves to a file of the repository and, for a
//! `#anchor`, to a heading of that page (anchors as mdBook and GitHub make them: lower
//! case, spaces to `-`, punctuation dropped, `-1`, `-2` … for repeats). Links to the web
//! are not followed (no test reaches the internet), and a page of `docs/` may not link out
//! of it (the book is published without the repository). Also: every page of `docs/` is in the
//! book's table of contents, and the README stays a front page (at most 300 lines).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::support::slug::slug;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files the check covers, relative to `root`.
fn documents(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut out: Vec<PathBuf> = ["README.md", "DESIGN.md", "CONTRIBUTING.md"]
        .iter()
        .map(|f| root.join(f))
        .filter(|p| p.exists())
        .collect();
    walk(&root.join("docs"), &mut out);
    out.sort();
    out
}

/// The text outside fenced code blocks, line by line (code spans are cut out of each).
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let marker = if t.starts_with("```") {
            Some("```")
        } else if t.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(f), Some(m)) if f == m => fence = None,
            (None, None) => out.push((i + 1, strip_code_spans(line))),
            _ => {}
        }
    }
    out
}

fn strip_code_spans(line: &str) -> String {
    line.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
        .map(|(_, p)| p)
        .collect::<Vec<_>>()
        .join("``")
}

/// Every anchor a page has: its headings' (repeats numbered) and explicit `id="…"`s.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let s = slug(&line[hashes..]);
            let n = seen.entry(s.clone()).or_insert(0);
            out.insert(if *n == 0 {
                s.clone()
            } else {
                format!("{s}-{n}")
            });
            *n += 1;
        }
        for part in line.split("id=\"").skip(1) {
            if let Some(id) = part.split('"').next() {
                out.insert(id.to_string());
            }
        }
    }
    out
}

/// The link targets of a line: `[text](target)`, `![alt](target)` and `[ref]: target`.
fn targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        let t = after[..end].split_whitespace().next().unwrap_or("");
        out.push(t.trim_matches(|c| c == '<' || c == '>').to_string());
        rest = &after[end..];
    }
    let t = line.trim_start();
    if t.starts_with('[')
        && let Some(i) = t.find("]: ")
    {
        out.push(
            t[i + 3..]
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string(),
        );
    }
    out
}

/// Every broken relative link or anchor of the documents under `root`.
fn broken_links(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut cache: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for doc in documents(root) {
        let text = std::fs::read_to_string(&doc).unwrap();
        let rel = doc.strip_prefix(root).unwrap().display().to_string();
        for (line_no, line) in prose_lines(&text) {
            for target in targets(&line) {
                if target.is_empty()
                    || target.contains("://")
                    || target.starts_with("mailto:")
                    || target.starts_with('{')
                {
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    doc.clone()
                } else {
                    doc.parent().unwrap().join(path)
                };
                if !file.exists() {
                    problems.push(format!("{rel}:{line_no}: {target}: no such file"));
                    continue;
                }
                // The book is published alone: a page of it may not link out of docs/.
                let book = root.join("docs").canonicalize().unwrap();
                if doc.starts_with(root.join("docs"))
                    && !file.canonicalize().unwrap().starts_with(&book)
                {
                    problems.push(format!(
                        "{rel}:{line_no}: {target}: leaves the book (name the file as code)"
                    ));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if file.extension().is_none_or(|x| x != "md") {
                    continue;
                }
                let key = file.canonicalize().unwrap();
                let known = cache.entry(key).or_insert_with(|| {
                    anchors(&std::fs::read_to_string(&file).unwrap_or_default())
                });
                if !known.contains(anchor) {
                    problems.push(format!("{rel}:{line_no}: {target}: no heading #{anchor}"));
                }
            }
        }
    }
    problems
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let problems = broken_links(&repo());
    assert!(
        problems.is_empty(),
        "{} broken link(s):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

#[test]
fn the_checker_finds_a_missing_file_and_a_missing_anchor() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs/guide")).unwrap();
    std::fs::write(
        dir.path().join("README.md"),
        "# Top\n\n## Coming from `claude -p`\n\nSee [a](docs/guide/a.md#the-flags), \
         [b](docs/guide/gone.md), [c](#coming-from-claude--p), [d](#nowhere), \
         [e](https://example.com/x#y).\n\n```sh\n[not](a/link.md)\n```\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("docs/guide/a.md"),
        "# A\n\n## The flags\n\n## The flags\n\n[back](../../README.md#top) \
         [twice](#the-flags-1) [code `](x.md)` is prose]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("docs/out.md"),
        "[up](../README.md) [fine](guide/a.md)\n",
    )
    .unwrap();
    assert_eq!(
        broken_links(dir.path()),
        [
            "README.md:5: docs/guide/gone.md: no such file",
            "README.md:5: #nowhere: no heading #nowhere",
            "docs/guide/a.md:7: ../../README.md#top: leaves the book (name the file as code)",
            "docs/out.md:1: ../README.md: leaves the book (name the file as code)",
        ]
    );
}

/// Every page under `docs/` is reachable from the book's table of contents (a page left
/// out is built by no one and found by no one).
#[test]
fn every_page_is_in_the_books_summary() {
    let root = repo().join("docs");
    let summary = std::fs::read_to_string(root.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = prose_lines(&summary)
        .iter()
        .flat_map(|(_, l)| targets(l))
        .collect();
    let missing: Vec<String> = documents(&repo())
        .iter()
        .filter_map(|p| p.strip_prefix(&root).ok())
        .map(|p| p.display().to_string())
        .filter(|p| p != "SUMMARY.md" && !listed.contains(p))
        .collect();
    assert!(
        missing.is_empty(),
        "pages not in docs/SUMMARY.md: {missing:?}"
    );
}

#[test]
fn the_readme_is_a_front_page() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: move detail into docs/"
    );
}
