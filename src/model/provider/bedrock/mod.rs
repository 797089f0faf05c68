//! Claude on Amazon Bedrock: `POST {base}/model/{id}/invoke-with-response-stream` with
//! the Messages body (the model and `stream` in the URL, `anthropic_version` and
//! `anthropic_beta` in the body, as the official SDK's `AnthropicBedrock` sends it),
//! signed with SigV4 (`sigv4`) using the credentials of the AWS chain (`credentials`), or
//! a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`) as a Bearer token, unsigned. The answer
//! is AWS event-stream framing (`eventstream`), read as the Anthropic SSE, so the
//! Anthropic decoder decodes it and cassettes hold it as SSE.

pub(crate) mod credentials;
pub(crate) mod eventstream;
pub(crate) mod sigv4;

use std::io::{BufRead, Read};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use super::TurnRequest;
use super::anthropic::{AnthropicWire, BodyShape};
use super::http::{Body, HttpConfig, Outgoing, TurnResult, Wire};
use super::retry::OnNotice;
use crate::util::sync::Locked;

/// The `anthropic_version` of Bedrock's Messages body. AWS documents this value (and
/// validates it); the SDK 2.15 sends its own API version (`2026-10-21`) there instead,
/// which Bedrock may refuse on models that predate it. The documented one it is.
pub(crate) const BEDROCK_ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";

/// The model ids of Bedrock: Claude Sonnet 4.5 through the global inference profile
/// (served from every commercial region).
pub(crate) const DEFAULT_BEDROCK_MODEL: &str = "global.anthropic.claude-sonnet-4-5-20250929-v1:0";

/// How requests are authorized.
enum Auth {
    /// SigV4 with the chain's credentials, refreshed as they near expiry.
    SigV4(Mutex<credentials::Chain>),
    /// A Bedrock API key.
    Bearer(String),
    /// None: the wire decodes a cassette only.
    None,
}

/// The Bedrock Runtime wire.
pub(crate) struct BedrockWire {
    messages: AnthropicWire,
    region: String,
    auth: Auth,
}

impl BedrockWire {
    fn with(region: &str, auth: Auth) -> Self {
        BedrockWire {
            messages: AnthropicWire::shaped(BodyShape {
                version: Some(BEDROCK_ANTHROPIC_VERSION),
                no_model: true,
                no_stream: true,
                betas_in_body: true,
            }),
            region: region.to_string(),
            auth,
        }
    }

    /// The wire without credentials, for decoding recorded turns.
    pub(crate) fn decoder() -> Self {
        BedrockWire::with("", Auth::None)
    }

    /// The wire for live requests: `AWS_BEARER_TOKEN_BEDROCK` if set, else the first
    /// source of the AWS credential chain (its error names every source tried).
    pub(crate) fn connect(region: &str, env: credentials::AwsEnv) -> Result<Self, String> {
        if let Some(token) = env
            .get("AWS_BEARER_TOKEN_BEDROCK")
            .filter(|t| !t.is_empty())
        {
            return Ok(BedrockWire::with(region, Auth::Bearer(token.clone())));
        }
        let chain = credentials::Chain::resolve(env, region, unix_now())?;
        Ok(BedrockWire::with(region, Auth::SigV4(Mutex::new(chain))))
    }
}

/// The URL path of a model: escaped as the SDK does (`urllib.parse.quote(model,
/// safe=":;")`), so an ARN's `/` is `%2F` and an inference profile's `:` stays.
pub(crate) fn model_path(model: &str) -> String {
    let mut out = String::with_capacity(model.len());
    for &b in model.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~:;".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    format!("/model/{out}/invoke-with-response-stream")
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Wire for BedrockWire {
    fn path(&self) -> &'static str {
        "/model"
    }

    fn url(&self, base_url: &str, model: &str) -> String {
        format!("{}{}", base_url.trim_end_matches('/'), model_path(model))
    }

    fn request_id_header(&self) -> &'static str {
        "x-amzn-requestid"
    }

    fn headers(&self, config: &HttpConfig) -> Vec<(&'static str, String)> {
        let mut headers = self.messages.cloud_headers(config);
        headers.push(("accept", "application/json".to_string()));
        headers
    }

    fn body<'a>(
        &self,
        request: &TurnRequest<'a>,
        config: &HttpConfig,
        out: &mut Body<'a>,
    ) -> serde_json::Result<()> {
        self.messages.body(request, config, out)
    }

    fn authorize(&self, request: &Outgoing<'_>) -> Result<Vec<(String, String)>, String> {
        let chain = match &self.auth {
            Auth::Bearer(token) => {
                return Ok(vec![("authorization".into(), format!("Bearer {token}"))]);
            }
            Auth::None => return Err("bedrock: no credentials (a cassette's wire)".into()),
            Auth::SigV4(chain) => chain,
        };
        let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
        let mut reader = request.body.reader();
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = reader.read(&mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            digest.update(&buf[..n]);
        }
        let hash: String = digest
            .finish()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let now = unix_now();
        let mut chain = chain.locked();
        let creds = chain.current(now)?;
        Ok(sigv4::sign(
            creds,
            &sigv4::SignInput {
                method: request.method,
                url: request.url,
                headers: request.headers,
                payload_sha256: &hash,
                region: &self.region,
                service: "bedrock",
                time: now,
            },
        ))
    }

    fn secrets(&self) -> Vec<String> {
        match &self.auth {
            Auth::SigV4(chain) => chain.locked().secrets(),
            Auth::Bearer(token) => vec![token.clone()],
            Auth::None => Vec::new(),
        }
    }

    fn stream_content_type(&self) -> &'static str {
        "application/vnd.amazon.eventstream"
    }

    fn unframe<'r>(&self, body: Box<dyn Read + Send + 'r>) -> Box<dyn Read + Send + 'r> {
        Box::new(eventstream::EventStreamReader::new(body))
    }

    /// Bedrock's error body: `{"message": …}` (the type is in a header, the status
    /// decides the retry).
    fn parse_error_body(&self, raw: &[u8]) -> Option<(String, String)> {
        let v: serde_json::Value = serde_json::from_slice(raw).ok()?;
        let message = v
            .get("message")
            .or_else(|| v.get("Message"))?
            .as_str()?
            .to_string();
        let kind = v["__type"].as_str().unwrap_or("bedrock_error");
        let kind = kind.rsplit('#').next().unwrap_or(kind).to_string();
        Some((kind, message))
    }

    fn decode(&self, reader: &mut dyn BufRead, on_notice: &mut OnNotice<'_>) -> TurnResult {
        self.messages.decode(reader, on_notice)
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
