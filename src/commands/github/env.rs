//! The GitHub Actions variables `agent github` reads (`GITHUB_REPOSITORY`,
//! `GITHUB_EVENT_NAME`, `GITHUB_EVENT_PATH`, the API and server URLs, the run id).

/// The workflow's variables (GitHub Actions sets them all; tests set them by hand).
#[derive(Debug, Clone)]
pub(crate) struct GithubEnv {
    pub event_name: String,
    pub event_path: String,
    pub owner: String,
    pub repo: String,
    /// `GITHUB_API_URL` (GitHub Enterprise Server: `https://HOST/api/v3`), no trailing `/`.
    pub api_url: String,
    /// `GITHUB_SERVER_URL`, no trailing `/`.
    pub server_url: String,
    pub run_id: Option<String>,
}

impl GithubEnv {
    /// Reads the variables; `Err` names the first one missing or malformed.
    pub(crate) fn read(var: &dyn Fn(&str) -> Option<String>) -> Result<GithubEnv, String> {
        let need = |name: &str| {
            var(name).filter(|v| !v.is_empty()).ok_or_else(|| {
                format!("{name} is not set (agent github runs in a GitHub Actions workflow)")
            })
        };
        let repository = need("GITHUB_REPOSITORY")?;
        let Some((owner, repo)) = repository
            .split_once('/')
            .filter(|(o, r)| !o.is_empty() && !r.is_empty() && !r.contains('/'))
        else {
            return Err(format!(
                "GITHUB_REPOSITORY is {repository:?}, not OWNER/REPO"
            ));
        };
        let trimmed = |name: &str, default: &str| {
            var(name)
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_string())
                .trim_end_matches('/')
                .to_string()
        };
        Ok(GithubEnv {
            event_name: need("GITHUB_EVENT_NAME")?,
            event_path: need("GITHUB_EVENT_PATH")?,
            owner: owner.to_string(),
            repo: repo.to_string(),
            api_url: trimmed("GITHUB_API_URL", "https://api.github.com"),
            server_url: trimmed("GITHUB_SERVER_URL", "https://github.com"),
            run_id: var("GITHUB_RUN_ID").filter(|v| !v.is_empty()),
        })
    }

    /// `OWNER/REPO`.
    pub(crate) fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.repo)
    }

    /// The link to this workflow run, when the run id is known.
    pub(crate) fn run_url(&self) -> Option<String> {
        self.run_id
            .as_ref()
            .map(|id| format!("{}/{}/actions/runs/{id}", self.server_url, self.full_name()))
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
