//! Unit tests of `registry.rs`.

use super::*;

#[test]
fn default_is_read_tools() {
    let r = Registry::builtin(&ToolSelection::default());
    assert_eq!(
        r.enabled_names(),
        vec!["Glob", "Grep", "ReadFile", "Task", "TodoWrite"]
    );
}

#[test]
fn full_auto_is_every_builtin() {
    let sel = ToolSelection {
        allow_write: true,
        allow_bash: true,
        ..Default::default()
    };
    let r = Registry::builtin(&sel);
    assert_eq!(
        r.enabled_names(),
        vec![
            "Bash",
            "BashOutput",
            "EditFile",
            "Glob",
            "Grep",
            "KillBash",
            "ReadFile",
            "Task",
            "TodoWrite",
            "WriteFile"
        ]
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
        vec![
            "EditFile",
            "Glob",
            "Grep",
            "ReadFile",
            "Task",
            "TodoWrite",
            "WriteFile"
        ]
    );
    let b = Registry::builtin(&ToolSelection {
        allow_bash: true,
        ..Default::default()
    });
    // BashOutput is read-only, but reads only what Bash starts: it comes with Bash.
    assert_eq!(
        b.enabled_names(),
        vec![
            "Bash",
            "BashOutput",
            "Glob",
            "Grep",
            "KillBash",
            "ReadFile",
            "Task",
            "TodoWrite"
        ]
    );
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
    assert_eq!(api.len(), 5);
    for t in &api {
        assert!(t["name"].is_string());
        assert!(t["description"].as_str().is_some_and(|d| d.len() > 40));
        assert_eq!(t["input_schema"]["type"], "object");
    }
}

#[test]
fn enable_disable_by_name() {
    let mut r = Registry::builtin(&ToolSelection::default());
    assert!(r.set_enabled("Bash", true));
    assert!(r.get("Bash").is_some());
    assert!(r.set_enabled("Bash", false));
    assert!(r.get("Bash").is_none());
    assert!(!r.set_enabled("Nope", true));
}

/// A tool defined here: what enables it is its category and flags, not its name.
struct Probe {
    name: &'static str,
    category: Category,
    read_only: bool,
    destructive: bool,
    records: bool,
}
impl crate::tools::TypedTool for Probe {
    type Input = Value;
    const TRAITS: crate::tools::Traits = crate::tools::test_support::TEST_TRAITS;
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "probe"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_read_only(&self) -> bool {
        self.read_only
    }
    fn is_destructive(&self) -> bool {
        self.destructive
    }
    fn category(&self) -> Category {
        self.category
    }
    fn records_changes(&self) -> bool {
        self.records
    }
    fn execute(
        &self,
        _: &crate::tools::ToolContext,
        _: &Value,
    ) -> Result<crate::tools::ToolResult, crate::tools::ToolError> {
        unreachable!()
    }
}

fn probes(sel: &ToolSelection) -> Registry {
    let mut r = Registry::new();
    for (name, category, read_only, destructive, records) in [
        ("Look", Category::Search, true, false, false),
        ("Put", Category::File, false, false, true),
        ("Zap", Category::File, false, true, false),
        ("Sh", Category::Shell, false, true, false),
    ] {
        r.register(Arc::new(Probe {
            name,
            category,
            read_only,
            destructive,
            records,
        }));
    }
    r.apply(sel);
    r
}

#[test]
fn enabling_follows_category_and_flags() {
    let none = probes(&ToolSelection::default());
    assert_eq!(none.enabled_names(), ["Look"]);
    assert!(!none.may_change_files_unrecorded());
    let write = probes(&ToolSelection {
        allow_write: true,
        ..Default::default()
    });
    assert_eq!(write.enabled_names(), ["Look", "Put"]);
    assert!(
        !write.may_change_files_unrecorded(),
        "Put records its changes"
    );
    let bash = probes(&ToolSelection {
        allow_bash: true,
        ..Default::default()
    });
    assert_eq!(bash.enabled_names(), ["Look", "Sh"]);
    assert!(bash.may_change_files_unrecorded());
    let zap = probes(&ToolSelection {
        allowed: Some(vec!["Zap".into()]),
        ..Default::default()
    });
    assert_eq!(zap.enabled_names(), ["Zap"]);
    assert!(zap.may_change_files_unrecorded());
}

#[test]
fn only_a_shell_makes_the_builtins_scan() {
    let mut sel = ToolSelection {
        allow_write: true,
        ..Default::default()
    };
    assert!(!Registry::builtin(&sel).may_change_files_unrecorded());
    sel.allow_bash = true;
    assert!(Registry::builtin(&sel).may_change_files_unrecorded());
}

#[test]
fn companions_follow_the_tool_they_serve() {
    let with = |allowed: Option<&[&str]>, disallowed: &[&str]| {
        Registry::builtin(&ToolSelection {
            allow_bash: true,
            allowed: allowed.map(|a| a.iter().map(|s| s.to_string()).collect()),
            disallowed: disallowed.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        })
        .enabled_names()
        .join(",")
    };
    // Off without Bash, though BashOutput is read-only.
    assert_eq!(
        Registry::builtin(&ToolSelection::default()).enabled_names(),
        ["Glob", "Grep", "ReadFile", "Task", "TodoWrite"]
    );
    assert_eq!(with(Some(&["Bash"]), &[]), "Bash,BashOutput,KillBash");
    assert_eq!(with(None, &["Bash"]), "Glob,Grep,ReadFile,Task,TodoWrite");
    assert_eq!(
        with(None, &["KillBash"]),
        "Bash,BashOutput,Glob,Grep,ReadFile,Task,TodoWrite"
    );
    assert_eq!(with(Some(&["ReadFile", "BashOutput"]), &[]), "ReadFile");
}

/// A source that, once `armed`, swaps "Look" for "Seen" (disabled "Hidden" too).
struct Swapper {
    armed: std::sync::atomic::AtomicBool,
}

impl ToolSource for Swapper {
    fn refresh(&self, registry: &Registry, _turn: u32) -> bool {
        if !self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            return false;
        }
        let probe = |name| -> Arc<dyn Tool> {
            Arc::new(Probe {
                name,
                category: Category::Search,
                read_only: true,
                destructive: false,
                records: false,
            })
        };
        registry.replace(
            &["Look".to_string()],
            vec![(probe("Seen"), true), (probe("Hidden"), false)],
        );
        true
    }
}

#[test]
fn a_source_replaces_its_tools_and_refresh_gives_the_new_array_only_then() {
    let mut r = probes(&ToolSelection::default());
    let source = Arc::new(Swapper {
        armed: false.into(),
    });
    r.add_source(source.clone());
    assert_eq!(r.refresh(1), None, "nothing changed: the array stays");
    source
        .armed
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let tools = r.refresh(2).unwrap();
    let names: Vec<_> = tools.iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, [json!("Seen")]);
    assert!(r.get("Look").is_none() && r.get("Hidden").is_none());
    assert!(r.get("Seen").is_some());
    assert!(r.all_names().contains(&"Hidden".to_string()));
    assert_eq!(r.refresh(3), None);
}
