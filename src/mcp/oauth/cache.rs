//! `--mcp-token-cache FILE`: tokens kept between runs, by server URL, in one JSON file
//! created with mode 0600 (and set to 0600 when rewritten). Without the flag nothing
//! touches the disk. A cache that cannot be read is ignored (a warning); one that cannot
//! be written is a warning too: the run goes on with the token in memory.

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::grants::Token;

/// The token cached for `server`, if any.
pub(crate) fn load(file: &Path, server: &str) -> Option<Token> {
    let text = std::fs::read_to_string(file).ok()?;
    let doc: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            crate::util::output::warn(&format!(
                "--mcp-token-cache {}: not JSON ({e}); ignored",
                file.display()
            ));
            return None;
        }
    };
    let e = doc.get(server)?;
    let access = e.get("access_token")?.as_str()?.to_string();
    let refresh = e
        .get("refresh_token")
        .and_then(Value::as_str)
        .map(str::to_string);
    crate::util::output::add_secret(&access);
    if let Some(r) = &refresh {
        crate::util::output::add_secret(r);
    }
    Some(Token {
        access,
        refresh,
        expires_at: e.get("expires_at").and_then(Value::as_u64),
        scopes: e
            .get("scopes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// Writes `token` for `server`, keeping the other servers' entries.
pub(crate) fn store(file: &Path, server: &str, token: &Token) {
    let mut doc: Map<String, Value> = std::fs::read_to_string(file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    doc.insert(
        server.to_string(),
        json!({"access_token": token.access, "refresh_token": token.refresh,
               "expires_at": token.expires_at, "scopes": token.scopes}),
    );
    if let Err(e) = write_private(file, &Value::Object(doc).to_string()) {
        crate::util::output::warn(&format!(
            "--mcp-token-cache {}: cannot write it: {e}",
            file.display()
        ));
    }
}

/// Replaces `file` with `text`, readable by its owner only.
fn write_private(file: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let tmp = file.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, file)
}
