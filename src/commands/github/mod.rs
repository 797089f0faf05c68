//! `agent github`: `@agent` on an issue or a pull request. Reads the workflow's event
//! (`env`, `forge::event::Event::parse`), and hands it to the conversation core shared
//! with `agent gitlab` (`commands::forge::conversation`), with GitHub's REST client
//! behind the `Forge` trait (`forge`, `api`). Writes `comment-url`, `branch` and
//! `pr-url` to `$GITHUB_OUTPUT`.
//!
//! `GITHUB_TOKEN` is taken out of the process environment before anything else: Bash,
//! hooks, MCP servers (and `--keep-env`) cannot get it, and every output redacts it.

pub(crate) mod api;
pub(crate) mod env;
mod forge;
mod images;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::commands::forge::conversation::{self, Conversation, Settings};
use crate::commands::forge::event::{Event, Triggers};
use crate::commands::forge::push;
use crate::config::cli::GithubArgs;
use crate::error::ExitStatus;
use crate::util::output;
use api::Api;
use env::GithubEnv;

pub(crate) fn github_command(mut args: GithubArgs) -> ExitStatus {
    let token = take_token();
    let setup = match Setup::read(&args, token) {
        Ok(s) => s,
        Err(e) => {
            output::error(&e);
            return ExitStatus::Usage;
        }
    };
    let flags = args.github.clone();
    let instruction = match conversation::user_prompt(args.github.prompt.take(), &mut args.run) {
        Ok(p) => p,
        Err(e) => {
            output::error(&e);
            return ExitStatus::Usage;
        }
    };
    if let Err(e) = conversation::check_run_flags(&mut args.run) {
        return output::usage_failure(&e);
    }
    let api = Api::new(&setup.env.api_url, &setup.token, args.run.max_retries);
    let git_auth = push::auth_env(&setup.env.server_url, "x-access-token", &setup.token);
    let c = Conversation {
        forge: Arc::new(forge::GithubForge::new(api, &setup.env, &setup.event)),
        run_url: setup.env.run_url(),
        event: setup.event,
        secrets: vec![setup.token],
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
    if !outputs.is_empty() {
        write_outputs(&outputs);
    }
    status
}

/// `GITHUB_TOKEN`, moved out of the environment. No thread exists yet (`main` has only
/// parsed the arguments), which `remove_var` needs.
fn take_token() -> Option<String> {
    let token = std::env::var("GITHUB_TOKEN").ok().filter(|t| !t.is_empty());
    // SAFETY: single-threaded here (see above); nothing holds a pointer into the environment.
    unsafe { std::env::remove_var("GITHUB_TOKEN") };
    token
}

/// What is known before the run: the variables, the event, the token, the workspace.
struct Setup {
    env: GithubEnv,
    event: Event,
    token: String,
    workspace: PathBuf,
    author: push::Identity,
}

impl Setup {
    fn read(args: &GithubArgs, token: Option<String>) -> Result<Setup, String> {
        let env = GithubEnv::read(&|k| std::env::var(k).ok())?;
        let token = token.ok_or("GITHUB_TOKEN is not set: give the job's token (`github-token` of the Action, or env GITHUB_TOKEN: ${{ github.token }})")?;
        let text = std::fs::read_to_string(&env.event_path)
            .map_err(|e| format!("cannot read GITHUB_EVENT_PATH {}: {e}", env.event_path))?;
        let payload: Value = serde_json::from_str(&text)
            .map_err(|e| format!("GITHUB_EVENT_PATH {} is not JSON: {e}", env.event_path))?;
        let event = Event::parse(&env.event_name, &payload)?;
        let workspace = conversation::workspace(args.run.cwd.as_deref())?;
        let author = push::Identity::parse(&args.github.git_author)?;
        Ok(Setup {
            env,
            event,
            token,
            workspace,
            author,
        })
    }
}

/// `comment-url`, `branch` and `pr-url` for the workflow (`$GITHUB_OUTPUT`), when set.
fn write_outputs(outputs: &[(&str, String)]) {
    let Some(path) = std::env::var_os("GITHUB_OUTPUT").filter(|p| !p.is_empty()) else {
        return;
    };
    let text: String = outputs
        .iter()
        .map(|(k, v)| format!("{k}={}\n", v.replace(['\n', '\r'], " ")))
        .collect();
    use std::io::Write;
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        output::warn(&format!(
            "cannot write GITHUB_OUTPUT {}: {e}",
            Path::new(&path).display()
        ));
    }
}
