//! Unit tests of `outcome.rs`.

use super::*;

#[test]
fn exit_codes() {
    assert_eq!(Status::Success.exit_code(), 0);
    assert_eq!(Status::Refusal.exit_code(), 1);
    assert_eq!(Status::MaxTurns.exit_code(), 3);
    assert_eq!(Status::SchemaFailed.exit_code(), 6);
    assert_eq!(Status::Timeout.exit_code(), 124);
    assert_eq!(Status::Interrupted.exit_code(), 130);
}

/// The transcript's strings, each kind's status: what README and scripts rely on.
#[test]
fn every_kind_keeps_its_name_and_status() {
    use ErrorKind::*;
    let table = [
        (ApiError, "api_error", Status::Error),
        (StreamError, "stream_error", Status::Error),
        (TransportError, "transport_error", Status::Error),
        (CassetteError, "cassette_error", Status::Error),
        (ToolFatal, "tool_fatal", Status::Error),
        (Protocol, "protocol", Status::Error),
        (StopReason, "stop_reason", Status::Error),
        (Internal, "internal", Status::Error),
        (Refusal, "refusal", Status::Refusal),
        (MaxTurns, "max_turns", Status::MaxTurns),
        (Budget, "budget", Status::Budget),
        (VerifyFailed, "verify_failed", Status::VerifyFailed),
        (Denied, "denied", Status::Denied),
        (Timeout, "timeout", Status::Timeout),
        (Interrupted, "interrupted", Status::Interrupted),
        (ContextExceeded, "context_exceeded", Status::ContextExceeded),
        (MaxTokens, "max_tokens", Status::MaxTokens),
        (SchemaFailed, "schema_failed", Status::SchemaFailed),
    ];
    for (kind, name, status) in table {
        assert_eq!(serde_json::to_value(kind).unwrap(), name);
        assert_eq!(kind.status(), status, "{name}");
        let o = Outcome::fail(kind, "m");
        assert_eq!(o.status, status);
    }
}
