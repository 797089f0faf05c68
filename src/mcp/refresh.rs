//! A tool list that changes mid-run: a server that sends
//! `notifications/tools/list_changed` (on the standalone stream or inside a call) is
//! listed again (`tools/list`, every page) before the next model request, and its
//! `mcp__<server>__*` entries in the registry are replaced, enabled by the same rule as
//! at start-up (`tool::entries`). Each change is handed to the run (`on_change`: the
//! transcript's `mcp_servers`, the `mcp.tools_changed` event).

use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::{Server, Started, ToolDef, ToolKind, tool};
use crate::tools::registry::{Registry, ToolSelection, ToolSource};
use crate::util::sync::Locked;

/// One change of a server's tool list, as the transcript lists it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema, PartialEq)]
pub(crate) struct ToolsChange {
    /// The turn whose request was the first to offer the new list.
    pub at_turn: u32,
    /// Exposed names, sorted.
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Names kept whose description, schema or annotations changed.
    pub changed: Vec<String>,
}

impl ToolsChange {
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Told of each change: the server's name, the change, and the server's tools now.
pub(crate) type OnChange = Box<dyn Fn(&str, &ToolsChange, &[String]) + Send + Sync>;

/// One connected server and the tools it has in the registry now.
struct Watched {
    server: Arc<Server>,
    defs: Mutex<Vec<ToolDef>>,
    /// It had resources at start-up: its resource tools stay.
    resources: bool,
}

/// The run's connected servers as a `ToolSource` of the registry.
pub(crate) struct Refresher {
    servers: Vec<Watched>,
    selection: ToolSelection,
    allow_all: bool,
    on_change: OnChange,
}

impl Refresher {
    /// Watches every connected server of `started`; `selection` and `allow_all` as given
    /// to `tool::register`.
    pub(crate) fn new(
        started: &Started,
        selection: ToolSelection,
        allow_all: bool,
        on_change: OnChange,
    ) -> Self {
        let servers = started
            .servers
            .iter()
            .map(|(server, defs)| Watched {
                server: server.clone(),
                resources: defs.iter().any(|d| d.kind == ToolKind::ReadResource),
                defs: Mutex::new(defs.clone()),
            })
            .collect();
        Refresher {
            servers,
            selection,
            allow_all,
            on_change,
        }
    }

    /// Lists `w`'s tools again and replaces them in `registry`; true when they changed.
    /// A failed listing keeps the tools as they were (said on stderr).
    fn relist(&self, w: &Watched, registry: &Registry, turn: u32) -> bool {
        let name = &w.server.name;
        let raw = match w.server.list_tools() {
            Ok(raw) => raw,
            Err(e) => {
                crate::util::output::warn(&format!(
                    "{e}; it said its tool list changed, and its tools stay as they were"
                ));
                return false;
            }
        };
        let mut defs = w.defs.locked();
        let own: Vec<String> = defs.iter().map(|d| d.exposed.clone()).collect();
        let others = registry.all_names();
        let fresh = super::tool_defs(name, &raw, w.resources, &|n| {
            !own.iter().any(|o| o == n) && others.iter().any(|o| o == n)
        });
        let change = diff(turn, &defs, &fresh);
        if change.is_empty() {
            crate::util::output::debug(&format!(
                "mcp {name}: listed its tools again after list_changed: no change"
            ));
            return false;
        }
        registry.replace(
            &own,
            tool::entries(&w.server, &fresh, &self.selection, self.allow_all),
        );
        *defs = fresh;
        let now: Vec<String> = defs.iter().map(|d| d.exposed.clone()).collect();
        drop(defs);
        crate::util::output::info(&format!(
            "MCP server {name:?} changed its tools before turn {turn}: added [{}], removed [{}], changed [{}]",
            change.added.join(", "),
            change.removed.join(", "),
            change.changed.join(", ")
        ));
        (self.on_change)(name, &change, &now);
        true
    }
}

impl ToolSource for Refresher {
    fn refresh(&self, registry: &Registry, turn: u32) -> bool {
        let mut changed = false;
        for w in &self.servers {
            if w.server.take_tools_changed() {
                changed |= self.relist(w, registry, turn);
            }
        }
        changed
    }
}

/// What differs between two lists of a server's tools, by exposed name.
fn diff(turn: u32, old: &[ToolDef], new: &[ToolDef]) -> ToolsChange {
    let find = |list: &[ToolDef], name: &str| list.iter().position(|d| d.exposed == name);
    let mut added: Vec<String> = new
        .iter()
        .filter(|d| find(old, &d.exposed).is_none())
        .map(|d| d.exposed.clone())
        .collect();
    let mut removed: Vec<String> = old
        .iter()
        .filter(|d| find(new, &d.exposed).is_none())
        .map(|d| d.exposed.clone())
        .collect();
    let mut changed: Vec<String> = new
        .iter()
        .filter(|d| {
            find(old, &d.exposed).is_some_and(|i| {
                let o = &old[i];
                (
                    &o.tool,
                    &o.description,
                    &o.input_schema,
                    o.read_only,
                    o.destructive,
                ) != (
                    &d.tool,
                    &d.description,
                    &d.input_schema,
                    d.read_only,
                    d.destructive,
                )
            })
        })
        .map(|d| d.exposed.clone())
        .collect();
    added.sort();
    removed.sort();
    changed.sort();
    ToolsChange {
        at_turn: turn,
        added,
        removed,
        changed,
    }
}

#[cfg(test)]
#[path = "refresh_tests.rs"]
mod tests;
