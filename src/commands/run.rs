//! `agent run`: builds the run from the config (provider, tools, policy, CI features),
//! runs the agent loop and hands the outcome to the `Finisher`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::config::cli::RunArgs;
use crate::config::{Config, ProcessEnv};
use crate::error::{Error, ExitStatus};
use crate::model::provider::Provider;
use crate::model::provider::cassette::{CassetteWriter, ReplayProvider};
use crate::model::provider::http::{HttpConfig, HttpProvider, Recorder};
use crate::policy::PolicyGate;
use crate::record::transcript::Network;
use crate::record::{InFlight, RunRecord};
use crate::run::agent::subagent::{ProviderFactory, SubagentRunner};
use crate::run::agent::{Agent, RunHandle};
use crate::run::event::{self as ev, RunEvent};
use crate::run::events::Sink;
use crate::run::finish::Finisher;
use crate::run::signals::{FINISHER, watch_signals};
use crate::tools::ToolContext;
use crate::tools::registry::Registry;
use crate::util::sync::Locked;
use crate::{mcp, process, record::changes, run::ci, run::events, util::output};

pub(crate) fn run_command(args: RunArgs) -> ExitStatus {
    run_observed(args, Embedded::default())
}

/// What another command (`agent github`) hands a run, typed: the task in place of the
/// prompt flags, an observer of its events (a `Sink`, told of each one as it happens
/// whether or not `--jsonl` also prints them; the last is `run.finished` with the
/// transcript, and stdout then gets no answer from the run) and secret values of its own
/// to redact.
#[derive(Default)]
pub(crate) struct Embedded {
    pub task: Option<Task>,
    pub observer: Option<Box<dyn Sink>>,
    pub secrets: Vec<String>,
}

/// A run's task, given by a command instead of the prompt flags.
pub(crate) struct Task {
    /// The prompt, in place of PROMPT / `--prompt-file` / stdin.
    pub prompt: String,
    /// The whole addition to the system prompt, in place of `--append-system-prompt`.
    pub append_system_prompt: String,
    /// The answer's JSON Schema, in place of `--output-schema`.
    pub output_schema: Option<String>,
    /// The project's instructions read elsewhere (a pull request's base branch), in place
    /// of the workspace's AGENTS.md: `Some(None)` means there are none.
    pub project_instructions: Option<Option<(String, String)>>,
}

impl Task {
    /// The run's arguments with this task: the one place a command's task meets the
    /// flags (`Config` is built from them, as for `agent run`).
    fn apply(self, args: &mut RunArgs) {
        args.prompt = Some(self.prompt);
        args.append_system_prompt = Some(self.append_system_prompt);
        if self.output_schema.is_some() {
            args.session.output_schema = self.output_schema;
        }
        args.project_instructions = self.project_instructions;
    }
}

/// `agent run`, or a command's run (`Embedded`): set up, the loop, the way out.
pub(crate) fn run_observed(mut args: RunArgs, with: Embedded) -> ExitStatus {
    // From the first moment: a signal before the run is set up still exits 130.
    watch_signals();
    process::adopt_orphans();
    if let Some(task) = with.task {
        task.apply(&mut args);
    }
    let config = match Config::from_args(&args, &ProcessEnv) {
        Ok(c) => c,
        Err(e) => return output::usage_failure(&e),
    };
    output::init(config.output().verbosity(), secrets(&config, with.secrets));
    for w in config.warnings() {
        output::warn(w);
    }
    crate::otel::start(config.output().otel());
    let trace = Arc::new(run_trace(&config));
    let (ctx, mut registry, record) = match workspace(&config) {
        Ok(w) => w,
        Err(e) => return output::usage_failure(&e),
    };
    let skill_tool = register_skills(&config, &mut registry, &record);
    // Before the MCP servers start, which can take a minute (`npx -y …`): a signal or the
    // deadline during start-up writes the transcript too, listing the servers still
    // starting (`--timeout` counts the start-up: it bounds the whole run).
    let finisher = make_finisher(&config, &record, &ctx, with.observer, trace.clone());
    let _ = FINISHER.set(finisher.clone());
    observe(&config, &ctx, &record, &finisher.events);
    observe_skills(skill_tool.clone(), &record, &finisher.events);
    if let Some(limit) = config.ci().timeout() {
        finisher.start_deadline(limit);
    }
    let started = start_mcp(&config, &ctx.child_env, &mut registry, &record, &finisher);
    if finisher.cancelled.load(Ordering::SeqCst) {
        // A way out was taken during start-up (the servers' failures are its doing): it
        // writes the transcript and exits the process.
        park_for_the_way_out();
    }
    let provider = started.and_then(|reports| provider(&config, &mut registry, &record, reports));
    let mut provider = match provider {
        Ok(p) => p,
        Err(e) => return set_up_failed(&trace, &record, &e),
    };
    let mut ci = ci::CiRun::new(&config, finisher.events.clone(), trace);
    take_baseline(&config, &registry, &ctx, &finisher);
    finisher.checkpoint();
    let outcome = run_loop(
        Arc::new(config),
        (&registry, skill_tool),
        ctx,
        &record,
        &finisher,
        &mut ci,
        provider.as_mut(),
    );
    match finisher.finish(&outcome, false) {
        Some(code) => ExitStatus::from_code(code),
        None => park_for_the_way_out(),
    }
}

/// The run span, under the process's parent (`TRACEPARENT`).
fn run_trace(config: &Config) -> crate::run::telemetry::RunTrace {
    crate::run::telemetry::RunTrace::new(
        crate::run::telemetry::provider_name(config.provider().kind()),
        config.provider().model(),
        config.provider().max_tokens(),
        crate::otel::process_parent(),
    )
}

/// The workspace scan `files_changed` compares with. The file tools report their own
/// changes; only commands (Bash, hooks, --verify) can change files behind their back, so
/// only then is the workspace scanned.
fn take_baseline(config: &Config, registry: &Registry, ctx: &ToolContext, finisher: &Finisher) {
    if commands_may_write(config, registry) {
        let _ = finisher.baseline.set(changes::Baseline::take(
            config.workspace(),
            own_files(config, ctx),
        ));
    }
}

/// The one list of values to redact (stderr, stdout, `-o`, `--jsonl`, spans, the
/// `--record` cassette): the secret variables, the API key, the gateway's, MCP servers'
/// and OpenTelemetry's credentials, and the embedding command's own.
fn secrets(config: &Config, embedded: Vec<String>) -> Vec<String> {
    let mut secrets = crate::util::secrets::secret_values();
    secrets.push(config.provider().api_key().to_string());
    secrets.extend(config.provider().gateway().secret_values());
    secrets.extend(config.tools().mcp().secret_values());
    secrets.extend(embedded);
    secrets.extend(config.output().otel().secret_values());
    secrets
}

/// What the tools work in: the sandbox, the child environment, the registry, the record
/// (noting a `--resume`) and the tool context. `Err` (exit 2): the sandbox cannot be set up.
fn workspace(config: &Config) -> Result<(ToolContext, Registry, Arc<Mutex<RunRecord>>), Error> {
    let sandbox =
        crate::process::sandbox::Confinement::build(config.tools().sandbox(), config.workspace())
            .map_err(Error::Usage)?;
    if let Some(s) = &sandbox {
        output::debug(s.summary());
    }
    let child_env = crate::util::secrets::command_env(
        std::env::vars(),
        config.tools().command_env(),
        output::secrets(),
    );
    if !child_env.removed.is_empty() {
        output::warn(&format!(
            "not passed to commands (secret-looking): {}; --command-env-pass NAME passes one",
            child_env.removed.join(", ")
        ));
    }
    let child_env = Arc::new(child_env.vars);
    let registry = Registry::builtin(config.tools().selection());
    let record = Arc::new(Mutex::new(RunRecord::new(
        config.provider().model(),
        config.workspace().to_path_buf(),
        enabled_names(&registry),
    )));
    let ctx = ToolContext {
        workspace: config.workspace().to_path_buf(),
        extra_dirs: config.tools().add_dirs().to_vec(),
        read_only_dirs: {
            let roots: Vec<&std::path::Path> = std::iter::once(config.workspace())
                .chain(config.tools().add_dirs().iter().map(PathBuf::as_path))
                .collect();
            config.skills().discovered().read_only_dirs(&roots)
        },
        spill_dir: spill_dir(config),
        child_env,
        sandbox,
        background: Arc::new(crate::tools::background::Jobs::new(
            config.tools().selection().max_background,
            record.locked().started(),
        )),
        plan: Arc::default(),
        subagents: None,
        files: match config.tools().client_files() {
            (false, false) => crate::tools::files::FileAccess::Disk,
            (read, write) => crate::tools::files::FileAccess::Client {
                fs: Arc::new(crate::run::ask::StdinFiles::start()),
                read,
                write,
            },
        },
    };
    record
        .locked()
        .record_system_prompt(config.session().system_prompt());
    if let Some(r) = config.session().resume() {
        note_resumed(&mut record.locked(), r);
    }
    Ok((ctx, registry, record))
}

/// The run's skills in the record, and the Skill tool holding them in place of the
/// built-in one: offered when skills were found and the tool flags leave it on. A prompt
/// command's skill is loaded already (turn 0; `run.started` is followed by its
/// `skill.activated`).
fn register_skills(
    config: &Config,
    registry: &mut Registry,
    record: &Mutex<RunRecord>,
) -> Arc<crate::tools::skill::Skill> {
    use crate::tools::skill::{NAME, Skill};
    let found = config.skills().discovered();
    let tool = Arc::new(Skill::new(found.clone()));
    let on = config.skills().offered(config.tools().selection());
    registry.replace(&[NAME.to_string()], vec![(tool.clone(), on)]);
    let mut r = record.locked();
    r.record_skills(found.records.clone());
    r.record_tools(enabled_names(registry));
    if let Some(name) = config.skills().commanded() {
        r.record_skill_activated(name);
        tool.loaded_by_command(name);
    }
    tool
}

/// Each skill the model loads: the record's `skills` and a `skill.activated` event.
fn observe_skills(
    tool: Arc<crate::tools::skill::Skill>,
    record: &Arc<Mutex<RunRecord>>,
    events: &Arc<events::Events>,
) {
    let (record, events) = (record.clone(), events.clone());
    tool.observe(Box::new(move |name| {
        let (turn, path) = record.locked().record_skill_activated(name);
        events.emit(RunEvent::SkillActivated(ev::SkillActivated {
            name: name.to_string(),
            path,
            turn,
        }));
    }));
}

/// What the run observes besides the loop: the network tier, background commands, the plan.
fn observe(
    config: &Config,
    ctx: &ToolContext,
    record: &Arc<Mutex<RunRecord>>,
    events: &Arc<events::Events>,
) {
    note_network(config, ctx, record, events);
    observe_background(ctx, record, events);
    observe_plan(ctx, record, events);
}

/// After the MCP servers started: the final answer's tool, the tools in the record, the
/// provider, and the run noted for `--continue`.
fn provider(
    config: &Config,
    registry: &mut Registry,
    record: &Mutex<RunRecord>,
    mcp_reports: Vec<mcp::ServerReport>,
) -> Result<Box<dyn Provider>, Error> {
    if let Some(schema) = config.session().output_schema() {
        // The final answer's tool, offered by every provider alike.
        registry.register(Arc::new(crate::run::structured::AnswerTool::new(
            schema.clone(),
        )));
    }
    {
        let mut r = record.locked();
        r.record_tools(enabled_names(registry));
        r.record_mcp_servers(mcp_reports);
    }
    let session_id = record.locked().session_id().to_string();
    let (provider, name) = make_provider(config, registry, &session_id)?;
    record.locked().record_provider(&name);
    // Before the workspace scan: the index is not a change the run made.
    if let Some(out) = config.output().output_file()
        && let Err(e) = crate::record::resume::note_in_index(config.workspace(), out, &session_id)
    {
        output::warn(&format!(
            "cannot note the run in {} for --continue: {e}",
            crate::record::resume::INDEX_PATH
        ));
    }
    Ok(provider)
}

/// The agent loop over the run's parts, Task's sub-agents lent to it.
fn run_loop(
    config: Arc<Config>,
    (registry, skills): (&Registry, Arc<crate::tools::skill::Skill>),
    mut ctx: ToolContext,
    record: &Arc<Mutex<RunRecord>>,
    finisher: &Arc<Finisher>,
    ci: &mut ci::CiRun,
    provider: &mut dyn Provider,
) -> crate::record::outcome::Outcome {
    let mut gate = PolicyGate::new(
        config.tools().settings().clone(),
        &ctx,
        config.tools().on_deny(),
    );
    if config.skills().narrow_tools() {
        gate = gate.narrowed_by_skills(skills);
    }
    if let (crate::config::cli::PermissionPrompt::Stdin, by_default) =
        config.tools().permission_prompt()
    {
        let asker = crate::run::ask::StdinAsker::start(finisher.events.clone());
        gate = gate.with_asker(asker, by_default);
    }
    let gate = Arc::new(gate);
    let session_id = record.locked().session_id().to_string();
    let runner = subagent_runner(
        &config,
        registry,
        &ctx,
        &gate,
        record,
        finisher,
        &session_id,
    );
    // A sub-agent's refused reservation stops the run too.
    ci.pool = Some(runner.pool.clone());
    ctx.subagents = Some(Arc::new(runner));
    let checkpoint = || finisher.checkpoint();
    Agent::new(RunHandle {
        config: &config,
        registry,
        ctx: &ctx,
        gate: gate.as_ref(),
        record,
        checkpoint: &checkpoint,
        ci: &*ci,
        cancelled: &finisher.cancelled,
        in_flight: &finisher.in_flight,
    })
    .run(provider)
}

/// The network tier in the record and the log; with `--allow-domain`, each refusal goes
/// to the record, the log and `--jsonl` (`network.denied`) as it happens.
fn note_network(
    config: &Config,
    ctx: &ToolContext,
    record: &Arc<Mutex<RunRecord>>,
    events: &Arc<events::Events>,
) {
    let egress = ctx.sandbox.as_ref().and_then(|s| s.egress());
    let tier = match egress {
        Some(e) => {
            let list = |r: &[crate::net::policy::Rule]| {
                r.iter().map(ToString::to_string).collect::<Vec<_>>()
            };
            output::info(&e.summary());
            Network::Namespace {
                allow: list(e.spec().policy.allowed()),
                deny: list(e.spec().policy.denied()),
                dns: "none".into(),
            }
        }
        None if config.tools().sandbox().no_network => Network::Landlock {
            tcp: "denied".into(),
        },
        None => Network::Host,
    };
    record.locked().record_network(tier);
    if egress.is_some() {
        let (record, events) = (record.clone(), events.clone());
        crate::net::proxy::on_denial(move |d| {
            events.emit(RunEvent::NetworkDenied(d.clone()));
            record.locked().record_network_denial(d.clone());
        });
    }
}

/// Each background command's start and end: a `--jsonl` event, a log line, and the
/// record's `background` list (newest table wins: ends may be told out of order).
fn observe_background(
    ctx: &ToolContext,
    record: &Arc<Mutex<RunRecord>>,
    events: &Arc<events::Events>,
) {
    let (record, events) = (record.clone(), events.clone());
    ctx.background.observe(Box::new(move |n| {
        use crate::tools::background::Change;
        let j = &n.job;
        match n.change {
            Change::Started => {
                events.emit(RunEvent::BackgroundStarted(ev::BackgroundStarted {
                    id: j.id.clone(),
                    command: j.command.clone(),
                    pid: j.pid,
                    started_ms: j.started_ms,
                }));
            }
            Change::Finished => {
                events.emit(RunEvent::BackgroundFinished(ev::BackgroundFinished {
                    id: j.id.clone(),
                    pid: j.pid,
                    status: j.status(),
                    exit_code: j.exit_code,
                    signal: j.signal,
                    ended_ms: j.ended_ms,
                    killed: j.killed,
                    killed_at_end: j.killed_at_end,
                }));
            }
        }
        record
            .locked()
            .record_background(n.generation, n.all.clone());
    }));
}

/// Each change of the plan (TodoWrite): the record's `plan`/`plan_history`, a
/// `plan.updated` event, and the plan in the log, one line per item.
fn observe_plan(ctx: &ToolContext, record: &Arc<Mutex<RunRecord>>, events: &Arc<events::Events>) {
    let (record, events) = (record.clone(), events.clone());
    ctx.plan.observe(Box::new(move |todos| {
        let turn = record.locked().record_plan(todos.to_vec());
        events.emit(RunEvent::PlanUpdated(ev::PlanUpdated {
            turn,
            todos: todos.to_vec(),
        }));
    }));
}

/// Task's runner: the run's tools, context, gate, record and events, and a provider of
/// its own per sub-agent (none under `--replay` or `--record`: a cassette holds one
/// conversation).
fn subagent_runner(
    config: &Arc<Config>,
    registry: &Registry,
    ctx: &ToolContext,
    gate: &Arc<PolicyGate>,
    record: &Arc<Mutex<RunRecord>>,
    finisher: &Arc<Finisher>,
    session_id: &str,
) -> SubagentRunner {
    let c = config.clone();
    // Their prompts differ from the parent's: a cache key of their own.
    let cache_key = format!("{session_id}-subagent");
    let provider: ProviderFactory = Box::new(move || {
        if c.provider().replay().is_some() || c.provider().record().is_some() {
            return Err(
                "sub-agents are not available with --replay or --record (a cassette \
                        holds one conversation): do the job yourself"
                    .to_string(),
            );
        }
        http_provider(&c, &cache_key)
    });
    let f = finisher.clone();
    SubagentRunner {
        config: config.clone(),
        tools: registry.enabled(),
        ctx: ctx.clone(),
        gate: gate.clone(),
        record: record.clone(),
        events: finisher.events.clone(),
        cancelled: finisher.cancelled.clone(),
        in_flight: finisher.in_flight.clone(),
        checkpoint: Arc::new(move || f.checkpoint()),
        provider,
        max_turns: config.session().subagent_max_turns(),
        next: AtomicU32::new(0),
        claimed: Mutex::new(Vec::new()),
        pool: Arc::default(),
    }
}

/// A usage error found while setting up (exit 2): the run span says so and is flushed.
fn set_up_failed(
    trace: &crate::run::telemetry::RunTrace,
    record: &Mutex<RunRecord>,
    e: &Error,
) -> ExitStatus {
    let outcome = crate::record::outcome::Outcome::fail(
        crate::record::outcome::ErrorKind::Internal,
        e.to_string(),
    );
    trace.finish(&record.locked(), &outcome);
    crate::otel::shutdown();
    output::usage_failure(e)
}

/// A signal or the deadline is finishing the run, and exits the process.
fn park_for_the_way_out() -> ! {
    loop {
        std::thread::park();
    }
}

/// The enabled tools' names, for the record.
fn enabled_names(registry: &Registry) -> Vec<String> {
    registry
        .enabled_names()
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The one way out of the run (`finish.rs`), ready before anything is started.
fn make_finisher(
    config: &Config,
    record: &Arc<Mutex<RunRecord>>,
    ctx: &ToolContext,
    observer: Option<Box<dyn Sink>>,
    trace: Arc<crate::run::telemetry::RunTrace>,
) -> Arc<Finisher> {
    let start = record.locked().started();
    let mut sinks: Vec<Box<dyn Sink>> = vec![Box::new(events::Log)];
    if config.output().jsonl() {
        sinks.push(Box::new(events::Jsonl::stdout()));
    }
    sinks.extend(observer);
    let events = Arc::new(events::Events::new(start, sinks));
    Arc::new(Finisher {
        record: record.clone(),
        json: config.output().json(),
        output_file: config.output().output_file().map(PathBuf::from),
        trajectory_file: config.output().trajectory_file().map(PathBuf::from),
        done: Mutex::new(false),
        checkpoints: Mutex::default(),
        events,
        baseline: OnceLock::new(),
        cancelled: Arc::new(AtomicBool::new(false)),
        in_flight: Arc::new(InFlight::default()),
        ctx: ctx.clone(),
        code: OnceLock::new(),
        keep_spill: config.output().keep_spill() || config.output().output_file().is_some(),
        github_actions: std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true"),
        trace,
    })
}

/// The run's own files (`-o`, its journal, `--record`, the spill dir), which are not
/// changes the run made to the workspace.
fn own_files(config: &Config, ctx: &ToolContext) -> Vec<PathBuf> {
    let journal = config
        .output()
        .output_file()
        .map(crate::record::journal::path_for);
    [
        config.output().output_file(),
        config.output().trajectory_file(),
        config.provider().record(),
        journal.as_deref(),
    ]
    .into_iter()
    .flatten()
    .map(absolute)
    .chain([ctx.spill_dir.clone()])
    .collect()
}

/// Starts the configured MCP servers (in parallel) and registers their tools; the
/// record lists each server as starting until its start-up ends. `Err` (exit 2) only
/// with `--strict-mcp`.
fn start_mcp(
    config: &Config,
    child_env: &Arc<Vec<(String, String)>>,
    registry: &mut Registry,
    record: &Arc<Mutex<RunRecord>>,
    finisher: &Finisher,
) -> Result<Vec<mcp::ServerReport>, Error> {
    let specs = &config.tools().mcp().servers;
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    record
        .locked()
        .record_mcp_servers(specs.iter().map(mcp::ServerReport::starting).collect());
    let opts = mcp::Options {
        call_timeout: config.tools().mcp().call_timeout,
        startup_timeout: config.tools().mcp().startup_timeout,
        strict: config.tools().mcp().strict,
        workspace: config.workspace().to_path_buf(),
        child_env: child_env.clone(),
        token_cache: config.tools().mcp().token_cache.clone(),
        elicitation: config.tools().mcp().elicitation,
    };
    let ended = |report| {
        let mut r = record.locked();
        // Once a way out is under way, a start-up that ends is ended by it: the
        // transcript says the server was still starting.
        if !finisher.cancelled.load(Ordering::SeqCst) {
            r.record_mcp_server(report);
        }
    };
    let started = mcp::start(specs, &opts, &ended).map_err(Error::McpStartup)?;
    mcp::tool::register(
        registry,
        &started,
        config.tools().selection(),
        config.tools().mcp().allow_all,
    );
    // A server that says its tool list changed is listed again before the next request.
    let (rec, events) = (record.clone(), finisher.events.clone());
    registry.add_source(Arc::new(mcp::refresh::Refresher::new(
        &started,
        config.tools().selection().clone(),
        config.tools().mcp().allow_all,
        Box::new(move |server, change, tools| {
            rec.locked()
                .record_mcp_tools_changed(server, change.clone(), tools.to_vec());
            events.emit(RunEvent::McpToolsChanged(ev::McpToolsChanged {
                name: server.to_string(),
                at_turn: change.at_turn,
                added: change.added.clone(),
                removed: change.removed.clone(),
                changed: change.changed.clone(),
                tools: tools.to_vec(),
            }));
        }),
    )));
    Ok(started.reports)
}

/// A resumed run records what it continues and says so on stderr.
fn note_resumed(record: &mut RunRecord, resumed: &crate::record::resume::Resumed) {
    record.record_resumed_from(resumed.resumed_from());
    let mut msg = format!(
        "resuming {} ({} messages, status {})",
        resumed.path.display(),
        resumed.messages.len(),
        resumed.status
    );
    if resumed.answered_calls > 0 {
        msg.push_str(&format!(
            "; {} call(s) it left unanswered get an \"interrupted\" error result and are not run again",
            resumed.answered_calls
        ));
    }
    output::info(&msg);
}

/// `path` made absolute with its directory resolved (as the canonical workspace is).
fn absolute(path: &std::path::Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match (
        abs.parent().and_then(|d| d.canonicalize().ok()),
        abs.file_name(),
    ) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => abs,
    }
}

/// Whether anything but the file tools may change the workspace during the run.
fn commands_may_write(config: &Config, registry: &Registry) -> bool {
    registry.may_change_files_unrecorded()
        || config.ci().verify().is_some()
        || !config.tools().settings().pre_tool_use.is_empty()
        || !config.tools().settings().post_tool_use.is_empty()
}

/// Where this run saves oversized results and full command output: beside the `-o`
/// transcript (`FILE.spill`), else a directory of its own in the temp dir.
fn spill_dir(config: &Config) -> PathBuf {
    if let Some(out) = config.output().output_file() {
        // Canonical parent (as `absolute` gives): ReadFile's exception for the spill
        // directory is checked on resolved paths.
        let mut name = absolute(out).into_os_string();
        name.push(".spill");
        return PathBuf::from(name);
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // Canonical from the start: ReadFile's exception for it is checked on resolved paths.
    let temp = std::env::temp_dir();
    let temp = temp.canonicalize().unwrap_or(temp);
    temp.join(format!("agent-run-{}-{nanos}", std::process::id()))
}

/// The provider of this run: cassette replay, or the Anthropic API or an
/// OpenAI-compatible server (optionally recorded).
fn make_provider(
    config: &Config,
    registry: &Registry,
    session_id: &str,
) -> Result<(Box<dyn Provider>, String), Error> {
    if let Some(path) = config.provider().replay() {
        let replay = ReplayProvider::open(path, config.workspace()).map_err(Error::Usage)?;
        let name = replay.provider().to_string();
        return Ok((Box::new(replay), name));
    }
    let recorder = match config.provider().record() {
        Some(path) => Some(cassette_recorder(config, registry, path, session_id)?),
        None => None,
    };
    let wire = live_wire(config)?;
    let name = config.provider().kind().as_str().to_string();
    let http = http_config(config, session_id);
    Ok((Box::new(HttpProvider::new(wire, http, recorder)), name))
}

/// The HTTP provider of the run's settings, recording nothing (a sub-agent's): its own
/// connection, and on a cloud its own credentials.
fn http_provider(config: &Config, session_id: &str) -> Result<Box<dyn Provider>, String> {
    let wire = live_wire(config).map_err(|e| e.to_string())?;
    Ok(Box::new(HttpProvider::new(
        wire,
        http_config(config, session_id),
        None,
    )))
}

/// The HTTP shell's settings from the run's.
fn http_config(config: &Config, session_id: &str) -> HttpConfig {
    let mut request = config.provider().request().clone();
    if config.session().context().context_1m {
        request
            .betas
            .push(crate::run::context::CONTEXT_1M_BETA.to_string());
    }
    HttpConfig {
        max_retries: config.provider().max_retries(),
        idle_timeout: config.provider().idle_timeout(),
        request,
        gateway: config.provider().gateway().clone(),
        fallback_model: config.provider().fallback_model().map(String::from),
        cache_key: session_id.to_string(),
        ..HttpConfig::new(
            config.provider().base_url().to_string(),
            config.provider().api_key().to_string(),
        )
    }
}

/// The wire of a live run: a cloud's connects its credentials first (their error names
/// the sources tried), the others are `provider::wire`'s.
fn live_wire(config: &Config) -> Result<Box<dyn crate::model::provider::http::Wire>, Error> {
    use crate::config::cli::ProviderKind;
    use crate::model::provider::bedrock::{BedrockWire, credentials};
    let kind = config.provider().kind();
    Ok(match kind {
        ProviderKind::Bedrock => Box::new(
            BedrockWire::connect(
                config.provider().region().unwrap_or_default(),
                credentials::process_env(),
            )
            .map_err(Error::Credentials)?,
        ),
        ProviderKind::Vertex => Box::new(
            crate::model::provider::vertex::VertexWire::connect(
                config.provider().project(),
                config.provider().region().unwrap_or_default(),
                crate::model::provider::vertex::adc::process_env(),
            )
            .map_err(Error::Credentials)?,
        ),
        _ => crate::model::provider::wire(kind),
    })
}

/// Appends each successful turn to the `--record` cassette, whose header names the
/// provider; a failing append is warned about once.
fn cassette_recorder(
    config: &Config,
    registry: &Registry,
    path: &std::path::Path,
    session_id: &str,
) -> Result<Recorder, Error> {
    let names: Vec<String> = registry
        .enabled_names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut writer = CassetteWriter::create(
        path,
        config.provider().kind().as_str(),
        config.provider().model(),
        config.workspace(),
        &names,
        session_id,
        // The model may echo a secret a tool printed: every known value is redacted
        // (the run's one list, `secrets`).
        output::secrets().to_vec(),
    )
    .map_err(|e| Error::Usage(format!("--record {}: {e}", path.display())))?;
    let shown = path.display().to_string();
    let mut failed = false;
    Ok(Box::new(move |request, sse| {
        if let Err(e) = writer.append(request, sse)
            && !failed
        {
            output::warn(&format!("cannot append to the cassette {shown}: {e}"));
            failed = true;
        }
    }))
}
