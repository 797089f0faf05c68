//! Unit tests of `mod.rs`: the tool against a real workspace: each operation, a
//! multi-file patch applied whole, a failing hunk that changes nothing, confinement
//! (`..`, absolute paths outside, symlinks), the subject, CRLF files.

use std::os::unix::fs::symlink;

use super::*;

use crate::tools::Category;
use crate::tools::paths::test_util::*;
use crate::tools::test_support::{call, put};

fn run(ctx: &ToolContext, patch: &str) -> Result<ToolResult, ToolError> {
    call(&ApplyPatch, ctx, &json!({"input": patch}))
}

fn read(ctx: &ToolContext, name: &str) -> String {
    std::fs::read_to_string(ctx.workspace.join(name)).unwrap()
}

fn patch(body: &str) -> String {
    format!("*** Begin Patch\n{body}\n*** End Patch\n")
}

#[test]
fn schema_agrees_with_input_struct() {
    assert_schema_agrees::<Input>(&ApplyPatch.input_schema(), &json!({"input": "x"}));
}

#[test]
fn tool_properties() {
    assert!(!ApplyPatch.is_read_only());
    assert!(!ApplyPatch.is_destructive());
    assert!(!ApplyPatch.is_concurrency_safe());
    assert_eq!(ApplyPatch.category(), Category::File);
    assert!(TypedTool::records_changes(&ApplyPatch));
    assert_eq!(ApplyPatch.name(), "apply_patch");
}

#[test]
fn add_update_move_and_delete_in_one_patch_applied_whole() {
    let (_g, ctx) = setup();
    put(&ctx.workspace, "src/lib.rs", "fn a() {\n    1\n}\n");
    put(&ctx.workspace, "old.txt", "bye\n");
    put(&ctx.workspace, "notes.md", "# notes\nfirst\n");
    let r = run(
        &ctx,
        &patch(
            "*** Add File: docs/new.md\n+hello\n+world\n\
             *** Update File: src/lib.rs\n@@ fn a() {\n-    1\n+    2\n\
             *** Delete File: old.txt\n\
             *** Update File: notes.md\n*** Move to: docs/notes.md\n # notes\n-first\n+second",
        ),
    )
    .unwrap();
    assert_eq!(read(&ctx, "docs/new.md"), "hello\nworld\n");
    assert_eq!(read(&ctx, "src/lib.rs"), "fn a() {\n    2\n}\n");
    assert!(!ctx.workspace.join("old.txt").exists());
    assert!(!ctx.workspace.join("notes.md").exists());
    assert_eq!(read(&ctx, "docs/notes.md"), "# notes\nsecond\n");
    assert_eq!(
        r.content,
        "Applied the patch (5 files):\nA docs/new.md\nM src/lib.rs\nD old.txt\nA docs/notes.md\nD notes.md"
    );
    assert_eq!(
        r.metadata["changes"],
        json!([{"path": "docs/new.md", "change": "created"},
               {"path": "src/lib.rs", "change": "modified"},
               {"path": "old.txt", "change": "deleted"},
               {"path": "docs/notes.md", "change": "created"},
               {"path": "notes.md", "change": "deleted"}])
    );
}

#[test]
fn a_failing_hunk_leaves_every_file_unchanged_and_says_where() {
    let (_g, ctx) = setup();
    put(&ctx.workspace, "a.txt", "alpha\n");
    put(&ctx.workspace, "b.txt", "one\ntwo\nthree\n");
    let before = snapshot(&ctx.workspace);
    let e = run(
        &ctx,
        &patch(
            "*** Update File: a.txt\n-alpha\n+ALPHA\n\
             *** Add File: c.txt\n+new\n\
             *** Delete File: a2.txt\n",
        ),
    )
    .unwrap_err();
    assert!(
        e.message()
            .contains("Delete File: a2.txt: the file does not exist"),
        "{e}"
    );
    let e = run(
        &ctx,
        &patch(
            "*** Update File: a.txt\n-alpha\n+ALPHA\n\
             *** Add File: c.txt\n+new\n\
             *** Update File: b.txt\n one\n-too\n+2",
        ),
    )
    .unwrap_err();
    let m = e.message();
    assert!(m.contains("no file changed"), "{m}");
    assert!(
        m.contains("*** Update File: b.txt: hunk 1 (patch line 8)"),
        "{m}"
    );
    assert!(m.contains("     2\ttwo"), "{m}");
    assert_eq!(snapshot(&ctx.workspace), before);
}

#[test]
fn paths_outside_the_workspace_or_through_symlinks_are_refused_and_change_nothing() {
    let (_g, ctx) = setup();
    let out = outside(&ctx);
    symlink(&out, ctx.workspace.join("linkdir")).unwrap();
    symlink(out.join("secret.txt"), ctx.workspace.join("link.txt")).unwrap();
    put(&ctx.workspace, "ok.txt", "ok\n");
    let before_out = snapshot(&out);
    let before_ws = snapshot(&ctx.workspace);
    let abs = out.join("abs.txt");
    for body in [
        "*** Add File: ../outside/new.txt\n+x".to_string(),
        "*** Update File: ../outside/secret.txt\n-secret\n+pwned".to_string(),
        format!("*** Add File: {}\n+x", abs.display()),
        "*** Delete File: linkdir/secret.txt".to_string(),
        "*** Update File: link.txt\n-secret\n+pwned".to_string(),
        // A good first operation does not run when a later path is refused.
        "*** Update File: ok.txt\n-ok\n+changed\n*** Update File: ok.txt\n*** Move to: ../outside/moved.txt\n-ok\n+x".to_string(),
        "*** Update File: ok.txt\n-ok\n+changed\n*** Add File: linkdir/sub/new.txt\n+x".to_string(),
    ] {
        let e = run(&ctx, &patch(&body)).unwrap_err();
        let m = e.message();
        assert!(m.contains("outside the workspace") || m.contains("twice"), "{body}: {m}");
    }
    assert_eq!(snapshot(&out), before_out);
    assert_eq!(snapshot(&ctx.workspace), before_ws);
}

#[test]
fn a_path_in_an_add_dir_is_allowed() {
    let (_g, mut ctx) = setup();
    let extra = outside(&ctx);
    ctx.extra_dirs.push(extra.clone());
    run(
        &ctx,
        &patch("*** Update File: ../outside/secret.txt\n-secret\n+shared"),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(extra.join("secret.txt")).unwrap(),
        "shared\n"
    );
}

#[test]
fn the_subject_is_every_path_touched() {
    let input = Input {
        input: patch(
            "*** Add File: a\n+x\n*** Update File: b\n*** Move to: c/d\n-y\n+z\n*** Delete File: e",
        ),
    };
    assert_eq!(
        ApplyPatch.subject(&input),
        Subject::Paths(vec!["a".into(), "b".into(), "c/d".into(), "e".into()])
    );
    let e = ApplyPatch
        .validate(&Input {
            input: "nonsense".into(),
        })
        .unwrap_err();
    assert!(e.message().contains("*** Begin Patch"), "{e}");
}

#[test]
fn crlf_files_stay_crlf_and_modes_are_kept() {
    use std::os::unix::fs::PermissionsExt;
    let (_g, ctx) = setup();
    put(&ctx.workspace, "win.txt", "a\r\nb\r\n");
    put(&ctx.workspace, "run.sh", "#!/bin/sh\necho a\n");
    let sh = ctx.workspace.join("run.sh");
    std::fs::set_permissions(&sh, std::fs::Permissions::from_mode(0o755)).unwrap();
    run(
        &ctx,
        &patch(
            "*** Update File: win.txt\n a\n-b\n+c\n+d\n*** Update File: run.sh\n-echo a\n+echo b",
        ),
    )
    .unwrap();
    assert_eq!(read(&ctx, "win.txt"), "a\r\nc\r\nd\r\n");
    assert_eq!(read(&ctx, "run.sh"), "#!/bin/sh\necho b\n");
    assert_eq!(
        std::fs::metadata(&sh).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

#[test]
fn a_patch_touching_one_file_twice_is_refused() {
    let (_g, ctx) = setup();
    put(&ctx.workspace, "a.txt", "x\n");
    let e = run(
        &ctx,
        &patch("*** Update File: a.txt\n-x\n+y\n*** Delete File: ./a.txt"),
    )
    .unwrap_err();
    assert!(e.message().contains("twice"), "{e}");
    assert_eq!(read(&ctx, "a.txt"), "x\n");
}

#[test]
fn non_utf8_and_directories_are_refused() {
    let (_g, ctx) = setup();
    put(&ctx.workspace, "bin.dat", b"\xff\xfe\n".as_slice());
    let e = run(&ctx, &patch("*** Update File: bin.dat\n-x\n+y")).unwrap_err();
    assert!(e.message().contains("not UTF-8"), "{e}");
    std::fs::create_dir(ctx.workspace.join("d")).unwrap();
    let e = run(&ctx, &patch("*** Delete File: d")).unwrap_err();
    assert!(e.message().contains("directory"), "{e}");
}

#[test]
fn a_failed_write_restores_what_was_written() {
    use std::os::unix::fs::PermissionsExt;
    let (_g, ctx) = setup();
    put(&ctx.workspace, "a.txt", "a\n");
    put(&ctx.workspace, "ro/b.txt", "b\n");
    let ro = ctx.workspace.join("ro");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root ignores directory permissions: nothing to prove there.
    let writable = std::fs::write(ro.join("probe"), "").is_ok();
    if !writable {
        let e = run(
            &ctx,
            &patch("*** Update File: a.txt\n-a\n+A\n*** Update File: ro/b.txt\n-b\n+B"),
        )
        .unwrap_err();
        assert!(e.message().contains("restored"), "{e}");
        assert_eq!(read(&ctx, "a.txt"), "a\n");
        assert_eq!(read(&ctx, "ro/b.txt"), "b\n");
    }
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
}
