//! Reading a command's output: one thread drains the pipes, decodes UTF-8 incrementally,
//! keeps a bounded head and tail in memory and spills the full text to a file once it
//! outgrows them.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, PipeReader, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::util::secrets::StreamRedactor;

use super::{
    Captured, DRAIN_AFTER_EXIT, MAX_UTF8_BYTES, OUTPUT_HEAD_CHARS, OUTPUT_LIMIT_CHARS,
    OUTPUT_TAIL_CHARS, READ_CHUNK_BYTES,
};

/// What the reader thread collected.
pub(super) struct Streams {
    pub(super) output: Captured,
    pub(super) stderr: Option<Captured>,
    pub(super) pipe_left_open: bool,
}

/// One pipe being read: its decoder and collector; `open` until end of file.
struct Source {
    pipe: PipeReader,
    decoder: Utf8Decoder,
    collector: OutputCollector,
    open: bool,
}

/// The reader thread: reads every pipe until end of file, or until `DRAIN_AFTER_EXIT`
/// after `wake` closes (the command is over).
pub(super) fn read_streams(
    out: PipeReader,
    err: Option<PipeReader>,
    wake: PipeReader,
    spill_dir: &Path,
    tee: Option<super::Tee>,
) -> Streams {
    let new_source = |pipe: PipeReader, name: &'static str| Source {
        pipe,
        decoder: Utf8Decoder::new(),
        collector: OutputCollector::new(
            spill_dir.to_path_buf(),
            name,
            crate::util::output::secrets(),
        ),
        open: true,
    };
    let mut first = new_source(out, "output");
    first.collector.tee = tee;
    let mut sources = vec![first];
    if let Some(err) = err {
        sources.push(new_source(err, "stderr"));
    }
    let mut deadline: Option<Instant> = None;
    let mut pipe_left_open = false;
    while sources.iter().any(|s| s.open) {
        let timeout_ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    pipe_left_open = true;
                    break;
                }
                // Round up so that we never spin on a zero timeout before the deadline.
                i32::try_from(left.as_millis() + 1).unwrap_or(i32::MAX)
            }
        };
        let mut fds: Vec<libc::pollfd> = sources
            .iter()
            .map(|s| libc::pollfd {
                // poll ignores negative descriptors.
                fd: if s.open { s.pipe.as_raw_fd() } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        fds.push(libc::pollfd {
            fd: if deadline.is_none() {
                wake.as_raw_fd()
            } else {
                -1
            },
            events: libc::POLLIN,
            revents: 0,
        });
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            for s in &mut sources {
                s.collector
                    .note_error(&format!("reading the command's output failed: {e}"));
            }
            break;
        }
        if fds.last().is_some_and(|w| w.revents != 0) {
            deadline = Some(Instant::now() + DRAIN_AFTER_EXIT);
        }
        for (s, fd) in sources.iter_mut().zip(&fds) {
            if !s.open || fd.revents == 0 {
                continue;
            }
            match s.decoder.read_from(&mut s.pipe, &mut s.collector) {
                Ok(0) => s.open = false,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    s.collector
                        .note_error(&format!("reading the command's output failed: {e}"));
                    s.open = false;
                }
            }
        }
    }
    let mut captured = sources.into_iter().map(|mut s| {
        s.decoder.finish(&mut s.collector);
        s.collector.finish()
    });
    let output = captured.next().unwrap_or_default();
    Streams {
        output,
        stderr: captured.next(),
        pipe_left_open,
    }
}

/// Incremental, lossy UTF-8 decoding over a fixed buffer: a character split across two
/// reads is completed by the next one, invalid bytes become U+FFFD (as
/// `String::from_utf8_lossy` would do on the whole stream).
pub(super) struct Utf8Decoder {
    buf: Box<[u8]>,
    /// Bytes of an incomplete character kept at the start of `buf` (at most 3).
    pending: usize,
}

impl Utf8Decoder {
    pub(super) fn new() -> Self {
        Utf8Decoder {
            buf: vec![0; READ_CHUNK_BYTES + MAX_UTF8_BYTES].into_boxed_slice(),
            pending: 0,
        }
    }

    /// One read; returns the bytes read (0 at end of file).
    pub(super) fn read_from(
        &mut self,
        r: &mut impl Read,
        sink: &mut OutputCollector,
    ) -> io::Result<usize> {
        let n = r.read(&mut self.buf[self.pending..])?;
        if n == 0 {
            return Ok(0);
        }
        sink.total_bytes += n as u64;
        let end = self.pending + n;
        let incomplete = decode_lossy(&self.buf[..end], |s| sink.push_str(s));
        self.buf.copy_within(end - incomplete..end, 0);
        self.pending = incomplete;
        Ok(n)
    }

    /// End of input: an incomplete character left over is invalid.
    pub(super) fn finish(&mut self, sink: &mut OutputCollector) {
        if self.pending > 0 {
            sink.push_str("\u{FFFD}");
            self.pending = 0;
        }
    }
}

/// Emits `bytes` as text, invalid sequences as U+FFFD; returns the length of an incomplete
/// character at the end, which the caller keeps for the next read.
fn decode_lossy(mut bytes: &[u8], mut emit: impl FnMut(&str)) -> usize {
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                emit(s);
                return 0;
            }
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                if let Ok(s) = std::str::from_utf8(valid) {
                    emit(s);
                }
                match e.error_len() {
                    None => return rest.len(),
                    Some(bad) => {
                        emit("\u{FFFD}");
                        bytes = &rest[bad..];
                    }
                }
            }
        }
    }
}

/// Per-process sequence number for spill file names.
static SPILL_SEQ: AtomicU64 = AtomicU64::new(0);

/// Keeps the head and a ring of the tail in fixed-capacity strings and, once the output
/// exceeds `OUTPUT_LIMIT_CHARS`, streams everything to a spill file.
pub(super) struct OutputCollector {
    head: String,
    head_chars: usize,
    /// The last `tail_chars` characters after the head; never more than OUTPUT_TAIL_CHARS.
    tail: String,
    tail_chars: usize,
    total_chars: u64,
    total_bytes: u64,
    spill_dir: PathBuf,
    /// Names the spill file (`output`, `stderr`).
    stream_name: &'static str,
    spill: Option<Spill>,
    spill_error: Option<String>,
    peak_buffer_bytes: usize,
    /// Secrets are removed before anything is kept or saved, so no cut can split one.
    redactor: StreamRedactor,
    /// Gets every redacted piece as it comes (a background command's live output).
    tee: Option<super::Tee>,
}

impl OutputCollector {
    pub(super) fn new(spill_dir: PathBuf, stream_name: &'static str, secrets: &[String]) -> Self {
        let head = String::with_capacity(OUTPUT_HEAD_CHARS * MAX_UTF8_BYTES);
        let tail = String::with_capacity(OUTPUT_TAIL_CHARS * MAX_UTF8_BYTES);
        let peak_buffer_bytes = head.capacity() + tail.capacity();
        OutputCollector {
            head,
            head_chars: 0,
            tail,
            tail_chars: 0,
            total_chars: 0,
            total_bytes: 0,
            spill_dir,
            stream_name,
            spill: None,
            spill_error: None,
            peak_buffer_bytes,
            redactor: StreamRedactor::new(secrets),
            tee: None,
        }
    }

    pub(super) fn push_str(&mut self, s: &str) {
        let s = self.redactor.push(s);
        self.push_redacted(&s);
    }

    fn push_redacted(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if let Some(tee) = &self.tee {
            tee(s);
        }
        let n = s.chars().count();
        if self.spill.is_none()
            && self.spill_error.is_none()
            && self.total_chars + n as u64 > OUTPUT_LIMIT_CHARS as u64
        {
            // Until now nothing was dropped: head + tail hold the whole output so far.
            self.start_spill();
        }
        if let Some(spill) = &mut self.spill
            && let Err(e) = spill.write(s)
        {
            self.spill_error = Some(format!(
                "the full output could not be saved to {}: {e}",
                spill.path.display()
            ));
            let _ = std::fs::remove_file(&spill.path);
            self.spill = None;
        }
        self.total_chars += n as u64;

        let mut rest = s;
        let mut rest_chars = n;
        if self.head_chars < OUTPUT_HEAD_CHARS {
            let take = (OUTPUT_HEAD_CHARS - self.head_chars).min(n);
            let idx = byte_index_of_char(rest, take);
            self.head.push_str(&rest[..idx]);
            self.head_chars += take;
            rest = &rest[idx..];
            rest_chars -= take;
        }
        self.push_tail(rest, rest_chars);
        self.peak_buffer_bytes = self
            .peak_buffer_bytes
            .max(self.head.capacity() + self.tail.capacity());
    }

    /// Appends `s` (`n` chars) to the tail ring, dropping from its front first so that the
    /// string never grows past its initial capacity.
    fn push_tail(&mut self, s: &str, n: usize) {
        if n == 0 {
            return;
        }
        if n >= OUTPUT_TAIL_CHARS {
            let start = byte_index_of_char(s, n - OUTPUT_TAIL_CHARS);
            self.tail.clear();
            self.tail.push_str(&s[start..]);
            self.tail_chars = OUTPUT_TAIL_CHARS;
            return;
        }
        let excess = (self.tail_chars + n).saturating_sub(OUTPUT_TAIL_CHARS);
        if excess > 0 {
            let idx = byte_index_of_char(&self.tail, excess);
            self.tail.drain(..idx);
            self.tail_chars -= excess;
        }
        self.tail.push_str(s);
        self.tail_chars += n;
    }

    fn start_spill(&mut self) {
        match self.open_spill_file() {
            Ok((file, path)) => {
                let mut spill = Spill::new(file, path, SPILL_HEAD_BYTES, SPILL_TAIL_BYTES);
                let written = spill
                    .write(&self.head)
                    .and_then(|()| spill.write(&self.tail));
                match written {
                    Ok(()) => self.spill = Some(spill),
                    Err(e) => {
                        self.spill_error = Some(format!(
                            "the full output could not be saved to {}: {e}",
                            spill.path.display()
                        ));
                        let _ = std::fs::remove_file(&spill.path);
                    }
                }
            }
            Err(e) => self.spill_error = Some(e),
        }
    }

    fn open_spill_file(&self) -> Result<(File, PathBuf), String> {
        // Private (0700/0600): command output may contain anything the command could
        // read. Created without following symlinks: see `create_spill_file`.
        loop {
            let seq = SPILL_SEQ.fetch_add(1, Ordering::Relaxed);
            let name = format!(
                "command-{}-{seq}-{}.txt",
                std::process::id(),
                self.stream_name
            );
            let path = self.spill_dir.join(&name);
            match super::create_spill_file(&self.spill_dir, &name) {
                Ok(f) => return Ok((f, path)),
                // Left by an earlier run with the same pid: take the next number.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(format!(
                        "the full output could not be saved to {}: {e}",
                        path.display()
                    ));
                }
            }
        }
    }

    fn note_error(&mut self, msg: &str) {
        // Shown at the end of the output, inside the bounded tail.
        let note = format!("\n[{msg}]\n");
        let n = note.chars().count();
        self.push_tail(&note, n);
    }

    pub(super) fn finish(mut self) -> Captured {
        let rest = self.redactor.finish();
        self.push_redacted(&rest);
        let kept = (self.head_chars + self.tail_chars) as u64;
        let truncated = self.total_chars > kept;
        let mut dropped = 0;
        let full_output_path = match self.spill.take() {
            Some(spill) => {
                let path = spill.path.clone();
                match spill.finish() {
                    Ok(d) => {
                        dropped = d;
                        Some(path)
                    }
                    Err(e) => {
                        self.spill_error = Some(format!(
                            "the full output could not be saved to {}: {e}",
                            path.display()
                        ));
                        None
                    }
                }
            }
            None => None,
        };
        let text = if truncated {
            let cut = self.total_chars - kept;
            let saved = match (&full_output_path, &self.spill_error) {
                (Some(p), _) if dropped > 0 => format!(
                    "the output was saved to {} without {dropped} bytes from its middle (it \
                     keeps the first {} MiB and the last {} MiB); read it with ReadFile \
                     (offset/limit to page through it)",
                    p.display(),
                    SPILL_HEAD_BYTES / (1024 * 1024),
                    SPILL_TAIL_BYTES / (1024 * 1024)
                ),
                (Some(p), _) => format!(
                    "the full output was saved to {}; read it with ReadFile (offset/limit to page through it)",
                    p.display()
                ),
                (None, Some(e)) => e.clone(),
                (None, None) => "the full output was not saved".to_string(),
            };
            format!(
                "{}\n\n[... {cut} of {} characters cut (kept the first {} and the last {}); {saved} ...]\n\n{}",
                self.head, self.total_chars, self.head_chars, self.tail_chars, self.tail
            )
        } else {
            let mut t = self.head;
            t.push_str(&self.tail);
            t
        };
        Captured {
            text,
            total_bytes: self.total_bytes,
            total_chars: self.total_chars,
            truncated,
            full_output_path,
            spill_error: self.spill_error,
            peak_buffer_bytes: self.peak_buffer_bytes,
        }
    }
}

/// Bytes of a command's output saved from its start: any real log is saved whole, while
/// `yes | head -c 1G` can no longer fill the disk.
pub(super) const SPILL_HEAD_BYTES: u64 = 128 * 1024 * 1024;
/// Bytes saved from its end (summaries, the final errors); held in memory until the end.
pub(super) const SPILL_TAIL_BYTES: u64 = 8 * 1024 * 1024;

/// The saved output: the first `head` bytes go straight to the file, the last `tail`
/// bytes after them are kept in a ring, and `finish` appends the ring behind a note of
/// how many bytes were dropped in between.
pub(super) struct Spill {
    file: File,
    pub(super) path: PathBuf,
    head: u64,
    tail: usize,
    /// Bytes written to the file so far (the head).
    head_written: u64,
    /// Set once the head is full: everything after goes to the ring.
    head_closed: bool,
    ring: VecDeque<u8>,
    /// Bytes that went into the ring, kept or not.
    ring_total: u64,
}

impl Spill {
    pub(super) fn new(file: File, path: PathBuf, head: u64, tail: u64) -> Spill {
        Spill {
            file,
            path,
            head,
            tail: usize::try_from(tail).unwrap_or(usize::MAX),
            head_written: 0,
            head_closed: false,
            ring: VecDeque::new(),
            ring_total: 0,
        }
    }

    pub(super) fn write(&mut self, mut s: &str) -> io::Result<()> {
        if !self.head_closed {
            let room = usize::try_from(self.head - self.head_written).unwrap_or(usize::MAX);
            if s.len() <= room {
                self.file.write_all(s.as_bytes())?;
                self.head_written += s.len() as u64;
                return Ok(());
            }
            // The head ends on a character boundary.
            let mut cut = room;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            self.file.write_all(&s.as_bytes()[..cut])?;
            self.head_written += cut as u64;
            self.head_closed = true;
            s = &s[cut..];
        }
        let bytes = s.as_bytes();
        self.ring_total += bytes.len() as u64;
        let keep = &bytes[bytes.len().saturating_sub(self.tail)..];
        self.ring.extend(keep);
        let excess = self.ring.len().saturating_sub(self.tail);
        self.ring.drain(..excess);
        Ok(())
    }

    /// Writes the ring out; returns how many bytes were dropped between head and tail.
    pub(super) fn finish(mut self) -> io::Result<u64> {
        let mut dropped = self.ring_total - self.ring.len() as u64;
        let (a, b) = self.ring.as_slices();
        let mut ring = [a, b].concat();
        if dropped > 0 {
            // The tail starts on a character boundary.
            let start = ring
                .iter()
                .position(|&c| (c & 0xC0) != 0x80)
                .unwrap_or(ring.len());
            ring.drain(..start);
            dropped += start as u64;
            let note = format!(
                "\n\n[... {dropped} bytes dropped here: this file keeps the first {} and the \
                 last {} bytes of the output ...]\n\n",
                self.head_written,
                ring.len()
            );
            self.file.write_all(note.as_bytes())?;
        }
        self.file.write_all(&ring)?;
        self.file.flush()?;
        Ok(dropped)
    }
}

/// Byte offset of the `n`-th character of `s` (its length when `s` has fewer).
fn byte_index_of_char(s: &str, n: usize) -> usize {
    if s.is_ascii() {
        return n.min(s.len());
    }
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}
