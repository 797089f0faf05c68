//! The one settings reader: `.agent/settings.json` in the workspace (unless
//! `--no-project-settings`) and then each `--settings FILE` or `--settings '{…}'` (inline
//! JSON: a value starting with `{`), in that order. Each file is
//! read once, with one size cap, parsed once, and its top-level keys checked against the
//! sections some module reads; the sections are then handed out by name (policy reads
//! `permissions` and `hooks`, budget reads `prices`). Every error names the file with one
//! label: `.agent/settings.json: …` or `--settings FILE: …`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::Error;

/// The project's settings file, relative to the workspace root.
pub const PROJECT_SETTINGS: &str = ".agent/settings.json";
/// Settings files larger than this are refused: a settings file is a few rules.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;
/// How errors name settings given inline on the command line.
const INLINE_LABEL: &str = "--settings (inline JSON)";
/// The top-level keys a settings file may have: a misspelt section would otherwise be a
/// silently ignored guard. `$schema` is for editors.
const SECTIONS: &[&str] = &["$schema", "permissions", "hooks", "prices"];

/// Which files to read: from the command line.
#[derive(Debug, Clone)]
pub struct SettingsSources<'a> {
    pub workspace: &'a Path,
    pub files: &'a [PathBuf],
    pub no_project_settings: bool,
}

/// One settings file, parsed.
#[derive(Debug, Clone)]
pub struct SettingsFile {
    /// How errors name it: `.agent/settings.json` or `--settings FILE`.
    pub label: String,
    sections: Map<String, Value>,
}

/// The settings files of a run, in the order they apply (later files add to or override
/// earlier ones, as each section's reader decides).
#[derive(Debug, Clone, Default)]
pub struct SettingsFiles {
    pub files: Vec<SettingsFile>,
}

impl SettingsFiles {
    /// Reads every file once. A missing project file is fine; a missing `--settings`
    /// file, an oversized one, bad JSON or an unknown section is a usage error.
    pub fn read(src: &SettingsSources<'_>) -> Result<SettingsFiles, Error> {
        let mut out = SettingsFiles::default();
        if !src.no_project_settings {
            let project = src.workspace.join(PROJECT_SETTINGS);
            if project.exists() {
                out.files
                    .push(read_file(&project, PROJECT_SETTINGS.to_string())?);
            }
        }
        for file in src.files {
            match inline_json(file) {
                Some(text) => out.push_str(text, INLINE_LABEL)?,
                None => out
                    .files
                    .push(read_file(file, format!("--settings {}", file.display()))?),
            }
        }
        Ok(out)
    }

    /// Parses one file's text; `label` names it in errors.
    pub fn push_str(&mut self, text: &str, label: &str) -> Result<(), Error> {
        if text.len() as u64 > MAX_SETTINGS_BYTES {
            return Err(Error::Usage(format!(
                "{label}: {} bytes is more than the {MAX_SETTINGS_BYTES} bytes settings may have",
                text.len()
            )));
        }
        self.files.push(parse(text, label.to_string())?);
        Ok(())
    }

    /// Each file's `key` section, with the file's label, in order; files without it are
    /// skipped.
    pub fn sections<'a>(&'a self, key: &'a str) -> impl Iterator<Item = (&'a str, &'a Value)> {
        debug_assert!(SECTIONS.contains(&key), "unlisted settings section {key}");
        self.files
            .iter()
            .filter_map(move |f| f.sections.get(key).map(|v| (f.label.as_str(), v)))
    }
}

fn read_file(path: &Path, label: String) -> Result<SettingsFile, Error> {
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
    parse(&text, label)
}

/// `--settings '{"permissions": …}'`: the value itself is the JSON (no file name starts
/// with `{` in practice, and one that did can be given as `./{…`).
fn inline_json(value: &Path) -> Option<&str> {
    value.to_str().filter(|s| s.trim_start().starts_with('{'))
}

fn parse(text: &str, label: String) -> Result<SettingsFile, Error> {
    let err = |msg: String| Error::Usage(format!("{label}: invalid settings: {msg}"));
    let doc: Value = serde_json::from_str(text).map_err(|e| err(format!("invalid JSON: {e}")))?;
    let Value::Object(sections) = doc else {
        return Err(err("the file must hold a JSON object".into()));
    };
    if let Some(key) = sections.keys().find(|k| !SECTIONS.contains(&k.as_str())) {
        let expected: Vec<String> = SECTIONS.iter().map(|s| format!("`{s}`")).collect();
        return Err(err(format!(
            "unknown field `{key}`, expected one of {}",
            expected.join(", ")
        )));
    }
    Ok(SettingsFile { label, sections })
}

#[cfg(test)]
mod tests {
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
}
