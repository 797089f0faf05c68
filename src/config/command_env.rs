//! `--command-env`, `--command-env-pass`, `--keep-env` and the settings files'
//! `commandEnv` section (`{"mode": "allow", "pass": ["NODE_*"]}`): the rules the
//! commands' environment (Bash, hooks, MCP servers) is built by. Later settings files
//! override the mode and add to `pass`; the flags override both. The filter itself is
//! `util::secrets::command_env`.

use serde::Deserialize;

use crate::config::cli::{CommandEnvMode, SecurityArgs};
use crate::config::settings::SettingsFiles;
use crate::error::Error;
use crate::util::secrets::{EnvMode, EnvPolicy};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    mode: Option<String>,
    #[serde(default)]
    pass: Vec<String>,
}

/// A name or glob of variable names: letters, digits, `_`, `*` and `?`.
fn check_name(what: &str, name: &str) -> Result<(), Error> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_*?".contains(c))
    {
        return Err(Error::Usage(format!(
            "{what}: {name:?} is not a variable name or glob (letters, digits, _, * and ?)"
        )));
    }
    Ok(())
}

pub(super) fn env_policy(args: &SecurityArgs, files: &SettingsFiles) -> Result<EnvPolicy, Error> {
    let mut policy = EnvPolicy {
        keep: args.keep_env.clone(),
        ..Default::default()
    };
    for (label, value) in files.sections("commandEnv") {
        let section: Section = serde_json::from_value(value.clone())
            .map_err(|e| Error::Usage(format!("{label}: `commandEnv`: {e}")))?;
        if let Some(mode) = section.mode {
            policy.mode = match mode.as_str() {
                "allow" => EnvMode::Allow,
                "scrub" => EnvMode::Scrub,
                other => {
                    return Err(Error::Usage(format!(
                        "{label}: `commandEnv.mode` is {other:?}; expected \"allow\" or \"scrub\""
                    )));
                }
            };
        }
        for p in &section.pass {
            check_name(&format!("{label}: commandEnv.pass"), p)?;
        }
        policy.pass.extend(section.pass);
    }
    match args.command_env {
        Some(CommandEnvMode::Allow) => policy.mode = EnvMode::Allow,
        Some(CommandEnvMode::Scrub) => policy.mode = EnvMode::Scrub,
        None => {}
    }
    for p in args.command_env_pass.iter().map(|p| p.trim()) {
        check_name("--command-env-pass", p)?;
        policy.pass.push(p.to_string());
    }
    Ok(policy)
}
