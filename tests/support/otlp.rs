//! A loopback OTLP/HTTP collector for the OpenTelemetry tests: it takes
//! `POST /v1/traces` and `/v1/metrics` in either encoding (`application/x-protobuf` or
//! `application/json`) and keeps each request with its headers. Protobuf bodies are
//! decoded by a small schema-driven decoder (the fields of opentelemetry-proto v1 that
//! the agent sends, each with its wire type: a wrong number or type fails the test) into
//! the OTLP/JSON shape, so tests read both encodings the same way. It can also answer
//! 503 or never answer (`Answer`).

use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;

/// How the collector answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    Ok,
    /// This HTTP status, for every request.
    Status(u16),
    /// Reads the request, then holds the connection without a byte of answer.
    Never,
}

/// One export request as received.
#[derive(Debug, Clone)]
pub(crate) struct Export {
    pub path: String,
    pub headers: HashMap<String, String>,
    /// The body in the OTLP/JSON shape, whichever encoding came.
    pub body: Value,
}

pub(crate) struct Collector {
    pub url: String,
    seen: Arc<Mutex<Vec<Export>>>,
}

impl Collector {
    pub(crate) fn start(answer: Answer) -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let s = s.clone();
                thread::spawn(move || serve(conn, answer, &s));
            }
        });
        Collector { url, seen }
    }

    pub(crate) fn exports(&self) -> Vec<Export> {
        self.seen.lock().unwrap().clone()
    }

    /// Every span received, in arrival order.
    pub(crate) fn spans(&self) -> Vec<SpanView> {
        let mut out = Vec::new();
        for e in self.exports().iter().filter(|e| e.path == "/v1/traces") {
            for rs in arr(&e.body["resourceSpans"]) {
                for ss in arr(&rs["scopeSpans"]) {
                    for s in arr(&ss["spans"]) {
                        out.push(SpanView::of(s));
                    }
                }
            }
        }
        out
    }

    /// The resource attributes of the first trace export.
    pub(crate) fn resource(&self) -> HashMap<String, Value> {
        let e = self
            .exports()
            .into_iter()
            .find(|e| e.path == "/v1/traces")
            .expect("a trace export");
        attributes(&e.body["resourceSpans"][0]["resource"]["attributes"])
    }

    /// The data points of the metric `name` in the last metrics export.
    pub(crate) fn metric(&self, name: &str) -> Vec<Value> {
        let exports = self.exports();
        let last = exports
            .iter()
            .rev()
            .find(|e| e.path == "/v1/metrics")
            .expect("a metrics export");
        for rm in arr(&last.body["resourceMetrics"]) {
            for sm in arr(&rm["scopeMetrics"]) {
                for m in arr(&sm["metrics"]) {
                    if m["name"] == name {
                        let data = if m["sum"].is_object() {
                            &m["sum"]
                        } else {
                            &m["histogram"]
                        };
                        return arr(&data["dataPoints"]).to_vec();
                    }
                }
            }
        }
        panic!("no metric {name} in {:#}", last.body)
    }
}

fn arr(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// `KeyValue`s as a map of plain values (strings, numbers, bools, lists).
pub(crate) fn attributes(v: &Value) -> HashMap<String, Value> {
    arr(v)
        .iter()
        .map(|kv| (kv["key"].as_str().unwrap().to_string(), plain(&kv["value"])))
        .collect()
}

/// An `AnyValue` as plain JSON (`intValue` as a number).
fn plain(v: &Value) -> Value {
    if let Some(s) = v.get("stringValue") {
        return s.clone();
    }
    if let Some(i) = v.get("intValue") {
        let n: i64 = match i {
            Value::String(s) => s.parse().unwrap(),
            other => other.as_i64().unwrap(),
        };
        return json!(n);
    }
    if let Some(b) = v.get("boolValue") {
        return b.clone();
    }
    if let Some(d) = v.get("doubleValue") {
        return d.clone();
    }
    if let Some(a) = v.get("arrayValue") {
        return Value::Array(arr(&a["values"]).iter().map(plain).collect());
    }
    panic!("unknown AnyValue {v}")
}

/// A span, read.
#[derive(Debug, Clone)]
pub(crate) struct SpanView {
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent: Option<String>,
    pub kind: u64,
    pub attrs: HashMap<String, Value>,
    /// 0 unset, 1 ok, 2 error.
    pub status: u64,
    pub status_message: String,
    pub events: Vec<(String, HashMap<String, Value>)>,
    pub start: u64,
    pub end: u64,
}

impl SpanView {
    fn of(s: &Value) -> SpanView {
        let num = |v: &Value| match v {
            Value::String(x) => x.parse::<u64>().unwrap(),
            other => other.as_u64().unwrap_or(0),
        };
        SpanView {
            name: s["name"].as_str().unwrap().to_string(),
            trace_id: s["traceId"].as_str().unwrap().to_string(),
            span_id: s["spanId"].as_str().unwrap().to_string(),
            parent: s["parentSpanId"]
                .as_str()
                .filter(|p| !p.is_empty())
                .map(String::from),
            kind: s["kind"].as_u64().unwrap_or(0),
            attrs: attributes(&s["attributes"]),
            status: s["status"]["code"].as_u64().unwrap_or(0),
            status_message: s["status"]["message"].as_str().unwrap_or("").to_string(),
            events: arr(&s["events"])
                .iter()
                .map(|e| {
                    (
                        e["name"].as_str().unwrap().to_string(),
                        attributes(&e["attributes"]),
                    )
                })
                .collect(),
            start: num(&s["startTimeUnixNano"]),
            end: num(&s["endTimeUnixNano"]),
        }
    }

    pub(crate) fn attr(&self, key: &str) -> &Value {
        self.attrs.get(key).unwrap_or(&Value::Null)
    }
}

fn serve(conn: TcpStream, answer: Answer, seen: &Mutex<Vec<Export>>) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut conn = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .expect("the exporter sends a Content-Length");
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let ctype = headers.get("content-type").cloned().unwrap_or_default();
        let decoded = if ctype == "application/json" {
            serde_json::from_slice(&body).unwrap()
        } else {
            assert_eq!(ctype, "application/x-protobuf", "content type");
            let schema = match path.as_str() {
                "/v1/traces" => TRACES_REQUEST,
                "/v1/metrics" => METRICS_REQUEST,
                other => panic!("unexpected path {other}"),
            };
            decode(&body, schema)
        };
        seen.lock().unwrap().push(Export {
            path,
            headers,
            body: decoded,
        });
        match answer {
            Answer::Ok => {
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            }
            Answer::Status(code) => {
                let body = "collector overloaded";
                let _ = write!(
                    conn,
                    "HTTP/1.1 {code} Unavailable\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
            Answer::Never => loop {
                thread::park();
            },
        }
    }
}

// ---- the protobuf decoder -------------------------------------------------------

/// A field's type, which fixes its wire type.
#[derive(Clone, Copy)]
enum F {
    Str,
    /// Ids: bytes, shown as hex as in OTLP/JSON.
    Id,
    Fixed64,
    Sfixed64,
    Int64,
    Double,
    Bool,
    Enum,
    Fixed32,
    PackedFixed64,
    PackedDouble,
    Msg(&'static [Field]),
    /// A message whose schema refers back to this one (`AnyValue` ↔ `ArrayValue`).
    MsgFn(fn() -> &'static [Field]),
}

/// (number, JSON name, type, repeated)
type Field = (u64, &'static str, F, bool);

const ANY_VALUE: &[Field] = &[
    (1, "stringValue", F::Str, false),
    (2, "boolValue", F::Bool, false),
    (3, "intValue", F::Int64, false),
    (4, "doubleValue", F::Double, false),
    (5, "arrayValue", F::MsgFn(|| ARRAY_VALUE), false),
];
const ARRAY_VALUE: &[Field] = &[(1, "values", F::Msg(ANY_VALUE), true)];
const KEY_VALUE: &[Field] = &[
    (1, "key", F::Str, false),
    (2, "value", F::Msg(ANY_VALUE), false),
];
const RESOURCE: &[Field] = &[(1, "attributes", F::Msg(KEY_VALUE), true)];
const SCOPE: &[Field] = &[(1, "name", F::Str, false), (2, "version", F::Str, false)];
const STATUS: &[Field] = &[(2, "message", F::Str, false), (3, "code", F::Enum, false)];
const EVENT: &[Field] = &[
    (1, "timeUnixNano", F::Fixed64, false),
    (2, "name", F::Str, false),
    (3, "attributes", F::Msg(KEY_VALUE), true),
];
const SPAN: &[Field] = &[
    (1, "traceId", F::Id, false),
    (2, "spanId", F::Id, false),
    (3, "traceState", F::Str, false),
    (4, "parentSpanId", F::Id, false),
    (5, "name", F::Str, false),
    (6, "kind", F::Enum, false),
    (7, "startTimeUnixNano", F::Fixed64, false),
    (8, "endTimeUnixNano", F::Fixed64, false),
    (9, "attributes", F::Msg(KEY_VALUE), true),
    (11, "events", F::Msg(EVENT), true),
    (15, "status", F::Msg(STATUS), false),
    (16, "flags", F::Fixed32, false),
];
const SCOPE_SPANS: &[Field] = &[
    (1, "scope", F::Msg(SCOPE), false),
    (2, "spans", F::Msg(SPAN), true),
];
const RESOURCE_SPANS: &[Field] = &[
    (1, "resource", F::Msg(RESOURCE), false),
    (2, "scopeSpans", F::Msg(SCOPE_SPANS), true),
];
const TRACES_REQUEST: &[Field] = &[(1, "resourceSpans", F::Msg(RESOURCE_SPANS), true)];

const NUMBER_POINT: &[Field] = &[
    (7, "attributes", F::Msg(KEY_VALUE), true),
    (2, "startTimeUnixNano", F::Fixed64, false),
    (3, "timeUnixNano", F::Fixed64, false),
    (4, "asDouble", F::Double, false),
    (6, "asInt", F::Sfixed64, false),
];
const HISTOGRAM_POINT: &[Field] = &[
    (9, "attributes", F::Msg(KEY_VALUE), true),
    (2, "startTimeUnixNano", F::Fixed64, false),
    (3, "timeUnixNano", F::Fixed64, false),
    (4, "count", F::Fixed64, false),
    (5, "sum", F::Double, false),
    (6, "bucketCounts", F::PackedFixed64, false),
    (7, "explicitBounds", F::PackedDouble, false),
    (11, "min", F::Double, false),
    (12, "max", F::Double, false),
];
const SUM: &[Field] = &[
    (1, "dataPoints", F::Msg(NUMBER_POINT), true),
    (2, "aggregationTemporality", F::Enum, false),
    (3, "isMonotonic", F::Bool, false),
];
const HISTOGRAM: &[Field] = &[
    (1, "dataPoints", F::Msg(HISTOGRAM_POINT), true),
    (2, "aggregationTemporality", F::Enum, false),
];
const METRIC: &[Field] = &[
    (1, "name", F::Str, false),
    (2, "description", F::Str, false),
    (3, "unit", F::Str, false),
    (7, "sum", F::Msg(SUM), false),
    (9, "histogram", F::Msg(HISTOGRAM), false),
];
const SCOPE_METRICS: &[Field] = &[
    (1, "scope", F::Msg(SCOPE), false),
    (2, "metrics", F::Msg(METRIC), true),
];
const RESOURCE_METRICS: &[Field] = &[
    (1, "resource", F::Msg(RESOURCE), false),
    (2, "scopeMetrics", F::Msg(SCOPE_METRICS), true),
];
const METRICS_REQUEST: &[Field] = &[(1, "resourceMetrics", F::Msg(RESOURCE_METRICS), true)];

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn varint(&mut self) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.b[self.i];
            self.i += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return v;
            }
        }
        panic!("varint longer than 10 bytes")
    }
    fn take(&mut self, n: usize) -> &[u8] {
        let s = &self.b[self.i..self.i + n];
        self.i += n;
        s
    }
    fn u64_le(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().unwrap())
    }
}

/// Decodes one message of `schema` into OTLP/JSON's shape.
fn decode(bytes: &[u8], schema: &'static [Field]) -> Value {
    let mut c = Cursor { b: bytes, i: 0 };
    let mut out = Map::new();
    while c.i < bytes.len() {
        let tag = c.varint();
        let (num, wire) = (tag >> 3, tag & 7);
        let &(_, name, ty, repeated) = schema
            .iter()
            .find(|f| f.0 == num)
            .unwrap_or_else(|| panic!("unknown field {num} (wire type {wire})"));
        let expected = match ty {
            F::Int64 | F::Bool | F::Enum => 0,
            F::Fixed64 | F::Sfixed64 | F::Double => 1,
            F::Fixed32 => 5,
            _ => 2,
        };
        assert_eq!(wire, expected, "field {name} ({num}): wire type");
        let v = match ty {
            F::Int64 => json!((c.varint() as i64).to_string()),
            F::Bool => json!(c.varint() != 0),
            F::Enum => json!(c.varint()),
            F::Fixed64 => json!(c.u64_le().to_string()),
            F::Sfixed64 => json!((c.u64_le() as i64).to_string()),
            F::Double => json!(f64::from_bits(c.u64_le())),
            F::Fixed32 => json!(u32::from_le_bytes(c.take(4).try_into().unwrap())),
            F::Str | F::Id | F::PackedFixed64 | F::PackedDouble | F::Msg(_) | F::MsgFn(_) => {
                let len = c.varint() as usize;
                let b = c.take(len);
                match ty {
                    F::Str => json!(std::str::from_utf8(b).expect("UTF-8 string")),
                    F::Id => json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
                    F::PackedFixed64 => Value::Array(
                        b.chunks(8)
                            .map(|x| json!(u64::from_le_bytes(x.try_into().unwrap()).to_string()))
                            .collect(),
                    ),
                    F::PackedDouble => Value::Array(
                        b.chunks(8)
                            .map(|x| json!(f64::from_le_bytes(x.try_into().unwrap())))
                            .collect(),
                    ),
                    F::Msg(sub) => decode(b, sub),
                    F::MsgFn(sub) => decode(b, sub()),
                    _ => unreachable!(),
                }
            }
        };
        if repeated {
            out.entry(name)
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
                .unwrap()
                .push(v);
        } else {
            assert!(!out.contains_key(name), "{name} twice");
            out.insert(name.to_string(), v);
        }
    }
    Value::Object(out)
}
