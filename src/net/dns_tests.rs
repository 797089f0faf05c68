use super::*;

#[test]
fn the_test_table_parses_names_and_answers_in_turn() {
    let t = test::parsed("Rebind.test=203.0.113.10/127.0.0.1; bad ; x.test=nope;v6.test=::1");
    assert_eq!(
        t,
        vec![
            (
                "rebind.test".to_string(),
                vec![
                    "203.0.113.10".parse().unwrap(),
                    "127.0.0.1".parse().unwrap()
                ]
            ),
            ("v6.test".to_string(), vec!["::1".parse().unwrap()]),
        ]
    );
}

#[test]
fn a_literal_resolves_to_itself() {
    let a = lookup("127.0.0.1", 8080).unwrap();
    assert_eq!(a, vec!["127.0.0.1:8080".parse().unwrap()]);
}
