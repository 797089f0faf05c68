use super::*;

fn read(vars: &[(&str, &str)]) -> (OtelSettings, Vec<String>) {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let get = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let mut warnings = Vec::new();
    let s = OtelSettings::from_env(&get, &mut warnings);
    (s, warnings)
}

#[test]
fn off_unless_configured() {
    let (s, w) = read(&[("GITHUB_ACTIONS", "true")]);
    assert!(!s.enabled());
    assert!(w.is_empty());
    let (s, _) = read(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
        ("OTEL_SDK_DISABLED", "true"),
    ]);
    assert!(!s.enabled());
    let (s, _) = read(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
        ("OTEL_TRACES_EXPORTER", "none"),
    ]);
    assert!(s.traces.is_none());
    assert_eq!(s.metrics.unwrap().url, "http://c:4318/v1/metrics");
}

#[test]
fn endpoints_protocols_and_headers() {
    let (s, w) = read(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/"),
        (
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "https://m.example/custom",
        ),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "http/protobuf"),
        (
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20abc,x-a=1",
        ),
        ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-A=2"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "1500"),
    ]);
    assert!(w.is_empty(), "{w:?}");
    let t = s.traces.unwrap();
    assert_eq!(t.url, "http://c:4318/v1/traces");
    assert_eq!(t.protocol, Protocol::Json);
    assert_eq!(
        t.headers,
        vec![
            ("authorization".to_string(), "Bearer abc".to_string()),
            ("X-A".to_string(), "2".to_string())
        ]
    );
    assert_eq!(t.timeout, Duration::from_millis(1500));
    let m = s.metrics.unwrap();
    assert_eq!(m.url, "https://m.example/custom");
    assert_eq!(m.protocol, Protocol::Protobuf);
}

#[test]
fn grpc_and_unknown_exporters_are_warned_and_off() {
    let (s, w) = read(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_METRICS_EXPORTER", "prometheus"),
    ]);
    assert!(!s.enabled());
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].contains("grpc") && w[0].contains("OTEL_EXPORTER_OTLP_PROTOCOL"));
    assert!(w[1].contains("OTEL_METRICS_EXPORTER=prometheus"));
    // Named without an endpoint: the spec's default collector.
    let (s, _) = read(&[("OTEL_TRACES_EXPORTER", "otlp")]);
    assert_eq!(s.traces.unwrap().url, "http://localhost:4318/v1/traces");
}

#[test]
fn resource_has_service_ci_and_own_attributes() {
    let (s, _) = read(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=ci,service.name=x,cicd.pipeline.name=mine",
        ),
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_WORKFLOW", "CI"),
        ("GITHUB_RUN_ID", "42"),
        ("GITHUB_REPOSITORY", "o/r"),
        ("GITHUB_REF_NAME", "main"),
        ("GITHUB_SHA", "abc"),
    ]);
    let get = |k: &str| {
        s.resource
            .iter()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(s.resource[0], ("service.name".into(), "x".into()));
    assert_eq!(get("cicd.pipeline.name"), Some("mine"));
    assert_eq!(get("cicd.pipeline.run.id"), Some("42"));
    assert_eq!(
        get("cicd.pipeline.run.url.full"),
        Some("https://github.com/o/r/actions/runs/42")
    );
    assert_eq!(
        get("vcs.repository.url.full"),
        Some("https://github.com/o/r")
    );
    assert_eq!(get("vcs.ref.head.name"), Some("main"));
    assert_eq!(get("deployment.environment"), Some("ci"));
}

#[test]
fn gitlab_variables() {
    let get = |k: &str| {
        [
            ("GITLAB_CI", "true"),
            ("CI_PIPELINE_ID", "7"),
            ("CI_PROJECT_URL", "https://gitlab.com/g/p"),
            ("CI_COMMIT_REF_NAME", "feature"),
            ("CI_JOB_NAME", "test"),
        ]
        .iter()
        .find(|(n, _)| *n == k)
        .map(|(_, v)| v.to_string())
    };
    let attrs = ci_attributes(&get);
    assert!(attrs.contains(&("cicd.pipeline.run.id".into(), "7".into())));
    assert!(attrs.contains(&(
        "vcs.repository.url.full".into(),
        "https://gitlab.com/g/p".into()
    )));
    assert!(attrs.contains(&("vcs.ref.head.name".into(), "feature".into())));
    assert!(attrs.contains(&("cicd.pipeline.task.name".into(), "test".into())));
}

#[test]
fn traceparent_is_read_and_a_bad_one_warned() {
    let (s, w) = read(&[
        (
            "TRACEPARENT",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ),
        ("TRACESTATE", "a=b"),
    ]);
    assert_eq!(s.parent.unwrap().trace_state, "a=b");
    assert!(w.is_empty());
    let (s, w) = read(&[("TRACEPARENT", "garbage")]);
    assert!(s.parent.is_none());
    assert_eq!(w.len(), 1);
}
