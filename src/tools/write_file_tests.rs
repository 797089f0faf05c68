//! Unit tests of the WriteFile tool.

use std::os::unix::fs::{PermissionsExt, symlink};

use super::*;

use crate::tools::Category;
use crate::tools::paths::test_util::*;
use crate::tools::test_support::call;

fn run(ctx: &ToolContext, input: Value) -> Result<ToolResult, ToolError> {
    call(&WriteFile, ctx, &input)
}

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn schema_agrees_with_input_struct() {
    assert_schema_agrees::<Input>(
        &WriteFile.input_schema(),
        &json!({"path": "a.txt", "content": "x"}),
    );
}

#[test]
fn tool_properties() {
    assert!(!WriteFile.is_read_only());
    assert!(!WriteFile.is_destructive());
    assert!(!WriteFile.is_concurrency_safe());
    assert_eq!(WriteFile.category(), Category::File);
}

#[test]
fn creates_a_file_with_parents() {
    let (_g, ctx) = setup();
    let r = run(
        &ctx,
        json!({"path": "src/deep/new.rs", "content": "fn main() {}\n"}),
    )
    .unwrap();
    assert_eq!(r.content, "Wrote 13 bytes to src/deep/new.rs");
    assert!(!r.is_error);
    assert_eq!(r.metadata["path"], "src/deep/new.rs");
    assert_eq!(r.metadata["change"], "created");
    assert_eq!(r.metadata["bytes"], 13);
    let p = ctx.workspace.join("src/deep/new.rs");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "fn main() {}\n");
    assert_eq!(mode(&p), 0o644);
    assert_eq!(mode(&ctx.workspace.join("src/deep")), 0o755);
}

#[test]
fn replaces_an_existing_file_keeping_its_mode() {
    let (_g, ctx) = setup();
    let p = ctx.workspace.join("run.sh");
    std::fs::write(&p, "old content that is longer\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    let abs = p.to_str().unwrap();
    let r = run(&ctx, json!({"path": abs, "content": "#!/bin/sh\n"})).unwrap();
    assert_eq!(r.metadata["change"], "modified");
    assert_eq!(r.metadata["path"], "run.sh");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "#!/bin/sh\n");
    assert_eq!(mode(&p), 0o755);
}

#[test]
fn empty_content_writes_an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::tools::test_support::ctx(dir.path());
    let r = run(&ctx, json!({"path": "e.txt", "content": ""})).unwrap();
    assert_eq!(r.content, "Wrote 0 bytes to e.txt");
    assert_eq!(std::fs::read(ctx.workspace.join("e.txt")).unwrap(), b"");
}

#[test]
fn writes_outside_or_through_symlinks_are_refused_and_change_nothing() {
    let (_g, ctx) = setup();
    let out = outside(&ctx);
    symlink(&out, ctx.workspace.join("linkdir")).unwrap();
    symlink(out.join("secret.txt"), ctx.workspace.join("link.txt")).unwrap();
    let before = snapshot(&out);
    let abs_out = out.join("abs.txt");
    for p in [
        "../outside/new.txt",
        "../outside/secret.txt",
        abs_out.to_str().unwrap(),
        "linkdir/new.txt",
        "linkdir/sub/new.txt",
        "link.txt",
    ] {
        let e = run(&ctx, json!({"path": p, "content": "pwned"})).unwrap_err();
        assert!(e.message().contains("outside the workspace"), "{p}: {e}");
    }
    assert_eq!(snapshot(&out), before);
    assert!(!out.join("sub").exists());
}

#[test]
fn refuses_directories_fifos_and_empty_paths() {
    let (_g, ctx) = setup();
    std::fs::create_dir(ctx.workspace.join("d")).unwrap();
    let e = run(&ctx, json!({"path": "d", "content": "x"})).unwrap_err();
    assert!(e.message().contains("is a directory"), "{e}");
    mkfifo(&ctx.workspace.join("pipe"));
    let c = ctx.clone();
    let e = without_hanging(move || run(&c, json!({"path": "pipe", "content": "x"})));
    assert!(e.unwrap_err().message().contains("FIFO"));
    let e = run(&ctx, json!({"path": " ", "content": "x"})).unwrap_err();
    assert!(e.message().contains("empty"));
    let e = run(&ctx, json!({"path": "a"})).unwrap_err();
    assert!(e.message().contains("content"), "{e}");
}
