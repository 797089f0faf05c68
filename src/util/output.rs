//! The only module that writes to stdout (the answer, or one JSON document), plus the
//! stderr side: leveled log lines with secrets redacted, and an indicatif spinner drawn
//! only when stderr is a terminal.
#![allow(clippy::print_stdout)]

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};

use crate::util::sync::Locked;

static LEVEL: AtomicU8 = AtomicU8::new(1);
/// Off a terminal (a CI log), progress is one plain line per turn and per tool call.
static PLAIN: AtomicBool = AtomicBool::new(false);
static SECRETS: OnceLock<Vec<String>> = OnceLock::new();
/// Secrets learnt during the run (OAuth tokens, registered client secrets): redacted
/// like those given to `init`.
static LATE_SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// How much goes to stderr: `-q`, the default, `-v`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

/// How often the spinner redraws on its own.
const SPINNER_TICK: Duration = Duration::from_millis(120);
/// Redraws of a progress line per second at most (indicatif's own default for stderr).
const DRAW_HZ: u8 = 20;
/// Columns kept free at the end of a progress line: the width of the `^C` a terminal
/// echoes on Ctrl-C (see `StderrTerm`).
const ECHO_MARGIN: u16 = 2;
/// The size assumed when the terminal does not say (indicatif's own fallbacks).
const FALLBACK_COLUMNS: u16 = 80;
const FALLBACK_ROWS: u16 = 20;

/// Sets the log level and the secret values to redact from everything written.
pub(crate) fn init(verbosity: Verbosity, secrets: Vec<String>) {
    let level = match verbosity {
        Verbosity::Quiet => 0,
        Verbosity::Normal => 1,
        Verbosity::Verbose => 2,
    };
    LEVEL.store(level, Ordering::Relaxed);
    let _ = SECRETS.set(secrets);
    // -v logs each request and call in detail already; -q wants none of it.
    PLAIN.store(
        level == 1 && !std::io::stderr().is_terminal(),
        Ordering::Relaxed,
    );
    if level > 0 && std::io::stderr().is_terminal() {
        let bar = ProgressBar::with_draw_target(None, stderr_draw_target());
        let style = ProgressStyle::with_template("{spinner} {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.enable_steady_tick(SPINNER_TICK);
        if let Ok(mut b) = BAR.lock() {
            *b = Some(bar);
        }
    }
}

/// The secret values given to `init` (for redaction over a stream).
pub(crate) fn secrets() -> &'static [String] {
    SECRETS.get().map(Vec::as_slice).unwrap_or(&[])
}

/// Removes every known secret value from `text`.
pub(crate) fn redact(text: &str) -> String {
    redact_owned(text.to_string())
}

/// `redact` of a string the caller gives up: no copy when it holds no secret (the
/// `--jsonl` transcript of a long run would otherwise be copied twice at its end).
pub(crate) fn redact_owned(text: String) -> String {
    let text = match SECRETS.get() {
        Some(s) if !s.is_empty() => crate::util::secrets::redact_owned(text, s),
        _ => text,
    };
    let late = LATE_SECRETS.locked();
    if late.is_empty() {
        return text;
    }
    crate::util::secrets::redact_owned(text, &late)
}

/// Adds a secret learnt during the run (a token, a registered client's secret) to the
/// values redacted from everything written from now on.
pub(crate) fn add_secret(value: &str) {
    let mut late = LATE_SECRETS.locked();
    if !late.iter().any(|v| v == value) {
        late.push(value.to_string());
    }
}

fn emit(min_level: u8, prefix: &str, msg: &str) {
    if LEVEL.load(Ordering::Relaxed) < min_level {
        return;
    }
    let line = format!("agent: {prefix}{}", redact(msg));
    let bar = BAR.lock().ok().and_then(|b| b.clone());
    match bar {
        Some(b) => b.suspend(|| eprintln!("{line}")),
        None => eprintln!("{line}"),
    }
}

/// A line a child agent wrote to its stderr (a prompt's run under `agent acp`): already
/// a log line, passed on as it is.
pub(crate) fn relay_stderr(line: &str) {
    eprintln!("{}", redact(line));
}

/// Always shown (also with -q).
pub(crate) fn error(msg: &str) {
    emit(0, "error: ", msg);
}

/// Reports an error found before the run starts and gives the status it ends with.
pub(crate) fn usage_failure(e: &crate::error::Error) -> crate::error::ExitStatus {
    error(&e.to_string());
    e.status()
}

/// Shown unless -q.
pub(crate) fn warn(msg: &str) {
    emit(1, "warning: ", msg);
}

/// Shown unless -q.
pub(crate) fn info(msg: &str) {
    emit(1, "", msg);
}

/// Whether -v logging is on (to skip building messages nobody will see).
pub(crate) fn debug_enabled() -> bool {
    LEVEL.load(Ordering::Relaxed) >= 2
}

/// Shown with -v.
pub(crate) fn debug(msg: &str) {
    emit(2, "", msg);
}

/// Whether a spinner is drawn (stderr is a terminal and not -q): callers skip building
/// messages nobody will see.
pub(crate) fn progress_enabled() -> bool {
    BAR.lock().map(|b| b.is_some()).unwrap_or(false)
}

/// Updates the spinner's message (a no-op when stderr is not a terminal).
pub(crate) fn progress(msg: &str) {
    if let Some(b) = BAR.lock().ok().and_then(|b| b.clone()) {
        b.set_message(redact(msg));
    }
}

/// Whether plain progress lines are printed (stderr is not a terminal, no -q or -v).
pub(crate) fn steps_enabled() -> bool {
    PLAIN.load(Ordering::Relaxed)
}

/// One plain progress line (a turn, a tool call) for a log that is not a terminal.
pub(crate) fn step(msg: &str) {
    if steps_enabled() {
        emit(1, "", msg);
    }
}

/// A GitHub Actions workflow command (`::error::…`) on stderr, as it is (no `agent: `
/// prefix, which would hide it from the runner), secrets redacted. Shown also with -q.
pub(crate) fn workflow_command(line: &str) {
    let line = redact(line);
    let bar = BAR.lock().ok().and_then(|b| b.clone());
    match bar {
        Some(b) => b.suspend(|| eprintln!("{line}")),
        None => eprintln!("{line}"),
    }
}

/// Removes the spinner before the final lines.
pub(crate) fn progress_done() {
    if let Some(b) = BAR.lock().ok().and_then(|mut b| b.take()) {
        b.finish_and_clear();
    }
}

/// Where progress lines on a terminal are drawn (the spinner, `agent batch`'s bar).
pub(crate) fn stderr_draw_target() -> ProgressDrawTarget {
    ProgressDrawTarget::term_like_with_hz(Box::new(StderrTerm::default()), DRAW_HZ)
}

/// stderr as indicatif's terminal, reported `ECHO_MARGIN` columns narrower than it is.
/// indicatif pads its last line to the full width, which leaves the cursor in the last
/// column; the `^C` the terminal echoes on Ctrl-C then wrapped onto a line of its own,
/// and clearing the line on the way out cleared only that one, leaving the spinner on
/// screen. With the margin the echo lands on the progress line and is cleared with it.
/// A line longer than the width still wraps where indicatif counts it to: it pads each
/// of its N lines to width − 2 columns, and N·(width − 2) columns fill N real lines
/// (on any terminal wider than 2N columns).
/// (SIGTERM and the `--timeout` deadline echo nothing, so they never had the problem.)
#[derive(Debug, Default)]
struct StderrTerm {
    /// Written out at `flush`, so that a frame reaches the terminal in one write.
    pending: Mutex<Vec<u8>>,
}

impl StderrTerm {
    fn put(&self, bytes: &[u8]) -> std::io::Result<()> {
        self.pending.locked().extend_from_slice(bytes);
        Ok(())
    }

    /// `ESC [ n <code>` (a cursor move), nothing for a move by 0.
    fn cursor(&self, n: usize, code: char) -> std::io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.put(format!("\x1b[{n}{code}").as_bytes())
    }

    /// The terminal's (rows, columns), if stderr says.
    fn size() -> Option<(u16, u16)> {
        let mut ws = libc::winsize {
            ws_row: 0,
            ws_col: 0,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCGWINSZ only fills the winsize it is given.
        let rc = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut ws) };
        (rc == 0 && ws.ws_col > 0 && ws.ws_row > 0).then_some((ws.ws_row, ws.ws_col))
    }
}

impl TermLike for StderrTerm {
    fn width(&self) -> u16 {
        let cols = StderrTerm::size().map_or(FALLBACK_COLUMNS, |s| s.1);
        cols.saturating_sub(ECHO_MARGIN).max(1)
    }

    fn height(&self) -> u16 {
        StderrTerm::size().map_or(FALLBACK_ROWS, |s| s.0)
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'A')
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'B')
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'C')
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.cursor(n, 'D')
    }

    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.put(s.as_bytes())?;
        self.put(b"\n")
    }

    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.put(s.as_bytes())
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.put(b"\r\x1b[2K")
    }

    fn flush(&self) -> std::io::Result<()> {
        let bytes = std::mem::take(&mut *self.pending.locked());
        let mut err = std::io::stderr().lock();
        err.write_all(&bytes)?;
        err.flush()
    }
}

/// Writes the run's stdout payload. A closed stdout (`| head`) is not an error; any other
/// failure (a full disk) is reported and returned, so that the run does not exit 0.
pub(crate) fn print_stdout(text: &str) -> bool {
    let mut out = std::io::stdout().lock();
    let r = out.write_all(text.as_bytes()).and_then(|()| {
        if text.ends_with('\n') {
            Ok(())
        } else {
            out.write_all(b"\n")
        }
    });
    let r = r.and_then(|()| out.flush());
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            error(&format!("cannot write to stdout: {e}"));
            false
        }
        _ => true,
    }
}

/// Writes `bytes` to `path` atomically: a temp file beside it, then a rename, so that a
/// reader (or a SIGKILL) never sees half a file.
pub(crate) fn write_file_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_file(path, bytes, true)
}

/// The same without waiting for the disk (no fsync): a killed process still leaves the
/// old or the new file whole (the rename is atomic and the page cache outlives the
/// process); only a power loss could lose the newest. For the per-turn `-o` checkpoints
/// on a long history the fsync cost a third as much CPU as the write itself.
pub(crate) fn write_file_atomic_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_file(path, bytes, false)
}

fn replace_file(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
