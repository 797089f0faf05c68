//! Events are typed (`run::event::RunEvent`): no shipped code finds an event, or reads a
//! field of one, by matching its JSON text. This reads the sources and fails on a string
//! search for a `"type"` key (`line.contains("\"type\":\"run.finished\"")`, as
//! `agent github` once found the end of its run) and on an event built with `json!` in
//! `src/run` or `src/commands` (an `emit` takes a `RunEvent`).

use regex::Regex;

use crate::exit_codes::lines_where;

/// A text search (`contains`, `starts_with`, `find`, …) whose needle holds a `"type"` key.
fn type_matching() -> Regex {
    Regex::new(
        r#"\.(contains|starts_with|ends_with|find|rfind|matches|split_once|strip_prefix|strip_suffix)\(\s*(r#*)?"[^"]*?(\\"|")type(\\"|")"#,
    )
    .unwrap()
}

/// Shipped code: not a test file, not a comment.
fn shipped(file: &std::path::Path, line: &str) -> bool {
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    !name.ends_with("_tests.rs") && !line.trim_start().starts_with("//")
}

#[test]
fn no_event_json_is_matched_as_text() {
    let re = type_matching();
    let found = lines_where(|f, l| shipped(f, l) && re.is_match(l));
    assert!(
        found.is_empty(),
        "event JSON matched as text (match on RunEvent instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_event_is_built_with_json_macro() {
    let found = lines_where(|f, l| {
        (f.starts_with("run") || f.starts_with("commands"))
            && shipped(f, l)
            && (l.contains("emit(") || l.contains("emit_raw("))
            && l.contains("json!")
    });
    assert!(
        found.is_empty(),
        "an event built with json! (emit a RunEvent):\n{}",
        found.join("\n")
    );
    // The emitters take a RunEvent: there is no string-kind emit left to call.
    let string_kind = Regex::new(r#"\.emit(_raw)?\(\s*""#).unwrap();
    let string_kinds = lines_where(|f, l| shipped(f, l) && string_kind.is_match(l));
    assert!(string_kinds.is_empty(), "{}", string_kinds.join("\n"));
}

/// The searches above catch the forms they are for (a check that cannot fail is none).
#[test]
fn the_checks_catch_what_they_look_for() {
    let re = type_matching();
    for bad in [
        r#"if line.contains("\"type\":\"run.finished\"") {"#,
        r#"    .starts_with(r#"{"type":"tool.started""#,
        r#"let at = text.find("\"type\": \"turn");"#,
    ] {
        assert!(re.is_match(bad), "{bad}");
    }
    for fine in [
        r#"if line.contains("run.finished") {"#,
        r#"let kind = v["type"].as_str();"#,
        r#"//! `{"type":"turn","index":N}`"#,
    ] {
        assert!(!re.is_match(fine), "{fine}");
    }
}
