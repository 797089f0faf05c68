//! The ReadFile tool (SPEC §4): a window of a text file as numbered lines, or an image or
//! a PDF (known by its magic bytes) whole, for the model to look at.
//!
//! The file is streamed line by line with a per-line byte cap, so memory stays bounded
//! whatever the file's size or line length; reading stops after the window. Opening goes
//! through `paths` (confined, no symlink followed, no FIFO or device opened).

use std::io::{self, BufRead, BufReader, Cursor, Read};

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Subject, ToolContext, ToolError, ToolResult, Traits, TypedTool, files, paths};
use crate::model::media;
use crate::model::protocol::{ContentBlock, MediaSource};

/// Lines returned when `limit` is not given (SPEC §4).
const DEFAULT_LIMIT_LINES: u64 = 2_000;
/// Longer lines are cut with a marker (SPEC §4): minified files would flood the context.
const MAX_LINE_CHARS: usize = 2_000;
/// Bytes of one line kept in memory: enough for `MAX_LINE_CHARS` of 4-byte characters,
/// and a secret that straddles the cut, so that it is redacted whole before the cut.
const LINE_KEEP_BYTES: usize = MAX_LINE_CHARS * 4 + 1024;
/// A NUL byte among the first this many bytes marks a binary file (SPEC §4).
const BINARY_SNIFF_BYTES: u64 = 512;
/// Output bytes per call (~128k tokens at most): ReadFile is never spilled, so this is
/// what bounds its memory and context use; the note gives the offset to continue from.
const MAX_OUTPUT_BYTES: usize = 512 * 1024;
/// Files up to this size have their total line count reported even when only a window is
/// shown; counting a larger file would cost more than the answer is worth.
const COUNT_TOTAL_MAX_BYTES: u64 = 8 * 1024 * 1024;
/// Read buffer: large enough that long lines take few syscalls.
const READ_BUFFER_BYTES: usize = 64 * 1024;

pub(crate) struct ReadFile;

/// An image or a PDF for the model: the file whole (within `model::media`'s limits,
/// downscaled when over them), as a block after a line saying what it is.
fn read_media(
    magic: Vec<u8>,
    file: impl Read,
    path: &str,
    abs: &str,
    shown: &str,
    size: u64,
) -> Result<ToolResult, ToolError> {
    let mut bytes = magic;
    file.take(media::MAX_FILE_BYTES + 1 - bytes.len() as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::failed(format!("cannot read {path}: {e}")))?;
    if bytes.len() as u64 > media::MAX_FILE_BYTES {
        return Err(ToolError::failed(format!(
            "{path} is larger than {} MB, more than any model API takes",
            media::MAX_FILE_BYTES / 1024 / 1024
        )));
    }
    let block = media::prepare(&bytes, Some(abs)).map_err(|e| ToolError::failed(e.0))?;
    let (what, line) = describe(&block, path);
    Ok(ToolResult {
        media: vec![block],
        ..ToolResult::ok(line)
    }
    .with_meta("path", shown)
    .with_meta("bytes", size)
    .with_meta("media", what))
}

/// The media type sent and the line the model reads before the block.
fn describe(block: &ContentBlock, path: &str) -> (String, String) {
    let origin = match block {
        ContentBlock::Image {
            source: MediaSource::Base64 { origin, .. },
        }
        | ContentBlock::Document {
            source: MediaSource::Base64 { origin, .. },
            ..
        } => origin.as_ref(),
        _ => None,
    };
    let Some(r) = origin else {
        return (String::new(), format!("{path}:"));
    };
    let line = match (&r.sent, r.width) {
        (_, 0) => format!("{path}: a PDF of {} bytes, attached.", r.bytes),
        (None, w) => format!(
            "{path}: {} image, {w}×{} pixels, {} bytes, attached.",
            r.media_type, r.height, r.bytes
        ),
        (Some(s), w) if (s.width, s.height) == (w, r.height) => format!(
            "{path}: {} image, {w}×{} pixels, {} bytes; an animation: its first frame is \
             attached ({}).",
            r.media_type, r.height, r.bytes, s.media_type
        ),
        (Some(s), w) => format!(
            "{path}: {} image, {w}×{} pixels, {} bytes; downscaled to {}×{} ({}) to fit the \
             model's limits, attached.",
            r.media_type, r.height, r.bytes, s.width, s.height, s.media_type
        ),
    };
    (r.media_type.clone(), line)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

const DESCRIPTION: &str = "\
Read a text file from the workspace. Returns its lines numbered from 1, one per line as `N<TAB>text`. \
An image (PNG, JPEG, GIF, WebP) or a PDF is returned whole for you to look at (images over 2000 pixels \
a side are downscaled); `offset` and `limit` do not apply to it.

When to use: to look at source code, configuration, logs or test output before changing or \
explaining them, and to read the full saved output whose path another tool's result gave you.
When not to use: to list a directory (use Glob), to search for text across files (use Grep), \
or to inspect another binary file (use Bash, e.g. `file PATH` or `xxd PATH | head`).

- `path` is relative to the workspace root, or absolute inside the workspace.
- At most `limit` lines (default 2000) are returned, starting at line `offset` (1-based, default 1). \
When more lines remain, the result ends with a note giving the offset to continue from: read big files \
in windows this way. Very large windows are also cut at about 512 KB of output, with the same note.
- Lines longer than 2000 characters are cut and marked. Invalid UTF-8 is shown with replacement characters.
- The `N<TAB>` prefixes are not part of the file: never copy them into EditFile's `old_string`.
- Errors (nothing is returned): file not found, the path is a directory, binary file other than an \
image or PDF (a NUL byte in its first 512 bytes), an image or PDF over the limits (the error names it), permission denied, path outside the workspace (also through a symbolic link), not a \
regular file (FIFO, socket, device), offset past the end (the error says how many lines the file has).
- Several ReadFile calls in one turn run in parallel: read all the files you need at once.";

impl TypedTool for ReadFile {
    type Input = Input;
    const TRAITS: Traits = Traits::FILE_READ;

    fn name(&self) -> &str {
        "ReadFile"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file to read: relative to the workspace root, or absolute inside the workspace."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "1-based number of the first line to return. Default 1. Use the offset from a previous result's note to continue."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "How many lines to return at most. Default 2000."
                }
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn subject(&self, input: &Input) -> Subject {
        Subject::Paths(vec![input.path.clone()])
    }

    fn validate(&self, input: &Input) -> Result<(), ToolError> {
        if input.path.trim().is_empty() {
            return Err(ToolError::failed("`path` is empty: give the file to read"));
        }
        if input.offset == Some(0) {
            return Err(ToolError::failed(
                "`offset` is 1-based: the first line is offset 1",
            ));
        }
        if input.limit == Some(0) {
            return Err(ToolError::failed("`limit` must be at least 1"));
        }
        Ok(())
    }

    fn execute(&self, ctx: &ToolContext, input: &Input) -> Result<ToolResult, ToolError> {
        let resolved = paths::resolve_for_read(ctx, &input.path)?;
        let (file, md) = paths::open_for_read(ctx, &resolved, &input.path)?;
        let shown = paths::display_path(ctx, &resolved);
        let window = Window {
            offset: input.offset.unwrap_or(1).max(1),
            limit: input.limit.unwrap_or(DEFAULT_LIMIT_LINES).max(1),
            count_rest: md.len() <= COUNT_TOTAL_MAX_BYTES,
            size: md.len(),
        };
        let mut file = file;
        // One read serves both sniffs: the media magic is the head's first bytes (the
        // head holds at least 12 of a file that has them).
        let head = read_head(&mut file, window.size)
            .map_err(|e| ToolError::failed(format!("cannot read {}: {e}", input.path)))?;
        if media::sniff(&head).is_some() {
            let abs = resolved.display().to_string();
            return read_media(head, file, &input.path, &abs, &shown, md.len());
        }
        // Text through the client (an editor's buffer) when it reads, windowed as a
        // disk file is; images and PDFs are no buffers and come from disk.
        let (read, size, source) = match ctx.files.reader(ctx, &resolved) {
            Some(fs) => {
                drop(file);
                let text = files::client_read(fs, &resolved, &input.path)?;
                let size = text.len() as u64;
                let window = Window {
                    size,
                    count_rest: size <= COUNT_TOTAL_MAX_BYTES,
                    ..window
                };
                (
                    read_window(Cursor::new(text.into_bytes()), &window),
                    size,
                    "client",
                )
            }
            None => (show_window(head, file, &window), md.len(), "disk"),
        };
        let read =
            read.map_err(|e| ToolError::failed(format!("cannot read {}: {e}", input.path)))?;
        let base = |r: ToolResult| {
            let r = r.with_meta("path", shown.as_str()).with_meta("bytes", size);
            if source == "client" {
                r.with_meta("source", source)
            } else {
                r
            }
        };
        let content = match read {
            Outcome::Binary => {
                return Err(ToolError::failed(format!(
                    "{} is a binary file (it has a NUL byte in its first {BINARY_SNIFF_BYTES} bytes); \
                     ReadFile only shows text. Use Bash to inspect it, e.g. `file {0}` or `xxd {0} | head`.",
                    input.path
                )));
            }
            Outcome::Empty => {
                let r = ToolResult::ok(format!("{} is empty (0 bytes).", input.path));
                return Ok(base(r)
                    .with_meta("lines_returned", 0)
                    .with_meta("total_lines", 0));
            }
            Outcome::PastEnd { total } => {
                return Err(ToolError::failed(format!(
                    "offset {} is past the end of {}, which has {total} line{}. Use an offset from 1 to {total}.",
                    window.offset,
                    input.path,
                    if total == 1 { "" } else { "s" }
                )));
            }
            Outcome::Lines(l) => l,
        };
        let mut text = content.text;
        if let Some(next) = content.next_offset {
            let of_total = content
                .total
                .map(|t| format!(" of {t}"))
                .unwrap_or_default();
            let why = if content.budget_hit {
                " (output size limit reached)"
            } else {
                ""
            };
            text.push_str(&format!(
                "\n\n[Showing lines {}-{}{of_total}{why}. More lines remain: call ReadFile with offset={next} to continue.]",
                window.offset,
                next - 1
            ));
        }
        let mut r = base(ToolResult::ok(text))
            .with_meta("offset", window.offset)
            .with_meta("lines_returned", content.returned)
            .with_meta("lines_cut", content.cut_lines);
        if let Some(t) = content.total {
            r = r.with_meta("total_lines", t);
        }
        Ok(r)
    }

    fn max_result_chars(&self) -> Option<usize> {
        None // SPEC §5: reading a spilled result must never spill again
    }
}

struct Window {
    offset: u64,
    limit: u64,
    /// Whether to count the lines after the window to report the total.
    count_rest: bool,
    /// The file's size when opened (0: unknown, as some filesystems report).
    size: u64,
}

enum Outcome {
    Binary,
    Empty,
    PastEnd { total: u64 },
    Lines(Shown),
}

struct Shown {
    text: String,
    returned: u64,
    /// Where to continue, when lines remain after the window.
    next_offset: Option<u64>,
    total: Option<u64>,
    budget_hit: bool,
    cut_lines: u64,
}

/// The window `w` of a text file read from its start (the client's buffer, the tests).
fn read_window(file: impl Read, w: &Window) -> io::Result<Outcome> {
    let mut file = file;
    let head = read_head(&mut file, w.size)?;
    show_window(head, file, w)
}

/// The file's first bytes, which the binary and media sniffs look at: a file smaller than
/// the binary sniff (`size`, from its metadata; 0 when unknown) whole, in one read. The
/// read to its end (one more) is [`show_window`]'s, as for any file.
fn read_head(file: &mut impl Read, size: u64) -> io::Result<Vec<u8>> {
    let sniff = match size {
        0 => BINARY_SNIFF_BYTES,
        n => n.min(BINARY_SNIFF_BYTES),
    };
    // Sized up front: from empty, read_to_end probes with 32-byte reads first.
    let mut head = Vec::with_capacity(sniff as usize);
    file.take(sniff).read_to_end(&mut head)?;
    Ok(head)
}

/// The window `w` of a text file whose first bytes, `head`, were read already.
fn show_window(head: Vec<u8>, file: impl Read, w: &Window) -> io::Result<Outcome> {
    if head.is_empty() {
        return Ok(Outcome::Empty);
    }
    if head.contains(&0) {
        return Ok(Outcome::Binary);
    }
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, Cursor::new(head).chain(file));
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    while line_no + 1 < w.offset {
        if read_line_capped(&mut reader, &mut buf, 0)?.is_none() {
            return Ok(Outcome::PastEnd { total: line_no });
        }
        line_no += 1;
    }
    let mut text = String::new();
    let (mut returned, mut cut_lines, mut budget_hit, mut eof) = (0u64, 0u64, false, false);
    while returned < w.limit {
        let Some(full_len) = read_line_capped(&mut reader, &mut buf, LINE_KEEP_BYTES)? else {
            eof = true;
            break;
        };
        line_no += 1;
        let (line, cut) = render_line(&buf, full_len);
        let entry = format!("{line_no}\t{line}\n");
        if returned > 0 && text.len() + entry.len() > MAX_OUTPUT_BYTES {
            budget_hit = true;
            line_no -= 1; // not shown: the next call starts with it
            break;
        }
        text.push_str(&entry);
        returned += 1;
        cut_lines += u64::from(cut);
    }
    if returned == 0 {
        return Ok(Outcome::PastEnd { total: line_no });
    }
    text.pop(); // the last line's '\n'
    let more = budget_hit || (!eof && !reader.fill_buf()?.is_empty());
    let total = if !more {
        Some(line_no)
    } else if w.count_rest {
        let mut rest = u64::from(budget_hit); // the line read but not shown
        while read_line_capped(&mut reader, &mut buf, 0)?.is_some() {
            rest += 1;
        }
        Some(line_no + rest)
    } else {
        None
    };
    let next_offset = more.then_some(line_no + 1);
    Ok(Outcome::Lines(Shown {
        text,
        returned,
        next_offset,
        total,
        budget_hit,
        cut_lines,
    }))
}

/// A line for display: lossy UTF-8, CR of a CRLF dropped, cut at `MAX_LINE_CHARS` with a
/// marker. Returns whether it was cut.
fn render_line(kept: &[u8], full_len: u64) -> (String, bool) {
    let bytes = kept.strip_suffix(b"\r").unwrap_or(kept);
    let s = String::from_utf8_lossy(bytes);
    let over_chars = s.chars().nth(MAX_LINE_CHARS).is_some();
    if !over_chars && full_len <= kept.len() as u64 {
        return (s.into_owned(), false);
    }
    // Redacted before the cut: a cut through a secret would leave its prefix.
    let cut: String = crate::util::output::redact(&s)
        .chars()
        .take(MAX_LINE_CHARS)
        .collect();
    (
        format!("{cut}… [line cut at {MAX_LINE_CHARS} characters; it has {full_len} bytes]"),
        true,
    )
}

/// Reads one line (without its '\n') keeping at most `keep` bytes of it in `buf`.
/// Returns the line's full length in bytes, or `None` at end of input.
fn read_line_capped(
    r: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: usize,
) -> io::Result<Option<u64>> {
    buf.clear();
    let (mut total, mut any) = (0u64, false);
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(any.then_some(total));
        }
        any = true;
        let newline = chunk.iter().position(|&b| b == b'\n');
        let part = &chunk[..newline.unwrap_or(chunk.len())];
        let room = keep.saturating_sub(buf.len());
        buf.extend_from_slice(&part[..part.len().min(room)]);
        total += part.len() as u64;
        let used = part.len() + usize::from(newline.is_some());
        r.consume(used);
        if newline.is_some() {
            return Ok(Some(total));
        }
    }
}

#[cfg(test)]
#[path = "read_file_tests.rs"]
mod tests;
