//! The request body as pieces: the wire's own bytes and the history's stored message
//! JSON, borrowed, sent with a reader that copies them straight into ureq's buffer.

use std::io::{self, Read};

use crate::record::history::BodySink;

/// A request body in pieces: the wire's own bytes (the head, separators, the cache
/// breakpoint) and the history's stored message JSON, borrowed. It is sent with its
/// length up front and read piece by piece into ureq's send buffer, so the history is
/// never copied into a body of its own: that copy, as big as the history, was a long
/// run's largest allocation and a memcpy of the whole history every turn.
#[derive(Default)]
pub(crate) struct Body<'a> {
    own: Vec<u8>,
    parts: Vec<Part<'a>>,
    len: usize,
}

#[derive(Clone, Copy)]
enum Part<'a> {
    /// A range of `own`.
    Own(usize, usize),
    History(&'a [u8]),
}

impl<'a> BodySink<'a> for Body<'a> {
    fn own(&mut self, bytes: &[u8]) {
        let start = self.own.len();
        self.own.extend_from_slice(bytes);
        self.len += bytes.len();
        match self.parts.last_mut() {
            Some(Part::Own(_, end)) if *end == start => *end = self.own.len(),
            _ => self.parts.push(Part::Own(start, self.own.len())),
        }
    }

    fn history(&mut self, bytes: &'a [u8]) {
        self.len += bytes.len();
        self.parts.push(Part::History(bytes));
    }
}

impl<'a> Body<'a> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes from the start (each attempt sends them anew).
    pub(crate) fn reader(&self) -> BodyReader<'_, 'a> {
        BodyReader {
            body: self,
            part: 0,
            offset: 0,
        }
    }
}

/// Reads a [`Body`]'s pieces in order.
pub(crate) struct BodyReader<'b, 'a> {
    body: &'b Body<'a>,
    part: usize,
    offset: usize,
}

impl Read for BodyReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len()
            && let Some(part) = self.body.parts.get(self.part)
        {
            let bytes = match *part {
                Part::Own(start, end) => &self.body.own[start..end],
                Part::History(bytes) => bytes,
            };
            let rest = &bytes[self.offset..];
            let k = rest.len().min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&rest[..k]);
            n += k;
            self.offset += k;
            if self.offset == bytes.len() {
                self.part += 1;
                self.offset = 0;
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
