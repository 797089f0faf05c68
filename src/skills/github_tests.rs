use serde_json::json;

use super::*;

#[test]
fn a_pull_requests_changed_files_and_the_comments_command_are_set() {
    let mut args = SkillArgs::default();
    let files = vec![
        json!({"filename": ".agents/skills/review/SKILL.md"}),
        json!({"filename": "src/a.rs"}),
    ];
    prepare(
        &mut args,
        true,
        &files,
        Some("@agent /review the parser"),
        "@agent",
    );
    assert!(args.no_user_skills);
    assert_eq!(
        args.untrusted_changes.unwrap(),
        [".agents/skills/review/SKILL.md", "src/a.rs"]
    );
    assert_eq!(args.command, Some(("review".into(), "the parser".into())));
}

#[test]
fn a_full_page_of_files_makes_every_project_skill_untrusted() {
    let mut args = SkillArgs::default();
    let files: Vec<_> = (0..100)
        .map(|i| json!({"filename": format!("f{i}")}))
        .collect();
    prepare(&mut args, true, &files, Some("@agent fix it"), "@agent");
    let changed = args.untrusted_changes.unwrap();
    assert!(changed.contains(&".agents/skills/".to_string()));
    assert_eq!(args.command, None);
    // Not a pull request: nothing is untrusted.
    let mut args = SkillArgs::default();
    prepare(&mut args, false, &[], None, "@agent");
    assert_eq!(args.untrusted_changes, None);
}
