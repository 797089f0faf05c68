//! The task of a run: PROMPT, `-` or stdin, `--prompt-file`, `--stdin-context`, and the
//! new prompt of a resumed run. Stdin is read here and nowhere else.

use std::io::{IsTerminal, Read};

use crate::config::cli::RunArgs;
use crate::error::Error;
use crate::record::resume::{self, Resumed};

/// The task of a new run, or the new prompt of a resumed one (appended to `resume`'s
/// messages; the returned task is then that prompt or empty). Also a warning for the
/// log, if any.
pub(super) fn task(
    args: &RunArgs,
    resume: Option<&mut Resumed>,
) -> Result<(String, Option<String>), Error> {
    match resume {
        None => read_prompt(args),
        Some(r) => {
            let prompt = read_resume_prompt(args)?;
            resume::append_prompt(&mut r.messages, prompt.as_deref())
                .map_err(|e| Error::Usage(format!("--resume {}: {e}", r.path.display())))?;
            Ok((prompt.unwrap_or_default(), None))
        }
    }
}

/// The new prompt of a resumed run: optional, and stdin is read only for `-` (a resumed
/// CI step must not wait on an inherited pipe).
fn read_resume_prompt(args: &RunArgs) -> Result<Option<String>, Error> {
    if args.prompt_file.is_none() && args.prompt.is_none() {
        return Ok(None);
    }
    read_prompt(args).map(|(p, _)| Some(p))
}

/// The task: the argument, `-`/stdin, or --prompt-file. Stdin is read only for `-`, or
/// when no PROMPT is given and stdin is not a terminal, or for `--stdin-context`, which
/// appends it as a `<stdin>` block. Returns the task and a warning for the log, if any.
fn read_prompt(args: &RunArgs) -> Result<(String, Option<String>), Error> {
    if args.stdin_context && args.prompt.as_deref() == Some("-") {
        return Err(Error::Usage(
            "--stdin-context cannot be used with `-`: stdin is either the task or its context"
                .into(),
        ));
    }
    if args.stdin_context && args.prompt.is_none() && args.prompt_file.is_none() {
        return Err(Error::Usage(
            "--stdin-context needs the task as PROMPT or --prompt-file FILE".into(),
        ));
    }
    let mut text = if let Some(file) = &args.prompt_file {
        let shown = format!("--prompt-file {}", file.display());
        let f = std::fs::File::open(file).map_err(|e| Error::Usage(format!("{shown}: {e}")))?;
        read_capped(f, &shown)?
    } else {
        match args.prompt.as_deref() {
            Some("-") => read_capped(std::io::stdin(), "the task from stdin (`-`)")?,
            Some(p) => p.to_string(),
            None if !std::io::stdin().is_terminal() => {
                read_capped(std::io::stdin(), "the task from stdin")?
            }
            None => {
                return Err(Error::Usage(
                    "no task given: pass PROMPT, `-` to read it from stdin, or --prompt-file FILE"
                        .into(),
                ));
            }
        }
    };
    if text.trim().is_empty() {
        return Err(Error::Usage(
            "the task is empty: give a non-empty PROMPT".into(),
        ));
    }
    let mut warning = None;
    if args.stdin_context {
        let context = read_capped(std::io::stdin(), "--stdin-context")?;
        text = with_stdin_block(&text, &context);
    } else if stdin_has_data() {
        warning = Some(
            "stdin has data, which is not read: pass --stdin-context to append it to the task"
                .to_string(),
        );
    }
    Ok((text, warning))
}

/// The task with `context` appended as a `<stdin>` block.
fn with_stdin_block(task: &str, context: &str) -> String {
    let nl = if context.ends_with('\n') || context.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{}\n\n<stdin>\n{context}{nl}</stdin>", task.trim_end())
}

/// Largest task text read from a file or stdin (bytes, also for `--stdin-context`): far
/// above any real task, and `--prompt-file /dev/zero` must end in a message, not OOM.
const MAX_PROMPT_BYTES: u64 = 10 * 1024 * 1024;

/// Reads `r` to the end, up to `MAX_PROMPT_BYTES`; `what` names the source in errors.
fn read_capped(r: impl Read, what: &str) -> Result<String, Error> {
    let mut bytes = Vec::new();
    r.take(MAX_PROMPT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Usage(format!("{what}: {e}")))?;
    if bytes.len() as u64 > MAX_PROMPT_BYTES {
        return Err(Error::Usage(format!(
            "{what}: larger than {} MiB, the limit for a task",
            MAX_PROMPT_BYTES / (1024 * 1024)
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| Error::Usage(format!("{what}: stream did not contain valid UTF-8")))
}

/// Whether stdin is a pipe with data waiting (never blocks, reads nothing).
fn stdin_has_data() -> bool {
    use std::os::fd::AsRawFd;
    let fd = std::io::stdin().as_raw_fd();
    // SAFETY: fstat and poll on fd 0 with valid, owned buffers; neither consumes input.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
            return false;
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        libc::poll(&mut p, 1, 0) == 1 && p.revents & libc::POLLIN != 0
    }
}
