//! Tool flags of issue 15: the Bash timeout the model is told (`--bash-timeout`), rules on
//! the command line (`--allowed-tools` / `--disallowed-tools` rules, `--settings` JSON),
//! and `--add-dir`.

use serde_json::Value;

use crate::support::*;

/// The Bash tool as the first request sent it, after a run with `flags`.
fn bash_tool_sent(flags: &[&str]) -> Value {
    let env = TestEnv::new(vec![Reply::turn(Turn::new().text("Done."))]);
    let mut args = vec!["run", "--allow-bash"];
    args.extend_from_slice(flags);
    args.push("hi");
    env.run(&args).assert_code(0);
    let reqs = env.server.requests();
    reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Bash")
        .cloned()
        .expect("Bash in the request's tools")
}

#[test]
fn bash_description_states_the_runs_default_timeout() {
    let t = bash_tool_sent(&[]);
    let d = t["description"].as_str().unwrap();
    assert!(
        d.contains("- Timeout: 2 minutes unless you set `timeout` in seconds (1 to 600)."),
        "{d}"
    );
    assert_eq!(t["input_schema"]["properties"]["timeout"]["maximum"], 600);

    let t = bash_tool_sent(&["--bash-timeout", "90s"]);
    let d = t["description"].as_str().unwrap();
    assert!(d.contains("- Timeout: 90 seconds unless"), "{d}");
    assert_eq!(t["input_schema"]["properties"]["timeout"]["maximum"], 600);

    // A default over 10 minutes raises the maximum the model may ask for.
    let t = bash_tool_sent(&["--bash-timeout", "15m"]);
    let d = t["description"].as_str().unwrap();
    assert!(
        d.contains("15 minutes unless") && d.contains("(1 to 900)"),
        "{d}"
    );
    assert_eq!(t["input_schema"]["properties"]["timeout"]["maximum"], 900);
    let schema_text = t["input_schema"]["properties"]["timeout"]["description"]
        .as_str()
        .unwrap();
    assert!(schema_text.contains("Default: 15 minutes"), "{schema_text}");
}
