//! The exit-code table: each status's code, the codes of other tables taken in, and the
//! fatal errors' statuses (exit 2 for each, as before they had types of their own).

use super::*;

#[test]
fn each_status_has_its_code() {
    assert_eq!(ExitStatus::Success.code(), 0);
    assert_eq!(ExitStatus::Failure.code(), 1);
    assert_eq!(ExitStatus::Usage.code(), 2);
    assert_eq!(ExitStatus::Code(130).code(), 130);
    assert_eq!(ExitCode::from(ExitStatus::Usage), ExitCode::from(2));
}

#[test]
fn a_run_code_becomes_the_status_of_the_same_code() {
    for code in [0, 1, 2, 3, 4, 5, 6, 124, 130] {
        assert_eq!(ExitStatus::from_code(code).code(), code);
    }
    assert_eq!(ExitStatus::from_code(0), ExitStatus::Success);
    assert_eq!(ExitStatus::from_code(1), ExitStatus::Failure);
    assert_eq!(ExitStatus::from_code(2), ExitStatus::Usage);
    assert_eq!(ExitStatus::from_code(3), ExitStatus::Code(3));
}

#[test]
fn fatal_errors_exit_2_and_keep_their_message() {
    for e in [
        Error::Usage("--max-turns: not a number".into()),
        Error::McpStartup("MCP server \"x\" did not start".into()),
        Error::Credentials("no AWS credentials".into()),
    ] {
        assert_eq!(e.status(), ExitStatus::Usage, "{e:?}");
        assert_eq!(e.exit_code(), 2);
    }
    assert_eq!(
        Error::Credentials("no AWS credentials".into()).to_string(),
        "no AWS credentials"
    );
}
