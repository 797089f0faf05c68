//! What the model sees of an MCP tool's answer (`CallToolResult`): text content joined,
//! `structuredContent` as JSON when there is no text, and a short note for what cannot
//! be shown as text (images, audio, binary resources); a resource link names the tool
//! that reads it; and the answers of `resources/list` and `resources/read`. Pure
//! functions.

use serde_json::Value;

/// What the model reads of a result with no content at all.
pub(crate) const NO_CONTENT: &str = "(the tool returned no content)";

/// The model's text and whether the server flagged the call as failed (`isError`).
#[cfg(test)]
pub(crate) fn to_text(result: &Value) -> (String, bool) {
    to_text_linked(result, None)
}

/// `to_text`; a resource link names `read_tool`, the tool that reads it, when the
/// server has resources.
pub(crate) fn to_text_linked(result: &Value, read_tool: Option<&str>) -> (String, bool) {
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
                "[resource link: {}{}{}]",
                block.get("uri").and_then(Value::as_str).unwrap_or("?"),
                block
                    .get("name")
                    .and_then(Value::as_str)
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default(),
                read_tool
                    .map(|t| format!("; read it with {t}"))
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
        NO_CONTENT.to_string()
    } else {
        texts.join("\n")
    };
    (text, is_error)
}

/// One page of `resources/list`: a line per resource, then the cursor of the next page.
pub(crate) fn resource_list(page: &Value) -> String {
    let mut lines: Vec<String> = Vec::new();
    for r in page
        .get("resources")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let s = |k: &str| r.get(k).and_then(Value::as_str);
        let mut line = s("uri").unwrap_or("?").to_string();
        if let Some(n) = s("name") {
            line.push_str(&format!(" {n}"));
        }
        if let Some(m) = s("mimeType") {
            line.push_str(&format!(" ({m})"));
        }
        if let Some(d) = s("description") {
            line.push_str(&format!(": {d}"));
        }
        lines.push(line);
    }
    if lines.is_empty() {
        lines.push("(no resources on this page)".into());
    }
    if let Some(c) = page.get("nextCursor").and_then(Value::as_str) {
        lines.push(format!(
            "nextCursor: {c} (pass it as cursor for the next page)"
        ));
    }
    lines.join("\n")
}

/// The `contents` of `resources/read`: text inline, binary as the short note tool
/// results give it.
pub(crate) fn resource_contents(result: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in result
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let uri = c.get("uri").and_then(Value::as_str).unwrap_or("?");
        let mime = c
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or("unknown type");
        match (
            c.get("text").and_then(Value::as_str),
            c.get("blob").and_then(Value::as_str),
        ) {
            (Some(t), _) => parts.push(t.to_string()),
            (None, Some(b)) => parts.push(format!(
                "[resource omitted: {uri} ({mime}), binary, {} bytes of base64]",
                b.len()
            )),
            (None, None) => parts.push(format!("[resource {uri}: no content]")),
        }
    }
    if parts.is_empty() {
        return "(the resource has no contents)".into();
    }
    parts.join("\n")
}

#[cfg(test)]
#[path = "content_tests.rs"]
mod tests;
