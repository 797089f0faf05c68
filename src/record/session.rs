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

/// The claude `subtype` of a transcript `status` (docs/reference/transcript.md):
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
#[path = "session_tests.rs"]
mod tests;
