//! Network egress of confined commands (`--allow-domain`): the allow/deny policy and
//! address rules (`policy`), the filtering proxy (`proxy`) and the broker that serves it
//! on each command's inside listener (`broker`). The namespace the command runs in is
//! built by `process::netns`. Imports nothing of the crate: refusals go out through the
//! command's output and the `proxy::on_denial` sink, which the run sets.

#[cfg(target_os = "linux")]
pub(crate) mod broker;
pub(crate) mod policy;
pub(crate) mod proxy;
