//! Unit tests of `mod.rs`.

use super::*;

#[test]
fn unknown_usage_is_null_and_stays_unknown_in_sums() {
    let known = Usage {
        input_tokens: 3,
        output_tokens: 4,
        ..Usage::default()
    };
    assert_eq!(
        serde_json::to_value(known).unwrap(),
        serde_json::json!({"input_tokens": 3, "output_tokens": 4,
                "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
    );
    let mut sum = known;
    sum.add(&Usage {
        unknown: true,
        ..Usage::default()
    });
    let v = serde_json::to_value(sum).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"input_tokens": null, "output_tokens": null,
                "cache_creation_input_tokens": null, "cache_read_input_tokens": null})
    );
    assert!(serde_json::from_value::<Usage>(v).unwrap().unknown);
    let back: Usage = serde_json::from_value(serde_json::to_value(known).unwrap()).unwrap();
    assert_eq!(back, known);
}
