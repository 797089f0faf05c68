//! Unit tests of `body.rs`.

use super::*;

/// Whatever the reader's buffer size, the pieces come out whole and in order, adjacent
/// own bytes are one piece, and the length is known before anything is read.
#[test]
fn a_body_reads_its_pieces_in_order_through_any_buffer() {
    let history = [b"{\"role\":\"user\"}".as_slice(), b"{\"x\":1}".as_slice()];
    let mut body = Body::default();
    body.own(b"{\"model\":\"m\"");
    body.own(b",\"messages\":[");
    body.history(history[0]);
    body.own(b",");
    body.history(history[1]);
    body.history(b"");
    body.own(b"]}");
    let whole = b"{\"model\":\"m\",\"messages\":[{\"role\":\"user\"},{\"x\":1}]}";
    assert_eq!(body.len(), whole.len());
    assert_eq!(body.parts.len(), 6);
    for size in [1, 3, 7, whole.len(), 4096] {
        let (mut reader, mut out, mut buf) = (body.reader(), Vec::new(), vec![0; size]);
        loop {
            let n = reader.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            assert!(
                n == size || out.len() + n == whole.len(),
                "short read of {n}"
            );
            out.extend_from_slice(&buf[..n]);
        }
        assert_eq!(out, whole, "buffer of {size}");
    }
}
