//! The registry of tools: register, enable/disable, look up, list, and the `tools` array
//! sent to the API. `builtin` is the one place that lists the tools.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Tool;

/// Which tools a run enables, from the command line (SPEC §2, §6).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSelection {
    pub allow_write: bool,
    pub allow_bash: bool,
    /// `--allowed-tools`: when given, exactly these tools are enabled (naming a write tool
    /// or Bash here is an explicit grant, as with `claude --allowedTools`).
    pub allowed: Option<Vec<String>>,
    /// `--disallowed-tools`: removed last, whatever enabled them.
    pub disallowed: Vec<String>,
}

/// Holds every known tool and which of them are enabled, in registration order.
#[derive(Default)]
pub struct Registry {
    tools: Vec<(Arc<dyn Tool>, bool)>,
}

impl Registry {
    pub fn new() -> Self {
        Registry { tools: Vec::new() }
    }

    /// Registers a tool, enabled. A tool with the same name replaces the earlier one.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.retain(|(t, _)| t.name() != tool.name());
        self.tools.push((tool, true));
    }

    /// Enables or disables a tool by name; false if no such tool is registered.
    pub fn set_enabled(&mut self, name: &str, enabled: bool) -> bool {
        match self.tools.iter_mut().find(|(t, _)| t.name() == name) {
            Some(entry) => {
                entry.1 = enabled;
                true
            }
            None => false,
        }
    }

    pub fn enable(&mut self, name: &str) -> bool {
        self.set_enabled(name, true)
    }

    pub fn disable(&mut self, name: &str) -> bool {
        self.set_enabled(name, false)
    }

    /// An enabled tool by name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools
            .iter()
            .find(|(t, on)| *on && t.name() == name)
            .map(|(t, _)| t)
    }

    /// The enabled tools, sorted by name so that the API's `tools` array (and with it the
    /// prompt cache key) does not depend on registration order.
    pub fn enabled(&self) -> Vec<&Arc<dyn Tool>> {
        let mut v: Vec<_> = self
            .tools
            .iter()
            .filter(|(_, on)| *on)
            .map(|(t, _)| t)
            .collect();
        v.sort_by_key(|t| t.name());
        v
    }

    pub fn enabled_names(&self) -> Vec<&'static str> {
        self.enabled().iter().map(|t| t.name()).collect()
    }

    /// Every registered tool's name, enabled or not.
    pub fn all_names(&self) -> Vec<&'static str> {
        self.tools.iter().map(|(t, _)| t.name()).collect()
    }

    /// The `tools` array of the Messages API request.
    pub fn to_api_format(&self) -> Vec<Value> {
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
    pub fn builtin(selection: &ToolSelection) -> Self {
        let mut r = Registry::new();
        r.register(Arc::new(super::read_file::ReadFile));
        r.register(Arc::new(super::glob::Glob));
        r.register(Arc::new(super::grep::Grep));
        r.register(Arc::new(super::write_file::WriteFile));
        r.register(Arc::new(super::edit_file::EditFile));
        r.register(Arc::new(super::bash::Bash));
        r.apply(selection);
        r
    }

    fn apply(&mut self, sel: &ToolSelection) {
        let names = self.all_names();
        for name in names {
            let tool_read_only = self
                .tools
                .iter()
                .any(|(t, _)| t.name() == name && t.is_read_only());
            let on = match &sel.allowed {
                Some(list) => list.iter().any(|a| a == name),
                None => {
                    tool_read_only
                        || (sel.allow_write && matches!(name, "WriteFile" | "EditFile"))
                        || (sel.allow_bash && name == "Bash")
                }
            };
            let off = sel.disallowed.iter().any(|d| d == name);
            self.set_enabled(name, on && !off);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_read_tools() {
        let r = Registry::builtin(&ToolSelection::default());
        assert_eq!(r.enabled_names(), vec!["Glob", "Grep", "ReadFile"]);
    }

    #[test]
    fn full_auto_is_all_six() {
        let sel = ToolSelection {
            allow_write: true,
            allow_bash: true,
            ..Default::default()
        };
        let r = Registry::builtin(&sel);
        assert_eq!(
            r.enabled_names(),
            vec!["Bash", "EditFile", "Glob", "Grep", "ReadFile", "WriteFile"]
        );
    }

    #[test]
    fn write_only_and_bash_only() {
        let w = Registry::builtin(&ToolSelection {
            allow_write: true,
            ..Default::default()
        });
        assert_eq!(
            w.enabled_names(),
            vec!["EditFile", "Glob", "Grep", "ReadFile", "WriteFile"]
        );
        let b = Registry::builtin(&ToolSelection {
            allow_bash: true,
            ..Default::default()
        });
        assert_eq!(b.enabled_names(), vec!["Bash", "Glob", "Grep", "ReadFile"]);
    }

    #[test]
    fn allowed_and_disallowed_refine() {
        let sel = ToolSelection {
            allowed: Some(vec!["ReadFile".into(), "Bash".into()]),
            disallowed: vec!["Bash".into()],
            ..Default::default()
        };
        let r = Registry::builtin(&sel);
        assert_eq!(r.enabled_names(), vec!["ReadFile"]);
        assert!(r.get("Bash").is_none());
        assert!(r.get("ReadFile").is_some());
    }

    #[test]
    fn api_format_has_name_description_schema() {
        let r = Registry::builtin(&ToolSelection::default());
        let api = r.to_api_format();
        assert_eq!(api.len(), 3);
        for t in &api {
            assert!(t["name"].is_string());
            assert!(t["description"].as_str().is_some_and(|d| d.len() > 40));
            assert_eq!(t["input_schema"]["type"], "object");
        }
    }

    #[test]
    fn enable_disable_by_name() {
        let mut r = Registry::builtin(&ToolSelection::default());
        assert!(r.enable("Bash"));
        assert!(r.get("Bash").is_some());
        assert!(r.disable("Bash"));
        assert!(r.get("Bash").is_none());
        assert!(!r.enable("Nope"));
    }
}
