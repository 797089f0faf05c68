//! Unit tests of `files.rs`: the file tools against a fake client that holds buffers
//! different from the disk: reads see the buffer, writes reach the client and leave the
//! disk alone, a client's refusal is the tool's error, confinement is the disk's, and a
//! client offering only reads still writes on disk.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::json;

use super::*;
use crate::tools::apply_patch::ApplyPatch;
use crate::tools::edit_file::EditFile;
use crate::tools::paths::test_util::*;
use crate::tools::read_file::ReadFile;
use crate::tools::test_support::{call, call_err, put};
use crate::tools::write_file::WriteFile;
use crate::util::sync::Locked;

/// An editor: buffers by absolute path (a file without one is read from disk, as an
/// editor opens it), every request logged, refusals on demand.
#[derive(Default)]
struct Editor {
    buffers: Mutex<HashMap<PathBuf, String>>,
    log: Mutex<Vec<String>>,
    refuse: Option<String>,
}

impl ClientFs for Editor {
    fn read_text(&self, path: &Path) -> Result<String, String> {
        self.log.locked().push(format!("read {}", path.display()));
        if let Some(m) = &self.refuse {
            return Err(m.clone());
        }
        match self.buffers.locked().get(path) {
            Some(b) => Ok(b.clone()),
            None => std::fs::read_to_string(path).map_err(|e| e.to_string()),
        }
    }

    fn write_text(&self, path: &Path, content: &str) -> Result<(), String> {
        self.log.locked().push(format!("write {}", path.display()));
        if let Some(m) = &self.refuse {
            return Err(m.clone());
        }
        self.buffers
            .locked()
            .insert(path.to_path_buf(), content.to_string());
        Ok(())
    }
}

fn with_editor(ctx: &mut ToolContext, editor: Arc<Editor>, read: bool, write: bool) {
    ctx.files = FileAccess::Client {
        fs: editor,
        read,
        write,
    };
}

fn buffer(editor: &Editor, ctx: &ToolContext, name: &str) -> Option<String> {
    editor
        .buffers
        .locked()
        .get(&ctx.workspace.join(name))
        .cloned()
}

#[test]
fn readfile_shows_the_buffer_not_the_disk_numbered_and_windowed_alike() {
    let (_d, mut ctx) = setup();
    put(&ctx.workspace, "a.rs", "on disk\n");
    let editor = Arc::new(Editor::default());
    editor.buffers.locked().insert(
        ctx.workspace.join("a.rs"),
        "unsaved one\nunsaved two\nunsaved three\n".into(),
    );
    with_editor(&mut ctx, editor.clone(), true, true);
    let r = call(
        &ReadFile,
        &ctx,
        &json!({"path": "a.rs", "offset": 2, "limit": 1}),
    )
    .unwrap();
    assert!(r.content.starts_with("2\tunsaved two"), "{}", r.content);
    assert!(r.content.contains("offset=3"), "{}", r.content);
    assert_eq!(r.metadata["source"], "client");
    assert_eq!(r.metadata["total_lines"], 3);
    assert_eq!(
        *editor.log.locked(),
        [format!("read {}", ctx.workspace.join("a.rs").display())]
    );
}

#[test]
fn a_path_the_disk_rules_refuse_never_reaches_the_client() {
    let (_d, mut ctx) = setup();
    let editor = Arc::new(Editor::default());
    with_editor(&mut ctx, editor.clone(), true, true);
    let outside = outside(&ctx).join("secret.txt");
    std::fs::write(&outside, "secret").unwrap();
    let e = call_err(&ReadFile, &ctx, &json!({"path": outside}));
    assert!(e.contains("outside"), "{e}");
    let e = call_err(
        &WriteFile,
        &ctx,
        &json!({"path": "../x.txt", "content": "x"}),
    );
    assert!(e.contains("outside"), "{e}");
    // A file the disk does not have is not read from the client either.
    let e = call_err(&ReadFile, &ctx, &json!({"path": "missing.txt"}));
    assert!(
        e.contains("not found") || e.contains("does not exist"),
        "{e}"
    );
    assert!(editor.log.locked().is_empty(), "{:?}", editor.log.locked());
}

#[test]
fn writefile_goes_to_the_client_and_not_to_disk() {
    let (_d, mut ctx) = setup();
    put(&ctx.workspace, "old.txt", "disk\n");
    let editor = Arc::new(Editor::default());
    with_editor(&mut ctx, editor.clone(), true, true);
    let before = snapshot(&ctx.workspace);
    let r = call(
        &WriteFile,
        &ctx,
        &json!({"path": "new/dir/n.txt", "content": "fresh\n"}),
    )
    .unwrap();
    assert_eq!(r.changes[0].change, ChangeKind::Created);
    let r = call(
        &WriteFile,
        &ctx,
        &json!({"path": "old.txt", "content": "x\n"}),
    )
    .unwrap();
    assert_eq!(r.changes[0].change, ChangeKind::Modified);
    assert_eq!(snapshot(&ctx.workspace), before, "the disk did not change");
    assert_eq!(
        buffer(&editor, &ctx, "new/dir/n.txt").as_deref(),
        Some("fresh\n")
    );
    assert_eq!(buffer(&editor, &ctx, "old.txt").as_deref(), Some("x\n"));
}

#[test]
fn editfile_edits_the_buffer_and_writes_it_back_to_the_client() {
    let (_d, mut ctx) = setup();
    put(&ctx.workspace, "a.txt", "alpha on disk\n");
    let editor = Arc::new(Editor::default());
    editor
        .buffers
        .locked()
        .insert(ctx.workspace.join("a.txt"), "alpha unsaved\n".into());
    with_editor(&mut ctx, editor.clone(), true, true);
    let r = call(
        &EditFile,
        &ctx,
        &json!({"path": "a.txt", "old_string": "unsaved", "new_string": "edited"}),
    )
    .unwrap();
    assert!(r.content.contains("alpha edited"), "{}", r.content);
    assert_eq!(
        buffer(&editor, &ctx, "a.txt").as_deref(),
        Some("alpha edited\n")
    );
    assert_eq!(
        std::fs::read_to_string(ctx.workspace.join("a.txt")).unwrap(),
        "alpha on disk\n"
    );
    // What is only on disk is not found in the buffer: the edit fails, nothing written.
    let e = call_err(
        &EditFile,
        &ctx,
        &json!({"path": "a.txt", "old_string": "on disk", "new_string": "x"}),
    );
    assert!(e.contains("not found"), "{e}");
}

#[test]
fn the_clients_refusal_is_the_tools_error_and_nothing_is_written() {
    let (_d, mut ctx) = setup();
    put(&ctx.workspace, "a.txt", "alpha\n");
    let editor = Arc::new(Editor {
        refuse: Some("buffer is read-only (JSON-RPC error -32603)".into()),
        ..Editor::default()
    });
    with_editor(&mut ctx, editor, true, true);
    let e = call_err(&ReadFile, &ctx, &json!({"path": "a.txt"}));
    assert!(e.contains("buffer is read-only"), "{e}");
    assert!(e.contains("a.txt"), "{e}");
    let e = call_err(&WriteFile, &ctx, &json!({"path": "b.txt", "content": "b"}));
    assert!(e.contains("did not write b.txt"), "{e}");
    assert!(!ctx.workspace.join("b.txt").exists());
}

#[test]
fn a_client_that_only_reads_leaves_writes_on_disk() {
    let (_d, mut ctx) = setup();
    put(&ctx.workspace, "a.txt", "alpha disk\n");
    let editor = Arc::new(Editor::default());
    editor
        .buffers
        .locked()
        .insert(ctx.workspace.join("a.txt"), "alpha buffer\n".into());
    with_editor(&mut ctx, editor.clone(), true, false);
    call(
        &EditFile,
        &ctx,
        &json!({"path": "a.txt", "old_string": "buffer", "new_string": "saved"}),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(ctx.workspace.join("a.txt")).unwrap(),
        "alpha saved\n"
    );
    assert_eq!(editor.log.locked().len(), 1, "one read, no write");
}

#[test]
fn apply_patch_reads_and_writes_through_the_client_and_deletes_on_disk() {
    let (_d, mut ctx) = setup();
    put(&ctx.workspace, "a.txt", "one\ntwo\n");
    put(&ctx.workspace, "gone.txt", "bye\n");
    let editor = Arc::new(Editor::default());
    editor
        .buffers
        .locked()
        .insert(ctx.workspace.join("a.txt"), "one\nTWO unsaved\n".into());
    with_editor(&mut ctx, editor.clone(), true, true);
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-TWO unsaved\n+two edited\n*** Delete File: gone.txt\n*** End Patch\n";
    call(&ApplyPatch, &ctx, &json!({"input": patch})).unwrap();
    assert_eq!(
        buffer(&editor, &ctx, "a.txt").as_deref(),
        Some("one\ntwo edited\n")
    );
    assert_eq!(
        std::fs::read_to_string(ctx.workspace.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert!(!ctx.workspace.join("gone.txt").exists());
}

#[test]
fn images_are_read_from_disk_even_when_the_client_reads() {
    let (_d, mut ctx) = setup();
    // A 1×1 PNG.
    let png = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
    )
    .unwrap();
    put(&ctx.workspace, "p.png", &png);
    let editor = Arc::new(Editor::default());
    with_editor(&mut ctx, editor.clone(), true, true);
    let r = call(&ReadFile, &ctx, &json!({"path": "p.png"})).unwrap();
    assert_eq!(r.media.len(), 1);
    assert!(editor.log.locked().is_empty());
}
