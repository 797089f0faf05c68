//! Unit tests of the Bash tool.

use std::path::Path;
use std::sync::Arc;

use serde::de::{self, Deserializer, Visitor};

use super::*;

use crate::tools::Category;
use crate::tools::parse_input;
use crate::tools::schema;
use crate::tools::test_support::ctx;
use crate::tools::test_support::{check_input, exec};

fn run_bash(dir: &Path, input: Value) -> ToolResult {
    let c = ctx(dir);
    let tool = Bash::default();
    schema::validate(&tool.input_schema(), &input).unwrap();
    check_input(&tool, &input).unwrap();
    match exec(&tool, &c, &input) {
        Ok(r) => r,
        Err(e) => ToolResult::error(e.message()),
    }
}

/// Field names of a `Deserialize` struct, read from serde itself.
fn struct_fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Introspect<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Introspect<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("introspected"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
            enum identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Introspect(&mut fields));
    fields
}

#[test]
fn schema_and_struct_agree() {
    let schema_v = Bash::default().input_schema();
    let props = schema_v["properties"].as_object().unwrap();
    let mut prop_names: Vec<&str> = props.keys().map(String::as_str).collect();
    let mut fields = struct_fields::<BashInput>().to_vec();
    prop_names.sort();
    fields.sort();
    assert_eq!(prop_names, fields);
    assert!(
        props
            .values()
            .all(|p| p["description"].as_str().is_some_and(|d| !d.is_empty()))
    );
    assert_eq!(schema_v["additionalProperties"], json!(false));

    let full = json!({"command": "true", "timeout": 5});
    schema::validate(&schema_v, &full).unwrap();
    parse_input::<BashInput>(&full).unwrap();
    // Required in the schema = the fields serde cannot do without.
    let mut required: Vec<&str> = schema_v["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut non_optional: Vec<&str> = fields
        .iter()
        .copied()
        .filter(|f| {
            let mut without = full.clone();
            without.as_object_mut().unwrap().remove(*f);
            parse_input::<BashInput>(&without).is_err()
        })
        .collect();
    required.sort();
    non_optional.sort();
    assert_eq!(required, non_optional);
    // Unknown fields are refused by both.
    let extra = json!({"command": "true", "cwd": "/"});
    assert!(schema::validate(&schema_v, &extra).is_err());
    assert!(parse_input::<BashInput>(&extra).is_err());
}

#[test]
fn metadata_flags() {
    assert!(!Bash::default().is_read_only());
    assert!(Bash::default().is_destructive());
    assert!(!Bash::default().is_concurrency_safe());
    assert_eq!(Bash::default().category(), Category::Shell);
}

#[test]
fn validate_input_refuses_bad_input() {
    for (input, needle) in [
        (json!({"command": "  "}), "empty"),
        (json!({"command": "a\u{0}b"}), "NUL"),
        (json!({"command": "ls", "timeout": 0}), "between 1 and 600"),
        (
            json!({"command": "ls", "timeout": 601}),
            "between 1 and 600",
        ),
        (json!({"command": "ls", "timeout": "5"}), "invalid input"),
        (json!({}), "command"),
    ] {
        let e = check_input(&Bash::default(), &input).unwrap_err();
        assert!(e.message().contains(needle), "{input}: {e}");
    }
    assert_eq!(
        check_input(&Bash::default(), &json!({"command": "ls", "timeout": 600})),
        Ok(())
    );
}

#[test]
fn result_format_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_bash(dir.path(), json!({"command": "echo hi"}));
    assert!(!r.is_error);
    assert_eq!(r.content, "<output>hi</output>\n<exit_code>0</exit_code>");
    assert_eq!(r.metadata["exit_code"], json!(0));
    assert_eq!(r.metadata["timed_out"], json!(false));
    assert_eq!(r.metadata["output_bytes"], json!(3));
    assert_eq!(r.metadata["full_output_path"], Value::Null);
    assert!(r.metadata["duration_ms"].is_u64());
}

#[test]
fn nonzero_exit_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_bash(dir.path(), json!({"command": "echo failing >&2; exit 3"}));
    assert!(!r.is_error);
    assert_eq!(
        r.content,
        "<output>failing</output>\n<exit_code>3</exit_code>"
    );
    assert_eq!(r.metadata["exit_code"], json!(3));
}

#[test]
fn background_sleep_returns_promptly() {
    let dir = tempfile::tempdir().unwrap();
    // A hang would show as timed_out (the test still ends), not as a slow pass.
    let r = run_bash(
        dir.path(),
        json!({"command": "sleep 30 & echo started", "timeout": 600}),
    );
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(
        r.content,
        "<output>started</output>\n<exit_code>0</exit_code>"
    );
}

#[test]
fn timeout_is_an_error_with_the_output_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_bash(
        dir.path(),
        json!({"command": "echo before; sleep 300", "timeout": 1}),
    );
    assert!(r.is_error);
    assert!(
        r.content.starts_with("<output>before</output>\n"),
        "{}",
        r.content
    );
    assert!(
        r.content.contains("timed out after 1 second"),
        "{}",
        r.content
    );
    assert_eq!(r.metadata["timed_out"], json!(true));
    assert_eq!(r.metadata["exit_code"], Value::Null);
}

#[test]
fn huge_output_is_about_ten_thousand_chars_with_the_full_file_saved() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_bash(
        dir.path(),
        json!({"command": "yes | head -c 100000000", "timeout": 600}),
    );
    assert!(!r.is_error);
    let chars = r.content.chars().count();
    assert!((10_000..10_600).contains(&chars), "{chars}");
    let path = r.metadata["full_output_path"].as_str().unwrap();
    assert!(r.content.contains(path));
    assert_eq!(std::fs::metadata(path).unwrap().len(), 100_000_000);
    assert_eq!(r.metadata["output_bytes"], json!(100_000_000));
    assert_eq!(r.metadata["truncated"], json!(true));
}

#[test]
fn secrets_are_not_in_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    let parent = vec![
        (
            "PATH".to_string(),
            std::env::var("PATH").unwrap_or_default(),
        ),
        ("FOO_API_KEY".to_string(), "sk-should-not-leak".to_string()),
        ("VISIBLE".to_string(), "yes".to_string()),
    ];
    c.child_env = Arc::new(crate::util::secrets::scrubbed_env(parent.into_iter(), &[]));
    let r = exec(&Bash::default(), &c, &json!({"command": "env"})).unwrap();
    assert!(r.content.contains("VISIBLE=yes"), "{}", r.content);
    assert!(!r.content.contains("FOO_API_KEY"), "{}", r.content);
    assert!(!r.content.contains("sk-should-not-leak"));
}

#[test]
fn streams_interleave_in_order_and_stdin_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_bash(
        dir.path(),
        json!({"command": "echo a; echo b >&2; echo c", "timeout": 600}),
    );
    assert_eq!(
        r.content,
        "<output>a\nb\nc</output>\n<exit_code>0</exit_code>"
    );
    // `cat` with stdin closed reads end of file at once; a hang would be a timeout.
    let r = run_bash(dir.path(), json!({"command": "cat", "timeout": 600}));
    assert_eq!(r.content, "<output></output>\n<exit_code>0</exit_code>");
}

#[test]
fn runs_in_the_workspace_root() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_bash(dir.path(), json!({"command": "pwd -P"}));
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        r.content,
        format!(
            "<output>{}</output>\n<exit_code>0</exit_code>",
            root.display()
        )
    );
}

#[test]
fn killed_by_a_signal_reports_the_shell_status() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_bash(dir.path(), json!({"command": "kill -KILL $$"}));
    assert!(!r.is_error);
    assert!(
        r.content.contains("<exit_code>137</exit_code>"),
        "{}",
        r.content
    );
    assert!(r.content.contains("signal 9"), "{}", r.content);
}

#[test]
fn missing_workspace_is_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = ctx(dir.path());
    c.workspace = dir.path().join("gone");
    let e = exec(&Bash::default(), &c, &json!({"command": "true"})).unwrap_err();
    assert!(matches!(e, ToolError::Fatal(_)), "{e:?}");
}
