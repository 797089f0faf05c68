//! Unit tests of `mod.rs`.

use super::*;
use crate::config::cli::{OnDeny, ProviderKind, SandboxMode};
use crate::process::sandbox;
use clap::Parser;

struct FakeEnv(Vec<(&'static str, &'static str)>);
impl Env for FakeEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

fn parse(args: &[&str]) -> RunArgs {
    let mut v = vec!["agent", "run"];
    v.extend_from_slice(args);
    match crate::config::cli::Cli::try_parse_from(v).unwrap().command {
        crate::config::cli::Command::Run(r) => *r,
        _ => unreachable!(),
    }
}

#[test]
fn thinking_flags_add_the_interleaved_beta_only_where_it_applies() {
    let env = FakeEnv(vec![("ANTHROPIC_API_KEY", "k")]);
    let betas = |args: &[&str]| {
        Config::from_args(&parse(args), &env)
            .unwrap()
            .provider()
            .request()
            .betas
            .clone()
    };
    let interleaved = crate::model::provider::anthropic::INTERLEAVED_THINKING_BETA.to_string();
    assert_eq!(
        betas(&["hi", "--effort", "low"]),
        std::slice::from_ref(&interleaved)
    );
    assert_eq!(
        betas(&["hi", "--thinking-budget", "2048", "--betas", "x-1"]),
        ["x-1".to_string(), interleaved]
    );
    assert!(betas(&["hi"]).is_empty());
    assert!(betas(&["hi", "--effort", "high", "-m", "claude-3-7-sonnet-latest"]).is_empty());
    let openai = FakeEnv(vec![("AGENT_PROVIDER", "openai"), ("AGENT_MODEL", "qwen")]);
    let c = Config::from_args(&parse(&["hi", "--effort", "medium"]), &openai).unwrap();
    assert!(c.provider().request().betas.is_empty());
    assert_eq!(
        c.provider().request().effort,
        Some(crate::config::cli::Effort::Medium)
    );
}

/// A plain bad number is named before what the environment or the files lack.
#[test]
fn flag_checks_come_before_the_key_and_the_files() {
    for (args, needle) in [
        (vec!["hi", "--max-turns", "0"], "--max-turns"),
        (vec!["hi", "--max-tokens", "0"], "--max-tokens"),
        (vec!["hi", "--bash-timeout", "0s"], "--bash-timeout"),
        (vec!["hi", "--timeout", "0s"], "--timeout"),
        (vec!["hi", "--idle-timeout", "0s"], "--idle-timeout"),
    ] {
        let mut args = args;
        args.extend(["--settings", "/no/such/settings.json"]);
        let e = Config::from_args(&parse(&args), &FakeEnv(vec![])).unwrap_err();
        assert!(e.to_string().contains(needle), "{args:?}: {e}");
    }
}

#[test]
fn missing_key_names_the_variable() {
    let e = Config::from_args(&parse(&["hi"]), &FakeEnv(vec![])).unwrap_err();
    assert!(e.to_string().contains("ANTHROPIC_API_KEY"), "{e}");
    assert_eq!(e.exit_code(), 2);
}

#[test]
fn fallback_model_must_name_another_model() {
    let env = FakeEnv(vec![("ANTHROPIC_API_KEY", "k"), ("AGENT_MODEL", "m-env")]);
    let c = Config::from_args(&parse(&["hi", "--fallback-model", " other "]), &env).unwrap();
    assert_eq!(c.provider().fallback_model(), Some("other"));
    let c = Config::from_args(&parse(&["hi"]), &env).unwrap();
    assert_eq!(c.provider().fallback_model(), None);
    for (args, says) in [
        (vec!["hi", "--fallback-model", " "], "is empty"),
        (
            vec!["hi", "--fallback-model", "m-env"],
            "the run's model too",
        ),
        (
            vec!["hi", "-m", "a", "--fallback-model", "a"],
            "the run's model too",
        ),
    ] {
        let e = Config::from_args(&parse(&args), &env).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{args:?}");
        let e = e.to_string();
        assert!(e.contains("--fallback-model") && e.contains(says), "{e}");
    }
    // A cost limit must be computable on the fallback too.
    let e = Config::from_args(
        &parse(&[
            "hi",
            "-m",
            "claude-sonnet-4-5",
            "--fallback-model",
            "no-such-price",
            "--max-cost-usd",
            "1",
        ]),
        &env,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--fallback-model") && e.contains("price"), "{e}");
}

#[test]
fn env_and_flags() {
    let env = FakeEnv(vec![
        ("ANTHROPIC_API_KEY", "k"),
        ("AGENT_MODEL", "m-env"),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
    ]);
    let c = Config::from_args(&parse(&["hi", "--full-auto"]), &env).unwrap();
    assert_eq!(c.provider().model(), "m-env");
    assert_eq!(c.provider().base_url(), "http://127.0.0.1:9");
    assert!(c.tools().selection().allow_bash && c.tools().selection().allow_write);
    let c = Config::from_args(
        &parse(&["hi", "-m", "m-flag", "--base-url", "https://x"]),
        &env,
    )
    .unwrap();
    assert_eq!(c.provider().model(), "m-flag");
    assert_eq!(c.provider().base_url(), "https://x");
}

#[test]
fn rejects_bad_values() {
    let env = FakeEnv(vec![("ANTHROPIC_API_KEY", "k")]);
    for (args, needle) in [
        (vec!["hi", "--max-turns", "0"], "--max-turns"),
        (vec!["hi", "--allowed-tools", "Nope"], "--allowed-tools"),
        (vec!["hi", "--disallowed-tools", "X"], "--disallowed-tools"),
        (vec!["  "], "empty"),
        (vec!["hi", "-C", "/definitely/not/here"], "--cwd"),
        (vec!["hi", "--base-url", "ftp://x"], "--base-url"),
        (vec!["hi", "--verify", " "], "--verify"),
        (
            vec!["hi", "--verify", "true", "--max-verify", "0"],
            "--max-verify",
        ),
        (vec!["hi", "--max-tool-calls", "0"], "--max-tool-calls"),
        (vec!["hi", "--max-cost-usd=-1"], "--max-cost-usd"),
        (vec!["hi", "--max-cost-usd", "NaN"], "--max-cost-usd"),
        (
            vec!["hi", "-m", "my-model", "--max-cost-usd", "1"],
            "\"prices\"",
        ),
        (
            vec!["hi", "--settings", "/no/such/settings.json"],
            "settings.json",
        ),
    ] {
        let e = Config::from_args(&parse(&args), &env).unwrap_err();
        assert!(e.to_string().contains(needle), "{args:?}: {e}");
    }
}

#[test]
fn sandbox_flags_are_validated_against_the_kernel() {
    let no_ll = FakeEnv(vec![
        ("ANTHROPIC_API_KEY", "k"),
        (sandbox::TEST_ABI_ENV, "0"),
    ]);
    let new_ll = FakeEnv(vec![
        ("ANTHROPIC_API_KEY", "k"),
        (sandbox::TEST_ABI_ENV, "7"),
    ]);
    for (args, needle) in [
        (vec!["hi", "--writable", "/tmp"], "--writable only applies"),
        (
            vec![
                "hi",
                "--sandbox",
                "workspace-write",
                "--writable",
                "/no/such/dir",
            ],
            "--writable /no/such/dir",
        ),
        (vec!["hi", "--sandbox", "read-only"], "no Landlock support"),
        (vec!["hi", "--no-network"], "--no-network needs"),
    ] {
        let env = if needle.contains("Landlock") || needle.contains("network") {
            &no_ll
        } else {
            &new_ll
        };
        let e = Config::from_args(&parse(&args), env).unwrap_err();
        assert!(e.to_string().contains(needle), "{args:?}: {e}");
        assert_eq!(e.exit_code(), 2);
    }
    let c = Config::from_args(
        &parse(&[
            "hi",
            "--sandbox",
            "workspace-write",
            "--writable",
            "/tmp",
            "--no-network",
        ]),
        &new_ll,
    )
    .unwrap();
    assert_eq!(c.tools().sandbox().mode, SandboxMode::WorkspaceWrite);
    assert!(c.tools().sandbox().no_network);
    assert_eq!(
        c.tools().sandbox().writable,
        vec![PathBuf::from("/tmp").canonicalize().unwrap()]
    );
    // --add-dir directories are writable for Bash under workspace-write only, and
    // the system prompt names them.
    let extra = tempfile::tempdir().unwrap();
    let extra_s = extra.path().to_str().unwrap();
    let canon = extra.path().canonicalize().unwrap();
    let c = Config::from_args(
        &parse(&["hi", "--sandbox", "workspace-write", "--add-dir", extra_s]),
        &new_ll,
    )
    .unwrap();
    assert_eq!(c.tools().sandbox().writable, vec![canon.clone()]);
    assert_eq!(c.tools().add_dirs(), vec![canon.clone()]);
    assert!(
        c.session()
            .system_prompt()
            .contains(&format!("by absolute path: {}.", canon.display())),
        "{}",
        c.session().system_prompt()
    );
    let c = Config::from_args(
        &parse(&["hi", "--sandbox", "read-only", "--add-dir", extra_s]),
        &new_ll,
    )
    .unwrap();
    assert!(c.tools().sandbox().writable.is_empty());
    let e = Config::from_args(&parse(&["hi", "--add-dir", "/no/such/dir"]), &new_ll).unwrap_err();
    assert!(e.to_string().contains("--add-dir /no/such/dir"), "{e}");
    assert_eq!(e.exit_code(), 2);
    // Off needs nothing from the kernel.
    assert!(Config::from_args(&parse(&["hi"]), &no_ll).is_ok());
    let c = Config::from_args(
        &parse(&["hi", "--on-deny", "fail", "--keep-env", "GH_TOKEN"]),
        &no_ll,
    )
    .unwrap();
    assert_eq!(c.tools().on_deny(), OnDeny::Fail);
    assert_eq!(c.tools().command_env().keep, vec!["GH_TOKEN".to_string()]);
    // --command-env: settings give the mode and names, the flags override and add.
    use crate::util::secrets::EnvMode;
    let inline = r#"{"commandEnv": {"mode": "allow", "pass": ["NODE_*"]}}"#;
    let c = Config::from_args(&parse(&["hi", "--settings", inline]), &no_ll).unwrap();
    assert_eq!(c.tools().command_env().mode, EnvMode::Allow);
    assert_eq!(c.tools().command_env().pass, vec!["NODE_*".to_string()]);
    let c = Config::from_args(
        &parse(&[
            "hi",
            "--settings",
            inline,
            "--command-env",
            "scrub",
            "--command-env-pass",
            "JAVA_HOME,GOPATH",
        ]),
        &no_ll,
    )
    .unwrap();
    assert_eq!(c.tools().command_env().mode, EnvMode::Scrub);
    assert_eq!(
        c.tools().command_env().pass,
        ["NODE_*", "JAVA_HOME", "GOPATH"]
    );
    assert_eq!(
        Config::from_args(&parse(&["hi"]), &no_ll)
            .unwrap()
            .tools()
            .command_env()
            .mode,
        EnvMode::Scrub
    );
    let e = Config::from_args(&parse(&["hi", "--command-env-pass", "A=B"]), &no_ll).unwrap_err();
    assert!(e.to_string().contains("--command-env-pass"), "{e}");
    assert_eq!(e.exit_code(), 2);
    let bad = r#"{"commandEnv": {"mode": "none"}}"#;
    let e = Config::from_args(&parse(&["hi", "--settings", bad]), &no_ll).unwrap_err();
    assert!(e.to_string().contains("commandEnv.mode"), "{e}");
}

#[test]
fn openai_provider_key_base_url_and_model() {
    let env = FakeEnv(vec![("AGENT_PROVIDER", "OpenAI"), ("AGENT_MODEL", "qwen")]);
    let c = Config::from_args(&parse(&["hi"]), &env).unwrap();
    assert_eq!(c.provider().kind(), ProviderKind::Openai);
    assert_eq!(
        c.provider().api_key(),
        "",
        "the key is optional for local servers"
    );
    assert_eq!(c.provider().base_url(), "https://api.openai.com/v1");
    assert_eq!(c.provider().model(), "qwen");
    let env = FakeEnv(vec![
        ("OPENAI_API_KEY", "sk-o"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/"),
        ("ANTHROPIC_BASE_URL", "http://wrong"),
        ("ANTHROPIC_API_KEY", "sk-a"),
    ]);
    let c = Config::from_args(&parse(&["hi", "--provider", "openai", "-m", "x"]), &env).unwrap();
    assert_eq!(
        (c.provider().api_key(), c.provider().base_url()),
        ("sk-o", "http://127.0.0.1:8000/v1")
    );
    // The flag beats the environment, and anthropic stays the default.
    let env = FakeEnv(vec![
        ("AGENT_PROVIDER", "openai"),
        ("ANTHROPIC_API_KEY", "k"),
    ]);
    let c = Config::from_args(&parse(&["hi", "--provider", "anthropic"]), &env).unwrap();
    assert_eq!(c.provider().kind(), ProviderKind::Anthropic);
    let c = Config::from_args(&parse(&["hi"]), &FakeEnv(vec![("ANTHROPIC_API_KEY", "k")]));
    assert_eq!(c.unwrap().provider().kind(), ProviderKind::Anthropic);
}

#[test]
fn openai_responses_provider_reads_the_openai_variables_and_needs_a_model() {
    let env = FakeEnv(vec![
        ("AGENT_PROVIDER", "openai-responses"),
        ("OPENAI_API_KEY", "sk-o"),
        ("OPENAI_BASE_URL", "https://r.openai.azure.com/openai/v1/"),
        ("ANTHROPIC_BASE_URL", "http://wrong"),
    ]);
    let c = Config::from_args(&parse(&["hi", "-m", "dep"]), &env).unwrap();
    assert_eq!(c.provider().kind(), ProviderKind::OpenaiResponses);
    assert_eq!(c.provider().api_key(), "sk-o");
    assert_eq!(
        c.provider().base_url(),
        "https://r.openai.azure.com/openai/v1"
    );
    let e = Config::from_args(&parse(&["hi"]), &env)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--provider openai-responses needs a model"),
        "{e}"
    );
    let e = Config::from_args(
        &parse(&["hi", "-m", "m", "--thinking-budget", "2048"]),
        &env,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("reasoning.effort"), "{e}");
    let bad = FakeEnv(vec![("AGENT_PROVIDER", "responses")]);
    let e = Config::from_args(&parse(&["hi"]), &bad)
        .unwrap_err()
        .to_string();
    assert!(e.contains("openai-responses"), "{e}");
}

#[test]
fn openai_usage_errors_name_what_to_fix() {
    let no_model = Config::from_args(&parse(&["hi", "--provider", "openai"]), &FakeEnv(vec![]));
    let e = no_model.unwrap_err();
    assert!(
        e.to_string().contains("--model") && e.to_string().contains("AGENT_MODEL"),
        "{e}"
    );
    assert_eq!(e.exit_code(), 2);
    let env = FakeEnv(vec![("AGENT_PROVIDER", "gemini")]);
    let e = Config::from_args(&parse(&["hi"]), &env).unwrap_err();
    assert!(e.to_string().contains("AGENT_PROVIDER"), "{e}");
    let env = FakeEnv(vec![("OPENAI_BASE_URL", "localhost:11434")]);
    let e =
        Config::from_args(&parse(&["hi", "--provider", "openai", "-m", "m"]), &env).unwrap_err();
    assert!(e.to_string().contains("OPENAI_BASE_URL"), "{e}");
    // Replay needs neither key nor model.
    let c = Config::from_args(
        &parse(&["hi", "--provider", "openai", "--replay", "x.jsonl"]),
        &FakeEnv(vec![]),
    );
    assert!(c.is_ok());
}

#[test]
fn edit_tool_defaults_by_model_family_and_the_flag_overrides() {
    use crate::tools::registry::Registry;
    let env = FakeEnv(vec![("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "k")]);
    let offered = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["hi", "--allow-write"];
        all.extend(args);
        let c = Config::from_args(&parse(&all), &env).unwrap();
        let r = Registry::builtin(c.tools().selection());
        let names = r.enabled_names();
        ["apply_patch", "EditFile", "WriteFile"]
            .iter()
            .filter(|n| names.iter().any(|m| m == *n))
            .map(|n| n.to_string())
            .collect()
    };
    let patch = vec!["apply_patch".to_string()];
    let replace = vec!["EditFile".to_string(), "WriteFile".to_string()];
    for model in [
        "gpt-5-codex",
        "o4-mini",
        "o3",
        "openai/gpt-4.1",
        "codex-mini-latest",
    ] {
        for provider in ["openai", "openai-responses"] {
            assert_eq!(
                offered(&["--provider", provider, "-m", model]),
                patch,
                "{provider} {model}"
            );
        }
    }
    for model in ["qwen2.5-coder:7b", "llama3.1", "my-deployment", "omni"] {
        assert_eq!(
            offered(&["--provider", "openai", "-m", model]),
            replace,
            "{model}"
        );
    }
    assert_eq!(offered(&["-m", "claude-sonnet-4-5"]), replace);
    // Anthropic serves no GPT: its default stays, whatever the name.
    assert_eq!(offered(&["-m", "gpt-5"]), replace);
    assert_eq!(
        offered(&[
            "--provider",
            "openai",
            "-m",
            "gpt-5",
            "--edit-tool",
            "edit-file"
        ]),
        replace
    );
    assert_eq!(offered(&["--edit-tool", "apply-patch"]), patch);
    // An exact --allowed-tools list is taken as given.
    assert_eq!(
        offered(&[
            "--provider",
            "openai",
            "-m",
            "gpt-5",
            "--allowed-tools",
            "EditFile"
        ]),
        vec!["EditFile".to_string()]
    );
    let e = crate::config::cli::Cli::try_parse_from(["agent", "run", "--edit-tool", "sed"]);
    assert!(e.is_err());
}
