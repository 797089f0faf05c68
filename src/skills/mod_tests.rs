use std::path::{Path, PathBuf};
use std::time::Instant;

use super::*;

fn corpus() -> PathBuf {
    fixture("anthropics")
}

/// A collection in tests/fixtures/skills/ (its README says where each comes from).
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/skills")
        .join(name)
        .join("skills")
}

/// Every skill of a collection loads; its catalog and warnings are as checked in.
fn check_corpus(name: &str, count: usize) {
    let root = fixture(name);
    let d = discover(&Sources {
        extra: vec![root.clone()],
        ..Sources::default()
    });
    let found = std::process::Command::new("find")
        .arg(&root)
        .args(["-name", "SKILL.md"])
        .output()
        .unwrap();
    let files = String::from_utf8_lossy(&found.stdout).lines().count();
    assert_eq!(files, count, "{name}: the fixture's skills");
    assert_eq!(d.skills.len(), count, "{name}: {:#?}", d.warnings);
    assert!(d.records.iter().all(|r| r.skipped.is_none()));
    for s in &d.skills {
        assert_eq!(s.scope, Scope::Flag);
        assert!(!s.meta.description.is_empty());
    }
    // Real skills break cosmetic rules: warned about, never rejected.
    let (catalog, shortened) = catalog(&d.skills).unwrap();
    assert_eq!(shortened, 0, "{name}: its skills fit the cap");
    assert!(
        catalog.len() <= MAX_CATALOG_CHARS + 1_000,
        "{}",
        catalog.len()
    );
    eprintln!(
        "{name}: {count} skills, a catalog of {} characters",
        catalog.chars().count()
    );
    for s in &d.skills {
        assert!(catalog.contains(&format!("<name>{}</name>", s.meta.name)));
    }
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/skills/{name}.catalog.txt"));
    let warnings = d
        .warnings
        .iter()
        .map(|w| w.replace(&root.display().to_string(), "CORPUS"))
        .collect::<Vec<_>>()
        .join("\n");
    let rendered = format!("{catalog}\n\n# warnings\n{warnings}\n");
    if std::env::var_os("AGENT_BLESS").is_some() {
        std::fs::write(&golden, &rendered).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap();
    assert_eq!(
        rendered,
        want,
        "AGENT_BLESS=1 rewrites {}",
        golden.display()
    );
}

#[test]
fn the_public_corpora_load_every_skill_and_their_catalogs_are_as_checked_in() {
    check_corpus("anthropics", 17);
    check_corpus("openai", 10);
}

fn put(dir: &Path, rel: &str, text: &[u8]) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn skill(dir: &Path, folder: &str, name: &str, desc: &str) {
    put(
        dir,
        &format!("{folder}/SKILL.md"),
        format!("---\nname: {name}\ndescription: {desc}\n---\n# {name}\nDo it.\n").as_bytes(),
    );
}

/// A workspace that is its own git root, with project skills in `.agents/skills`.
fn project() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let ws = t.path().canonicalize().unwrap().join("repo");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    (t, ws)
}

fn sources(ws: &Path) -> Sources {
    Sources {
        workspace: ws.to_path_buf(),
        project: true,
        ..Sources::default()
    }
}

#[test]
fn a_corpus_skill_loads_with_its_body_and_files() {
    let d = discover(&Sources {
        extra: vec![corpus()],
        ..Sources::default()
    });
    let pdf = d.get("pdf").unwrap();
    let text = activation(pdf, None).unwrap();
    assert!(
        text.starts_with("<skill_content name=\"pdf\">\n# PDF"),
        "{}",
        &text[..80]
    );
    assert!(!text.contains("\nname: pdf\n"), "front matter stripped");
    assert!(text.contains("<file>reference.md</file>"));
    assert!(text.contains("<file>LICENSE.txt</file>"));
    assert!(text.contains(&format!("Skill directory: {}", pdf.dir.display())));
    assert!(text.ends_with("</skill_content>"));
    assert!(is_skill_content(&text));
}

#[test]
fn project_skills_win_over_user_skills_with_a_warning_naming_both() {
    let (t, ws) = project();
    let home = t.path().canonicalize().unwrap().join("home");
    skill(
        &ws.join(".claude/skills"),
        "review",
        "review",
        "project review",
    );
    skill(
        &home.join(".agents/skills"),
        "review",
        "review",
        "user review",
    );
    skill(&home.join(".agents/skills"), "mine", "mine", "only mine");
    let d = discover(&Sources {
        home: Some(home.clone()),
        user: true,
        ..sources(&ws)
    });
    assert_eq!(d.names(), ["review", "mine"]);
    assert_eq!(d.get("review").unwrap().meta.description, "project review");
    let w = d.warnings.iter().find(|w| w.contains("shadowed")).unwrap();
    assert!(
        w.contains(
            &ws.join(".claude/skills/review/SKILL.md")
                .display()
                .to_string()
        ),
        "{w}"
    );
    assert!(
        w.contains(
            &home
                .join(".agents/skills/review/SKILL.md")
                .display()
                .to_string()
        ),
        "{w}"
    );
    let shadowed = d.records.iter().find(|r| r.skipped.is_some()).unwrap();
    assert_eq!(shadowed.scope, Scope::User);
    // The user scope off: only the project's.
    let d = discover(&sources(&ws));
    assert_eq!(d.names(), ["review"]);
}

#[test]
fn parents_up_to_the_git_root_are_searched_nearest_first() {
    let (_t, ws) = project();
    let sub = ws.join("packages/app");
    skill(&sub.join(".agents/skills"), "a", "a", "near");
    skill(&ws.join(".agents/skills"), "a", "a", "far");
    skill(&ws.join(".agents/skills"), "b", "b", "root");
    skill(
        &ws.parent().unwrap().join(".agents/skills"),
        "c",
        "c",
        "above the git root",
    );
    let d = discover(&sources(&sub));
    assert_eq!(d.names(), ["a", "b"]);
    assert_eq!(d.get("a").unwrap().meta.description, "near");
}

#[test]
fn bad_skills_load_with_warnings_or_are_skipped_saying_why() {
    let (_t, ws) = project();
    let root = ws.join(".agents/skills");
    skill(&root, "bad name", "Bad Name", "d");
    skill(&root, "folder", "other", "d");
    skill(&root, "long", "long", &"x".repeat(1025));
    put(&root, "nodesc/SKILL.md", b"---\nname: nodesc\n---\nbody");
    put(
        &root,
        "notyaml/SKILL.md",
        b"---\nname: [x\n: : :\n---\nbody",
    );
    put(
        &root,
        "binary/SKILL.md",
        b"---\nname: binary\ndescription: \xff\xfe\n---\n",
    );
    put(&root, "nofront/SKILL.md", b"# no front matter\n");
    let d = discover(&sources(&ws));
    let mut names = d.names();
    names.sort();
    assert_eq!(names, ["Bad Name", "long", "other"]);
    let skipped: Vec<(&str, &str)> = d
        .records
        .iter()
        .filter_map(|r| Some((r.name.as_str(), r.skipped.as_deref()?)))
        .collect();
    assert_eq!(skipped.len(), 4, "{skipped:?}");
    for (name, why) in [
        ("nodesc", "no description"),
        ("notyaml", "not YAML"),
        ("binary", "not UTF-8"),
        ("nofront", "no front matter"),
    ] {
        let (_, got) = skipped.iter().find(|(n, _)| *n == name).unwrap();
        assert!(got.contains(why), "{name}: {got}");
        assert!(
            d.warnings
                .iter()
                .any(|w| w.contains(&format!("{name}/SKILL.md: skipped")))
        );
    }
    assert!(
        d.warnings
            .iter()
            .any(|w| w.contains("folder/SKILL.md: name `other` differs"))
    );
    // The catalog cuts the long description at the specification's limit.
    let (c, _) = catalog(&d.skills).unwrap();
    assert!(c.contains(&format!("{}…</description>", "x".repeat(1023))));
}

#[test]
fn a_symlink_out_of_its_scope_is_not_followed() {
    let (t, ws) = project();
    let outside = t.path().canonicalize().unwrap().join("elsewhere");
    skill(&outside, "evil", "evil", "from outside");
    skill(&ws, "shared/inside", "inside", "inside the repo");
    std::fs::create_dir_all(ws.join(".agents/skills")).unwrap();
    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    std::os::unix::fs::symlink(outside.join("evil"), ws.join(".agents/skills/evil")).unwrap();
    std::os::unix::fs::symlink(ws.join("shared/inside"), ws.join(".agents/skills/inside")).unwrap();
    // A linked `.claude/skills` is the same folder: no clash.
    std::os::unix::fs::symlink(ws.join(".agents/skills"), ws.join(".claude/skills")).unwrap();
    let d = discover(&sources(&ws));
    assert_eq!(d.names(), ["inside"]);
    assert!(
        d.warnings
            .iter()
            .any(|w| w.contains("evil") && w.contains("not followed")),
        "{:?}",
        d.warnings
    );
    assert!(
        !d.warnings.iter().any(|w| w.contains("shadowed")),
        "{:?}",
        d.warnings
    );
}

#[test]
fn five_thousand_skill_folders_cost_a_bounded_scan() {
    let (_t, ws) = project();
    let root = ws.join(".agents/skills");
    for i in 0..5_000 {
        skill(&root, &format!("s{i:04}"), &format!("s{i:04}"), "d");
    }
    let start = Instant::now();
    let d = discover(&sources(&ws));
    let took = start.elapsed();
    assert_eq!(d.skills.len(), MAX_DIRS_PER_ROOT);
    assert!(
        d.warnings
            .iter()
            .any(|w| w.contains("stopped after 2000 directories"))
    );
    // The catalog stays capped whatever the count.
    let (c, shortened) = catalog(&d.skills).unwrap();
    assert!(
        c.len() < MAX_CATALOG_CHARS + MAX_CATALOG_NAMES_CHARS + 1_000,
        "{}",
        c.len()
    );
    assert!(shortened > 1_500, "{shortened}");
    assert!(c.ends_with("the Skill tool loads any of them by name."));
    eprintln!("5,000 folders: {took:?}");
}

#[test]
fn a_ten_megabyte_skill_md_is_read_only_to_its_front_matter_for_the_catalog() {
    let (_t, ws) = project();
    let mut big = b"---\nname: big\ndescription: a big one\n---\n".to_vec();
    big.extend(std::iter::repeat_n(b'x', 10 * 1024 * 1024));
    put(&ws.join(".agents/skills"), "big/SKILL.md", &big);
    let mut no_end = b"---\nname: huge\n".to_vec();
    no_end.extend(std::iter::repeat_n(b'y', 10 * 1024 * 1024));
    put(&ws.join(".agents/skills"), "huge/SKILL.md", &no_end);
    let d = discover(&sources(&ws));
    assert_eq!(d.names(), ["big"]);
    let huge = d.records.iter().find(|r| r.name == "huge").unwrap();
    assert!(huge.skipped.as_deref().unwrap().contains("not closed"));
    // Loading it cuts the body and says where the rest is.
    let text = activation(d.get("big").unwrap(), None).unwrap();
    assert!(text.len() < MAX_BODY_CHARS + 2_000, "{}", text.len());
    assert!(text.contains("more characters: read the rest of"));
}

#[test]
fn a_body_that_is_not_utf8_fails_to_load_with_a_reason() {
    let (_t, ws) = project();
    put(
        &ws.join(".agents/skills"),
        "b/SKILL.md",
        b"---\nname: b\ndescription: d\n---\nok \xff bad",
    );
    let d = discover(&sources(&ws));
    let e = activation(d.get("b").unwrap(), None).unwrap_err();
    assert!(e.contains("not UTF-8"), "{e}");
}

#[test]
fn arguments_replace_the_placeholder_or_follow_the_content() {
    let (_t, ws) = project();
    let root = ws.join(".agents/skills");
    put(
        &root,
        "p/SKILL.md",
        b"---\nname: p\ndescription: d\n---\nReview $ARGUMENTS now.",
    );
    skill(&root, "q", "q", "d");
    let d = discover(&sources(&ws));
    let p = activation(d.get("p").unwrap(), Some("src/lib.rs")).unwrap();
    assert!(p.contains("Review src/lib.rs now."));
    assert!(!p.contains("ARGUMENTS:"));
    let q = activation(d.get("q").unwrap(), Some("the auth module")).unwrap();
    assert!(
        q.ends_with("</skill_content>\n\nARGUMENTS: the auth module"),
        "{q}"
    );
}

#[test]
fn prompt_commands_are_a_leading_slash_name() {
    assert_eq!(
        prompt_command("/review focus on errors"),
        Some(("review", "focus on errors"))
    );
    assert_eq!(prompt_command("  /deploy"), Some(("deploy", "")));
    assert_eq!(prompt_command("/tmp/x is broken"), None);
    assert_eq!(prompt_command("fix /review"), None);
    assert_eq!(prompt_command("/ spaced"), None);
    assert_eq!(
        command_after_phrase("@agent /review the parser\nmore context", "@agent"),
        Some(("review", "the parser"))
    );
    assert_eq!(
        command_after_phrase("@agent please /review", "@agent"),
        None
    );
}

#[test]
fn compaction_is_given_the_skill_contents_verbatim() {
    use crate::model::protocol::Role;
    let content = "<skill_content name=\"a\">\nbody\n</skill_content>";
    let messages = vec![
        Message {
            role: Role::User,
            content: vec![ContentBlock::Text {
                text: format!("{content}\n\nARGUMENTS: x"),
            }],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "t1".into(),
                    content: "plain".into(),
                    is_error: false,
                },
                ContentBlock::ToolResult {
                    tool_use_id: "t2".into(),
                    content: content.into(),
                    is_error: false,
                },
            ],
        },
    ];
    assert_eq!(kept_skill_contents(&messages), [content, content]);
}

#[test]
fn skill_dirs_outside_the_roots_are_read_only_dirs() {
    let (t, ws) = project();
    let home = t.path().canonicalize().unwrap().join("home");
    skill(&ws.join(".agents/skills"), "in", "in", "d");
    skill(&home.join(".claude/skills"), "out", "out", "d");
    let d = discover(&Sources {
        home: Some(home.clone()),
        user: true,
        ..sources(&ws)
    });
    assert_eq!(d.read_only_dirs(&[&ws]), [home.join(".claude/skills/out")]);
    assert_eq!(
        available_commands(&d)[0],
        ("in".to_string(), "d".to_string())
    );
}
