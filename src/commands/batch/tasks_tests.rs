//! Tests of the tasks file and of task args checked by `agent run`'s parser.

use super::*;

#[test]
fn tasks_are_validated() {
    let ok = parse_tasks(
        "{\"id\":\"a\",\"prompt\":\"p\"}\n\n{\"id\":\"b-1.x\",\"prompt\":\"q\",\"workspace\":\"w\",\"args\":[\"--full-auto\"]}\n",
    )
    .unwrap();
    assert_eq!(ok.len(), 2);
    assert_eq!(ok[1].args, vec!["--full-auto"]);
    for (text, needle) in [
        ("{\"id\":\"a\"}", "line 1"),
        ("{\"id\":\"../x\",\"prompt\":\"p\"}", "must be"),
        ("{\"id\":\"\",\"prompt\":\"p\"}", "must be"),
        (
            "{\"id\":\"a\",\"prompt\":\"p\"}\n{\"id\":\"a\",\"prompt\":\"p\"}",
            "line 2: duplicate",
        ),
        ("{\"id\":\"a\",\"prompt\":\" \"}", "empty prompt"),
        (
            "{\"id\":\"a\",\"prompt\":\"p\",\"nope\":1}",
            "unknown field",
        ),
        (
            "{\"id\":\"a\",\"prompt\":\"p\",\"args\":[\"-o\",\"x\"]}",
            "set by the batch",
        ),
        ("not json", "line 1"),
        (
            "{\"id\":\"a\",\"prompt\":\"p\",\"args\":[\"-C/tmp\"]}",
            "line 1: task \"a\": args: -C/--cwd is set by the batch",
        ),
    ] {
        let e = parse_tasks(text).unwrap_err();
        assert!(e.contains(needle), "{text}: {e}");
    }
}

fn task(args: &[&str]) -> Task {
    Task {
        id: "t".into(),
        prompt: "p".into(),
        workspace: None,
        args: args.iter().map(|a| a.to_string()).collect(),
        setup: None,
        sets_timeout: false,
    }
}

#[test]
fn args_go_through_the_run_parser() {
    for ok in [
        &[][..],
        &["--full-auto", "--max-turns", "3"],
        &["--verify=cargo test", "-v", "--timeout", "5m"],
    ] {
        assert!(check_args(&task(ok)).is_ok(), "{ok:?}");
    }
    for (args, needle) in [
        (&["-C/tmp"][..], "-C/--cwd is set by the batch"),
        (&["-C", "/tmp"], "-C/--cwd is set by the batch"),
        (&["--cwd=x"], "-C/--cwd is set by the batch"),
        (&["-qC/tmp"], "-C/--cwd is set by the batch"),
        (&["-o/tmp/x"], "-o/--output is set by the batch"),
        (&["--output=x"], "-o/--output is set by the batch"),
        (&["--", "other prompt"], "`--` is not allowed"),
        (&["--"], "`--` is not allowed"),
        (&["stray"], "unexpected argument"),
        (&["--prompt-file", "f"], "cannot be used with"),
        (&["--max-turns", "x"], "--max-turns"),
        (&["--no-such-flag"], "--no-such-flag"),
        (&["--help"], "--help and --version"),
    ] {
        let e = check_args(&task(args)).unwrap_err();
        assert!(e.starts_with("task \"t\": args: "), "{args:?}: {e}");
        assert!(e.contains(needle), "{args:?}: {e}");
        assert!(!e.contains("Some("), "{e}");
    }
}

#[test]
fn setup_and_timeout_are_read() {
    let t = parse_tasks(
        "{\"id\":\"a\",\"prompt\":\"p\",\"setup\":\"make deps\",\"args\":[\"--timeout=5m\"]}\n\
         {\"id\":\"b\",\"prompt\":\"p\"}",
    )
    .unwrap();
    assert_eq!(t[0].setup.as_deref(), Some("make deps"));
    assert!(
        t[0].sets_timeout,
        "--timeout in args is seen in any spelling"
    );
    assert!(!t[1].sets_timeout);
    let e = parse_tasks("{\"id\":\"a\",\"prompt\":\"p\",\"setup\":\" \"}").unwrap_err();
    assert!(e.contains("setup is empty"), "{e}");
    assert_eq!(timeout_arg(std::time::Duration::from_secs(90)), "90000ms");
}

#[test]
fn a_child_run_is_one_argv() {
    let (ws, out) = (Path::new("/w"), Path::new("/o/t1.json"));
    let flags = ["--max-turns".to_string(), "3".to_string()];
    let child = ChildRun {
        flags: &flags,
        timeout: Some(Duration::from_secs(2)),
        workspace: ws,
        transcript: Some(out),
        prompt: "-fix it",
    };
    let argv: Vec<String> = child
        .argv()
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        argv,
        [
            "run",
            "--max-turns",
            "3",
            "--no-user-skills",
            "--timeout",
            "2000ms",
            "-C",
            "/w",
            "-o",
            "/o/t1.json",
            "--",
            "-fix it"
        ]
    );
    let checked = ChildRun {
        transcript: None,
        timeout: None,
        ..child
    };
    let argv = checked.argv();
    assert!(!argv.iter().any(|a| a == "-o") && !argv.iter().any(|a| a == "--timeout"));
    assert_eq!(
        argv.last().map(|a| a.to_string_lossy()),
        Some("-fix it".into())
    );
}
