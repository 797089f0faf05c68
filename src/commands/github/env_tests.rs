//! Unit tests of `env.rs`: the variables and their defaults.

use super::*;

#[test]
fn the_variables_are_read_with_defaults() {
    let vars = |k: &str| match k {
        "GITHUB_REPOSITORY" => Some("octo/hello".to_string()),
        "GITHUB_EVENT_NAME" => Some("issues".to_string()),
        "GITHUB_EVENT_PATH" => Some("/e.json".to_string()),
        "GITHUB_RUN_ID" => Some("12".to_string()),
        "GITHUB_API_URL" => Some("https://ghe.example/api/v3/".to_string()),
        _ => None,
    };
    let env = GithubEnv::read(&vars).unwrap();
    assert_eq!(env.api_url, "https://ghe.example/api/v3");
    assert_eq!(env.server_url, "https://github.com");
    assert_eq!(
        env.run_url().unwrap(),
        "https://github.com/octo/hello/actions/runs/12"
    );
    let bad = |k: &str| (k == "GITHUB_REPOSITORY").then(|| "nope".to_string());
    assert!(
        GithubEnv::read(&bad)
            .unwrap_err()
            .contains("not OWNER/REPO")
    );
    assert!(
        GithubEnv::read(&|_| None)
            .unwrap_err()
            .contains("GITHUB_REPOSITORY is not set")
    );
}
