//! Permission rules (SPEC §6): `Tool` or `Tool(specifier)`, and their verdict on a call's
//! subject. A command subject is checked against every simple command of the command line,
//! as `shell_words` splits it (function bodies included), wrappers looked through for deny
//! rules; under an allow list, a command line that defines a function is refused. A path
//! subject is matched as a glob relative to the workspace, against the path the call names
//! (lexically normalised, and again with symlinks resolved): deny when either form
//! matches, allow only when both do.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::Settings;
use crate::policy::shell_words::{WRAPPERS, base_name, parse};
use crate::tools::{KnownTool, Subject, SubjectKind};

/// Whether a rule's or matcher's tool name names `tool`: the same name, or an MCP pattern
/// (`mcp__server`, `mcp__server__*`) covering it.
pub(super) fn names(pattern: &str, tool: &str) -> bool {
    pattern == tool || crate::mcp::names::pattern_matches(pattern, tool)
}

/// What a rule's specifier means for the named tool; an unknown name is an error.
pub(super) fn check_tool(name: &str, known: &[KnownTool]) -> Result<SubjectKind, String> {
    match known.iter().find(|k| k.name == name) {
        Some(k) => Ok(k.subject),
        // MCP tools are listed once their servers start, after the settings are read:
        // `mcp__server`, `mcp__server__*` and `mcp__server__tool` are taken on their shape.
        None if crate::mcp::names::is_mcp_pattern(name) => Ok(SubjectKind::Nothing),
        None => Err(format!(
            "unknown tool {name:?}; known tools: {}",
            known
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// One permission rule, `Tool` or `Tool(specifier)`.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    /// As written, for messages (`Bash(rm:*)`).
    pub text: String,
    pub tool: String,
    pub(super) spec: Option<Spec>,
}

#[derive(Debug, Clone)]
pub(super) enum Spec {
    /// `Bash(git status)`: the command's words exactly.
    Exact(Vec<String>),
    /// `Bash(cargo test:*)`: the command's first words.
    Prefix(Vec<String>),
    /// `ReadFile(secrets/**)`: a glob relative to the workspace.
    Path(GlobSet),
    /// `WebFetch(domain:docs.rs)`: a host; `*.example.com` is the domain and its
    /// subdomains.
    Domain(String),
}

impl Rule {
    pub(crate) fn parse(text: &str, known: &[KnownTool]) -> Result<Rule, String> {
        let t = text.trim();
        let (tool, spec) = match t.split_once('(') {
            None => (t, None),
            Some((tool, rest)) => {
                let Some(inner) = rest.strip_suffix(')') else {
                    return Err(format!("rule {text:?}: a `(` without its closing `)`"));
                };
                (tool.trim(), Some(inner))
            }
        };
        let kind = check_tool(tool, known).map_err(|m| format!("rule {text:?}: {m}"))?;
        let spec = match spec {
            None => None,
            Some(s) if s.trim().is_empty() => {
                return Err(format!(
                    "rule {text:?}: empty parentheses; write `{tool}` for every call"
                ));
            }
            Some(s) => Some(match kind {
                SubjectKind::Command => {
                    command_spec(s, tool).map_err(|m| format!("rule {text:?}: {m}"))?
                }
                SubjectKind::Paths => {
                    Spec::Path(path_glob(s).map_err(|m| format!("rule {text:?}: {m}"))?)
                }
                SubjectKind::Domain => {
                    let host = s.trim().strip_prefix("domain:").map(str::trim);
                    match host.filter(|h| !h.is_empty() && !h.contains(['/', ' '])) {
                        Some(h) => Spec::Domain(h.to_ascii_lowercase()),
                        None => {
                            return Err(format!(
                                "rule {text:?}: {tool} rules name a host:                                  `{tool}(domain:docs.rs)` or `{tool}(domain:*.example.com)`"
                            ));
                        }
                    }
                }
                SubjectKind::Nothing => {
                    return Err(format!(
                        "rule {text:?}: {tool} takes no specifier; write `{tool}` for every call"
                    ));
                }
            }),
        };
        Ok(Rule {
            text: t.to_string(),
            tool: tool.to_string(),
            spec,
        })
    }

    fn matches_command(&self, words: &[String]) -> bool {
        match &self.spec {
            None => true,
            Some(Spec::Exact(w)) => words == w.as_slice(),
            Some(Spec::Prefix(p)) => words.starts_with(p),
            Some(Spec::Path(_) | Spec::Domain(_)) => false,
        }
    }

    fn matches_domain(&self, host: &str) -> bool {
        match &self.spec {
            None => true,
            Some(Spec::Domain(d)) => match d.strip_prefix("*.") {
                Some(base) => {
                    host == base || host.strip_suffix(base).is_some_and(|p| p.ends_with('.'))
                }
                None => host == d,
            },
            Some(_) => false,
        }
    }

    fn matches_path(&self, rel: &str) -> bool {
        match &self.spec {
            None => true,
            Some(Spec::Path(g)) => g.is_match(rel),
            Some(_) => false,
        }
    }
}

fn command_spec(s: &str, tool: &str) -> Result<Spec, String> {
    let (body, prefix) = match s.strip_suffix(":*") {
        Some(b) => (b, true),
        None => (s, false),
    };
    let script = parse(body).map_err(|e| format!("cannot parse the command: {e}"))?;
    if !script.defines.is_empty() {
        return Err(format!(
            "a {tool} rule names a command, not a function definition"
        ));
    }
    let mut cmds = script.commands;
    let words = match cmds.len() {
        // `Bash(:*)`: every command. Not `Bash(for:*)` or `Bash(if:*)`, which leave no
        // command word either but were never meant to match everything.
        0 if prefix && body.trim().is_empty() => Vec::new(),
        1 => cmds.remove(0),
        _ => {
            return Err(format!(
                "a {tool} rule names one simple command (no `;`, `&&`, `|` …), or a prefix ending in `:*`"
            ));
        }
    };
    Ok(if prefix {
        Spec::Prefix(words)
    } else {
        Spec::Exact(words)
    })
}

/// A glob relative to the workspace; `dir/**` also matches `dir` itself.
fn path_glob(s: &str) -> Result<GlobSet, String> {
    let pattern = s.trim().trim_start_matches("./");
    let mut set = GlobSetBuilder::new();
    let mut add = |p: &str| -> Result<(), String> {
        let g = GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("bad glob: {e}"))?;
        set.add(g);
        Ok(())
    };
    add(pattern)?;
    if let Some(dir) = pattern.strip_suffix("/**")
        && !dir.is_empty()
    {
        add(dir)?;
    }
    set.build().map_err(|e| format!("bad glob: {e}"))
}

/// Variables an allow list lets a command line set (`RUST_BACKTRACE=1 cargo test`): they
/// tune output, locale and diagnostics, never what program runs or what it loads. Any
/// other assignment (`PATH`, `LD_PRELOAD`, `BASH_ENV`, `RUSTC_WRAPPER`, `GIT_SSH_COMMAND`,
/// `NODE_OPTIONS` …) is refused under an allow list: a list of the dangerous ones could
/// never be complete.
const SAFE_ASSIGNMENTS: &[&str] = &[
    "RUST_BACKTRACE",
    "RUST_LOG",
    "RUST_TEST_THREADS",
    "CARGO_TERM_COLOR",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "TERM",
    "COLORTERM",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "CI",
    "NODE_ENV",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "GOOS",
    "GOARCH",
    "CGO_ENABLED",
];

/// The reason a call is denied by the rules, or `None` when they let it through. `subject`
/// is what the tool said the call touches.
pub(crate) fn check_rules(
    settings: &Settings,
    name: &str,
    subject: &Subject,
    workspace: &Path,
) -> Option<String> {
    let deny: Vec<&Rule> = settings
        .deny
        .iter()
        .filter(|r| names(&r.tool, name))
        .collect();
    let allow: Vec<&Rule> = settings
        .allow
        .iter()
        .filter(|r| names(&r.tool, name))
        .collect();
    let deny_opaque = settings.deny_opaque && matches!(subject, Subject::Command(_));
    if deny.is_empty() && allow.is_empty() && !deny_opaque {
        return None;
    }
    if let Some(r) = deny.iter().find(|r| r.spec.is_none()) {
        return Some(format!("denied by policy: {}", r.text));
    }
    let allow_all = allow.is_empty() || allow.iter().any(|r| r.spec.is_none());
    let listed = || {
        allow
            .iter()
            .map(|r| r.text.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match subject {
        Subject::Command(command) => {
            let script = match parse(command) {
                Ok(p) => p,
                Err(e) => {
                    return Some(format!(
                        "denied by policy: the command cannot be parsed ({e}), so the \
                         permission rules cannot be checked; write it as plain commands"
                    ));
                }
            };
            let parts = &script.commands;
            for part in parts {
                for variant in deny_variants(part) {
                    if let Some(r) = deny.iter().find(|r| r.matches_command(&variant)) {
                        return Some(format!("denied by policy: {}", r.text));
                    }
                }
            }
            // An opaque command may be the one a deny rule names, and no allow rule naming a
            // command can vouch for it; only a rule allowing every command lets it run.
            if let Some(o) = script.opaque.first() {
                let by = if deny_opaque {
                    Some("--deny-opaque".to_string())
                } else if let Some(r) = deny.first() {
                    Some(r.text.clone())
                } else if !allow_all {
                    Some(format!("the allow rules ({})", listed()))
                } else {
                    None
                };
                if let Some(by) = by {
                    return Some(format!(
                        "denied by policy ({by}): `{}` is opaque: {}, so the permission rules \
                         cannot tell what it runs; write the command out with its program \
                         named literally",
                        o.command, o.why
                    ));
                }
            }
            if !allow_all {
                for part in parts {
                    if !allow.iter().any(|r| r.matches_command(part)) {
                        return Some(format!(
                            "denied by policy: `{}` matches no allow rule (allowed: {})",
                            part.join(" "),
                            listed()
                        ));
                    }
                }
                // Every command allowed, the body's too; but a defined name no longer
                // means its command (after `cargo() { …; }`, `cargo test` runs the body),
                // and an exported function (`export -f`) reaches every bash an allowed
                // command starts. Rather than track each call, refuse any definition.
                // A variable set before a command changes what an allowed command runs
                // (`PATH=./bin cargo test`, `LD_PRELOAD=x.so cargo test`, `BASH_ENV=…`),
                // and one set on its own does for the rest of the line.
                if let Some(var) = script
                    .assigns
                    .iter()
                    .find(|v| !SAFE_ASSIGNMENTS.contains(&v.as_str()))
                {
                    return Some(format!(
                        "denied by policy: the command sets `{var}`, which can change what an \
                         allowed command runs, so the allow rules cannot vouch for it; run the \
                         command without it (variables an allow list lets through: {})",
                        SAFE_ASSIGNMENTS.join(", ")
                    ));
                }
                if let Some(name) = script.defines.first() {
                    return Some(format!(
                        "denied by policy: the command defines `{name}` (a function or alias, \
                         or a builtin swapped by `enable`), which would run instead of any \
                         command of that name, so the allow rules cannot vouch for it; write \
                         the commands out (allowed: {})",
                        listed()
                    ));
                }
            }
        }
        Subject::Paths(paths) => {
            for raw in paths {
                let candidates = path_candidates(raw, workspace);
                if let Some(r) = deny
                    .iter()
                    .find(|r| candidates.iter().any(|c| r.matches_path(c)))
                {
                    return Some(format!("denied by policy: {}", r.text));
                }
            }
            for raw in paths {
                let candidates = path_candidates(raw, workspace);
                if !allow_all
                    && !candidates
                        .iter()
                        .all(|c| allow.iter().any(|r| r.matches_path(c)))
                {
                    return Some(format!(
                        "denied by policy: {raw} matches no allow rule (allowed: {})",
                        listed()
                    ));
                }
            }
        }
        Subject::Domain(host) => {
            if let Some(r) = deny.iter().find(|r| r.matches_domain(host)) {
                return Some(format!("denied by policy: {}", r.text));
            }
            if !allow_all && !allow.iter().any(|r| r.matches_domain(host)) {
                return Some(format!(
                    "denied by policy: {host} matches no allow rule (allowed: {})",
                    listed()
                ));
            }
        }
        // Only rules without a specifier name such a tool: handled above.
        Subject::Nothing => {}
    }
    None
}

/// The forms of a command deny rules are checked against: as written, with the command's
/// directory dropped (`/bin/rm` is `rm`), and, after a wrapper (`nohup`, `env A=1`,
/// `nice -n 5`, `timeout 5` …), every later word as the start of the command: a wrapper's
/// options may take arguments (`-n 5`, `-u X`), so rather than know each one, any word
/// after it may be the command. That can deny more than meant (`nice echo rm` against
/// `Bash(rm:*)`), never less: deny rules fail closed.
fn deny_variants(words: &[String]) -> Vec<Vec<String>> {
    let mut out = vec![words.to_vec()];
    let mut starts = vec![0usize];
    let mut seen = std::collections::HashSet::new();
    while let Some(start) = starts.pop() {
        if !seen.insert(start) || start >= words.len() {
            continue;
        }
        let rest = &words[start..];
        let first = &rest[0];
        let base = base_name(first);
        let mut v = rest.to_vec();
        v[0] = base.to_string();
        if !out.contains(&v) {
            out.push(v);
        }
        // An option first (left by a keyword or wrapper the tokenizer does not know) is
        // as unknown as a wrapper's: the command may start at any later word.
        if WRAPPERS.contains(&base) || base.starts_with('-') {
            starts.extend(start + 1..words.len());
        }
    }
    out
}

/// The workspace-relative forms of a path a call names: lexically normalised, and with
/// symlinks resolved (through the nearest existing ancestor). Outside the workspace the
/// absolute path is used, so an absolute glob can match it.
fn path_candidates(raw: &str, workspace: &Path) -> Vec<String> {
    let p = Path::new(raw);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        workspace.join(p)
    };
    let lexical = normalize_lexically(&abs);
    let mut out = vec![relative_form(&lexical, workspace)];
    // What the tool really opens: symlinks followed before `..` is applied, as the
    // kernel does (`link/../x` is `x` beside the link's target, not beside the link).
    let physical = crate::tools::paths::physical_path(workspace, raw)
        .or_else(|| resolve_existing_prefix(&lexical));
    if let Some(real) = physical {
        let r = relative_form(&real, workspace);
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

fn relative_form(p: &Path, workspace: &Path) -> String {
    match p.strip_prefix(workspace) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => p.to_string_lossy().into_owned(),
    }
}

/// `a/./b/../c` is `a/c`, without touching the filesystem.
fn normalize_lexically(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The path with symlinks resolved in its longest existing prefix, the rest appended.
fn resolve_existing_prefix(p: &Path) -> Option<PathBuf> {
    let mut existing = p.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Some(out);
        }
        rest.push(existing.file_name()?.to_os_string());
        if !existing.pop() {
            return None;
        }
    }
}

/// The ask rule a call matches, if any (checked after the deny and allow rules let the
/// call through: a deny rule wins, and an ask rule wins over an allow rule, so that
/// `ask: ["Bash(git push:*)"]` still asks under `allow: ["Bash"]`). Matched as a deny rule
/// is, so that it errs towards asking: any simple command of the line (wrappers looked
/// through), any path the call names, and an opaque command whenever a command rule
/// names the tool (what it runs cannot be told).
pub(crate) fn ask_rule<'s>(
    settings: &'s Settings,
    name: &str,
    subject: &Subject,
    workspace: &Path,
) -> Option<&'s Rule> {
    let mut rules = settings.ask.iter().filter(|r| names(&r.tool, name));
    // No ask rule names the tool: nothing to match, and the paths are not resolved
    // (resolving a path costs an lstat per component, on every call).
    rules.clone().next()?;
    rules
        .clone()
        .find(|r| r.spec.is_none())
        .or_else(|| match subject {
            Subject::Command(command) => {
                let Ok(script) = parse(command) else {
                    return rules.next();
                };
                if !script.opaque.is_empty() {
                    return rules.next();
                }
                script.commands.iter().find_map(|part| {
                    deny_variants(part)
                        .iter()
                        .find_map(|v| rules.clone().find(|r| r.matches_command(v)))
                })
            }
            Subject::Paths(paths) => paths.iter().find_map(|raw| {
                let candidates = path_candidates(raw, workspace);
                rules
                    .clone()
                    .find(|r| candidates.iter().any(|c| r.matches_path(c)))
            }),
            Subject::Domain(host) => rules.clone().find(|r| r.matches_domain(host)),
            Subject::Nothing => None,
        })
}

/// Whether any allow rule names the tool (an allow list decided the call).
pub(crate) fn allow_names(settings: &Settings, name: &str) -> bool {
    settings.allow.iter().any(|r| names(&r.tool, name))
}
