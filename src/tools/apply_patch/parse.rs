//! The patch envelope codex's models write: `*** Begin Patch`, then file operations
//! (`*** Add File: P` with `+` lines, `*** Delete File: P`, `*** Update File: P` with an
//! optional `*** Move to: Q` and `@@` hunks of ` `/`-`/`+` lines, a hunk optionally
//! closed by `*** End of File`), then `*** End Patch`. Lenient where models are known
//! to slip: blank lines around the envelope, a heredoc wrapper (`<<'EOF' … EOF`), CRLF,
//! a missing `@@` before the first hunk, an empty line inside a hunk (an empty context
//! line), no newline at the end. Errors name the patch line and say what was expected.

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";
const HUNK: &str = "@@";

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// A file created (or replaced) with these lines.
    Add {
        path: String,
        lines: Vec<String>,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

impl Op {
    /// The paths the operation touches, the move target included.
    pub(crate) fn paths(&self) -> Vec<&str> {
        match self {
            Op::Add { path, .. } | Op::Delete { path } => vec![path],
            Op::Update { path, move_to, .. } => std::iter::once(path.as_str())
                .chain(move_to.as_deref())
                .collect(),
        }
    }
}

/// One `@@` hunk: the lines it expects (`old`: context and `-` lines) and what replaces
/// them (`new`: context and `+` lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    /// The text after `@@`: a line to find first, the hunk matching after it.
    pub context: Option<String>,
    pub old: Vec<String>,
    pub new: Vec<String>,
    /// `*** End of File`: the old lines end the file.
    pub end_of_file: bool,
    /// Its line in the patch (1-based), for errors.
    pub line: usize,
}

fn err(line: usize, what: impl std::fmt::Display) -> String {
    format!("invalid patch, line {line}: {what}")
}

/// The patch's lines without the envelope's lenient extras: surrounding blank lines and a
/// heredoc wrapper. Each is (line number, text without a trailing `\r`).
fn body_lines(text: &str) -> Vec<(usize, &str)> {
    let mut lines: Vec<(usize, &str)> = text
        .split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)))
        .collect();
    let blank = |l: &&(usize, &str)| l.1.trim().is_empty();
    while lines.last().is_some_and(|l| blank(&l)) {
        lines.pop();
    }
    let start = lines.iter().take_while(|l| blank(l)).count();
    lines.drain(..start);
    // `<<'EOF'` … `EOF`: what a model writes when it thinks it is in a shell.
    if let (Some(first), Some(last)) = (lines.first(), lines.last())
        && lines.len() >= 2
        && let Some(word) = first.1.trim().strip_prefix("<<")
    {
        let word = word.trim().trim_matches(['\'', '"']);
        if !word.is_empty() && last.1.trim() == word {
            lines.pop();
            lines.remove(0);
        }
    }
    lines
}

/// Parses a patch into its operations, in order.
pub(crate) fn parse(text: &str) -> Result<Vec<Op>, String> {
    let lines = body_lines(text);
    let Some(&(first_no, first)) = lines.first() else {
        return Err(
            "the patch is empty: it must start with `*** Begin Patch` and end with \
                    `*** End Patch`"
                .to_string(),
        );
    };
    if first.trim() != BEGIN {
        return Err(err(
            first_no,
            format!("the first line must be `{BEGIN}`, got {first:?}"),
        ));
    }
    let &(last_no, last) = lines.last().unwrap_or(&(first_no, first));
    if lines.len() < 2 || last.trim() != END {
        return Err(err(
            last_no,
            format!("the last line must be `{END}`, got {last:?}"),
        ));
    }
    let body = &lines[1..lines.len() - 1];
    let mut ops = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let (no, line) = body[i];
        let marker = line.trim_end();
        if marker.is_empty() {
            i += 1; // blank lines between operations
            continue;
        }
        if let Some(path) = marker.strip_prefix(ADD) {
            let path = file_path(no, path)?;
            i += 1;
            let mut added = Vec::new();
            while i < body.len() && !is_file_marker(body[i].1) {
                let (no, l) = body[i];
                if l.trim().is_empty() && blank_until_marker(body, i) {
                    break;
                }
                match l.strip_prefix('+') {
                    // A blank line among the `+` lines: an empty line whose `+` was dropped.
                    None if l.trim().is_empty() => added.push(String::new()),
                    Some(rest) => added.push(rest.to_string()),
                    None => {
                        return Err(err(
                            no,
                            format!("in `{ADD} {path}` every line starts with `+`, got {l:?}"),
                        ));
                    }
                }
                i += 1;
            }
            ops.push(Op::Add { path, lines: added });
        } else if let Some(path) = marker.strip_prefix(DELETE) {
            ops.push(Op::Delete {
                path: file_path(no, path)?,
            });
            i += 1;
        } else if let Some(path) = marker.strip_prefix(UPDATE) {
            let path = file_path(no, path)?;
            i += 1;
            let mut move_to = None;
            if let Some(&(mno, m)) = body.get(i)
                && let Some(to) = m.trim_end().strip_prefix(MOVE)
            {
                move_to = Some(file_path(mno, to)?);
                i += 1;
            }
            let (hunks, next) = parse_hunks(body, i, &path, no)?;
            i = next;
            ops.push(Op::Update {
                path,
                move_to,
                hunks,
            });
        } else {
            return Err(err(
                no,
                format!(
                    "expected `{ADD} PATH`, `{DELETE} PATH`, `{UPDATE} PATH` or `{END}`, got \
                     {line:?}"
                ),
            ));
        }
    }
    if ops.is_empty() {
        return Err(err(last_no, "the patch has no file operation"));
    }
    Ok(ops)
}

fn file_path(no: usize, raw: &str) -> Result<String, String> {
    let path = raw.trim();
    if path.is_empty() {
        return Err(err(no, "the file path is empty"));
    }
    Ok(path.to_string())
}

/// Whether `body[i..]` is blank up to the next file operation (or the end): blank lines
/// there separate operations, they are not content.
fn blank_until_marker(body: &[(usize, &str)], i: usize) -> bool {
    body[i..]
        .iter()
        .find(|(_, l)| !l.trim().is_empty())
        .is_none_or(|(_, l)| is_file_marker(l))
}

/// A line that starts the next file operation (or ends the patch).
fn is_file_marker(line: &str) -> bool {
    let l = line.trim_end();
    l.starts_with(ADD) || l.starts_with(DELETE) || l.starts_with(UPDATE) || l == END
}

/// The hunks of an Update File from `body[i]` on; returns them and the index after.
fn parse_hunks(
    body: &[(usize, &str)],
    mut i: usize,
    path: &str,
    op_line: usize,
) -> Result<(Vec<Hunk>, usize), String> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut open: Option<Hunk> = None;
    let close = |open: &mut Option<Hunk>, hunks: &mut Vec<Hunk>| -> Result<(), String> {
        if let Some(h) = open.take() {
            if h.old.is_empty() && h.new.is_empty() {
                return Err(err(
                    h.line,
                    format!("hunk {} of `{UPDATE} {path}` has no lines", hunks.len() + 1),
                ));
            }
            hunks.push(h);
        }
        Ok(())
    };
    while i < body.len() && !is_file_marker(body[i].1) {
        let (no, line) = body[i];
        if line.trim().is_empty() && blank_until_marker(body, i) {
            break;
        }
        let new_hunk = |context: Option<String>| Hunk {
            context,
            old: Vec::new(),
            new: Vec::new(),
            end_of_file: false,
            line: no,
        };
        if let Some(rest) = line.trim_end().strip_prefix(HUNK) {
            close(&mut open, &mut hunks)?;
            let context = rest.trim();
            // `@@ -1,3 +1,4 @@` (a unified diff's header) names no context line.
            let context = (!context.is_empty() && !context.starts_with('-'))
                .then(|| rest.strip_prefix(' ').unwrap_or(rest).to_string());
            open = Some(new_hunk(context));
        } else if line.trim_end() == END_OF_FILE {
            match open.as_mut() {
                Some(h) => h.end_of_file = true,
                None => {
                    return Err(err(no, format!("`{END_OF_FILE}` outside a hunk")));
                }
            }
            close(&mut open, &mut hunks)?;
        } else {
            if open.is_none() {
                if !hunks.is_empty() {
                    return Err(err(
                        no,
                        format!("expected `@@` to start the next hunk of `{path}`, got {line:?}"),
                    ));
                }
                open = Some(new_hunk(None)); // the first hunk may come without `@@`
            }
            let Some(h) = open.as_mut() else {
                continue;
            };
            match line.chars().next() {
                Some(' ') => {
                    h.old.push(line[1..].to_string());
                    h.new.push(line[1..].to_string());
                }
                Some('-') => h.old.push(line[1..].to_string()),
                Some('+') => h.new.push(line[1..].to_string()),
                // An empty line: an empty context line whose space the model dropped.
                None => {
                    h.old.push(String::new());
                    h.new.push(String::new());
                }
                Some(_) => {
                    return Err(err(
                        no,
                        format!(
                            "in hunk {} of `{UPDATE} {path}` each line starts with ` ` \
                             (context), `-` (removed) or `+` (added), got {line:?}",
                            hunks.len() + 1
                        ),
                    ));
                }
            }
        }
        i += 1;
    }
    close(&mut open, &mut hunks)?;
    if hunks.is_empty() {
        return Err(err(
            op_line,
            format!("`{UPDATE} {path}` has no hunk (to rename a file only, use Bash `mv`)"),
        ));
    }
    Ok((hunks, i))
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
