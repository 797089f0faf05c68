//! The metric instruments and their cumulative aggregation in memory: a counter adds, a
//! histogram counts into explicit buckets (with sum, min and max), one series per
//! distinct attribute set. Read out as `MetricData` by the exporter.

use super::encode::{AttrValue, Attrs, HistogramPoint, MetricData, Number, Points};

/// A series' attributes: all strings, keys constant.
type SeriesAttrs = Vec<(&'static str, String)>;

/// What an instrument aggregates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    /// A monotonic sum of integers.
    Counter,
    /// A monotonic sum of doubles (USD).
    CounterF64,
    /// A histogram over these bucket bounds.
    Histogram(&'static [f64]),
}

/// One instrument, declared as a constant where it is recorded.
#[derive(Debug, PartialEq)]
pub(crate) struct Instrument {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) unit: &'static str,
    pub(crate) kind: Kind,
}

#[derive(Debug)]
enum State {
    Int(i64),
    F64(f64),
    Histogram(HistogramPoint),
}

#[derive(Debug)]
struct Series {
    instrument: &'static Instrument,
    attrs: SeriesAttrs,
    state: State,
}

/// Every series recorded so far (a run has a handful: a linear search is fine).
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    series: Vec<Series>,
}

impl Metrics {
    /// Adds `value` to the series of `instrument` with these attributes (allocating only
    /// for a new series).
    pub(crate) fn record(
        &mut self,
        instrument: &'static Instrument,
        value: f64,
        attrs: &[(&'static str, &str)],
    ) {
        let found = self
            .series
            .iter_mut()
            .find(|s| std::ptr::eq(s.instrument, instrument) && same(&s.attrs, attrs));
        let series = match found {
            Some(s) => s,
            None => {
                let state = match instrument.kind {
                    Kind::Counter => State::Int(0),
                    Kind::CounterF64 => State::F64(0.0),
                    Kind::Histogram(bounds) => State::Histogram(HistogramPoint {
                        count: 0,
                        sum: 0.0,
                        min: f64::INFINITY,
                        max: f64::NEG_INFINITY,
                        bounds,
                        buckets: vec![0; bounds.len() + 1],
                    }),
                };
                self.series.push(Series {
                    instrument,
                    attrs: attrs.iter().map(|(k, v)| (*k, v.to_string())).collect(),
                    state,
                });
                let last = self.series.len() - 1;
                &mut self.series[last]
            }
        };
        match &mut series.state {
            State::Int(n) => *n += value as i64,
            State::F64(x) => *x += value,
            State::Histogram(h) => {
                h.count += 1;
                h.sum += value;
                h.min = h.min.min(value);
                h.max = h.max.max(value);
                // Buckets are (previous bound, bound]: the first bound not below the value.
                let i = h
                    .bounds
                    .iter()
                    .position(|b| value <= *b)
                    .unwrap_or(h.bounds.len());
                if let Some(b) = h.buckets.get_mut(i) {
                    *b += 1;
                }
            }
        }
    }

    /// The metrics as exported, instruments in the order first recorded.
    pub(crate) fn snapshot(&self) -> Vec<MetricData> {
        let mut out: Vec<MetricData> = Vec::new();
        for s in &self.series {
            let i = match out.iter().position(|m| m.name == s.instrument.name) {
                Some(i) => i,
                None => {
                    let points = match s.instrument.kind {
                        Kind::Histogram(_) => Points::Histogram(Vec::new()),
                        _ => Points::Sum(Vec::new()),
                    };
                    out.push(MetricData {
                        name: s.instrument.name,
                        description: s.instrument.description,
                        unit: s.instrument.unit,
                        points,
                    });
                    out.len() - 1
                }
            };
            let attrs: Attrs = s
                .attrs
                .iter()
                .map(|(k, v)| ((*k).into(), AttrValue::Str(v.clone().into())))
                .collect();
            match (&mut out[i].points, &s.state) {
                (Points::Sum(p), State::Int(n)) => p.push((attrs, Number::Int(*n))),
                (Points::Sum(p), State::F64(x)) => p.push((attrs, Number::F64(*x))),
                (Points::Histogram(p), State::Histogram(h)) => p.push((attrs, h.clone())),
                _ => {}
            }
        }
        out
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.series.is_empty()
    }
}

/// The same attribute set (order-insensitive: instrumentations list them in one order,
/// but nothing should depend on it).
fn same(a: &[(&'static str, String)], b: &[(&'static str, &str)]) -> bool {
    a.len() == b.len()
        && b.iter()
            .all(|(k, v)| a.iter().any(|(ak, av)| ak == k && av == v))
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
