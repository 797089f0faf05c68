//! Network egress of confined commands (`--allow-domain`): the allow/deny policy and
//! address rules (`policy`), the one lookup that is both judged and dialed (`dns`, which
//! WebFetch uses too), the filtering proxy (`proxy`) and the broker that serves it
//! on each command's inside listener (`broker`). The namespace the command runs in is
//! built by `process::netns`. Imports nothing of the crate: refusals go out through the
//! command's output and the `proxy::on_denial` sink, which the run sets.
// Outside Linux nothing starts the proxy (`--allow-domain` is refused there); the
// portable policy and proxy still compile, so their Linux-only callers cannot rot them.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

#[cfg(target_os = "linux")]
pub(crate) mod broker;
pub(crate) mod dns;
pub(crate) mod policy;
pub(crate) mod proxy;
