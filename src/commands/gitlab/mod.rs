//! `agent gitlab`: `@agent` on a GitLab issue or merge request, in a CI job. Reads the
//! pipeline's variables (`env`) and the webhook payload a pipeline trigger passes
//! (`hook`; none: the pipeline itself, e.g. `merge_request_event` with `--prompt` or
//! `--review`), and hands them to the conversation core shared with `agent github`
//! (`commands::forge::conversation`) with GitLab's REST v4 client behind the `Forge`
//! trait (`forge`, `api`).
//!
//! `GITLAB_TOKEN` (a project, group or personal access token with the `api` scope) posts
//! the notes, reads the members and opens merge requests; `CI_JOB_TOKEN` can do none of
//! these, so it is not used. Both are taken out of the process environment before
//! anything else (Bash, hooks, MCP servers and `--keep-env` cannot get them) and every
//! output redacts them. git gets the token for one command at a time (`push::auth_env`),
//! and origin's URL loses the job token the runner wrote into it.

pub(crate) mod api;
pub(crate) mod env;
mod forge;
pub(crate) mod hook;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::commands::forge::conversation::{self, Conversation, Settings};
use crate::commands::forge::event::{Event, Triggers};
use crate::commands::forge::push;
use crate::config::cli::GitlabArgs;
use crate::error::ExitStatus;
use crate::util::output;
use env::GitlabEnv;

/// The instruction of a `--review` on a pipeline without a payload.
const REVIEW_INSTRUCTION: &str = "Review this merge request.";

pub(crate) fn gitlab_command(mut args: GitlabArgs) -> ExitStatus {
    let tokens = take_tokens();
    let setup = match Setup::read(&args, &tokens) {
        Ok(s) => s,
        Err(e) => {
            output::error(&e);
            return ExitStatus::Usage;
        }
    };
    let flags = args.gitlab.clone();
    let mut instruction = match conversation::user_prompt(args.gitlab.prompt.take(), &mut args.run)
    {
        Ok(p) => p,
        Err(e) => {
            output::error(&e);
            return ExitStatus::Usage;
        }
    };
    if instruction.is_none() && flags.review && setup.event.action == "pipeline" {
        instruction = Some(REVIEW_INSTRUCTION.to_string());
    }
    if let Err(e) = conversation::check_run_flags(&mut args.run) {
        return output::usage_failure(&e);
    }
    let token = setup.token.clone();
    let ca = setup.env.ca_file.as_deref();
    let api = match api::Api::new(&setup.env.api_url, &token, args.run.max_retries, ca) {
        Ok(a) => a,
        Err(e) => {
            output::error(&e);
            return ExitStatus::Usage;
        }
    };
    let mut git_auth = push::auth_env(&setup.env.server_url, "oauth2", &token);
    if let Some(ca) = ca {
        git_auth.push(("GIT_SSL_CAINFO".into(), ca.display().to_string()));
    }
    let mut secrets = vec![token];
    secrets.extend(tokens.job.clone());
    forget_origin_credentials(&setup.workspace, &secrets);
    let forge = forge::GitlabForge::new(api, &setup.env, &setup.payload, flags.close_issue);
    let c = Conversation {
        forge: Arc::new(forge),
        run_url: setup.env.job_url.clone(),
        event: setup.event,
        secrets,
        workspace: setup.workspace,
        author: setup.author,
        git_auth,
    };
    let settings = Settings {
        triggers: Triggers {
            trigger_phrase: flags.trigger_phrase,
            label_trigger: flags.label_trigger,
            assignee_trigger: flags.assignee_trigger,
        },
        allowed_bots: flags.allowed_bots,
        review: flags.review,
        no_push: flags.no_push,
        progress_interval: flags.progress_interval,
    };
    let (status, outputs) = conversation::respond(&c, &settings, instruction.as_deref(), args.run);
    for (k, v) in outputs.iter().filter(|(_, v)| !v.is_empty()) {
        output::info(&format!("gitlab: {k}: {v}"));
    }
    status
}

/// The tokens, moved out of the environment. No thread exists yet (`main` has only
/// parsed the arguments), which `remove_var` needs.
struct Tokens {
    gitlab: Option<String>,
    job: Option<String>,
}

fn take_tokens() -> Tokens {
    let take = |name: &str| {
        let v = std::env::var(name).ok().filter(|t| !t.is_empty());
        // SAFETY: single-threaded here (see above); nothing holds a pointer into the
        // environment.
        unsafe { std::env::remove_var(name) };
        v
    };
    Tokens {
        gitlab: take("GITLAB_TOKEN"),
        job: take("CI_JOB_TOKEN"),
    }
}

/// What is known before the run.
struct Setup {
    env: GitlabEnv,
    payload: Value,
    event: Event,
    token: String,
    workspace: std::path::PathBuf,
    author: push::Identity,
}

impl Setup {
    fn read(args: &GitlabArgs, tokens: &Tokens) -> Result<Setup, String> {
        let env = GitlabEnv::read(&|k| std::env::var(k).ok())?;
        let token = match (&tokens.gitlab, &tokens.job) {
            (Some(t), _) => t.clone(),
            (None, Some(_)) => return Err(NO_TOKEN_BUT_JOB_TOKEN.to_string()),
            (None, None) => return Err(NO_TOKEN.to_string()),
        };
        let payload = payload(
            args.gitlab.payload.as_deref(),
            env.trigger_payload.as_deref(),
        )?;
        let event = match &payload {
            Some(p) => hook::parse(p, &env, args.gitlab.label_trigger.as_deref())?,
            None => hook::pipeline(&env),
        };
        let workspace = conversation::workspace(args.run.cwd.as_deref())?;
        let author = push::Identity::parse(&args.gitlab.git_author)?;
        Ok(Setup {
            env,
            payload: payload.unwrap_or(Value::Null),
            event,
            token,
            workspace,
            author,
        })
    }
}

const NO_TOKEN: &str = "GITLAB_TOKEN is not set: give a project (or group, or personal) access \
     token with the `api` scope and the Developer role, as a masked CI/CD variable";

const NO_TOKEN_BUT_JOB_TOKEN: &str = "GITLAB_TOKEN is not set, and CI_JOB_TOKEN cannot do what \
     agent gitlab needs: a job token can clone and fetch the project, but cannot post or edit \
     notes, read the project's members, open merge requests or (by default) push. Give a \
     project (or group, or personal) access token with the `api` scope and the Developer role \
     as the masked CI/CD variable GITLAB_TOKEN";

/// The webhook payload: `--payload FILE`, else `TRIGGER_PAYLOAD` (a file variable's path,
/// or the JSON itself), else none.
fn payload(flag: Option<&Path>, variable: Option<&str>) -> Result<Option<Value>, String> {
    let (what, text) = match (flag, variable) {
        (Some(f), _) => (
            format!("--payload {}", f.display()),
            std::fs::read_to_string(f).map_err(|e| format!("--payload {}: {e}", f.display()))?,
        ),
        (None, Some(v)) if v.trim_start().starts_with('{') => {
            ("TRIGGER_PAYLOAD".to_string(), v.to_string())
        }
        (None, Some(v)) => (
            format!("TRIGGER_PAYLOAD {v}"),
            std::fs::read_to_string(v).map_err(|e| format!("TRIGGER_PAYLOAD {v}: {e}"))?,
        ),
        (None, None) => return Ok(None),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("{what} is not JSON: {e}"))
}

/// A GitLab runner clones with the job token in origin's URL
/// (`https://gitlab-ci-token:TOKEN@host/…`), where the run's commands would read it and
/// where it would stand in for the access token on a push. The URL is set back without
/// it (a local path or a URL without credentials is left alone).
fn forget_origin_credentials(workspace: &Path, secrets: &[String]) {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(workspace)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(url) = git(&["remote", "get-url", "origin"]) else {
        return;
    };
    let Some(bare) = without_credentials(&url) else {
        return;
    };
    if git(&["remote", "set-url", "origin", &bare]).is_none() {
        output::warn(&crate::util::secrets::redact(
            "cannot take the credentials out of origin's URL",
            secrets,
        ));
    }
}

/// `scheme://user:pass@host/…` without `user:pass@`; `None` when it has none.
pub(crate) fn without_credentials(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host_end = rest.find('/').unwrap_or(rest.len());
    let at = rest[..host_end].rfind('@')?;
    Some(format!("{scheme}://{}", &rest[at + 1..]))
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
