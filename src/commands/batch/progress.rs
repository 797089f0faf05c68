//! What a running batch shows on stderr. On a terminal, an indicatif bar: runs done of
//! the total, how many succeeded, how many are running, and the cost so far. Off a
//! terminal (a CI log), one plain line per finished run (id, status, turns, cost,
//! duration), so that a long job's log shows it moving.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use super::TaskOutcome;
use crate::util::output;
use crate::util::sync::Locked;

/// How often the bar redraws on its own (its elapsed time keeps moving).
const BAR_TICK: Duration = Duration::from_millis(200);

#[derive(Default)]
struct Counts {
    done: usize,
    succeeded: usize,
    running: usize,
    cost_usd: f64,
}

pub(crate) struct Progress {
    total: usize,
    bar: Option<ProgressBar>,
    counts: Mutex<Counts>,
}

impl Progress {
    pub(crate) fn start(total: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), output::stderr_draw_target());
            let style =
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> ");
            bar.set_style(style);
            bar.enable_steady_tick(BAR_TICK);
            bar
        });
        Progress {
            total,
            bar,
            counts: Mutex::default(),
        }
    }

    pub(crate) fn started(&self, _id: &str) {
        let mut c = self.counts.locked();
        c.running += 1;
        self.redraw(&c);
    }

    pub(crate) fn finished(&self, o: &TaskOutcome) {
        let mut c = self.counts.locked();
        let ran = !o.skipped && o.status != "not_run";
        if ran {
            c.running = c.running.saturating_sub(1);
        }
        c.done += 1;
        c.succeeded += usize::from(o.status == "success");
        c.cost_usd += o.cost_usd.unwrap_or(0.0);
        let line = finished_line(c.done, self.total, o);
        match &self.bar {
            Some(bar) => {
                bar.set_position(c.done as u64);
                bar.suspend(|| output::info(&line));
                self.redraw(&c);
            }
            None => output::info(&line),
        }
    }

    fn redraw(&self, c: &Counts) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "{} succeeded · {} running · ${:.4}",
                c.succeeded, c.running, c.cost_usd
            ));
        }
    }

    pub(crate) fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `batch: [3/10] fix-parser success · 4 turns · $0.0123 · 12.3 s`
pub(crate) fn finished_line(done: usize, total: usize, o: &TaskOutcome) -> String {
    let cost = match o.cost_usd {
        Some(c) => format!("${c:.4}"),
        None => "cost unknown".to_string(),
    };
    let mut line = format!(
        "batch: [{done}/{total}] {} {} · {} · {cost} · {:.1} s",
        o.id,
        o.status,
        crate::commands::summary::count(o.num_turns, "turn"),
        o.duration_ms as f64 / 1000.0
    );
    if o.skipped {
        line.push_str(" (skipped: finished earlier)");
    } else if let Some(note) = &o.note {
        line.push_str(&format!(" ({note})"));
    }
    if o.status != "success"
        && let Some(e) = &o.error
    {
        line.push_str(&format!(": {}", e.lines().next().unwrap_or("")));
    }
    line
}
