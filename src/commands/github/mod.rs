//! `agent github`: `@agent` on an issue or a pull request. Reads the workflow's event,
//! decides whether it calls the agent (`event::trigger`) and whether its sender may
//! (write access, bots only when allowed), posts a progress comment, builds the prompt
//! with everything but the request fenced as data (`context`), runs `agent run` itself
//! (`commands::run::run_observed`, every run flag as given) while the comment follows its
//! tool calls (`progress`), then pushes the change (`push`) or posts the review
//! (`review`) and replaces the comment with the result.
//!
//! `GITHUB_TOKEN` is taken out of the process environment before anything else: Bash,
//! hooks, MCP servers (and `--keep-env`) cannot get it, and every output redacts it.

pub(crate) mod api;
pub(crate) mod context;
pub(crate) mod event;
mod instructions;
pub(crate) mod progress;
pub(crate) mod push;
pub(crate) mod review;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::commands::run::{Embedded, Task, run_observed};
use crate::config::cli::RunArgs;
use crate::config::cli::{GithubArgs, GithubFlags};
use crate::error::ExitStatus;
use crate::record::Transcript;
use crate::run::event::RunFinished;
use crate::util::output;
use crate::util::sync::Locked;
use api::Api;
use event::{Event, GithubEnv, PullRefs, Triggered};

/// Permissions that may call the agent.
const WRITE_PERMISSIONS: &[&str] = &["admin", "maintain", "write"];

/// Files of a pull request fetched (the API's page size; the prompt caps the list).
const FILES_PAGE: &str = "per_page=100";

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
    let instruction = match user_prompt(&mut args) {
        Ok(p) => p,
        Err(e) => {
            output::error(&e);
            return ExitStatus::Usage;
        }
    };
    if let Err(e) = check_run_flags(&mut args) {
        return output::usage_failure(&e);
    }
    let triggered = match event::trigger(&setup.event, &flags, instruction.as_deref()) {
        Ok(t) => t,
        Err(why) => {
            output::info(&format!("github: not triggered: {why}"));
            return ExitStatus::Success;
        }
    };
    let api = Arc::new(Api::new(
        &setup.env.api_url,
        &setup.token,
        args.run.max_retries,
    ));
    match gate(&api, &setup.env, &setup.event, &flags.allowed_bots) {
        Ok(()) => {}
        Err(Refusal::Refused(why)) => {
            output::info(&format!("github: refused: {why}"));
            return ExitStatus::Success;
        }
        Err(Refusal::Failed(e)) => {
            output::error(&e);
            return ExitStatus::Failure;
        }
    }
    let review = flags.review || triggered.review;
    match converse(&setup, &flags, &triggered, review, &api, args) {
        Ok(status) => status,
        Err(e) => {
            output::error(&e);
            ExitStatus::Failure
        }
    }
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
        let cwd = match &args.run.cwd {
            Some(d) => d.clone(),
            None => std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?,
        };
        let workspace = cwd
            .canonicalize()
            .map_err(|e| format!("-C {}: {e}", cwd.display()))?;
        let author = push::Identity::parse(&args.github.git_author)?;
        Ok(Setup {
            env,
            event,
            token,
            workspace,
            author,
        })
    }

    fn repo_path(&self) -> String {
        format!("/repos/{}/{}", self.env.owner, self.env.repo)
    }
}

/// The run's flags are checked as `agent run` checks them (with a stand-in prompt),
/// before anything is asked of GitHub: a bad flag is exit 2 with no comment posted. Not
/// with `--stdin-context`, whose check would read stdin (the run checks it then).
fn check_run_flags(args: &mut GithubArgs) -> Result<(), crate::error::Error> {
    if args.run.stdin_context {
        return Ok(());
    }
    let taken = args.run.prompt.replace("(the request)".to_string());
    let checked = crate::config::Config::from_args(&args.run, &crate::config::ProcessEnv);
    args.run.prompt = taken;
    checked.map(|_| ())
}

/// The instruction given on the command line (`--prompt`, PROMPT or `--prompt-file`),
/// taken off the run's arguments (the run gets the built prompt instead).
fn user_prompt(args: &mut GithubArgs) -> Result<Option<String>, String> {
    if let Some(p) = args.github.prompt.take().or_else(|| args.run.prompt.take()) {
        return Ok(Some(p).filter(|p| p != "-"));
    }
    match args.run.prompt_file.take() {
        Some(f) => std::fs::read_to_string(&f)
            .map(Some)
            .map_err(|e| format!("--prompt-file {}: {e}", f.display())),
        None => Ok(None),
    }
}

enum Refusal {
    Refused(String),
    Failed(String),
}

/// The sender may call the agent: a bot only when `--allowed-bots` names it, anyone
/// else with write, maintain or admin permission on the repository.
fn gate(api: &Api, env: &GithubEnv, event: &Event, allowed_bots: &[String]) -> Result<(), Refusal> {
    let login = &event.actor.login;
    if event.actor.is_bot {
        let bare = login.trim_end_matches("[bot]");
        let allowed = allowed_bots.iter().any(|b| {
            b == "*"
                || b.eq_ignore_ascii_case(login)
                || b.trim_end_matches("[bot]").eq_ignore_ascii_case(bare)
        });
        return if allowed {
            Ok(())
        } else {
            Err(Refusal::Refused(format!(
                "{login} is a bot not named in --allowed-bots"
            )))
        };
    }
    let path = format!(
        "/repos/{}/{}/collaborators/{login}/permission",
        env.owner, env.repo
    );
    let answer = match api.get(&path) {
        Ok(v) => v,
        Err(e) if e.status == Some(404) => {
            return Err(Refusal::Refused(format!("{login} is not a collaborator")));
        }
        Err(e) => return Err(Refusal::Failed(e.message)),
    };
    let has = |k: &str| {
        answer[k]
            .as_str()
            .is_some_and(|p| WRITE_PERMISSIONS.contains(&p))
    };
    if has("permission") || has("role_name") {
        Ok(())
    } else {
        Err(Refusal::Refused(format!(
            "{login} has {} permission, not write",
            answer["permission"].as_str().unwrap_or("no")
        )))
    }
}

/// Everything after the gate; the exit code.
fn converse(
    s: &Setup,
    flags: &GithubFlags,
    triggered: &Triggered,
    review: bool,
    api: &Arc<Api>,
    mut args: GithubArgs,
) -> Result<ExitStatus, String> {
    let e = &s.event;
    if review && !e.is_pr {
        output::info("github: a review needs a pull request; answering without one");
    }
    let review = review && e.is_pr;
    // The progress comment first: the person who asked sees at once that it started.
    let c = Comment::post(api, s)?;
    let mut outputs = vec![("comment-url", c.url.clone().unwrap_or_default())];
    let (pull, comments, files) = thread(api, s)?;
    let env = crate::util::secrets::scrubbed_env(std::env::vars(), &[]);
    let git = push::Git {
        workspace: &s.workspace,
        env: &env,
        exclude: own_files(&s.workspace, args.run.output.as_deref()),
        secrets: vec![s.token.clone()],
    };
    let auth = push::auth_env(&s.env.server_url, &s.token);
    check_out_head(&git, pull.as_ref(), e.number, &auth);
    let inputs = (pull.as_ref(), comments.as_slice(), files.as_slice());
    let mine = args.run.append_system_prompt.as_deref();
    let task = task(api, s, triggered, inputs, review, mine)?;
    // Skills: no user scope, a pull request's changed skills untrusted, `@agent /name`.
    let said = triggered.instruction.as_deref();
    crate::skills::github::prepare(
        &mut args.run.skills,
        pull.is_some(),
        &files,
        said,
        &flags.trigger_phrase,
    );
    let (json_out, jsonl) = (args.run.json, args.run.ci.jsonl);
    let (started, finished) = c.follow(api, flags, s, args.run, task);
    let Some(finished) = finished else {
        // The run did not start (a usage error, already reported).
        write_outputs(&outputs);
        return Ok(c.did_not_start(api, started));
    };
    let t = finished.transcript()?;
    let code = finished.exit_code;
    if !jsonl {
        show(&t, json_out, code);
    }
    let (mut outcome, failed) = if review {
        let posted = post_review(api, &s.repo_path(), e, pull.as_ref(), &files, &t);
        reviewed(posted, code)
    } else {
        let push = (&git, auth.as_slice());
        let back = hand_back(s, flags, api, push, pull.as_ref(), triggered, &t, code);
        pushed(back, &mut outputs)
    };
    if outcome.diff_stat.is_none() {
        outcome.diff_stat = t.git_diff_stat.clone();
    }
    let failed = c.finish(api, &t, &outcome) | failed;
    write_outputs(&outputs);
    Ok(ExitStatus::from_code(if failed && code == 0 {
        1
    } else {
        code
    }))
}

/// The prompt (from the event, the pull request, its comments and files), the system
/// prompt's addition and (a review) the answer's schema.
fn task(
    api: &Api,
    s: &Setup,
    triggered: &Triggered,
    (pull, comments, files): (Option<&PullRefs>, &[Value], &[Value]),
    review: bool,
    mine: Option<&str>,
) -> Result<Task, String> {
    // A pull request's AGENTS.md is the base branch's; the head's is only fenced data.
    let (given, head_instructions) =
        instructions::for_pull(api, &s.repo_path(), pull, &s.workspace);
    let nonce = nonce();
    let inputs = context::Inputs {
        env: &s.env,
        event: &s.event,
        triggered,
        pull,
        comments,
        files,
        review,
        nonce: &nonce,
        head_instructions: head_instructions.as_ref(),
    };
    let addition = context::system_addition(&nonce, review);
    Ok(Task {
        prompt: context::prompt(&inputs),
        append_system_prompt: match mine {
            Some(mine) => format!("{addition}\n\n{}", read_at_file(mine)?),
            None => addition,
        },
        output_schema: review.then(|| review::schema().to_string()),
        project_instructions: given,
    })
}

/// The pull request's refs, the newest comments and the pull request's files.
type Thread = (Option<PullRefs>, Vec<Value>, Vec<Value>);

/// The thread the run is about (`Thread`), asked of the API in this order.
fn thread(api: &Api, s: &Setup) -> Result<Thread, String> {
    let pull = pull_refs(api, s)?;
    let comments = earlier_comments(api, s)?;
    let files = pull_files(api, s, pull.is_some())?;
    Ok((pull, comments, files))
}

/// A pull request's workspace at its head (a failure is warned about: nothing is pushed
/// to a head the workspace is not at).
fn check_out_head(
    git: &push::Git<'_>,
    pull: Option<&PullRefs>,
    number: Option<u64>,
    auth: &[(String, String)],
) {
    if let (Some(p), Some(n)) = (pull, number)
        && let Err(err) = git.ensure_at(&p.head_sha, n, auth)
    {
        output::warn(&format!("cannot check out the pull request's head: {err}"));
    }
}

/// The pull request's refs: the event's, or asked for.
fn pull_refs(api: &Api, s: &Setup) -> Result<Option<PullRefs>, String> {
    let e = &s.event;
    Ok(match (e.is_pr, &e.pull, e.number) {
        (true, Some(p), _) => Some(p.clone()),
        (true, None, Some(n)) => {
            let pr = api
                .get(&format!("{}/pulls/{n}", s.repo_path()))
                .map_err(|e| e.message)?;
            Some(PullRefs::from_json(&pr).ok_or("the pull request has no head or base")?)
        }
        _ => None,
    })
}

/// The newest page of the thread's comments, ours left out.
fn earlier_comments(api: &Api, s: &Setup) -> Result<Vec<Value>, String> {
    let e = &s.event;
    let Some(n) = e.number else {
        return Ok(Vec::new());
    };
    // Oldest first, 100 a page: the last page has the newest.
    let last_page = e.comment_count.div_ceil(100).max(1);
    Ok(api
        .get(&format!(
            "{}/issues/{n}/comments?per_page=100&page={last_page}",
            s.repo_path()
        ))
        .map_err(|e| e.message)?
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| {
            !c["body"]
                .as_str()
                .unwrap_or_default()
                .starts_with(progress::MARKER)
        })
        .collect())
}

/// The pull request's files (none without one).
fn pull_files(api: &Api, s: &Setup, is_pull: bool) -> Result<Vec<Value>, String> {
    match (is_pull, s.event.number) {
        (true, Some(n)) => Ok(api
            .get(&format!("{}/pulls/{n}/files?{FILES_PAGE}", s.repo_path()))
            .map_err(|e| e.message)?
            .as_array()
            .cloned()
            .unwrap_or_default()),
        _ => Ok(Vec::new()),
    }
}

/// Stdout's part without `--jsonl`: the transcript (`--json`), else a success's answer
/// (the structured one if any).
fn show(t: &Transcript, json_out: bool, code: u8) {
    let shown = if json_out {
        // One line, keys in order (as this command has always printed it).
        serde_json::to_value(t).ok().map(|v| v.to_string())
    } else if code == 0 {
        Some(match &t.structured_output {
            Some(answer @ Value::Object(_)) => answer.to_string(),
            _ => t.result.clone(),
        })
    } else {
        None
    };
    if let Some(text) = shown {
        output::print_stdout(&text);
    }
}

/// The final comment's part of a review; whether the command failed.
fn reviewed(
    posted: Result<(String, Option<String>), String>,
    code: u8,
) -> (progress::Outcome, bool) {
    let mut outcome = progress::Outcome::default();
    match posted {
        Ok((note, summary)) => {
            outcome.notes.push(note);
            outcome.answer = summary;
            (outcome, false)
        }
        Err(err) if code == 0 => {
            output::error(&err);
            outcome
                .notes
                .push(format!("The review could not be posted: {err}"));
            (outcome, true)
        }
        Err(_) => (outcome, false),
    }
}

/// The final comment's part of a change, and the branch and pull request outputs;
/// whether the command failed.
fn pushed(
    back: Result<HandedBack, String>,
    outputs: &mut Vec<(&str, String)>,
) -> (progress::Outcome, bool) {
    let mut outcome = progress::Outcome::default();
    match back {
        Ok(back) => {
            outcome.diff_stat = back.diff_stat;
            outcome.notes = back.notes;
            outputs.push(("branch", back.branch.unwrap_or_default()));
            outputs.push(("pr-url", back.pr_url.unwrap_or_default()));
            (outcome, false)
        }
        Err(err) => {
            output::error(&err);
            outcome
                .notes
                .push(format!("The change could not be pushed: {err}"));
            (outcome, true)
        }
    }
}

/// How long a signal's or the deadline's way out waits for the final comment.
const EXIT_COMMENT_WAIT: std::time::Duration = std::time::Duration::from_secs(4);

/// The progress comment (none without an issue or pull request) and where its run is.
struct Comment {
    /// `/repos/o/r/issues/comments/{id}`.
    path: Option<String>,
    url: Option<String>,
    run_url: Option<String>,
}

impl Comment {
    /// Posts the "working" comment.
    fn post(api: &Api, s: &Setup) -> Result<Comment, String> {
        let run_url = s.env.run_url();
        let Some(n) = s.event.number else {
            return Ok(Comment {
                path: None,
                url: None,
                run_url,
            });
        };
        let body = progress::working_body(run_url.as_deref(), &[]);
        let c = api
            .post(
                &format!("{}/issues/{n}/comments", s.repo_path()),
                &json!({ "body": body }),
            )
            .map_err(|e| e.message)?;
        let id = c["id"].as_u64().ok_or("the new comment has no id")?;
        Ok(Comment {
            path: Some(format!("{}/issues/comments/{id}", s.repo_path())),
            url: Some(c["html_url"].as_str().unwrap_or_default().to_string()),
            run_url,
        })
    }

    /// The run (`commands::run::run_observed` with a typed task), the comment following
    /// its events: whether it exited 0, and its `run.finished` (none: it did not start).
    fn follow(
        &self,
        api: &Arc<Api>,
        flags: &GithubFlags,
        s: &Setup,
        run: RunArgs,
        task: Task,
    ) -> (bool, Option<RunFinished>) {
        let editor = self.path.as_ref().map(|path| {
            progress::Editor::start(
                api.clone(),
                path.clone(),
                self.run_url.clone(),
                flags.progress_interval,
            )
        });
        let finished: Arc<Mutex<Option<RunFinished>>> = Arc::default();
        if let Some(path) = &self.path {
            self.on_the_way_out(api, path.clone(), &finished);
        }
        let observer = progress::Follower::new(editor.as_ref().map(progress::Editor::sender), {
            let finished = finished.clone();
            Box::new(move |f: &RunFinished| *finished.locked() = Some(f.clone()))
        });
        let embedded = Embedded {
            task: Some(task),
            observer: Some(Box::new(observer)),
            secrets: vec![s.token.clone()],
        };
        let code = run_observed(run, embedded);
        if let Some(ed) = editor {
            ed.stop();
        }
        (code == ExitStatus::Success, finished.locked().take())
    }

    /// When a signal or `--timeout` ends the run, the process exits from the thread that
    /// finished it: the comment still gets the result (no push: the run did not succeed),
    /// if GitHub answers within `EXIT_COMMENT_WAIT`.
    fn on_the_way_out(
        &self,
        api: &Arc<Api>,
        comment_path: String,
        finished: &Arc<Mutex<Option<RunFinished>>>,
    ) {
        let (api, finished, run_url) = (api.clone(), finished.clone(), self.run_url.clone());
        let _ = crate::run::signals::ON_EXIT.set(Box::new(move |_code| {
            let Some(f) = finished.locked().clone() else {
                return;
            };
            let Ok(t) = f.transcript() else {
                return;
            };
            let body = progress::final_body(&t, run_url.as_deref(), &progress::Outcome::default());
            let (api, path) = (api.clone(), comment_path.clone());
            let (tx, rx) = std::sync::mpsc::channel();
            let _ = std::thread::Builder::new()
                .name("github-exit".into())
                .spawn(move || {
                    let _ = tx.send(api.patch(&path, &json!({ "body": body })));
                });
            match rx.recv_timeout(EXIT_COMMENT_WAIT) {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => output::error(&e.message),
                Err(_) => output::error("GitHub did not take the final comment in time"),
            }
        }));
    }

    /// The run did not start (a usage error, already reported; `exited_0`: it said
    /// nothing): the comment says so; the command's status.
    fn did_not_start(&self, api: &Api, exited_0: bool) -> ExitStatus {
        let status = if exited_0 {
            ExitStatus::Failure
        } else {
            ExitStatus::Usage
        };
        let Some(path) = &self.path else {
            return status;
        };
        let body = format!(
            "{}\n### agent: ❌ the run did not start\n\nSee the log of the run{}.\n",
            progress::MARKER,
            self.run_url
                .as_ref()
                .map(|u| format!(": {u}"))
                .unwrap_or_default()
        );
        let _ = api.patch(path, &json!({ "body": body }));
        status
    }

    /// The final comment; true when it could not be posted.
    fn finish(&self, api: &Api, t: &Transcript, outcome: &progress::Outcome) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let body = progress::final_body(t, self.run_url.as_deref(), outcome);
        match api.patch(path, &json!({ "body": body })) {
            Ok(_) => false,
            Err(err) => {
                output::error(&err.message);
                true
            }
        }
    }
}

/// What became of the change.
#[derive(Default)]
struct HandedBack {
    diff_stat: Option<String>,
    notes: Vec<String>,
    branch: Option<String>,
    pr_url: Option<String>,
}

/// Commits and pushes the run's change where it belongs, if it may be pushed at all.
#[expect(clippy::too_many_arguments)]
fn hand_back(
    s: &Setup,
    flags: &GithubFlags,
    api: &Api,
    (git, auth): (&push::Git<'_>, &[(String, String)]),
    pull: Option<&PullRefs>,
    triggered: &Triggered,
    t: &Transcript,
    code: u8,
) -> Result<HandedBack, String> {
    let mut back = HandedBack::default();
    if !git.has_changes()? {
        return Ok(back);
    }
    let e = &s.event;
    let not_pushed = |why: &str| format!("The changes were not pushed: {why}.");
    if code != 0 {
        back.notes.push(not_pushed("the run did not succeed"));
        return Ok(back);
    }
    if flags.no_push {
        back.notes.push(not_pushed("--no-push"));
        return Ok(back);
    }
    let Some(number) = e.number else {
        back.notes
            .push(not_pushed("the event has no issue or pull request"));
        return Ok(back);
    };
    if let Some(p) = pull
        && p.head_repo != s.env.full_name()
    {
        back.notes.push(not_pushed(&format!(
            "the pull request's head is in the fork {}, and the agent never pushes to a fork",
            p.head_repo
        )));
        return Ok(back);
    }
    let place = e
        .comment
        .as_ref()
        .map(|c| {
            format!(
                "{}/{}/{}/{number}#{}",
                s.env.server_url,
                s.env.full_name(),
                if e.is_pr { "pull" } else { "issues" },
                match c.kind {
                    event::CommentKind::Issue => format!("issuecomment-{}", c.id),
                    event::CommentKind::ReviewComment => format!("discussion_r{}", c.id),
                    event::CommentKind::Review => format!("pullrequestreview-{}", c.id),
                }
            )
        })
        .unwrap_or_else(|| format!("{}#{number}", s.env.full_name()));
    let asker = (!e.actor.is_bot && e.actor.id > 0).then_some((e.actor.login.as_str(), e.actor.id));
    let subject = if e.title.is_empty() {
        triggered.instruction.clone().unwrap_or_default()
    } else {
        e.title.clone()
    };
    let message = push::commit_message(&subject, &place, asker);
    match pull {
        Some(p) if git.head().ok().as_deref() != Some(p.head_sha.as_str()) => {
            // The checkout of the head failed (warned about before the run): a commit here
            // would push another branch's history onto the pull request.
            back.notes.push(not_pushed(
                "the workspace is not at the pull request's head",
            ));
        }
        Some(p) => {
            back.diff_stat = Some(git.commit(&s.author, &message)?);
            git.push(&p.head_ref, auth)?;
            back.notes.push(format!(
                "Pushed {} to {}.",
                progress::inline_code(&short(&git.head()?)),
                progress::inline_code(&p.head_ref)
            ));
            back.branch = Some(p.head_ref.clone());
        }
        None => {
            let branch = git.free_branch(&push::issue_branch(number, &e.title), auth)?;
            git.run(&["checkout", "--quiet", "-b", &branch], &[])?;
            back.diff_stat = Some(git.commit(&s.author, &message)?);
            git.push(&branch, auth)?;
            back.branch = Some(branch.clone());
            let base = match &e.default_branch {
                Some(b) => b.clone(),
                None => api.get(&s.repo_path()).map_err(|e| e.message)?["default_branch"]
                    .as_str()
                    .ok_or("the repository has no default_branch")?
                    .to_string(),
            };
            let answer =
                crate::util::text::counted(t.result.trim(), 20_000, "characters not shown");
            let body = format!(
                "Resolves #{number}.\n\nRequested by @{} in {place}.\n\n{answer}\n",
                e.actor.login
            );
            let pr = api
                .post(
                    &format!("{}/pulls", s.repo_path()),
                    &json!({
                        "title": format!("agent: {}", crate::util::text::ellipsis(&subject, 200)),
                        "head": branch,
                        "base": base,
                        "body": body,
                    }),
                )
                .map_err(|e| e.message)?;
            let url = pr["html_url"].as_str().unwrap_or_default().to_string();
            back.notes.push(format!(
                "Pushed the branch {} and opened #{} ({url}).",
                progress::inline_code(&branch),
                pr["number"].as_u64().unwrap_or(0)
            ));
            back.pr_url = Some(url);
        }
    }
    Ok(back)
}

/// Posts the review of a review run; a note for the comment and the summary to show.
fn post_review(
    api: &Api,
    repo: &str,
    e: &Event,
    pull: Option<&PullRefs>,
    files: &[Value],
    t: &Transcript,
) -> Result<(String, Option<String>), String> {
    let (Some(p), Some(n)) = (pull, e.number) else {
        return Err("no pull request".into());
    };
    let answer = t.structured_output.as_ref().unwrap_or(&Value::Null);
    let lines = review::diff_lines(files);
    let (body, inline) = review::request(answer, &lines, &p.head_sha)
        .ok_or("the run gave no review (no structured answer)")?;
    let total = answer["comments"].as_array().map_or(0, Vec::len);
    let posted = api
        .post(&format!("{repo}/pulls/{n}/reviews"), &body)
        .map_err(|e| e.message)?;
    let url = posted["html_url"].as_str().unwrap_or_default();
    let note = format!(
        "Posted [a review]({url}) with {} inline ({} on lines outside the diff are in its summary).",
        crate::commands::summary::count(inline as u64, "comment"),
        total - inline
    );
    Ok((note, body["body"].as_str().map(String::from)))
}

/// The run's own files inside the workspace, never committed.
fn own_files(workspace: &Path, output: Option<&Path>) -> Vec<String> {
    // The `--continue` index and its lock beside it (`.agent/sessions.json`, `.lock`).
    let index = crate::record::resume::INDEX_PATH;
    let mut out = vec![index.to_string(), index.replace(".json", ".lock")];
    if let Some(o) = output {
        let abs = std::path::absolute(o).unwrap_or_else(|_| o.to_path_buf());
        let abs = abs
            .parent()
            .and_then(|d| d.canonicalize().ok())
            .zip(abs.file_name())
            .map(|(d, n)| d.join(n))
            .unwrap_or(abs);
        if let Ok(rel) = abs.strip_prefix(workspace) {
            let rel = rel.display().to_string();
            out.push(format!("{rel}.journal"));
            out.push(format!("{rel}.spill"));
            out.push(rel);
        }
    }
    out
}

/// `--append-system-prompt`'s `@FILE` form, read (the run then gets the text).
fn read_at_file(value: &str) -> Result<String, String> {
    match value.strip_prefix('@') {
        Some(f) => {
            std::fs::read_to_string(f).map_err(|e| format!("--append-system-prompt @{f}: {e}"))
        }
        None => Ok(value.to_string()),
    }
}

fn short(sha: &str) -> String {
    sha.chars().take(12).collect()
}

/// A random tag suffix for the fences.
fn nonce() -> String {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
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
