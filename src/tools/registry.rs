//! The registry of tools: register, enable/disable, look up, list, and the `tools` array
//! sent to the API. `builtin` is the one place that lists the built-in tools; which of
//! them a run enables follows from each tool's category and flags, never its name.

use crate::util::sync::Unpoisoned;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::{Value, json};

use super::{Category, EditStyle, KnownTool, Tool};

/// Which tools a run enables, from the command line (SPEC §2, §6), and what the built-in
/// tools are told about the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolSelection {
    pub allow_write: bool,
    pub allow_bash: bool,
    /// `--allowed-tools`: when given, exactly these tools are enabled (naming a write tool
    /// or Bash here is an explicit grant, as with `claude --allowedTools`).
    pub allowed: Option<Vec<String>>,
    /// `--disallowed-tools`: removed last, whatever enabled them.
    pub disallowed: Vec<String>,
    /// `--bash-timeout`, which the Bash tool's description states.
    pub bash_timeout: Duration,
    /// Rules given in `--allowed-tools` (`Bash(git status)`): allow rules, added to the
    /// settings' (their tools are in `allowed`).
    pub allow_rules: Vec<String>,
    /// Rules given in `--disallowed-tools` (`Bash(rm:*)`): deny rules; they do not
    /// disable the tool.
    pub deny_rules: Vec<String>,
    /// `--edit-tool apply-patch` (or its default for GPT and o-series models): the
    /// patch tool is offered for editing instead of WriteFile and EditFile.
    pub patch_edits: bool,
    /// `--max-background`, which the Bash tool's description states.
    pub max_background: usize,
    /// `--allow-web`: the hosts WebFetch may fetch; empty: WebFetch is off.
    pub allow_web: super::web_fetch::AllowWeb,
}

impl Default for ToolSelection {
    fn default() -> Self {
        ToolSelection {
            allow_write: false,
            allow_bash: false,
            allowed: None,
            disallowed: Vec::new(),
            bash_timeout: super::bash::DEFAULT_TIMEOUT,
            allow_rules: Vec::new(),
            deny_rules: Vec::new(),
            patch_edits: false,
            max_background: super::background::DEFAULT_MAX_BACKGROUND,
            allow_web: Default::default(),
        }
    }
}

/// Tools whose list may change during a run (an MCP server that says its list changed).
/// `Registry::refresh` asks each before every model request.
pub(crate) trait ToolSource: Send + Sync {
    /// Brings this source's tools in `registry` up to date (`Registry::replace`) before
    /// the request of turn `turn`; true when any changed.
    fn refresh(&self, registry: &Registry, turn: u32) -> bool;
}

/// Holds every known tool and which of them are enabled, in registration order. The
/// list is behind a lock: a `ToolSource` replaces its tools while the run holds the
/// registry shared (the loop, dispatch, calls started early).
#[derive(Default)]
pub(crate) struct Registry {
    tools: RwLock<Vec<(Arc<dyn Tool>, bool)>>,
    sources: Vec<Arc<dyn ToolSource>>,
}

impl Registry {
    pub(crate) fn new() -> Self {
        Registry::default()
    }

    /// The list, read (a poisoned lock still holds a whole list: writers only swap
    /// entries).
    fn list(&self) -> std::sync::RwLockReadGuard<'_, Vec<(Arc<dyn Tool>, bool)>> {
        self.tools.read().unpoisoned()
    }

    fn list_mut(&self) -> std::sync::RwLockWriteGuard<'_, Vec<(Arc<dyn Tool>, bool)>> {
        self.tools.write().unpoisoned()
    }

    /// Registers a tool, enabled. A tool with the same name replaces the earlier one.
    pub(crate) fn register(&mut self, tool: Arc<dyn Tool>) {
        let list = self.tools.get_mut().unpoisoned();
        list.retain(|(t, _)| t.name() != tool.name());
        list.push((tool, true));
    }

    /// Enables or disables a tool by name; false if no such tool is registered.
    pub(crate) fn set_enabled(&mut self, name: &str, enabled: bool) -> bool {
        let list = self.tools.get_mut().unpoisoned();
        match list.iter_mut().find(|(t, _)| t.name() == name) {
            Some(entry) => {
                entry.1 = enabled;
                true
            }
            None => false,
        }
    }

    /// Adds a source whose tools `refresh` keeps up to date.
    pub(crate) fn add_source(&mut self, source: Arc<dyn ToolSource>) {
        self.sources.push(source);
    }

    /// Before a model request: every source brings its tools up to date. The API's
    /// `tools` array when any changed, else `None` (the array, and the prompt cache
    /// built on it, stays as it was).
    pub(crate) fn refresh(&self, turn: u32) -> Option<Vec<Value>> {
        let mut changed = false;
        for s in &self.sources {
            changed |= s.refresh(self, turn);
        }
        changed.then(|| self.to_api_format())
    }

    /// Removes the tools named `old` and adds `new` (each with whether it is enabled), in
    /// one step: a source's tools after its list changed.
    pub(crate) fn replace(&self, old: &[String], new: Vec<(Arc<dyn Tool>, bool)>) {
        let mut list = self.list_mut();
        list.retain(|(t, _)| !old.iter().any(|o| o == t.name()));
        for (tool, on) in new {
            list.retain(|(t, _)| t.name() != tool.name());
            list.push((tool, on));
        }
    }

    /// An enabled tool by name.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.list()
            .iter()
            .find(|(t, on)| *on && t.name() == name)
            .map(|(t, _)| t.clone())
    }

    /// The enabled tools, sorted by name so that the API's `tools` array (and with it the
    /// prompt cache key) does not depend on registration order.
    pub(crate) fn enabled(&self) -> Vec<Arc<dyn Tool>> {
        let mut v: Vec<_> = self
            .list()
            .iter()
            .filter(|(_, on)| *on)
            .map(|(t, _)| t.clone())
            .collect();
        v.sort_by(|a, b| a.name().cmp(b.name()));
        v
    }

    pub(crate) fn enabled_names(&self) -> Vec<String> {
        self.enabled()
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    /// Every registered tool's name, enabled or not.
    pub(crate) fn all_names(&self) -> Vec<String> {
        self.list()
            .iter()
            .map(|(t, _)| t.name().to_string())
            .collect()
    }

    /// Every registered tool as the settings name it (enabled or not).
    pub(crate) fn known(&self) -> Vec<KnownTool> {
        self.list()
            .iter()
            .map(|(t, _)| KnownTool {
                name: t.name().to_string(),
                subject: t.subject_kind(),
            })
            .collect()
    }

    /// Whether an enabled tool may change files without reporting each change itself
    /// (a shell, a tool of unknown effect): then the run must scan the workspace to know
    /// what it changed.
    pub(crate) fn may_change_files_unrecorded(&self) -> bool {
        self.enabled()
            .iter()
            .any(|t| !t.is_read_only() && !t.records_changes())
    }

    /// The `tools` array of the Messages API request.
    pub(crate) fn to_api_format(&self) -> Vec<Value> {
        self.enabled()
            .iter()
            .map(|t| {
                json!({"name": t.name(), "description": t.description(),
                       "input_schema": t.input_schema()})
            })
            .collect()
    }

    /// The registry of built-in tools, enabled as `selection` says. Unknown names in the
    /// selection are the caller's to reject (config does, with exit 2).
    pub(crate) fn builtin(selection: &ToolSelection) -> Self {
        let mut r = Registry::new();
        r.register(Arc::new(super::read_file::ReadFile));
        r.register(Arc::new(super::glob::Glob));
        r.register(Arc::new(super::grep::Grep));
        r.register(Arc::new(super::write_file::WriteFile));
        r.register(Arc::new(super::edit_file::EditFile));
        r.register(Arc::new(super::apply_patch::ApplyPatch));
        r.register(Arc::new(
            super::bash::Bash::new(selection.bash_timeout)
                .with_max_background(selection.max_background),
        ));
        r.register(Arc::new(super::background::bash_output::BashOutput));
        r.register(Arc::new(super::background::kill_bash::KillBash));
        r.register(Arc::new(super::todo_write::TodoWrite));
        // Known to the flags and rules; `agent run` swaps in the run's skills, enabled
        // when it found some.
        r.register(Arc::new(super::skill::Skill::default()));
        r.register(Arc::new(super::web_fetch::WebFetch::new(
            selection.allow_web.clone(),
        )));
        r.apply(selection);
        // Task's `general` kind has the parent's tools: offered only when they may
        // write or run commands.
        let general = r.enabled().iter().any(|t| !t.is_read_only());
        r.register(Arc::new(super::task::Task::new(general)));
        r.apply(selection);
        r
    }

    /// Read-only tools are on by default; `--allow-write` adds the file tools that change
    /// files (not destructive ones), `--allow-bash` the shell tools. `--allowed-tools`
    /// replaces that choice; `--disallowed-tools` removes last.
    fn apply(&mut self, sel: &ToolSelection) {
        let list = self.tools.get_mut().unpoisoned();
        for (tool, on) in list.iter_mut() {
            let name = tool.name();
            let wanted = match &sel.allowed {
                Some(list) => list.iter().any(|a| a == name),
                None => default_on(tool.as_ref(), sel),
            };
            let off = sel.disallowed.iter().any(|d| d == name);
            *on = wanted && !off;
        }
        // Companions follow the tool they serve (after it is decided), unless disallowed.
        let on_now: Vec<String> = list
            .iter()
            .filter(|(_, on)| *on)
            .map(|(t, _)| t.name().to_string())
            .collect();
        for (tool, on) in list.iter_mut() {
            if let Some(of) = tool.companion_of() {
                let off = sel.disallowed.iter().any(|d| d == tool.name());
                *on = on_now.iter().any(|n| n == of) && !off;
            }
        }
    }
}

fn default_on(tool: &dyn Tool, sel: &ToolSelection) -> bool {
    match tool.category() {
        // Read-only, but it reaches the network: only with --allow-web.
        Category::Web => !sel.allow_web.is_empty(),
        // Read-only, but offered only when the run found skills (`agent run` decides).
        Category::Skill => false,
        _ if tool.is_read_only() => true,
        Category::File => {
            sel.allow_write
                && !tool.is_destructive()
                && match tool.edit_style() {
                    EditStyle::Any => true,
                    EditStyle::Replace => !sel.patch_edits,
                    EditStyle::Patch => sel.patch_edits,
                }
        }
        Category::Shell => sel.allow_bash,
        Category::Search => false,
        // Registered (and enabled) by `mcp::tool::register`, never by `builtin`.
        Category::Mcp => false,
        // Registered (and enabled) by `agent run --output-schema`, never by `builtin`.
        Category::Answer => false,
        // Read-only, so on by the first arm.
        Category::Plan | Category::Agent => false,
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
