//! Unit tests of the Bedrock wire: the model path as the SDK escapes it, the body's
//! shape, the error body.

use super::*;
use crate::model::provider::http::{Body, HttpConfig};
use std::io::Read;

#[test]
fn model_ids_are_escaped_as_urllib_quote_with_colon_and_semicolon_safe() {
    assert_eq!(
        model_path("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"
    );
    assert_eq!(
        model_path("arn:aws:bedrock:us-east-1:1:application-inference-profile/ab c;d+é"),
        "/model/arn:aws:bedrock:us-east-1:1:application-inference-profile%2Fab%20c;d%2B%C3%A9/invoke-with-response-stream"
    );
}

#[test]
fn the_body_has_the_version_and_betas_but_no_model_or_stream() {
    let wire = BedrockWire::decoder();
    let mut config = HttpConfig::new("http://x", "");
    config.request.betas = vec!["b1".into(), "b1".into(), "b2".into()];
    let request = crate::model::provider::TurnRequest {
        model: "m",
        max_tokens: 10,
        system: "sys",
        messages: &[],
        tools: &[],
    };
    let mut body = Body::default();
    wire.body(&request, &config, &mut body).unwrap();
    let mut text = String::new();
    body.reader().read_to_string(&mut text).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["anthropic_version"], BEDROCK_ANTHROPIC_VERSION);
    assert_eq!(v["anthropic_beta"], serde_json::json!(["b1", "b2"]));
    assert!(v.get("model").is_none() && v.get("stream").is_none(), "{v}");
    assert_eq!(v["max_tokens"], 10);
    let headers = wire.headers(&config);
    assert!(
        headers
            .iter()
            .all(|(n, _)| *n != "anthropic-beta" && *n != "x-api-key")
    );
}

#[test]
fn error_bodies_give_their_message() {
    let wire = BedrockWire::decoder();
    assert_eq!(
        wire.parse_error_body(
            br#"{"message":"The security token included in the request is invalid."}"#
        ),
        Some((
            "bedrock_error".into(),
            "The security token included in the request is invalid.".into()
        ))
    );
    assert_eq!(
        wire.parse_error_body(br#"{"__type":"com.amazon#ThrottlingException","Message":"slow"}"#),
        Some((
            "com.amazon#ThrottlingException"
                .rsplit('#')
                .next()
                .unwrap()
                .into(),
            "slow".into()
        ))
    );
    assert_eq!(wire.parse_error_body(b"<html>"), None);
}

#[test]
fn images_and_documents_go_into_the_body_as_the_messages_api_takes_them() {
    use crate::model::protocol::{ContentBlock, MediaSource, Message, Role, ToolContent};
    let image = |media_type: &str| MediaSource::Base64 {
        media_type: media_type.into(),
        data: "AAAA".into(),
        origin: None,
    };
    let entry = crate::record::history::Entry::new(Message {
        role: Role::User,
        content: vec![
            ContentBlock::ToolResult {
                tool_use_id: "t1".into(),
                content: ToolContent {
                    text: "shot.png".into(),
                    media: vec![
                        ContentBlock::Image {
                            source: image("image/png"),
                        },
                        ContentBlock::Document {
                            source: image("application/pdf"),
                            title: Some("spec.pdf".into()),
                        },
                    ],
                },
                is_error: false,
            },
            ContentBlock::Image {
                source: image("image/webp"),
            },
        ],
    });
    let request = crate::model::provider::TurnRequest {
        model: "m",
        max_tokens: 10,
        system: "sys",
        messages: &[entry],
        tools: &[],
    };
    let mut body = Body::default();
    BedrockWire::decoder()
        .body(&request, &HttpConfig::new("http://x", ""), &mut body)
        .unwrap();
    let mut text = String::new();
    body.reader().read_to_string(&mut text).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let content = &v["messages"][0]["content"];
    assert_eq!(
        content[0]["content"],
        serde_json::json!([
            {"type": "text", "text": "shot.png"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "AAAA"}, "title": "spec.pdf"}
        ])
    );
    assert_eq!(content[1]["source"]["media_type"], "image/webp");
}
