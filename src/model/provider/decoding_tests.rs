//! Unit tests of `decoding.rs`.

use super::*;

#[test]
fn numbers_round_trip_exactly_and_wide_integers_are_refused() {
    // One ULP off without serde_json's float_roundtrip.
    let input = parse_tool_input(
        r#"{"x": 923.5730667252267, "y": [1e300, -0.0]}"#,
        &Value::Null,
    )
    .unwrap();
    assert_eq!(
        input.to_string(),
        r#"{"x":923.5730667252267,"y":[1e+300,-0.0]}"#
    );
    // The 64-bit extremes are exact.
    let input = parse_tool_input(
        r#"{"a": 18446744073709551615, "b": -9223372036854775808}"#,
        &Value::Null,
    )
    .unwrap();
    assert_eq!(
        input.to_string(),
        r#"{"a":18446744073709551615,"b":-9223372036854775808}"#
    );
    // One past u64::MAX, and below i64::MIN, would become floats.
    for wide in ["18446744073709551616", "-9223372036854775809"] {
        let err = parse_tool_input(
            &format!(r#"{{"s": "{wide} \" 1", "n": {wide}}}"#),
            &Value::Null,
        )
        .unwrap_err();
        assert!(err.contains(&format!("the integer {wide}")), "{err}");
        assert!(err.contains("as a string"), "{err}");
    }
    // Inside strings, digits are text.
    assert!(parse_tool_input(r#"{"s": "18446744073709551616"}"#, &Value::Null).is_ok());
}
