//! Unit tests of `verify.rs`.

use super::*;
use crate::model::protocol::ContentBlock;
use std::path::PathBuf;

fn setup(cmd: &str, rounds: u32) -> (Verifier, ToolContext, Mutex<RunRecord>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = crate::tools::test_support::ctx(dir.path());
    let v = Verifier::new(VerifySpec {
        command: cmd.into(),
        max_rounds: rounds,
        timeout: Duration::from_secs(30),
    });
    let rec = Mutex::new(RunRecord::new("m", PathBuf::from("/w"), vec![]));
    (v, ctx, rec, dir)
}

fn text(m: &Message) -> String {
    match &m.content[0] {
        ContentBlock::Text { text } => text.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn passing_command_is_recorded() {
    let (v, ctx, rec, _d) = setup("echo ok; test -d .", 3);
    assert_eq!(
        v.verify(&ctx, &Events::disabled(), &rec, true),
        Verdict::Passed
    );
    let r = rec.into_inner().unwrap();
    assert_eq!(r.verifications().len(), 1);
    let x = &r.verifications()[0];
    assert_eq!((x.round, x.exit_code, x.passed), (1, Some(0), true));
    assert_eq!(x.output_tail, "ok\n");
}

#[test]
fn failure_goes_back_then_gives_up_after_max_rounds() {
    let (v, ctx, rec, _d) = setup("echo 'test foo failed' >&2; exit 3", 2);
    let ev = Events::disabled();
    let Verdict::Retry(m) = v.verify(&ctx, &ev, &rec, true) else {
        panic!("first failure must go back to the model")
    };
    let t = text(&m);
    assert!(t.starts_with("The verification command `echo"), "{t}");
    assert!(t.contains("failed (exit 3)"), "{t}");
    assert!(t.contains("<output>test foo failed</output>"), "{t}");
    assert!(t.contains("round 1 of 2"), "{t}");
    match v.verify(&ctx, &ev, &rec, true) {
        Verdict::Failed(msg) => assert!(msg.contains("after 2 rounds"), "{msg}"),
        other => panic!("{other:?}"),
    }
    let r = rec.into_inner().unwrap();
    let rounds: Vec<_> = r
        .verifications()
        .iter()
        .map(|x| (x.round, x.exit_code, x.passed))
        .collect();
    assert_eq!(rounds, vec![(1, Some(3), false), (2, Some(3), false)]);
}

#[test]
fn no_turn_left_ends_at_once() {
    let (v, ctx, rec, _d) = setup("false", 3);
    match v.verify(&ctx, &Events::disabled(), &rec, false) {
        Verdict::Failed(msg) => assert!(msg.contains("--max-turns"), "{msg}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn timeout_fails_the_round() {
    let (mut v, ctx, rec, _d) = setup("sleep 5", 3);
    v.spec.timeout = Duration::from_millis(200);
    let Verdict::Retry(m) = v.verify(&ctx, &Events::disabled(), &rec, true) else {
        panic!()
    };
    assert!(text(&m).contains("timed out after 200ms"), "{}", text(&m));
    let r = rec.into_inner().unwrap();
    assert!(r.verifications()[0].timed_out && !r.verifications()[0].passed);
}

#[test]
fn secrets_are_not_in_the_environment() {
    let (v, mut ctx, rec, _d) = setup("test -z \"$MY_API_KEY\" && test \"$KEEP\" = yes", 1);
    ctx.child_env = std::sync::Arc::new(crate::util::secrets::scrubbed_env(
        vec![
            ("PATH".to_string(), std::env::var("PATH").unwrap()),
            ("MY_API_KEY".to_string(), "sekret-value".to_string()),
            ("KEEP".to_string(), "yes".to_string()),
        ]
        .into_iter(),
        &[],
    ));
    assert_eq!(
        v.verify(&ctx, &Events::disabled(), &rec, true),
        Verdict::Passed
    );
}

#[test]
fn tail_keeps_the_end_on_char_boundaries() {
    assert_eq!(tail("abc", 5), "abc");
    assert_eq!(tail("aéécd", 3), "écd");
}
