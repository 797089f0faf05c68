use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::skills::Sources;
use crate::tools::test_support::{call, call_err, ctx, put};
use crate::tools::{parse_input, schema};

fn with_skills(root: &std::path::Path) -> Skill {
    put(
        root,
        ".agents/skills/lint/SKILL.md",
        "---\nname: lint\ndescription: Lint it.\n---\nRun the linter on $ARGUMENTS.\n",
    );
    put(root, ".agents/skills/lint/rules.md", "rules");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    Skill::new(Arc::new(crate::skills::discover(&Sources {
        workspace: root.canonicalize().unwrap(),
        project: true,
        ..Sources::default()
    })))
}

#[test]
fn schema_agrees_with_struct() {
    let s = Skill::default().input_schema();
    let full = json!({"skill": "pdf", "args": "x"});
    assert_eq!(schema::validate(&s, &full), Ok(()));
    parse_input::<SkillInput>(&full).unwrap();
    assert_eq!(s["required"], json!(["skill"]));
    assert!(parse_input::<SkillInput>(&json!({"args": "x"})).is_err());
    assert!(schema::validate(&s, &json!({"skill": "x", "bogus": 1})).is_err());
    assert!(parse_input::<SkillInput>(&json!({"skill": "x", "bogus": 1})).is_err());
    for (_, p) in s["properties"].as_object().unwrap() {
        assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()));
    }
}

#[test]
fn loads_the_body_and_lists_the_files_once_per_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let tool = with_skills(dir.path());
    let told = Arc::new(std::sync::Mutex::new(Vec::new()));
    let t = told.clone();
    tool.observe(Box::new(move |n| t.lock().unwrap().push(n.to_string())));
    let mut c = ctx(dir.path());
    let r = call(&tool, &c, &json!({"skill": "lint", "args": "src/"})).unwrap();
    assert!(
        r.content
            .starts_with("<skill_content name=\"lint\">\nRun the linter on src/."),
        "{}",
        r.content
    );
    assert!(r.content.contains("<file>rules.md</file>"));
    assert_eq!(r.metadata["skill"], "lint");
    // A sub-agent (no `subagents`) always gets the body; the run's conversation once.
    let again = call(&tool, &c, &json!({"skill": "lint"})).unwrap();
    assert!(again.content.starts_with("<skill_content"));
    c.subagents = Some(Arc::new(NoSubagents));
    let dup = call(&tool, &c, &json!({"skill": "/lint"})).unwrap();
    assert!(dup.content.contains("already loaded"), "{}", dup.content);
    assert_eq!(*told.lock().unwrap(), ["lint"]);
}

#[test]
fn an_unknown_skill_is_an_error_listing_the_skills() {
    let dir = tempfile::tempdir().unwrap();
    let tool = with_skills(dir.path());
    let e = call_err(&tool, &ctx(dir.path()), &json!({"skill": "nope"}));
    assert!(
        e.contains("unknown skill \"nope\"; the skills are: lint"),
        "{e}"
    );
}

#[derive(Debug)]
struct NoSubagents;
impl crate::tools::task::Subagents for NoSubagents {
    fn run(&self, _call: &crate::tools::task::SubagentCall) -> Result<String, ToolError> {
        Err(ToolError::failed("none"))
    }
}
