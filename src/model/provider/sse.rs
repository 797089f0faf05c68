//! A pure, incremental server-sent-events decoder over any `BufRead`, following the
//! WHATWG "parsing an event stream" rules (SPEC §3.1). It owns line framing (LF, CRLF,
//! CR — also a CR and its LF split across reads), comments, field parsing, the BOM and
//! dispatch; it knows nothing about HTTP or the Anthropic event payloads, so live
//! streams and cassette replay share it. Memory is bounded by one line and one event,
//! never by the whole body.

use std::io::{self, BufRead};

/// Longest line accepted, in bytes. Real lines are a few KiB (a large tool-input
/// fragment); anything near this is a broken or hostile server, not a model turn.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Largest data buffer of one event, in bytes (multi-line `data:` joined): same reason.
pub(crate) const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The UTF-8 byte order mark, stripped once at the very start of the stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, `"message"` when absent or empty.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event ID seen so far (it persists across events), if any.
    pub id: Option<String>,
}

/// Incremental decoder: call [`SseReader::next_event`] until it returns `Ok(None)`.
pub(crate) struct SseReader<R: BufRead> {
    reader: R,
    /// Bytes of the line being assembled (a line may span several reads).
    line: Vec<u8>,
    /// The previous line ended in CR: a LF at the start of the next read belongs to it.
    after_cr: bool,
    /// Whether the first line has been seen (the BOM check happens once).
    started: bool,
    event_type: String,
    /// Every `data:` value followed by `\n`; empty means "no data field seen".
    data: String,
    last_id: Option<String>,
    retry_ms: Option<u64>,
}

impl<R: BufRead> SseReader<R> {
    pub(crate) fn new(reader: R) -> Self {
        SseReader {
            reader,
            line: Vec::new(),
            after_cr: false,
            started: false,
            event_type: String::new(),
            data: String::new(),
            last_id: None,
            retry_ms: None,
        }
    }

    /// The last valid `retry:` value (reconnection time in ms): the model's streams ignore
    /// it (our retry policy is our own); MCP's streamable HTTP resumes after it.
    pub(crate) fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// The next dispatched event, or `None` at the end of the stream. A pending event
    /// without its blank line (and an incomplete last line) is discarded at EOF.
    pub(crate) fn next_event(&mut self) -> io::Result<Option<SseEvent>> {
        loop {
            if !self.read_line()? {
                return Ok(None);
            }
            if let Some(event) = self.process_line()? {
                return Ok(Some(event));
            }
        }
    }

    /// Reads one line (without its terminator) into `self.line`. Returns false at EOF,
    /// where an unterminated line is dropped as the spec says.
    fn read_line(&mut self) -> io::Result<bool> {
        self.line.clear();
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                self.line.clear();
                return Ok(false);
            }
            if self.after_cr {
                self.after_cr = false;
                if buf[0] == b'\n' {
                    self.reader.consume(1);
                    continue;
                }
            }
            match buf.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(i) => {
                    self.after_cr = buf[i] == b'\r';
                    self.line.extend_from_slice(&buf[..i]);
                    self.reader.consume(i + 1);
                    self.check_line_len()?;
                    break;
                }
                None => {
                    let n = buf.len();
                    self.line.extend_from_slice(buf);
                    self.reader.consume(n);
                    self.check_line_len()?;
                }
            }
        }
        if !self.started {
            self.started = true;
            if self.line.starts_with(BOM) {
                self.line.drain(..BOM.len());
            }
        }
        Ok(true)
    }

    fn check_line_len(&self) -> io::Result<()> {
        if self.line.len() > MAX_LINE_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("event-stream line longer than {MAX_LINE_BYTES} bytes"),
            ));
        }
        Ok(())
    }

    /// Interprets `self.line`; returns an event when the line was a dispatching blank one.
    fn process_line(&mut self) -> io::Result<Option<SseEvent>> {
        if self.line.is_empty() {
            return Ok(self.dispatch());
        }
        if self.line[0] == b':' {
            return Ok(None);
        }
        // Lines split on ASCII bytes only, so per-line lossy decoding never cuts a
        // multi-byte character.
        let line = String::from_utf8_lossy(&self.line);
        let (field, value) = match line.find(':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (&line[..], ""),
        };
        match field {
            "event" => self.event_type = value.to_string(),
            "data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("event-stream event larger than {MAX_EVENT_BYTES} bytes"),
                    ));
                }
                self.data.push_str(value);
                self.data.push('\n');
            }
            // An id holding NUL is ignored (WHATWG).
            "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry_ms = value.parse().ok();
            }
            // Unknown fields, a NUL id and a non-numeric retry are ignored.
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event_type = std::mem::take(&mut self.event_type);
        if self.data.is_empty() {
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the `\n` after the last data line
        let event = if event_type.is_empty() {
            "message".to_string()
        } else {
            event_type
        };
        Some(SseEvent {
            event,
            data,
            id: self.last_id.clone(),
        })
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
pub(crate) mod tests;
