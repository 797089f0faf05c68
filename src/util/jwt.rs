//! Signed JSON Web Tokens (RFC 7519, compact form) for credential exchanges that need no
//! person: Google service-account assertions (RS256) and OAuth `private_key_jwt` client
//! authentication (RS256, ES256). Keys are PEM text; signing is `ring`'s, already compiled
//! for rustls. Base64 in both alphabets lives here too, so one module owns the encodings.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, RSA_PKCS1_SHA256, RsaKeyPair,
};

/// The signature algorithms a JWT here may carry (the JOSE `alg` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Alg {
    Rs256,
    Es256,
}

impl Alg {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Alg::Rs256 => "RS256",
            Alg::Es256 => "ES256",
        }
    }

    /// `RS256`/`ES256` as written in a config file; anything else is refused by name.
    pub(crate) fn parse(name: &str) -> Result<Alg, String> {
        match name {
            "RS256" => Ok(Alg::Rs256),
            "ES256" => Ok(Alg::Es256),
            other => Err(format!(
                "unsupported signing algorithm {other:?} (supported: RS256, ES256)"
            )),
        }
    }
}

/// Base64url without padding (JOSE's alphabet).
pub(crate) fn base64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Standard base64 with padding (HTTP Basic, AWS event-stream payloads).
pub(crate) fn base64_std(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes standard base64 (with or without padding).
pub(crate) fn base64_std_decode(text: &str) -> Result<Vec<u8>, String> {
    let trimmed = text.trim().trim_end_matches('=');
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(trimmed)
        .map_err(|e| format!("bad base64: {e}"))
}

/// Decodes base64url (with or without padding).
pub(crate) fn base64url_decode(text: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD
        .decode(text.trim().trim_end_matches('='))
        .map_err(|e| format!("bad base64url: {e}"))
}

/// A private key parsed once, to sign many tokens (a long run refreshes its credentials).
pub(crate) struct SigningKey {
    alg: Alg,
    key: Key,
}

enum Key {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair),
}

impl std::fmt::Debug for SigningKey {
    // Never the key material.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.alg.as_str())
    }
}

impl SigningKey {
    /// Parses a PEM private key for `alg`: PKCS#8 (`BEGIN PRIVATE KEY`, what Google's
    /// service-account files hold) for both; PKCS#1 (`BEGIN RSA PRIVATE KEY`) for RS256.
    /// The error names the problem, never the key.
    pub(crate) fn from_pem(pem: &str, alg: Alg) -> Result<SigningKey, String> {
        let (label, der) = pem_block(pem)?;
        let key = match (alg, label.as_str()) {
            (Alg::Rs256, "PRIVATE KEY") => RsaKeyPair::from_pkcs8(&der)
                .map(Key::Rsa)
                .map_err(|e| format!("not an RSA PKCS#8 private key ({e})"))?,
            (Alg::Rs256, "RSA PRIVATE KEY") => RsaKeyPair::from_der(&der)
                .map(Key::Rsa)
                .map_err(|e| format!("not an RSA PKCS#1 private key ({e})"))?,
            (Alg::Es256, "PRIVATE KEY") => EcdsaKeyPair::from_pkcs8(
                &ECDSA_P256_SHA256_FIXED_SIGNING,
                &der,
                &SystemRandom::new(),
            )
            .map(Key::Ec)
            .map_err(|e| format!("not a P-256 PKCS#8 private key ({e})"))?,
            (Alg::Es256, "EC PRIVATE KEY") => {
                return Err(
                    "an ES256 key must be PKCS#8 (`BEGIN PRIVATE KEY`); convert it with \
                            `openssl pkcs8 -topk8 -nocrypt -in key.pem`"
                        .into(),
                );
            }
            (_, other) => {
                return Err(format!(
                    "PEM block {other:?} is not a private key for {}",
                    alg.as_str()
                ));
            }
        };
        Ok(SigningKey { alg, key })
    }

    pub(crate) fn alg(&self) -> Alg {
        self.alg
    }

    /// The compact JWT `header.claims.signature`; `kid` goes in the header when given.
    pub(crate) fn sign(
        &self,
        kid: Option<&str>,
        claims: &serde_json::Value,
    ) -> Result<String, String> {
        let mut header = serde_json::json!({"alg": self.alg.as_str(), "typ": "JWT"});
        if let Some(kid) = kid {
            header["kid"] = serde_json::Value::String(kid.to_owned());
        }
        let signing_input = format!(
            "{}.{}",
            base64url(header.to_string().as_bytes()),
            base64url(claims.to_string().as_bytes())
        );
        let rng = SystemRandom::new();
        let signature = match &self.key {
            Key::Rsa(pair) => {
                let mut sig = vec![0; pair.public().modulus_len()];
                pair.sign(&RSA_PKCS1_SHA256, &rng, signing_input.as_bytes(), &mut sig)
                    .map_err(|_| "RSA signing failed".to_owned())?;
                sig
            }
            Key::Ec(pair) => pair
                .sign(&rng, signing_input.as_bytes())
                .map_err(|_| "ECDSA signing failed".to_owned())?
                .as_ref()
                .to_vec(),
        };
        Ok(format!("{signing_input}.{}", base64url(&signature)))
    }
}

/// The first PEM block's label and DER bytes. JSON key files carry `\n` escapes that
/// serde has already turned into newlines; stray `\r` and indentation are tolerated.
fn pem_block(pem: &str) -> Result<(String, Vec<u8>), String> {
    let begin = pem
        .find("-----BEGIN ")
        .ok_or("no PEM block (`-----BEGIN …-----`) in the key")?;
    let rest = &pem[begin + "-----BEGIN ".len()..];
    let label_end = rest
        .find("-----")
        .ok_or("a PEM BEGIN line without its closing dashes")?;
    let label = rest[..label_end].to_owned();
    let body = &rest[label_end + 5..];
    let end_marker = format!("-----END {label}-----");
    let end = body
        .find(&end_marker)
        .ok_or_else(|| format!("PEM block {label:?} has no END line"))?;
    let b64: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
    let der = base64_std_decode(&b64).map_err(|e| format!("PEM block {label:?}: {e}"))?;
    Ok((label, der))
}

#[cfg(test)]
#[path = "jwt_tests.rs"]
mod tests;
