//! The tokenizer checked against real bash: each script runs under `/bin/bash` with a
//! DEBUG trap writing `$BASH_COMMAND` (the command bash is about to run) to fd 3, and every
//! command word bash ran must be among the command words `parse` found. A hand-written
//! corpus covers each construct; a seeded generator builds random scripts from the same
//! grammar, and broken variants of them, which must be either denied or followed.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use wait_timeout::ChildExt;

use super::parse;

const BASH: &str = "/bin/bash";

/// Set before the script, not part of what the tokenizer reads: `set -T` passes the DEBUG
/// trap on to functions, subshells and command substitutions; NUL ends each entry, since
/// a command's text can span lines (a heredoc's body).
const PREAMBLE: &str = r#"exec 3>"$TRACE"; set -T; trap 'printf "%s\0" "$BASH_COMMAND" >&3' DEBUG"#;

/// What bash ran for `script`, each entry a `$BASH_COMMAND`, with bash's stderr. Run in a
/// fresh temp dir, stdin closed (`select` reads EOF and ends), killed after 5 s.
fn bash_trace(script: &str) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    let mut child = Command::new(BASH)
        .arg("-c")
        .arg(format!("{PREAMBLE}\n{script}"))
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("TRACE", &trace)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    if child
        .wait_timeout(Duration::from_secs(5))
        .unwrap()
        .is_none()
    {
        let _ = child.kill();
        let _ = child.wait();
        panic!("bash ran over 5 s on {script:?}");
    }
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let ran = text
        .split('\0')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    (ran, err)
}

/// The command words of one `$BASH_COMMAND`. It is the command's text before expansion,
/// as bash prints it back (`"$cmd" a`, `x=1 echo a`, `echo a > f`, `cat <<EOF` with its
/// body), so it is read with the tokenizer itself, as a script of its own: that only has to
/// undo quoting and drop assignments and redirections, which the unit tests check, while
/// the question asked here (did `parse` find this command in the whole script?) is left
/// to the comparison. Every command word of the entry is expected (its substitutions too,
/// which bash also runs), and none for a compound command's head (`for x in a`, `case x
/// in`, `select`), which runs nothing itself.
fn ran_words(entry: &str) -> Result<Vec<String>, String> {
    let head = entry.split_whitespace().next().unwrap_or("");
    if matches!(head, "for" | "case" | "select") {
        return Ok(Vec::new());
    }
    Ok(parse(entry)?
        .commands
        .into_iter()
        .filter_map(|w| w.into_iter().next())
        .collect())
}

/// The command words `parse` finds in `script`: each command's first word, as the rules
/// match it.
fn parsed_words(script: &str) -> Result<BTreeSet<String>, String> {
    Ok(parse(script)?
        .commands
        .into_iter()
        .filter_map(|w| w.into_iter().next())
        .collect())
}

/// Why a script failed the comparison.
enum Failure {
    /// `parse` cannot follow the script: the policy denies it whenever Bash has rules.
    Unfollowed(String),
    /// Bash ran a command `parse` did not find, or refused a script meant to be valid.
    Missed(String),
}

/// Runs `script` under bash; every command word it ran must be one `parse` found.
/// Returns how many commands bash ran.
fn check(script: &str, must_be_valid: bool) -> Result<usize, Failure> {
    let (ran, err) = bash_trace(script);
    if must_be_valid && err.contains("syntax error") {
        return Err(Failure::Missed(format!(
            "bash refused the script {script:?}: {err}"
        )));
    }
    let found = parsed_words(script).map_err(Failure::Unfollowed)?;
    for entry in &ran {
        let words = ran_words(entry).map_err(|e| {
            Failure::Missed(format!(
                "bash ran {entry:?}, unreadable: {e} (in {script:?})"
            ))
        })?;
        for w in words {
            if !found.contains(&w) {
                return Err(Failure::Missed(format!(
                    "bash ran `{w}` ({entry:?}) but the tokenizer found only {found:?} in {script:?}"
                )));
            }
        }
    }
    Ok(ran.len())
}

fn have_bash() -> bool {
    if Path::new(BASH).exists() {
        return true;
    }
    eprintln!("SKIPPED: {BASH} is absent, the tokenizer is not compared with bash");
    false
}

/// One script per construct the tokenizer must follow. Harmless: `echo`, `printf`,
/// `true`, `:`, made-up functions, files only in the temp dir it runs in.
const CORPUS: &[&str] = &[
    // Function definitions, all three syntaxes, and bodies of each compound kind.
    "function g { echo body-g; }; g",
    "function g() { printf '%s\\n' g; }; g",
    "g() { echo g; }; g",
    "g ( ) { echo g; }\ng",
    "function g\n{\n  echo g\n}\ng",
    "g() ( echo sub; true ); g",
    "g() if true; then echo t; fi; g",
    "g() while false; do :; done; g",
    "g() for i in 1 2; do echo $i; done; g",
    "g() [[ -n x ]]; g",
    "g() (( 1 + 1 )); g",
    "g() { h() { echo inner; }; h; }; g; h",
    "function echo { builtin echo shadowed \"$@\"; }; echo a",
    "g() { echo \"$1\"; }; g $(echo arg)",
    // Groups, conditionals and loops.
    "{ echo grp; true; }",
    "{ echo a; { echo b; }; } > out.txt",
    "if true; then echo t; elif false; then :; else echo e; fi",
    "if ! false; then echo not; fi",
    "while false; do echo never; done; echo after",
    "n=0; while (( n < 2 )); do echo $n; n=$((n+1)); done",
    "until true; do :; done",
    "n=0; until (( n >= 2 )); do printf x; (( n++ )); done",
    "for i in a b; do echo $i; done",
    "for i in $(echo a b); do echo \"$i\"; done",
    "for ((i = 0; i < 2; i++)); do echo $i; done",
    "for i do echo $i; done",
    "case x in x) echo cx;; y|z) echo yz;; esac",
    "case x in (x) echo cx ;& (y) echo fall ;;& *) echo star ;; esac",
    "case $(echo x) in\n  x)\n    echo multi\n    ;;\n  *) : ;;\nesac",
    "case a in b) echo no;; esac; echo after",
    "case a in a) case b in b) echo nested;; esac;; esac",
    "echo $(case x in x) echo in-subst;; esac)",
    "select s in a b; do echo $s; break; done",
    // Background, coprocesses, time, negation.
    "coproc cp { echo co; }; wait",
    "coproc echo co2; wait",
    "coproc ( echo co3 ); wait",
    "time echo timed",
    "time -p echo timedp",
    "! false",
    "echo a & wait",
    "echo a | cat | cat",
    // Arithmetic and conditional commands.
    "(( 1 + 2 ))",
    "(( x = 1 << 2 ))\necho shifted",
    "x=$(( 2 << 1 )); echo $x",
    "[[ -n x && -z '' ]]",
    "[[ $(echo a) == a ]] && echo eq",
    "((echo a) ; echo b)",
    // Heredocs.
    "cat <<EOF\n$(echo inhd)\nEOF",
    "cat <<'EOF'\n$(echo quoted)\nEOF\necho after",
    "cat <<-EOF\n\t$(echo tabbed)\n\tEOF\necho after",
    "cat <<EOF; echo same-line\nbody\nEOF",
    "cat <<< \"$(echo here)\"",
    // exec, command, builtin, eval.
    "(exec echo ex)",
    "command echo cmd",
    "builtin echo bi",
    "command -v echo",
    "eval 'echo ev; true'",
    "eval \"echo a && printf b\"",
    "eval eval echo twice",
    "builtin eval 'echo be'",
    "eval 'g() { echo from-eval; }'; g",
    // Nested substitutions.
    "echo $(echo $(echo nested))",
    "echo \"$(printf '%s' \"$(echo deep)\")\"",
    "echo `echo tick`",
    "echo `echo \\`echo tick2\\``",
    "echo ${x:-$(echo default)}",
    "tee >(cat) < <(echo procsub) > /dev/null; wait",
    "echo $( (echo sub-in-sub) )",
    "x=$(echo assign) y=`true`; echo $x",
    // Assignments, redirections, quoting.
    "x=1",
    "y=2 echo assigned",
    "echo a > /dev/null 2>&1",
    "> f.txt echo first",
    "'e'\"ch\"o quoted",
    "e\\\ncho continued",
    "$'\\x65cho' ansi",
    "trap 'echo trapped' EXIT; echo x",
];

#[test]
fn every_command_bash_runs_is_found() {
    if !have_bash() {
        return;
    }
    let mut ran = 0;
    let mut failures = Vec::new();
    for script in CORPUS {
        match check(script, true) {
            Ok(n) => ran += n,
            Err(Failure::Unfollowed(e)) => failures.push(format!("{script:?}: cannot follow: {e}")),
            Err(Failure::Missed(m)) => failures.push(m),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ran > CORPUS.len(), "bash ran only {ran} commands");
}
