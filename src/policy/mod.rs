//! Permissions and hooks (SPEC §6): the `permissions` and `hooks` sections of the settings
//! files, and `PolicyGate`, the `Gate` that applies them in the order of SPEC §5 (pre-tool
//! hooks, then the rules; post-tool hooks after the tool). The rules live in `rules`, the
//! hooks in `hooks`.
//!
//! Sections come from every settings file in order (`crate::config::settings` reads them); rule
//! and hook lists are concatenated. A mistake (an unknown key, a rule or matcher naming an
//! unknown tool) is a usage error naming the file: a silently ignored guard would be worse
//! than none. Rules are matched against the subject the tool gives for a call (a command,
//! paths, or nothing): policy never reads a tool's input fields.

mod hooks;
mod rules;
pub(crate) mod shell_words;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::config::cli::OnDeny;
use crate::config::settings::SettingsFiles;
use crate::error::Error;
use crate::tools::gate::{Denial, Gate, GateCall};
use crate::tools::{KnownTool, ToolContext, ToolResult};
use crate::util::output;
pub(crate) use hooks::Hook;
use hooks::{HookRunner, HookVerdict, HooksSection};
pub(crate) use rules::Rule;
pub(crate) use rules::check_rules;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PermissionsSection {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    /// `--deny-opaque` (see `Settings::deny_opaque`); true in any file turns it on.
    #[serde(default, rename = "denyOpaque")]
    deny_opaque: bool,
}

/// The merged settings of a run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
    /// Refuse every opaque command (`shell_words::Opaque`), with or without rules
    /// (`--deny-opaque`, `permissions.denyOpaque`).
    pub deny_opaque: bool,
    pub pre_tool_use: Vec<Hook>,
    pub post_tool_use: Vec<Hook>,
}

impl Settings {
    /// The `permissions` and `hooks` of every file, merged in order. `known` is every
    /// tool (enabled or not): a rule or matcher naming another is a usage error.
    /// Rules given on the command line (`--allowed-tools` / `--disallowed-tools` rules),
    /// parsed and checked exactly as a settings file's; `flag` names them in errors.
    pub(crate) fn add_rules(
        &mut self,
        flag: &str,
        allow: bool,
        rules: &[String],
        known: &[KnownTool],
    ) -> Result<(), Error> {
        for r in rules {
            let rule = Rule::parse(r, known).map_err(|m| Error::Usage(format!("{flag}: {m}")))?;
            if allow {
                self.allow.push(rule);
            } else {
                self.deny.push(rule);
            }
        }
        Ok(())
    }

    pub(crate) fn from_files(
        files: &SettingsFiles,
        known: &[KnownTool],
    ) -> Result<Settings, Error> {
        let mut settings = Settings::default();
        for (label, v) in files.sections("permissions") {
            let err = |msg: String| Error::Usage(format!("{label}: {msg}"));
            let p = PermissionsSection::deserialize(v)
                .map_err(|e| err(format!("invalid settings: permissions: {e}")))?;
            for r in &p.allow {
                settings.allow.push(Rule::parse(r, known).map_err(err)?);
            }
            for r in &p.deny {
                settings.deny.push(Rule::parse(r, known).map_err(err)?);
            }
            settings.deny_opaque |= p.deny_opaque;
        }
        for (label, v) in files.sections("hooks") {
            let err = |msg: String| Error::Usage(format!("{label}: {msg}"));
            let h = HooksSection::deserialize(v)
                .map_err(|e| err(format!("invalid settings: hooks: {e}")))?;
            for (event, hooks, list) in [
                ("PreToolUse", h.pre_tool_use, &mut settings.pre_tool_use),
                ("PostToolUse", h.post_tool_use, &mut settings.post_tool_use),
            ] {
                for hook in hooks {
                    list.push(
                        Hook::from_file(hook, known).map_err(|m| err(format!("{event}: {m}")))?,
                    );
                }
            }
        }
        Ok(settings)
    }
}

/// Hooks and rules as the dispatcher's `Gate` (SPEC §5, §6).
pub(crate) struct PolicyGate {
    settings: Settings,
    runner: HookRunner,
    on_deny: OnDeny,
    /// `--skill-allowed-tools`: the loaded skills' `allowed-tools` narrow what may run.
    skills: Option<std::sync::Arc<crate::tools::skill::Skill>>,
}

impl PolicyGate {
    /// `ctx` gives the workspace, the hooks' environment (the same as Bash's) and the
    /// spill directory for long hook output.
    pub(crate) fn new(settings: Settings, ctx: &ToolContext, on_deny: OnDeny) -> Self {
        PolicyGate {
            settings,
            runner: HookRunner {
                workspace: ctx.workspace.clone(),
                env: ctx.child_env.clone(),
                spill_dir: ctx.spill_dir.clone(),
            },
            on_deny,
            skills: None,
        }
    }

    /// Calls outside the loaded skills' `allowed-tools` are refused (before hooks and
    /// rules, which still judge every call that passes: the list never widens them).
    pub(crate) fn narrowed_by_skills(
        mut self,
        skills: std::sync::Arc<crate::tools::skill::Skill>,
    ) -> Self {
        self.skills = Some(skills);
        self
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
        // The final answer's tool is never narrowed away: the run must be able to end.
        if let Some(s) = &self.skills
            && call.tool.category() != crate::tools::Category::Answer
            && let Some(reason) = s.narrowed(name)
        {
            return Err(Denial { reason });
        }
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
#[path = "mod_tests.rs"]
mod tests;
