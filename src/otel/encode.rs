//! The OTLP messages the agent sends (`ExportTraceServiceRequest`,
//! `ExportMetricsServiceRequest` and the parts they hold), written once against a small
//! `Writer` trait and encoded by either of two writers: protobuf (`http/protobuf`) and
//! OTLP/JSON (`http/json`: lowerCamelCase names, ids as hex, 64-bit integers as decimal
//! strings, enums as numbers). Field numbers are those of opentelemetry-proto v1
//! (`opentelemetry/proto/{trace,metrics,common,resource}/v1/*.proto`); DESIGN.md says why
//! this is hand-written rather than prost-generated.

use serde_json::{Map, Value};

use super::context::hex;

/// An attribute's value (the `AnyValue`s the agent uses).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AttrValue {
    /// A constant (`"chat"`) is borrowed, a value made at run time owned.
    Str(std::borrow::Cow<'static, str>),
    Int(i64),
    F64(f64),
    Bool(bool),
    StrList(Vec<String>),
}

impl From<&'static str> for AttrValue {
    fn from(s: &'static str) -> Self {
        AttrValue::Str(s.into())
    }
}
impl From<String> for AttrValue {
    fn from(s: String) -> Self {
        AttrValue::Str(s.into())
    }
}
impl From<i64> for AttrValue {
    fn from(n: i64) -> Self {
        AttrValue::Int(n)
    }
}
impl From<u64> for AttrValue {
    fn from(n: u64) -> Self {
        AttrValue::Int(i64::try_from(n).unwrap_or(i64::MAX))
    }
}
impl From<u32> for AttrValue {
    fn from(n: u32) -> Self {
        AttrValue::Int(i64::from(n))
    }
}
impl From<f64> for AttrValue {
    fn from(x: f64) -> Self {
        AttrValue::F64(x)
    }
}
impl From<bool> for AttrValue {
    fn from(b: bool) -> Self {
        AttrValue::Bool(b)
    }
}
impl From<Vec<String>> for AttrValue {
    fn from(v: Vec<String>) -> Self {
        AttrValue::StrList(v)
    }
}

/// An attribute's key: the agent's are all constants, so none is allocated.
pub(crate) type Key = std::borrow::Cow<'static, str>;

pub(crate) type Attrs = Vec<(Key, AttrValue)>;

/// `Span.SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpanKind {
    Internal = 1,
    Client = 3,
}

/// `Status.StatusCode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum StatusCode {
    #[default]
    Unset = 0,
    Ok = 1,
    Error = 2,
}

/// A span event (a retry, a fallback).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EventData {
    pub(crate) time_ns: u64,
    pub(crate) name: String,
    pub(crate) attrs: Attrs,
}

/// One ended span.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SpanData {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
    pub(crate) parent_span_id: Option<[u8; 8]>,
    pub(crate) trace_state: String,
    pub(crate) flags: u8,
    pub(crate) name: String,
    pub(crate) kind: SpanKind,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) attrs: Attrs,
    pub(crate) events: Vec<EventData>,
    pub(crate) status: StatusCode,
    pub(crate) status_message: String,
}

/// A counter's or gauge's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    Int(i64),
    F64(f64),
}

/// One metric with its points, as exported (cumulative since `start_ns`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MetricData {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) unit: &'static str,
    pub(crate) points: Points,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Points {
    /// A monotonic sum.
    Sum(Vec<(Attrs, Number)>),
    Histogram(Vec<(Attrs, HistogramPoint)>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HistogramPoint {
    pub(crate) count: u64,
    pub(crate) sum: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) bounds: &'static [f64],
    /// One more than `bounds`.
    pub(crate) buckets: Vec<u64>,
}

/// What both encodings can write: a field has a protobuf number and a JSON name.
trait Writer: Sized {
    fn new() -> Self;
    fn string(&mut self, field: u32, name: &'static str, v: &str);
    /// Trace and span ids: bytes in protobuf, hex in JSON.
    fn id(&mut self, field: u32, name: &'static str, v: &[u8]);
    fn fixed64(&mut self, field: u32, name: &'static str, v: u64);
    fn sfixed64(&mut self, field: u32, name: &'static str, v: i64);
    fn int64(&mut self, field: u32, name: &'static str, v: i64);
    fn double(&mut self, field: u32, name: &'static str, v: f64);
    fn boolean(&mut self, field: u32, name: &'static str, v: bool);
    fn enumeration(&mut self, field: u32, name: &'static str, v: u32);
    fn fixed32(&mut self, field: u32, name: &'static str, v: u32);
    fn packed_fixed64(&mut self, field: u32, name: &'static str, v: &[u64]);
    fn packed_double(&mut self, field: u32, name: &'static str, v: &[f64]);
    /// A nested message.
    fn message(&mut self, field: u32, name: &'static str, body: impl FnOnce(&mut Self));
    /// One element of a repeated message field.
    fn item(&mut self, field: u32, name: &'static str, body: impl FnOnce(&mut Self));
}

/// Protobuf's wire format.
struct Protobuf(Vec<u8>);

impl Protobuf {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn tag(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }
    fn bytes(&mut self, field: u32, v: &[u8]) {
        self.tag(field, 2);
        self.varint(v.len() as u64);
        self.0.extend_from_slice(v);
    }
    /// A nested message written in place: the body first, then its tag and length
    /// moved in before it (one `memmove` per level instead of a buffer per message).
    fn nested(&mut self, field: u32, body: impl FnOnce(&mut Self)) {
        let start = self.0.len();
        body(self);
        let len = (self.0.len() - start) as u64;
        // Tag and length: two varints of at most 5 and 10 bytes, built on the stack.
        let mut head = [0u8; 15];
        let mut n = 0;
        for mut v in [(u64::from(field) << 3) | 2, len] {
            while v >= 0x80 {
                head[n] = (v as u8) | 0x80;
                v >>= 7;
                n += 1;
            }
            head[n] = v as u8;
            n += 1;
        }
        self.0.splice(start..start, head[..n].iter().copied());
    }
}

impl Writer for Protobuf {
    fn new() -> Self {
        // Only the request itself is a new writer (nested messages write in place).
        Protobuf(Vec::with_capacity(16 * 1024))
    }
    fn string(&mut self, field: u32, _: &'static str, v: &str) {
        self.bytes(field, v.as_bytes());
    }
    fn id(&mut self, field: u32, _: &'static str, v: &[u8]) {
        self.bytes(field, v);
    }
    fn fixed64(&mut self, field: u32, _: &'static str, v: u64) {
        self.tag(field, 1);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn sfixed64(&mut self, field: u32, _: &'static str, v: i64) {
        self.tag(field, 1);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn int64(&mut self, field: u32, _: &'static str, v: i64) {
        self.tag(field, 0);
        self.varint(v as u64);
    }
    fn double(&mut self, field: u32, _: &'static str, v: f64) {
        self.tag(field, 1);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn boolean(&mut self, field: u32, _: &'static str, v: bool) {
        self.tag(field, 0);
        self.varint(u64::from(v));
    }
    fn enumeration(&mut self, field: u32, _: &'static str, v: u32) {
        self.tag(field, 0);
        self.varint(u64::from(v));
    }
    fn fixed32(&mut self, field: u32, _: &'static str, v: u32) {
        self.tag(field, 5);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn packed_fixed64(&mut self, field: u32, _: &'static str, v: &[u64]) {
        self.tag(field, 2);
        self.varint(v.len() as u64 * 8);
        for x in v {
            self.0.extend_from_slice(&x.to_le_bytes());
        }
    }
    fn packed_double(&mut self, field: u32, _: &'static str, v: &[f64]) {
        self.tag(field, 2);
        self.varint(v.len() as u64 * 8);
        for x in v {
            self.0.extend_from_slice(&x.to_le_bytes());
        }
    }
    fn message(&mut self, field: u32, _: &'static str, body: impl FnOnce(&mut Self)) {
        self.nested(field, body);
    }
    fn item(&mut self, field: u32, name: &'static str, body: impl FnOnce(&mut Self)) {
        self.message(field, name, body);
    }
}

/// OTLP/JSON (the protobuf JSON mapping with OTLP's exceptions).
struct Json(Map<String, Value>);

impl Json {
    fn put(&mut self, name: &str, v: Value) {
        self.0.insert(name.to_string(), v);
    }
}

/// A double JSON can carry (JSON has no NaN or infinity).
fn finite(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::from(0), Value::Number)
}

impl Writer for Json {
    fn new() -> Self {
        Json(Map::new())
    }
    fn string(&mut self, _: u32, name: &'static str, v: &str) {
        self.put(name, Value::from(v));
    }
    fn id(&mut self, _: u32, name: &'static str, v: &[u8]) {
        self.put(name, Value::from(hex(v)));
    }
    fn fixed64(&mut self, _: u32, name: &'static str, v: u64) {
        self.put(name, Value::from(v.to_string()));
    }
    fn sfixed64(&mut self, _: u32, name: &'static str, v: i64) {
        self.put(name, Value::from(v.to_string()));
    }
    fn int64(&mut self, _: u32, name: &'static str, v: i64) {
        self.put(name, Value::from(v.to_string()));
    }
    fn double(&mut self, _: u32, name: &'static str, v: f64) {
        self.put(name, finite(v));
    }
    fn boolean(&mut self, _: u32, name: &'static str, v: bool) {
        self.put(name, Value::from(v));
    }
    fn enumeration(&mut self, _: u32, name: &'static str, v: u32) {
        self.put(name, Value::from(v));
    }
    fn fixed32(&mut self, _: u32, name: &'static str, v: u32) {
        self.put(name, Value::from(v));
    }
    fn packed_fixed64(&mut self, _: u32, name: &'static str, v: &[u64]) {
        self.put(name, v.iter().map(|x| Value::from(x.to_string())).collect());
    }
    fn packed_double(&mut self, _: u32, name: &'static str, v: &[f64]) {
        self.put(name, v.iter().map(|x| finite(*x)).collect());
    }
    fn message(&mut self, _: u32, name: &'static str, body: impl FnOnce(&mut Self)) {
        let mut sub = Json::new();
        body(&mut sub);
        self.put(name, Value::Object(sub.0));
    }
    fn item(&mut self, _: u32, name: &'static str, body: impl FnOnce(&mut Self)) {
        let mut sub = Json::new();
        body(&mut sub);
        let slot = self
            .0
            .entry(name.to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(items) = slot {
            items.push(Value::Object(sub.0));
        }
    }
}

/// `AnyValue`.
fn any_value<W: Writer>(w: &mut W, v: &AttrValue) {
    match v {
        AttrValue::Str(s) => w.string(1, "stringValue", s),
        AttrValue::Bool(b) => w.boolean(2, "boolValue", *b),
        AttrValue::Int(n) => w.int64(3, "intValue", *n),
        AttrValue::F64(x) => w.double(4, "doubleValue", *x),
        AttrValue::StrList(items) => w.message(5, "arrayValue", |a| {
            for s in items {
                a.item(1, "values", |x| x.string(1, "stringValue", s));
            }
        }),
    }
}

/// Repeated `KeyValue` at `field` (`attributes` in every message that has them).
fn attributes<W: Writer>(w: &mut W, field: u32, attrs: &[(Key, AttrValue)]) {
    for (k, v) in attrs {
        w.item(field, "attributes", |kv| {
            kv.string(1, "key", k);
            kv.message(2, "value", |x| any_value(x, v));
        });
    }
}

/// `Resource` (its attributes are all strings).
fn resource<W: Writer>(w: &mut W, attrs: &[(String, String)]) {
    w.message(1, "resource", |r| {
        for (k, v) in attrs {
            r.item(1, "attributes", |kv| {
                kv.string(1, "key", k);
                kv.message(2, "value", |x| x.string(1, "stringValue", v));
            });
        }
    });
}

/// `InstrumentationScope`: the agent itself.
fn scope<W: Writer>(w: &mut W) {
    w.message(1, "scope", |s| {
        s.string(1, "name", "agent");
        s.string(2, "version", env!("CARGO_PKG_VERSION"));
    });
}

fn span<W: Writer>(w: &mut W, s: &SpanData) {
    w.id(1, "traceId", &s.trace_id);
    w.id(2, "spanId", &s.span_id);
    if !s.trace_state.is_empty() {
        w.string(3, "traceState", &s.trace_state);
    }
    if let Some(p) = &s.parent_span_id {
        w.id(4, "parentSpanId", p);
    }
    w.string(5, "name", &s.name);
    w.enumeration(6, "kind", s.kind as u32);
    w.fixed64(7, "startTimeUnixNano", s.start_ns);
    w.fixed64(8, "endTimeUnixNano", s.end_ns);
    attributes(w, 9, &s.attrs);
    for e in &s.events {
        w.item(11, "events", |ev| {
            ev.fixed64(1, "timeUnixNano", e.time_ns);
            ev.string(2, "name", &e.name);
            attributes(ev, 3, &e.attrs);
        });
    }
    w.message(15, "status", |st| {
        if !s.status_message.is_empty() {
            st.string(2, "message", &s.status_message);
        }
        st.enumeration(3, "code", s.status as u32);
    });
    w.fixed32(16, "flags", u32::from(s.flags));
}

fn traces_request<W: Writer>(res: &[(String, String)], spans: &[SpanData]) -> W {
    let mut w = W::new();
    w.item(1, "resourceSpans", |rs| {
        resource(rs, res);
        rs.item(2, "scopeSpans", |ss| {
            scope(ss);
            for s in spans {
                ss.item(2, "spans", |x| span(x, s));
            }
        });
    });
    w
}

fn metric<W: Writer>(w: &mut W, m: &MetricData, start_ns: u64, now_ns: u64) {
    w.string(1, "name", m.name);
    w.string(2, "description", m.description);
    w.string(3, "unit", m.unit);
    const CUMULATIVE: u32 = 2;
    match &m.points {
        Points::Sum(points) => w.message(7, "sum", |s| {
            for (attrs, n) in points {
                s.item(1, "dataPoints", |p| {
                    attributes(p, 7, attrs);
                    p.fixed64(2, "startTimeUnixNano", start_ns);
                    p.fixed64(3, "timeUnixNano", now_ns);
                    match n {
                        Number::F64(x) => p.double(4, "asDouble", *x),
                        Number::Int(i) => p.sfixed64(6, "asInt", *i),
                    }
                });
            }
            s.enumeration(2, "aggregationTemporality", CUMULATIVE);
            s.boolean(3, "isMonotonic", true);
        }),
        Points::Histogram(points) => w.message(9, "histogram", |h| {
            for (attrs, hp) in points {
                h.item(1, "dataPoints", |p| {
                    attributes(p, 9, attrs);
                    p.fixed64(2, "startTimeUnixNano", start_ns);
                    p.fixed64(3, "timeUnixNano", now_ns);
                    p.fixed64(4, "count", hp.count);
                    p.double(5, "sum", hp.sum);
                    p.packed_fixed64(6, "bucketCounts", &hp.buckets);
                    p.packed_double(7, "explicitBounds", hp.bounds);
                    p.double(11, "min", hp.min);
                    p.double(12, "max", hp.max);
                });
            }
            h.enumeration(2, "aggregationTemporality", CUMULATIVE);
        }),
    }
}

fn metrics_request<W: Writer>(
    res: &[(String, String)],
    metrics: &[MetricData],
    start_ns: u64,
    now_ns: u64,
) -> W {
    let mut w = W::new();
    w.item(1, "resourceMetrics", |rm| {
        resource(rm, res);
        rm.item(2, "scopeMetrics", |sm| {
            scope(sm);
            for m in metrics {
                sm.item(2, "metrics", |x| metric(x, m, start_ns, now_ns));
            }
        });
    });
    w
}

/// An `ExportTraceServiceRequest` in `protocol`'s encoding.
pub(crate) fn encode_traces(json: bool, res: &[(String, String)], spans: &[SpanData]) -> Vec<u8> {
    if json {
        Value::Object(traces_request::<Json>(res, spans).0)
            .to_string()
            .into_bytes()
    } else {
        traces_request::<Protobuf>(res, spans).0
    }
}

/// An `ExportMetricsServiceRequest` in `protocol`'s encoding.
pub(crate) fn encode_metrics(
    json: bool,
    res: &[(String, String)],
    metrics: &[MetricData],
    start_ns: u64,
    now_ns: u64,
) -> Vec<u8> {
    if json {
        Value::Object(metrics_request::<Json>(res, metrics, start_ns, now_ns).0)
            .to_string()
            .into_bytes()
    } else {
        metrics_request::<Protobuf>(res, metrics, start_ns, now_ns).0
    }
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
