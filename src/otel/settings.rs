//! What the standard `OTEL_*` variables configure (the OpenTelemetry SDK's environment
//! specification, OTLP over HTTP only): where traces and metrics go, in which encoding,
//! with which headers, and the resource that describes this process (service, CI
//! pipeline, repository). Nothing is exported unless an endpoint or an `otlp` exporter is
//! named; a value the agent cannot honour is a warning and that signal stays off, never a
//! failed run. The variables are read through a getter so tests inject them.

use std::time::Duration;

use super::context::SpanContext;

/// The default collector of the spec, when an exporter is named without an endpoint.
const DEFAULT_ENDPOINT: &str = "http://localhost:4318";
/// `OTEL_EXPORTER_OTLP_TIMEOUT`'s default (the spec's 10 s): one POST's limit.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How the payload is encoded (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// `http/protobuf`, the spec's default.
    Protobuf,
    /// `http/json`.
    Json,
}

impl Protocol {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Protocol::Protobuf => "http/protobuf",
            Protocol::Json => "http/json",
        }
    }
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Protocol::Protobuf => "application/x-protobuf",
            Protocol::Json => "application/json",
        }
    }
}

/// Where one signal goes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Endpoint {
    pub(crate) url: String,
    pub(crate) protocol: Protocol,
    /// Sent with every export; the values are secrets (redacted in every log line).
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) timeout: Duration,
}

/// The telemetry of a process, as configured. `None` signals are off.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct OtelSettings {
    pub(crate) traces: Option<Endpoint>,
    pub(crate) metrics: Option<Endpoint>,
    /// The resource's attributes, `service.name` first.
    pub(crate) resource: Vec<(String, String)>,
    /// `TRACEPARENT`/`TRACESTATE`: the run is a child of that span.
    pub(crate) parent: Option<SpanContext>,
    /// `--otel-content`: prompts, answers and tool input/output on the spans (redacted).
    pub(crate) content: bool,
}

impl OtelSettings {
    /// Whether anything is exported at all.
    pub(crate) fn enabled(&self) -> bool {
        self.traces.is_some() || self.metrics.is_some()
    }

    /// Every header value, for redaction.
    pub(crate) fn secret_values(&self) -> Vec<String> {
        [&self.traces, &self.metrics]
            .into_iter()
            .flatten()
            .flat_map(|e| e.headers.iter().map(|(_, v)| v.clone()))
            .collect()
    }

    /// Reads the variables through `var` (empty values count as unset). `warnings` gets
    /// one line per value that turned a signal off or was ignored.
    pub(crate) fn from_env(
        var: &dyn Fn(&str) -> Option<String>,
        warnings: &mut Vec<String>,
    ) -> OtelSettings {
        let get = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let parent = get("TRACEPARENT").and_then(|tp| {
            let ctx = SpanContext::parse(&tp, get("TRACESTATE").as_deref());
            if ctx.is_none() {
                warnings.push(format!(
                    "TRACEPARENT {tp:?} is not a W3C traceparent: the run starts a new trace"
                ));
            }
            ctx
        });
        let mut settings = OtelSettings {
            parent,
            ..OtelSettings::default()
        };
        if get("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return settings;
        }
        settings.traces = signal(&get, "TRACES", "traces", warnings);
        settings.metrics = signal(&get, "METRICS", "metrics", warnings);
        if settings.enabled() {
            settings.resource = resource(&get, warnings);
        }
        settings
    }
}

/// One signal's endpoint, or None when it is off (not configured, `none`, or a value the
/// agent cannot honour: warned).
fn signal(
    get: &dyn Fn(&str) -> Option<String>,
    upper: &str,
    path: &str,
    warnings: &mut Vec<String>,
) -> Option<Endpoint> {
    let exporter_var = format!("OTEL_{upper}_EXPORTER");
    let exporter = get(&exporter_var).map(|v| v.trim().to_ascii_lowercase());
    match exporter.as_deref() {
        Some("none") => return None,
        None | Some("otlp") => {}
        Some(other) => {
            // A list (`otlp,console`) is honoured for its otlp part.
            if !other.split(',').any(|e| e.trim() == "otlp") {
                warnings.push(format!(
                    "{exporter_var}={other}: only otlp (over HTTP) is supported; {path} are not exported"
                ));
                return None;
            }
        }
    }
    let own = get(&format!("OTEL_EXPORTER_OTLP_{upper}_ENDPOINT"));
    let base = get("OTEL_EXPORTER_OTLP_ENDPOINT");
    let url = match (own, base) {
        (Some(url), _) => url.trim().to_string(),
        (None, Some(base)) => signal_url(&base, path),
        // Named without an endpoint: the spec's default collector.
        (None, None) if exporter.is_some() => signal_url(DEFAULT_ENDPOINT, path),
        (None, None) => return None,
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        warnings.push(format!(
            "the OTLP {path} endpoint {url:?} is not an http:// or https:// URL; {path} are not exported"
        ));
        return None;
    }
    let protocol_var = format!("OTEL_EXPORTER_OTLP_{upper}_PROTOCOL");
    let (named, protocol) = match get(&protocol_var) {
        Some(p) => (protocol_var, p),
        None => (
            "OTEL_EXPORTER_OTLP_PROTOCOL".to_string(),
            get("OTEL_EXPORTER_OTLP_PROTOCOL").unwrap_or_else(|| "http/protobuf".into()),
        ),
    };
    let protocol = match protocol.trim() {
        "http/protobuf" => Protocol::Protobuf,
        "http/json" => Protocol::Json,
        other => {
            warnings.push(format!(
                "{named}={other}: the agent exports OTLP over HTTP only (http/protobuf or \
                 http/json; gRPC needs an async stack); {path} are not exported"
            ));
            return None;
        }
    };
    let mut headers = parse_headers(get("OTEL_EXPORTER_OTLP_HEADERS").as_deref());
    for (k, v) in parse_headers(get(&format!("OTEL_EXPORTER_OTLP_{upper}_HEADERS")).as_deref()) {
        headers.retain(|(hk, _)| !hk.eq_ignore_ascii_case(&k));
        headers.push((k, v));
    }
    let timeout = timeout(get, upper, warnings);
    Some(Endpoint {
        url,
        protocol,
        headers,
        timeout,
    })
}

/// `OTEL_EXPORTER_OTLP_{,SIGNAL_}TIMEOUT` in milliseconds.
fn timeout(
    get: &dyn Fn(&str) -> Option<String>,
    upper: &str,
    warnings: &mut Vec<String>,
) -> Duration {
    let own = format!("OTEL_EXPORTER_OTLP_{upper}_TIMEOUT");
    let (name, value) = match get(&own) {
        Some(v) => (own, v),
        None => match get("OTEL_EXPORTER_OTLP_TIMEOUT") {
            Some(v) => ("OTEL_EXPORTER_OTLP_TIMEOUT".to_string(), v),
            None => return DEFAULT_TIMEOUT,
        },
    };
    match value.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Duration::from_millis(ms),
        _ => {
            warnings.push(format!(
                "{name}={value}: not a number of milliseconds; using {}ms",
                DEFAULT_TIMEOUT.as_millis()
            ));
            DEFAULT_TIMEOUT
        }
    }
}

/// The base endpoint with the signal's path appended (`/v1/traces`), as the spec says.
fn signal_url(base: &str, path: &str) -> String {
    format!("{}/v1/{path}", base.trim().trim_end_matches('/'))
}

/// `key1=value1,key2=value2`, values percent-decoded (the W3C Baggage format the spec
/// uses); entries without `=` are skipped.
pub(crate) fn parse_headers(raw: Option<&str>) -> Vec<(String, String)> {
    let Some(raw) = raw else { return Vec::new() };
    raw.split(',')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            let k = percent_decode(k.trim());
            (!k.is_empty()).then(|| (k, percent_decode(v.trim())))
        })
        .collect()
}

/// `%XX` sequences decoded; anything malformed is kept as it is.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The resource: `service.name` (`OTEL_SERVICE_NAME`, else the one in
/// `OTEL_RESOURCE_ATTRIBUTES`, else `agent`), the SDK, the CI pipeline and repository
/// (GitHub Actions, GitLab CI), then `OTEL_RESOURCE_ATTRIBUTES`, which wins over them.
fn resource(
    get: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Vec<(String, String)> {
    let own = parse_headers(get("OTEL_RESOURCE_ATTRIBUTES").as_deref());
    if get("OTEL_RESOURCE_ATTRIBUTES").is_some() && own.is_empty() {
        warnings.push("OTEL_RESOURCE_ATTRIBUTES has no key=value pair: ignored".into());
    }
    let service = get("OTEL_SERVICE_NAME")
        .or_else(|| {
            own.iter()
                .find(|(k, _)| k == "service.name")
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| "agent".into());
    let mut attrs: Vec<(String, String)> = vec![
        ("service.name".into(), service),
        ("service.version".into(), env!("CARGO_PKG_VERSION").into()),
        ("telemetry.sdk.name".into(), "agent".into()),
        ("telemetry.sdk.language".into(), "rust".into()),
        (
            "telemetry.sdk.version".into(),
            env!("CARGO_PKG_VERSION").into(),
        ),
    ];
    attrs.extend(ci_attributes(get));
    for (k, v) in own {
        if k == "service.name" {
            continue;
        }
        attrs.retain(|(ak, _)| *ak != k);
        attrs.push((k, v));
    }
    attrs
}

/// The CICD and VCS semantic conventions, from the CI engine's own variables.
pub(crate) fn ci_attributes(get: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push((k.to_string(), v));
        }
    };
    if get("GITHUB_ACTIONS").as_deref() == Some("true") {
        let server = get("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into());
        let repo = get("GITHUB_REPOSITORY");
        let run = get("GITHUB_RUN_ID");
        let repo_url = repo.as_ref().map(|r| format!("{server}/{r}"));
        put("cicd.pipeline.name", get("GITHUB_WORKFLOW"));
        put("cicd.pipeline.run.id", run.clone());
        put(
            "cicd.pipeline.run.url.full",
            repo_url
                .as_ref()
                .zip(run)
                .map(|(u, id)| match get("GITHUB_RUN_ATTEMPT") {
                    Some(a) => format!("{u}/actions/runs/{id}/attempts/{a}"),
                    None => format!("{u}/actions/runs/{id}"),
                }),
        );
        put("cicd.pipeline.task.name", get("GITHUB_JOB"));
        put("vcs.provider.name", Some("github".into()));
        put("vcs.repository.url.full", repo_url);
        put(
            "vcs.repository.name",
            repo.and_then(|r| r.rsplit('/').next().map(String::from)),
        );
        put(
            "vcs.ref.head.name",
            get("GITHUB_HEAD_REF").or_else(|| get("GITHUB_REF_NAME")),
        );
        put("vcs.ref.head.revision", get("GITHUB_SHA"));
        put("vcs.ref.head.type", get("GITHUB_REF_TYPE"));
    } else if get("GITLAB_CI").as_deref() == Some("true") {
        put(
            "cicd.pipeline.name",
            get("CI_PIPELINE_NAME").or_else(|| get("CI_PROJECT_PATH")),
        );
        put("cicd.pipeline.run.id", get("CI_PIPELINE_ID"));
        put("cicd.pipeline.run.url.full", get("CI_PIPELINE_URL"));
        put("cicd.pipeline.task.name", get("CI_JOB_NAME"));
        put("cicd.pipeline.task.run.id", get("CI_JOB_ID"));
        put("cicd.pipeline.task.run.url.full", get("CI_JOB_URL"));
        put("vcs.provider.name", Some("gitlab".into()));
        put("vcs.repository.url.full", get("CI_PROJECT_URL"));
        put("vcs.repository.name", get("CI_PROJECT_NAME"));
        put(
            "vcs.ref.head.name",
            get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME").or_else(|| get("CI_COMMIT_REF_NAME")),
        );
        put("vcs.ref.head.revision", get("CI_COMMIT_SHA"));
        put("vcs.change.id", get("CI_MERGE_REQUEST_IID"));
    }
    out
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
