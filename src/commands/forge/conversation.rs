//! One conversation, on either forge: whether the event calls the agent (`event::trigger`)
//! and whether its author may (bots only when allowed, anyone else as the forge says),
//! the progress note, the prompt with everything but the request fenced (`context`), the
//! run itself (`commands::run::run_observed`, every run flag as given) while the note
//! follows its tool calls (`progress`), then the push (`push`) or the review, and the
//! note replaced by the result. The forge's API is behind `Forge`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::event::{self, Event, PullRefs, Triggered, Triggers};
use super::{Forge, Note, context, instructions, progress, push, review};
use crate::commands::run::{Embedded, Task, run_observed};
use crate::config::cli::RunArgs;
use crate::error::ExitStatus;
use crate::record::Transcript;
use crate::run::event::RunFinished;
use crate::util::output;
use crate::util::sync::Locked;

/// What the command read before the conversation: the client, the event, the secrets.
pub(crate) struct Conversation {
    pub forge: Arc<dyn Forge>,
    pub event: Event,
    /// Values never shown (the token): redacted from the run's outputs and errors.
    pub secrets: Vec<String>,
    pub workspace: PathBuf,
    pub author: push::Identity,
    /// The link to the CI run (the workflow run, the pipeline job).
    pub run_url: Option<String>,
    /// The variables that give one git command the token (`push::auth_env`).
    pub git_auth: Vec<(String, String)>,
}

/// The conversation's flags (both commands take them).
pub(crate) struct Settings {
    pub triggers: Triggers,
    pub allowed_bots: Vec<String>,
    pub review: bool,
    pub no_push: bool,
    pub progress_interval: Duration,
}

/// What the conversation left for the job: `comment-url`, `branch`, `pr-url`.
pub(crate) type Outputs = Vec<(&'static str, String)>;

/// The whole conversation; its exit status and outputs.
pub(crate) fn respond(
    c: &Conversation,
    s: &Settings,
    instruction: Option<&str>,
    run: RunArgs,
) -> (ExitStatus, Outputs) {
    let who = c.forge.place().kind.name().to_ascii_lowercase();
    let triggered = match event::trigger(&c.event, &s.triggers, instruction) {
        Ok(t) => t,
        Err(why) => {
            output::info(&format!("{who}: not triggered: {why}"));
            return (ExitStatus::Success, Vec::new());
        }
    };
    match gate(c, &s.allowed_bots) {
        Ok(Ok(())) => {}
        Ok(Err(why)) => {
            output::info(&format!("{who}: refused: {why}"));
            return (ExitStatus::Success, Vec::new());
        }
        Err(e) => {
            output::error(&e);
            return (ExitStatus::Failure, Vec::new());
        }
    }
    let review = s.review || triggered.review;
    let mut outputs = Vec::new();
    match converse(c, s, &triggered, review, run, &mut outputs) {
        Ok(status) => (status, outputs),
        Err(e) => {
            output::error(&e);
            (ExitStatus::Failure, outputs)
        }
    }
}

/// The author may call the agent: a bot only when `--allowed-bots` names it, anyone else
/// as the forge says (write access on GitHub, Developer or above on GitLab).
fn gate(c: &Conversation, allowed_bots: &[String]) -> Result<Result<(), String>, String> {
    let actor = &c.event.actor;
    if actor.is_bot {
        let login = &actor.login;
        let bare = login.trim_end_matches("[bot]");
        let allowed = allowed_bots.iter().any(|b| {
            b == "*"
                || b.eq_ignore_ascii_case(login)
                || b.trim_end_matches("[bot]").eq_ignore_ascii_case(bare)
        });
        return Ok(if allowed {
            Ok(())
        } else {
            Err(format!("{login} is a bot not named in --allowed-bots"))
        });
    }
    c.forge.may_call(actor)
}

/// Everything after the gate; the exit code.
fn converse(
    c: &Conversation,
    s: &Settings,
    triggered: &Triggered,
    review: bool,
    mut run: RunArgs,
    outputs: &mut Outputs,
) -> Result<ExitStatus, String> {
    let e = &c.event;
    let kind = c.forge.place().kind;
    if review && !e.is_pr {
        output::info(&format!(
            "{}: a review needs a {}; answering without one",
            kind.name().to_ascii_lowercase(),
            kind.change_noun()
        ));
    }
    let review = review && e.is_pr;
    // The progress note first: the person who asked sees at once that it started.
    let note = ProgressNote::post(c)?;
    outputs.push(("comment-url", note.url().unwrap_or_default()));
    let (pull, comments, files) = thread(c)?;
    let env = crate::util::secrets::scrubbed_env(std::env::vars(), &[]);
    let git = push::Git {
        workspace: &c.workspace,
        env: &env,
        exclude: own_files(&c.workspace, run.output.as_deref()),
        secrets: c.secrets.clone(),
    };
    check_out_head(c, &git, pull.as_ref());
    let inputs = (pull.as_ref(), comments.as_slice(), files.as_slice());
    let mine = run.append_system_prompt.as_deref();
    let task = task(c, triggered, inputs, review, mine)?;
    // The calling comment's images, attached as `--image` files (none with --no-images).
    let shots = ImageDir::new();
    if let Some(dir) = shots.0.as_deref().filter(|_| !run.images.no_images) {
        run.images.images.extend(c.forge.images(&c.event, dir));
    }
    // Skills: no user scope, a change request's changed skills untrusted, `@agent /name`.
    crate::skills::github::prepare(
        &mut run.skills,
        pull.is_some(),
        &files,
        triggered.instruction.as_deref(),
        &s.triggers.trigger_phrase,
    );
    let (json_out, jsonl) = (run.json, run.ci.jsonl);
    let (started, finished) = note.follow(c, s, run, task);
    let Some(finished) = finished else {
        // The run did not start (a usage error, already reported).
        return Ok(note.did_not_start(c, started));
    };
    let t = finished.transcript()?;
    let code = finished.exit_code;
    if !jsonl {
        show(&t, json_out, code);
    }
    let (mut outcome, failed) = if review {
        let posted = post_review(c, pull.as_ref(), &files, &t);
        reviewed(posted, code)
    } else {
        let back = hand_back(c, s, &git, pull.as_ref(), triggered, &t, code);
        pushed(back, outputs)
    };
    if outcome.diff_stat.is_none() {
        outcome.diff_stat = t.git_diff_stat.clone();
    }
    let failed = note.finish(c, &t, &outcome) | failed;
    Ok(ExitStatus::from_code(if failed && code == 0 {
        1
    } else {
        code
    }))
}

/// The prompt (from the event, the change, its notes and files), the system prompt's
/// addition and (a review) the answer's schema.
fn task(
    c: &Conversation,
    triggered: &Triggered,
    (pull, comments, files): (Option<&PullRefs>, &[Value], &[Value]),
    review: bool,
    mine: Option<&str>,
) -> Result<Task, String> {
    // A change's AGENTS.md is the base branch's; the head's is only fenced data.
    let (given, head_instructions) = instructions::for_pull(&*c.forge, pull, &c.workspace);
    let nonce = nonce();
    let place = c.forge.place();
    let inputs = context::Inputs {
        place,
        event: &c.event,
        triggered,
        pull,
        comments,
        files,
        review,
        nonce: &nonce,
        head_instructions: head_instructions.as_ref(),
    };
    let addition = context::system_addition(place, &nonce, review);
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

/// A private directory for the comment's images, removed when the conversation ends.
struct ImageDir(Option<PathBuf>);

impl ImageDir {
    fn new() -> ImageDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "agent-comment-images-{}-{nanos}",
            std::process::id()
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => ImageDir(Some(dir)),
            Err(e) => {
                output::warn(&format!("the comment's images are not attached: {e}"));
                ImageDir(None)
            }
        }
    }
}

impl Drop for ImageDir {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The change's refs, the newest notes (ours left out) and the change's files.
type Thread = (Option<PullRefs>, Vec<Value>, Vec<Value>);

/// The thread the run is about, asked of the API in this order.
fn thread(c: &Conversation) -> Result<Thread, String> {
    let e = &c.event;
    let pull = c.forge.pull_refs(e)?;
    let comments = if e.number.is_some() {
        c.forge
            .comments(e)?
            .into_iter()
            .filter(|n| {
                !n["body"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with(progress::MARKER)
            })
            .collect()
    } else {
        Vec::new()
    };
    let files = c.forge.files(e, pull.as_ref())?;
    Ok((pull, comments, files))
}

/// A change's workspace at its head (a failure is warned about: nothing is pushed to a
/// head the workspace is not at).
fn check_out_head(c: &Conversation, git: &push::Git<'_>, pull: Option<&PullRefs>) {
    if let (Some(p), Some(n)) = (pull, c.event.number)
        && let Err(err) = git.ensure_at(&p.head_sha, &c.forge.head_refspec(n), &c.git_auth)
    {
        output::warn(&format!(
            "cannot check out the {}'s head: {err}",
            c.forge.place().kind.change_noun()
        ));
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

/// The final note's part of a review; whether the command failed.
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

/// The final note's part of a change, and the branch and change request outputs;
/// whether the command failed.
fn pushed(back: Result<HandedBack, String>, outputs: &mut Outputs) -> (progress::Outcome, bool) {
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

/// How long a signal's or the deadline's way out waits for the final note.
const EXIT_NOTE_WAIT: Duration = Duration::from_secs(4);

/// The progress note (none without an issue or change).
struct ProgressNote {
    note: Option<Note>,
}

impl ProgressNote {
    /// Posts the "working" note.
    fn post(c: &Conversation) -> Result<ProgressNote, String> {
        let Some(n) = c.event.number else {
            return Ok(ProgressNote { note: None });
        };
        let body = progress::working_body(c.run_url.as_deref(), &[]);
        let note = c
            .forge
            .post_note(n, c.event.is_pr, &body)
            .map_err(|e| e.message)?;
        Ok(ProgressNote { note: Some(note) })
    }

    fn url(&self) -> Option<String> {
        self.note.as_ref().map(|n| n.url.clone())
    }

    /// The run (`commands::run::run_observed` with a typed task), the note following its
    /// events: whether it exited 0, and its `run.finished` (none: it did not start).
    fn follow(
        &self,
        c: &Conversation,
        s: &Settings,
        run: RunArgs,
        task: Task,
    ) -> (bool, Option<RunFinished>) {
        let editor = self.note.as_ref().map(|note| {
            progress::Editor::start(
                c.forge.clone(),
                note.clone(),
                c.run_url.clone(),
                s.progress_interval,
            )
        });
        let finished: Arc<Mutex<Option<RunFinished>>> = Arc::default();
        if let Some(note) = &self.note {
            on_the_way_out(c, note.clone(), &finished);
        }
        let observer = progress::Follower::new(editor.as_ref().map(progress::Editor::sender), {
            let finished = finished.clone();
            Box::new(move |f: &RunFinished| *finished.locked() = Some(f.clone()))
        });
        let embedded = Embedded {
            task: Some(task),
            observer: Some(Box::new(observer)),
            secrets: c.secrets.clone(),
        };
        let code = run_observed(run, embedded);
        if let Some(ed) = editor {
            ed.stop();
        }
        (code == ExitStatus::Success, finished.locked().take())
    }

    /// The run did not start (a usage error, already reported; `exited_0`: it said
    /// nothing): the note says so; the command's status.
    fn did_not_start(&self, c: &Conversation, exited_0: bool) -> ExitStatus {
        let status = if exited_0 {
            ExitStatus::Failure
        } else {
            ExitStatus::Usage
        };
        let Some(note) = &self.note else {
            return status;
        };
        let body = format!(
            "{}\n### agent: ❌ the run did not start\n\nSee the log of the run{}.\n",
            progress::MARKER,
            c.run_url
                .as_ref()
                .map(|u| format!(": {u}"))
                .unwrap_or_default()
        );
        let _ = c.forge.edit_note(note, &body);
        status
    }

    /// The final note; true when it could not be posted.
    fn finish(&self, c: &Conversation, t: &Transcript, outcome: &progress::Outcome) -> bool {
        let Some(note) = &self.note else {
            return false;
        };
        let body = progress::final_body(t, c.run_url.as_deref(), outcome);
        match c.forge.edit_note(note, &body) {
            Ok(()) => false,
            Err(err) => {
                output::error(&err.message);
                true
            }
        }
    }
}

/// When a signal or `--timeout` ends the run, the process exits from the thread that
/// finished it: the note still gets the result (no push: the run did not succeed), if
/// the forge answers within `EXIT_NOTE_WAIT`.
fn on_the_way_out(c: &Conversation, note: Note, finished: &Arc<Mutex<Option<RunFinished>>>) {
    let (forge, finished, run_url) = (c.forge.clone(), finished.clone(), c.run_url.clone());
    let _ = crate::run::signals::ON_EXIT.set(Box::new(move |_code| {
        let Some(f) = finished.locked().clone() else {
            return;
        };
        let Ok(t) = f.transcript() else {
            return;
        };
        let body = progress::final_body(&t, run_url.as_deref(), &progress::Outcome::default());
        let (forge, note) = (forge.clone(), note.clone());
        let name = forge.place().kind.name();
        let (tx, rx) = std::sync::mpsc::channel();
        let _ = std::thread::Builder::new()
            .name("forge-exit".into())
            .spawn(move || {
                let _ = tx.send(forge.edit_note(&note, &body));
            });
        match rx.recv_timeout(EXIT_NOTE_WAIT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => output::error(&e.message),
            Err(_) => output::error(&format!("{name} did not take the final comment in time")),
        }
    }));
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
fn hand_back(
    c: &Conversation,
    s: &Settings,
    git: &push::Git<'_>,
    pull: Option<&PullRefs>,
    triggered: &Triggered,
    t: &Transcript,
    code: u8,
) -> Result<HandedBack, String> {
    let mut back = HandedBack::default();
    if !git.has_changes()? {
        return Ok(back);
    }
    let e = &c.event;
    let place = c.forge.place();
    let change = place.kind.change_noun();
    let auth = c.git_auth.as_slice();
    let not_pushed = |why: &str| format!("The changes were not pushed: {why}.");
    if code != 0 {
        back.notes.push(not_pushed("the run did not succeed"));
        return Ok(back);
    }
    if s.no_push {
        back.notes.push(not_pushed("--no-push"));
        return Ok(back);
    }
    let Some(number) = e.number else {
        back.notes
            .push(not_pushed(&format!("the event has no issue or {change}")));
        return Ok(back);
    };
    if let Some(p) = pull
        && p.head_repo != place.full_name
    {
        back.notes.push(not_pushed(&format!(
            "the {change}'s head is in the fork {}, and the agent never pushes to a fork",
            p.head_repo
        )));
        return Ok(back);
    }
    let asked_in = c.forge.asked_in(e);
    let co_author = c.forge.co_author(&e.actor);
    let subject = if e.title.is_empty() {
        triggered.instruction.clone().unwrap_or_default()
    } else {
        e.title.clone()
    };
    let message = push::commit_message(&subject, &asked_in, co_author.as_deref());
    match pull {
        Some(p) if git.head().ok().as_deref() != Some(p.head_sha.as_str()) => {
            // The checkout of the head failed (warned about before the run): a commit here
            // would push another branch's history onto the change.
            back.notes.push(not_pushed(&format!(
                "the workspace is not at the {change}'s head"
            )));
        }
        Some(p) => {
            back.diff_stat = Some(git.commit(&c.author, &message)?);
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
            back.diff_stat = Some(git.commit(&c.author, &message)?);
            git.push(&branch, auth)?;
            back.branch = Some(branch.clone());
            let base = c.forge.default_branch(e)?;
            let answer =
                crate::util::text::counted(t.result.trim(), 20_000, "characters not shown");
            let body = c.forge.change_body(number, &e.actor, &asked_in, &answer);
            let title = format!("agent: {}", crate::util::text::ellipsis(&subject, 200));
            let opened = c.forge.open_change(&branch, &base, &title, &body)?;
            back.notes.push(format!(
                "Pushed the branch {} and opened {} ({}).",
                progress::inline_code(&branch),
                opened.reference,
                opened.url
            ));
            back.pr_url = Some(opened.url);
        }
    }
    Ok(back)
}

/// Posts the review of a review run; a note for the final note and the summary to show.
fn post_review(
    c: &Conversation,
    pull: Option<&PullRefs>,
    files: &[Value],
    t: &Transcript,
) -> Result<(String, Option<String>), String> {
    let (Some(p), Some(n)) = (pull, c.event.number) else {
        return Err(format!("no {}", c.forge.place().kind.change_noun()));
    };
    let answer = t.structured_output.as_ref().unwrap_or(&Value::Null);
    if review::partition(answer, &review::DiffLines::new()).is_none() {
        return Err("the run gave no review (no structured answer)".into());
    }
    c.forge.post_review(n, p, files, answer)
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

pub(crate) fn short(sha: &str) -> String {
    sha.chars().take(12).collect()
}

/// A random tag suffix for the fences.
fn nonce() -> String {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The conversation's own run flags checked as `agent run` checks them (with a stand-in
/// prompt), before anything is asked of the forge: a bad flag is exit 2 with no note
/// posted. Not with `--stdin-context`, whose check would read stdin (the run checks it).
pub(crate) fn check_run_flags(run: &mut RunArgs) -> Result<(), crate::error::Error> {
    if run.stdin_context {
        return Ok(());
    }
    let taken = run.prompt.replace("(the request)".to_string());
    let checked = crate::config::Config::from_args(run, &crate::config::ProcessEnv);
    run.prompt = taken;
    checked.map(|_| ())
}

/// The instruction given on the command line (`--prompt`, PROMPT or `--prompt-file`),
/// taken off the run's arguments (the run gets the built prompt instead).
pub(crate) fn user_prompt(
    own: Option<String>,
    run: &mut RunArgs,
) -> Result<Option<String>, String> {
    if let Some(p) = own.or_else(|| run.prompt.take()) {
        return Ok(Some(p).filter(|p| p != "-"));
    }
    match run.prompt_file.take() {
        Some(f) => std::fs::read_to_string(&f)
            .map(Some)
            .map_err(|e| format!("--prompt-file {}: {e}", f.display())),
        None => Ok(None),
    }
}

/// `-C`'s directory, else the current one, canonical.
pub(crate) fn workspace(cwd: Option<&Path>) -> Result<PathBuf, String> {
    let cwd = match cwd {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?,
    };
    cwd.canonicalize()
        .map_err(|e| format!("-C {}: {e}", cwd.display()))
}
