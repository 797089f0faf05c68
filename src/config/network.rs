//! `--allow-domain`, `--deny-domain` and the settings files' `network` section
//! (`{"allow": [...], "deny": [...]}`, added to the flags' lists) → the namespace tier's
//! `EgressSpec`, or `None` when no allow list is given.

use serde_json::Value;

use crate::config::cli::SecurityArgs;
use crate::config::env::Env;
use crate::config::settings::SettingsFiles;
use crate::error::Error;
use crate::net::policy::EgressPolicy;
use crate::net::proxy::Resolver;
use crate::process::egress::{self, EgressSpec};

pub(super) fn egress_spec(
    args: &SecurityArgs,
    files: &SettingsFiles,
    env: &dyn Env,
) -> Result<Option<EgressSpec>, Error> {
    let mut policy = EgressPolicy::default();
    policy
        .add(true, "--allow-domain", &args.allow_domain)
        .map_err(Error::Usage)?;
    policy
        .add(false, "--deny-domain", &args.deny_domain)
        .map_err(Error::Usage)?;
    for (label, section) in files.sections("network") {
        let Value::Object(map) = section else {
            return Err(Error::Usage(format!(
                "{label}: `network` must be an object with `allow` and `deny` lists"
            )));
        };
        for (key, value) in map {
            let allow = match key.as_str() {
                "allow" => true,
                "deny" => false,
                other => {
                    return Err(Error::Usage(format!(
                        "{label}: unknown key `network.{other}` (expected `allow` or `deny`)"
                    )));
                }
            };
            let entries: Option<Vec<String>> = value
                .as_array()
                .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_string)).collect());
            let entries = entries.ok_or_else(|| {
                Error::Usage(format!(
                    "{label}: `network.{key}` must be a list of strings"
                ))
            })?;
            policy
                .add(allow, &format!("{label}: network.{key}"), &entries)
                .map_err(Error::Usage)?;
        }
    }
    if policy.is_empty() {
        if !policy.denied().is_empty() {
            return Err(Error::Usage(
                "--deny-domain needs --allow-domain (or `network.allow`): commands reach only \
                 the hosts an allow list names"
                    .into(),
            ));
        }
        return Ok(None);
    }
    if args.no_network {
        return Err(Error::Usage(
            "--no-network and --allow-domain contradict each other: --allow-domain already \
             refuses every host it does not name"
                .into(),
        ));
    }
    let resolver = match env.var(egress::TEST_RESOLVE_ENV) {
        Some(spec) => Resolver::with_fixed(&spec)
            .map_err(|e| Error::Usage(format!("{}: {e}", egress::TEST_RESOLVE_ENV)))?,
        None => Resolver::default(),
    };
    let port = match env.var(egress::TEST_PORT_ENV) {
        Some(p) => p
            .trim()
            .parse()
            .ok()
            .filter(|&p: &u16| p != 0)
            .ok_or_else(|| Error::Usage(format!("{}: not a port", egress::TEST_PORT_ENV)))?,
        None => egress::pick_port(),
    };
    Ok(Some(EgressSpec {
        policy,
        resolver,
        port,
    }))
}

#[cfg(test)]
#[path = "network_tests.rs"]
mod tests;
