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
use crate::policy::{Rule, Settings, check_rules};
use crate::tools::Subject;
use crate::tools::registry::{Registry, ToolSelection};

const BASH: &str = "/bin/bash";

/// Set before the script, not part of what the tokenizer reads: `set -T` passes the DEBUG
/// trap on to functions, subshells and command substitutions; NUL ends each entry, since
/// a command's text can span lines (a heredoc's body).
const PREAMBLE: &str = r#"exec 3>"$TRACE"; set -T; trap 'printf "%s\0" "$BASH_COMMAND" >&3' DEBUG"#;

/// What bash ran for `script`, each entry a `$BASH_COMMAND`, with bash's stderr, and
/// whether it ran past `limit` (a broken script can loop for ever): then its whole process
/// group is killed, and what it ran so far is returned. Run in a fresh temp dir, stdin
/// closed (`select` reads EOF and ends).
fn bash_trace(script: &str, limit: Duration) -> (Vec<String>, String, bool) {
    use std::os::unix::process::CommandExt;
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
        .process_group(0)
        .spawn()
        .unwrap();
    let timed_out = child.wait_timeout(limit).unwrap().is_none();
    // Background jobs and coprocesses too, finished or not.
    // SAFETY: kill(2) on the group this test just created; no memory is involved.
    unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
    let _ = child.wait();
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    let mut text = Vec::new();
    if let Ok(f) = std::fs::File::open(&trace) {
        let _ = std::io::Read::read_to_end(&mut std::io::Read::take(f, 8 << 20), &mut text);
    }
    let ran = String::from_utf8_lossy(&text)
        .split('\0')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    (ran, err, timed_out)
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
    // What the tokenizer cannot follow is denied: bash need not run it.
    let found = parsed_words(script).map_err(Failure::Unfollowed)?;
    let limit = Duration::from_secs(if must_be_valid { 5 } else { 1 });
    let (ran, err, timed_out) = bash_trace(script, limit);
    if must_be_valid && (timed_out || err.contains("syntax error")) {
        return Err(Failure::Missed(format!(
            "bash refused the script {script:?} or ran over {limit:?}: {err}"
        )));
    }
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
    // More corners: redirected and nested definitions, aliases, bodies run by input.
    "g() { echo redirected; } > out.txt; g",
    "function g\n{ echo next-line; }\ng",
    "g() { cat <<EOF\n$(echo in-body)\nEOF\n}\ng",
    "echo \"$(cat <<EOF\n$(echo hd-in-subst)\nEOF\n)\"",
    "shopt -s expand_aliases\nalias al='echo aliased'\nal",
    "select s in a b; do echo picked $s; break; done <<< 2",
    "time { echo timed-group; }",
    "! { echo negated; }",
    "coproc NAME ( echo named ); wait",
    "eval $'echo ansi-eval'",
    "sh -c 'echo in-sh'",
    "[[ a =~ (a|b) ]] && echo matched",
    "case x in\n(x|y) echo paren;;\nesac",
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

/// Deterministic xorshift64: the same seed builds the same scripts.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// `s` as one single-quoted word (`'` written as `'\''`).
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Builds random scripts from the corpus's grammar. Harmless and bounded: leaves are
/// `echo`, `printf`, `true`, `:`, calls of the script's own functions; loops run at most
/// twice; no function calls itself, directly or not.
struct Generator {
    rng: Rng,
    /// Functions defined so far (`f0`, `f1` …), loop counters and variables used.
    functions: usize,
    counters: usize,
}

impl Generator {
    /// A script: a list whose statements may call every function defined before them.
    fn script(&mut self, depth: usize) -> String {
        self.functions = 0;
        self.counters = 0;
        let mut out = String::new();
        for _ in 0..1 + self.rng.below(3) {
            let callable = self.functions;
            out.push_str(&self.list(depth, callable));
        }
        out
    }

    /// A list of 1 to 3 statements, each ending with its terminator (`; ` or a newline;
    /// always a newline after a heredoc), so that any keyword or `)` can follow.
    fn list(&mut self, depth: usize, callable: usize) -> String {
        let n = 1 + self.rng.below(3);
        let mut out = String::new();
        for _ in 0..n {
            let (stmt, needs_newline) = self.stmt(depth, callable);
            out.push_str(&stmt);
            out.push_str(if needs_newline || self.rng.below(3) == 0 {
                "\n"
            } else {
                "; "
            });
        }
        out
    }

    fn leaf(&mut self, callable: usize) -> String {
        let w = self.rng.pick(&["a", "b", "'c d'", "\"$HOME\"", "$((1+2))"]);
        match self.rng.below(10) {
            0 => "true".into(),
            1 => ":".into(),
            2 if callable > 0 => format!("f{}", self.rng.below(callable)),
            3 => format!("printf '%s\\n' {w}"),
            4 => format!("v{}={w}", self.rng.below(3)),
            5 => format!("V=1 echo {w} > out.txt"),
            6 => format!("'ec'\"ho\" {w}"),
            7 => format!("e\\cho {w} 2>&1"),
            _ => format!("echo {w}"),
        }
    }

    /// One statement; true when a newline must end it (a heredoc's body follows).
    fn stmt(&mut self, depth: usize, callable: usize) -> (String, bool) {
        if depth == 0 || self.rng.below(4) == 0 {
            return (self.leaf(callable), false);
        }
        let d = depth - 1;
        let c = self.counters;
        self.counters += 1;
        let s = match self.rng.below(27) {
            0 => format!("{{ {}}}", self.list(d, callable)),
            1 => format!("( {})", self.list(d, callable)),
            2 => format!(
                "if {}then {}else {}fi",
                self.list(d, callable),
                self.list(d, callable),
                self.list(d, callable)
            ),
            3 => format!(
                "c{c}=0; while (( c{c}++ < 2 )); do {}done",
                self.list(d, callable)
            ),
            4 => format!(
                "c{c}=0; until (( c{c}++ >= 2 )); do {}done",
                self.list(d, callable)
            ),
            5 => format!("for i{c} in x y; do {}done", self.list(d, callable)),
            6 => format!(
                "for ((i{c} = 0; i{c} < 2; i{c}++)); do {}done",
                self.list(d, callable)
            ),
            7 => format!(
                "case k{} in k0|k1) {};; (*) {};; esac",
                self.rng.below(3),
                self.list(d, callable),
                self.list(d, callable)
            ),
            8 => format!(
                "select s{c} in x y; do {}break; done <<< 1",
                self.list(d, callable)
            ),
            9..=12 => {
                // A function, numbered after every one before it. Its body calls only
                // what the place it is defined may call: never itself, nor a function
                // that calls it.
                let n = self.functions;
                self.functions += 1;
                let body = self.list(d, callable);
                let def = match self.rng.below(5) {
                    0 => format!("function f{n} {{ {body}}}"),
                    1 => format!("function f{n}() {{ {body}}}"),
                    2 => format!("f{n}() {{ {body}}}"),
                    3 => format!("f{n} () ( {body})"),
                    _ => format!("f{n}() if true; then {body}fi"),
                };
                format!("{def}\nf{n}")
            }
            13 => format!("coproc {{ {}}}\nwait", self.list(d, callable)),
            14 => format!("time {}", self.leaf(callable)),
            15 => format!("! {}", self.leaf(callable)),
            16 => format!(
                "{} {} {}",
                self.leaf(callable),
                self.rng.pick(&["|", "&&", "||", "|&"]),
                self.leaf(callable)
            ),
            17 => format!("{{ {}}} & wait", self.list(d, callable)),
            18 => format!("[[ -n $({}) ]]", self.list(d, callable)),
            19 => format!("(( v{c} = 1 << 2 ))"),
            20 => {
                let q = if self.rng.below(2) == 0 {
                    "EOF"
                } else {
                    "'EOF'"
                };
                return (format!("cat <<{q}\n$({})\nEOF", self.leaf(callable)), true);
            }
            21 => format!("(exec {})", self.leaf(callable)),
            22 => format!(
                "{} echo {}",
                self.rng.pick(&["command", "builtin"]),
                self.rng.pick(&["a", "b"])
            ),
            23 => format!("eval {}", quote(&self.list(d, callable))),
            24 => format!("echo \"$({})\"", self.list(d, callable)),
            25 => format!("echo `{}`", self.leaf(callable)),
            _ => format!("cat <({}) > /dev/null", self.list(d, callable)),
        };
        (s, false)
    }
}

/// A deny rule, and an allow list.
fn some_rules() -> [Settings; 2] {
    let known = Registry::builtin(&ToolSelection::default()).known();
    let with = |allow: &[&str], deny: &[&str]| Settings {
        allow: allow
            .iter()
            .map(|r| Rule::parse(r, &known).unwrap())
            .collect(),
        deny: deny
            .iter()
            .map(|r| Rule::parse(r, &known).unwrap())
            .collect(),
        ..Settings::default()
    };
    [
        with(&[], &["Bash(rm:*)"]),
        with(&["Bash(echo:*)", "Bash(true)"], &[]),
    ]
}

/// The policy's verdict on a command under each of `some_rules`.
fn verdicts(rules: &[Settings; 2], command: &str) -> [Option<String>; 2] {
    let subject = Subject::Command(command.to_string());
    [0, 1].map(|k| check_rules(&rules[k], "Bash", &subject, Path::new("/ws")))
}

/// Random scripts (seeded, so a failure names a script that can be run again): every
/// command bash runs is found. Then each is broken (cut short, or a quote, `$(`, `)` or
/// `case` put in): bash may run part of it, and either the tokenizer still finds what
/// bash ran, or it cannot follow the script and the policy denies it under any rules.
#[test]
fn generated_scripts_are_followed_or_denied() {
    if !have_bash() {
        return;
    }
    const CASES: usize = 300;
    let mut gen_ = Generator {
        rng: Rng(0x9e37_79b9_7f4a_7c15),
        functions: 0,
        counters: 0,
    };
    // Built first, in order, so that the seed alone decides every script; checked on a
    // few threads, since bash's forks dominate the time.
    let cases: Vec<(usize, String, String)> = (0..CASES)
        .map(|case| {
            let depth = 1 + gen_.rng.below(2);
            let script = gen_.script(depth);
            let chars: Vec<char> = script.chars().collect();
            let at = gen_.rng.below(chars.len() + 1);
            let (head, tail): (String, String) =
                (chars[..at].iter().collect(), chars[at..].iter().collect());
            let broken = match gen_.rng.below(5) {
                0 => head,
                k => format!("{head}{}{tail}", ["'", "\"", "$(", ")", "case "][k]),
            };
            (case, script, broken)
        })
        .collect();
    let rules = some_rules();
    let check_some = |cases: &[(usize, String, String)]| {
        let (mut ran, mut unfollowed) = (0, 0);
        let mut failures = Vec::new();
        for (case, script, broken) in cases {
            match check(script, true) {
                Ok(n) => ran += n,
                Err(Failure::Unfollowed(e)) => {
                    failures.push(format!("case {case}: cannot follow {script:?}: {e}"))
                }
                Err(Failure::Missed(m)) => failures.push(format!("case {case}: {m}")),
            }
            match check(broken, false) {
                Ok(n) => ran += n,
                Err(Failure::Unfollowed(e)) => {
                    unfollowed += 1;
                    for v in verdicts(&rules, broken) {
                        if !v.is_some_and(|r| r.contains("cannot be parsed")) {
                            failures.push(format!("case {case}: {broken:?} ({e}) was not denied"));
                        }
                    }
                }
                Err(Failure::Missed(m)) => failures.push(format!("case {case}, broken: {m}")),
            }
        }
        (ran, unfollowed, failures)
    };
    let (mut ran, mut unfollowed, mut failures) = (0, 0, Vec::new());
    std::thread::scope(|scope| {
        let parts: Vec<_> = cases
            .chunks(CASES.div_ceil(4))
            .map(|chunk| scope.spawn(|| check_some(chunk)))
            .collect();
        for part in parts {
            let (r, u, f) = part.join().unwrap();
            ran += r;
            unfollowed += u;
            failures.extend(f);
        }
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ran > CASES, "bash ran only {ran} commands");
    assert!(
        unfollowed > CASES / 10,
        "only {unfollowed} broken scripts were unfollowed"
    );
}
