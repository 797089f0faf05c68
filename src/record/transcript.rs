//! The transcript (SPEC §7) as one owned type, `Transcript`, and its typed parts: what
//! `--json`, `-o`, the journal's checkpoints and `run.finished` write, and what
//! `agent summary`, `agent batch` and `--resume` read back. Field order is the document's
//! key order; fields are only ever added within a `version`, and a field an older
//! transcript lacks reads as its default (`#[serde(default)]`), so a transcript written by
//! an earlier release still reads. `docs/reference/transcript.schema.json` is generated
//! from these types (`transcript_schema`).

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::model::protocol::Usage;
use crate::record::outcome::ErrorInfo;

/// The transcript format this agent writes and reads.
pub(crate) const TRANSCRIPT_VERSION: u32 = 1;

/// A whole transcript. `status` and the other closed lists (`subtype`, a sub-agent's
/// status) are strings on this side, so that a hand-made transcript, or one from a later
/// release with a status this one does not know, still reads (`agent summary` shows it as
/// it is); the writer writes `Status::as_str()`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct Transcript {
    pub(crate) version: u32,
    /// `success`, `error`, `max_turns`, `budget`, … (`Status`); `running` only in the
    /// checkpoints of a run still going.
    pub(crate) status: String,
    /// Only in the `-o` file of a run still going (or killed): the journal beside it that
    /// holds the later checkpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) journal: Option<String>,
    pub(crate) is_error: bool,
    /// claude's name for the status (`session::subtype`).
    pub(crate) subtype: String,
    pub(crate) session_id: String,
    pub(crate) result: String,
    pub(crate) error: Option<ErrorRecord>,
    pub(crate) model: String,
    /// Every model that answered, in order of first use.
    pub(crate) models_used: Vec<ModelUse>,
    /// The API it was reached through (`anthropic`, `openai`, `bedrock` …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) provider: Option<String>,
    pub(crate) stop_reason: Option<String>,
    pub(crate) num_turns: u32,
    pub(crate) duration_ms: u64,
    pub(crate) api_duration_ms: u64,
    pub(crate) usage: Usage,
    pub(crate) cost_usd: Option<f64>,
    /// The same as `cost_usd`, under claude's name.
    pub(crate) total_cost_usd: Option<f64>,
    pub(crate) retries: u32,
    /// The conversation in Anthropic's message format. The writer leaves this empty and
    /// splices in the history's stored JSON (`render.rs`): each message is serialised once.
    pub(crate) messages: Vec<RawJson>,
    /// `--output-schema`: the accepted answer. After `messages`: a value of any shape (it
    /// may hold `"messages":[]`) must not come before the key the splice looks for.
    pub(crate) structured_output: Option<Value>,
    pub(crate) tool_calls: Vec<ToolCallRecord>,
    pub(crate) workspace: String,
    pub(crate) tools: Vec<String>,
    pub(crate) permission_denials: Vec<DenialRecord>,
    pub(crate) files_changed: Vec<FileChange>,
    pub(crate) verifications: Vec<VerificationRecord>,
    pub(crate) git_diff_stat: Option<String>,
    pub(crate) spill_dir: Option<String>,
    pub(crate) mcp_servers: Vec<crate::mcp::ServerReport>,
    pub(crate) context_tokens: Option<u64>,
    pub(crate) context_window: Option<u64>,
    pub(crate) context_clearings: Vec<crate::run::context::Clearing>,
    pub(crate) resumed_from: Option<ResumedFrom>,
    /// What confined the commands' network.
    pub(crate) network: Option<Network>,
    pub(crate) network_denials: Vec<crate::net::proxy::Denial>,
    /// Every background command.
    pub(crate) background: Vec<crate::tools::background::JobRecord>,
    /// The model's plan (TodoWrite) as last written, and each change.
    pub(crate) plan: Vec<crate::tools::todo_write::Todo>,
    pub(crate) plan_history: Vec<PlanChange>,
    /// Task's sub-agents.
    pub(crate) subagents: Vec<SubagentRecord>,
    /// Only in a transcript the agent did not write: `agent batch` writes one for a run
    /// whose agent never started (a failed `setup`, a workspace error) and says so here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) written_by: Option<String>,
    /// Every Agent Skill found (loaded, or skipped and why) and the turn each was loaded
    /// at. Absent when the run found none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) skills: Vec<crate::skills::SkillRecord>,
    /// The system prompt the run sent (ATIF's system step, `atif.rs`). Absent in a
    /// transcript of an earlier release.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) system_prompt: Option<String>,
    /// Every response the model was billed for, in order (the main agent's; a sub-agent's
    /// are in its `usage`): ATIF's per-step metrics are made of these.
    pub(crate) responses: Vec<ResponseRecord>,
}

impl Transcript {
    /// A transcript from a JSON value (a document, a `run.finished` event's field, a
    /// rebuilt journal); the error names what does not fit. Through its text: the
    /// messages are kept as text (`RawJson`).
    pub(crate) fn from_value(v: &Value) -> Result<Transcript, String> {
        serde_json::from_str(&v.to_string()).map_err(|e| format!("not an agent transcript ({e})"))
    }
}

/// The transcript's `error`. The agent writes an `ErrorKind` (docs/reference/exit-codes.md lists
/// them); `kind` is a string here because `agent batch` writes a transcript for a run its
/// agent never started with kinds of its own (`setup_failed`, `error`), and a reader must
/// read those (and kinds of a later release) as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct ErrorRecord {
    pub(crate) kind: String,
    pub(crate) message: String,
}

impl From<&ErrorInfo> for ErrorRecord {
    fn from(info: &ErrorInfo) -> Self {
        let kind = match serde_json::to_value(info.kind) {
            Ok(Value::String(s)) => s,
            _ => String::new(),
        };
        ErrorRecord {
            kind,
            message: info.message.clone(),
        }
    }
}

/// One JSON value kept as its text (a message of the conversation), written and read as
/// it is. Read from text only (`Transcript::from_value` goes through text).
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub(crate) struct RawJson(pub(crate) Box<RawValue>);

impl RawJson {
    /// The value's JSON text.
    pub(crate) fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Serialize for RawJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl JsonSchema for RawJson {
    fn schema_name() -> Cow<'static, str> {
        "Message".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A message in Anthropic's Messages API format ({role, content}).",
            "type": "object"
        })
    }
}

/// One executed (or refused) tool call, in the order the model made it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct ToolCallRecord {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) input: Value,
    pub(crate) is_error: bool,
    pub(crate) batch: u32,
    pub(crate) duration_ms: u64,
    /// Milliseconds from the start of the run to the start of the call.
    pub(crate) started_ms: u64,
    pub(crate) turn: u32,
    /// The model that made the call (the one the API reported for its turn).
    pub(crate) model: String,
    /// What the tool said about the call besides its output (`exit_code`, `path`,
    /// `change`, `unfinished`, `server`, …).
    #[serde(skip_serializing_if = "CallMetadata::is_empty")]
    pub(crate) metadata: CallMetadata,
    /// The files the call changed (`ToolResult::changes`): the record's `files_changed`
    /// is made of these. Not written: the metadata says the same to a reader.
    #[serde(skip)]
    pub(crate) changes: Vec<FileChange>,
}

impl ToolCallRecord {
    /// A call still running when the run ended (`InFlight::settle` marks it).
    pub(crate) fn unfinished(&self) -> bool {
        self.metadata.unfinished
    }
}

/// A call's `metadata`. The one key code reads back is typed: `unfinished` (the record
/// writes it, `--resume` reads it). What stays a map is what only ends up in the
/// transcript (`exit_code`, `path`, `change(s)`, the spill path, `bash_id`, an MCP call's
/// `server`: the parts that need them read typed fields or the call's name instead).
/// Written as one object with its keys sorted, as the map alone was.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CallMetadata {
    pub(crate) unfinished: bool,
    pub(crate) rest: Map<String, Value>,
}

impl CallMetadata {
    /// A finished call's: what its tool reported.
    pub(crate) fn of_result(rest: Map<String, Value>) -> CallMetadata {
        CallMetadata {
            unfinished: false,
            rest,
        }
    }

    fn is_empty(&self) -> bool {
        !self.unfinished && self.rest.is_empty()
    }
}

impl Serialize for CallMetadata {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.unfinished {
            return self.rest.serialize(s);
        }
        let mut all = self.rest.clone();
        all.insert("unfinished".into(), Value::Bool(true));
        all.serialize(s)
    }
}

impl<'de> Deserialize<'de> for CallMetadata {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut rest = Map::deserialize(d)?;
        // Only `true` is taken out: anything else stays as written.
        let unfinished = rest.get("unfinished") == Some(&Value::Bool(true));
        if unfinished {
            rest.remove("unfinished");
        }
        Ok(CallMetadata { unfinished, rest })
    }
}

impl JsonSchema for CallMetadata {
    fn schema_name() -> Cow<'static, str> {
        "CallMetadata".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "What the tool said about the call besides its output; \
                            `unfinished` marks a call still running when the run ended.",
            "type": "object",
            "properties": {"unfinished": {"type": "boolean"}},
            "additionalProperties": true
        })
    }
}

/// A call refused by a permission rule or a hook.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct DenialRecord {
    pub(crate) tool_name: String,
    pub(crate) tool_use_id: String,
    pub(crate) tool_input: Value,
    pub(crate) reason: String,
}

/// One run of the `--verify` command (SPEC §9).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct VerificationRecord {
    /// 1, 2, 3 … in the order they ran.
    pub(crate) round: u32,
    pub(crate) command: String,
    /// None when the command timed out, was killed by a signal or could not start.
    pub(crate) exit_code: Option<i32>,
    pub(crate) passed: bool,
    pub(crate) timed_out: bool,
    pub(crate) duration_ms: u64,
    /// The last characters of its output (the model saw up to the runner's head + tail).
    pub(crate) output_tail: String,
}

/// One billed response (`responses`): the model that gave it, its usage and cost, and
/// which message of `messages` it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct ResponseRecord {
    /// The index in `messages` of the assistant message it gave; None for a response cut
    /// off at the context window that said nothing (it is billed with the next one).
    pub(crate) message: Option<u64>,
    pub(crate) model: String,
    pub(crate) usage: Usage,
    /// None when the model has no price or the response came without usage.
    pub(crate) cost_usd: Option<f64>,
}

/// One model of the run (`models_used`): the turns it answered and what they cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct ModelUse {
    pub(crate) model: String,
    pub(crate) turns: u32,
    /// None when the model has no price or a response came without usage.
    pub(crate) cost_usd: Option<f64>,
}

/// A file the run changed, and how (`files_changed`), as the file tools report it.
pub(crate) use crate::tools::paths::FileChange;

/// One sub-agent (Task) as the transcript nests it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct SubagentRecord {
    pub(crate) id: String,
    /// The parent's Task call.
    pub(crate) tool_use_id: String,
    pub(crate) subagent_type: Cow<'static, str>,
    pub(crate) description: String,
    /// `running`, then the sub-agent's own status (`success`, `max_turns`, `budget`, …),
    /// or `interrupted` when the run ended while it ran.
    pub(crate) status: String,
    pub(crate) num_turns: u32,
    pub(crate) usage: Usage,
    pub(crate) cost_usd: Option<f64>,
    pub(crate) messages: Vec<RawJson>,
    pub(crate) tool_calls: Vec<ToolCallRecord>,
}

/// One change of the plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct PlanChange {
    /// The turn whose call wrote it.
    pub(crate) turn: u32,
    /// Milliseconds from the start of the run.
    pub(crate) elapsed_ms: u64,
    pub(crate) todos: Vec<crate::tools::todo_write::Todo>,
}

/// `--resume`: the transcript this run continues, and its totals (the new run counts only
/// its own). Keys in alphabetical order, as the release before this type wrote them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct ResumedFrom {
    pub(crate) cost_usd: Option<f64>,
    pub(crate) num_turns: u64,
    /// The file, made absolute.
    pub(crate) path: String,
    pub(crate) session_id: Option<String>,
    pub(crate) status: String,
    /// The old transcript's `usage` as it was written (null when it had none).
    pub(crate) usage: Value,
}

/// Which network tier confined the commands (`network`). Written with its keys in
/// alphabetical order (`tier` last), as the release before this type wrote them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(tag = "tier", rename_all = "snake_case")]
pub(crate) enum Network {
    /// `--allow-domain`: a network namespace whose only way out is the proxy.
    Namespace {
        allow: Vec<String>,
        deny: Vec<String>,
        /// Always `none`: names are resolved by the proxy.
        dns: String,
    },
    /// `--sandbox` without network: Landlock refuses TCP.
    Landlock {
        /// Always `denied`.
        tcp: String,
    },
    /// The host's network, unconfined.
    Host,
}

impl Serialize for Network {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Network", 4)?;
        let tier = match self {
            Network::Namespace { allow, deny, dns } => {
                s.serialize_field("allow", allow)?;
                s.serialize_field("deny", deny)?;
                s.serialize_field("dns", dns)?;
                "namespace"
            }
            Network::Landlock { tcp } => {
                s.serialize_field("tcp", tcp)?;
                "landlock"
            }
            Network::Host => "host",
        };
        s.serialize_field("tier", tier)?;
        s.end()
    }
}

/// The JSON Schema of the transcript (`docs/reference/transcript.schema.json`).
#[cfg(test)]
pub(crate) fn transcript_schema() -> String {
    schema_text::<Transcript>()
}

/// `T`'s JSON Schema as a `docs/reference/*.schema.json` file holds it (pretty, one
/// newline at the end): what `check_schema` compares.
#[cfg(test)]
pub(crate) fn schema_text<T: JsonSchema>() -> String {
    let schema = schemars::schema_for!(T);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// The check behind every `docs/reference/*.schema.json` (a unit test per schema calls
/// it): fails when the checked-in file is not what the types generate, so a field added
/// without regenerating fails `cargo test`. `AGENT_REGENERATE_SCHEMAS=1` rewrites the file
/// instead.
#[cfg(test)]
pub(crate) fn check_schema(name: &str, generated: &str) {
    const REGENERATE: &str = "AGENT_REGENERATE_SCHEMAS";
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("docs/reference")
        .join(format!("{name}.schema.json"));
    if std::env::var_os(REGENERATE).is_some_and(|v| v == "1") {
        std::fs::write(&path, generated).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is not the schema the types generate: a field was added or changed without \
         regenerating it. Run `{REGENERATE}=1 cargo test schema_is_checked_in` and commit \
         the file.",
        path.display()
    );
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
