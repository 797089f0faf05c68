//! OpenAI's Responses API wire (`POST {base}/responses`): the API OpenAI's coding models
//! are served on, also Azure OpenAI's `/openai/v1`. Stateless (`store: false`): every
//! request carries the whole conversation as `input` items, translated once per history
//! message (kept beside it, `Entry::wire`): user text as `message` items, results as
//! `function_call_output`, calls as `function_call`, and the model's `reasoning` items
//! spliced back exactly as the stream delivered them (`ContentBlock::Reasoning`), with
//! `include: ["reasoning.encrypted_content"]` so they can be. The history stays in the
//! transcript's one format; decoding in is `decode`.

pub(crate) mod decode;

use std::io::BufRead;

use serde_json::{Map, Value, json};

use super::TurnRequest;
use super::http::{Body, HttpConfig, TurnResult, Wire};
use super::retry::OnNotice;
use crate::config::cli::{Effort, ToolChoice};
use crate::model::protocol::{ContentBlock, Message, Role};
use crate::record::history::BodySink;

/// Model families that do not reason: they get no `include` of encrypted reasoning
/// (which they reject). Matched anywhere in the name, for gateway prefixes.
const NON_REASONING_MODELS: &[&str] = &["gpt-4", "gpt-3.5", "chatgpt-4o"];

/// The Responses API.
pub(crate) struct ResponsesWire;

impl Wire for ResponsesWire {
    fn path(&self) -> &'static str {
        "/responses"
    }

    fn headers(&self, config: &HttpConfig) -> Vec<(&'static str, String)> {
        let mut headers = vec![
            ("content-type", "application/json".to_string()),
            ("accept", "text/event-stream".to_string()),
        ];
        if !config.api_key.is_empty() {
            headers.push(("authorization", format!("Bearer {}", config.api_key)));
        }
        headers
    }

    fn body<'a>(
        &self,
        request: &TurnRequest<'a>,
        config: &HttpConfig,
        out: &mut Body<'a>,
    ) -> serde_json::Result<()> {
        let options = Options {
            tool_choice: config.request.tool_choice,
            effort: config.request.effort,
            cache_key: &config.cache_key,
        };
        write_body(request, &options, out);
        Ok(())
    }

    fn request_id_header(&self) -> &'static str {
        "x-request-id"
    }

    /// The same error bodies as chat completions: `{"error":{"message","type","code"}}`.
    fn parse_error_body(&self, raw: &[u8]) -> Option<(String, String)> {
        super::openai::OpenAiWire.parse_error_body(raw)
    }

    fn decode(&self, reader: &mut dyn BufRead, on_notice: &mut OnNotice<'_>) -> TurnResult {
        decode::read_responses_turn(reader, on_notice)
    }
}

/// What a request carries besides the history and the tools.
pub(crate) struct Options<'a> {
    pub tool_choice: Option<ToolChoice>,
    pub effort: Option<Effort>,
    /// `prompt_cache_key`: the run's session id (empty: not sent).
    pub cache_key: &'a str,
}

/// Whether `model` is asked for its encrypted reasoning: every model but the families
/// known not to reason, and any model run with `--effort`.
fn wants_reasoning(model: &str, effort: Option<Effort>) -> bool {
    let model = model.to_ascii_lowercase();
    effort.is_some() || !NON_REASONING_MODELS.iter().any(|m| model.contains(m))
}

/// The request body; the history's items are borrowed from their entries.
pub(crate) fn write_body<'a>(
    request: &TurnRequest<'a>,
    options: &Options<'_>,
    out: &mut impl BodySink<'a>,
) {
    let mut head = json!({
        "model": request.model,
        "stream": true,
        "store": false,
        "max_output_tokens": request.max_tokens,
        "parallel_tool_calls": true,
    });
    if !request.system.is_empty() {
        head["instructions"] = json!(request.system);
    }
    if wants_reasoning(request.model, options.effort) {
        head["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(effort) = options.effort {
        head["reasoning"] = json!({"effort": effort.as_str()});
    }
    if !options.cache_key.is_empty() {
        head["prompt_cache_key"] = json!(options.cache_key);
    }
    if !request.tools.is_empty() {
        head["tools"] = Value::Array(response_tools(request.tools));
        if let Some(choice) = options.tool_choice {
            head["tool_choice"] = json!(match choice {
                ToolChoice::Auto => "auto",
                ToolChoice::Required => "required",
                ToolChoice::None => "none",
            });
        }
    }
    let head = head.to_string();
    out.own(&head.as_bytes()[..head.len() - 1]); // all but the closing brace
    out.own(b",\"input\":[");
    let mut first = true;
    for entry in request.messages {
        let items = entry.wire(input_items_json);
        if items.is_empty() {
            continue;
        }
        if !first {
            out.own(b",");
        }
        first = false;
        out.history(items.as_bytes());
    }
    out.own(b"]}");
}

/// The registry's tools (`{name, description, input_schema}`) as Responses functions.
/// `strict: false`: the API's default is strict, which needs every property required
/// and no additional ones, which our schemas do not promise.
pub(crate) fn response_tools(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let mut f = Map::new();
            f.insert("type".into(), json!("function"));
            f.insert("name".into(), t.get("name").cloned().unwrap_or(Value::Null));
            if let Some(d) = t.get("description") {
                f.insert("description".into(), d.clone());
            }
            let parameters = t
                .get("input_schema")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            f.insert("parameters".into(), parameters);
            f.insert("strict".into(), json!(false));
            Value::Object(f)
        })
        .collect()
}

/// An image or a PDF as an input part: `input_image` or `input_file` with a data URL.
fn input_media_part(block: &ContentBlock) -> Option<Value> {
    use super::openai::{data_url, media_filename};
    match block {
        ContentBlock::Image { source } => {
            Some(json!({"type": "input_image", "image_url": data_url(source)?, "detail": "auto"}))
        }
        ContentBlock::Document { source, title } => Some(json!({"type": "input_file",
            "filename": media_filename(source, title.as_deref()), "file_data": data_url(source)?})),
        _ => None,
    }
}

/// One history message as the comma-separated input items it becomes.
fn input_items_json(message: &Message) -> String {
    input_items(message).join(",")
}

/// A history message as input items, each its JSON text. A user message's results come
/// first (each answers a call of the message before), then its text as one message;
/// an assistant message's blocks keep their order. Reasoning items go back verbatim;
/// thinking of other providers is left out (this API cannot take it).
pub(crate) fn input_items(message: &Message) -> Vec<String> {
    let mut items = Vec::new();
    match message.role {
        Role::User => {
            let mut texts = Vec::new();
            let mut parts = Vec::new();
            for block in &message.content {
                match block {
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    } => {
                        let text = super::openai::tool_result_text(&content.text, *is_error);
                        // `output` is a string, or a list of input parts when the result
                        // holds images or documents.
                        let media: Vec<Value> =
                            content.media.iter().filter_map(input_media_part).collect();
                        let output = if media.is_empty() {
                            json!(text)
                        } else {
                            let mut list = vec![json!({"type": "input_text", "text": text})];
                            list.extend(media);
                            Value::Array(list)
                        };
                        items.push(
                            json!({"type": "function_call_output", "call_id": tool_use_id,
                                   "output": output})
                            .to_string(),
                        );
                    }
                    ContentBlock::Text { text } => texts.push(text.as_str()),
                    other => parts.extend(input_media_part(other)),
                }
            }
            if !texts.is_empty() || !parts.is_empty() {
                let mut content = Vec::new();
                if !texts.is_empty() {
                    content.push(json!({"type": "input_text", "text": texts.join("\n\n")}));
                }
                content.extend(parts);
                items.push(
                    json!({"type": "message", "role": "user", "content": content}).to_string(),
                );
            }
        }
        Role::Assistant => {
            for block in &message.content {
                match block {
                    // Only valid JSON is spliced in (a hand-edited transcript could hold
                    // anything); what the stream gave always is.
                    ContentBlock::Reasoning { item, .. }
                        if serde_json::from_str::<serde::de::IgnoredAny>(item).is_ok() =>
                    {
                        items.push(item.clone())
                    }
                    ContentBlock::Text { text } if !text.is_empty() => items.push(
                        json!({"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": text}]})
                        .to_string(),
                    ),
                    ContentBlock::ToolUse { id, name, input } => items.push(
                        json!({"type": "function_call", "call_id": id, "name": name,
                               "arguments": input.to_string()})
                        .to_string(),
                    ),
                    _ => {}
                }
            }
        }
    }
    items
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
