//! The progress comment: its bodies (working, with a checklist; the final result) and
//! the thread that edits it while the run goes, at most once per `--progress-interval`
//! (the newest checklist wins; the ones in between are never sent). The checklist is a
//! list of `Item`s from the run's events: the model's plan (TodoWrite's `plan.updated`)
//! once it has one, else the tool calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{ApiError, Forge, Note};
use crate::record::Transcript;
use crate::run::event::{RunEvent, RunFinished};
use crate::run::events::{Emitted, Sink};
use crate::tools::todo_write::{Todo, TodoStatus};
use crate::util::output;

/// The hidden line that marks our comments (so that the context leaves them out).
pub(crate) const MARKER: &str = super::event::OWN_MARKER;

/// Items shown in the checklist (the newest).
const MAX_ITEMS: usize = 30;
/// Checklists waiting for the editor (it sends only the newest; a full queue drops).
const QUEUE: usize = 64;
/// Characters of one item's label.
const MAX_LABEL_CHARS: usize = 80;
/// GitHub refuses a comment body longer than this (GitLab's limit is higher).
const MAX_BODY_CHARS: usize = 65_536;
/// Characters of the answer kept in the final comment (the rest is in the transcript).
const MAX_ANSWER_CHARS: usize = 30_000;

/// The state of one checklist item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemState {
    Running,
    Done,
    Failed,
}

/// One line of the checklist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    pub label: String,
    pub state: ItemState,
}

/// The checklist of the run, fed its events: the plan once there is one (it is what
/// the model means to do, and says how far it got), else the tool calls.
#[derive(Default)]
pub(crate) struct ToolChecklist {
    items: Vec<(String, Item)>,
    plan: Option<Vec<Item>>,
}

impl ToolChecklist {
    /// Takes one event; true when the list changed.
    pub(crate) fn apply(&mut self, event: &RunEvent) -> bool {
        match event {
            RunEvent::ToolStarted(e) => {
                let label = label(&e.name, e.input.as_ref().unwrap_or(&Value::Null));
                self.items.push((
                    e.id.clone(),
                    Item {
                        label,
                        state: ItemState::Running,
                    },
                ));
                true
            }
            RunEvent::PlanUpdated(e) => {
                self.plan = Some(e.todos.iter().map(plan_item).collect());
                true
            }
            RunEvent::ToolFinished(e) => {
                let failed = e.is_error || e.denied;
                match self.items.iter_mut().rev().find(|(i, _)| *i == e.id) {
                    Some((_, item)) => {
                        item.state = if failed {
                            ItemState::Failed
                        } else {
                            ItemState::Done
                        };
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        }
    }

    pub(crate) fn items(&self) -> Vec<Item> {
        match &self.plan {
            Some(plan) => plan.clone(),
            None => self.items.iter().map(|(_, i)| i.clone()).collect(),
        }
    }
}

/// The conversation's observer of its run (a `Sink` on the run's event bus): the checklist,
/// handed to the `Editor`'s bounded queue, and `run.finished` handed to `on_finished`.
/// It does no I/O itself: the bus calls it on the loop's threads.
pub(crate) struct Follower {
    list: ToolChecklist,
    tx: Option<SyncSender<Msg>>,
    on_finished: Box<dyn FnMut(&RunFinished) + Send>,
}

impl Follower {
    pub(crate) fn new(
        tx: Option<SyncSender<Msg>>,
        on_finished: Box<dyn FnMut(&RunFinished) + Send>,
    ) -> Follower {
        Follower {
            list: ToolChecklist::default(),
            tx,
            on_finished,
        }
    }
}

impl Sink for Follower {
    fn event(&mut self, e: &Emitted<'_>) {
        if let RunEvent::RunFinished(f) = e.event {
            (self.on_finished)(f);
            return;
        }
        if self.list.apply(e.event)
            && let Some(tx) = &self.tx
            && tx.try_send(Msg::Items(self.list.items())).is_err()
        {
            // The editor is behind (a slow forge): the newest list comes with the next
            // event, and the final body replaces them all.
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn takes_the_result(&self) -> bool {
        true
    }
}

/// Checklists the editor's queue had no room for (`Editor::stop` reports them).
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// One TodoWrite item as a checklist line: the `activeForm` while in progress.
fn plan_item(todo: &Todo) -> Item {
    let (label, state) = match todo.status {
        TodoStatus::Completed => (&todo.content, ItemState::Done),
        TodoStatus::InProgress => (
            todo.active_form.as_ref().unwrap_or(&todo.content),
            ItemState::Running,
        ),
        TodoStatus::Pending => (&todo.content, ItemState::Running),
    };
    // Redacted before the cut: a cut through a secret would leave its prefix.
    let label = output::redact(label);
    Item {
        label: escape_markdown(&crate::util::text::ellipsis(&label, MAX_LABEL_CHARS)),
        state,
    }
}

/// Plan text as plain Markdown text: the model's words cannot open a link, an image or
/// a mention, nor close the list.
fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.replace('\n', " ").chars() {
        if "\\`*_[]()<>#!|@~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `` `Bash` cargo test `` : the tool and the input's gist, on one line.
fn label(name: &str, input: &Value) -> String {
    let gist = ["command", "path", "pattern", "url", "query"]
        .iter()
        .find_map(|k| input[*k].as_str())
        .or_else(|| {
            input
                .as_object()
                .and_then(|o| o.values().find_map(Value::as_str))
        })
        .unwrap_or_default();
    // Redacted before the cut: a cut through a secret would leave its prefix.
    let gist = output::redact(gist);
    let gist = gist.lines().next().unwrap_or_default();
    let gist = crate::util::text::ellipsis(gist, MAX_LABEL_CHARS);
    if gist.is_empty() {
        inline_code(name)
    } else {
        format!("{} {}", inline_code(name), inline_code(&gist))
    }
}

/// Text as inline code that cannot break out of it (backticks replaced).
pub(crate) fn inline_code(text: &str) -> String {
    format!("`{}`", text.replace('`', "'").replace('\n', " "))
}

/// The comment while the run goes.
pub(crate) fn working_body(run_url: Option<&str>, items: &[Item]) -> String {
    let mut b = format!("{MARKER}\n**agent** is working on it…");
    if let Some(url) = run_url {
        b.push_str(&format!(" ([the run]({url}))"));
    }
    b.push('\n');
    if !items.is_empty() {
        b.push('\n');
        let from = items.len().saturating_sub(MAX_ITEMS);
        if from > 0 {
            b.push_str(&format!("- … {from} earlier steps\n"));
        }
        for i in &items[from..] {
            let mark = match i.state {
                ItemState::Running => "- [ ]",
                ItemState::Done => "- [x]",
                ItemState::Failed => "- [x] ❌",
            };
            b.push_str(&format!("{mark} {}\n", i.label));
        }
    }
    b
}

/// What the final comment says besides the transcript.
#[derive(Default)]
pub(crate) struct Outcome {
    /// `git diff --stat` of the change (the commit's, or the workspace's).
    pub diff_stat: Option<String>,
    /// Lines about what happened to the change or the review (branch, pull request, why
    /// nothing was pushed).
    pub notes: Vec<String>,
    /// The answer to show instead of the transcript's `result` (a review's summary).
    pub answer: Option<String>,
}

/// The comment once the run is over: status, answer, numbers, files, the diff stat, and
/// the transcript's summary folded away.
pub(crate) fn final_body(t: &Transcript, run_url: Option<&str>, out: &Outcome) -> String {
    let status = if t.status.is_empty() {
        "unknown"
    } else {
        t.status.as_str()
    };
    let icon = if status == "success" { "✅" } else { "❌" };
    let mut b = format!("{MARKER}\n### agent: {icon} {}\n\n", inline_code(status));
    let answer = out.answer.clone().unwrap_or_else(|| t.result.clone());
    if !answer.trim().is_empty() {
        b.push_str(&crate::util::text::counted(
            answer.trim(),
            MAX_ANSWER_CHARS,
            "characters not shown (see the transcript)",
        ));
        b.push_str("\n\n");
    }
    if let Some(e) = &t.error {
        b.push_str(&format!("> {}\n\n", e.message.replace('\n', " ")));
    }
    let mut line = crate::commands::summary::count(u64::from(t.num_turns), "turn");
    if let Some(c) = t.cost_usd {
        line.push_str(&format!(" · {}", crate::commands::summary::usd(c)));
    }
    if let Some(url) = run_url {
        line.push_str(&format!(" · [the run]({url})"));
    }
    b.push_str(&line);
    b.push_str("\n\n");
    for n in &out.notes {
        b.push_str(&format!("{n}\n"));
    }
    if !out.notes.is_empty() {
        b.push('\n');
    }
    let files: Vec<String> = t
        .files_changed
        .iter()
        .map(|f| inline_code(&f.path))
        .collect();
    if !files.is_empty() {
        b.push_str(&format!(
            "**Files changed ({}):** {}\n\n",
            files.len(),
            files.join(", ")
        ));
    }
    if let Some(stat) = out.diff_stat.as_deref().filter(|s| !s.trim().is_empty()) {
        b.push_str(&format!(
            "```\n{}\n```\n\n",
            stat.trim_end().replace("```", "'''")
        ));
    }
    let summary = crate::commands::summary::markdown(t);
    let room = MAX_BODY_CHARS.saturating_sub(b.len() + 200);
    b.push_str("<details><summary>Transcript summary</summary>\n\n");
    b.push_str(&crate::util::text::counted(
        &summary,
        room,
        "characters not shown",
    ));
    b.push_str("\n</details>\n");
    b
}

/// What the editing thread is sent.
pub(crate) enum Msg {
    /// The newest checklist.
    Items(Vec<Item>),
    /// The run is over: stop (the senders may live on, in the run's event bus).
    Stop,
}

/// The thread that edits the progress comment.
pub(crate) struct Editor {
    tx: SyncSender<Msg>,
    thread: Option<JoinHandle<()>>,
}

impl Editor {
    /// Edits `note` with each newer checklist, at most once per `interval` (counted
    /// from the note's creation).
    pub(crate) fn start(
        forge: Arc<dyn Forge>,
        note: Note,
        run_url: Option<String>,
        interval: Duration,
    ) -> Editor {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("forge-progress".into())
            .spawn(move || {
                edit_loop(&rx, interval, &mut |items| {
                    forge.edit_note(&note, &working_body(run_url.as_deref(), &items))
                })
            })
            .ok();
        Editor { tx, thread }
    }

    /// Where the newest checklist goes.
    pub(crate) fn sender(&self) -> SyncSender<Msg> {
        self.tx.clone()
    }

    /// Stops after the edit under way (the final body replaces what is pending).
    pub(crate) fn stop(mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let dropped = DROPPED.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            output::debug(&format!(
                "{dropped} progress update(s) dropped (the note's edits were behind)"
            ));
        }
    }
}

/// Receives checklists until `Stop` (or every sender is gone); sends the newest one when
/// `interval` has passed since the last edit. One failed edit is warned about; the rest
/// are not.
pub(crate) fn edit_loop(
    rx: &Receiver<Msg>,
    interval: Duration,
    edit: &mut dyn FnMut(Vec<Item>) -> Result<(), ApiError>,
) {
    let mut last = Instant::now();
    let mut pending: Option<Vec<Item>> = None;
    let mut warned = false;
    loop {
        let got = match &pending {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(_) => {
                let due = last + interval;
                let now = Instant::now();
                if now >= due {
                    Err(RecvTimeoutError::Timeout)
                } else {
                    rx.recv_timeout(due - now)
                }
            }
        };
        match got {
            Ok(Msg::Items(items)) => pending = Some(items),
            Ok(Msg::Stop) => return,
            Err(RecvTimeoutError::Timeout) => {
                if let Some(items) = pending.take() {
                    if let Err(e) = edit(items)
                        && !warned
                    {
                        output::warn(&format!("cannot update the progress comment: {e}"));
                        warned = true;
                    }
                    last = Instant::now();
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;
