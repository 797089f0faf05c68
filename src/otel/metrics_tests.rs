use super::*;

static H: Instrument = Instrument {
    name: "h",
    description: "",
    unit: "s",
    kind: Kind::Histogram(&[1.0, 10.0]),
};
static C: Instrument = Instrument {
    name: "c",
    description: "",
    unit: "1",
    kind: Kind::Counter,
};

#[test]
fn histograms_bucket_and_counters_add_per_attribute_set() {
    let mut m = Metrics::default();
    let a = |v: &'static str| -> Attrs { vec![("k".into(), AttrValue::from(v))] };
    for x in [0.5, 1.0, 5.0, 50.0] {
        m.record(&H, x, &[("k", "x")]);
    }
    m.record(&C, 1.0, &[("k", "x")]);
    m.record(&C, 2.0, &[("k", "y")]);
    m.record(&C, 3.0, &[("k", "x")]);
    let snap = m.snapshot();
    assert_eq!(snap.len(), 2);
    let Points::Histogram(h) = &snap[0].points else {
        panic!("{snap:?}")
    };
    assert_eq!(h[0].1.count, 4);
    assert_eq!(h[0].1.buckets, vec![2, 1, 1]);
    assert_eq!((h[0].1.min, h[0].1.max, h[0].1.sum), (0.5, 50.0, 56.5));
    let Points::Sum(c) = &snap[1].points else {
        panic!("{snap:?}")
    };
    assert_eq!(c, &vec![(a("x"), Number::Int(4)), (a("y"), Number::Int(2))]);
}
