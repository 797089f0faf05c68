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
pub(crate) const PROJECT_SETTINGS: &str = ".agent/settings.json";
/// Settings files larger than this are refused: a settings file is a few rules.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;
/// How errors name settings given inline on the command line.
const INLINE_LABEL: &str = "--settings (inline JSON)";
/// The top-level keys a settings file may have: a misspelt section would otherwise be a
/// silently ignored guard. `$schema` is for editors.
pub(crate) const SECTIONS: &[&str] = &[
    "$schema",
    "permissions",
    "hooks",
    "prices",
    "network",
    "commandEnv",
];

/// Which files to read: from the command line.
#[derive(Debug, Clone)]
pub(crate) struct SettingsSources<'a> {
    pub workspace: &'a Path,
    pub files: &'a [PathBuf],
    pub no_project_settings: bool,
}

/// One settings file, parsed.
#[derive(Debug, Clone)]
pub(crate) struct SettingsFile {
    /// How errors name it: `.agent/settings.json` or `--settings FILE`.
    pub label: String,
    sections: Map<String, Value>,
}

/// The settings files of a run, in the order they apply (later files add to or override
/// earlier ones, as each section's reader decides).
#[derive(Debug, Clone, Default)]
pub(crate) struct SettingsFiles {
    pub files: Vec<SettingsFile>,
}

impl SettingsFiles {
    /// Reads every file once. A missing project file is fine; a missing `--settings`
    /// file, an oversized one, bad JSON or an unknown section is a usage error.
    pub(crate) fn read(src: &SettingsSources<'_>) -> Result<SettingsFiles, Error> {
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
    pub(crate) fn push_str(&mut self, text: &str, label: &str) -> Result<(), Error> {
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
    pub(crate) fn sections<'a>(
        &'a self,
        key: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Value)> {
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
#[path = "settings_tests.rs"]
mod tests;
