//! An MCP answer's images and PDFs for the model: `image` content of a tool result and
//! binary resources with an image or PDF MIME type (in a result or from
//! `resources/read`) are taken out of the answer and prepared as the model's own blocks,
//! with the limits of `model::media`; what is left is made text by `content`. A blob that
//! cannot be sent stays in the answer as a note with the reason.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::model::media;
use crate::model::protocol::ContentBlock;

/// Whether a MIME type is one `model::media` may take (it checks the bytes themselves).
fn sendable(mime: &str) -> bool {
    matches!(
        mime,
        "image/png" | "image/jpeg" | "image/jpg" | "image/gif" | "image/webp" | "application/pdf"
    )
}

/// The block for base64 `data`, or why not.
fn block(data: &str, what: &str) -> Result<ContentBlock, String> {
    // Four base64 characters are three bytes: refuse before decoding a huge blob.
    if data.len() as u64 > media::MAX_FILE_BYTES / 3 * 4 + 4 {
        return Err(format!(
            "{what} is larger than {} MB",
            media::MAX_FILE_BYTES / 1024 / 1024
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("{what} is not valid base64: {e}"))?;
    media::prepare(&bytes, None).map_err(|e| e.0.replace("the data", what))
}

/// What was taken out of an answer: the blocks for the model, and a note for each
/// (sent, or why not).
#[derive(Debug, Default)]
pub(crate) struct Taken {
    pub blocks: Vec<ContentBlock>,
    pub notes: Vec<String>,
}

impl Taken {
    /// The result's text with the notes after it (alone when the text says only that
    /// the tool returned nothing else).
    pub(crate) fn annotate(&self, text: String) -> String {
        if self.notes.is_empty() {
            text
        } else if text == crate::mcp::content::NO_CONTENT {
            self.notes.join("\n")
        } else {
            format!("{text}\n{}", self.notes.join("\n"))
        }
    }
}

/// Takes the sendable images and resources out of a `CallToolResult`'s `content`.
pub(crate) fn take_from_result(result: &mut Value) -> Taken {
    let mut out = Taken::default();
    let Some(content) = result.get_mut("content").and_then(Value::as_array_mut) else {
        return out;
    };
    content.retain(|item| {
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let kind = s(item, "type").unwrap_or_default();
        let (data, mime, what) = match kind.as_str() {
            "image" => (
                s(item, "data"),
                s(item, "mimeType"),
                "the image".to_string(),
            ),
            "resource" => {
                let r = item.get("resource").unwrap_or(&Value::Null);
                let uri = s(r, "uri").unwrap_or_else(|| "?".into());
                (
                    s(r, "blob"),
                    s(r, "mimeType"),
                    format!("the resource {uri}"),
                )
            }
            _ => return true,
        };
        let (Some(data), Some(mime)) = (data, mime) else {
            return true;
        };
        if !sendable(&mime) {
            return true;
        }
        match block(&data, &what) {
            Ok(b) => {
                out.blocks.push(b);
                out.notes.push(format!("[{what} ({mime}) is attached]"));
            }
            Err(e) => out.notes.push(format!("[{what} ({mime}) not sent: {e}]")),
        }
        false
    });
    out
}

/// The same for the `contents` of `resources/read`.
pub(crate) fn take_from_contents(result: &mut Value) -> Vec<ContentBlock> {
    let mut out = Vec::new();
    let Some(contents) = result.get_mut("contents").and_then(Value::as_array_mut) else {
        return out;
    };
    for c in contents.iter_mut() {
        let s = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
        let (Some(blob), Some(mime)) = (s("blob"), s("mimeType")) else {
            continue;
        };
        if !sendable(&mime) {
            continue;
        }
        let uri = s("uri").unwrap_or_else(|| "?".into());
        let what = format!("the resource {uri}");
        let text = match block(&blob, &what) {
            Ok(b) => {
                out.push(b);
                format!("[{what} ({mime}) is attached]")
            }
            Err(e) => format!("[{what} ({mime}) not sent: {e}]"),
        };
        *c = json!({"uri": uri, "mimeType": mime, "text": text});
    }
    out
}

#[cfg(test)]
#[path = "media_tests.rs"]
mod tests;
