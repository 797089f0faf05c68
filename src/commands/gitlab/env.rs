//! The GitLab CI variables `agent gitlab` reads: where the API and the web server are
//! (`CI_API_V4_URL`, `CI_SERVER_URL`, a self-managed server's `CI_SERVER_TLS_CA_FILE`),
//! the project (`CI_PROJECT_ID`, `CI_PROJECT_PATH`, `CI_DEFAULT_BRANCH`), the pipeline
//! (`CI_PIPELINE_SOURCE`, `CI_JOB_URL`, `CI_MERGE_REQUEST_*`, `GITLAB_USER_*`) and the
//! trigger's payload (`TRIGGER_PAYLOAD`).

use std::path::PathBuf;

/// The pipeline's variables (GitLab CI sets them; tests set them by hand).
#[derive(Debug, Clone, Default)]
pub(crate) struct GitlabEnv {
    /// `CI_API_V4_URL`, no trailing `/`.
    pub api_url: String,
    /// `CI_SERVER_URL`, no trailing `/`.
    pub server_url: String,
    pub project_id: u64,
    /// `group/sub/project`.
    pub project_path: String,
    pub default_branch: Option<String>,
    /// `merge_request_event`, `trigger`, `push`, `web`, … (none outside a pipeline).
    pub pipeline_source: Option<String>,
    pub job_url: Option<String>,
    pub ca_file: Option<PathBuf>,
    /// `TRIGGER_PAYLOAD`: a file path (GitLab passes it as a file variable) or the JSON.
    pub trigger_payload: Option<String>,
    /// The merge request of a `merge_request_event` pipeline.
    pub mr_iid: Option<u64>,
    pub mr_title: Option<String>,
    pub mr_description: Option<String>,
    /// The user who started the pipeline.
    pub user_id: Option<u64>,
    pub user_login: Option<String>,
}

impl GitlabEnv {
    /// Reads the variables; `Err` names the first one missing or malformed.
    pub(crate) fn read(var: &dyn Fn(&str) -> Option<String>) -> Result<GitlabEnv, String> {
        let get = |name: &str| var(name).filter(|v| !v.is_empty());
        let need = |name: &str| {
            get(name)
                .ok_or_else(|| format!("{name} is not set (agent gitlab runs in a GitLab CI job)"))
        };
        let trimmed = |v: String| v.trim_end_matches('/').to_string();
        let api_url = trimmed(need("CI_API_V4_URL")?);
        let server_url = match get("CI_SERVER_URL") {
            Some(s) => trimmed(s),
            None => api_url
                .strip_suffix("/api/v4")
                .map(String::from)
                .ok_or("CI_SERVER_URL is not set and CI_API_V4_URL does not end in /api/v4")?,
        };
        let id = need("CI_PROJECT_ID")?;
        let project_id = id
            .parse()
            .map_err(|_| format!("CI_PROJECT_ID is {id:?}, not a number"))?;
        let number = |name: &str| -> Result<Option<u64>, String> {
            get(name)
                .map(|v| {
                    v.parse()
                        .map_err(|_| format!("{name} is {v:?}, not a number"))
                })
                .transpose()
        };
        Ok(GitlabEnv {
            api_url,
            server_url,
            project_id,
            project_path: need("CI_PROJECT_PATH")?,
            default_branch: get("CI_DEFAULT_BRANCH"),
            pipeline_source: get("CI_PIPELINE_SOURCE"),
            job_url: get("CI_JOB_URL"),
            ca_file: get("CI_SERVER_TLS_CA_FILE").map(PathBuf::from),
            trigger_payload: get("TRIGGER_PAYLOAD"),
            mr_iid: number("CI_MERGE_REQUEST_IID")?,
            mr_title: get("CI_MERGE_REQUEST_TITLE"),
            mr_description: get("CI_MERGE_REQUEST_DESCRIPTION"),
            user_id: number("GITLAB_USER_ID")?,
            user_login: get("GITLAB_USER_LOGIN"),
        })
    }

    /// The host of the web server (`gitlab.example.com`), for noreply addresses.
    pub(crate) fn host(&self) -> &str {
        let rest = self
            .server_url
            .split_once("://")
            .map_or(self.server_url.as_str(), |(_, r)| r);
        rest.split(['/', ':']).next().unwrap_or(rest)
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
