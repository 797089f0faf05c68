//! Images in the loop: what a tool result's images become in the history (the bytes, the
//! file named for the transcript unless `--transcript-images inline`), and a model that
//! takes no images (`--no-images`, or learned from the server's refusal): each image a
//! tool returned becomes an error result the model can act on, each attached one a note,
//! and the run goes on.

use crate::model::protocol::{ContentBlock, Message, ToolContent};
use crate::model::provider::{ProviderError, ProviderErrorKind};
use crate::tools::ToolResult;

/// What the history gets of a result: its text and media, and whether it failed.
pub(super) fn result_content(
    result: &ToolResult,
    inline: bool,
    refused: bool,
) -> (ToolContent, bool) {
    if refused && !result.media.is_empty() {
        return (
            ToolContent::text(refusal_text(&result.content, &result.media, None)),
            true,
        );
    }
    let media = result
        .media
        .iter()
        .cloned()
        .map(|b| {
            if inline {
                crate::config::images::without_origin(b)
            } else {
                b
            }
        })
        .collect();
    (
        ToolContent {
            text: result.content.clone(),
            media,
        },
        result.is_error,
    )
}

/// The error a result holding `media` becomes for a model that takes no images.
fn refusal_text(text: &str, media: &[ContentBlock], server: Option<&str>) -> String {
    let why = match server {
        Some(m) => format!("the server refused it ({m})"),
        None => "the model takes no images (--no-images)".to_string(),
    };
    let kinds: Vec<&str> = media
        .iter()
        .map(|b| match b {
            ContentBlock::Document { .. } => "a PDF",
            _ => "an image",
        })
        .collect();
    format!(
        "{text}\nError: the result is {} and was not sent: {why}. Work from text instead \
         (e.g. the test's log, or `file`/`identify` on the file with Bash).",
        kinds.join(" and ")
    )
}

/// Whether `e` is a server's refusal of the images a request holds: a 4xx whose message
/// names images or what carries them (llama.cpp: "image input is not supported", vLLM:
/// "not a multimodal model", OpenAI: "image_url is only supported by certain models").
pub(super) fn refuses_images(e: &ProviderError) -> bool {
    let ProviderErrorKind::Http { status, .. } = &e.kind else {
        return false;
    };
    if !(400..500).contains(status) || [401, 403, 404, 408, 429].contains(status) {
        return false;
    }
    let m = e.message.to_ascii_lowercase();
    [
        "image",
        "vision",
        "multimodal",
        "multi-modal",
        "pdf",
        "document",
        "input_file",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// The message without its images and documents: a result holding any becomes an error
/// result saying why, an attached one a note. `None` when it holds none.
pub(super) fn without_media(message: &Message, server: &str) -> Option<Message> {
    let mut changed = false;
    let mut content = Vec::with_capacity(message.content.len());
    for block in &message.content {
        match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content: c,
                ..
            } if !c.media.is_empty() => {
                changed = true;
                content.push(ContentBlock::ToolResult {
                    tool_use_id: tool_use_id.clone(),
                    content: ToolContent::text(refusal_text(&c.text, &c.media, Some(server))),
                    is_error: true,
                });
            }
            ContentBlock::Image { .. } | ContentBlock::Document { .. } => {
                changed = true;
                content.push(ContentBlock::Text {
                    text: format!(
                        "[an attached image or PDF was left out: the server refused it ({server})]"
                    ),
                });
            }
            other => content.push(other.clone()),
        }
    }
    changed.then_some(Message {
        role: message.role,
        content,
    })
}

#[cfg(test)]
#[path = "images_tests.rs"]
mod tests;
