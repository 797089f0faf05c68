//! The tool interface of SPEC §4: the `Tool` trait, its result and error types, the
//! per-run context every tool receives, and the shared input parsing.
//!
//! A tool never decides whether it may run (that is `dispatch` and `policy`) and never
//! writes to stdout. Its failures are `ToolError`s that become `is_error` results.

pub(crate) mod apply_patch;
pub(crate) mod background;
pub(crate) mod bash;
pub(crate) mod dispatch;
pub(crate) mod edit_file;
pub(crate) mod files;
pub(crate) mod gate;
pub(crate) mod glob;
pub(crate) mod grep;
pub(crate) mod paths;
pub(crate) mod read_file;
pub(crate) mod registry;
pub(crate) mod scheduler;
pub(crate) mod schema;
pub(crate) mod skill;
pub(crate) mod task;
pub(crate) mod todo_write;
pub(crate) mod walk;
pub(crate) mod web_fetch;
pub(crate) mod write_file;

use std::path::PathBuf;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Results larger than this are spilled to a file and the model gets a preview.
pub(crate) const DEFAULT_MAX_RESULT_CHARS: usize = 30_000; // ~7.5k tokens: enough for a page of output

/// What the tool reports. `metadata` is for the transcript only, never sent to the model;
/// what another part of the run reads is a typed field (`changes`: the record's
/// `files_changed`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ToolResult {
    pub content: String,
    pub is_error: bool,
    /// Only what ends up in the transcript alone may stay here; a key another part reads
    /// is a typed field (`changes`; a denial is `CallOutcome::denial`).
    pub metadata: Map<String, Value>,
    /// The files the call changed, and how.
    pub changes: Vec<paths::FileChange>,
    /// Images and PDFs for the model (`ContentBlock::Image`/`Document`, made by
    /// `model::media`), sent after `content`.
    pub media: Vec<crate::model::protocol::ContentBlock>,
}

impl ToolResult {
    pub(crate) fn ok(content: impl Into<String>) -> Self {
        ToolResult {
            content: content.into(),
            is_error: false,
            metadata: Map::new(),
            changes: Vec::new(),
            media: Vec::new(),
        }
    }

    pub(crate) fn error(content: impl Into<String>) -> Self {
        ToolResult {
            content: content.into(),
            is_error: true,
            metadata: Map::new(),
            changes: Vec::new(),
            media: Vec::new(),
        }
    }

    pub(crate) fn with_meta(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.to_string(), value.into());
        self
    }

    /// The one file the call changed: the typed change, and `path` and `change` in the
    /// transcript's metadata.
    pub(crate) fn with_change(self, path: String, change: paths::ChangeKind) -> Self {
        let mut r = self
            .with_meta("path", path.as_str())
            .with_meta("change", change.as_str());
        r.changes.push(paths::FileChange { path, change });
        r
    }

    /// The files a call changed (more than one): the typed changes, and `changes:
    /// [{path, change}]` in the transcript's metadata.
    pub(crate) fn with_changes(mut self, changes: Vec<paths::FileChange>) -> Self {
        let listed: Vec<Value> = changes
            .iter()
            .map(|c| serde_json::json!({"path": c.path, "change": c.change.as_str()}))
            .collect();
        self.changes = changes;
        self.with_meta("changes", Value::Array(listed))
    }
}

/// A tool's failure. `Failed` is reported to the model and the run goes on; `Fatal` is a
/// system failure (the workspace vanished) that ends the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolError {
    Failed(String),
    /// A path the call names does not exist (`tools::paths`): a failed call like
    /// `Failed`, typed so that a tool can tell the model what to do instead (EditFile:
    /// use WriteFile) without reading the message.
    NotFound(String),
    Fatal(String),
}

impl ToolError {
    pub(crate) fn failed(msg: impl Into<String>) -> Self {
        ToolError::Failed(msg.into())
    }

    pub(crate) fn message(&self) -> &str {
        match self {
            ToolError::Failed(m) | ToolError::NotFound(m) | ToolError::Fatal(m) => m,
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
pub(crate) enum Category {
    File,
    Shell,
    Search,
    /// A tool of an MCP server (enabled by its annotations and the MCP flags).
    Mcp,
    /// The run's final answer (`--output-schema`'s StructuredOutput).
    Answer,
    /// The model's plan (TodoWrite): no side effects.
    Plan,
    /// A sub-agent (Task).
    Agent,
    /// The web (WebFetch): on only with `--allow-web`.
    Web,
    /// Agent Skills (Skill): on when the run found skills.
    Skill,
}

/// Which family of editing tools a file tool belongs to: a run offers one of them
/// (`--edit-tool`, by default by model family), so a model sees one way to edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EditStyle {
    /// Not an editing tool (or one offered whatever the style).
    Any,
    /// WriteFile and EditFile: whole files and exact string replacements.
    Replace,
    /// apply_patch: codex's patch format, which GPT and o-series models are trained on.
    Patch,
}

impl Category {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Category::File => "file",
            Category::Shell => "shell",
            Category::Search => "search",
            Category::Mcp => "mcp",
            Category::Answer => "answer",
            Category::Plan => "plan",
            Category::Agent => "agent",
            Category::Web => "web",
            Category::Skill => "skill",
        }
    }
}

/// Everything a tool may know about the run. Cheap to share across rayon workers.
#[derive(Debug, Clone)]
pub(crate) struct ToolContext {
    /// Canonical workspace root: every file tool is confined to it.
    pub workspace: PathBuf,
    /// Canonical `--add-dir` directories: further roots, confined the same way.
    pub extra_dirs: Vec<PathBuf>,
    /// Canonical directories of the run's skills outside the workspace: ReadFile, Grep and
    /// Glob may read there, nothing may write.
    pub read_only_dirs: Vec<PathBuf>,
    /// Where oversized results and full Bash output are saved; ReadFile may read here.
    pub spill_dir: PathBuf,
    /// The environment given to child processes (Bash, hooks, verify), secrets removed.
    pub child_env: Arc<Vec<(String, String)>>,
    /// The Landlock sandbox for commands (`--sandbox`, `--no-network`); `None`: off.
    pub sandbox: Option<Arc<crate::process::sandbox::Confinement>>,
    /// The run's background commands (Bash `run_in_background`, BashOutput, KillBash).
    pub background: Arc<background::Jobs>,
    /// The model's plan (TodoWrite).
    pub plan: Arc<todo_write::Plan>,
    /// Runs Task's sub-agents; `None` inside a sub-agent (and in unit tests).
    pub subagents: Option<Arc<dyn task::Subagents>>,
    /// Where the file tools get and put a file's text: the disk, or `--client-files`.
    pub files: files::FileAccess,
}

/// What a permission rule's specifier (`Tool(spec)`) is matched against, as the tool says:
/// policy never reads a tool's input fields itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SubjectKind {
    /// Rules name the tool only; `Tool(spec)` is refused when the settings are read.
    Nothing,
    /// A shell command line: `Tool(git status)`, `Tool(cargo test:*)`.
    Command,
    /// Paths: `Tool(src/**)`, a glob relative to the workspace.
    Paths,
    /// A host: `Tool(domain:docs.rs)`, `Tool(domain:*.example.com)`.
    Domain,
}

/// What one call's rules are matched against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Subject {
    Nothing,
    /// The command line as the model wrote it.
    Command(String),
    /// Every path the call touches, as the model wrote them (relative or absolute).
    Paths(Vec<String>),
    /// The host a call reaches (lower case).
    Domain(String),
}

/// A tool as the settings see it: the name rules and hook matchers use, and what a rule's
/// specifier means for it. Dynamic tools (MCP) are listed the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KnownTool {
    pub name: String,
    pub subject: SubjectKind,
}

/// The object-safe interface every tool presents to the registry, dispatch and policy
/// (SPEC §4). Built-in tools implement `TypedTool` and get this through the blanket
/// impl below; a tool known only at run time (an MCP server's) may implement it directly.
pub(crate) trait Tool: Send + Sync {
    fn name(&self) -> &str;
    /// Written for the model: when to use it, when not, constraints, what it returns.
    fn description(&self) -> &str;
    /// JSON Schema of the input. Must agree with the tool's typed input struct (tested).
    fn input_schema(&self) -> Value;
    fn is_read_only(&self) -> bool;
    fn is_destructive(&self) -> bool;
    /// Whether this call may run in parallel with its neighbours.
    fn is_concurrency_safe(&self, input: &Value) -> bool;
    fn category(&self) -> Category;
    /// What a permission rule's specifier names for this tool.
    fn subject_kind(&self) -> SubjectKind;
    /// Whether the tool reports every file it changes itself (`metadata.change`), so that
    /// enabling it alone needs no scan of the workspace to find what the run changed.
    fn records_changes(&self) -> bool;
    /// The editing family it belongs to (`--edit-tool`).
    fn edit_style(&self) -> EditStyle {
        EditStyle::Any
    }
    /// `None`: never spilled (ReadFile, so that reading a spilled file never spills again).
    fn max_result_chars(&self) -> Option<usize>;
    /// Parses and checks the input once, before any side effect: the prepared call then
    /// names its permission subject and executes.
    fn prepare<'t>(&'t self, input: &Value) -> Result<Box<dyn PreparedCall + 't>, ToolError>;
    /// Whether `prepare` checks the input against the whole `input_schema` itself, with
    /// messages listing every failure (dispatch then skips its small first check).
    fn checks_own_schema(&self) -> bool {
        false
    }
    /// A tool that only serves another (BashOutput and KillBash serve Bash): enabled
    /// exactly when that one is, unless `--disallowed-tools` names it.
    fn companion_of(&self) -> Option<&str> {
        None
    }
}

/// One call whose input is parsed and valid.
pub(crate) trait PreparedCall {
    fn subject(&self) -> Subject;
    fn execute(&self, ctx: &ToolContext) -> Result<ToolResult, ToolError>;
}

/// What a built-in tool is, in one place: what the registry, the scheduler, policy and
/// the change scan ask of it. The presets are the kinds of built-in tool there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Traits {
    pub(crate) read_only: bool,
    pub(crate) destructive: bool,
    /// Whether a call may run in parallel with its neighbours; the default runs alone.
    pub(crate) concurrency_safe: bool,
    pub(crate) category: Category,
    pub(crate) subject_kind: SubjectKind,
    /// Whether the tool reports every file it changes itself (`metadata.change`).
    pub(crate) records_changes: bool,
    /// The editing family it belongs to (`--edit-tool` offers one).
    pub(crate) edit_style: EditStyle,
    /// The tool this one only serves: enabled exactly when that one is.
    pub(crate) companion_of: Option<&'static str>,
}

impl Traits {
    /// Reads files in the workspace: read-only, parallel, rules name paths.
    pub(crate) const FILE_READ: Traits = Traits {
        read_only: true,
        concurrency_safe: true,
        ..Traits::FILE_WRITE
    };
    /// Writes files in the workspace, reporting every change: rules name paths.
    pub(crate) const FILE_WRITE: Traits = Traits {
        read_only: false,
        destructive: false,
        concurrency_safe: false,
        category: Category::File,
        subject_kind: SubjectKind::Paths,
        records_changes: true,
        edit_style: EditStyle::Any,
        companion_of: None,
    };
    /// Searches the workspace: read-only, parallel, rules name the searched path.
    pub(crate) const SEARCH: Traits = Traits {
        category: Category::Search,
        ..Traits::FILE_READ
    };
    /// Runs shell commands: may destroy anything, changes unreported, rules name commands.
    pub(crate) const SHELL: Traits = Traits {
        read_only: false,
        destructive: true,
        concurrency_safe: false,
        category: Category::Shell,
        subject_kind: SubjectKind::Command,
        records_changes: false,
        edit_style: EditStyle::Any,
        companion_of: None,
    };
}

/// A tool with a typed input, the way built-in tools are written: serde parses the input
/// once into `Input`, `validate` checks what the schema cannot, `subject` says what rules
/// are matched against, `execute` runs.
pub(crate) trait TypedTool: Send + Sync {
    type Input: DeserializeOwned + 'static;
    /// What kind of tool it is, usually one of the presets on [`Traits`].
    const TRAITS: Traits;
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn input_schema(&self) -> Value;
    fn is_read_only(&self) -> bool {
        Self::TRAITS.read_only
    }
    fn is_destructive(&self) -> bool {
        Self::TRAITS.destructive
    }
    fn is_concurrency_safe(&self) -> bool {
        Self::TRAITS.concurrency_safe
    }
    fn category(&self) -> Category {
        Self::TRAITS.category
    }
    fn subject_kind(&self) -> SubjectKind {
        Self::TRAITS.subject_kind
    }
    fn records_changes(&self) -> bool {
        Self::TRAITS.records_changes
    }
    fn max_result_chars(&self) -> Option<usize> {
        Some(DEFAULT_MAX_RESULT_CHARS)
    }
    /// Checks beyond the schema (ranges, non-empty strings) before any side effect.
    fn validate(&self, _input: &Self::Input) -> Result<(), ToolError> {
        Ok(())
    }
    /// What permission rules are matched against; must agree with `subject_kind`.
    fn subject(&self, _input: &Self::Input) -> Subject {
        Subject::Nothing
    }
    fn execute(&self, ctx: &ToolContext, input: &Self::Input) -> Result<ToolResult, ToolError>;
}

impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        TypedTool::name(self)
    }
    fn description(&self) -> &str {
        TypedTool::description(self)
    }
    fn input_schema(&self) -> Value {
        TypedTool::input_schema(self)
    }
    fn is_read_only(&self) -> bool {
        TypedTool::is_read_only(self)
    }
    fn is_destructive(&self) -> bool {
        TypedTool::is_destructive(self)
    }
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        TypedTool::is_concurrency_safe(self)
    }
    fn category(&self) -> Category {
        TypedTool::category(self)
    }
    fn subject_kind(&self) -> SubjectKind {
        TypedTool::subject_kind(self)
    }
    fn records_changes(&self) -> bool {
        TypedTool::records_changes(self)
    }
    fn edit_style(&self) -> EditStyle {
        T::TRAITS.edit_style
    }
    fn max_result_chars(&self) -> Option<usize> {
        TypedTool::max_result_chars(self)
    }
    fn companion_of(&self) -> Option<&str> {
        T::TRAITS.companion_of
    }
    fn prepare<'t>(&'t self, input: &Value) -> Result<Box<dyn PreparedCall + 't>, ToolError> {
        let input: T::Input = parse_input(input)?;
        self.validate(&input)?;
        Ok(Box::new(Typed { tool: self, input }))
    }
}

/// A typed tool's call, parsed once.
struct Typed<'t, T: TypedTool> {
    tool: &'t T,
    input: T::Input,
}

impl<T: TypedTool> PreparedCall for Typed<'_, T> {
    fn subject(&self) -> Subject {
        self.tool.subject(&self.input)
    }
    fn execute(&self, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        self.tool.execute(ctx, &self.input)
    }
}

/// Deserialises a tool's input into its typed struct; serde's message names the field.
fn parse_input<T: DeserializeOwned>(input: &Value) -> Result<T, ToolError> {
    T::deserialize(input).map_err(|e| ToolError::failed(format!("invalid input: {e}")))
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Helpers shared by the tools' unit tests.
    use super::*;

    impl ToolContext {
        /// A context for tests: the given root, the default settings.
        pub(crate) fn for_workspace(workspace: PathBuf) -> Self {
            let spill_dir =
                std::env::temp_dir().join(format!("agent-spill-{}", std::process::id()));
            ToolContext {
                workspace,
                extra_dirs: Vec::new(),
                read_only_dirs: Vec::new(),
                spill_dir,
                child_env: Arc::new(crate::util::secrets::scrubbed_env(std::env::vars(), &[])),
                sandbox: None,
                background: Arc::new(background::Jobs::new(
                    background::DEFAULT_MAX_BACKGROUND,
                    std::time::Instant::now(),
                )),
                plan: Arc::default(),
                subagents: None,
                files: files::FileAccess::Disk,
            }
        }
    }

    pub(crate) fn ctx(dir: &std::path::Path) -> ToolContext {
        let root = dir.canonicalize().expect("canonical tempdir");
        let mut c = ToolContext::for_workspace(root.clone());
        c.spill_dir = root.join(".spill-test");
        c
    }

    /// Prepares and runs a call as dispatch does, without the schema check and the gate.
    pub(crate) fn exec(
        tool: &dyn Tool,
        ctx: &ToolContext,
        input: &Value,
    ) -> Result<ToolResult, ToolError> {
        tool.prepare(input)?.execute(ctx)
    }

    /// Runs git in `dir` with a throwaway identity (and no signing), asserting success.
    pub(crate) fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    /// What the test tools' own methods do not override: not read-only, run alone, rules
    /// name the tool only, changes unreported.
    pub(crate) const TEST_TRAITS: Traits = Traits {
        records_changes: false,
        subject_kind: SubjectKind::Nothing,
        ..Traits::FILE_WRITE
    };

    /// Runs a call as dispatch does after its schema check: the input check, then the tool.
    pub(crate) fn call(
        tool: &dyn Tool,
        ctx: &ToolContext,
        input: &Value,
    ) -> Result<ToolResult, ToolError> {
        check_input(tool, input)?;
        exec(tool, ctx, input)
    }

    /// The message of a call that must fail.
    pub(crate) fn call_err(tool: &dyn Tool, ctx: &ToolContext, input: &Value) -> String {
        match call(tool, ctx, input) {
            Err(ToolError::Failed(m) | ToolError::NotFound(m)) => m,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    /// Writes `data` to `rel` under `root`, creating the directories on the way.
    pub(crate) fn put(root: &std::path::Path, rel: &str, data: impl AsRef<[u8]>) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("a path under the root")).unwrap();
        std::fs::write(p, data).unwrap();
    }

    /// The input check alone.
    pub(crate) fn check_input(tool: &dyn Tool, input: &Value) -> Result<(), ToolError> {
        tool.prepare(input).map(|_| ())
    }

    /// A tool for the scheduler's and the loop's tests: a name, whether it is safe
    /// (read-only and concurrency-safe, a search) or not (a file tool), and what a call
    /// does with its input.
    pub(crate) struct FnTool<F> {
        name: &'static str,
        safe: bool,
        run: F,
    }

    impl<F: Fn(&Value) -> ToolResult + Send + Sync> FnTool<F> {
        pub(crate) fn safe(name: &'static str, run: F) -> Arc<Self> {
            Arc::new(FnTool {
                name,
                safe: true,
                run,
            })
        }

        pub(crate) fn unsafe_(name: &'static str, run: F) -> Arc<Self> {
            Arc::new(FnTool {
                name,
                safe: false,
                run,
            })
        }
    }

    impl<F: Fn(&Value) -> ToolResult + Send + Sync> TypedTool for FnTool<F> {
        type Input = Value;
        const TRAITS: crate::tools::Traits = crate::tools::test_support::TEST_TRAITS;
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> &str {
            "test"
        }
        fn input_schema(&self) -> Value {
            serde_json::json!({"type": "object", "properties": {"tag": {"type": "string"}}})
        }
        fn is_read_only(&self) -> bool {
            self.safe
        }
        fn is_concurrency_safe(&self) -> bool {
            self.safe
        }
        fn category(&self) -> Category {
            if self.safe {
                Category::Search
            } else {
                Category::File
            }
        }
        fn execute(&self, _: &ToolContext, input: &Value) -> Result<ToolResult, ToolError> {
            Ok((self.run)(input))
        }
    }
}
