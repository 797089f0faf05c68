//! The tool interface of SPEC §4: the `Tool` trait, its result and error types, the
//! per-run context every tool receives, and the shared input parsing.
//!
//! A tool never decides whether it may run (that is `dispatch` and `policy`) and never
//! writes to stdout. Its failures are `ToolError`s that become `is_error` results.

pub(crate) mod bash;
pub(crate) mod edit_file;
pub(crate) mod glob;
pub(crate) mod grep;
pub(crate) mod read_file;
pub(crate) mod registry;
pub(crate) mod sandbox;
pub(crate) mod schema;
pub(crate) mod walk;
pub(crate) mod write_file;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Results larger than this are spilled to a file and the model gets a preview.
pub(crate) const DEFAULT_MAX_RESULT_CHARS: usize = 30_000; // ~7.5k tokens: enough for a page of output

/// What the tool reports. `metadata` is for the transcript only, never sent to the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResult {
    pub content: String,
    pub is_error: bool,
    pub metadata: Map<String, Value>,
}

impl ToolResult {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolResult {
            content: content.into(),
            is_error: false,
            metadata: Map::new(),
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        ToolResult {
            content: content.into(),
            is_error: true,
            metadata: Map::new(),
        }
    }

    pub fn with_meta(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.to_string(), value.into());
        self
    }
}

/// A tool's failure. `Failed` is reported to the model and the run goes on; `Fatal` is a
/// system failure (the workspace vanished) that ends the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolError {
    Failed(String),
    Fatal(String),
}

impl ToolError {
    pub fn failed(msg: impl Into<String>) -> Self {
        ToolError::Failed(msg.into())
    }

    pub fn message(&self) -> &str {
        match self {
            ToolError::Failed(m) | ToolError::Fatal(m) => m,
        }
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    File,
    Shell,
    Search,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::File => "file",
            Category::Shell => "shell",
            Category::Search => "search",
        }
    }
}

/// Everything a tool may know about the run. Cheap to share across rayon workers.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Canonical workspace root: every file tool is confined to it.
    pub workspace: PathBuf,
    /// Where oversized results and full Bash output are saved; ReadFile may read here.
    pub spill_dir: PathBuf,
    /// Default Bash timeout (`--bash-timeout`).
    pub bash_timeout: Duration,
    /// The environment given to child processes (Bash, hooks, verify), secrets removed.
    pub child_env: Arc<Vec<(String, String)>>,
    /// The Landlock sandbox for commands (`--sandbox`, `--no-network`); `None`: off.
    pub sandbox: Option<Arc<crate::confine::Confinement>>,
}

impl ToolContext {
    /// A context for tests and for `agent tools`: the given root, the default settings.
    pub fn for_workspace(workspace: PathBuf) -> Self {
        let spill_dir = std::env::temp_dir().join(format!("agent-spill-{}", std::process::id()));
        ToolContext {
            workspace,
            spill_dir,
            bash_timeout: Duration::from_secs(30),
            child_env: Arc::new(crate::secrets::scrubbed_env(std::env::vars(), &[])),
            sandbox: None,
        }
    }
}

/// The interface every tool implements (SPEC §4).
pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    /// Written for the model: when to use it, when not, constraints, what it returns.
    fn description(&self) -> &'static str;
    /// JSON Schema of the input. Must agree with the tool's typed input struct (tested).
    fn input_schema(&self) -> Value;
    fn is_read_only(&self) -> bool;
    fn is_destructive(&self) -> bool {
        false
    }
    /// Whether this call may run in parallel with its neighbours. Defensive default.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }
    fn category(&self) -> Category;
    /// Checks beyond the schema (ranges, non-empty strings) before any side effect.
    fn validate_input(&self, _input: &Value) -> Result<(), ToolError> {
        Ok(())
    }
    fn execute(&self, ctx: &ToolContext, input: &Value) -> Result<ToolResult, ToolError>;
    /// `None`: never spilled (ReadFile, so that reading a spilled file never spills again).
    fn max_result_chars(&self) -> Option<usize> {
        Some(DEFAULT_MAX_RESULT_CHARS)
    }
}

/// Deserialises a tool's input into its typed struct; serde's message names the field.
pub(crate) fn parse_input<T: DeserializeOwned>(input: &Value) -> Result<T, ToolError> {
    T::deserialize(input).map_err(|e| ToolError::failed(format!("invalid input: {e}")))
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Helpers shared by the tools' unit tests.
    use super::*;

    pub(crate) fn ctx(dir: &std::path::Path) -> ToolContext {
        let root = dir.canonicalize().expect("canonical tempdir");
        let mut c = ToolContext::for_workspace(root.clone());
        c.spill_dir = root.join(".spill-test");
        c
    }
}
