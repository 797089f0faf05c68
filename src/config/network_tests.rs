//! Unit tests of `network.rs`: the flags and the settings section, validated.

use clap::Parser;

use super::*;

struct FakeEnv(Vec<(&'static str, &'static str)>);
impl Env for FakeEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}

fn security(args: &[&str]) -> SecurityArgs {
    let mut v = vec!["agent", "run"];
    v.extend_from_slice(args);
    v.push("hi");
    match crate::config::cli::Cli::try_parse_from(v).unwrap().command {
        crate::config::cli::Command::Run(r) => r.security,
        _ => unreachable!(),
    }
}

fn spec(
    args: &[&str],
    settings: &[&str],
    env: &[(&'static str, &'static str)],
) -> Result<Option<EgressSpec>, String> {
    let mut files = SettingsFiles::default();
    for (i, s) in settings.iter().enumerate() {
        files
            .push_str(s, &format!("settings{i}"))
            .map_err(|e| e.to_string())?;
    }
    egress_spec(&security(args), &files, &FakeEnv(env.to_vec())).map_err(|e| e.to_string())
}

fn allowed(s: &EgressSpec) -> Vec<String> {
    s.policy.allowed().iter().map(ToString::to_string).collect()
}

#[test]
fn flags_and_settings_add_up() {
    assert_eq!(
        spec(&[], &[], &[]).unwrap(),
        None,
        "no allow list: no namespace tier"
    );
    let s = spec(
        &[
            "--allow-domain",
            "a.test,b.test:8080",
            "--allow-domain",
            "*.c.test",
            "--deny-domain",
            "x.c.test",
        ],
        &[r#"{"network": {"allow": ["d.test"], "deny": ["e.test"]}}"#],
        &[("AGENT_TEST_PROXY_PORT", "3128")],
    )
    .unwrap()
    .unwrap();
    assert_eq!(allowed(&s), ["a.test", "b.test:8080", "*.c.test", "d.test"]);
    let denied: Vec<String> = s.policy.denied().iter().map(ToString::to_string).collect();
    assert_eq!(denied, ["x.c.test", "e.test"]);
    assert_eq!(s.port, 3128);
    let only_settings = spec(&[], &[r#"{"network": {"allow": ["d.test"]}}"#], &[])
        .unwrap()
        .unwrap();
    assert_eq!(allowed(&only_settings), ["d.test"]);
    assert!((20_000..60_000).contains(&only_settings.port));
}

#[test]
fn bad_input_is_a_usage_error_naming_where() {
    let e = spec(&["--allow-domain", "https://x.test"], &[], &[]).unwrap_err();
    assert!(
        e.contains("--allow-domain: `https://x.test`: give a host name, not a URL"),
        "{e}"
    );
    let e = spec(&["--deny-domain", "x.test"], &[], &[]).unwrap_err();
    assert!(e.contains("--deny-domain needs --allow-domain"), "{e}");
    let e = spec(&["--allow-domain", "x.test", "--no-network"], &[], &[]).unwrap_err();
    assert!(e.contains("contradict"), "{e}");
    let e = spec(&[], &[r#"{"network": {"allow": "x.test"}}"#], &[]).unwrap_err();
    assert!(
        e.contains("settings0: `network.allow` must be a list of strings"),
        "{e}"
    );
    let e = spec(&[], &[r#"{"network": {"alow": ["x.test"]}}"#], &[]).unwrap_err();
    assert!(e.contains("unknown key `network.alow`"), "{e}");
    let e = spec(&[], &[r#"{"network": {"allow": ["bad host"]}}"#], &[]).unwrap_err();
    assert!(e.contains("settings0: network.allow: `bad host`"), "{e}");
    let e = spec(
        &["--allow-domain", "x.test"],
        &[],
        &[("AGENT_TEST_PROXY_PORT", "0")],
    )
    .unwrap_err();
    assert!(e.contains("AGENT_TEST_PROXY_PORT: not a port"), "{e}");
}
