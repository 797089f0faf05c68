use super::*;

#[test]
fn traceparent_round_trips() {
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let ctx = SpanContext::parse(tp, Some("congo=t61rcWkgMzE")).unwrap();
    assert_eq!(ctx.traceparent(), tp);
    assert_eq!(ctx.flags, 1);
    assert_eq!(ctx.trace_state, "congo=t61rcWkgMzE");
}

#[test]
fn invalid_traceparents_are_refused() {
    for bad in [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "00-4bf92f3577b34da6a3ce929d0e0e47-00f067aa0ba902b7-01",
    ] {
        assert_eq!(SpanContext::parse(bad, None), None, "{bad}");
    }
    // A later version is read by its first four fields.
    assert!(
        SpanContext::parse(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later",
            None
        )
        .is_some()
    );
}

#[test]
fn entered_spans_nest_and_restore() {
    let a = SpanContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        None,
    );
    let b = SpanContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01",
        None,
    );
    assert!(child_env().is_empty());
    {
        let _outer = enter(a.clone());
        {
            let _inner = enter(b.clone());
            assert_eq!(current(), b);
        }
        assert_eq!(current(), a);
        assert_eq!(child_env()[0].1, a.unwrap().traceparent());
    }
    assert_eq!(current(), None);
}
