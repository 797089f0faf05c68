//! Unit tests of `settings.rs`.

use super::*;

fn sources<'a>(ws: &'a Path, files: &'a [PathBuf], no_project: bool) -> SettingsSources<'a> {
    SettingsSources {
        workspace: ws,
        files,
        no_project_settings: no_project,
    }
}

#[test]
fn reads_project_then_each_file_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".agent")).unwrap();
    std::fs::write(
        dir.path().join(PROJECT_SETTINGS),
        r#"{"prices": {"a": 1}, "permissions": {}}"#,
    )
    .unwrap();
    let extra = dir.path().join("x.json");
    std::fs::write(&extra, r#"{"prices": {"b": 2}}"#).unwrap();
    let files = [extra.clone()];
    let s = SettingsFiles::read(&sources(dir.path(), &files, false)).unwrap();
    let prices: Vec<_> = s.sections("prices").collect();
    let extra_label = format!("--settings {}", extra.display());
    assert_eq!(
        prices,
        [
            (PROJECT_SETTINGS, &serde_json::json!({"a": 1})),
            (extra_label.as_str(), &serde_json::json!({"b": 2}))
        ]
    );
    assert_eq!(s.sections("permissions").count(), 1);
    assert_eq!(s.sections("hooks").count(), 0);
    let s = SettingsFiles::read(&sources(dir.path(), &files, true)).unwrap();
    assert_eq!(s.files.len(), 1);
}

#[test]
fn one_cap_and_one_label_for_every_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".agent")).unwrap();
    let big = format!(
        r#"{{"$schema": "{}"}}"#,
        "x".repeat(MAX_SETTINGS_BYTES as usize)
    );
    // The project file and a --settings file are refused alike.
    std::fs::write(dir.path().join(PROJECT_SETTINGS), &big).unwrap();
    let e = SettingsFiles::read(&sources(dir.path(), &[], false)).unwrap_err();
    assert!(
        e.to_string().starts_with(".agent/settings.json: ") && e.to_string().contains("bytes"),
        "{e}"
    );
    let f = dir.path().join("big.json");
    std::fs::write(&f, &big).unwrap();
    let e = SettingsFiles::read(&sources(dir.path(), &[f], true)).unwrap_err();
    assert!(e.to_string().starts_with("--settings "), "{e}");
    assert_eq!(e.exit_code(), 2);
    // A directory where the project file should be is an error, not silence.
    std::fs::remove_file(dir.path().join(PROJECT_SETTINGS)).unwrap();
    std::fs::create_dir(dir.path().join(PROJECT_SETTINGS)).unwrap();
    assert!(SettingsFiles::read(&sources(dir.path(), &[], false)).is_err());
}

#[test]
fn bad_documents_are_refused() {
    for (text, needle) in [
        ("{", "invalid JSON"),
        ("[]", "JSON object"),
        (r#"{"permisions": {}}"#, "unknown field `permisions`"),
    ] {
        let e = SettingsFiles::default()
            .push_str(text, "conf/x.json")
            .unwrap_err();
        let m = e.to_string();
        assert!(
            m.starts_with("conf/x.json: invalid settings: ") && m.contains(needle),
            "{m}"
        );
    }
}

#[test]
fn inline_json_is_read_in_its_place_among_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("a.json");
    std::fs::write(&f, r#"{"prices": {"a": 1}}"#).unwrap();
    let files = [
        PathBuf::from(r#" {"prices": {"b": 2}}"#),
        f.clone(),
        PathBuf::from(r#"{"hooks": {}}"#),
    ];
    let s = SettingsFiles::read(&sources(dir.path(), &files, true)).unwrap();
    let labels: Vec<_> = s.files.iter().map(|f| f.label.clone()).collect();
    assert_eq!(
        labels,
        [
            INLINE_LABEL.to_string(),
            format!("--settings {}", f.display()),
            INLINE_LABEL.to_string()
        ]
    );
    assert_eq!(s.sections("prices").count(), 2);
    let bad = [PathBuf::from("{\"permisions\": {}}")];
    let e = SettingsFiles::read(&sources(dir.path(), &bad, true)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("--settings (inline JSON): invalid settings: unknown field"),
        "{e}"
    );
}
