//! Unit tests of `shell_words.rs`.

use super::*;

fn cmds(src: &str) -> Vec<String> {
    split_commands(src)
        .unwrap_or_else(|e| panic!("{src:?}: {e}"))
        .into_iter()
        .map(|w| w.join(" "))
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn splits_on_every_operator() {
    assert_eq!(
        cmds("a 1 && b 2 || c; d | e |& f & g\nh"),
        ["a 1", "b 2", "c", "d", "e", "f", "g", "h"]
    );
    assert_eq!(cmds("echo hi && rm -rf x"), ["echo hi", "rm -rf x"]);
}

#[test]
fn quoting_does_not_hide_separators_or_commands() {
    assert_eq!(cmds(r#"echo "a" ; rm x"#), ["echo a", "rm x"]);
    assert_eq!(cmds(r#"echo "a ; rm x""#), ["echo a ; rm x"]);
    assert_eq!(cmds("echo 'a && b'"), ["echo a && b"]);
    assert_eq!(cmds(r"echo a\;rm x"), ["echo a;rm x"]);
    assert_eq!(cmds(r#"'r'"m" x"#), ["rm x"]);
    assert_eq!(cmds(r"\rm x"), ["rm x"]);
    assert_eq!(cmds(r"r\m x"), ["rm x"]);
    assert_eq!(cmds(r"$'\x72\155' x"), ["rm x"]);
    assert_eq!(cmds("r\\\nm x"), ["rm x"]);
}

/// Inside double quotes `$'` and `$"` are a literal `$` and a quote character, as
/// bash reads them: treating them as quote openers would hide what follows.
#[test]
fn dollar_quotes_inside_double_quotes_are_literal() {
    assert_eq!(
        cmds(r#"echo "$'"; rm dq1; echo "'""#),
        ["echo $'", "rm dq1", "echo '"]
    );
    assert_eq!(cmds(r#"echo "$"; rm x"#), ["echo $", "rm x"]);
    assert_eq!(cmds(r#"echo "a$"b"c""#), ["echo a$bc"]);
    assert_eq!(cmds("echo $'a b'"), ["echo a b"]);
}

#[test]
fn substitutions_are_commands_too() {
    assert_eq!(sorted(cmds("echo $(rm x)")), ["echo $(rm x)", "rm x"]);
    assert_eq!(sorted(cmds("echo `rm x`")), ["echo `rm x`", "rm x"]);
    assert_eq!(sorted(cmds(r#"echo "$(rm x)""#)), ["echo $(rm x)", "rm x"]);
    assert_eq!(sorted(cmds(r#"echo "`rm x`""#)), ["echo `rm x`", "rm x"]);
    assert_eq!(
        sorted(cmds("echo ${a:-$(rm x)}")),
        ["echo ${a:-$(rm x)}", "rm x"]
    );
    assert_eq!(sorted(cmds("echo $(( $(rm x) + 1 ))")).len(), 2);
    assert_eq!(sorted(cmds("echo $(a $(rm x))")).len(), 3);
    assert_eq!(
        sorted(cmds(r"echo `a \`rm x\``")),
        ["a `rm x`", "echo `a \\`rm x\\``", "rm x"]
    );
    assert_eq!(cmds("echo $((1 + 2))"), ["echo $((1 + 2))"]);
}

#[test]
fn subshells_groups_and_process_substitution() {
    assert_eq!(cmds("(rm x)"), ["rm x"]);
    assert_eq!(cmds("(cd a && rm x)"), ["cd a", "rm x"]);
    assert_eq!(cmds("{ rm x; }"), ["rm x"]);
    assert_eq!(sorted(cmds("diff <(rm x) >(cat)")), ["cat", "diff", "rm x"]);
    assert_eq!(cmds("if true; then rm x; fi"), ["true", "rm x"]);
    assert_eq!(cmds("for f in a b; do rm $f; done"), ["rm $f"]);
    assert_eq!(cmds("while true; do rm x; done"), ["true", "rm x"]);
    assert_eq!(cmds("! rm x"), ["rm x"]);
}

#[test]
fn redirections_and_assignments_are_not_the_command() {
    assert_eq!(cmds("> out rm x"), ["rm x"]);
    assert_eq!(cmds("FOO=1 BAR='a b' rm x 2>&1 >/dev/null"), ["rm x"]);
    assert_eq!(cmds("cargo test &> log"), ["cargo test"]);
    assert_eq!(cmds("cat <<< 'word' x"), ["cat x"]);
    assert_eq!(sorted(cmds("cat > $(rm x)")), ["cat", "rm x"]);
    assert_eq!(cmds("echo a # ; rm x"), ["echo a"]);
    assert_eq!(cmds("echo a#b"), ["echo a#b"]);
}

#[test]
fn heredocs() {
    assert_eq!(cmds("cat <<EOF > f\nrm x\nEOF\nls"), ["cat", "ls"]);
    assert_eq!(sorted(cmds("cat <<EOF\n$(rm x)\nEOF\n")), ["cat", "rm x"]);
    assert_eq!(cmds("cat <<'EOF'\n$(rm x)\nEOF\n"), ["cat"]);
    assert_eq!(cmds("cat <<-EOF\n\trm x\n\tEOF\nls"), ["cat", "ls"]);
}

#[test]
fn unparseable_commands_are_errors() {
    for bad in [
        "echo 'a",
        "echo \"a",
        "echo $(rm x",
        "echo `rm x",
        "echo ${a",
        "echo a)",
        "(echo a",
        "echo $((1",
        "cat <<",
        "echo $'a",
    ] {
        assert!(split_commands(bad).is_err(), "{bad:?}");
    }
    let deep = format!("{}x{}", "$(".repeat(1000), ")".repeat(1000));
    let e = split_commands(&deep).unwrap_err();
    assert!(e.contains("nested"), "{e}");
}

/// A definition's body is commands, in all three syntaxes and with any compound
/// body; the name is a definition, not a command.
#[test]
fn function_bodies_are_commands() {
    for (src, body, name) in [
        ("function g { rm -f x; }; g", vec!["rm -f x", "g"], "g"),
        ("function g() { rm -f x; }; g", vec!["rm -f x", "g"], "g"),
        ("function g () ( rm -f x ); g", vec!["rm -f x", "g"], "g"),
        ("g() { rm -f x; }", vec!["rm -f x"], "g"),
        ("g ( ) ( rm -f x )", vec!["rm -f x"], "g"),
        ("g() if true; then rm x; fi", vec!["true", "rm x"], "g"),
        ("function g\n{\nrm x\n}", vec!["rm x"], "g"),
        ("{ g() { rm x; }; }", vec!["rm x"], "g"),
        (
            "echo $(g() { rm x; }; g)",
            vec!["echo $(g() { rm x; }; g)", "rm x", "g"],
            "g",
        ),
    ] {
        let script = parse(src).unwrap();
        let got: Vec<String> = script.commands.iter().map(|w| w.join(" ")).collect();
        assert_eq!(
            sorted(got),
            sorted(body.iter().map(|s| s.to_string()).collect()),
            "{src:?}"
        );
        assert_eq!(script.defines, [name], "{src:?}");
    }
    assert!(parse("a=(1 2); echo a ()").unwrap().defines.is_empty());
    assert!(parse("(echo a)").unwrap().defines.is_empty());
}

#[test]
fn case_patterns_are_not_commands_and_bodies_are() {
    assert_eq!(
        cmds("case $x in a|b) rm x;; (c) ls ;& *) echo $(pwd) ;;& esac; echo after"),
        ["rm x", "ls", "pwd", "echo $(pwd)", "echo after"]
    );
    assert_eq!(cmds("case x in\n  x)\n    rm x\n    ;;\nesac"), ["rm x"]);
    assert_eq!(cmds("case x in x) rm x\nesac\nls"), ["rm x", "ls"]);
    assert_eq!(
        cmds("case a in a) case b in b) rm x;; esac;; esac"),
        ["rm x"]
    );
    assert_eq!(sorted(cmds("echo $(case x in x) rm x;; esac)")).len(), 2);
    assert_eq!(
        sorted(cmds("case $(rm x) in $(ls)) :;; esac")),
        [":", "ls", "rm x"]
    );
    for bad in [
        "case x in x) rm x;;",
        "case x in",
        "case x in @(a|b)) rm x;; esac",
        "echo $(case x in x) rm x)",
    ] {
        assert!(split_commands(bad).is_err(), "{bad:?}");
    }
}

/// `((` where a command starts is arithmetic when it closes with `))`: `<<` in it
/// is a shift, not a heredoc swallowing the lines after it.
#[test]
fn arithmetic_commands() {
    assert_eq!(cmds("(( x = 1 << 2 ))\nrm x"), ["(( x = 1 << 2 ))", "rm x"]);
    assert_eq!(
        cmds("while (( i < 2 )); do rm x; done"),
        ["(( i < 2 ))", "rm x"]
    );
    assert_eq!(
        cmds("for ((i=0; i<2; i++)); do rm x; done"),
        ["(( i=0; i<2; i++ ))", "rm x"]
    );
    assert_eq!(sorted(cmds("(( $(rm x) ))")), ["(( $(rm x) ))", "rm x"]);
    // Not closed by `))`: nested subshells, as bash reads it.
    assert_eq!(cmds("((rm x) ; ls)"), ["rm x", "ls"]);
    assert_eq!(sorted(cmds("echo \"$((rm x); ls)\"")).len(), 3);
    // Where a body starts, too (found by the generator: `<<` hid the call after it).
    assert_eq!(
        cmds("function f { (( v = 1 << 2 )); }\nf"),
        ["(( v = 1 << 2 ))", "f"]
    );
    assert_eq!(
        cmds("coproc { (( v = 1 << 2 )); }\nrm x"),
        ["(( v = 1 << 2 ))", "rm x"]
    );
    assert_eq!(cmds("coproc { case a in a) rm x;; esac; }"), ["rm x"]);
}

#[test]
fn coproc_and_time_run_their_command() {
    assert_eq!(cmds("coproc rm x"), ["rm x"]);
    assert_eq!(cmds("coproc NAME { rm x; }"), ["rm x"]);
    assert_eq!(cmds("coproc ( rm x )"), ["rm x"]);
    assert_eq!(cmds("time -p rm x"), ["rm x"]);
    assert_eq!(cmds("time rm x | ls"), ["rm x", "ls"]);
}

/// Code in arguments is commands too: `eval`, `trap`, `alias`, a shell's `-c`.
#[test]
fn code_in_arguments_is_commands() {
    assert_eq!(cmds("eval 'rm x; ls'"), ["eval rm x; ls", "rm x", "ls"]);
    assert_eq!(
        cmds("eval eval rm x"),
        ["eval eval rm x", "eval rm x", "rm x"]
    );
    assert_eq!(
        cmds("builtin eval -- \"rm x\""),
        ["builtin eval -- rm x", "rm x"]
    );
    assert_eq!(cmds("eval \"$cmd\""), ["eval $cmd", "$cmd"]);
    assert_eq!(cmds("trap 'rm x' EXIT"), ["trap rm x EXIT", "rm x"]);
    assert_eq!(cmds("trap - EXIT"), ["trap - EXIT"]);
    assert_eq!(cmds("bash -c 'rm x' argv0"), ["bash -c rm x argv0", "rm x"]);
    assert_eq!(
        cmds("/bin/sh -ec -- 'rm x'"),
        ["/bin/sh -ec -- rm x", "rm x"]
    );
    assert_eq!(cmds("bash script.sh"), ["bash script.sh"]);
    assert_eq!(
        cmds("sudo -u x bash -c 'rm x'"),
        ["sudo -u x bash -c rm x", "rm x"]
    );
    assert_eq!(cmds("env A=1 sh -c 'rm x'"), ["env A=1 sh -c rm x", "rm x"]);
    let s = parse("alias ls='rm x' ll=ls; enable -n echo").unwrap();
    let got: Vec<String> = s.commands.iter().map(|w| w.join(" ")).collect();
    assert_eq!(got, ["alias ls=rm x ll=ls", "rm x", "ls", "enable -n echo"]);
    assert_eq!(s.defines, ["ls", "ll", "echo"]);
    assert!(split_commands("eval \"echo 'a\"").is_err());
    let deep = format!("{}rm x", "eval ".repeat(100));
    assert!(split_commands(&deep).unwrap_err().contains("nested"));
}

#[test]
fn empty_and_comment_only() {
    assert!(cmds("").is_empty());
    assert!(cmds("  # just a comment").is_empty());
}

fn opaque(src: &str) -> Vec<String> {
    parse(src)
        .unwrap_or_else(|e| panic!("{src:?}: {e}"))
        .opaque
        .into_iter()
        .map(|o| o.command)
        .collect()
}

/// Issue 43's differential found these: a shell fed its script as a here-document or
/// here-string, `find -exec`, `env -S`. What they run is a command like any other.
#[test]
fn code_a_shell_reads_from_a_heredoc_or_herestring_is_commands() {
    assert_eq!(cmds("bash <<'EOF'\nrm -f f\nEOF"), ["bash", "rm -f f"]);
    assert_eq!(cmds("bash <<EOF\nrm -f f\nEOF\n"), ["bash", "rm -f f"]);
    assert_eq!(cmds("sh -s <<-EOF\n\trm -f f\n\tEOF"), ["sh -s", "rm -f f"]);
    assert_eq!(cmds("bash <<< 'rm -f f'"), ["bash", "rm -f f"]);
    assert_eq!(
        cmds("sh -s -- a b <<<\"rm -f f\""),
        ["sh -s -- a b", "rm -f f"]
    );
    assert_eq!(cmds("dash - <<< 'rm -f f'"), ["dash -", "rm -f f"]);
    assert_eq!(cmds("nohup bash <<< 'rm f'"), ["nohup bash", "rm f"]);
    assert_eq!(
        cmds("source /dev/stdin <<< 'rm f'"),
        ["source /dev/stdin", "rm f"]
    );
    // Unquoted, the shell removes the backslash before `$`: the script has `$(rm f)`.
    assert_eq!(
        sorted(cmds("bash <<EOF\necho \\$(rm f)\nEOF")),
        ["bash", "echo $(rm f)", "rm f"]
    );
    // Two heredocs on two commands of one line: each body is its own command's input.
    assert_eq!(
        cmds("cat <<A; bash <<'B'\nhello\nA\nrm f\nB"),
        ["cat", "bash", "rm f"]
    );
    // Not a shell reading its input: the body is data.
    assert_eq!(cmds("cat <<'EOF'\nrm -f f\nEOF"), ["cat"]);
    assert_eq!(cmds("bash -c 'ls' <<< 'rm f'"), ["bash -c ls", "ls"]);
    assert_eq!(cmds("bash script.sh <<< 'rm f'"), ["bash script.sh"]);
    assert!(opaque("bash <<< 'rm f'").is_empty());
}

#[test]
fn find_exec_runs_a_command() {
    assert_eq!(
        cmds(r"find . -name '*.o' -exec rm -f {} \;"),
        ["find . -name *.o -exec rm -f {} ;", "rm -f {}"]
    );
    assert_eq!(
        cmds("find . -execdir git push {} + -ok rm {} ';'"),
        [
            "find . -execdir git push {} + -ok rm {} ;",
            "git push {}",
            "rm {}"
        ]
    );
    assert_eq!(
        cmds("nice find . -okdir sh -c 'rm x' \\;"),
        // Behind a wrapper every word may be the command: `sh -c` is found twice.
        [
            "nice find . -okdir sh -c rm x ;",
            "rm x",
            "sh -c rm x",
            "rm x"
        ]
    );
    assert_eq!(opaque(r"find . -exec {} \;"), ["{}"]);
}

#[test]
fn env_split_string_runs_a_command() {
    assert_eq!(
        cmds("env -S 'rm -f' f"),
        ["env -S rm -f f", "env rm -f 'f'"].map(|c| split_commands(c).unwrap()[0].join(" "))
    );
    for src in [
        "env -S 'git push' origin",
        "env -S'git' push origin",
        "env --split-string='git push' origin",
        "env --split-string 'A=1 git' push origin",
        "env -S 'git push' origin 2>/dev/null",
    ] {
        let all = split_commands(src).unwrap();
        assert!(
            all.iter()
                .any(|c| c.len() >= 3 && c[c.len() - 3..] == ["git", "push", "origin"]),
            "{src:?}: {all:?}"
        );
    }
}

#[test]
fn opaque_commands() {
    for (src, which) in [
        ("x=rm; $x -f f", "$x -f f"),
        ("$(echo rm) -f f", "$(echo rm) -f f"),
        ("`echo rm` -f f", "`echo rm` -f f"),
        ("\"${cmd}\" f", "${cmd} f"),
        ("eval \"$v\"", "$v"),
        ("curl -s x | bash", "bash"),
        ("curl -s x | sudo -E bash -x", "sudo -E bash -x"),
        ("bash < script", "bash"),
        ("sh -s < script", "sh -s"),
        ("bash <(curl x)", "bash"),
        ("source <(curl x)", "source"),
        (". /dev/stdin", ". /dev/stdin"),
        ("nohup $x f", "nohup $x f"),
        ("bash <<EOF\n$cmd f\nEOF", "$cmd f"),
        ("bash <<< \"$cmd\"", "$cmd"),
    ] {
        assert_eq!(opaque(src), [which], "{src:?}");
    }
    // Behind a wrapper any later word may be the program: over-approximated.
    assert_eq!(
        opaque("xargs -I{} sh -c '{}'"),
        ["xargs -I{} sh -c {}", "{}"]
    );
    for clear in [
        "rm -f $f",
        "echo $(ls)",
        "cargo test -- $ARGS",
        "bash script.sh",
        "bash -c 'ls'",
        "source ./env.sh",
        "bash -o pipefail script.sh",
        "env A=$x make",
        "echo bash",
        "which bash",
        "bash --rcfile x script.sh",
    ] {
        assert!(opaque(clear).is_empty(), "{clear:?}: {:?}", opaque(clear));
    }
}

/// Issue 43's differential: a line continuation between words made an empty word
/// (`git \⏎ push` was `git '' push`), so the prefix rule `Bash(git push:*)` missed it.
#[test]
fn a_line_continuation_between_words_is_no_word() {
    assert_eq!(
        split_commands("git \\\n  push origin").unwrap(),
        [["git", "push", "origin"]]
    );
    assert_eq!(
        split_commands("r\\\nm -rf \\\n x").unwrap(),
        [["rm", "-rf", "x"]]
    );
    assert_eq!(
        split_commands("sh \\\n <<< 'rm x'").unwrap(),
        [vec!["sh"], vec!["rm", "x"]]
    );
    assert_eq!(split_commands("echo '' x").unwrap(), [["echo", "", "x"]]);
}

/// `env -S` has no operators: `2>&1` in its string is an argument.
#[test]
fn env_split_string_has_no_operators() {
    let all = split_commands("env -S 'curl -s x 2>&1; rm y' z").unwrap();
    assert_eq!(all[1], ["env", "curl", "-s", "x", "2>&1;", "rm", "y", "z"]);
    assert_eq!(all.len(), 2);
}

/// Bash expands unquoted braces into words before it runs a command, so `{rm,-f,x}` runs
/// `rm -f x` (found by the differential's real corpus: `export HOMEBREW_{BREW,CORE}_…`).
#[test]
fn brace_expansion_is_the_words_bash_runs() {
    assert_eq!(cmds("{rm,-f,x}"), ["rm -f x"]);
    assert_eq!(cmds("git {push,origin,main}"), ["git push origin main"]);
    assert_eq!(cmds("r{m..m} -f x; {,} rm y"), ["rm -f x", "rm y"]);
    assert_eq!(cmds("export A_{B,C}_D"), ["export A_B_D A_C_D"]);
    assert_eq!(
        cmds("echo a{b,c{d,e}}f {1..3} {x..v} {01..10..4} {-1..1} {a}{b,c} {a{b,c}}"),
        ["echo abf acdf acef 1 2 3 x w v 01 05 09 -1 0 1 {a}b {a}c {ab} {ac}"]
    );
    // Quoted or escaped braces and commas, `${…}`, an assignment and a lone `{`: none.
    assert_eq!(
        cmds(r#"echo "{a,b}" '{a,b}' \{a,b} {a\,b,c} ${x:-{a,b}} {1..a}"#),
        [r#"echo {a,b} {a,b} {a,b} a,b c ${x:-{a,b}} {1..a}"#]
    );
    assert_eq!(cmds("A={x,y} ls; { rm z; }"), ["ls", "rm z"]);
    assert_eq!(cmds("$x{a,b}"), ["$xa $xb"]);
}

#[test]
fn a_brace_expansion_too_large_or_a_mark_character_is_refused() {
    assert!(parse("echo {1..100000}").is_ok());
    let e = parse("echo {1..100001}").unwrap_err();
    assert!(e.contains("brace expansion"), "{e}");
    let e = parse(&"{a,b}".repeat(17)).unwrap_err();
    assert!(e.contains("brace expansion"), "{e}");
    // The tokenizer marks unquoted braces with these noncharacters: never taken as braces.
    for src in ["\u{FDD0}rm\u{FDD1}\u{FDD2} x", "$'\\uFDD0'rm x"] {
        let e = parse(src).unwrap_err();
        assert!(e.contains("noncharacter"), "{src:?}: {e}");
    }
}

#[test]
fn nested_env_split_strings_are_checked_once_not_once_per_env() {
    // Each `env` word is a wrapper position; before, each one re-queued the `-S` script
    // holding every later word, and each script did the same: 2^n scripts (the fuzzer's
    // `shell_words` timeout, 234 bytes, ran for minutes).
    let src = "env env -S 'env -S rm' -f x ".repeat(12);
    let script = parse(&src).unwrap();
    assert!(script.commands.len() < 200, "{}", script.commands.len());
    // The innermost string still reaches the deny rules (behind its wrapper).
    assert!(
        script.commands.iter().any(|c| c.join(" ") == "env rm -f x"),
        "{:?}",
        script.commands
    );
}

#[test]
fn commands_that_multiply_past_the_work_budget_are_refused() {
    // Behind each `nohup`, every later `find` is a program position whose `-exec` runs
    // the rest again: 2^40 commands. The budget ends it with an error (a denial).
    let src = format!("{}rm x", "find . -exec nohup ".repeat(40));
    let e = parse(&src).unwrap_err();
    assert!(e.contains("MiB of nested commands"), "{e}");
    // A long plain line is over the budget too, and refused rather than half-checked.
    let e = parse(&"true; ".repeat(1 << 20)).unwrap_err();
    assert!(e.contains("MiB of nested commands"), "{e}");
    assert!(parse(&"true; ".repeat(1 << 16)).is_ok());
}
