//! What the forge mocks (`github`, `gitlab`) share: reading their route tables
//! (`tests/fixtures/*/routes.json`) and checking a request against a route's template and keys.

use serde_json::Value;
use std::collections::HashMap;

pub(crate) fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The template's `{name}` segments bound to the path's, if it matches.
pub(crate) fn matches(template: &str, path: &str) -> Option<HashMap<String, String>> {
    let t: Vec<&str> = template.split('/').collect();
    let p: Vec<&str> = path.split('/').collect();
    if t.len() != p.len() {
        return None;
    }
    let mut vars = HashMap::new();
    for (a, b) in t.iter().zip(&p) {
        if let Some(name) = a.strip_prefix('{').and_then(|n| n.strip_suffix('}')) {
            if b.is_empty() {
                return None;
            }
            vars.insert(name.to_string(), b.to_string());
        } else if a != b {
            return None;
        }
    }
    Some(vars)
}

pub(crate) fn keys_of(
    obj: &serde_json::Map<String, Value>,
    required: &[String],
    keys: &[String],
    what: &str,
) -> Vec<String> {
    let mut v = Vec::new();
    for r in required {
        if !obj.contains_key(r) {
            v.push(format!("{what} lacks {r:?}"));
        }
    }
    for k in obj.keys() {
        if !keys.contains(k) {
            v.push(format!("{what} has {k:?}, which the table does not list"));
        }
    }
    v
}
