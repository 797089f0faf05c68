//! The GitHub Action (`ci/action.yml` and `ci/action/run.sh`): the YAML declares the
//! documented inputs and outputs, and the run script, driven locally against the mock
//! with GITHUB_OUTPUT and GITHUB_STEP_SUMMARY in temporary files, runs the agent, sets
//! the outputs and writes the Markdown summary without secrets or tool output.

use crate::support::*;
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn ci_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ci")
}

#[test]
fn action_yml_declares_the_documented_inputs_and_outputs() {
    let text = std::fs::read_to_string(ci_dir().join("action.yml")).unwrap();
    let y: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let keys = |v: &serde_yaml::Value| -> Vec<String> {
        let mut k: Vec<String> = v
            .as_mapping()
            .unwrap()
            .keys()
            .map(|k| k.as_str().unwrap().to_string())
            .collect();
        k.sort();
        k
    };
    // Issue 46: commands get only the allow list unless the workflow says otherwise.
    assert_eq!(y["inputs"]["command-env"]["default"], "allow");
    let script = std::fs::read_to_string(ci_dir().join("action/run.sh")).unwrap();
    assert!(
        script.contains(r#"--command-env "${AGENT_COMMAND_ENV:-allow}""#),
        "run.sh does not pass the command-env input"
    );
    assert_eq!(
        keys(&y["inputs"]),
        [
            "allow-domain",
            "allowed-bots",
            "api-key",
            "args",
            "assignee-trigger",
            "command-env",
            "deny-opaque",
            "github-token",
            "label-trigger",
            "mode",
            "prompt",
            "push",
            "trigger-phrase",
            "version",
            "workspace"
        ]
    );
    // Not required: `mode: github` answers the comment's own instruction.
    assert_eq!(
        y["inputs"]["prompt"]["required"],
        serde_yaml::Value::Bool(false)
    );
    assert_eq!(y["inputs"]["mode"]["default"], "auto");
    assert_eq!(
        y["inputs"]["github-token"]["default"],
        "${{ github.token }}"
    );
    assert_eq!(y["inputs"]["trigger-phrase"]["default"], "@agent");
    assert_eq!(y["inputs"]["push"]["default"], "true");
    // Fail closed on opaque commands unless told otherwise (docs/security.md).
    assert_eq!(y["inputs"]["deny-opaque"]["default"], "true");
    let outputs = [
        "branch",
        "comment-url",
        "exit-code",
        "pr-url",
        "result",
        "status",
        "transcript",
    ];
    assert_eq!(keys(&y["outputs"]), outputs);
    for out in outputs {
        let v = y["outputs"][out]["value"].as_str().unwrap();
        assert_eq!(v, format!("${{{{ steps.run.outputs.{out} }}}}"));
    }
    assert_eq!(y["runs"]["using"], "composite");
    let steps = y["runs"]["steps"].as_sequence().unwrap();
    let run = steps.iter().find(|s| s["id"] == "run").unwrap();
    assert!(run["run"].as_str().unwrap().contains("action/run.sh"));
    // The input reaches the script under its own name: the step's env must not set
    // ANTHROPIC_API_KEY, which would blank the job's variable when the input is empty.
    assert_eq!(run["env"]["AGENT_API_KEY"], "${{ inputs.api-key }}");
    assert!(run["env"].get("ANTHROPIC_API_KEY").is_none());
    // The token likewise: the script hands it to `agent github` alone.
    assert_eq!(
        run["env"]["AGENT_GITHUB_TOKEN"],
        "${{ inputs.github-token }}"
    );
    assert!(run["env"].get("GITHUB_TOKEN").is_none());
    for (var, input) in [
        ("AGENT_MODE", "mode"),
        ("AGENT_TRIGGER_PHRASE", "trigger-phrase"),
        ("AGENT_LABEL_TRIGGER", "label-trigger"),
        ("AGENT_ASSIGNEE_TRIGGER", "assignee-trigger"),
        ("AGENT_ALLOWED_BOTS", "allowed-bots"),
        ("AGENT_PUSH", "push"),
    ] {
        assert_eq!(
            run["env"][var],
            format!("${{{{ inputs.{input} }}}}"),
            "{var}"
        );
    }
    assert!(ci_dir().join("action/run.sh").is_file());
    // The example workflows parse too.
    for ex in [
        "fix-tests-on-pr.yml",
        "batch-matrix.yml",
        "gitlab-batch.yml",
        "k8s-indexed-job.yaml",
        "agent-on-mention.yml",
        "agent-review.yml",
    ] {
        let text = std::fs::read_to_string(ci_dir().join("examples").join(ex)).unwrap();
        let w: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        assert!(
            w["jobs"].is_mapping() || w["agent-batch"].is_mapping() || w["kind"] == "Job",
            "{ex}"
        );
    }
}

#[test]
fn the_github_conversation_examples_use_the_action_in_github_mode_with_least_permissions() {
    let load = |name: &str| -> serde_yaml::Value {
        let text = std::fs::read_to_string(ci_dir().join("examples").join(name)).unwrap();
        serde_yaml::from_str(&text).unwrap()
    };
    let step = |w: &serde_yaml::Value| -> serde_yaml::Value {
        let job = w["jobs"]
            .as_mapping()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .clone();
        let steps = job["steps"].as_sequence().unwrap().clone();
        // The checkout leaves no token in .git/config (the agent's Bash could read it).
        let checkout = steps
            .iter()
            .find(|s| s["uses"] == "actions/checkout@v4")
            .unwrap();
        assert_eq!(checkout["with"]["persist-credentials"], false);
        steps.into_iter().find(|s| s["id"] == "agent").unwrap()
    };
    let perms = |w: &serde_yaml::Value| -> Vec<(String, String)> {
        let mut p: Vec<(String, String)> = w["permissions"]
            .as_mapping()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.as_str().unwrap().into(), v.as_str().unwrap().into()))
            .collect();
        p.sort();
        p
    };
    let mention = load("agent-on-mention.yml");
    // serde_yaml reads the key `on` as the string "on" (YAML 1.2).
    for event in [
        "issue_comment",
        "pull_request_review_comment",
        "pull_request_review",
        "issues",
    ] {
        assert!(mention["on"][event].is_mapping(), "{event}");
    }
    let w = |k: &str, v: &str| (k.to_string(), v.to_string());
    assert_eq!(
        perms(&mention),
        [
            w("contents", "write"),
            w("issues", "write"),
            w("pull-requests", "write")
        ]
    );
    let s = step(&mention);
    assert_eq!(s["with"]["mode"], "github");
    assert!(
        s["with"]["args"]
            .as_str()
            .unwrap()
            .contains("--no-project-settings")
    );

    let review = load("agent-review.yml");
    assert!(
        review["on"]["pull_request_target"]["types"]
            .as_sequence()
            .unwrap()
            .iter()
            .any(|t| t == "labeled")
    );
    assert_eq!(
        perms(&review),
        [
            w("contents", "read"),
            w("issues", "write"),
            w("pull-requests", "write")
        ]
    );
    let s = step(&review);
    assert_eq!(s["with"]["mode"], "github");
    assert_eq!(s["with"]["push"], "false");
    let args = s["with"]["args"].as_str().unwrap();
    assert!(args.contains("--review"), "{args}");
    // pull_request_target runs with secrets on a fork's code: no tool that runs it.
    for forbidden in ["--allow-bash", "--full-auto", "--allow-write"] {
        assert!(!args.contains(forbidden), "{forbidden} in {args}");
    }
}

#[test]
fn run_script_in_auto_mode_hands_an_issue_event_to_agent_github() {
    let env = TestEnv::new(vec![]);
    let event = env.out("event.json");
    std::fs::write(
        &event,
        serde_json::json!({"action": "opened", "issue": {"number": 4, "title": "Slow build",
            "body": "no mention here", "user": {"login": "m"}},
            "sender": {"login": "m", "id": 1, "type": "User"}})
        .to_string(),
    )
    .unwrap();
    let outputs = env.out("github_output");
    let summary = env.out("step_summary");
    let mut c = env.command(&[]);
    c.env("AGENT_BIN", env!("CARGO_BIN_EXE_agent"))
        .env("AGENT_MODE", "auto")
        .env("AGENT_EVENT_ACTION", "opened")
        .env("AGENT_GITHUB_TOKEN", "ghs_script-token-0123456789")
        .env("GITHUB_EVENT_NAME", "issues")
        .env("GITHUB_EVENT_PATH", &event)
        .env("GITHUB_REPOSITORY", "octo/hello")
        .env("RUNNER_TEMP", env.out(""))
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_STEP_SUMMARY", &summary);
    let mut script = Command::new("bash");
    script.arg(ci_dir().join("action/run.sh")).env_clear();
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            script.env(k, v);
        }
    }
    script
        .current_dir(env.ws())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = env.spawn_command(script).wait();
    // Exit 0: `agent github` got the token (without one it stops with exit 2) and found
    // no mention; no prompt was needed.
    out.assert_code(0);
    assert!(
        out.stderr
            .contains("not triggered: the issue's title and body have no @agent"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("ghs_script-token"), "{}", out.stderr);
    let o = parse_outputs(&std::fs::read_to_string(&outputs).unwrap());
    assert_eq!(o["status"], "skipped");
    assert_eq!(o["exit-code"], "0");
    assert_eq!(env.server.request_count(), 0);

    // `mode: run` on the same event still needs the prompt.
    let mut script = Command::new("bash");
    script.arg(ci_dir().join("action/run.sh")).env_clear();
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            script.env(k, v);
        }
    }
    script
        .env("AGENT_MODE", "run")
        .current_dir(env.ws())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = env.spawn_command(script).wait();
    out.assert_code(2);
    assert!(
        out.stderr.contains("the 'prompt' input is empty"),
        "{}",
        out.stderr
    );
}

/// `name=value` and `name<<DELIM … DELIM` entries of a GITHUB_OUTPUT file.
fn parse_outputs(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delim)) = line.split_once("<<") {
            let mut value = Vec::new();
            for l in lines.by_ref() {
                if l == delim {
                    break;
                }
                value.push(l);
            }
            out.insert(name.to_string(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            out.insert(name.to_string(), value.to_string());
        }
    }
    out
}

fn run_script(
    env: &TestEnv,
    args: &str,
    prompt: &str,
) -> (RunOutput, String, HashMap<String, String>) {
    let outputs = env.out("github_output");
    let summary = env.out("step_summary");
    std::fs::write(&summary, "previous step\n").unwrap();
    let mut c = env.command(&[]);
    c.env("AGENT_BIN", crate::support::agent_bin())
        .env("AGENT_PROMPT", prompt)
        .env("AGENT_ARGS", args)
        .env("AGENT_WORKSPACE", ".")
        .env("RUNNER_TEMP", env.out(""))
        .env("GITHUB_OUTPUT", &outputs)
        .env("GITHUB_STEP_SUMMARY", &summary);
    let mut script = Command::new("bash");
    script.arg(ci_dir().join("action/run.sh"));
    // The clean environment TestEnv prepared for the agent, given to the script instead.
    script.env_clear();
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            script.env(k, v);
        }
    }
    script
        .current_dir(env.ws())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = env.spawn_command(script).wait();
    let summary = std::fs::read_to_string(&summary).unwrap();
    let outputs = parse_outputs(&std::fs::read_to_string(&outputs).unwrap_or_default());
    (out, summary, outputs)
}

#[test]
fn run_script_sets_outputs_and_writes_the_summary() {
    let env = TestEnv::new(vec![
        Reply::Sse(
            Turn::new()
                .text("Running the tests.")
                .tool(
                    "toolu_b",
                    "Bash",
                    json!({"command": "echo TOOL-OUTPUT-MARKER; sh check.sh"}),
                )
                .frames(),
        ),
        Reply::Sse(
            Turn::new()
                .tool(
                    "toolu_w",
                    "WriteFile",
                    json!({"path": "fixed.txt", "content": "ok\n"}),
                )
                .frames(),
        ),
        Reply::Sse(turn_text("Fixed it.\nThe check passes.")),
    ]);
    env.write(
        "check.sh",
        "grep -qx ok fixed.txt || { echo 'FAIL: VERIFY-TAIL'; exit 1; }\n",
    );
    let (out, summary, outputs) = run_script(
        &env,
        r#"--full-auto --verify "sh check.sh" --max-turns '10'"#,
        "Make check.sh pass",
    );
    out.assert_code(0).assert_no_secret();
    assert_eq!(outputs["status"], "success");
    assert_eq!(outputs["exit-code"], "0");
    assert_eq!(outputs["result"], "Fixed it.\nThe check passes.");
    let transcript = read_json(Path::new(&outputs["transcript"]));
    assert_eq!(transcript["status"], "success");
    assert_eq!(transcript["verifications"][0]["passed"], true);
    assert!(
        summary.starts_with("previous step\n"),
        "appended: {summary}"
    );
    for needle in [
        "### agent: ✅ success",
        "| Turns | 3 |",
        "Tokens",
        "| Cost | unknown",
        "#### Tool calls (2)",
        "<code>Bash</code> | <code>echo TOOL-OUTPUT-MARKER; sh check.sh</code> | ok |",
        "<code>WriteFile</code> | <code>fixed.txt</code> | ok |",
        "#### Files changed (1)",
        "- created <code>fixed.txt</code>",
        "#### Verification",
        "| 1 | <code>sh check.sh</code> | 0 | ✅ passed |",
        "Fixed it.",
    ] {
        assert!(summary.contains(needle), "missing {needle:?} in\n{summary}");
    }
    // The Bash command shows; its output does not.
    assert_eq!(
        summary.matches("TOOL-OUTPUT-MARKER").count(),
        1,
        "{summary}"
    );
    assert!(!summary.contains(API_KEY));
    env.server.assert_invariants();
}

#[test]
fn run_script_reports_a_failed_verification_and_its_exit_code() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("Done."))]);
    env.write("check.sh", "echo 'FAIL: VERIFY-TAIL'; exit 1\n");
    let (out, summary, outputs) = run_script(&env, "--verify 'sh check.sh' --max-verify 1", "fix");
    out.assert_code(4);
    assert_eq!(outputs["status"], "verify_failed");
    assert_eq!(outputs["exit-code"], "4");
    assert!(summary.contains("### agent: ⚠️ verify_failed"), "{summary}");
    assert!(summary.contains("❌ failed"), "{summary}");
    assert!(
        summary.contains("FAIL: VERIFY-TAIL"),
        "the short tail: {summary}"
    );
}

#[test]
fn run_script_without_a_transcript_still_sets_outputs() {
    let env = TestEnv::new(vec![]);
    let (out, summary, outputs) = run_script(&env, "--max-turns 0", "x");
    out.assert_code(2);
    assert_eq!(outputs["status"], "error");
    assert_eq!(outputs["exit-code"], "2");
    assert!(summary.contains("did not start (exit 2)"), "{summary}");
    assert_eq!(env.server.request_count(), 0);
}

/// Runs the action's `run` step as the Actions runner would: the job's environment
/// (`job_env`), overlaid with the step's `env:` from action.yml with each
/// `${{ inputs.NAME }}` replaced by the input given or its declared default.
fn run_step_as_actions_would(
    env: &TestEnv,
    inputs: &[(&str, &str)],
    job_env: &[(&str, &str)],
) -> RunOutput {
    let text = std::fs::read_to_string(ci_dir().join("action.yml")).unwrap();
    let y: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let input = |name: &str| -> String {
        inputs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
            .unwrap_or_else(|| {
                y["inputs"][name]["default"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
    };
    let step = y["runs"]["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "run")
        .unwrap();
    let mut c = Command::new("bash");
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.out(""))
        .env("NO_COLOR", "1")
        .env("ANTHROPIC_BASE_URL", env.server.url())
        .env("RUNNER_TEMP", env.out(""))
        .env("GITHUB_OUTPUT", env.out("github_output"))
        .env("GITHUB_STEP_SUMMARY", env.out("step_summary"))
        .env("GITHUB_ACTION_PATH", ci_dir());
    for (k, v) in job_env {
        c.env(k, v);
    }
    for (k, v) in step["env"].as_mapping().unwrap() {
        let mut v = v.as_str().unwrap().to_string();
        while let Some(start) = v.find("${{ inputs.") {
            let end = start + v[start..].find("}}").unwrap() + 2;
            let name = v[start + "${{ inputs.".len()..end - 2].trim().to_string();
            v.replace_range(start..end, &input(&name));
        }
        c.env(k.as_str().unwrap(), v);
    }
    // The action installs the binary first; the test has it built already.
    c.env("AGENT_BIN", crate::support::agent_bin());
    c.arg("-c")
        .arg(step["run"].as_str().unwrap())
        .current_dir(env.ws())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    env.spawn_command(c).wait()
}

/// With no `api-key` input, the key the job sets is used (an empty
/// input used to blank it and the step failed with exit 2).
#[test]
fn action_step_without_the_input_uses_the_jobs_key() {
    let env = TestEnv::new(vec![Reply::Sse(turn_text("Done."))]);
    let out = run_step_as_actions_would(
        &env,
        &[("prompt", "say done")],
        &[("ANTHROPIC_API_KEY", API_KEY)],
    );
    out.assert_code(0).assert_no_secret();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].header("x-api-key"), Some(API_KEY));
}

/// The `api-key` input, when given, is the key sent (and wins over a job variable).
#[test]
fn action_step_with_the_input_uses_it() {
    const INPUT_KEY: &str = "sk-ant-from-the-input-0123456789";
    for job_env in [&[][..], &[("ANTHROPIC_API_KEY", API_KEY)]] {
        let env = TestEnv::new(vec![Reply::Sse(turn_text("Done."))]);
        let out = run_step_as_actions_would(
            &env,
            &[("prompt", "say done"), ("api-key", INPUT_KEY)],
            job_env,
        );
        out.assert_code(0);
        assert!(!out.stdout.contains(INPUT_KEY) && !out.stderr.contains(INPUT_KEY));
        let reqs = env.server.requests();
        assert_eq!(reqs[0].header("x-api-key"), Some(INPUT_KEY), "{job_env:?}");
    }
}

fn example(name: &str) -> serde_yaml::Value {
    let text = std::fs::read_to_string(ci_dir().join("examples").join(name)).unwrap();
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// All the text of a YAML value's strings (scripts, args), for flag checks.
fn strings(v: &serde_yaml::Value) -> String {
    match v {
        serde_yaml::Value::String(s) => s.clone(),
        serde_yaml::Value::Sequence(items) => {
            items.iter().map(strings).collect::<Vec<_>>().join("\n")
        }
        serde_yaml::Value::Mapping(m) => m.values().map(strings).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

/// The batch examples for other engines: YAML that parses, shards from the
/// engine's variables, and the merge + report flow. Each job or pod installs the pinned
/// release with install.sh (seconds), never a `cargo install` build (minutes, per shard).
#[test]
fn batch_examples_for_each_engine() {
    for name in [
        "batch-matrix.yml",
        "gitlab-batch.yml",
        "k8s-indexed-job.yaml",
    ] {
        let all = strings(&example(name));
        assert!(!all.contains("cargo install"), "{name} builds agent");
        assert!(
            all.contains("/install.sh"),
            "{name} does not use install.sh"
        );
        let text = std::fs::read_to_string(ci_dir().join("examples").join(name)).unwrap();
        let v = env!("CARGO_PKG_VERSION");
        assert!(
            text.contains(&format!("AGENT_VERSION={v}"))
                || text.contains(&format!("AGENT_VERSION: \"{v}\"")),
            "{name} does not pin the version {v}"
        );
    }
    // GitHub Actions: the matrix gains a report job using merge and report.
    let gh = example("batch-matrix.yml");
    let report = strings(&gh["jobs"]["report"]["steps"]);
    assert!(
        report.contains("agent batch merge merged results-*"),
        "{report}"
    );
    assert!(
        report.contains("agent batch report merged >> \"$GITHUB_STEP_SUMMARY\""),
        "{report}"
    );
    assert_eq!(gh["jobs"]["report"]["needs"], "shard");

    // GitLab: `parallel: 4`, --shard auto, a directory per job, then merge + report.
    let gl = example("gitlab-batch.yml");
    let job = &gl["agent-batch"];
    assert_eq!(job["parallel"], 4);
    let script = strings(&job["script"]);
    assert!(script.contains("--shard auto"), "{script}");
    assert!(
        script.contains("--out \"results/shard-$CI_NODE_INDEX\""),
        "{script}"
    );
    let script = strings(&gl["agent-report"]["script"]);
    assert!(
        script.contains("agent batch merge merged results/shard-*"),
        "{script}"
    );
    assert!(script.contains("agent batch report merged"), "{script}");

    // Kubernetes: an Indexed Job whose shard count matches its completions, writing
    // to a volume.
    let k8s = example("k8s-indexed-job.yaml");
    assert_eq!(k8s["apiVersion"], "batch/v1");
    assert_eq!(k8s["kind"], "Job");
    let spec = &k8s["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let pod = &spec["template"]["spec"];
    let c = &pod["containers"][0];
    let args = strings(&c["args"]);
    assert!(args.contains("--shard auto"), "{args}");
    assert!(
        args.contains("--out \"/results/shard-$JOB_COMPLETION_INDEX\""),
        "{args}"
    );
    let shards = c["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "AGENT_SHARDS")
        .unwrap();
    assert_eq!(
        shards["value"].as_str().unwrap().parse::<u64>().unwrap(),
        spec["completions"].as_u64().unwrap()
    );
    let mounts = c["volumeMounts"].as_sequence().unwrap();
    let results = mounts
        .iter()
        .find(|m| m["mountPath"] == "/results")
        .unwrap();
    let volume = pod["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|v| v["name"] == results["name"])
        .unwrap();
    assert!(
        volume["persistentVolumeClaim"].is_mapping(),
        "results outlive the pods"
    );
}

/// The pull-request example runs unreviewed code: project settings are ignored, the
/// write token is not left in .git/config for the agent's Bash, forks are excluded, and
/// only the push step (after the agent) holds the token.
#[test]
fn the_pull_request_example_is_hardened() {
    let w = example("fix-tests-on-pr.yml");
    let job = &w["jobs"]["fix"];
    let cond = job["if"].as_str().unwrap();
    assert!(
        cond.contains("github.event.pull_request.head.repo.full_name == github.repository"),
        "{cond}"
    );
    let steps = job["steps"].as_sequence().unwrap();
    let checkout = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/checkout"))
        })
        .unwrap();
    assert_eq!(checkout["with"]["persist-credentials"], false);
    let agent = steps.iter().find(|s| s["id"] == "agent").unwrap();
    let args = agent["with"]["args"].as_str().unwrap();
    assert!(args.contains("--no-project-settings"), "{args}");
    let agent_text = strings(agent);
    assert!(
        !agent_text.contains("github.token") && !agent_text.contains("GITHUB_TOKEN"),
        "{agent_text}"
    );
    let push = steps.iter().find(|s| s["name"] == "Push the fix").unwrap();
    assert_eq!(push["env"]["PUSH_TOKEN"], "${{ github.token }}");
    assert!(strings(&push["run"]).contains("x-access-token:${PUSH_TOKEN}@"));
    // The step order: the token's step comes after the agent's.
    let pos = |name: &serde_yaml::Value| steps.iter().position(|s| s == name).unwrap();
    assert!(pos(push) > pos(agent));
    // And the args parse as `agent run` flags (the Action splits them like a shell).
    let words: Vec<String> = shell_words(args);
    let mut argv = vec!["run".to_string()];
    argv.extend(words);
    argv.extend(["--max-tokens".into(), "0".into(), "x".into()]);
    let env = TestEnv::new(vec![]);
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = env.run(&refs);
    out.assert_code(2);
    assert!(
        out.stderr.contains("--max-tokens must be at least 1"),
        "only the forced error: {}",
        out.stderr
    );
}

/// Splits like the Action's run.sh (xargs): blanks separate, quotes group.
fn shell_words(s: &str) -> Vec<String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg("printf '%s' \"$1\" | xargs printf '%s\\n'")
        .arg("sh")
        .arg(s)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// `allow-domain` becomes `--allow-domain` (newlines as commas), and on GitHub-hosted
/// Linux a step before the run lifts the user-namespace restriction.
#[test]
fn action_allow_domain_input_confines_the_commands() {
    let text = std::fs::read_to_string(ci_dir().join("action.yml")).unwrap();
    let y: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let steps = y["runs"]["steps"].as_sequence().unwrap();
    let at = |f: &dyn Fn(&serde_yaml::Value) -> bool| steps.iter().position(f).unwrap();
    let lift = at(&|s| s["run"].as_str().is_some_and(|r| r.contains("sysctl")));
    let run = at(&|s| s["id"] == "run");
    assert!(lift < run, "the sysctl step must come before the run");
    let script = steps[lift]["run"].as_str().unwrap();
    assert!(script.contains("sudo sysctl -w kernel.unprivileged_userns_clone=1"));
    assert!(script.contains("sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"));
    let cond = steps[lift]["if"].as_str().unwrap();
    for part in [
        "inputs.allow-domain != ''",
        "runner.os == 'Linux'",
        "github-hosted",
    ] {
        assert!(cond.contains(part), "{cond}");
    }
    if !std::process::Command::new("unshare")
        .args(["-Urn", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("SKIPPED (run half): no user namespaces here");
        return;
    }
    let env = TestEnv::new(vec![Reply::Sse(turn_text("Done."))]);
    let out = run_step_as_actions_would(
        &env,
        &[
            ("prompt", "say done"),
            ("args", "--allow-bash"),
            ("allow-domain", "pypi.org\n*.github.com"),
        ],
        &[("ANTHROPIC_API_KEY", API_KEY)],
    );
    out.assert_code(0);
    let outputs = std::fs::read_to_string(env.out("github_output")).unwrap();
    let path = outputs
        .lines()
        .find_map(|l| l.strip_prefix("transcript="))
        .unwrap();
    let t = read_json(std::path::Path::new(path));
    assert_eq!(t["network"]["tier"], "namespace");
    assert_eq!(
        t["network"]["allow"],
        serde_json::json!(["pypi.org", "*.github.com"])
    );
}
