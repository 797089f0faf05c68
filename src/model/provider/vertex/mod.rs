//! Claude on Google Vertex AI: `POST {base}/projects/{p}/locations/{r}/publishers/
//! anthropic/models/{m}:streamRawPredict` with the Messages body (the model in the URL,
//! `anthropic_version` in the body, `stream` kept, betas in the `anthropic-beta` header,
//! as the SDK's `AnthropicVertex` sends it) and a Bearer token from Application Default
//! Credentials (`adc`). The answer is the Messages SSE: the Anthropic decoder reads it.

pub(crate) mod adc;

use std::io::BufRead;
use std::sync::Mutex;

use super::TurnRequest;
use super::anthropic::{AnthropicWire, BodyShape};
use super::http::{Body, HttpConfig, Outgoing, TurnResult, Wire};
use super::retry::OnNotice;
use crate::util::sync::Locked;

/// The `anthropic_version` of Vertex AI's body: the value Google documents; the SDK
/// 2.15 sends its own API version (`2026-10-21`) instead (see the Bedrock note in
/// DESIGN.md).
pub(crate) const VERTEX_ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// Claude Sonnet 4.5 as Vertex AI names it.
pub(crate) const DEFAULT_VERTEX_MODEL: &str = "claude-sonnet-4-5@20250929";

/// The API base of a region, as the SDK picks it.
pub(crate) fn base_url(region: &str) -> String {
    match region {
        "global" => "https://aiplatform.googleapis.com/v1".into(),
        "us" => "https://aiplatform.us.rep.googleapis.com/v1".into(),
        "eu" => "https://aiplatform.eu.rep.googleapis.com/v1".into(),
        r => format!("https://{r}-aiplatform.googleapis.com/v1"),
    }
}

enum Auth {
    Adc(Box<Mutex<adc::Adc>>),
    /// None: the wire decodes a cassette only.
    None,
}

/// The Vertex AI wire.
pub(crate) struct VertexWire {
    messages: AnthropicWire,
    project: String,
    region: String,
    auth: Auth,
}

impl VertexWire {
    fn with(project: &str, region: &str, auth: Auth) -> Self {
        VertexWire {
            messages: AnthropicWire::shaped(BodyShape {
                version: Some(VERTEX_ANTHROPIC_VERSION),
                no_model: true,
                no_stream: false,
                betas_in_body: false,
            }),
            project: project.to_string(),
            region: region.to_string(),
            auth,
        }
    }

    /// The wire without credentials, for decoding recorded turns.
    pub(crate) fn decoder() -> Self {
        VertexWire::with("", "", Auth::None)
    }

    /// The wire for live requests: ADC resolved and a first token fetched (so a bad
    /// credential is reported before the run starts). `project`: the configured one,
    /// else the credentials file's.
    pub(crate) fn connect(
        project: Option<&str>,
        region: &str,
        env: adc::GoogleEnv,
    ) -> Result<Self, String> {
        let mut adc = adc::Adc::resolve(&env)?;
        let project = project
            .map(String::from)
            .or_else(|| adc.project.clone())
            .ok_or(
                "--provider vertex needs a project: set ANTHROPIC_VERTEX_PROJECT_ID (or use \
                 credentials that name one)",
            )?;
        adc.token(unix_now())?;
        Ok(VertexWire::with(
            &project,
            region,
            Auth::Adc(Box::new(Mutex::new(adc))),
        ))
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A path segment as the SDK quotes it (RFC 3986 `pchar`s kept).
fn segment(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for &b in value.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path of a streamed call to `model` (the last segment's `;` escaped, as the SDK
/// does, so a server cutting parameters off a segment cannot cut the method).
pub(crate) fn model_path(project: &str, region: &str, model: &str) -> String {
    format!(
        "/projects/{}/locations/{}/publishers/anthropic/models/{}",
        segment(project),
        segment(region),
        format!("{}:streamRawPredict", segment(model)).replace(';', "%3B")
    )
}

impl Wire for VertexWire {
    fn path(&self) -> &'static str {
        "/projects"
    }

    fn url(&self, base_url: &str, model: &str) -> String {
        format!(
            "{}{}",
            base_url.trim_end_matches('/'),
            model_path(&self.project, &self.region, model)
        )
    }

    fn request_id_header(&self) -> &'static str {
        "x-request-id"
    }

    fn headers(&self, config: &HttpConfig) -> Vec<(&'static str, String)> {
        self.messages.cloud_headers(config)
    }

    fn body<'a>(
        &self,
        request: &TurnRequest<'a>,
        config: &HttpConfig,
        out: &mut Body<'a>,
    ) -> serde_json::Result<()> {
        self.messages.body(request, config, out)
    }

    fn authorize(&self, _request: &Outgoing<'_>) -> Result<Vec<(String, String)>, String> {
        match &self.auth {
            Auth::Adc(adc) => {
                let mut adc = adc.locked();
                let token = adc.token(unix_now())?;
                Ok(vec![("authorization".into(), format!("Bearer {token}"))])
            }
            Auth::None => Err("vertex: no credentials (a cassette's wire)".into()),
        }
    }

    fn secrets(&self) -> Vec<String> {
        match &self.auth {
            Auth::Adc(adc) => adc.locked().secrets(),
            Auth::None => Vec::new(),
        }
    }

    /// Google's error body: `{"error": {"code", "message", "status"}}`, or a list of
    /// them; an Anthropic error body passed through.
    fn parse_error_body(&self, raw: &[u8]) -> Option<(String, String)> {
        let v: serde_json::Value = serde_json::from_slice(raw).ok()?;
        let e = if v.is_array() {
            &v[0]["error"]
        } else {
            &v["error"]
        };
        let message = e["message"].as_str()?.to_string();
        let kind = e["type"]
            .as_str()
            .or_else(|| e["status"].as_str())
            .unwrap_or("vertex_error")
            .to_string();
        Some((kind, message))
    }

    fn decode(&self, reader: &mut dyn BufRead, on_notice: &mut OnNotice<'_>) -> TurnResult {
        self.messages.decode(reader, on_notice)
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
