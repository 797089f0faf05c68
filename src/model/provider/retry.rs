//! The retry policy of the HTTP shell: the retry loop, which failures are retried and
//! how long to wait (exponential backoff with jitter, `retry-after`), the ureq agent
//! with its timeouts, and the mapping of transport, HTTP-status and stream failures to
//! `ProviderError`s.

use std::io::{self, Read};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{BeforeFirstEvent, ProviderError, ProviderErrorKind, StreamFailure};
use crate::model::turn::{StreamNotice, Turn};
use crate::util::secrets;

/// First backoff delay; doubled per retry (the SDKs start at 0.5 s too).
pub(crate) const DEFAULT_BACKOFF_BASE: Duration = Duration::from_millis(500);

/// Longest computed backoff: long enough to ride out an overload, short enough for CI.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Longest `retry-after` we honour: a server asking for more is capped rather than
/// allowed to park a CI job for an hour.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// TCP/TLS connect timeout: a host that does not answer in this long is down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Bytes of an error response body read for its message: error JSON is tiny, and a
/// proxy's HTML error page need not be read whole.
const MAX_ERROR_BODY_BYTES: u64 = 64 * 1024;

/// Chars of an error body's message kept: a gateway's 500 may quote the whole request
/// (the system prompt, several times), which helps nobody in a log.
const MAX_ERROR_MESSAGE_CHARS: usize = 2_000;

/// Chars of a non-JSON error body quoted in the error message.
const MAX_QUOTED_ERROR_CHARS: usize = 500;

/// Read buffer over the response body. ureq reads the socket into its own buffer; this
/// one only batches the decoder's reads. It is zeroed before its first use, once per
/// response, so a large one cost a 64 KB memset every turn.
pub(crate) const READ_BUFFER_BYTES: usize = 8 * 1024;

/// ureq's buffers of each connection, made and zeroed when it opens: the input one must
/// hold a whole response head (ureq's limit for it is 64 KB); a body is sent in pieces of
/// the output one. Its default of 128 KB each was a quarter of a megabyte of every run's
/// memory.
const CONNECTION_BUFFER_BYTES: usize = 64 * 1024;

/// Default idle timeout (SPEC §3.1): a stream silent this long counts as dropped.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Default `--max-retries` (SPEC §2).
pub(crate) const DEFAULT_MAX_RETRIES: u32 = 4;

/// The status Anthropic answers with when it is overloaded.
const OVERLOADED_STATUS: u16 = 529;

/// The error type of an overload, in an error body or a stream's `error` event.
const OVERLOADED_ERROR_TYPE: &str = "overloaded_error";

/// Statuses that are never retried, whatever the headers say: the request itself is
/// wrong, and sending it again cannot help.
const NEVER_RETRY: &[u16] = &[400, 401, 403, 404, 413];

/// Why one attempt failed, and whether another may succeed.
pub(crate) struct AttemptError {
    pub error: ProviderError,
    pub retryable: bool,
    /// What the server asked us to wait, if it said.
    pub retry_after: Option<Duration>,
}

/// How hard to try.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff delay.
    pub backoff_base: Duration,
}

/// The receiver of a turn's notices.
pub(crate) type OnNotice<'n> = dyn FnMut(StreamNotice<'_>) + 'n;

/// One try at a turn, given where to send its notices.
pub(crate) type Attempt<'a> = dyn FnMut(&mut OnNotice<'_>) -> Result<Turn, AttemptError> + 'a;

/// Runs `attempt` until it succeeds, fails for good, or the retries are spent. Each
/// retry is logged (a warning: -q silences it) and announced with `StreamNotice::Retry`; messages
/// are scrubbed of `secrets` before they go anywhere.
pub(crate) fn with_retries(
    policy: RetryPolicy,
    secrets: &[String],
    on_notice: &mut dyn FnMut(StreamNotice<'_>),
    attempt: &mut Attempt<'_>,
) -> Result<Turn, ProviderError> {
    let mut retries = 0;
    loop {
        let failure = match attempt(on_notice) {
            Ok(turn) => return Ok(turn),
            Err(failure) => failure,
        };
        let mut error = failure.error;
        error.message = secrets::redact(&error.message, secrets);
        if !failure.retryable {
            return Err(error);
        }
        if retries >= policy.max_retries {
            if retries > 0 {
                error.message = format!("{} (gave up after {retries} retries)", error.message);
            }
            return Err(error);
        }
        retries += 1;
        let delay = failure
            .retry_after
            .map(|d| d.min(MAX_RETRY_AFTER))
            .unwrap_or_else(|| backoff(policy.backoff_base, retries));
        crate::util::output::warn(&format!(
            "retrying in {:.1}s (attempt {retries}/{}): {}",
            delay.as_secs_f64(),
            policy.max_retries,
            error.message
        ));
        on_notice(StreamNotice::Retry {
            attempt: retries,
            reason: &error.message,
            delay,
        });
        std::thread::sleep(delay);
    }
}

/// Whether a failure (retries spent) is the API being overloaded: HTTP 529, an
/// `overloaded_error` in the error body or the stream, or a 503 whose message says
/// "overloaded" (OpenAI's way of saying it). This, and only this, sends the request to
/// `--fallback-model`: another model cannot fix a bad request, a bad key or a network
/// down, but it runs on other capacity.
pub(crate) fn is_overload(e: &ProviderError) -> bool {
    match &e.kind {
        ProviderErrorKind::Http { status, error_type } => {
            *status == OVERLOADED_STATUS
                || error_type == OVERLOADED_ERROR_TYPE
                || (*status == 503 && e.message.to_ascii_lowercase().contains("overloaded"))
        }
        ProviderErrorKind::StreamError { error_type } => error_type == OVERLOADED_ERROR_TYPE,
        ProviderErrorKind::Transport | ProviderErrorKind::Cassette => false,
    }
}

/// The blocking HTTP agent: status codes are ours to handle, `idle_timeout` bounds
/// every socket read, so it is exactly "silent for longer than", and redirects are
/// never followed: a followed redirect would carry the credential to another host.
pub(crate) fn http_agent(idle_timeout: Duration) -> ureq::Agent {
    http_agent_with_tls(idle_timeout, ureq::tls::TlsConfig::default())
}

/// `http_agent` with its own TLS settings (a self-managed server's CA bundle).
pub(crate) fn http_agent_with_tls(
    idle_timeout: Duration,
    tls: ureq::tls::TlsConfig,
) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .tls_config(tls)
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_per_read(Some(idle_timeout))
        .timeout_per_write(Some(idle_timeout))
        .user_agent(format!("agent/{}", env!("CARGO_PKG_VERSION")))
        .input_buffer_size(CONNECTION_BUFFER_BYTES)
        .output_buffer_size(CONNECTION_BUFFER_BYTES)
        .build();
    // ureq's own connections (TCP, TLS, proxies), probed once per reuse (`connection`).
    use ureq::unversioned::transport::{Connector, DefaultConnector};
    let connector = DefaultConnector::new().chain(super::connection::ProbeOnTake);
    ureq::Agent::with_parts(
        config,
        connector,
        ureq::unversioned::resolver::DefaultResolver::default(),
    )
}

fn idle_message(idle_timeout: Duration) -> String {
    format!(
        "the stream was silent for longer than the idle timeout ({})",
        crate::util::duration::human(idle_timeout)
    )
}

/// A request that never got a response: retried unless the URL or setup is wrong.
pub(crate) fn transport_error(
    e: ureq::Error,
    base_url: &str,
    idle_timeout: Duration,
) -> AttemptError {
    let retryable = !matches!(
        e,
        ureq::Error::BadUri(_)
            | ureq::Error::Http(_)
            | ureq::Error::InvalidProxyUrl
            | ureq::Error::RequireHttpsOnly(_)
            | ureq::Error::RedirectFailed
            | ureq::Error::TooManyRedirects
    );
    let message = match &e {
        ureq::Error::Timeout(ureq::Timeout::PerRead) => idle_message(idle_timeout),
        ureq::Error::Io(io) if is_timeout(io) => idle_message(idle_timeout),
        _ => format!("connection to {base_url} failed: {e}"),
    };
    AttemptError {
        error: ProviderError {
            kind: ProviderErrorKind::Transport,
            message,
        },
        retryable,
        retry_after: None,
    }
}

/// A response whose stream failed part-way.
pub(crate) fn stream_error(failure: StreamFailure, idle_timeout: Duration) -> AttemptError {
    let retryable = failure.is_retryable();
    let (kind, message) = match failure {
        StreamFailure::Api {
            error_type,
            message,
        } => (
            ProviderErrorKind::StreamError {
                error_type: error_type.clone(),
            },
            format!("stream error {error_type}: {message}"),
        ),
        StreamFailure::Incomplete { detail } => (ProviderErrorKind::Transport, detail),
        StreamFailure::Io(e) if is_timeout(&e) => {
            let mut message = idle_message(idle_timeout);
            if before_first_event(&e) {
                message = format!("{message}; {SILENT_HINT}");
            }
            (ProviderErrorKind::Transport, message)
        }

        StreamFailure::Io(e) => (
            ProviderErrorKind::Transport,
            format!("the connection failed mid-stream: {e}"),
        ),
        StreamFailure::Malformed { detail } | StreamFailure::Inconsistent { detail } => (
            ProviderErrorKind::StreamError {
                error_type: "invalid_stream".to_string(),
            },
            detail,
        ),
    };
    AttemptError {
        error: ProviderError { kind, message },
        retryable,
        retry_after: None,
    }
}

/// What a 200 followed by silence usually means, for its error message.
const SILENT_HINT: &str = "the server answered 200 and then sent no event. Local servers do \
     this when they cannot stream the tool calls they were asked for (llama-cpp-python with \
     --tool-choice; a llama.cpp template without tool support): see \
     docs/guide/providers.md (OpenAI-compatible servers)";

/// Chars of a redirect's `Location` quoted in its error.
const MAX_QUOTED_LOCATION_CHARS: usize = 300;

/// A 3xx answer: never followed (the request carries the key), and not retried, since
/// the same request gets the same answer. The message names the status and the target.
pub(crate) fn redirect_error(response: &ureq::http::Response<ureq::Body>) -> AttemptError {
    let status = response.status().as_u16();
    let location = header(response.headers(), "location").unwrap_or("(no Location header)");
    let location = crate::util::text::ellipsis(location, MAX_QUOTED_LOCATION_CHARS);
    AttemptError {
        error: ProviderError {
            kind: ProviderErrorKind::Http {
                status,
                error_type: "redirect".to_string(),
            },
            message: format!(
                "HTTP {status} redirect to {location}: not followed, so that the API key \
                 goes to no other host; set the base URL to the address that answers"
            ),
        },
        retryable: false,
        retry_after: None,
    }
}

/// The `error_type` of a 2xx answer that is not an event stream.
pub(crate) const WRONG_CONTENT_TYPE: &str = "wrong_content_type";

/// A 2xx answer whose content type says it is no event stream (a proxy's or captive
/// portal's HTML login page): named, with the start of the body, instead of "the stream
/// ended before message_stop". Retryable: the caller allows it once.
pub(crate) fn wrong_content_type(
    response: ureq::http::Response<ureq::Body>,
    content_type: &str,
) -> AttemptError {
    let status = response.status().as_u16();
    let mut raw = Vec::new();
    let _ = response
        .into_body()
        .into_reader()
        .take(MAX_ERROR_BODY_BYTES)
        .read_to_end(&mut raw);
    let body = String::from_utf8_lossy(&raw);
    let body = crate::util::text::ellipsis(body.trim(), MAX_QUOTED_ERROR_CHARS);
    AttemptError {
        error: ProviderError {
            kind: ProviderErrorKind::Http {
                status,
                error_type: WRONG_CONTENT_TYPE.to_string(),
            },
            message: format!(
                "HTTP {status} with content type {content_type:?}, not an event stream \
                 (a proxy or login page in the way?); the body starts: {body}"
            ),
        },
        retryable: true,
        retry_after: None,
    }
}

/// A wire's reading of an error body: `(type, message)` when it understands it.
pub(crate) type ErrorBodyParser<'a> = dyn Fn(&[u8]) -> Option<(String, String)> + 'a;

/// A non-2xx response: the API's own error type and message (from `parse_body`, which
/// returns `(type, message)` for a body it understands), and whether to retry.
pub(crate) fn http_error(
    response: ureq::http::Response<ureq::Body>,
    parse_body: &ErrorBodyParser<'_>,
) -> AttemptError {
    let status = response.status().as_u16();
    let headers = response.headers();
    let retry_after = retry_after(headers, SystemTime::now());
    let should_retry = header(headers, "x-should-retry").map(|v| v.trim() == "true");
    let mut raw = Vec::new();
    // A body that fails mid-read still tells us the status; keep what arrived.
    let _ = response
        .into_body()
        .into_reader()
        .take(MAX_ERROR_BODY_BYTES)
        .read_to_end(&mut raw);
    let (error_type, message) = match parse_body(&raw) {
        Some((error_type, message)) => (error_type, capped(message)),
        None => {
            let text = String::from_utf8_lossy(&raw);
            let text = text.trim();
            let text = crate::util::text::ellipsis(text, MAX_QUOTED_ERROR_CHARS);
            (String::new(), text)
        }
    };
    let retryable = if NEVER_RETRY.contains(&status) {
        false
    } else if let Some(should) = should_retry {
        should
    } else {
        matches!(status, 408 | 409 | 429) || status >= 500
    };
    let label = if error_type.is_empty() {
        String::new()
    } else {
        format!(" {error_type}")
    };
    let message = if message.is_empty() {
        format!("HTTP {status}{label}")
    } else {
        format!("HTTP {status}{label}: {message}")
    };
    AttemptError {
        error: ProviderError {
            kind: ProviderErrorKind::Http { status, error_type },
            message,
        },
        retryable,
        retry_after,
    }
}

/// `message` cut to [`MAX_ERROR_MESSAGE_CHARS`], saying how much was left out.
fn capped(message: String) -> String {
    crate::util::text::counted(&message, MAX_ERROR_MESSAGE_CHARS, "characters not shown")
}

pub(crate) fn header<'h>(headers: &'h ureq::http::HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `retry-after-ms` (checked first) or `retry-after`, in seconds (fractions allowed) or
/// as an HTTP date (IMF-fixdate, `Wed, 21 Oct 2015 07:28:00 GMT`), taken from `now`.
pub(crate) fn retry_after(headers: &ureq::http::HeaderMap, now: SystemTime) -> Option<Duration> {
    let parse = |name: &str, scale: f64| {
        let v: f64 = header(headers, name)?.trim().parse().ok()?;
        (v.is_finite() && v >= 0.0).then(|| Duration::from_secs_f64((v / scale).min(1e6)))
    };
    parse("retry-after-ms", 1000.0)
        .or_else(|| parse("retry-after", 1.0))
        .or_else(|| {
            let at = http_date(header(headers, "retry-after")?)?;
            Some(at.duration_since(now).unwrap_or(Duration::ZERO))
        })
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP date every server sends.
fn http_date(text: &str) -> Option<SystemTime> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_weekday, day, month, year, time, "GMT"] = parts[..] else {
        return None;
    };
    let day: u64 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let month = MONTHS.iter().position(|m| *m == month)? as u64 + 1;
    let year: u64 = year.parse().ok().filter(|y| *y >= 1970)?;
    let mut hms = time.split(':').map(|t| t.parse::<u64>().ok());
    let (Some(Some(h)), Some(Some(m)), Some(Some(sec)), None) =
        (hms.next(), hms.next(), hms.next(), hms.next())
    else {
        return None;
    };
    if h > 23 || m > 59 || sec > 60 {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    let secs = days * 86_400 + h * 3_600 + m * 60 + sec;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// The delay before retry number `retry` (from 1): `base · 2^(retry-1)`, capped at
/// [`MAX_BACKOFF`], minus up to 25 % jitter so that many clients do not retry in step.
pub(crate) fn backoff(base: Duration, retry: u32) -> Duration {
    let exp = base.saturating_mul(1u32 << retry.saturating_sub(1).min(20));
    exp.min(MAX_BACKOFF).mul_f64(1.0 - 0.25 * jitter_fraction())
}

/// A number in [0, 1) from the clock: cheap, and random enough to spread retries.
fn jitter_fraction() -> f64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // splitmix64 finaliser: neighbouring clock values give unrelated outputs.
    let mut x = (nanos as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether an I/O error is a read timeout (ureq wraps its own timeout error in io).
fn is_timeout(e: &io::Error) -> bool {
    if let Some(BeforeFirstEvent(inner)) = e.get_ref().and_then(|i| i.downcast_ref()) {
        return is_timeout(inner);
    }
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    ) || e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        .is_some_and(|u| match u {
            ureq::Error::Timeout(_) => true,
            ureq::Error::Io(io) => is_timeout(io),
            _ => false,
        })
}

/// Whether the read failed before the response's first event.
fn before_first_event(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<BeforeFirstEvent>())
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod tests;
