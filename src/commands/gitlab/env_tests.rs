//! Unit tests of `env.rs`: the variables, their defaults and their errors.

use super::*;

#[test]
fn the_variables_are_read_with_defaults() {
    let vars = |k: &str| match k {
        "CI_API_V4_URL" => Some("https://gitlab.corp.example:8443/api/v4/".to_string()),
        "CI_PROJECT_ID" => Some("7".to_string()),
        "CI_PROJECT_PATH" => Some("group/sub/hello".to_string()),
        "CI_MERGE_REQUEST_IID" => Some("5".to_string()),
        "CI_SERVER_TLS_CA_FILE" => Some("/builds/ca.pem".to_string()),
        _ => None,
    };
    let env = GitlabEnv::read(&vars).unwrap();
    assert_eq!(env.api_url, "https://gitlab.corp.example:8443/api/v4");
    assert_eq!(env.server_url, "https://gitlab.corp.example:8443");
    assert_eq!(env.host(), "gitlab.corp.example");
    assert_eq!((env.project_id, env.mr_iid), (7, Some(5)));
    assert_eq!(env.ca_file, Some(PathBuf::from("/builds/ca.pem")));
    let bad = |k: &str| match k {
        "CI_API_V4_URL" => Some("https://g/api/v4".to_string()),
        "CI_PROJECT_ID" => Some("seven".to_string()),
        _ => None,
    };
    assert!(GitlabEnv::read(&bad).unwrap_err().contains("not a number"));
    assert!(
        GitlabEnv::read(&|_| None)
            .unwrap_err()
            .contains("CI_API_V4_URL is not set")
    );
}
