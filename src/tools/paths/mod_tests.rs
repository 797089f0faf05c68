//! Unit tests of path confinement: resolution, escapes, no-follow opens and writes.

use std::os::unix::fs::symlink;

use super::test_util::*;
use super::*;
use crate::process::create_spill_file;

fn failed(r: Result<impl std::fmt::Debug, ToolError>) -> String {
    match r {
        Err(ToolError::Failed(m)) => m,
        other => panic!("expected a Failed error, got {other:?}"),
    }
}

/// The message of a typed not-found.
fn not_found(r: Result<impl std::fmt::Debug, ToolError>) -> String {
    match r {
        Err(ToolError::NotFound(m)) => m,
        other => panic!("expected a NotFound error, got {other:?}"),
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn resolves_relative_and_absolute_paths_inside() {
    let (_g, ctx) = setup();
    std::fs::create_dir(ctx.workspace.join("src")).unwrap();
    std::fs::write(ctx.workspace.join("src/a.rs"), "x").unwrap();
    let want = ctx.workspace.join("src/a.rs");
    assert_eq!(resolve_for_read(&ctx, "src/a.rs").unwrap(), want);
    assert_eq!(resolve_for_read(&ctx, "./src/../src/a.rs").unwrap(), want);
    assert_eq!(
        resolve_for_read(&ctx, want.to_str().unwrap()).unwrap(),
        want
    );
    assert_eq!(
        resolve_for_write(&ctx, "src/new/b.rs").unwrap(),
        ctx.workspace.join("src/new/b.rs")
    );
    assert_eq!(display_path(&ctx, &want), "src/a.rs");
}

#[test]
fn dotdot_traversal_is_refused_for_read_and_write() {
    let (_g, ctx) = setup();
    let before = snapshot(&outside(&ctx));
    for p in [
        "../outside/secret.txt",
        "../outside/new.txt",
        "a/../../outside/x",
        "../../../../etc/passwd",
    ] {
        assert!(
            failed(resolve_for_read(&ctx, p)).contains("outside the workspace"),
            "{p}"
        );
        assert!(
            failed(resolve_for_write(&ctx, p)).contains("outside the workspace"),
            "{p}"
        );
    }
    assert_eq!(snapshot(&outside(&ctx)), before);
}

#[test]
fn absolute_paths_outside_are_refused() {
    let (_g, ctx) = setup();
    let secret = outside(&ctx).join("secret.txt");
    let e = failed(resolve_for_read(&ctx, secret.to_str().unwrap()));
    assert!(e.contains("outside the workspace"), "{e}");
    failed(resolve_for_write(&ctx, "/tmp/agent-should-not-exist.txt"));
    // A sibling whose name starts like the workspace is not inside it.
    let sibling = format!("{}2/x", ctx.workspace.display());
    assert!(failed(resolve_for_write(&ctx, &sibling)).contains("outside"));
}

#[test]
fn symlinked_dir_pointing_out_is_refused() {
    let (_g, ctx) = setup();
    symlink(outside(&ctx), ctx.workspace.join("linkdir")).unwrap();
    let before = snapshot(&outside(&ctx));
    let e = failed(resolve_for_read(&ctx, "linkdir/secret.txt"));
    assert!(
        e.contains("outside the workspace") && e.contains("symbolic link"),
        "{e}"
    );
    failed(resolve_for_write(&ctx, "linkdir/new.txt"));
    failed(resolve_for_write(&ctx, "linkdir/sub/new.txt"));
    assert_eq!(snapshot(&outside(&ctx)), before);
}

#[test]
fn symlinked_file_pointing_out_is_refused() {
    let (_g, ctx) = setup();
    symlink(
        outside(&ctx).join("secret.txt"),
        ctx.workspace.join("link.txt"),
    )
    .unwrap();
    // A relative link target counts the same.
    symlink("../outside/secret.txt", ctx.workspace.join("rel.txt")).unwrap();
    for p in ["link.txt", "rel.txt"] {
        assert!(failed(resolve_for_read(&ctx, p)).contains("outside the workspace"));
        assert!(failed(resolve_for_write(&ctx, p)).contains("outside the workspace"));
    }
    // A dangling link to a missing file outside is refused too (a write would create it).
    symlink(
        outside(&ctx).join("missing.txt"),
        ctx.workspace.join("dangling"),
    )
    .unwrap();
    failed(resolve_for_write(&ctx, "dangling"));
    assert!(!outside(&ctx).join("missing.txt").exists());
}

#[test]
fn symlinks_within_the_workspace_are_followed() {
    let (_g, ctx) = setup();
    std::fs::create_dir(ctx.workspace.join("real")).unwrap();
    std::fs::write(ctx.workspace.join("real/f.txt"), "x").unwrap();
    symlink("real", ctx.workspace.join("alias")).unwrap();
    symlink(
        ctx.workspace.join("real/f.txt"),
        ctx.workspace.join("f-link"),
    )
    .unwrap();
    assert_eq!(
        resolve_for_read(&ctx, "alias/f.txt").unwrap(),
        ctx.workspace.join("real/f.txt")
    );
    assert_eq!(
        resolve_for_read(&ctx, "f-link").unwrap(),
        ctx.workspace.join("real/f.txt")
    );
    assert_eq!(
        resolve_for_write(&ctx, "alias/g.txt").unwrap(),
        ctx.workspace.join("real/g.txt")
    );
}

#[test]
fn symlink_loop_and_file_as_directory_are_clear_errors() {
    let (_g, ctx) = setup();
    symlink("b", ctx.workspace.join("a")).unwrap();
    symlink("a", ctx.workspace.join("b")).unwrap();
    assert!(failed(resolve_for_read(&ctx, "a")).contains("too many levels"));
    std::fs::write(ctx.workspace.join("file"), "x").unwrap();
    assert!(failed(resolve_for_write(&ctx, "file/x")).contains("not a directory"));
}

#[test]
fn distinct_errors_for_missing_empty_and_root() {
    let (_g, ctx) = setup();
    assert!(not_found(resolve_for_read(&ctx, "nope.txt")).starts_with("file not found"));
    assert!(failed(resolve_for_read(&ctx, "")).contains("empty"));
    assert!(failed(resolve_for_write(&ctx, ".")).contains("workspace root"));
    assert!(failed(resolve_for_read(&ctx, "a\0b")).contains("NUL"));
}

/// Every way a path can be missing is the typed `NotFound`: the file, or a directory on
/// the way to it, at resolution or when opened.
#[test]
fn a_missing_path_is_a_typed_not_found() {
    let (_g, ctx) = setup();
    let dir = ctx.workspace.join("gone");
    std::fs::create_dir(&dir).unwrap();
    let resolved = resolve_for_write(&ctx, "gone/x.txt").unwrap();
    assert!(not_found(open_for_read(&ctx, &resolved, "gone/x.txt")).contains("gone/x.txt"));
    std::fs::remove_dir(&dir).unwrap();
    assert!(not_found(open_for_read(&ctx, &resolved, "gone/x.txt")).starts_with("file not found"));
    assert!(not_found(resolve_for_read(&ctx, "gone/x.txt")).starts_with("file not found"));
}

#[test]
fn spill_dir_is_readable_but_not_writable() {
    let (_g, ctx) = setup();
    let spilled = ctx.spill_dir.join("result-1.txt");
    std::fs::write(&spilled, "big\n").unwrap();
    let r = resolve_for_read(&ctx, spilled.to_str().unwrap()).unwrap();
    let (mut f, _) = open_for_read(&ctx, &r, "spilled").unwrap();
    let mut s = String::new();
    std::io::Read::read_to_string(&mut f, &mut s).unwrap();
    assert_eq!(s, "big\n");
    failed(resolve_for_write(&ctx, spilled.to_str().unwrap()));
    assert!(failed(write_atomic(&ctx, &r, "spilled", b"x")).contains("outside"));
    assert_eq!(std::fs::read_to_string(&spilled).unwrap(), "big\n");
}

#[test]
fn a_trailing_slash_is_not_a_file_name() {
    let (_g, ctx) = setup();
    std::fs::write(ctx.workspace.join("f.txt"), "x").unwrap();
    for p in ["trail/", "f.txt/", "new/dir/", "sub/."] {
        assert!(failed(resolve_for_write(&ctx, p)).contains("slash"), "{p}");
    }
    assert!(!ctx.workspace.join("trail").exists());
    assert_eq!(
        std::fs::read_to_string(ctx.workspace.join("f.txt")).unwrap(),
        "x"
    );
}

/// A command (sandboxed or not) that swaps the spill directory for a symlink must not
/// turn a save into a write elsewhere, nor ReadFile's spill exception into a way out.
#[test]
fn a_spill_dir_swapped_for_a_symlink_redirects_nothing() {
    let (_g, ctx) = setup();
    let out = outside(&ctx);
    let before = snapshot(&out);
    std::fs::remove_dir(&ctx.spill_dir).unwrap();
    std::os::unix::fs::symlink(&out, &ctx.spill_dir).unwrap();
    // O_DIRECTORY|O_NOFOLLOW on a symlink: ENOTDIR (or ELOOP on other kernels).
    assert!(create_spill_file(&ctx.spill_dir, "result-x.txt").is_err());
    assert_eq!(
        snapshot(&out),
        before,
        "nothing was written through the link"
    );
    let through = ctx.spill_dir.join("secret.txt");
    assert!(failed(resolve_for_read(&ctx, through.to_str().unwrap())).contains("outside"));
    // The same lexical path opened directly is refused too (a swap after resolving).
    assert!(open_for_read(&ctx, &through, "swapped").is_err());
}

#[test]
fn a_file_swapped_into_the_spill_dir_is_never_followed() {
    let (_g, ctx) = setup();
    let target = outside(&ctx).join("planted.txt");
    std::os::unix::fs::symlink(&target, ctx.spill_dir.join("result-y.txt")).unwrap();
    assert!(create_spill_file(&ctx.spill_dir, "result-y.txt").is_err());
    assert!(!target.exists());
    let f = create_spill_file(&ctx.spill_dir, "result-z.txt").unwrap();
    assert_eq!(f.metadata().unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
fn search_tools_do_not_get_the_spill_exception() {
    let (_g, ctx) = setup();
    std::fs::write(ctx.spill_dir.join("result-1.txt"), "big\n").unwrap();
    let spill = ctx.spill_dir.to_str().unwrap();
    assert!(resolve_for_read(&ctx, spill).is_ok());
    assert!(failed(resolve_for_search(&ctx, spill)).contains("outside"));
    assert!(resolve_for_search(&ctx, ".").is_ok());
}

#[test]
fn write_creates_parents_0755_and_file_0644() {
    let (_g, ctx) = setup();
    let r = resolve_for_write(&ctx, "a/b/c.txt").unwrap();
    assert_eq!(
        write_atomic(&ctx, &r, "a/b/c.txt", b"hello").unwrap(),
        ChangeKind::Created
    );
    assert_eq!(std::fs::read(&r).unwrap(), b"hello");
    assert_eq!(mode(&r), 0o644);
    assert_eq!(mode(&ctx.workspace.join("a")), 0o755);
    assert_eq!(mode(&ctx.workspace.join("a/b")), 0o755);
}

#[test]
fn write_keeps_an_existing_mode_and_leaves_no_temp_file() {
    let (_g, ctx) = setup();
    let p = ctx.workspace.join("run.sh");
    std::fs::write(&p, "old").unwrap();
    std::fs::set_permissions(&p, Permissions::from_mode(0o750)).unwrap();
    let r = resolve_for_write(&ctx, "run.sh").unwrap();
    assert_eq!(
        write_atomic(&ctx, &r, "run.sh", b"new").unwrap(),
        ChangeKind::Modified
    );
    assert_eq!(std::fs::read(&p).unwrap(), b"new");
    assert_eq!(mode(&p), 0o750);
    let names: Vec<_> = std::fs::read_dir(&ctx.workspace)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![OsString::from("run.sh")]);
}

#[test]
fn a_symlink_swapped_in_after_the_check_cannot_redirect_a_write() {
    let (_g, ctx) = setup();
    let target = ctx.workspace.join("f.txt");
    std::fs::write(&target, "inside").unwrap();
    let r = resolve_for_write(&ctx, "f.txt").unwrap();
    // The swap: between check and write, f.txt becomes a link to a file outside.
    std::fs::remove_file(&target).unwrap();
    symlink(outside(&ctx).join("secret.txt"), &target).unwrap();
    failed(write_atomic(&ctx, &r, "f.txt", b"pwned"));
    assert_eq!(
        std::fs::read_to_string(outside(&ctx).join("secret.txt")).unwrap(),
        "secret\n"
    );
    // Reads refuse the swapped link as well.
    failed(open_for_read(&ctx, &r, "f.txt"));
}

#[test]
fn a_parent_dir_swapped_for_a_symlink_cannot_redirect_a_write() {
    let (_g, ctx) = setup();
    std::fs::create_dir(ctx.workspace.join("d")).unwrap();
    let r = resolve_for_write(&ctx, "d/new.txt").unwrap();
    std::fs::remove_dir(ctx.workspace.join("d")).unwrap();
    symlink(outside(&ctx), ctx.workspace.join("d")).unwrap();
    let before = snapshot(&outside(&ctx));
    let e = failed(write_atomic(&ctx, &r, "d/new.txt", b"pwned"));
    assert!(e.contains("not a real directory"), "{e}");
    assert_eq!(snapshot(&outside(&ctx)), before);
    failed(open_for_read(
        &ctx,
        &ctx.workspace.join("d/secret.txt"),
        "d/secret.txt",
    ));
}

#[test]
fn fifos_are_refused_without_hanging() {
    let (_g, ctx) = setup();
    mkfifo(&ctx.workspace.join("pipe"));
    let c = ctx.clone();
    let (read_err, write_err) = without_hanging(move || {
        let r = resolve_for_read(&c, "pipe").unwrap();
        let read = open_for_read(&c, &r, "pipe").map(|_| ());
        let write = write_atomic(&c, &r, "pipe", b"x").map(|_| ());
        (read, write)
    });
    assert!(failed(read_err).contains("FIFO"));
    assert!(failed(write_err).contains("FIFO"));
}

#[test]
fn directories_are_refused_as_files() {
    let (_g, ctx) = setup();
    std::fs::create_dir(ctx.workspace.join("d")).unwrap();
    let r = resolve_for_read(&ctx, "d").unwrap();
    assert!(failed(open_for_read(&ctx, &r, "d")).contains("is a directory"));
    assert!(failed(write_atomic(&ctx, &r, "d", b"x")).contains("is a directory"));
}

#[test]
fn unreadable_file_is_permission_denied() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return; // root reads anything: the case cannot be set up
    }
    let (_g, ctx) = setup();
    let p = ctx.workspace.join("locked");
    std::fs::write(&p, "x").unwrap();
    std::fs::set_permissions(&p, Permissions::from_mode(0o000)).unwrap();
    let r = resolve_for_read(&ctx, "locked").unwrap();
    assert!(failed(open_for_read(&ctx, &r, "locked")).contains("permission denied"));
}

#[test]
fn permission_errors_are_named() {
    // The mapping itself, since the file-based test above cannot run as root.
    let e = io_error(
        &io::Error::from(io::ErrorKind::PermissionDenied),
        "x.txt",
        "read",
    );
    assert_eq!(e, ToolError::failed("permission denied: cannot read x.txt"));
    let e = io_error(&io::Error::from_raw_os_error(libc::ELOOP), "x.txt", "read");
    assert!(e.message().contains("symbolic link"));
}

#[test]
fn a_vanished_workspace_is_fatal() {
    let (_g, ctx) = setup();
    let r = resolve_for_write(&ctx, "x.txt").unwrap();
    std::fs::remove_dir(&ctx.workspace).unwrap();
    assert!(matches!(
        write_atomic(&ctx, &r, "x.txt", b"x"),
        Err(ToolError::Fatal(_))
    ));
    assert!(matches!(
        resolve_for_read(&ctx, "x.txt"),
        Err(ToolError::Fatal(_))
    ));
    assert!(matches!(
        resolve_for_write(&ctx, "x.txt"),
        Err(ToolError::Fatal(_))
    ));
}

/// A Latin-1 file name: Glob and Grep print it in the escaped form, and every file tool
/// takes that form back (a lossy `caf�.txt` could not be opened).
#[test]
fn non_utf8_names_round_trip_through_glob_grep_and_the_file_tools() {
    use crate::tools::test_support::exec;
    use crate::tools::{
        edit_file::EditFile, glob::Glob, grep::Grep, read_file::ReadFile, write_file::WriteFile,
    };
    use serde_json::json;
    use std::os::unix::ffi::OsStrExt;

    let (_g, ctx) = setup();
    let dir = ctx
        .workspace
        .join(std::ffi::OsStr::from_bytes(b"d\xe9p\xf4t"));
    std::fs::create_dir(&dir).unwrap();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(dir.join(name), "hello\n").unwrap();
    let escaped = r"d\xE9p\xF4t/caf\xE9.txt";

    let listed = exec(&Glob, &ctx, &json!({"pattern": "**/*.txt"})).unwrap();
    assert_eq!(
        listed.content.lines().next(),
        Some(escaped),
        "{}",
        listed.content
    );
    assert!(!listed.content.contains('\u{FFFD}'));
    let found = exec(&Grep, &ctx, &json!({"pattern": "hello"})).unwrap();
    assert_eq!(found.content.trim(), format!("{escaped}:1: hello"));
    let under = exec(
        &Glob,
        &ctx,
        &json!({"pattern": "*", "path": r"d\xE9p\xF4t"}),
    )
    .unwrap();
    assert!(under.content.contains(r"caf\xE9.txt"), "{}", under.content);

    let read = exec(&ReadFile, &ctx, &json!({"path": escaped})).unwrap();
    assert_eq!(read.content.trim(), "1\thello");
    assert_eq!(read.metadata["path"], escaped);
    exec(
        &EditFile,
        &ctx,
        &json!({"path": escaped, "old_string": "hello", "new_string": "bye"}),
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(dir.join(name)).unwrap(), "bye\n");
    exec(
        &WriteFile,
        &ctx,
        &json!({"path": r"d\xE9p\xF4t/new\xFF", "content": "x"}),
    )
    .unwrap();
    assert_eq!(
        std::fs::read(dir.join(std::ffi::OsStr::from_bytes(b"new\xff"))).unwrap(),
        b"x"
    );
}

/// `--add-dir`: files under an extra directory are read and written with the same
/// guarantees; `..` and symlinks out of it are refused.
#[test]
fn extra_dirs_are_confined_like_the_workspace() {
    use crate::tools::test_support::exec;
    use crate::tools::{read_file::ReadFile, write_file::WriteFile};
    use serde_json::json;

    let (_g, mut ctx) = setup();
    let base = ctx.workspace.parent().unwrap().to_path_buf();
    let extra = base.join("extra");
    std::fs::create_dir(&extra).unwrap();
    std::fs::write(extra.join("a.txt"), "A\n").unwrap();
    symlink(base.join("outside/secret.txt"), extra.join("leak")).unwrap();
    symlink(base.join("outside"), extra.join("leakdir")).unwrap();
    let p = |rel: &str| extra.join(rel).display().to_string();

    // Without --add-dir: outside.
    let e = exec(&ReadFile, &ctx, &json!({"path": p("a.txt")})).unwrap_err();
    assert!(e.message().contains("outside the workspace"), "{e}");

    ctx.extra_dirs = vec![extra.clone()];
    let r = exec(&ReadFile, &ctx, &json!({"path": p("a.txt")})).unwrap();
    assert_eq!(r.content.trim(), "1\tA");
    exec(
        &WriteFile,
        &ctx,
        &json!({"path": p("sub/new.txt"), "content": "n"}),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(extra.join("sub/new.txt")).unwrap(),
        "n"
    );

    for escape in [
        p("../outside/secret.txt"),
        p("leak"),
        p("leakdir/secret.txt"),
        p("sub/../../outside/secret.txt"),
    ] {
        let e = exec(&ReadFile, &ctx, &json!({"path": escape})).unwrap_err();
        assert!(
            e.message().contains("outside the workspace") && e.message().contains("--add-dir"),
            "{escape}: {e}"
        );
        let e = exec(&WriteFile, &ctx, &json!({"path": escape, "content": "x"})).unwrap_err();
        assert!(e.message().contains("outside"), "{escape}: {e}");
    }
    assert_eq!(
        std::fs::read_to_string(base.join("outside/secret.txt")).unwrap(),
        "secret\n"
    );
    // The extra directory itself is not a file to write.
    assert!(exec(&WriteFile, &ctx, &json!({"path": p(""), "content": "x"})).is_err());
}

/// The kernel's one-lookup open (`openat2`) takes what the walk takes and leaves the
/// rest to it: a symlink anywhere below the root, or a missing name, is `None` (the walk
/// then words the error); a FIFO is refused without being opened.
#[cfg(target_os = "linux")]
#[test]
fn the_one_lookup_open_takes_plain_files_and_leaves_the_rest_to_the_walk() {
    use std::ffi::OsString;
    let (_t, ctx) = setup();
    let ws = ctx.workspace.clone();
    std::fs::create_dir_all(ws.join("a/b")).unwrap();
    std::fs::write(ws.join("a/b/f.txt"), "hello\n").unwrap();
    let dirs = [OsString::from("a"), OsString::from("b")];
    let Some(opened) = at::open_beneath(&ctx, &ws, &dirs, OsStr::new("f.txt"), "a/b/f.txt") else {
        // A kernel without openat2 (before 5.6) or a filter refusing it: the walk runs.
        return;
    };
    let (mut f, md) = opened.unwrap();
    assert_eq!(md.len(), 6);
    let mut text = String::new();
    std::io::Read::read_to_string(&mut f, &mut text).unwrap();
    assert_eq!(text, "hello\n");
    // A symlinked directory inside the workspace and a missing name: left to the walk.
    std::os::unix::fs::symlink(ws.join("a"), ws.join("link")).unwrap();
    let via_link = [OsString::from("link"), OsString::from("b")];
    assert!(at::open_beneath(&ctx, &ws, &via_link, OsStr::new("f.txt"), "x").is_none());
    std::os::unix::fs::symlink(outside(&ctx).join("secret.txt"), ws.join("out.txt")).unwrap();
    // A symlink as the last name is looked at, not followed, and refused as the walk's
    // look refuses it.
    let last = at::open_beneath(&ctx, &ws, &[], OsStr::new("out.txt"), "x").unwrap();
    assert!(failed(last).contains("symbolic link"));
    assert!(at::open_beneath(&ctx, &ws, &dirs, OsStr::new("missing"), "x").is_none());
    // A FIFO: refused from its O_PATH look, so the test does not block.
    let fifo =
        std::ffi::CString::new(ws.join("pipe").into_os_string().into_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let refused = at::open_beneath(&ctx, &ws, &[], OsStr::new("pipe"), "pipe").unwrap();
    assert!(failed(refused).contains("FIFO"));
    // And the public path takes it: reading through open_for_read gives the same file.
    let (_, md) = open_for_read(&ctx, &ws.join("a/b/f.txt"), "a/b/f.txt").unwrap();
    assert_eq!(md.len(), 6);
}

#[test]
fn a_removed_workspace_ends_the_run_whatever_the_path() {
    let (_t, ctx) = setup();
    std::fs::write(ctx.workspace.join("f.txt"), "x").unwrap();
    assert!(resolve_for_read(&ctx, "f.txt").is_ok());
    std::fs::remove_file(ctx.workspace.join("f.txt")).unwrap();
    std::fs::remove_dir(&ctx.workspace).unwrap();
    for path in ["f.txt", "a/b/c.txt", "."] {
        match resolve_for_read(&ctx, path) {
            Err(ToolError::Fatal(m)) => assert!(m.contains("no longer exists"), "{m}"),
            other => panic!("{path}: {other:?}"),
        }
    }
    match resolve_for_write(&ctx, "new.txt") {
        Err(ToolError::Fatal(m)) => assert!(m.contains("no longer exists"), "{m}"),
        other => panic!("{other:?}"),
    }
}
