//! A stdio server's stderr: logged with -v line by line, read in bounded chunks, a line
//! held to at most `STDERR_LINE_BYTES` (longer ones are logged cut), and the last lines
//! kept to explain the server's death.

use std::io::Read;

use super::Shared;
use crate::util::sync::Locked;

/// Longest stderr line held, in bytes: a traceback's line fits many times over; a line
/// longer than this is logged cut with a marker, and the rest of it is discarded up to
/// its newline, so a server writing without newlines cannot grow the agent.
const STDERR_LINE_BYTES: usize = 8 * 1024;
/// Bytes read from stderr at a time.
const STDERR_CHUNK_BYTES: usize = 8 * 1024;
/// Last stderr lines kept to explain a server's death (a traceback's last lines, `npx`'s
/// "command not found").
const STDERR_TAIL_LINES: usize = 5;
/// Logs the server's stderr line by line, read in bounded chunks: a line over
/// `STDERR_LINE_BYTES` is logged cut, with a marker, and the rest of it is discarded up
/// to its newline.
pub(super) fn log_stderr(mut stderr: impl Read, shared: &Shared) {
    let mut chunk = vec![0u8; STDERR_CHUNK_BYTES];
    let mut lines = CappedLines::new(STDERR_LINE_BYTES);
    loop {
        let n = match stderr.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        lines.push(&chunk[..n], &mut |line, cut| log_line(line, cut, shared));
    }
    lines.finish(&mut |line, cut| log_line(line, cut, shared));
    shared.stderr_tail.locked().1 = true;
    shared.stderr_closed.notify_all();
}

/// Splits a byte stream into lines of at most `cap` bytes: a longer line is handed
/// over cut (`true`) as soon as it passes the cap, and the rest of it is discarded up
/// to its newline. Never holds more than `cap` bytes.
struct CappedLines {
    cap: usize,
    line: Vec<u8>,
    /// The current line was cut: what follows is discarded until its newline.
    cut: bool,
}

impl CappedLines {
    fn new(cap: usize) -> Self {
        CappedLines {
            cap,
            line: Vec::new(),
            cut: false,
        }
    }

    fn push(&mut self, mut bytes: &[u8], emit: &mut dyn FnMut(&[u8], bool)) {
        loop {
            let end = memchr::memchr(b'\n', bytes);
            let part = &bytes[..end.unwrap_or(bytes.len())];
            if !self.cut {
                let room = self.cap - self.line.len();
                if part.len() > room {
                    self.line.extend_from_slice(&part[..room]);
                    emit(&self.line, true);
                    self.line.clear();
                    self.cut = true;
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            let Some(end) = end else { return };
            if !self.cut {
                emit(&self.line, false);
            }
            self.line.clear();
            self.cut = false;
            bytes = &bytes[end + 1..];
        }
    }

    /// The last line, if the stream ended without its newline.
    fn finish(&mut self, emit: &mut dyn FnMut(&[u8], bool)) {
        if !self.line.is_empty() && !self.cut {
            emit(&self.line, false);
        }
        self.line.clear();
    }
}

/// Logs one stderr line (with -v) and keeps it among the last lines.
fn log_line(line: &[u8], cut: bool, shared: &Shared) {
    let text = String::from_utf8_lossy(line);
    let mut text = crate::util::text::ellipsis(text.trim_end(), STDERR_LOG_CHARS);
    if cut {
        text.push_str(&format!(
            " [line cut at {} KiB; the rest of it is discarded]",
            STDERR_LINE_BYTES / 1024
        ));
    }
    crate::util::output::debug(&format!("mcp {} stderr: {text}", shared.name));
    if !text.trim().is_empty() {
        let mut tail = shared.stderr_tail.locked();
        if tail.0.len() == STDERR_TAIL_LINES {
            tail.0.pop_front();
        }
        tail.0.push_back(crate::util::text::ellipsis(
            text.trim(),
            STDERR_TAIL_LINE_CHARS,
        ));
    }
}

/// Characters of one stderr line quoted in a death notice.
const STDERR_TAIL_LINE_CHARS: usize = 300;

/// Characters of one stderr line logged: stack traces have long lines.
const STDERR_LOG_CHARS: usize = 2_000;

#[cfg(test)]
#[path = "stderr_tests.rs"]
mod tests;
