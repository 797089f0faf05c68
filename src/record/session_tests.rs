//! Unit tests of `session.rs`.

use super::*;

fn is_uuid_v4(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.iter().map(|g| g.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && s.chars()
            .all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        && groups[2].starts_with('4')
        && matches!(groups[3].chars().next(), Some('8' | '9' | 'a' | 'b'))
}

#[test]
fn ids_are_v4_uuids_and_differ() {
    let ids: Vec<String> = (0..50).map(|_| new_session_id()).collect();
    for id in &ids {
        assert!(is_uuid_v4(id), "{id}");
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len());
}

#[test]
fn version_and_variant_bits_are_set() {
    assert_eq!(
        format_uuid_v4([0xff; 16]),
        "ffffffff-ffff-4fff-bfff-ffffffffffff"
    );
    assert_eq!(
        format_uuid_v4([0; 16]),
        "00000000-0000-4000-8000-000000000000"
    );
}

#[test]
fn subtypes_follow_claude() {
    for (status, sub) in [
        ("success", "success"),
        ("max_turns", "error_max_turns"),
        ("budget", "error_max_budget_usd"),
        ("schema_failed", "error_max_structured_output_retries"),
        ("error", "error_during_execution"),
        ("refusal", "error_during_execution"),
        ("verify_failed", "error_during_execution"),
        ("denied", "error_during_execution"),
        ("timeout", "error_during_execution"),
        ("interrupted", "error_during_execution"),
        ("running", "error_during_execution"),
    ] {
        assert_eq!(subtype(status), sub, "{status}");
    }
}
