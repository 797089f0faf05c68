//! The images part of `Config`: the files `--image` attaches to the task, read and
//! prepared once (a bad one is exit 2 naming the flag, before any request), how the
//! transcript keeps images (`--transcript-images`), and whether the model takes them
//! (`--no-images`). Read by the loop (`run::agent`).

use std::path::Path;

use crate::config::cli::{ImageArgs, TranscriptImages};
use crate::error::Error;
use crate::model::media;
use crate::model::protocol::{ContentBlock, MediaSource};

/// `--image`, `--transcript-images`, `--no-images`, validated.
#[derive(Debug, Clone, Default)]
pub(crate) struct ImagesConfig {
    /// The attached files as blocks, in the order given.
    pub(super) attached: Vec<ContentBlock>,
    pub(super) inline: bool,
    pub(super) refused: bool,
}

impl ImagesConfig {
    /// Reads every `--image` (relative to the current directory, as a shell user means).
    pub(super) fn from_args(args: &ImageArgs) -> Result<Self, Error> {
        if args.no_images && !args.images.is_empty() {
            return Err(Error::Usage(
                "--image cannot be used with --no-images: the model would not get it".into(),
            ));
        }
        let inline = args.transcript_images == TranscriptImages::Inline;
        let mut attached = Vec::with_capacity(args.images.len());
        for path in &args.images {
            let block = load(path).map_err(|e| Error::Usage(format!("--image {e}")))?;
            attached.push(if inline { without_origin(block) } else { block });
        }
        Ok(ImagesConfig {
            attached,
            inline,
            refused: args.no_images,
        })
    }

    /// The attached images and PDFs, for the first user message.
    pub(crate) fn attached(&self) -> &[ContentBlock] {
        &self.attached
    }

    /// `--transcript-images inline`: the transcript keeps the bytes.
    pub(crate) fn inline(&self) -> bool {
        self.inline
    }

    /// `--no-images`: the model takes none.
    pub(crate) fn refused(&self) -> bool {
        self.refused
    }
}

/// The file, named in the transcript by its absolute path (a resumed run may start
/// elsewhere).
fn load(path: &Path) -> Result<ContentBlock, String> {
    let shown = path.display().to_string();
    let abs = std::path::absolute(path).map_err(|e| format!("{shown}: {e}"))?;
    let bytes = media::read_capped(&abs, &shown).map_err(|e| e.0)?;
    let block = media::prepare(&bytes, Some(&shown)).map_err(|e| e.0)?;
    Ok(with_path(block, &abs.display().to_string()))
}

fn with_path(mut block: ContentBlock, path: &str) -> ContentBlock {
    if let ContentBlock::Image { source } | ContentBlock::Document { source, .. } = &mut block
        && let MediaSource::Base64 {
            origin: Some(r), ..
        } = source
    {
        r.path = path.to_string();
    }
    block
}

/// The block with no file named: the transcript then keeps its bytes.
pub(crate) fn without_origin(mut block: ContentBlock) -> ContentBlock {
    if let ContentBlock::Image { source } | ContentBlock::Document { source, .. } = &mut block
        && let MediaSource::Base64 { origin, .. } = source
    {
        *origin = None;
    }
    block
}
