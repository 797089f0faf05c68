//! Claude in Microsoft Foundry: the Messages API itself at
//! `https://{resource}.services.ai.azure.com/anthropic/v1/messages`, authenticated as the
//! SDK's `AnthropicFoundry` does it: a Foundry API key in both `x-api-key` and `api-key`,
//! or an Entra ID token (obtained beforehand, e.g. by `azure/login` with OIDC) as
//! `authorization: Bearer`. Everything else is the Anthropic wire's.

use std::io::BufRead;

use super::TurnRequest;
use super::anthropic::AnthropicWire;
use super::http::{Body, HttpConfig, TurnResult, Wire};
use super::retry::OnNotice;

/// The base URL of a Foundry resource, as the SDK builds it.
pub(crate) fn base_url(resource: &str) -> String {
    format!("https://{resource}.services.ai.azure.com/anthropic")
}

/// The Foundry wire.
#[derive(Default)]
pub(crate) struct FoundryWire {
    messages: AnthropicWire,
}

impl Wire for FoundryWire {
    fn path(&self) -> &'static str {
        self.messages.path()
    }

    fn request_id_header(&self) -> &'static str {
        self.messages.request_id_header()
    }

    /// The Anthropic headers: `authorization: Bearer` with an Entra ID token, else the
    /// key as `x-api-key` and again as `api-key`.
    fn headers(&self, config: &HttpConfig) -> Vec<(&'static str, String)> {
        let mut headers = self.messages.headers(config);
        if config.gateway.auth_token.is_none() && !config.api_key.is_empty() {
            headers.insert(1, ("api-key", config.api_key.clone()));
        }
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

    fn parse_error_body(&self, raw: &[u8]) -> Option<(String, String)> {
        self.messages.parse_error_body(raw).or_else(|| {
            // Azure's own errors: {"error": {"code", "message"}}.
            let v: serde_json::Value = serde_json::from_slice(raw).ok()?;
            let message = v["error"]["message"].as_str()?.to_string();
            let code = v["error"]["code"].as_str().unwrap_or("foundry_error");
            Some((code.to_string(), message))
        })
    }

    fn decode(&self, reader: &mut dyn BufRead, on_notice: &mut OnNotice<'_>) -> TurnResult {
        self.messages.decode(reader, on_notice)
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
