//! Unit tests of `system_prompt.rs`.

use super::*;

#[test]
fn system_prompt_rules_and_project_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), "Always run make check.").unwrap();
    let p = system_prompt(dir.path(), &[], None, Some("Extra rule.")).unwrap();
    assert!(p.contains("non-interactively"));
    assert!(p.contains("Always run make check."));
    assert!(p.ends_with("Extra rule."));
    let f = dir.path().join("sys.txt");
    std::fs::write(&f, "Custom.").unwrap();
    let p = system_prompt(dir.path(), &[], Some(&format!("@{}", f.display())), None).unwrap();
    assert_eq!(p, "Custom.");
    assert!(system_prompt(dir.path(), &[], Some("@/no/such/file"), None).is_err());
}
