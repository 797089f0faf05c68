//! Permissions and hooks (SPEC §6): the settings files, the `Tool` / `Tool(specifier)`
//! rules, the PreToolUse / PostToolUse hooks, and `PolicyGate`, the `Gate` that applies
//! them in the order of SPEC §5 (pre-tool hooks, then the rules; post-tool hooks after
//! the tool).
//!
//! Settings come from `.agent/settings.json` in the workspace (unless
//! `--no-project-settings`) and then each `--settings FILE`, in order; rule and hook lists
//! are concatenated. A mistake in a settings file (bad JSON, an unknown key, a rule or
//! matcher naming an unknown tool) is a usage error naming the file: a silently ignored
//! guard would be worse than none.
//!
//! Bash rules are checked against every simple command of the command line, as
//! `shell_words` splits it. File-tool rules are globs relative to the workspace, matched
//! against the path the call names (lexically normalised, and again with symlinks
//! resolved): deny when either form matches, allow only when both do.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::cli::OnDeny;
use crate::error::Error;
use crate::output;
use crate::process::{self, CommandSpec, Stderr};
use crate::shell_words::split_commands;
use crate::tools::gate::{Denial, Gate, GateCall};
use crate::tools::{KnownTool, Subject, SubjectKind, ToolContext, ToolResult};

/// The project's settings file, relative to the workspace root.
pub const PROJECT_SETTINGS: &str = ".agent/settings.json";
/// A hook runs at most this long unless its `timeout` says otherwise (SPEC §6).
const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);
/// Settings files larger than this are refused: a settings file is a few rules.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;
/// Wrapper commands looked through when checking deny rules (`nohup rm x` is `rm x`).
const WRAPPERS: &[&str] = &[
    "command", "builtin", "exec", "nohup", "time", "env", "sudo", "doas", "nice", "ionice",
    "timeout", "stdbuf", "setsid", "chrt", "taskset", "strace", "ltrace", "watch", "flock",
    "unbuffer", "xargs", "coproc",
];

// ---------------------------------------------------------------------------------------
// Settings files

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingsFile {
    #[serde(rename = "$schema", default)]
    _schema: Option<Value>,
    #[serde(default)]
    permissions: PermissionsFile,
    #[serde(default)]
    hooks: HooksFile,
    /// Model prices for `cost_usd` and `--max-cost-usd`: read and validated by
    /// `budget::load_prices`.
    #[serde(rename = "prices", default)]
    _prices: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PermissionsFile {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HooksFile {
    #[serde(rename = "PreToolUse", default)]
    pre_tool_use: Vec<HookFile>,
    #[serde(rename = "PostToolUse", default)]
    post_tool_use: Vec<HookFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HookFile {
    #[serde(default)]
    matcher: Option<String>,
    command: String,
    #[serde(default)]
    timeout: Option<TimeoutValue>,
}

/// `"10s"` (humantime) or a number of seconds.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TimeoutValue {
    Text(String),
    /// Any JSON number; checked (positive, finite) where the hook is built, so that a
    /// bad value gets a message naming the hook's `timeout`, not serde's.
    Seconds(f64),
    /// Anything else (`true`, `[]`): refused with the same clear message.
    Other(Value),
}

/// The merged settings of a run.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
    pub pre_tool_use: Vec<Hook>,
    pub post_tool_use: Vec<Hook>,
    /// The files read, in order (for logs).
    pub sources: Vec<PathBuf>,
}

/// Which files to read and how: from the command line.
#[derive(Debug, Clone)]
pub struct SettingsSources<'a> {
    pub workspace: &'a Path,
    pub files: &'a [PathBuf],
    pub no_project_settings: bool,
}

impl Settings {
    /// Reads and merges the project file and every `--settings` file. `known` is every
    /// tool name (enabled or not): a rule or matcher naming another is a usage error.
    pub fn load(src: &SettingsSources<'_>, known: &[KnownTool]) -> Result<Settings, Error> {
        let mut settings = Settings::default();
        if !src.no_project_settings {
            let project = src.workspace.join(PROJECT_SETTINGS);
            if project.exists() {
                settings.merge_file(&project, PROJECT_SETTINGS, known)?;
            }
        }
        for file in src.files {
            settings.merge_file(file, &format!("--settings {}", file.display()), known)?;
        }
        Ok(settings)
    }

    fn merge_file(&mut self, path: &Path, label: &str, known: &[KnownTool]) -> Result<(), Error> {
        let err = |msg: String| Error::Usage(format!("{label}: {msg}"));
        let len = std::fs::metadata(path)
            .map_err(|e| err(e.to_string()))?
            .len();
        if len > MAX_SETTINGS_BYTES {
            return Err(err(format!(
                "{len} bytes is more than the {MAX_SETTINGS_BYTES} bytes a settings file may have"
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        self.merge_str(&text, label, known)?;
        self.sources.push(path.to_path_buf());
        Ok(())
    }

    /// Merges one file's text; `label` names the file in errors.
    pub(crate) fn merge_str(
        &mut self,
        text: &str,
        label: &str,
        known: &[KnownTool],
    ) -> Result<(), Error> {
        let err = |msg: String| Error::Usage(format!("{label}: {msg}"));
        let file: SettingsFile =
            serde_json::from_str(text).map_err(|e| err(format!("invalid settings: {e}")))?;
        for r in &file.permissions.allow {
            self.allow.push(Rule::parse(r, known).map_err(&err)?);
        }
        for r in &file.permissions.deny {
            self.deny.push(Rule::parse(r, known).map_err(&err)?);
        }
        for (event, hooks, list) in [
            (
                "PreToolUse",
                file.hooks.pre_tool_use,
                &mut self.pre_tool_use,
            ),
            (
                "PostToolUse",
                file.hooks.post_tool_use,
                &mut self.post_tool_use,
            ),
        ] {
            for h in hooks {
                list.push(Hook::from_file(h, known).map_err(|m| err(format!("{event}: {m}")))?);
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.allow.is_empty()
            && self.deny.is_empty()
            && self.pre_tool_use.is_empty()
            && self.post_tool_use.is_empty()
    }
}

/// What a rule's specifier means for the named tool; an unknown name is an error.
fn check_tool(name: &str, known: &[KnownTool]) -> Result<SubjectKind, String> {
    match known.iter().find(|k| k.name == name) {
        Some(k) => Ok(k.subject),
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

// ---------------------------------------------------------------------------------------
// Rules

/// One permission rule, `Tool` or `Tool(specifier)`.
#[derive(Debug, Clone)]
pub struct Rule {
    /// As written, for messages (`Bash(rm:*)`).
    pub text: String,
    pub tool: String,
    spec: Option<Spec>,
}

#[derive(Debug, Clone)]
enum Spec {
    /// `Bash(git status)`: the command's words exactly.
    Exact(Vec<String>),
    /// `Bash(cargo test:*)`: the command's first words.
    Prefix(Vec<String>),
    /// `ReadFile(secrets/**)`: a glob relative to the workspace.
    Path(GlobSet),
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
            Some(Spec::Path(_)) => false,
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
    let mut cmds = split_commands(body).map_err(|e| format!("cannot parse the command: {e}"))?;
    let words = match cmds.len() {
        0 if prefix => Vec::new(), // `Bash(:*)`: every command
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

/// The reason a call is denied by the rules, or `None` when they let it through. `subject`
/// is what the tool said the call touches.
pub(crate) fn check_rules(
    settings: &Settings,
    name: &str,
    subject: &Subject,
    workspace: &Path,
) -> Option<String> {
    let deny: Vec<&Rule> = settings.deny.iter().filter(|r| r.tool == name).collect();
    let allow: Vec<&Rule> = settings.allow.iter().filter(|r| r.tool == name).collect();
    if deny.is_empty() && allow.is_empty() {
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
            let parts = match split_commands(command) {
                Ok(p) => p,
                Err(e) => {
                    return Some(format!(
                        "denied by policy: the command cannot be parsed ({e}), so the \
                         permission rules cannot be checked; write it as plain commands"
                    ));
                }
            };
            for part in &parts {
                for variant in deny_variants(part) {
                    if let Some(r) = deny.iter().find(|r| r.matches_command(&variant)) {
                        return Some(format!("denied by policy: {}", r.text));
                    }
                }
            }
            if !allow_all {
                for part in &parts {
                    if !allow.iter().any(|r| r.matches_command(part)) {
                        return Some(format!(
                            "denied by policy: `{}` matches no allow rule (allowed: {})",
                            part.join(" "),
                            listed()
                        ));
                    }
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
        let base = first.rsplit('/').next().unwrap_or(first);
        let mut v = rest.to_vec();
        v[0] = base.to_string();
        if !out.contains(&v) {
            out.push(v);
        }
        // An option first (`-p` left by `time -p`, which the shell reads as a keyword)
        // is as unknown as a wrapper's: the command may start at any later word.
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
    let physical = crate::tools::sandbox::physical_path(workspace, raw)
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

// ---------------------------------------------------------------------------------------
// Hooks

/// One hook command and the tools it applies to.
#[derive(Debug, Clone)]
pub struct Hook {
    /// `None`: every tool (`*`).
    pub tools: Option<Vec<String>>,
    pub command: String,
    pub timeout: Duration,
}

impl Hook {
    fn from_file(h: HookFile, known: &[KnownTool]) -> Result<Hook, String> {
        if h.command.trim().is_empty() {
            return Err("a hook has an empty `command`".into());
        }
        let tools = match h.matcher.as_deref().map(str::trim) {
            None | Some("") | Some("*") => None,
            Some(m) => {
                let names: Vec<String> = m.split('|').map(|s| s.trim().to_string()).collect();
                for n in &names {
                    check_tool(n, known).map_err(|e| format!("matcher {m:?}: {e}"))?;
                }
                Some(names)
            }
        };
        let timeout = match h.timeout {
            None => DEFAULT_HOOK_TIMEOUT,
            Some(TimeoutValue::Seconds(s)) => Duration::try_from_secs_f64(s).map_err(|_| {
                format!(
                    "hook timeout {s}: give a positive number of seconds or a duration like \"10s\""
                )
            })?,
            Some(TimeoutValue::Other(v)) => {
                return Err(format!(
                    "hook timeout {v}: give a number of seconds or a duration like \"10s\""
                ));
            }
            Some(TimeoutValue::Text(t)) => humantime::parse_duration(&t)
                .map_err(|e| format!("hook timeout {t:?}: {e} (examples: 10s, 2m)"))?,
        };
        if timeout.is_zero() {
            return Err("a hook timeout must be longer than 0s".into());
        }
        Ok(Hook {
            tools,
            command: h.command,
            timeout,
        })
    }

    fn applies_to(&self, tool: &str) -> bool {
        self.tools
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == tool))
    }
}

/// What a hook said.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HookVerdict {
    Continue,
    /// Exit 2: its stderr, for the model.
    Block(String),
    /// Any other exit, a timeout, a failure to start: the message saying so.
    Failed(String),
}

/// The places a hook runs from: the workspace, the scrubbed child environment.
#[derive(Debug, Clone)]
struct HookRunner {
    workspace: PathBuf,
    env: Arc<Vec<(String, String)>>,
    spill_dir: PathBuf,
}

impl HookRunner {
    fn run(&self, event: &str, hook: &Hook, payload: &Value) -> HookVerdict {
        let mut spec = CommandSpec::new(
            hook.command.clone(),
            &self.workspace,
            self.env.clone(),
            hook.timeout,
            &self.spill_dir,
        );
        spec.stdin = Some(payload.to_string().into_bytes());
        spec.stderr = Stderr::Separate;
        let who = format!("{event} hook `{}`", hook.command);
        let out = match process::run(&spec) {
            Ok(o) => o,
            Err(e) => return HookVerdict::Failed(format!("{who} could not run: {e}")),
        };
        let stderr = out
            .stderr
            .as_ref()
            .map(|c| c.text.trim().to_string())
            .unwrap_or_default();
        if !out.output.text.trim().is_empty() {
            output::debug(&format!("{who} printed: {}", out.output.text.trim()));
        }
        if out.timed_out {
            return HookVerdict::Failed(format!(
                "{who} timed out after {}",
                humantime::format_duration(hook.timeout)
            ));
        }
        if out.interrupted {
            return HookVerdict::Failed(format!("{who} was stopped: the run is ending"));
        }
        match out.exit_code {
            Some(0) => HookVerdict::Continue,
            Some(2) if stderr.is_empty() => {
                HookVerdict::Block(format!("blocked by {who} (exit 2, no message)"))
            }
            Some(2) => HookVerdict::Block(stderr),
            _ => {
                let how = match (out.exit_code, out.signal) {
                    (Some(c), _) => format!("exit {c}"),
                    (None, Some(s)) => format!("killed by signal {s}"),
                    (None, None) => "ended abnormally".to_string(),
                };
                let tail = if stderr.is_empty() {
                    String::new()
                } else {
                    format!(": {stderr}")
                };
                HookVerdict::Failed(format!("{who} failed ({how}){tail}"))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The gate

/// Hooks and rules as the dispatcher's `Gate` (SPEC §5, §6).
pub struct PolicyGate {
    settings: Settings,
    runner: HookRunner,
    on_deny: OnDeny,
}

impl PolicyGate {
    /// `ctx` gives the workspace, the hooks' environment (the same as Bash's) and the
    /// spill directory for long hook output.
    pub fn new(settings: Settings, ctx: &ToolContext, on_deny: OnDeny) -> Self {
        PolicyGate {
            settings,
            runner: HookRunner {
                workspace: ctx.workspace.clone(),
                env: ctx.child_env.clone(),
                spill_dir: ctx.spill_dir.clone(),
            },
            on_deny,
        }
    }

    fn payload(&self, event: &str, call: &GateCall<'_>) -> Value {
        json!({
            "hook_event_name": event,
            "tool_name": call.tool.name(),
            "tool_input": call.input,
            "tool_use_id": call.id,
            "cwd": self.runner.workspace.display().to_string(),
        })
    }
}

impl Gate for PolicyGate {
    fn before(&self, call: &GateCall<'_>) -> Result<(), Denial> {
        let name = call.tool.name();
        let hooks: Vec<&Hook> = self
            .settings
            .pre_tool_use
            .iter()
            .filter(|h| h.applies_to(name))
            .collect();
        if !hooks.is_empty() {
            let payload = self.payload("PreToolUse", call);
            for hook in hooks {
                match self.runner.run("PreToolUse", hook, &payload) {
                    HookVerdict::Continue => {}
                    HookVerdict::Block(reason) => return Err(Denial { reason }),
                    HookVerdict::Failed(msg) => {
                        output::warn(&msg);
                        return Err(Denial {
                            reason: format!(
                                "{msg}; the call was blocked because hooks fail closed"
                            ),
                        });
                    }
                }
            }
        }
        match check_rules(&self.settings, name, call.subject, &self.runner.workspace) {
            Some(reason) => Err(Denial { reason }),
            None => Ok(()),
        }
    }

    fn after(&self, call: &GateCall<'_>, result: &mut ToolResult) {
        let hooks: Vec<&Hook> = self
            .settings
            .post_tool_use
            .iter()
            .filter(|h| h.applies_to(call.tool.name()))
            .collect();
        if hooks.is_empty() {
            return;
        }
        let mut payload = self.payload("PostToolUse", call);
        payload["tool_result"] = json!({"content": result.content, "is_error": result.is_error});
        for hook in hooks {
            match self.runner.run("PostToolUse", hook, &payload) {
                HookVerdict::Continue => {}
                HookVerdict::Block(msg) => {
                    result.content.push_str("\n\n");
                    result.content.push_str(&msg);
                }
                HookVerdict::Failed(msg) => {
                    output::warn(&msg);
                    result.content.push_str(&format!("\n\n[{msg}]"));
                }
            }
        }
    }

    fn ends_run_on_denial(&self) -> bool {
        self.on_deny == OnDeny::Fail
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::Dispatcher;
    use crate::tools::registry::{Registry, ToolSelection};
    use crate::tools::{Category, Tool, ToolError, TypedTool};
    use crate::turn::PendingCall;

    /// The built-in tools, as the settings know them.
    fn known() -> Vec<KnownTool> {
        Registry::builtin(&ToolSelection::default()).known()
    }

    /// The rules' verdict on one call, its subject as the tool gives it. Fields the test
    /// leaves out that the tool requires (WriteFile's `content` …) are filled in.
    fn rules(s: &Settings, tool: &dyn Tool, input: &Value, ws: &Path) -> Option<String> {
        let mut input = input.clone();
        let filler = [
            ("content", ""),
            ("old_string", "a"),
            ("new_string", "b"),
            ("pattern", "x"),
        ];
        for (field, value) in filler {
            if tool.input_schema()["properties"].get(field).is_some() && input.get(field).is_none()
            {
                input[field] = json!(value);
            }
        }
        let subject = tool.prepare(&input).unwrap().subject();
        check_rules(s, tool.name(), &subject, ws)
    }

    fn call<'a>(
        tool: &'a dyn Tool,
        id: &'a str,
        input: &'a Value,
        subject: &'a Subject,
    ) -> GateCall<'a> {
        GateCall {
            tool,
            id,
            input,
            subject,
        }
    }

    fn before(g: &PolicyGate, tool: &dyn Tool, id: &str, input: &Value) -> Result<(), Denial> {
        let subject = tool.prepare(input).unwrap().subject();
        g.before(&call(tool, id, input, &subject))
    }

    fn after(g: &PolicyGate, tool: &dyn Tool, id: &str, input: &Value, r: &mut ToolResult) {
        let subject = tool.prepare(input).unwrap().subject();
        g.after(&call(tool, id, input, &subject), r)
    }

    fn settings(json: &str) -> Settings {
        let mut s = Settings::default();
        s.merge_str(json, "test.json", &known()).unwrap();
        s
    }

    fn tool(name: &str) -> Arc<dyn Tool> {
        let sel = ToolSelection {
            allow_write: true,
            allow_bash: true,
            ..Default::default()
        };
        Registry::builtin(&sel).get(name).unwrap().clone()
    }

    fn bash(s: &Settings, cmd: &str) -> Option<String> {
        rules(
            s,
            tool("Bash").as_ref(),
            &json!({"command": cmd}),
            Path::new("/ws"),
        )
    }

    #[test]
    fn rule_parsing() {
        assert!(Rule::parse("Bash", &known()).unwrap().spec.is_none());
        assert!(matches!(
            Rule::parse("Bash(rm:*)", &known()).unwrap().spec,
            Some(Spec::Prefix(ref w)) if w == &["rm"]
        ));
        assert!(matches!(
            Rule::parse("Bash(git  status)", &known()).unwrap().spec,
            Some(Spec::Exact(ref w)) if w == &["git", "status"]
        ));
        for (bad, needle) in [
            ("Nope", "unknown tool \"Nope\""),
            ("Nope(x)", "unknown tool"),
            ("Bash(rm", "closing"),
            ("Bash()", "empty"),
            ("Bash(a && b)", "one simple command"),
            ("Bash(echo 'x)", "cannot parse"),
            ("ReadFile([)", "bad glob"),
        ] {
            let e = Rule::parse(bad, &known()).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn settings_errors_name_the_file() {
        let mut s = Settings::default();
        for (text, needle) in [
            ("{", "invalid settings"),
            (r#"{"permisions": {}}"#, "unknown field"),
            (
                r#"{"permissions": {"deny": ["Bsh(rm:*)"]}}"#,
                "unknown tool \"Bsh\"",
            ),
            (
                r#"{"hooks": {"PreToolUse": [{"matcher": "Bash|Wrte", "command": "x"}]}}"#,
                "unknown tool \"Wrte\"",
            ),
            (
                r#"{"hooks": {"PreToolUse": [{"command": "x", "timeout": "soon"}]}}"#,
                "hook timeout",
            ),
            (r#"{"hooks": {"PostToolUse": [{"command": " "}]}}"#, "empty"),
            (
                r#"{"hooks": {"PreToolUse": [{"command": "x", "timeout": -1}]}}"#,
                "hook timeout -1",
            ),
            (
                r#"{"hooks": {"PreToolUse": [{"command": "x", "timeout": true}]}}"#,
                "hook timeout true",
            ),
        ] {
            let e = s.merge_str(text, "conf/x.json", &known()).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            let m = e.to_string();
            assert!(
                m.starts_with("conf/x.json: ") && m.contains(needle),
                "{text}: {m}"
            );
        }
    }

    #[test]
    fn hook_timeouts_take_fractional_seconds() {
        let s = settings(r#"{"hooks": {"PreToolUse": [{"command": "x", "timeout": 1.5}]}}"#);
        assert_eq!(s.pre_tool_use[0].timeout, Duration::from_millis(1500));
        let s = settings(r#"{"hooks": {"PreToolUse": [{"command": "x", "timeout": 7}]}}"#);
        assert_eq!(s.pre_tool_use[0].timeout, Duration::from_secs(7));
    }

    #[test]
    fn files_merge_in_order_and_project_file_can_be_ignored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".agent")).unwrap();
        std::fs::write(
            dir.path().join(PROJECT_SETTINGS),
            r#"{"permissions": {"deny": ["Bash(rm:*)"]},
                "hooks": {"PreToolUse": [{"matcher": "Bash", "command": "a", "timeout": "10s"}]}}"#,
        )
        .unwrap();
        let extra = dir.path().join("extra.json");
        std::fs::write(
            &extra,
            r#"{"permissions": {"deny": ["ReadFile(.env)"], "allow": ["Bash(ls)"]},
                "hooks": {"PreToolUse": [{"command": "b", "timeout": 5}]}}"#,
        )
        .unwrap();
        let files = vec![extra.clone()];
        let src = SettingsSources {
            workspace: dir.path(),
            files: &files,
            no_project_settings: false,
        };
        let s = Settings::load(&src, &known()).unwrap();
        let deny: Vec<_> = s.deny.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(deny, ["Bash(rm:*)", "ReadFile(.env)"]);
        assert_eq!(s.allow.len(), 1);
        let hooks: Vec<_> = s
            .pre_tool_use
            .iter()
            .map(|h| (h.command.as_str(), h.timeout))
            .collect();
        assert_eq!(
            hooks,
            [
                ("a", Duration::from_secs(10)),
                ("b", Duration::from_secs(5))
            ]
        );
        assert_eq!(
            s.pre_tool_use[0].tools.as_deref(),
            Some(&["Bash".to_string()][..])
        );
        assert!(s.pre_tool_use[1].tools.is_none());
        let s = Settings::load(
            &SettingsSources {
                no_project_settings: true,
                ..src.clone()
            },
            &known(),
        )
        .unwrap();
        assert_eq!(s.deny.len(), 1);
        let missing = vec![dir.path().join("nope.json")];
        let e = Settings::load(
            &SettingsSources {
                files: &missing,
                ..src
            },
            &known(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("--settings") && e.to_string().contains("nope.json"));
    }

    #[test]
    fn deny_prefix_blocks_rm_and_smuggling() {
        let s = settings(r#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#);
        assert_eq!(
            bash(&s, "rm x").as_deref(),
            Some("denied by policy: Bash(rm:*)")
        );
        for smuggled in [
            "rm",
            "echo hi && rm -rf x",
            r#"echo "a" ; rm x"#,
            "echo a || rm x",
            "ls | rm x",
            "ls & rm x",
            "ls\nrm x",
            "echo $(rm x)",
            "echo `rm x`",
            r#"echo "$(rm x)""#,
            "(rm x)",
            "{ rm x; }",
            "'rm' x",
            r#""r"m x"#,
            r"\rm x",
            r"$'\x72m' x",
            "FOO=1 rm x",
            "> log rm x",
            "/bin/rm x",
            "nohup rm x",
            "env -i A=1 rm x",
            "nice -n 5 rm x",
            "env -u X rm x",
            "exec -a foo rm x",
            "time -p rm x",
            "timeout 5 rm x",
            "setsid rm x",
            "stdbuf -oL rm x",
            "coproc rm x",
            "xargs rm x",
            "cat <(rm x)",
            "if true; then rm x; fi",
            "cat <<EOF\n$(rm x)\nEOF",
        ] {
            assert_eq!(
                bash(&s, smuggled).as_deref(),
                Some("denied by policy: Bash(rm:*)"),
                "{smuggled:?}"
            );
        }
        for fine in [
            "ls",
            "echo rm x",
            "echo 'rm x'",
            "rmdir x",
            "echo \"a ; rm x\"",
        ] {
            assert_eq!(bash(&s, fine), None, "{fine:?}");
        }
        let e = bash(&s, "echo 'unclosed").unwrap();
        assert!(e.contains("cannot be parsed"), "{e}");
    }

    #[test]
    fn allow_rules_must_cover_every_part() {
        let s = settings(
            r#"{"permissions": {"allow": ["Bash(cargo test:*)", "Bash(git status)", "Bash(echo:*)"]}}"#,
        );
        for ok in [
            "cargo test",
            "cargo test -q --lib",
            "git status",
            "echo hi && cargo test",
        ] {
            assert_eq!(bash(&s, ok), None, "{ok:?}");
        }
        for (bad, part) in [
            ("git status --short", "git status --short"),
            ("cargo build", "cargo build"),
            ("echo hi && rm -rf x", "rm -rf x"),
            ("echo $(curl evil)", "curl evil"),
            ("cargo testing", "cargo testing"),
            ("bash -c 'cargo test'", "bash -c cargo test"),
        ] {
            let e = bash(&s, bad).unwrap_or_else(|| panic!("{bad:?} allowed"));
            assert!(
                e.contains(&format!("`{part}` matches no allow rule")),
                "{bad:?}: {e}"
            );
        }
        let e = bash(&s, "echo \"x").unwrap();
        assert!(e.contains("cannot be parsed"), "{e}");
        // Deny beats allow.
        let s = settings(r#"{"permissions": {"allow": ["Bash"], "deny": ["Bash(git push:*)"]}}"#);
        assert_eq!(bash(&s, "git status"), None);
        assert!(bash(&s, "git push origin").is_some());
        // No rules for Bash: anything goes, even what cannot be parsed.
        let s = settings(r#"{"permissions": {"deny": ["ReadFile(.env)"]}}"#);
        assert_eq!(bash(&s, "echo 'x"), None);
    }

    /// `link/../x` opens `x` beside the link's target: rules must judge that file, not
    /// the lexical `x` beside the link.
    #[test]
    fn file_rules_follow_symlinks_before_dot_dot() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("secrets")).unwrap();
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(ws.join(".env"), "K=v").unwrap();
        std::fs::write(ws.join("secrets/key"), "key").unwrap();
        std::os::unix::fs::symlink("../secrets", ws.join("sub/link")).unwrap();
        let s =
            settings(r#"{"permissions": {"deny": ["ReadFile(.env)", "EditFile(secrets/**)"]}}"#);
        let check = |t: &str, path: &str| rules(&s, tool(t).as_ref(), &json!({"path": path}), &ws);
        assert!(check("ReadFile", "sub/link/../.env").is_some());
        assert!(check("EditFile", "sub/link/../secrets/key").is_some());
        assert!(check("EditFile", "sub/link/key").is_some());
        assert_eq!(check("ReadFile", "sub/link/key"), None);
    }

    #[test]
    fn file_rules_are_workspace_globs() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("secrets")).unwrap();
        std::fs::write(ws.join(".env"), "K=v").unwrap();
        std::os::unix::fs::symlink(ws.join(".env"), ws.join("innocent")).unwrap();
        let s = settings(
            r#"{"permissions": {"deny": ["ReadFile(.env)", "EditFile(secrets/**)", "Grep(secrets/**)"],
                                "allow": ["WriteFile(src/**)"]}}"#,
        );
        let check = |t: &str, path: &str| rules(&s, tool(t).as_ref(), &json!({"path": path}), &ws);
        assert_eq!(
            check("ReadFile", ".env").as_deref(),
            Some("denied by policy: ReadFile(.env)")
        );
        for sneaky in [
            "./.env",
            "src/../.env",
            "innocent",
            &ws.join(".env").display().to_string(),
        ] {
            assert!(check("ReadFile", sneaky).is_some(), "{sneaky}");
        }
        assert_eq!(check("ReadFile", "src/.env"), None);
        assert!(check("EditFile", "secrets/a/b.txt").is_some());
        assert!(check("Grep", "secrets").is_some());
        assert_eq!(check("EditFile", "src/secrets.rs"), None);
        assert_eq!(check("WriteFile", "src/main.rs"), None);
        assert_eq!(check("WriteFile", "src/new/dir/f.rs"), None);
        let e = check("WriteFile", "README.md").unwrap();
        assert!(
            e.contains("matches no allow rule (allowed: WriteFile(src/**))"),
            "{e}"
        );
        assert!(check("WriteFile", "src/../x").is_some());
        // Glob: `*` does not cross `/`.
        let s2 = settings(r#"{"permissions": {"deny": ["ReadFile(*.key)"]}}"#);
        let t = tool("ReadFile");
        assert!(rules(&s2, t.as_ref(), &json!({"path": "a.key"}), &ws).is_some());
        assert!(rules(&s2, t.as_ref(), &json!({"path": "d/a.key"}), &ws).is_none());
    }

    #[test]
    fn plain_tool_rule_denies_every_call() {
        let s = settings(r#"{"permissions": {"deny": ["Glob"]}}"#);
        let r = rules(
            &s,
            tool("Glob").as_ref(),
            &json!({"pattern": "*"}),
            Path::new("/ws"),
        );
        assert_eq!(r.as_deref(), Some("denied by policy: Glob"));
        assert_eq!(bash(&s, "ls"), None);
    }

    fn gate_with(dir: &Path, json: &str) -> PolicyGate {
        let ctx = crate::tools::test_support::ctx(dir);
        PolicyGate::new(settings(json), &ctx, OnDeny::Feedback)
    }

    #[test]
    fn pre_hook_verdicts() {
        let dir = tempfile::tempdir().unwrap();
        let b = tool("Bash");
        let input = json!({"command": "ls"});
        let g = gate_with(
            dir.path(),
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "command": "echo 'no rm here' >&2; exit 2"}]}}"#,
        );
        assert_eq!(
            before(&g, b.as_ref(), "t1", &input).unwrap_err().reason,
            "no rm here"
        );
        // The matcher: another tool is not affected.
        assert!(before(&g, tool("Glob").as_ref(), "t1", &json!({"pattern": "*"})).is_ok());
        let g = gate_with(
            dir.path(),
            r#"{"hooks": {"PreToolUse": [{"command": "echo oops >&2; exit 1"}]}}"#,
        );
        let r = before(&g, b.as_ref(), "t1", &input).unwrap_err().reason;
        assert!(
            r.contains("failed (exit 1): oops") && r.contains("fail closed"),
            "{r}"
        );
        let g = gate_with(
            dir.path(),
            r#"{"hooks": {"PreToolUse": [{"command": "sleep 5", "timeout": "100ms"}]}}"#,
        );
        let r = before(&g, b.as_ref(), "t1", &input).unwrap_err().reason;
        assert!(r.contains("timed out after 100ms"), "{r}");
        let g = gate_with(
            dir.path(),
            r#"{"hooks": {"PreToolUse": [{"matcher": "*", "command": "cat > seen.json"}]}}"#,
        );
        assert!(before(&g, b.as_ref(), "toolu_9", &input).is_ok());
        let seen: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("seen.json")).unwrap()).unwrap();
        let ws = dir.path().canonicalize().unwrap();
        assert_eq!(
            seen,
            json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "ls"}, "tool_use_id": "toolu_9",
                   "cwd": ws.display().to_string()})
        );
    }

    #[test]
    fn hooks_run_before_rules_and_rules_still_apply() {
        let dir = tempfile::tempdir().unwrap();
        let g = gate_with(
            dir.path(),
            r#"{"permissions": {"deny": ["Bash(rm:*)"]},
                "hooks": {"PreToolUse": [{"command": "touch hook-ran"}]}}"#,
        );
        let r = before(&g, tool("Bash").as_ref(), "t", &json!({"command": "rm x"}));
        assert_eq!(r.unwrap_err().reason, "denied by policy: Bash(rm:*)");
        assert!(dir.path().join("hook-ran").exists());
    }

    #[test]
    fn post_hook_sees_result_and_can_append() {
        let dir = tempfile::tempdir().unwrap();
        let g = gate_with(
            dir.path(),
            r#"{"hooks": {"PostToolUse": [
                 {"command": "cat > post.json"},
                 {"matcher": "Bash", "command": "echo 'lint: 2 warnings' >&2; exit 2"},
                 {"command": "exit 7"}]}}"#,
        );
        let mut r = ToolResult::ok("<output>hi</output>");
        after(
            &g,
            tool("Bash").as_ref(),
            "t1",
            &json!({"command": "echo hi"}),
            &mut r,
        );
        let seen: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("post.json")).unwrap()).unwrap();
        assert_eq!(seen["hook_event_name"], "PostToolUse");
        assert_eq!(
            seen["tool_result"],
            json!({"content": "<output>hi</output>", "is_error": false})
        );
        assert!(
            r.content
                .starts_with("<output>hi</output>\n\nlint: 2 warnings"),
            "{}",
            r.content
        );
        assert!(r.content.contains("failed (exit 7)"), "{}", r.content);
        assert!(!r.is_error);
    }

    #[test]
    fn hooks_get_the_scrubbed_env() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = crate::tools::test_support::ctx(dir.path());
        ctx.child_env = Arc::new(vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("KEPT".into(), "yes".into()),
        ]);
        let s = settings(
            r#"{"hooks": {"PreToolUse": [{"command": "echo \"$KEPT-${HOME:-unset}\" > env.txt"}]}}"#,
        );
        let g = PolicyGate::new(s, &ctx, OnDeny::Fail);
        assert!(g.ends_run_on_denial());
        before(&g, tool("Bash").as_ref(), "t", &json!({"command": "ls"})).unwrap();
        let seen = std::fs::read_to_string(dir.path().join("env.txt")).unwrap();
        assert_eq!(seen.trim(), "yes-unset");
    }

    /// A tool defined here, not in `tools/`, whose path field is `target`.
    struct Mover;
    #[derive(Deserialize)]
    struct MoverInput {
        target: String,
    }
    impl TypedTool for Mover {
        type Input = MoverInput;
        fn name(&self) -> &str {
            "Mover"
        }
        fn description(&self) -> &str {
            "moves a file"
        }
        fn input_schema(&self) -> Value {
            json!({"type": "object", "properties": {"target": {"type": "string"}},
                   "required": ["target"]})
        }
        fn is_read_only(&self) -> bool {
            false
        }
        fn category(&self) -> Category {
            Category::File
        }
        fn subject_kind(&self) -> SubjectKind {
            SubjectKind::Paths
        }
        fn subject(&self, input: &MoverInput) -> Subject {
            Subject::Paths(vec![input.target.clone()])
        }
        fn execute(&self, _: &ToolContext, _: &MoverInput) -> Result<ToolResult, ToolError> {
            Ok(ToolResult::ok("moved"))
        }
    }

    /// The rules judge what the tool says a call touches: a deny rule on a new tool's
    /// `target` denies it through dispatch, though policy knows no such field.
    #[test]
    fn a_new_tools_subject_is_what_rules_match() {
        let dir = tempfile::tempdir().unwrap();
        let mut reg = Registry::builtin(&ToolSelection::default());
        reg.register(Arc::new(Mover));
        let mut s = Settings::default();
        s.merge_str(
            r#"{"permissions": {"deny": ["Mover(secrets/**)"]}}"#,
            "t.json",
            &reg.known(),
        )
        .unwrap();
        let ctx = crate::tools::test_support::ctx(dir.path());
        let gate = PolicyGate::new(s, &ctx, OnDeny::Feedback);
        let d = Dispatcher {
            registry: &reg,
            ctx: &ctx,
            gate: &gate,
            run_start: std::time::Instant::now(),
            watch: None,
        };
        let call = |target: &str| PendingCall {
            id: "t1".into(),
            name: "Mover".into(),
            input: Ok(json!({"target": target})),
        };
        for denied in ["secrets/key", "./secrets/a/b", "src/../secrets/key"] {
            let o = d.dispatch(&call(denied));
            assert_eq!(
                o.denial.map(|d| d.reason).as_deref(),
                Some("denied by policy: Mover(secrets/**)"),
                "{denied}"
            );
        }
        let o = d.dispatch(&call("src/key"));
        assert!(o.denial.is_none());
        assert_eq!(o.result.content, "moved");
    }

    /// A tool whose calls have no subject takes rules that name it, never a specifier.
    #[test]
    fn a_tool_without_subject_refuses_specifiers() {
        let known = vec![KnownTool {
            name: "mcp__srv__ping".into(),
            subject: SubjectKind::Nothing,
        }];
        assert!(Rule::parse("mcp__srv__ping", &known).is_ok());
        let e = Rule::parse("mcp__srv__ping(x)", &known).unwrap_err();
        assert!(e.contains("takes no specifier"), "{e}");
        let mut s = Settings::default();
        s.merge_str(
            r#"{"permissions": {"deny": ["mcp__srv__ping"]}}"#,
            "t",
            &known,
        )
        .unwrap();
        assert_eq!(
            check_rules(&s, "mcp__srv__ping", &Subject::Nothing, Path::new("/ws")).as_deref(),
            Some("denied by policy: mcp__srv__ping")
        );
    }
}
