//! One exit-code table: commands return an `ExitStatus` (src/error.rs) and only
//! `error.rs` turns a number into an `ExitCode`. This reads the sources and fails on an
//! `ExitCode` in `src/commands` (a command that picks its own exit code again), on a
//! literal `ExitCode::from(<number>)` anywhere else, and on a branch on an error's
//! message text where the error is a type (`ToolError::NotFound`, the MCP timeout).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `(file, line number, line)` of every source line of `src/` matching `hit`.
pub(crate) fn lines_where(hit: impl Fn(&Path, &str) -> bool) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_path_buf();
        for (i, line) in std::fs::read_to_string(&f).unwrap().lines().enumerate() {
            if hit(&rel, line) {
                found.push(format!("src/{}:{}: {}", rel.display(), i + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn commands_return_a_status_and_only_error_rs_makes_exit_codes() {
    let in_commands = lines_where(|f, l| f.starts_with("commands") && l.contains("ExitCode"));
    assert!(
        in_commands.is_empty(),
        "a command returns `error::ExitStatus`, never an `ExitCode`:\n{}",
        in_commands.join("\n")
    );
    let literal = regex::Regex::new(r"ExitCode::from\(\s*\d").unwrap();
    // The table and its own unit tests are where the numbers are.
    let table = [Path::new("error.rs"), Path::new("error_tests.rs")];
    let literals = lines_where(|f, l| !table.contains(&f) && literal.is_match(l));
    assert!(
        literals.is_empty(),
        "an exit code is a row of `ExitStatus::code` (src/error.rs), not a literal:\n{}",
        literals.join("\n")
    );
}

#[test]
fn no_branch_on_an_error_message_that_has_a_type() {
    let hits = lines_where(|f, l| {
        let shipped = !f.to_string_lossy().ends_with("_tests.rs");
        shipped
            && (l.contains("message().starts_with(")
                || l.contains("message().contains(")
                || l.contains(".contains(\"timeout\")")
                || l.contains(".starts_with(\"file not found\")"))
    });
    assert!(
        hits.is_empty(),
        "branch on the error's type (ToolError::NotFound, CallError::Timeout), not its text:\n{}",
        hits.join("\n")
    );
}
