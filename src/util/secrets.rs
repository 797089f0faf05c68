//! Secret handling: which environment variables child processes never see, the
//! redaction of known secret values from anything the run writes (transcript, logs,
//! cassettes), and hiding them from other processes of the user (`/proc`).

/// Suffixes of variable names treated as secrets (SPEC §6).
const SECRET_SUFFIXES: &[&str] = &["_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD"];

/// Variables removed regardless of suffix.
// `ANTHROPIC_CUSTOM_HEADERS`: a gateway's headers, often its credential, for the agent only.
// The AWS secret key and Bedrock API key fit no suffix (`AWS_SESSION_TOKEN` does).
// `OTEL_EXPORTER_OTLP_*HEADERS`: the collector's credential, for the agent's export only.
const SECRET_NAMES: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_CUSTOM_HEADERS",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
];

/// Whether a variable name denotes a secret.
pub(crate) fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAMES.contains(&upper.as_str()) || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

/// The environment for child processes: `vars` minus secrets, except the names in `keep`.
pub(crate) fn scrubbed_env(
    vars: impl Iterator<Item = (String, String)>,
    keep: &[String],
) -> Vec<(String, String)> {
    vars.filter(|(k, _)| !is_secret_name(k) || keep.iter().any(|kk| kk == k))
        .collect()
}

/// How the commands' environment is built (`--command-env`, issue 46).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum EnvMode {
    /// Everything but secrets: known names, secret-looking names, URLs with a password,
    /// values equal to the run's secrets.
    #[default]
    Scrub,
    /// Only `ALLOW_BASE` and the passed names.
    Allow,
}

/// The rules the commands' environment is built by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EnvPolicy {
    pub mode: EnvMode,
    /// `--command-env-pass` and `commandEnv.pass`: names or globs (`*`, `?`), kept in
    /// either mode.
    pub pass: Vec<String>,
    /// `--keep-env`: exact names kept in either mode.
    pub keep: Vec<String>,
}

/// What `allow` passes without being asked: the basics every tool expects and CI's
/// well-known variables that say where and what is built (never a token: GitHub's
/// `GITHUB_TOKEN`, GitLab's `CI_JOB_TOKEN` and the like are not here).
const ALLOW_BASE: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TMPDIR",
    "TZ",
    "USER",
    "CI",
    // GitHub Actions
    "GITHUB_ACTIONS",
    "GITHUB_WORKSPACE",
    "GITHUB_REPOSITORY",
    "GITHUB_REPOSITORY_OWNER",
    "GITHUB_SHA",
    "GITHUB_REF",
    "GITHUB_REF_NAME",
    "GITHUB_HEAD_REF",
    "GITHUB_BASE_REF",
    "GITHUB_RUN_ID",
    "GITHUB_RUN_NUMBER",
    "GITHUB_RUN_ATTEMPT",
    "GITHUB_JOB",
    "GITHUB_WORKFLOW",
    "GITHUB_EVENT_NAME",
    "GITHUB_SERVER_URL",
    "GITHUB_API_URL",
    "GITHUB_ACTOR",
    "RUNNER_OS",
    "RUNNER_ARCH",
    "RUNNER_TEMP",
    "RUNNER_TOOL_CACHE",
    // GitLab CI
    "GITLAB_CI",
    "CI_PROJECT_DIR",
    "CI_PROJECT_PATH",
    "CI_COMMIT_SHA",
    "CI_COMMIT_REF_NAME",
    "CI_PIPELINE_ID",
    "CI_JOB_ID",
    "CI_SERVER_URL",
    // Buildkite, CircleCI, Jenkins, Azure Pipelines
    "BUILDKITE",
    "BUILDKITE_BRANCH",
    "BUILDKITE_COMMIT",
    "CIRCLECI",
    "CIRCLE_BRANCH",
    "CIRCLE_SHA1",
    "JENKINS_URL",
    "BUILD_NUMBER",
    "TF_BUILD",
];

/// Names `scrub` removes besides the known ones (upper-cased before matching), unless
/// passed: what a secret is usually called.
const SECRET_LOOKING: &[&str] = &[
    "*_TOKEN",
    "*_SECRET*",
    "*_PASSWORD",
    "*_PASSWD",
    "*_KEY",
    "*_CREDENTIALS",
    "TOKEN",
    "SECRET*",
    "PASSWORD",
];

/// `*` (any run of characters) and `?` (one character).
pub(crate) fn glob_matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// A URL whose user part has a password: `postgres://user:pw@host/db`.
fn url_with_password(value: &str) -> bool {
    value.split_whitespace().any(|word| {
        word.split_once("://").is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && rest
                    .split(['/', '?', '#'])
                    .next()
                    .and_then(|authority| authority.rsplit_once('@'))
                    .is_some_and(|(user, _)| {
                        user.split_once(':').is_some_and(|(_, pw)| !pw.is_empty())
                    })
        })
    })
}

/// The commands' environment, and the variables `scrub` removed besides the agent's own
/// credentials (names only: for the warning).
#[derive(Debug, Default)]
pub(crate) struct CommandEnv {
    pub vars: Vec<(String, String)>,
    pub removed: Vec<String>,
}

/// `vars` filtered by `policy` (see `EnvMode`); `secrets` are the run's secret values.
pub(crate) fn command_env(
    vars: impl Iterator<Item = (String, String)>,
    policy: &EnvPolicy,
    secrets: &[String],
) -> CommandEnv {
    let passed = |k: &str| {
        policy.keep.iter().any(|n| n == k) || policy.pass.iter().any(|g| glob_matches(g, k))
    };
    let mut out = CommandEnv::default();
    for (k, v) in vars {
        if passed(&k) {
            out.vars.push((k, v));
            continue;
        }
        match policy.mode {
            EnvMode::Allow => {
                if ALLOW_BASE.iter().any(|g| glob_matches(g, &k)) {
                    out.vars.push((k, v));
                }
            }
            EnvMode::Scrub => {
                let upper = k.to_ascii_uppercase();
                if SECRET_NAMES.contains(&upper.as_str()) {
                    continue; // the agent's own credentials: always gone, no news
                }
                let secret = is_secret_name(&k)
                    || SECRET_LOOKING.iter().any(|g| glob_matches(g, &upper))
                    || url_with_password(&v)
                    || secrets
                        .iter()
                        .any(|s| s.len() >= MIN_REDACT_LEN && v.contains(s.as_str()));
                if secret {
                    out.removed.push(k);
                } else {
                    out.vars.push((k, v));
                }
            }
        }
    }
    out.removed.sort();
    out
}

/// Secret values shorter than this are not redacted: they would garble ordinary text.
const MIN_REDACT_LEN: usize = 8;

/// Replaces every occurrence of each secret value with `[REDACTED]`, both as it is and
/// as it appears inside a JSON string (a value with `"`, `\\` or a newline is escaped
/// there). Longer values go first, so a secret that contains another is not half-left.
pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    redact_owned(text.to_string(), secrets)
}

/// `redact` of a string the caller gives up: returned as it is (no copy) when it holds
/// no secret, which matters for the transcript of a long run (the largest string made).
pub(crate) fn redact_owned(text: String, secrets: &[String]) -> String {
    let mut patterns: Vec<String> = Vec::new();
    for s in secrets.iter().filter(|s| s.len() >= MIN_REDACT_LEN) {
        patterns.push(s.clone());
        let quoted = serde_json::to_string(s).unwrap_or_default();
        if let Some(escaped) = quoted.get(1..quoted.len().saturating_sub(1))
            && escaped != s.as_str()
        {
            patterns.push(escaped.to_string());
        }
    }
    patterns.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    patterns.dedup();
    let bound = text.len();
    let mut out = text;
    // The marker's own brackets can complete a secret with the text beside it (a secret
    // `]abc…` and the text `]abc…abc…`: `[REDACTED]abc…`), so the passes repeat until no
    // secret is left (found by fuzzing, issue 43). Each pass that recreates one consumes
    // the text beside it, so the chain ends within the text's length; a secret inside the
    // marker itself would never leave, so it is skipped and the passes are still bounded.
    for _ in 0..=bound {
        let mut changed = false;
        for p in patterns.iter().filter(|p| !MARKER.contains(p.as_str())) {
            if out.contains(p.as_str()) {
                out = out.replace(p.as_str(), MARKER);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    out
}

/// What a secret is replaced with.
const MARKER: &str = "[REDACTED]";

/// Redaction over a stream that arrives in pieces: a secret split across two pieces is
/// still caught, because an end that could begin a secret (at most the longest secret
/// − 1 bytes) is held back until the next piece (or `finish`) shows whether it does.
/// Only such an end is held, so a live reader (a background command's) sees every
/// line as soon as it is printed. What it returns is safe to cut anywhere.
pub(crate) struct StreamRedactor {
    secrets: Vec<String>,
    /// Bytes held back at most: one less than the longest secret.
    hold: usize,
    /// The forms a secret takes in the text (as it is, and JSON-escaped).
    forms: Vec<String>,
    pending: String,
}

impl StreamRedactor {
    pub(crate) fn new(secrets: &[String]) -> Self {
        let secrets: Vec<String> = secrets
            .iter()
            .filter(|s| s.len() >= MIN_REDACT_LEN)
            .cloned()
            .collect();
        // A secret may also appear JSON-escaped, which is longer.
        let longest = secrets
            .iter()
            .map(|s| {
                s.len()
                    .max(serde_json::to_string(s).map_or(0, |q| q.len() - 2))
            })
            .max()
            .unwrap_or(1);
        let hold = longest - 1;
        let forms = secrets
            .iter()
            .flat_map(|s| {
                let quoted = serde_json::to_string(s).unwrap_or_default();
                let escaped = quoted
                    .get(1..quoted.len().saturating_sub(1))
                    .map(String::from);
                [Some(s.clone()), escaped]
            })
            .flatten()
            .collect();
        StreamRedactor {
            secrets,
            hold,
            forms,
            pending: String::new(),
        }
    }

    /// Where the part of `text` that could begin a secret starts (its length if none).
    fn held_from(&self, text: &str) -> usize {
        let mut from = text.len() - self.hold.min(text.len());
        while from < text.len() {
            if text.is_char_boundary(from) {
                let end = &text[from..];
                if self.forms.iter().any(|f| f.starts_with(end)) {
                    return from;
                }
            }
            from += 1;
        }
        text.len()
    }

    /// Takes the next piece; returns the redacted text that can no longer change.
    pub(crate) fn push(&mut self, piece: &str) -> String {
        if self.secrets.is_empty() {
            return piece.to_string();
        }
        self.pending.push_str(piece);
        let redacted = redact(&self.pending, &self.secrets);
        let keep_from = self.held_from(&redacted);
        self.pending = redacted[keep_from..].to_string();
        redacted[..keep_from].to_string()
    }

    /// The rest, redacted.
    pub(crate) fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        redact(&rest, &self.secrets)
    }
}

/// The values of the secret variables in this process's environment.
pub(crate) fn secret_values() -> Vec<String> {
    std::env::vars()
        .filter(|(k, v)| is_secret_name(k) && v.len() >= MIN_REDACT_LEN)
        .map(|(_, v)| v)
        .collect()
}

/// Closes this process's secrets to other processes of the same user (Linux), as a
/// command the model runs is one: the values of secret variables are moved out of the
/// environment block the kernel laid out at exec (what `/proc/PID/environ` shows, for
/// this process and for every supervisor forked from it) and zeroed there; each of
/// `in_args` (a `--header` credential) is starred out where it shows in
/// `/proc/PID/cmdline`; and the process is made non-dumpable, so that `/proc/PID/mem`,
/// `environ`, `maps` and ptrace need root (forks inherit it; an exec'd command, which
/// holds no key, regains it). Called in `main` as soon as the arguments are parsed,
/// before anything else runs: it changes the environment, which takes a process of one
/// thread. Best effort: what cannot be done is left as it was.
pub(crate) fn hide_from_other_processes(in_args: &[String]) {
    #[cfg(target_os = "linux")]
    {
        // First: once non-dumpable, an unprivileged process cannot open its own
        // /proc/self/mem (it becomes root's), which the blocks are rewritten through.
        proc_blocks::hide(in_args);
        // SAFETY: prctl with integer arguments only.
        unsafe {
            libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0, 0, 0);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = in_args;
}

/// The argument and environment blocks at the top of the initial stack, rewritten in
/// place through /proc/self/mem: out of range addresses are an error there, never a
/// fault, and no Rust reference points into those bytes (std keeps raw pointers only).
#[cfg(target_os = "linux")]
mod proc_blocks {
    use std::ffi::{OsStr, OsString};
    use std::fs::File;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::FileExt;

    use super::is_secret_name;

    /// The byte the values in the argument block are overwritten with: not NUL, so the
    /// arguments keep their number and places for `ps`.
    const ARG_MASK: u8 = b'*';

    pub(super) fn hide(in_args: &[String]) {
        let secret: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| k.to_str().is_some_and(is_secret_name))
            .collect();
        if secret.is_empty() && in_args.iter().all(|a| a.is_empty()) {
            return;
        }
        for (name, value) in &secret {
            // A copy on the heap, which `getenv` and child environments then read: the
            // old string stays in the block, unreferenced. Removed first so that a name
            // given twice leaves no entry pointing into the block.
            // SAFETY: no other thread exists yet (see `hide_from_other_processes`).
            unsafe {
                std::env::remove_var(name);
                std::env::set_var(name, value);
            }
        }
        let Some([arg_start, arg_end, env_start, env_end]) = stat_blocks() else {
            return;
        };
        let Ok(mem) = File::options()
            .read(true)
            .write(true)
            .open("/proc/self/mem")
        else {
            return;
        };
        // Rewritten only when it is exactly the arguments (else the fields were misread).
        let expected: Vec<u8> = std::env::args_os()
            .flat_map(|a| a.as_bytes().iter().copied().chain([0]).collect::<Vec<_>>())
            .collect();
        if let Some(args) = read(&mem, arg_start, arg_end).filter(|a| *a == expected) {
            for value in in_args.iter().filter(|v| !v.is_empty()) {
                for at in find_all(&args, value.as_bytes()) {
                    let mask = vec![ARG_MASK; value.len()];
                    let _ = mem.write_all_at(&mask, arg_start + at as u64);
                }
            }
        }
        if let Some(env) = read(&mem, env_start, env_end) {
            let mut at = 0;
            for entry in env.split(|&b| b == 0) {
                if let Some(eq) = entry.iter().position(|&b| b == b'=') {
                    let (name, value) = (OsStr::from_bytes(&entry[..eq]), &entry[eq + 1..]);
                    // Only a value read from the environment above: anything else means
                    // the block is not what it seems, and is left alone.
                    let known = secret
                        .iter()
                        .any(|(k, v)| k.as_os_str() == name && v.as_bytes() == value);
                    if known && !value.is_empty() {
                        let offset = env_start + (at + eq + 1) as u64;
                        let _ = mem.write_all_at(&vec![0; value.len()], offset);
                    }
                }
                at += entry.len() + 1;
            }
        }
        for (name, value) in &secret {
            if std::env::var_os(name).as_ref() != Some(value) {
                // SAFETY: as above, still one thread.
                unsafe { std::env::set_var(name, value) };
            }
        }
    }

    /// `arg_start`, `arg_end`, `env_start`, `env_end`: fields 48 to 51 of
    /// /proc/self/stat (Linux 3.5), counted after the `(comm)` field, which may hold
    /// spaces and parentheses.
    fn stat_blocks() -> Option<[u64; 4]> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let after_comm = &stat[stat.rfind(')')? + 1..];
        // The first field after comm is the 3rd, `state`.
        let mut fields = after_comm.split_whitespace().skip(48 - 3);
        let mut out = [0u64; 4];
        for slot in &mut out {
            *slot = fields.next()?.parse().ok()?;
        }
        let [a0, a1, e0, e1] = out;
        (a0 < a1 && e0 < e1 && a1 - a0 <= MAX_BLOCK && e1 - e0 <= MAX_BLOCK).then_some(out)
    }

    /// More than the kernel ever lays out (`ARG_MAX` is a quarter of the stack limit).
    const MAX_BLOCK: u64 = 64 << 20;

    fn read(mem: &File, start: u64, end: u64) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; usize::try_from(end - start).ok()?];
        mem.read_exact_at(&mut buf, start).ok()?;
        Some(buf)
    }

    /// The offsets of every (non-overlapping) occurrence of `needle` in `hay`.
    fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
        let mut out = Vec::new();
        if needle.is_empty() {
            return out;
        }
        let mut at = 0;
        while let Some(i) = hay
            .get(at..)
            .and_then(|h| h.windows(needle.len()).position(|w| w == needle))
        {
            out.push(at + i);
            at += i + needle.len();
        }
        out
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn find_all_finds_each_occurrence() {
            assert_eq!(super::find_all(b"abXabXab", b"ab"), vec![0, 3, 6]);
            assert_eq!(super::find_all(b"aaaa", b"aa"), vec![0, 2]);
            assert!(super::find_all(b"abc", b"abcd").is_empty());
            assert!(super::find_all(b"abc", b"").is_empty());
        }

        #[test]
        fn the_blocks_are_read_from_stat() {
            let [a0, a1, e0, e1] = super::stat_blocks().expect("Linux 3.5 or later");
            assert!(a0 < a1 && a1 <= e0 && e0 < e1, "{a0} {a1} {e0} {e1}");
        }
    }
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;
