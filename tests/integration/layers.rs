//! DESIGN.md's layer table, enforced: every crate-internal reference in the library's
//! shipped code goes to a lower row, so the layers hold and no two modules depend on each
//! other. Reads the table between `<!-- layers -->` and `<!-- /layers -->` and the module
//! tree from `src/lib.rs` down (`mod` declarations, `#[path]` included).
//!
//! A module's entry is the longest table entry that is a prefix of its path (`tools`
//! holds `tools::bash`; `tools::dispatch` is its own entry). References found: `crate::`
//! paths (in `use` trees, grouped or not, and inline), `super::`/`self::` paths and paths
//! through a child module (`registry::Registry` in `tools/mod.rs`). Test code is exempt
//! (`#[cfg(test)]` items and every file they declare): tests build their fixtures from
//! any layer; the check is about what ships. `main.rs` is its own crate (the binary) and
//! `lib.rs`, the root, sits above every row. A folder whose `mod.rs` only declares its
//! files (`run`, `record`, …) is a namespace: each of its files needs a row of its own.
//! An `allow  FROM → TO  reason` line in the block admits one known upward reference (TO
//! may be `crate`, the root); one that allows nothing any more fails too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The table: each entry's row, and the references allowed against the rows.
#[derive(Debug)]
struct Table {
    row: BTreeMap<String, u32>,
    allows: Vec<Allow>,
}

/// `allow  FROM → TO  reason`: one known reference that runs up (TO may be `crate`).
#[derive(Debug)]
struct Allow {
    from: String,
    to: String,
}

const BEGIN: &str = "<!-- layers -->";
const END: &str = "<!-- /layers -->";
const ROOT: &str = "crate";

/// Rows look like `3  model::provider · process::sandbox    what they are`: the row
/// number, entries joined by `·`, and after two or more spaces an optional comment.
fn parse_table(design: &str) -> Result<Table, Vec<String>> {
    let (Some(begin), Some(end)) = (design.find(BEGIN), design.find(END)) else {
        return Err(vec![format!(
            "DESIGN.md: no layer table between `{BEGIN}` and `{END}`"
        )]);
    };
    let first_line = design[..begin].lines().count() + 1;
    let mut table = Table {
        row: BTreeMap::new(),
        allows: Vec::new(),
    };
    let mut problems = Vec::new();
    let mut rows_seen = BTreeSet::new();
    for (k, raw) in design[begin + BEGIN.len()..end].lines().enumerate() {
        let line = first_line + k;
        let text = raw.trim();
        if text.is_empty() || text.starts_with("```") {
            continue;
        }
        if let Some(rest) = text.strip_prefix("allow ") {
            let mut words = rest.split_whitespace();
            match (words.next(), words.next(), words.next(), words.next()) {
                (Some(from), Some("→"), Some(to), Some(_reason)) => table.allows.push(Allow {
                    from: from.to_string(),
                    to: to.to_string(),
                }),
                _ => problems.push(format!(
                    "DESIGN.md:{line}: an allow line is `allow  FROM → TO  reason`: {text}"
                )),
            }
            continue;
        }
        let (number, rest) = text.split_once(' ').unwrap_or((text, ""));
        let Ok(number) = number.parse::<u32>() else {
            problems.push(format!(
                "DESIGN.md:{line}: not a row (`N  a · b  comment`): {text}"
            ));
            continue;
        };
        if !rows_seen.insert(number) {
            problems.push(format!("DESIGN.md:{line}: row {number} appears twice"));
        }
        // The entries end where two spaces start the comment.
        let entries = rest.trim_start().split("  ").next().unwrap_or("");
        for entry in entries.split('·').map(str::trim) {
            let well_formed = !entry.is_empty()
                && entry.split("::").all(|s| {
                    !s.is_empty()
                        && s.chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                });
            if !well_formed {
                problems.push(format!("DESIGN.md:{line}: `{entry}` is not a module path"));
            } else if table.row.insert(entry.to_string(), number).is_some() {
                problems.push(format!("DESIGN.md:{line}: `{entry}` is in two rows"));
            }
        }
    }
    if problems.is_empty() {
        Ok(table)
    } else {
        Err(problems)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    /// `::`
    Sep,
    Punct(char),
}

/// Rust source as the tokens the check needs, each with its line: comments dropped,
/// strings and chars kept whole (a `crate::` inside one is no reference).
fn tokenize(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    // Skips a quoted string from its opening quote, counting lines; `raw` has no escapes.
    let string = |i: &mut usize, line: &mut usize, hashes: usize, raw: bool| -> String {
        let start = *i + 1;
        *i += 1;
        loop {
            if *i >= c.len() {
                break;
            }
            let ch = c[*i];
            if ch == '\n' {
                *line += 1;
            }
            if ch == '\\' && !raw {
                if at(*i + 1) == '\n' {
                    *line += 1;
                }
                *i += 2;
                continue;
            }
            if ch == '"' && (0..hashes).all(|h| at(*i + 1 + h) == '#') {
                let s: String = c[start..*i].iter().collect();
                *i += 1 + hashes;
                return s;
            }
            *i += 1;
        }
        c[start.min(c.len())..].iter().collect()
    };
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            let l = line;
            let s = string(&mut i, &mut line, 0, false);
            out.push((Tok::Str(s), l));
        } else if ch == '\'' {
            if at(i + 1) == '\\' {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1; // a lifetime: its name follows as an identifier
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let raw_prefix = matches!(word.as_str(), "r" | "br" | "cr");
            if raw_prefix
                && (at(i) == '"' || at(i) == '#' && (at(i + 1) == '"' || at(i + 1) == '#'))
            {
                let mut hashes = 0;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                let l = line;
                let s = string(&mut i, &mut line, hashes, true);
                out.push((Tok::Str(s), l));
            } else if word == "r" && at(i) == '#' {
                i += 1; // a raw identifier: `r#type` is `type`
            } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                let l = line;
                let s = string(&mut i, &mut line, 0, false);
                out.push((Tok::Str(s), l));
            } else if word == "b" && at(i) == '\'' {
                // A byte literal: let the quote branch skip it.
            } else {
                out.push((Tok::Ident(word), line));
            }
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((Tok::Punct('0'), line));
        } else if ch == ':' && at(i + 1) == ':' {
            out.push((Tok::Sep, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// A `mod name;` declaration.
#[derive(Debug)]
struct Child {
    name: String,
    path: Option<String>,
    test: bool,
    line: usize,
}

/// A crate-internal reference: the absolute path it names (from the crate root).
#[derive(Debug, PartialEq)]
struct Ref {
    line: usize,
    target: Vec<String>,
    /// Written from the crate root (`crate::…`), not relative (`super::`, `self::`, a child).
    absolute: bool,
}

#[derive(Debug)]
struct Scan {
    children: Vec<Child>,
    refs: Vec<Ref>,
    /// Nothing but attributes and `mod name;` declarations: a namespace, not a layer.
    only_declares_modules: bool,
}

/// The index after the bracket that closes the one at `open`.
fn after_group(toks: &[(Tok, usize)], open: usize) -> usize {
    let mut depth = 0usize;
    let mut k = open;
    while k < toks.len() {
        match toks[k].0 {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
        k += 1;
    }
    toks.len()
}

/// The index after the item (or statement, field, arm) starting at `k`: its `;` or `,`,
/// or its block's closing brace; never past a brace that closes an enclosing block.
fn after_item(toks: &[(Tok, usize)], mut k: usize) -> usize {
    let mut depth = 0usize;
    while k < toks.len() {
        match toks[k].0 {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(c @ (')' | ']' | '}')) => {
                if depth == 0 {
                    return k;
                }
                depth -= 1;
                if depth == 0 && c == '}' {
                    return k + 1;
                }
            }
            Tok::Punct(';' | ',') if depth == 0 => return k + 1,
            _ => {}
        }
        k += 1;
    }
    k
}

/// Walks a path or `use` tree from `i` (just after a `::`), extending `base`; pushes one
/// target per leaf (`{a::b, c}` gives two) and returns the index after the tree.
fn use_tree(
    toks: &[(Tok, usize)],
    mut i: usize,
    base: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    let mut path = base;
    loop {
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(s)) if s == "super" => {
                path.pop();
            }
            Some(Tok::Ident(s)) if s == "self" => {}
            Some(Tok::Ident(s)) => path.push(s.clone()),
            Some(Tok::Punct('{')) => {
                i += 1;
                while let Some((t, _)) = toks.get(i) {
                    match t {
                        Tok::Punct('}') => return i + 1,
                        Tok::Punct(',') => i += 1,
                        _ => {
                            let next = use_tree(toks, i, path.clone(), out);
                            i = if next == i { i + 1 } else { next };
                        }
                    }
                }
                return i;
            }
            _ => {
                // `*`, or a path cut short (`crate::` then `<`): it names what it has.
                out.push(path);
                return i + usize::from(matches!(toks.get(i), Some((Tok::Punct('*'), _))));
            }
        }
        i += 1;
        if matches!(toks.get(i), Some((Tok::Sep, _))) {
            i += 1;
        } else {
            out.push(path);
            return i;
        }
    }
}

/// A file's `mod` declarations and its references, for the module at `module`.
fn scan(src: &str, module: &[String]) -> Scan {
    let toks = tokenize(src);
    let ident = |k: usize| match toks.get(k) {
        Some((Tok::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
    let punct = |k: usize, p: char| matches!(toks.get(k), Some((Tok::Punct(q), _)) if *q == p);
    let mut scan = Scan {
        children: Vec::new(),
        refs: Vec::new(),
        only_declares_modules: true,
    };
    // Inline (non-test) modules open here: their names, with the brace depth they end at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        // Attributes, visibility and `mod` first: they decide what the item is.
        let (mut test, mut path) = (false, None);
        let mut j = i;
        loop {
            if punct(j, '#') && punct(j + 1, '!') && punct(j + 2, '[') {
                j = after_group(&toks, j + 2); // inner attribute: about the file, not an item
            } else if punct(j, '#') && punct(j + 1, '[') {
                let end = after_group(&toks, j + 1);
                let inside = &toks[j + 2..end - 1];
                let words: Vec<&Tok> = inside.iter().map(|t| &t.0).collect();
                let cfg_test = [
                    Tok::Ident("cfg".into()),
                    Tok::Punct('('),
                    Tok::Ident("test".into()),
                    Tok::Punct(')'),
                ];
                if words.iter().copied().eq(cfg_test.iter()) {
                    test = true;
                }
                if let [Tok::Ident(p), Tok::Punct('='), Tok::Str(s)] = words.as_slice()
                    && p == "path"
                {
                    path = Some(s.clone());
                }
                j = end;
            } else {
                break;
            }
        }
        let mut k = j;
        if ident(k) == Some("pub") {
            k += 1;
            if punct(k, '(') {
                k = after_group(&toks, k);
            }
        }
        if ident(k) == Some("mod")
            && let Some(name) = ident(k + 1)
        {
            let line = toks[k].1;
            if punct(k + 2, ';') {
                if inline.is_empty() {
                    scan.children.push(Child {
                        name: name.to_string(),
                        path,
                        test,
                        line,
                    });
                }
                i = k + 3;
                continue;
            }
            if punct(k + 2, '{') {
                if test {
                    i = after_group(&toks, k + 2);
                } else {
                    scan.only_declares_modules = false;
                    depth += 1;
                    inline.push((name.to_string(), depth));
                    i = k + 3;
                }
                continue;
            }
        }
        if test {
            i = after_item(&toks, k);
            continue;
        }
        if j > i || k > j {
            i = k;
            continue;
        }
        scan.only_declares_modules = false;
        let here: Vec<String> = module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(n, _)| n.clone()))
            .collect();
        match &toks[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(w) if matches!(toks.get(i + 1), Some((Tok::Sep, _))) => {
                let after_sep = i > 0 && matches!(toks[i - 1].0, Tok::Sep | Tok::Punct('$'));
                let child =
                    inline.is_empty() && scan.children.iter().any(|c| &c.name == w && !c.test);
                let base = match w.as_str() {
                    _ if after_sep => None,
                    "crate" => Some(Vec::new()),
                    "super" => here.split_last().map(|(_, up)| up.to_vec()),
                    "self" => Some(here.clone()),
                    _ if child => Some([here.clone(), vec![w.clone()]].concat()),
                    _ => None,
                };
                if let Some(base) = base {
                    let line = toks[i].1;
                    let absolute = w == "crate";
                    let mut targets = Vec::new();
                    i = use_tree(&toks, i + 2, base, &mut targets);
                    scan.refs.extend(targets.into_iter().map(|target| Ref {
                        line,
                        target,
                        absolute,
                    }));
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    scan
}

/// One module of the library: its path, its file (relative to `src/`), and what it holds.
#[derive(Debug)]
struct Module {
    path: Vec<String>,
    file: PathBuf,
    test: bool,
    scan: Scan,
}

/// Whether a path relative to `src/` climbs out of it (`a/../../x`).
fn leaves_src(path: &Path) -> bool {
    let mut depth = 0i32;
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// The module tree from `lib.rs` down; every other `.rs` file (but `main.rs`) is a problem.
fn modules(files: &BTreeMap<PathBuf, String>, problems: &mut Vec<String>) -> Vec<Module> {
    let mut found = Vec::new();
    let mut queue = vec![(Vec::new(), PathBuf::from("lib.rs"), false, false)];
    let mut reached = BTreeSet::new();
    while let Some((path, file, test, via_path)) = queue.pop() {
        let Some(src) = files.get(&file) else {
            continue;
        };
        reached.insert(file.clone());
        let scan = scan(src, &path);
        let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        // A child of `x.rs` lives in `x/`; of `lib.rs`, `mod.rs` or a `#[path]` file, beside it.
        let beside = via_path || matches!(name, "lib.rs" | "mod.rs");
        let sub = if beside {
            dir.clone()
        } else {
            dir.join(name.trim_end_matches(".rs"))
        };
        for child in &scan.children {
            // A test module included from outside `src/` (a shared test helper of
            // `tests/support`) is not part of the crate's layers.
            if (test || child.test)
                && child
                    .path
                    .as_ref()
                    .is_some_and(|p| leaves_src(&dir.join(p)))
            {
                continue;
            }
            let candidates = match &child.path {
                Some(p) => vec![dir.join(p)],
                None => vec![
                    sub.join(format!("{}.rs", child.name)),
                    sub.join(&child.name).join("mod.rs"),
                ],
            };
            match candidates.into_iter().find(|c| files.contains_key(c)) {
                Some(f) => queue.push((
                    [path.clone(), vec![child.name.clone()]].concat(),
                    f,
                    test || child.test,
                    child.path.is_some(),
                )),
                None => problems.push(format!(
                    "src/{}:{}: `mod {}` names no file",
                    file.display(),
                    child.line,
                    child.name
                )),
            }
        }
        found.push(Module {
            path,
            file,
            test,
            scan,
        });
    }
    for f in files.keys() {
        if !reached.contains(f) && f != Path::new("main.rs") {
            problems.push(format!("src/{}: no `mod` declares this file", f.display()));
        }
    }
    found.sort_by(|a, b| a.file.cmp(&b.file));
    found
}

/// The longest table entry that is a prefix of `path`.
fn entry_of<'t>(table: &'t Table, path: &[String]) -> Option<(&'t str, u32)> {
    (1..=path.len()).rev().find_map(|n| {
        table
            .row
            .get_key_value(&path[..n].join("::"))
            .map(|(e, r)| (e.as_str(), *r))
    })
}

/// Every way the tree breaks the table, one line each (file:line, both entries).
fn check(design: &str, files: &BTreeMap<PathBuf, String>) -> Vec<String> {
    let table = match parse_table(design) {
        Ok(t) => t,
        Err(problems) => return problems,
    };
    let mut problems = Vec::new();
    let modules = modules(files, &mut problems);
    let shipped: Vec<&Module> = modules.iter().filter(|m| !m.test).collect();
    let paths: BTreeSet<String> = shipped.iter().map(|m| m.path.join("::")).collect();
    for entry in table.row.keys() {
        if !paths.contains(entry) {
            problems.push(format!(
                "DESIGN.md: the layer table names `{entry}`, which is no module of src/"
            ));
        }
    }
    let mut allows_used = vec![false; table.allows.len()];
    for m in &shipped {
        if m.path.is_empty() {
            continue; // lib.rs: the root sits above every row
        }
        let file = format!("src/{}", m.file.display());
        let name = m.path.join("::");
        let Some((entry, row)) = entry_of(&table, &m.path) else {
            if !m.scan.only_declares_modules {
                // Where it could go: just above the highest entry it refers to.
                let fits = m
                    .scan
                    .refs
                    .iter()
                    .filter_map(|r| entry_of(&table, &r.target))
                    .max_by_key(|(_, r)| *r)
                    .map_or("row 0 (it refers to no entry)".to_string(), |(e, r)| {
                        format!("row {} or above (it refers to {e}, row {r})", r + 1)
                    });
                problems.push(format!(
                    "{file}: module `{name}` is in no row of DESIGN.md's layer table; lowest fit: {fits}"
                ));
            }
            continue;
        };
        for r in &m.scan.refs {
            let target = r.target.join("::");
            let (to, why) = match entry_of(&table, &r.target) {
                Some((to, to_row)) if to == entry || to_row < row => continue,
                Some((to, to_row)) if to_row == row => {
                    (to.to_string(), format!("{to} (row {to_row}, the same row)"))
                }
                Some((to, to_row)) => (to.to_string(), format!("{to} (row {to_row})")),
                None if r.target.first().is_some_and(|s| paths.contains(s)) => {
                    (target.clone(), format!("`{target}`, which is in no row"))
                }
                None => (
                    ROOT.to_string(),
                    format!("`{target}` in the crate root (lib.rs), above every row"),
                ),
            };
            if let Some(k) = table
                .allows
                .iter()
                .position(|a| a.from == entry && a.to == to)
            {
                allows_used[k] = true;
                continue;
            }
            problems.push(format!(
                "{file}:{}: {entry} (row {row}) refers to {why}: a reference must go to a lower row",
                r.line
            ));
        }
    }
    problems.extend(file_cycles(&shipped));
    for (a, used) in table.allows.iter().zip(allows_used) {
        if !used {
            problems.push(format!(
                "DESIGN.md: `allow {} → {}` allows nothing any more: remove it",
                a.from, a.to
            ));
        }
    }
    problems
}

/// Cycles among the files themselves, inside one entry as across entries: a file refers
/// to the module a `crate::` path names (the longest module path that prefixes it), and
/// no chain of such references may come back to where it started. Relative paths
/// (`super::`, a child's name) are the idiom of a module split into files — its `mod.rs`
/// and the files it declares are one unit — and are held by the rows alone. Each cycle
/// is reported once, as its files in order.
fn file_cycles(shipped: &[&Module]) -> Vec<String> {
    let index: BTreeMap<Vec<String>, usize> = shipped
        .iter()
        .enumerate()
        .map(|(i, m)| (m.path.clone(), i))
        .collect();
    let edges: Vec<BTreeSet<usize>> = shipped
        .iter()
        .enumerate()
        .map(|(i, m)| {
            m.scan
                .refs
                .iter()
                .filter(|r| r.absolute)
                .filter_map(|r| {
                    (1..=r.target.len())
                        .rev()
                        .find_map(|n| index.get(&r.target[..n]).copied())
                })
                .filter(|&t| t != i)
                .collect()
        })
        .collect();
    // Depth-first search: a reference to a file on the current path closes a cycle.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit(
        at: usize,
        edges: &[BTreeSet<usize>],
        marks: &mut [Mark],
        path: &mut Vec<usize>,
        cycles: &mut Vec<Vec<usize>>,
    ) {
        marks[at] = Mark::OnPath;
        path.push(at);
        for &to in &edges[at] {
            match marks[to] {
                Mark::New => visit(to, edges, marks, path, cycles),
                Mark::OnPath => {
                    let from = path.iter().position(|&p| p == to).expect("on the path");
                    cycles.push(path[from..].to_vec());
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks[at] = Mark::Done;
    }
    let mut marks = vec![Mark::New; shipped.len()];
    let mut cycles = Vec::new();
    for start in 0..shipped.len() {
        if marks[start] == Mark::New {
            visit(start, &edges, &mut marks, &mut Vec::new(), &mut cycles);
        }
    }
    cycles
        .iter()
        .map(|c| {
            let files: Vec<String> = c
                .iter()
                .chain(c.first())
                .map(|&i| format!("src/{}", shipped[i].file.display()))
                .collect();
            format!("an import cycle: {}", files.join(" → "))
        })
        .collect()
}

/// Every `.rs` file under `dir`, keyed by its path relative to `root`.
fn read_tree(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            read_tree(root, &p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let rel = p.strip_prefix(root).expect("under src/").to_path_buf();
            out.insert(rel, text);
        }
    }
}

#[test]
fn the_source_tree_keeps_to_the_layer_table_of_design_md() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let design = std::fs::read_to_string(repo.join("DESIGN.md")).expect("DESIGN.md");
    let src = repo.join("src");
    let mut files = BTreeMap::new();
    read_tree(&src, &src, &mut files);
    let problems = check(&design, &files);
    assert!(
        problems.is_empty(),
        "DESIGN.md's layer table does not hold ({} problem{}):\n  {}\n\
         A module may refer only to its own entry and to lower rows. Move the reference \
         down, or the module to the row where it belongs (DESIGN.md, \"Layers\").",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        problems.join("\n  ")
    );
}

mod checker {
    //! The check's own tests, on small inline trees, so that it can fail.
    use super::*;

    fn targets(src: &str, module: &str) -> Vec<String> {
        let module: Vec<String> = module.split("::").map(String::from).collect();
        scan(src, &module)
            .refs
            .iter()
            .map(|r| format!("{}:{}", r.line, r.target.join("::")))
            .collect()
    }

    fn tree(files: &[(&str, &str)]) -> BTreeMap<PathBuf, String> {
        files
            .iter()
            .map(|(p, s)| (PathBuf::from(p), s.to_string()))
            .collect()
    }

    const TABLE: &str =
        "<!-- layers -->\n    1  b            upper\n    0  a · a::low   lower\n<!-- /layers -->\n";

    #[test]
    fn a_test_module_included_from_outside_src_is_no_problem_but_a_shipped_one_is() {
        let lib = "pub(crate) mod a;\n";
        let test_incl = "#[cfg(test)]\n#[path = \"../../tests/support/enc.rs\"]\nmod enc;\n";
        let about_enc = |files| -> Vec<String> {
            check(TABLE, &files)
                .into_iter()
                .filter(|p| p.contains("enc"))
                .collect()
        };
        let files = tree(&[("lib.rs", lib), ("a.rs", test_incl)]);
        assert_eq!(about_enc(files), Vec::<String>::new());
        let shipped = "#[path = \"../../tests/support/enc.rs\"]\nmod enc;\n";
        let files = tree(&[("lib.rs", lib), ("a.rs", shipped)]);
        assert_eq!(about_enc(files), ["src/a.rs:2: `mod enc` names no file"]);
    }

    #[test]
    fn grouped_imports_give_one_target_per_leaf() {
        let src = "use crate::{a::b, c::{d, e::F}, g};\nuse crate::h::{self, I};\nuse crate::j::*;";
        assert_eq!(
            targets(src, "x"),
            [
                "1:a::b",
                "1:c::d",
                "1:c::e::F",
                "1:g",
                "2:h",
                "2:h::I",
                "3:j"
            ]
        );
    }

    #[test]
    fn inline_paths_and_super_chains_resolve_from_the_module() {
        let src = "fn f() {\n    crate::a::b::f();\n    super::q();\n    let _ = super::super::w::V;\n    self::z::g();\n}";
        assert_eq!(
            targets(src, "x::y::z"),
            ["2:a::b::f", "3:x::y::q", "4:x::w::V", "5:x::y::z::z::g"]
        );
    }

    #[test]
    fn paths_through_a_child_module_are_references() {
        let src = "pub(crate) mod reg;\n#[cfg(test)] mod tests;\nfn f() { reg::Registry::new(); tests::x(); }";
        assert_eq!(targets(src, "t"), ["3:t::reg::Registry::new"]);
    }

    #[test]
    fn test_code_comments_strings_and_visibility_are_no_references() {
        let src = r##"
            //! crate::doc::Comment
            pub(crate) fn f() -> &'static str { "crate::in::string" } /* crate::c */
            pub(in crate::a) struct S;
            #[cfg(test)]
            use crate::test::Only;
            #[cfg(test)]
            mod tests { use crate::b::Thing; }
            macro_rules! m { () => { $crate::m::x() } }
            const R: &str = r#"crate::raw"#;
            fn g() { let c = '"'; crate::kept::Ref; }
        "##;
        assert_eq!(targets(src, "x"), ["11:kept::Ref"]);
    }

    #[test]
    fn an_upward_import_fails_naming_file_line_and_both_entries() {
        let table = format!("{BEGIN}\n    1  b\n    0  a\n{END}");
        let files = tree(&[
            ("lib.rs", "mod a;\nmod b;"),
            ("a.rs", "//! a\n\nuse crate::b::B;\n"),
            ("b.rs", "use crate::a::A;"),
        ]);
        assert_eq!(
            check(&table, &files),
            [
                "src/a.rs:3: a (row 0) refers to b (row 1): a reference must go to a lower row",
                "an import cycle: src/a.rs → src/b.rs → src/a.rs",
            ]
        );
    }

    #[test]
    fn a_cycle_fails_whatever_the_rows() {
        let table = "<!-- layers -->\n    0  a · b\n<!-- /layers -->";
        let files = tree(&[
            ("lib.rs", "mod a;\nmod b;"),
            ("a.rs", "pub(crate) fn f() { crate::b::g() }"),
            ("b.rs", "pub(crate) fn g() { crate::a::f() }"),
        ]);
        assert_eq!(
            check(table, &files),
            [
                "src/a.rs:1: a (row 0) refers to b (row 0, the same row): a reference must go to a lower row",
                "src/b.rs:1: b (row 0) refers to a (row 0, the same row): a reference must go to a lower row",
                "an import cycle: src/a.rs → src/b.rs → src/a.rs",
            ]
        );
    }

    /// Files of one entry may not loop through `crate::` paths either (a part of `config`
    /// naming `crate::config::Env` while `config/mod.rs` names the part), though the rows
    /// cannot see it; a child's `super::` back into its folder's `mod.rs` is not counted.
    #[test]
    fn a_cycle_inside_one_entry_fails_but_a_childs_super_does_not() {
        let table = format!(
            "{BEGIN}
    0  c
{END}"
        );
        let files = tree(&[
            ("lib.rs", "mod c;"),
            (
                "c/mod.rs",
                "mod p;
use crate::c::p::P;
pub(crate) trait Env {}",
            ),
            (
                "c/p.rs",
                "use crate::c::Env;
pub(crate) struct P;",
            ),
        ]);
        assert_eq!(
            check(&table, &files),
            ["an import cycle: src/c/mod.rs → src/c/p.rs → src/c/mod.rs"]
        );
        let files = tree(&[
            ("lib.rs", "mod c;"),
            (
                "c/mod.rs",
                "mod p;
use p::P;
pub(crate) trait Env {}",
            ),
            (
                "c/p.rs",
                "use super::Env;
pub(crate) struct P;",
            ),
        ]);
        assert_eq!(check(&table, &files), Vec::<String>::new());
    }

    #[test]
    fn super_leaving_the_entry_is_checked_and_entries_are_longest_prefixes() {
        let files = tree(&[
            ("lib.rs", "mod a;\nmod b;"),
            ("a/mod.rs", "mod low;\nmod mid;\nuse mid::M;"),
            ("a/low.rs", "use super::M;\n"),
            ("a/mid.rs", "use super::low::L;"),
            ("b.rs", "use crate::a::low::L;\n#[cfg(test)]\nmod tests;"),
            ("b/tests.rs", "use crate::b::Anything;"),
        ]);
        // a::mid belongs to `a`; a::low is its own entry, below `a`.
        let table = format!("{BEGIN}\n    2  b\n    1  a\n    0  a::low\n{END}");
        assert_eq!(
            check(&table, &files),
            [
                "src/a/low.rs:1: a::low (row 0) refers to a (row 1): a reference must go to a lower row"
            ]
        );
    }

    #[test]
    fn modules_missing_from_the_table_and_entries_missing_from_the_tree_fail() {
        let files = tree(&[
            ("lib.rs", "mod a;\nmod c;\nmod ns;"),
            ("a.rs", ""),
            ("c.rs", "use crate::a::A;"),
            ("ns/mod.rs", "//! a namespace\npub(crate) mod d;"),
            ("ns/d.rs", "fn f() {}"),
            ("stray.rs", ""),
            ("main.rs", "fn main() {}"),
        ]);
        assert_eq!(
            check(TABLE, &files),
            [
                "src/stray.rs: no `mod` declares this file",
                "DESIGN.md: the layer table names `a::low`, which is no module of src/",
                "DESIGN.md: the layer table names `b`, which is no module of src/",
                "src/c.rs: module `c` is in no row of DESIGN.md's layer table; lowest fit: row 1 or above (it refers to a, row 0)",
                "src/ns/d.rs: module `ns::d` is in no row of DESIGN.md's layer table; lowest fit: row 0 (it refers to no entry)",
            ]
        );
    }

    #[test]
    fn references_to_the_root_fail_unless_allowed_and_stale_allows_fail() {
        let files = tree(&[
            ("lib.rs", "mod a;\nmod b;\npub(crate) fn helper() {}"),
            ("a.rs", "use crate::helper;"),
            ("b.rs", "use crate::{a::A, helper};"),
        ]);
        let table = format!(
            "{BEGIN}\n    1  b\n    0  a · a::low\n    allow  b → crate  a known one\n    allow  a → b  stale\n{END}"
        );
        assert_eq!(
            check(&table, &files),
            [
                "DESIGN.md: the layer table names `a::low`, which is no module of src/",
                "src/a.rs:1: a (row 0) refers to `helper` in the crate root (lib.rs), above every row: a reference must go to a lower row",
                "DESIGN.md: `allow a → b` allows nothing any more: remove it",
            ]
        );
    }

    #[test]
    fn a_malformed_table_fails() {
        let table = format!("{BEGIN}\n    1  a\n    one  b\n    0  a · Bad-Name\n{END}");
        assert_eq!(
            parse_table(&table).unwrap_err(),
            [
                "DESIGN.md:3: not a row (`N  a · b  comment`): one  b",
                "DESIGN.md:4: `a` is in two rows",
                "DESIGN.md:4: `Bad-Name` is not a module path",
            ]
        );
        assert!(parse_table("no table here").is_err());
    }
}
