use super::*;

#[test]
fn an_answer_reaches_the_call_it_names_and_the_end_of_stdin_denies_the_rest() {
    let waiting = Mutex::new(Waiting::default());
    let (tx_a, rx_a) = channel();
    let (tx_b, rx_b) = channel();
    waiting.locked().calls.insert("a".into(), tx_a);
    waiting.locked().calls.insert("b".into(), tx_b);
    let input = b"not json\n{\"id\":\"zz\",\"decision\":\"allow\"}\n{\"id\":\"a\",\"decision\":\"deny\",\"message\":\"no\"}\n";
    read_answers(&input[..], &waiting);
    let a = rx_a.recv().unwrap();
    assert_eq!((a.id.as_str(), a.decision), ("a", Decision::Deny));
    assert_eq!(a.message.as_deref(), Some("no"));
    assert!(
        rx_b.recv().is_err(),
        "b was never answered: its sender is dropped"
    );
    assert!(waiting.locked().closed);
}

#[test]
fn a_bad_answer_says_what_is_expected() {
    let e = parse_answer(r#"{"id":"a","decision":"maybe"}"#).unwrap_err();
    assert!(e.contains("\"allow\"|\"deny\""), "{e}");
}

#[test]
fn file_answers_and_permission_answers_share_stdin_each_reaching_its_waiter() {
    let waiting = Mutex::new(Waiting::default());
    let (tx_call, rx_call) = channel();
    let (tx_file, rx_file) = channel();
    let (tx_left, rx_left) = channel();
    waiting.locked().calls.insert("c".into(), tx_call);
    waiting.locked().files.insert("file_1".into(), tx_file);
    waiting.locked().files.insert("file_2".into(), tx_left);
    let input = concat!(
        r#"{"type":"file.result","id":"file_1","content":"buffer\n"}"#,
        "\n",
        r#"{"id":"c","decision":"allow"}"#,
        "\n",
        r#"{"type":"file.result","id":"file_9"}"#,
        "\n"
    );
    read_answers(input.as_bytes(), &waiting);
    assert_eq!(rx_call.recv().unwrap().decision, Decision::Allow);
    assert_eq!(
        rx_file.recv().unwrap(),
        FileAnswer::Done {
            id: "file_1".into(),
            content: Some("buffer\n".into())
        }
    );
    assert!(rx_left.recv().is_err(), "stdin ended: file_2 fails");
}
