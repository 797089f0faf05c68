//! Tool names the model sees: `mcp__<server>__<tool>`, made to fit the APIs' rule
//! (`[A-Za-z0-9_-]{1,64}`) deterministically, and the rule patterns (`mcp__server`,
//! `mcp__server__*`, `mcp__server__tool`) that permission rules and hooks accept, which
//! name a server exactly (`mcp__s` is not a prefix of `s_`'s tools).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::util::sync::Locked;

/// Longest tool name the APIs accept (Anthropic and OpenAI alike).
pub(crate) const MAX_TOOL_NAME_CHARS: usize = 64;
/// Hex digits of the hash that ends a shortened name: 32 bits, so two long names of one
/// server collide with odds of one in four billion (a collision is refused, not merged).
const HASH_HEX_DIGITS: usize = 8;

/// The prefix every MCP tool name starts with.
pub(crate) const PREFIX: &str = "mcp__";

/// The full name, shortened (a readable start, `_`, and a hash of the full name) when it
/// is longer than the API allows or holds characters the API refuses.
pub(crate) fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("{PREFIX}{server}__{tool}");
    let clean: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean == full && full.len() <= MAX_TOOL_NAME_CHARS {
        return full;
    }
    let keep = MAX_TOOL_NAME_CHARS - HASH_HEX_DIGITS - 1;
    let head: String = clean.chars().take(keep).collect();
    format!("{head}_{:08x}", fnv1a(full.as_bytes()))
}

/// FNV-1a, 32 bits: stable across versions and platforms (std's hasher is not).
fn fnv1a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The server (and the server's own name for the tool) of each MCP tool name the run
/// exposes, recorded as servers list their tools. Policy (rules, hook matchers) sees only
/// a tool's name, and the name alone can be read two ways when a server name ends in `_`:
/// `mcp__s___w` is the tool `w` of `s_` or the tool `_w` of `s`; and a call still running
/// at a way out is recorded from its name alone. Names are unique within a run (a clash
/// is left out).
static SERVERS: Mutex<BTreeMap<String, (String, String)>> = Mutex::new(BTreeMap::new());

/// Records that `exposed` is the tool `tool` of `server` (a later run in the process
/// overwrites).
pub(crate) fn record_server(exposed: &str, server: &str, tool: &str) {
    let mut map = SERVERS.locked();
    map.insert(exposed.to_string(), (server.to_string(), tool.to_string()));
}

/// `(server, tool)` of an exposed name a server listed: what a call's `metadata` says.
pub(crate) fn origin(exposed: &str) -> Option<(String, String)> {
    let map = SERVERS.locked();
    map.get(exposed).cloned()
}

/// The server of an exposed name: as recorded, else (a name no server listed) the part
/// before the first `__` after the prefix.
fn server_of(exposed: &str) -> Option<String> {
    if let Some((server, _)) = origin(exposed) {
        return Some(server);
    }
    let rest = exposed.strip_prefix(PREFIX)?;
    rest.split_once("__").map(|(s, _)| s.to_string())
}

/// Whether a rule or matcher pattern names the MCP tool the model knows as `exposed`
/// (see `pattern_names`), its server looked up among the recorded ones.
pub(crate) fn pattern_matches(pattern: &str, exposed: &str) -> bool {
    if !pattern.starts_with(PREFIX) {
        return false;
    }
    match server_of(exposed) {
        Some(server) => pattern_names(pattern, &server, exposed),
        None => pattern == exposed,
    }
}

/// Whether a pattern names `exposed`, a tool of `server`: `mcp__server` and
/// `mcp__server__*` name every tool of the server (its name matched exactly, never as a
/// prefix: `mcp__s` does not cover `s_`), `mcp__server__tool` one tool, by the name the
/// model sees or by the server's own name for it (shortened the same way, so a rule may
/// quote a long name in full).
pub(crate) fn pattern_names(pattern: &str, server: &str, exposed: &str) -> bool {
    let Some(rest) = pattern.strip_prefix(PREFIX) else {
        return false;
    };
    if pattern == exposed || rest == server {
        return true;
    }
    match rest.strip_prefix(server).and_then(|r| r.strip_prefix("__")) {
        Some("*") => true,
        Some(tool) => tool_name(server, tool) == exposed,
        None => false,
    }
}

/// Whether `pattern` has the shape of an MCP rule name (for validating settings).
pub(crate) fn is_mcp_pattern(pattern: &str) -> bool {
    pattern
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.split('_').next())
        .is_some_and(|s| !s.is_empty())
}

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;
