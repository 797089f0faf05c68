use super::*;
use crate::model::protocol::{MediaRef, MediaSource, Role};

fn image(origin: bool) -> ContentBlock {
    ContentBlock::Image {
        source: MediaSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
            origin: origin.then(|| MediaRef {
                path: "/w/shot.png".into(),
                sha256: "ab".into(),
                media_type: "image/png".into(),
                bytes: 8,
                width: 1,
                height: 1,
                sent: None,
            }),
        },
    }
}

fn read_result() -> ToolResult {
    ToolResult {
        media: vec![image(true)],
        ..ToolResult::ok("shot.png: image/png image, 1×1 pixels, 8 bytes, attached.")
    }
}

#[test]
fn a_result_keeps_its_images_and_names_the_file_unless_inline() {
    let (c, is_error) = result_content(&read_result(), false, false);
    assert!(!is_error);
    assert_eq!(c.media, vec![image(true)]);
    let (c, _) = result_content(&read_result(), true, false);
    assert_eq!(
        c.media,
        vec![image(false)],
        "inline: no file named, the bytes stay"
    );
}

#[test]
fn for_a_model_that_takes_no_images_the_result_is_an_error_it_can_act_on() {
    let (c, is_error) = result_content(&read_result(), false, true);
    assert!(is_error);
    assert!(c.media.is_empty());
    assert!(
        c.text
            .contains("was not sent: the model takes no images (--no-images)"),
        "{}",
        c.text
    );
}

#[test]
fn a_refusal_is_a_4xx_that_names_images() {
    let http = |status, message: &str| ProviderError {
        kind: ProviderErrorKind::Http {
            status,
            error_type: "invalid_request_error".into(),
        },
        message: message.into(),
    };
    assert!(refuses_images(&http(
        400,
        "image input is not supported - hint: mmproj"
    )));
    assert!(refuses_images(&http(
        400,
        "Invalid content type. image_url is only supported by certain models."
    )));
    assert!(refuses_images(&http(400, "Qwen is not a multimodal model")));
    assert!(!refuses_images(&http(400, "max_tokens: too large")));
    assert!(!refuses_images(&http(429, "image quota")));
    assert!(!refuses_images(&http(500, "image decoder crashed")));
}

#[test]
fn taking_media_out_turns_results_into_errors_and_attachments_into_notes() {
    let m = Message {
        role: Role::User,
        content: vec![
            image(true),
            ContentBlock::Text {
                text: "what is wrong?".into(),
            },
            ContentBlock::ToolResult {
                tool_use_id: "t1".into(),
                content: ToolContent {
                    text: "shot.png".into(),
                    media: vec![image(true)],
                },
                is_error: false,
            },
        ],
    };
    let out = without_media(&m, "no vision").unwrap();
    let ContentBlock::Text { text } = &out.content[0] else {
        panic!()
    };
    assert!(text.contains("the server refused it (no vision)"));
    let ContentBlock::ToolResult {
        content, is_error, ..
    } = &out.content[2]
    else {
        panic!()
    };
    assert!(is_error);
    assert!(content.media.is_empty());
    assert!(without_media(&Message::user_text("plain"), "x").is_none());
}
