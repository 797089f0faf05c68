use base64::Engine as _;
use serde_json::json;

use super::*;

fn png() -> String {
    let img = image::RgbImage::from_pixel(4, 3, image::Rgb([1, 2, 3]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    base64::engine::general_purpose::STANDARD.encode(out.into_inner())
}

#[test]
fn image_content_and_image_resources_become_blocks_and_the_rest_stays() {
    let mut r = json!({"content": [
        {"type": "text", "text": "here"},
        {"type": "image", "data": png(), "mimeType": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///a.png", "mimeType": "image/png", "blob": png()}},
        {"type": "image", "data": "bm90IGFuIGltYWdl", "mimeType": "image/png"},
        {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
    ], "structuredContent": {"w": 4}});
    let taken = take_from_result(&mut r);
    assert_eq!(taken.blocks.len(), 2);
    assert!(
        taken
            .blocks
            .iter()
            .all(|b| matches!(b, ContentBlock::Image { .. }))
    );
    let (text, _) = crate::mcp::content::to_text(&r);
    let text = taken.annotate(text);
    assert!(
        text.starts_with("here\n[audio omitted: audio/wav"),
        "{text}"
    );
    assert!(
        text.contains("[the image (image/png) is attached]"),
        "{text}"
    );
    assert!(
        text.contains("[the resource file:///a.png (image/png) is attached]"),
        "{text}"
    );
    assert!(
        text.contains("[the image (image/png) not sent: the image is not a PNG"),
        "{text}"
    );
}

#[test]
fn an_answer_of_images_alone_keeps_its_structured_content() {
    let mut r = json!({"content": [{"type": "image", "data": png(), "mimeType": "image/png"}],
                       "structuredContent": {"w": 4}});
    let taken = take_from_result(&mut r);
    let (text, _) = crate::mcp::content::to_text(&r);
    assert_eq!(
        taken.annotate(text),
        "{\"w\":4}\n[the image (image/png) is attached]"
    );
    let mut r = json!({"content": [{"type": "image", "data": png(), "mimeType": "image/png"}]});
    let taken = take_from_result(&mut r);
    let (text, _) = crate::mcp::content::to_text(&r);
    assert_eq!(taken.annotate(text), "[the image (image/png) is attached]");
}

#[test]
fn a_read_resource_blob_with_an_image_type_becomes_a_block() {
    let mut r = json!({"contents": [
        {"uri": "mem://shot", "mimeType": "image/png", "blob": png()},
        {"uri": "mem://data", "mimeType": "application/octet-stream", "blob": "AAAA"},
    ]});
    let blocks = take_from_contents(&mut r);
    assert_eq!(blocks.len(), 1);
    let text = crate::mcp::content::resource_contents(&r);
    assert!(
        text.contains("[the resource mem://shot (image/png) is attached]"),
        "{text}"
    );
    assert!(text.contains("[resource omitted: mem://data"), "{text}");
}
