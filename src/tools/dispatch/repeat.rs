//! The repeated-call guard: the same tool with the same input made `REPEAT_LIMIT` times in
//! a row is refused, not run (SPEC §9). A dispatch refusal, on in every run: it counts
//! calls in the model's order across turns, so a call's verdict is fixed as soon as the
//! call is known (streaming order) and is the same whichever thread dispatches it.

use std::sync::Mutex;

use serde_json::Value;

use crate::model::turn::PendingCall;
use crate::util::sync::Locked;

/// The same name and input this many times in a row: the call is refused, not run.
pub(crate) const REPEAT_LIMIT: u32 = 5; // 4 identical tries are already a loop; the 5th is refused

/// Identity of a call for repeat detection: name and input (unparsable input by its
/// error, so two identical broken calls also count as a repeat).
type CallKey = (String, Value);

fn key_of(call: &PendingCall) -> CallKey {
    let input = match &call.input {
        Ok(v) => v.clone(),
        Err(e) => Value::String(format!("unparsed: {e}")),
    };
    (call.name.clone(), input)
}

/// Counts identical consecutive calls in the model's order, across turns. A call's
/// verdict depends only on the calls before it, so it is fixed as soon as the call is
/// known (streaming order) and the same whichever thread dispatches it.
#[derive(Debug, Default)]
pub(super) struct RepeatGuard {
    state: Mutex<RepeatState>,
}

#[derive(Debug, Default)]
struct RepeatState {
    /// The last call of the finished turns and how many times in a row it was made.
    committed: Option<(CallKey, u32)>,
    /// The current turn's calls so far: id, key, count in a row including this one.
    current: Vec<(String, CallKey, u32)>,
}

impl RepeatState {
    fn push(&mut self, call: &PendingCall) {
        if self.current.iter().any(|(id, _, _)| *id == call.id) {
            return;
        }
        let key = key_of(call);
        let prev = match self.current.last() {
            Some((_, k, n)) => Some((k, *n)),
            None => self.committed.as_ref().map(|(k, n)| (k, *n)),
        };
        let count = match prev {
            Some((k, n)) if *k == key => n + 1,
            _ => 1,
        };
        self.current.push((call.id.clone(), key, count));
    }
}

impl RepeatGuard {
    fn state(&self) -> std::sync::MutexGuard<'_, RepeatState> {
        self.state.locked()
    }

    /// A call of the streaming turn is complete (in the model's order).
    pub(super) fn observe(&self, call: &PendingCall) {
        self.state().push(call);
    }

    /// A new attempt of the turn starts: the calls heard so far are discarded.
    pub(super) fn restart(&self) {
        self.state().current.clear();
    }

    /// The turn is complete: its calls, in order, are the authority (same verdicts as
    /// those heard while streaming, which were a prefix of them).
    pub(super) fn sync(&self, calls: &[PendingCall]) {
        let mut st = self.state();
        st.current.clear();
        for c in calls {
            st.push(c);
        }
    }

    /// The turn's calls were answered: they become the history of the next turn.
    pub(super) fn commit(&self) {
        let mut st = self.state();
        if let Some((_, key, n)) = st.current.pop() {
            st.committed = Some((key, n));
        }
        st.current.clear();
    }

    /// The error result for a call made `REPEAT_LIMIT` or more times in a row.
    pub(super) fn refusal(&self, call: &PendingCall) -> Option<String> {
        let mut st = self.state();
        if !st.current.iter().any(|(id, _, _)| *id == call.id) {
            st.push(call); // a provider that did not announce the call while streaming
        }
        let (_, _, n) = st.current.iter().find(|(id, _, _)| *id == call.id)?;
        (*n >= REPEAT_LIMIT)
            .then(|| format!("you have made this exact call {n} times; change approach"))
    }
}

#[cfg(test)]
#[path = "repeat_tests.rs"]
mod tests;
