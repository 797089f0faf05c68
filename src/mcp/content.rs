//! What the model sees of an MCP tool's answer (`CallToolResult`): text content joined,
//! `structuredContent` as JSON when there is no text, and a short note for what cannot
//! be shown as text (images, audio, binary resources). Pure functions.

use serde_json::Value;

/// The model's text and whether the server flagged the call as failed (`isError`).
pub(crate) fn to_text(result: &Value) -> (String, bool) {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let mut texts: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for block in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let mime = block
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or("unknown type");
        match kind {
            "text" => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    texts.push(t.to_string());
                }
            }
            "image" | "audio" => notes.push(format!(
                "[{kind} omitted: {mime}, {} bytes of base64]",
                block
                    .get("data")
                    .and_then(Value::as_str)
                    .map_or(0, str::len)
            )),
            "resource" => {
                let r = block.get("resource").unwrap_or(&Value::Null);
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("?");
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => texts.push(t.to_string()),
                    None => notes.push(format!(
                        "[resource omitted: {uri} ({}), binary]",
                        r.get("mimeType")
                            .and_then(Value::as_str)
                            .unwrap_or("unknown type")
                    )),
                }
            }
            "resource_link" => notes.push(format!(
                "[resource link: {}{}]",
                block.get("uri").and_then(Value::as_str).unwrap_or("?"),
                block
                    .get("name")
                    .and_then(Value::as_str)
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            )),
            other => notes.push(format!("[content of type {other:?} omitted]")),
        }
    }
    if texts.is_empty()
        && let Some(s) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        texts.push(s.to_string());
    }
    texts.extend(notes);
    let text = if texts.is_empty() {
        "(the tool returned no content)".to_string()
    } else {
        texts.join("\n")
    };
    (text, is_error)
}

#[cfg(test)]
#[path = "content_tests.rs"]
mod tests;
