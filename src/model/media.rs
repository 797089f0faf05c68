//! Images and PDFs for the model: the type from the magic bytes (never the name), the
//! dimensions from the header before anything is decoded, the limits every API takes, and
//! downscaling what is over them. The result is a ready `ContentBlock` (`Image` or
//! `Document`) whose source remembers the file it came from, so the transcript can name the
//! file instead of holding its bytes.
//!
//! One set of limits serves every provider: the strictest of the APIs' documented ones
//! (docs/guide/images.md has the table), so a history is valid on any wire and a transcript
//! resumed on another provider needs no re-encoding.

use std::io::{Cursor, Read};
use std::path::Path;

use base64::Engine as _;
use image::{AnimationDecoder, ImageFormat, ImageReader, Limits};

use super::protocol::{ContentBlock, MediaRef, MediaSource, Message, SentMedia};

/// Longest side sent, in pixels: Anthropic's limit when a request holds more than 20
/// images (8,000 otherwise), and about what OpenAI's high detail scales to (2,048).
pub(crate) const MAX_SIDE_PX: u32 = 2_000;
/// Bytes of one image sent: Anthropic's 5 MB applies to the base64 text, which is 4/3 of
/// the bytes.
pub(crate) const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024 / 4 * 3;
/// Pixels decoded at most (100 MB as RGBA): checked from the header before decoding, so a
/// decompression bomb or a 50-megapixel photo is refused without allocating its pixels.
pub(crate) const MAX_DECODE_PIXELS: u64 = 25_000_000;
/// Bytes of a PDF: Anthropic's request limit is 32 MB, and base64 adds a third.
pub(crate) const MAX_PDF_BYTES: usize = 20 * 1024 * 1024;
/// Pages of a PDF: Anthropic's limit per request.
pub(crate) const MAX_PDF_PAGES: usize = 100;
/// Bytes read from a file at most: above the PDF limit, so that "too large" names it.
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// JPEG quality of a downscaled photo: small, and no visible loss for a screenshot.
const JPEG_QUALITY: u8 = 85;

/// What the magic bytes say a file is, among what the APIs take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Png,
    Jpeg,
    Gif,
    WebP,
    Pdf,
}

impl Kind {
    pub(crate) fn media_type(self) -> &'static str {
        match self {
            Kind::Png => "image/png",
            Kind::Jpeg => "image/jpeg",
            Kind::Gif => "image/gif",
            Kind::WebP => "image/webp",
            Kind::Pdf => "application/pdf",
        }
    }

    fn format(self) -> Option<ImageFormat> {
        match self {
            Kind::Png => Some(ImageFormat::Png),
            Kind::Jpeg => Some(ImageFormat::Jpeg),
            Kind::Gif => Some(ImageFormat::Gif),
            Kind::WebP => Some(ImageFormat::WebP),
            Kind::Pdf => None,
        }
    }
}

/// The type of `bytes` from its first bytes; `None` for anything else (text included).
pub(crate) fn sniff(bytes: &[u8]) -> Option<Kind> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(Kind::Png)
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        Some(Kind::Jpeg)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some(Kind::Gif)
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some(Kind::WebP)
    } else if bytes.starts_with(b"%PDF-") {
        Some(Kind::Pdf)
    } else {
        None
    }
}

/// Why a file cannot be sent; the message names the file's problem or the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MediaError(pub String);

impl std::fmt::Display for MediaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err(msg: impl Into<String>) -> MediaError {
    MediaError(msg.into())
}

/// A message read back from a transcript, each image or PDF it names by reference read
/// again: the same bytes (checked by SHA-256) make the same block, so the resumed run
/// sends what the first one did.
pub(crate) fn reload(message: &mut Message) -> Result<(), MediaError> {
    for block in &mut message.content {
        match block {
            ContentBlock::ToolResult { content, .. } => {
                for m in &mut content.media {
                    reload_block(m)?;
                }
            }
            other => reload_block(other)?,
        }
    }
    Ok(())
}

fn reload_block(block: &mut ContentBlock) -> Result<(), MediaError> {
    let (ContentBlock::Image { source } | ContentBlock::Document { source, .. }) = block else {
        return Ok(());
    };
    let MediaSource::Reference(r) = source else {
        return Ok(());
    };
    let what = if r.width == 0 { "PDF" } else { "image" };
    let bytes = std::fs::read(&r.path).map_err(|e| {
        err(format!(
            "the {what} {} the transcript names is gone ({e}); put it back, or resume a \
             transcript written with --transcript-images inline",
            r.path
        ))
    })?;
    let now = sha256_hex(&bytes);
    if now != r.sha256 {
        return Err(err(format!(
            "the {what} {} changed since the run (SHA-256 {} then, {now} now); restore it, \
             or resume a transcript written with --transcript-images inline",
            r.path, r.sha256
        )));
    }
    *block = prepare(&bytes, Some(&r.path))?;
    Ok(())
}

/// The file's bytes, refused when over `MAX_FILE_BYTES` (without reading them all).
pub(crate) fn read_capped(path: &Path, shown: &str) -> Result<Vec<u8>, MediaError> {
    let file =
        std::fs::File::open(path).map_err(|e| err(format!("{shown}: cannot read it: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(format!("{shown}: cannot read it: {e}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(err(format!(
            "{shown} is larger than {} MB, more than any API takes",
            MAX_FILE_BYTES / 1024 / 1024
        )));
    }
    Ok(bytes)
}

/// The block for `bytes`: an image within the limits (downscaled when over them), or a
/// PDF within them. `path`: the file they came from, which the transcript will name.
pub(crate) fn prepare(bytes: &[u8], path: Option<&str>) -> Result<ContentBlock, MediaError> {
    let name = path.unwrap_or("the data");
    if bytes.is_empty() {
        return Err(err(format!("{name} is empty (0 bytes)")));
    }
    let kind = sniff(bytes).ok_or_else(|| {
        err(format!(
            "{name} is not a PNG, JPEG, GIF, WebP or PDF file (by its content, whatever its name)"
        ))
    })?;
    let origin = |width: u32, height: u32, sent: Option<SentMedia>| {
        path.map(|p| MediaRef {
            path: p.to_string(),
            sha256: sha256_hex(bytes),
            media_type: kind.media_type().to_string(),
            bytes: bytes.len() as u64,
            width,
            height,
            sent,
        })
    };
    if kind == Kind::Pdf {
        check_pdf(bytes, name)?;
        // The file's name, for the model and for OpenAI's required `filename`.
        let title = path
            .and_then(|p| p.rsplit(['/', '\\']).next())
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        return Ok(ContentBlock::Document {
            source: base64_source(kind.media_type(), bytes, origin(0, 0, None)),
            title,
        });
    }
    let image = fit(bytes, kind, name)?;
    let sent = image.resized.as_ref().map(|r| SentMedia {
        media_type: r.kind.media_type().to_string(),
        bytes: r.bytes.len() as u64,
        width: r.width,
        height: r.height,
    });
    let source = match &image.resized {
        Some(r) => base64_source(
            r.kind.media_type(),
            &r.bytes,
            origin(image.width, image.height, sent),
        ),
        None => base64_source(
            kind.media_type(),
            bytes,
            origin(image.width, image.height, None),
        ),
    };
    Ok(ContentBlock::Image { source })
}

fn base64_source(media_type: &str, bytes: &[u8], origin: Option<MediaRef>) -> MediaSource {
    MediaSource::Base64 {
        media_type: media_type.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
        origin,
    }
}

/// SHA-256 of `bytes` as `sha256sum` prints it.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn check_pdf(bytes: &[u8], name: &str) -> Result<(), MediaError> {
    if bytes.len() > MAX_PDF_BYTES {
        return Err(err(format!(
            "{name} is {} bytes, over the {} MB limit for a PDF",
            bytes.len(),
            MAX_PDF_BYTES / 1024 / 1024
        )));
    }
    if !bytes[bytes.len().saturating_sub(1024)..]
        .windows(5)
        .any(|w| w == b"%%EOF")
    {
        return Err(err(format!(
            "{name} is a truncated PDF (no %%EOF marker at its end)"
        )));
    }
    let pages = pdf_pages(bytes);
    if pages > MAX_PDF_PAGES {
        return Err(err(format!(
            "{name} has {pages} pages, over the {MAX_PDF_PAGES}-page limit for a PDF"
        )));
    }
    Ok(())
}

/// Page objects (`/Type /Page`, not `/Pages`) in the file's uncompressed text: a lower
/// bound when object streams hide some, enough to refuse the obvious case early.
fn pdf_pages(bytes: &[u8]) -> usize {
    let mut n = 0;
    for (i, _) in bytes.windows(5).enumerate().filter(|(_, w)| w == b"/Type") {
        let rest = &bytes[i + 5..];
        let rest = &rest[rest
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(rest.len())..];
        if rest.starts_with(b"/Page") && !rest[5..].starts_with(b"s") {
            n += 1;
        }
    }
    n
}

/// An image as sent: its size on file, and the re-encoded one when it had to change.
struct Fitted {
    width: u32,
    height: u32,
    resized: Option<Resized>,
}

struct Resized {
    kind: Kind,
    bytes: Vec<u8>,
    width: u32,
    height: u32,
}

/// Checks the image decodes (a truncated file is refused here, not by the API) and
/// downscales it when it is over a limit or an animation (OpenAI takes none; its first
/// frame is sent).
fn fit(bytes: &[u8], kind: Kind, name: &str) -> Result<Fitted, MediaError> {
    let format = kind.format().ok_or_else(|| err("not an image"))?;
    let reader = || {
        let mut r = ImageReader::with_format(Cursor::new(bytes), format);
        r.limits(decode_limits());
        r
    };
    let (width, height) = reader()
        .into_dimensions()
        .map_err(|e| err(format!("{name} is not a readable {format:?} image: {e}")))?;
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_DECODE_PIXELS {
        return Err(err(format!(
            "{name} is {width}×{height} pixels ({} megapixels), over the {} megapixels agent \
             decodes to downscale; make it smaller first (e.g. `convert {name} -resize {MAX_SIDE_PX}x{MAX_SIDE_PX} small.png`)",
            pixels / 1_000_000,
            MAX_DECODE_PIXELS / 1_000_000
        )));
    }
    let animated = kind == Kind::Gif && gif_frames(bytes) > 1;
    let decoded = reader()
        .decode()
        .map_err(|e| err(format!("{name} is not a readable {format:?} image: {e}")))?;
    let over_side = width.max(height) > MAX_SIDE_PX;
    if !over_side && !animated && bytes.len() <= MAX_IMAGE_BYTES {
        return Ok(Fitted {
            width,
            height,
            resized: None,
        });
    }
    let mut side = width.max(height).min(MAX_SIDE_PX);
    // Each try shrinks the long side by a quarter until the encoding fits in bytes.
    for _ in 0..8 {
        let small = if width.max(height) > side {
            decoded.resize(side, side, image::imageops::FilterType::Triangle)
        } else {
            decoded.clone()
        };
        let out_kind = if kind == Kind::Jpeg {
            Kind::Jpeg
        } else {
            Kind::Png
        };
        let mut out = Vec::new();
        let encoded = match out_kind {
            Kind::Jpeg => small.to_rgb8().write_with_encoder(
                image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY),
            ),
            _ => small.write_with_encoder(image::codecs::png::PngEncoder::new(&mut out)),
        };
        encoded.map_err(|e| err(format!("cannot downscale {name}: {e}")))?;
        if out.len() <= MAX_IMAGE_BYTES {
            return Ok(Fitted {
                width,
                height,
                resized: Some(Resized {
                    kind: out_kind,
                    bytes: out,
                    width: small.width(),
                    height: small.height(),
                }),
            });
        }
        side = side / 4 * 3;
    }
    Err(err(format!(
        "{name} does not fit in {} MB even downscaled",
        MAX_IMAGE_BYTES / 1024 / 1024
    )))
}

/// What the decoder may allocate: the pixel cap as RGBA, and a bit for its tables.
fn decode_limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODE_PIXELS * 4 + 16 * 1024 * 1024);
    limits
}

/// Frames of a GIF, counted up to 2 (1: a still image).
fn gif_frames(bytes: &[u8]) -> usize {
    image::codecs::gif::GifDecoder::new(Cursor::new(bytes))
        .map(|d| d.into_frames().take(2).filter(Result::is_ok).count())
        .unwrap_or(1)
}

#[cfg(test)]
#[path = "media_tests.rs"]
mod tests;
