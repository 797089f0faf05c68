//! Finding values in stored JSON without parsing it: string contents are skipped with
//! `memchr`, nothing is decoded or copied. Clearing uses it to find the tool results'
//! `content` values in a message's stored bytes.

use memchr::memchr;

/// The end (exclusive) of the JSON string whose opening quote is at `at`. Only quotes
/// are searched for (`\n` escapes are everywhere in tool output; quotes are rarer): a
/// quote after an odd number of backslashes is escaped.
fn string_end(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        let k = i + memchr(b'"', b.get(i..)?)?;
        let slashes = b[at + 1..k]
            .iter()
            .rev()
            .take_while(|&&c| c == b'\\')
            .count();
        if slashes % 2 == 0 {
            return Some(k + 1);
        }
        i = k + 1;
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        i += 1;
    }
    i
}

/// The end (exclusive) of the JSON value starting at `at`.
fn value_end(b: &[u8], at: usize) -> Option<usize> {
    match *b.get(at)? {
        b'"' => string_end(b, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = at;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            {
                i += 1;
            }
            (i > at).then_some(i)
        }
    }
}

/// The fields of the object at `at`: (key bytes as written, value start, value end).
fn fields(b: &[u8], at: usize) -> Option<Vec<(&[u8], usize, usize)>> {
    if *b.get(at)? != b'{' {
        return None;
    }
    let mut out = Vec::new();
    let mut i = skip_ws(b, at + 1);
    if *b.get(i)? == b'}' {
        return Some(out);
    }
    loop {
        if *b.get(i)? != b'"' {
            return None;
        }
        let key_end = string_end(b, i)?;
        let key = &b[i + 1..key_end - 1];
        i = skip_ws(b, key_end);
        if *b.get(i)? != b':' {
            return None;
        }
        let start = skip_ws(b, i + 1);
        let end = value_end(b, start)?;
        out.push((key, start, end));
        i = skip_ws(b, end);
        match *b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return Some(out),
            _ => return None,
        }
    }
}

/// The items of the array at `at`: (start, end) of each.
fn items(b: &[u8], at: usize) -> Option<Vec<(usize, usize)>> {
    if *b.get(at)? != b'[' {
        return None;
    }
    let mut out = Vec::new();
    let mut i = skip_ws(b, at + 1);
    if *b.get(i)? == b']' {
        return Some(out);
    }
    loop {
        let end = value_end(b, i)?;
        out.push((i, end));
        i = skip_ws(b, end);
        match *b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b']' => return Some(out),
            _ => return None,
        }
    }
}

/// For each block of a message's JSON (`{"role":…,"content":[…]}`), the byte range of
/// its `content` value when the block is a `tool_result`; None for the message when it
/// is not of that shape.
pub(crate) fn result_contents(json: &str) -> Option<Vec<Option<(usize, usize)>>> {
    let b = json.as_bytes();
    let top = fields(b, skip_ws(b, 0))?;
    let &(_, start, _) = top.iter().find(|(k, _, _)| *k == b"content")?;
    items(b, start)?
        .into_iter()
        .map(|(s, _)| {
            let f = fields(b, s)?;
            let is_result = f
                .iter()
                .any(|(k, vs, ve)| *k == b"type" && &b[*vs..*ve] == b"\"tool_result\"");
            let content = f.iter().find(|(k, _, _)| *k == b"content");
            Some(content.filter(|_| is_result).map(|&(_, vs, ve)| (vs, ve)))
        })
        .collect()
}

#[cfg(test)]
#[path = "json_walk_tests.rs"]
mod tests;
