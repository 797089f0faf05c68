//! A run's identity and its claude-compatible result fields: `session_id`, a random UUID
//! (version 4) per run, and `subtype`, the run's status in the terms of
//! `claude -p --output-format json`, so that jq scripts written for it keep working.

/// A new random UUID v4, e.g. `0b8f6c1e-3d2a-4c5b-9e7f-1a2b3c4d5e6f`.
pub(crate) fn new_session_id() -> String {
    format_uuid_v4(random_bytes())
}

/// 16 random bytes from the OS (the `getrandom` crate: `getrandom(2)` on Linux, falling
/// back to `/dev/urandom` where the call is missing). Should that fail, the time and pid
/// keep ids distinct, which is all a session id needs.
fn random_bytes() -> [u8; 16] {
    let mut buf = [0u8; 16];
    if getrandom::fill(&mut buf).is_ok() {
        return buf;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mixed = nanos ^ (u128::from(std::process::id()) << 96);
    mixed.to_le_bytes()
}

/// RFC 9562 layout: version 4 in the high nibble of byte 6, variant `10` in byte 8.
fn format_uuid_v4(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The claude `subtype` of a transcript `status` (README "The JSON transcript"):
/// claude has one success subtype and an error subtype per limit; every other way a run
/// can fail is `error_during_execution`, as claude reports API errors and interruptions.
pub(crate) fn subtype(status: &str) -> &'static str {
    match status {
        "success" => "success",
        "max_turns" => "error_max_turns",
        // Both budgets (--max-cost-usd, --max-tool-calls); `error.message` says which.
        "budget" => "error_max_budget_usd",
        "schema_failed" => "error_max_structured_output_retries",
        _ => "error_during_execution",
    }
}

#[cfg(test)]
mod tests {
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
}
