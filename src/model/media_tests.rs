use std::io::Cursor;

use image::{DynamicImage, ImageFormat, RgbImage};

use super::*;

/// A real file of `format`, `w`×`h`, with noise so that it does not compress to nothing.
pub(crate) fn picture(format: ImageFormat, w: u32, h: u32) -> Vec<u8> {
    let img = RgbImage::from_fn(w, h, |x, y| {
        let v = (x.wrapping_mul(7919) ^ y.wrapping_mul(104_729)) as u8;
        image::Rgb([v, v.wrapping_add(85), (x + y) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(img)
        .write_to(&mut out, format)
        .unwrap();
    out.into_inner()
}

/// A smooth picture: compresses well, so only its side is over a limit.
fn gradient(w: u32, h: u32) -> Vec<u8> {
    let img = RgbImage::from_fn(w, h, |x, _| image::Rgb([(x / 16) as u8, 0, 0]));
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(img)
        .write_to(&mut out, ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

fn source(block: &ContentBlock) -> (&str, &str, Option<&MediaRef>) {
    match block {
        ContentBlock::Image {
            source:
                MediaSource::Base64 {
                    media_type,
                    data,
                    origin,
                },
        }
        | ContentBlock::Document {
            title: _,
            source:
                MediaSource::Base64 {
                    media_type,
                    data,
                    origin,
                },
        } => (media_type, data, origin.as_ref()),
        other => panic!("not media: {other:?}"),
    }
}

#[test]
fn the_type_comes_from_the_bytes() {
    for (format, kind) in [
        (ImageFormat::Png, Kind::Png),
        (ImageFormat::Jpeg, Kind::Jpeg),
        (ImageFormat::Gif, Kind::Gif),
        (ImageFormat::WebP, Kind::WebP),
    ] {
        let bytes = picture(format, 8, 4);
        assert_eq!(sniff(&bytes), Some(kind));
        let block = prepare(&bytes, Some("shot.jpg")).unwrap();
        let (media_type, _, origin) = source(&block);
        assert_eq!(media_type, kind.media_type(), "named .jpg, but {format:?}");
        let origin = origin.unwrap();
        assert_eq!((origin.width, origin.height), (8, 4));
        assert_eq!(origin.sha256, sha256_hex(&bytes));
        assert_eq!(origin.sent, None);
    }
    assert_eq!(sniff(b"just text, named .png"), None);
    let e = prepare(b"just text, named .png", Some("a.png")).unwrap_err();
    assert!(e.0.contains("not a PNG, JPEG, GIF, WebP or PDF"), "{e}");
}

#[test]
fn empty_and_truncated_files_are_refused_by_name() {
    let e = prepare(b"", Some("zero.png")).unwrap_err();
    assert!(e.0.contains("zero.png is empty"), "{e}");
    let png = picture(ImageFormat::Png, 64, 64);
    let e = prepare(&png[..png.len() / 2], Some("cut.png")).unwrap_err();
    assert!(e.0.contains("cut.png is not a readable Png image"), "{e}");
}

#[test]
fn an_image_over_the_side_limit_is_downscaled_and_keeps_its_aspect() {
    let png = gradient(3000, 1500);
    let block = prepare(&png, Some("wide.png")).unwrap();
    let (media_type, data, origin) = source(&block);
    let origin = origin.unwrap();
    let sent = origin.sent.as_ref().unwrap();
    assert_eq!((origin.width, origin.height), (3000, 1500));
    assert_eq!((sent.width, sent.height), (2000, 1000));
    assert_eq!(media_type, "image/png");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    assert!(bytes.len() <= MAX_IMAGE_BYTES);
    let back = image::load_from_memory(&bytes).unwrap();
    assert_eq!((back.width(), back.height()), (2000, 1000));
}

#[test]
fn an_image_over_the_byte_limit_is_reencoded_smaller() {
    // 1900×1900 of noise as PNG is well over 3.75 MB; as JPEG it stays JPEG.
    let png = picture(ImageFormat::Png, 1900, 1900);
    assert!(png.len() > MAX_IMAGE_BYTES, "{}", png.len());
    let block = prepare(&png, Some("noise.png")).unwrap();
    let (_, data, origin) = source(&block);
    assert!(data.len() <= 5 * 1024 * 1024);
    assert!(origin.unwrap().sent.is_some());
}

#[test]
fn an_animated_gif_is_sent_as_its_first_frame() {
    use image::codecs::gif::GifEncoder;
    let mut out = Vec::new();
    {
        let mut enc = GifEncoder::new(&mut out);
        for shade in [0u8, 255] {
            let frame = image::RgbaImage::from_pixel(10, 10, image::Rgba([shade, 0, 0, 255]));
            enc.encode_frame(image::Frame::new(frame)).unwrap();
        }
    }
    assert_eq!(gif_frames(&out), 2);
    let block = prepare(&out, Some("anim.gif")).unwrap();
    let (media_type, _, origin) = source(&block);
    assert_eq!(media_type, "image/png");
    assert_eq!(origin.unwrap().media_type, "image/gif");
    let still = picture(ImageFormat::Gif, 10, 10);
    assert_eq!(gif_frames(&still), 1);
}

/// A PNG whose header claims `w`×`h` with one tiny compressed IDAT: what a decompression
/// bomb looks like before decoding.
fn bomb(w: u32, h: u32) -> Vec<u8> {
    fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.finalize().to_be_bytes());
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(
        &mut out,
        b"IDAT",
        &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    );
    chunk(&mut out, b"IEND", &[]);
    out
}

#[test]
fn a_decompression_bomb_and_a_50_megapixel_image_are_refused_before_decoding() {
    let e = prepare(&bomb(100_000, 100_000), Some("bomb.png")).unwrap_err();
    assert!(e.0.contains("100000×100000 pixels"), "{e}");
    assert!(e.0.contains("over the 25 megapixels"), "{e}");
    let e = prepare(&bomb(8660, 5774), Some("photo.png")).unwrap_err();
    assert!(e.0.contains("(50 megapixels)"), "{e}");
}

#[test]
fn pdfs_pass_with_their_pages_counted_and_truncated_ones_are_refused() {
    let pdf = minimal_pdf(2);
    assert_eq!(pdf_pages(&pdf), 2);
    let block = prepare(&pdf, Some("spec.pdf")).unwrap();
    assert!(matches!(block, ContentBlock::Document { .. }));
    let (media_type, _, _) = source(&block);
    assert_eq!(media_type, "application/pdf");
    let e = prepare(&pdf[..pdf.len() - 10], Some("cut.pdf")).unwrap_err();
    assert!(e.0.contains("truncated PDF"), "{e}");
    let e = prepare(&minimal_pdf(MAX_PDF_PAGES + 1), Some("long.pdf")).unwrap_err();
    assert!(e.0.contains("101 pages, over the 100-page limit"), "{e}");
}

/// A valid PDF of `pages` blank pages (what `ci/interop/images_sdk.py` sends too).
pub(crate) fn minimal_pdf(pages: usize) -> Vec<u8> {
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            (0..pages)
                .map(|i| format!("{} 0 R", i + 3))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    ];
    for _ in 0..pages {
        objects.push("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>".into());
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

#[test]
fn a_referenced_file_is_read_again_and_a_changed_or_gone_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shot.png");
    let png = picture(ImageFormat::Png, 6, 5);
    std::fs::write(&path, &png).unwrap();
    let shown = path.display().to_string();
    let sent = prepare(&png, Some(&shown)).unwrap();
    let (_, _, origin) = source(&sent);
    let reference = ContentBlock::Image {
        source: MediaSource::Reference(origin.unwrap().clone()),
    };
    let message = |b: ContentBlock| Message {
        role: crate::model::protocol::Role::User,
        content: vec![b],
    };
    let mut m = message(reference.clone());
    reload(&mut m).unwrap();
    assert_eq!(m.content[0], sent, "the same bytes, the same block");

    std::fs::write(&path, picture(ImageFormat::Png, 6, 6)).unwrap();
    let e = reload(&mut message(reference.clone())).unwrap_err();
    assert!(
        e.0.contains(&format!("the image {shown} changed since the run")),
        "{e}"
    );
    std::fs::remove_file(&path).unwrap();
    let e = reload(&mut message(reference)).unwrap_err();
    assert!(
        e.0.contains(&format!("the image {shown} the transcript names is gone")),
        "{e}"
    );
}
