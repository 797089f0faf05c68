//! A shell tokenizer for permission rules (SPEC §6): splits a Bash command into the
//! simple commands it would run, so that every one of them can be checked against the
//! rules. It is not a shell: it only needs to find command boundaries and words the way
//! bash would, erring towards *more* commands (a heredoc body is scanned for `$( )`), and
//! to fail on anything it cannot follow (an unclosed quote), so the policy can deny it.
//!
//! Understood: `'…'`, `"…"`, `$'…'` (escapes decoded), `$"…"`, backslashes and line
//! continuations; the separators `&&`, `||`, `;`, `;;`, `|`, `|&`, `&` and newlines;
//! command substitution `$( )` and backticks (also inside double quotes, `${ }` and
//! arithmetic), subshells `( )`, process substitution `<( )` / `>( )`, redirections
//! (dropped from the words, their targets still scanned), heredocs, comments; function
//! definitions (`function f`, `f()`: the body is commands, the name is recorded), `case`
//! patterns (not commands), arithmetic commands `(( ))` (kept as a command of their own),
//! `coproc` and `time -p` (the command after them), and code in arguments (`eval`,
//! `trap`, `alias`, `sh -c`). Brace expansion is done as bash does it (`{rm,-f,x}` is
//! the words `rm -f x`: decision 0112). Other expansions stay literal (`$HOME` stays
//! `$HOME`): a rule can match only what is written. `shell_words_bash_tests` checks all of it against
//! real bash.

/// Deepest nesting of substitutions and subshells followed; a hostile command nested
/// deeper is refused instead of overflowing the stack.
const MAX_NESTING: usize = 64;

/// Bytes of code and of commands one command line may make the parser read, what it runs
/// from its arguments (`eval`, `bash -c`, `env -S`, `find -exec`, here-documents) counted
/// each time: nesting that multiplies (234 bytes of `env env -S …` made billions) ends in
/// an error, which the policy turns into a denial, instead of a hang.
const MAX_WORK_BYTES: usize = 4 << 20;

/// Words that open or close a compound command; stripped from the front of a command
/// so that `{ rm x; }` and `if true; then rm x; fi` are checked as `rm x`.
const RESERVED_PREFIXES: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time",
    "esac",
];

/// Reserved words whose command is not a command: `for x in a b` runs nothing itself
/// (the substitutions in it are extracted on their own).
const NON_COMMANDS: &[&str] = &["for", "select", "case"];

/// What a command line would run: its simple commands, and the names it (re)defines as
/// functions. A definition matters beyond its body: after `cargo() { …; }`, `cargo test`
/// runs the body, not cargo, so the policy must know a name no longer means its command.
#[derive(Debug, Default)]
pub(crate) struct Script {
    /// Each simple command's words (redirections removed, leading reserved words and
    /// `NAME=value` assignments stripped). A function's body is here like any command, and
    /// so are the commands a command runs from its arguments or its input: a shell's `-c`
    /// script or here-document, `eval`'s words, `find -exec`'s command, `env -S`'s string.
    pub(crate) commands: Vec<Vec<String>>,
    /// Every name defined as a function or alias, or `enable`d, in order.
    pub(crate) defines: Vec<String>,
    /// Every variable assigned before a command or on its own (`PATH=x cargo test`,
    /// `PATH=x; cargo test`): it may change what a later command runs.
    pub(crate) assigns: Vec<String>,
    /// The commands whose program is known only when they run (see `Opaque`).
    pub(crate) opaque: Vec<Opaque>,
    /// Bytes of code parsed so far, nested code included (see `MAX_WORK_BYTES`).
    work: usize,
}

/// A command the policy cannot see through: what it runs is decided when it runs, so no
/// rule naming a command can vouch for it or rule it out. Its name is an expansion
/// (`$x -f f`, `$(echo rm) -f f`, `"${cmd}"`, a `find`/`xargs` placeholder `{}`), also
/// behind a wrapper (`nohup $x`); or it is a shell or `source` reading its commands from
/// standard input or a descriptor (`… | bash`, `bash < f`, `sh -s`, `source /dev/stdin`,
/// `bash <(curl …)`), unless that input is a here-document or here-string, whose text is
/// then checked as commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opaque {
    /// The command's words joined by spaces, as `commands` holds them.
    pub(crate) command: String,
    /// Why it is opaque, for the message the model gets.
    pub(crate) why: &'static str,
}

/// Splits `src` into simple commands (see `Script::commands`); errors as `parse`.
#[cfg(test)]
pub(crate) fn split_commands(src: &str) -> Result<Vec<Vec<String>>, String> {
    Ok(parse(src)?.commands)
}

/// The simple commands and function definitions of `src`. Err: why it cannot be parsed
/// (an unclosed quote, substitution or `case`, an unexpected `)`, nesting too deep).
pub(crate) fn parse(src: &str) -> Result<Script, String> {
    let mut script = Script::default();
    parse_into(src, 0, &mut script)?;
    Ok(script)
}

/// `parse` of a script nested `depth` levels deep (in substitutions, or in the code an
/// `eval` runs), added to `script`.
fn parse_into(src: &str, depth: usize, script: &mut Script) -> Result<(), String> {
    spend(script, src.len())?;
    if src.chars().any(is_brace_mark) {
        return Err(noncharacter());
    }
    let mut p = Parser::new(src, depth);
    p.parse_list(false)?;
    if let Some(why) = p.refused.take() {
        return Err(why);
    }
    script.defines.append(&mut p.defines);
    for raw in p.out {
        let Some(words) = normalize(raw.words, &mut script.defines, &mut script.assigns) else {
            continue;
        };
        add_command(words, &raw.stdin, depth, script)?;
    }
    Ok(())
}

/// Counts `bytes` of code against the line's budget (`MAX_WORK_BYTES`).
fn spend(script: &mut Script, bytes: usize) -> Result<(), String> {
    script.work += bytes;
    if script.work > MAX_WORK_BYTES {
        return Err(format!(
            "it runs more than {} MiB of nested commands (`eval`, `env -S`, `find -exec`, \
             shells' scripts)",
            MAX_WORK_BYTES >> 20
        ));
    }
    Ok(())
}

/// Adds one simple command to `script`, with what it runs from its arguments or from
/// `stdin` (the text of its here-documents and here-strings), and whether it is opaque.
fn add_command(
    words: Vec<String>,
    stdin: &[String],
    depth: usize,
    script: &mut Script,
) -> Result<(), String> {
    spend(script, words.iter().map(|w| w.len() + 1).sum())?;
    let found = code_in(&words, stdin, &mut script.defines);
    if let Some(why) = found.opaque {
        script.opaque.push(Opaque {
            command: words.join(" "),
            why,
        });
    }
    script.commands.push(words);
    if (!found.scripts.is_empty() || !found.argvs.is_empty()) && depth + 1 > MAX_NESTING {
        return Err(format!(
            "nested more than {MAX_NESTING} levels deep (`eval`, substitutions)"
        ));
    }
    for code in &found.scripts {
        parse_into(code, depth + 1, script)?;
    }
    for argv in found.argvs {
        add_command(argv, &[], depth + 1, script)?;
    }
    Ok(())
}

/// Shells whose `-c` argument is a script (`bash -c 'rm x'` runs `rm x`).
const SHELLS: &[&str] = &["bash", "sh", "dash", "ash", "ksh", "mksh", "zsh"];

/// Commands that run the command named by their later words (`nohup rm x` runs `rm x`).
/// Their options may take arguments (`nice -n 5`, `sudo -u x`), so rather than know each
/// one, any later word may be the command: deny rules try each, and an expansion in any
/// of them makes the command opaque.
pub(crate) const WRAPPERS: &[&str] = &[
    "command", "builtin", "exec", "nohup", "time", "env", "sudo", "doas", "nice", "ionice",
    "timeout", "stdbuf", "setsid", "chrt", "taskset", "strace", "ltrace", "watch", "flock",
    "unbuffer", "xargs", "coproc",
];

/// `find` actions whose words up to `;` or `+` are a command it runs.
const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

/// Paths through which a shell or `source` reads its standard input as a script.
fn is_stdin_path(path: &str) -> bool {
    path == "-"
        || path == "/dev/stdin"
        || path.starts_with("/dev/fd/")
        || (path.starts_with("/proc/") && path.contains("/fd/"))
}

/// The last path component (`/bin/rm` is `rm`).
pub(crate) fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// What a command runs besides itself: `scripts` to be parsed as commands, `argvs` run
/// as they are (`find -exec`), and why it is opaque, if it is.
#[derive(Default)]
struct Found {
    scripts: Vec<String>,
    argvs: Vec<Vec<String>>,
    opaque: Option<&'static str>,
}

/// Where a shell's script comes from.
enum ShellInput {
    /// `-c SCRIPT`.
    Code(String),
    /// Standard input (no script file, `-s`, `-`, `/dev/stdin`).
    Stdin,
    /// A script file (or `-c` without its script).
    File,
}

/// Reads a shell's arguments as bash does: options (`-o NAME` and `--rcfile FILE` take
/// one), then the `-c` script, else the script file, else standard input.
fn shell_input(args: &[String]) -> ShellInput {
    let (mut c, mut s) = (false, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            if matches!(long, "rcfile" | "init-file") {
                it.next();
            }
            continue;
        }
        if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            let flags = &a[1..];
            c |= a.starts_with('-') && flags.contains('c');
            s |= flags.contains('s');
            if flags.contains(['o', 'O']) {
                it.next();
            }
            continue;
        }
        return operand(a, c, s);
    }
    match it.next() {
        Some(a) => operand(a, c, s),
        None if c => ShellInput::File,
        None => ShellInput::Stdin,
    }
}

fn operand(a: &str, c: bool, s: bool) -> ShellInput {
    if c {
        ShellInput::Code(a.to_string())
    } else if s || is_stdin_path(a) {
        ShellInput::Stdin
    } else {
        ShellInput::File
    }
}

/// A word whose value is known only when the command runs: an expansion, or the `{}`
/// that `find -exec` and `xargs -I{}` replace.
fn is_expansion(word: &str) -> bool {
    word.contains(['$', '`']) || word == "{}"
}

/// The code a command runs from its arguments or input, to be checked as commands too:
/// `eval`'s words joined as bash joins them, a `trap`'s action, an alias's value, a
/// shell's `-c` script or here-document (behind a wrapper too), `env -S`'s string, `find
/// -exec`'s command. They are words as written (`eval "$x"` is the command `$x`, which
/// is opaque). `alias` and `enable` (which swaps a builtin for another or loads one from a
/// file) change what a name means, like a function: their names go to `defines`.
fn code_in(words: &[String], stdin: &[String], defines: &mut Vec<String>) -> Found {
    let mut found = Found::default();
    let mut k = 0;
    // `command` and `builtin` run the builtin named after them (`builtin eval …`).
    while k < words.len() && matches!(words[k].as_str(), "command" | "builtin") {
        k += 1;
        while k < words.len() && words[k].starts_with('-') {
            k += 1;
        }
    }
    let Some(name) = words.get(k) else {
        return found;
    };
    let mut args = &words[k + 1..];
    if args.first().is_some_and(|a| a == "--") {
        args = &args[1..];
    }
    match name.as_str() {
        "eval" => found.scripts.push(args.join(" ")),
        "trap" if args.len() >= 2 && !args[0].starts_with('-') => {
            found.scripts.push(args[0].clone());
        }
        "alias" => {
            for (n, value) in args.iter().filter_map(|a| a.split_once('=')) {
                defines.push(n.to_string());
                found.scripts.push(value.to_string());
            }
        }
        "enable" => defines.extend(args.iter().filter(|a| !a.starts_with('-')).cloned()),
        _ => {}
    }
    // The words that may be the program: the first, and after a wrapper any later one.
    let behind_wrapper = WRAPPERS.contains(&base_name(&words[0]));
    let positions = if behind_wrapper { 0..words.len() } else { 0..1 };
    let mut reads_stdin = false;
    let mut covered = false;
    for p in positions {
        let w = &words[p];
        if is_expansion(w) && !(p > 0 && (is_assignment(w) || w.starts_with('-'))) {
            found.opaque = Some(
                "its program is an expansion (a variable, a substitution, a `{}` \
                 placeholder), known only when it runs",
            );
        }
        let rest = &words[p + 1..];
        match base_name(w) {
            shell if SHELLS.contains(&shell) => match shell_input(rest) {
                ShellInput::Code(code) => found.scripts.push(code),
                ShellInput::Stdin => reads_stdin = true,
                ShellInput::File => {}
            },
            "source" | "." => {
                let file = rest.iter().find(|a| !a.starts_with('-'));
                if file.is_none_or(|f| is_stdin_path(f)) {
                    reads_stdin = true;
                }
            }
            "find" => {
                let mut i = 0;
                while i < rest.len() {
                    if FIND_EXEC.contains(&rest[i].as_str()) {
                        let argv: Vec<String> = rest[i + 1..]
                            .iter()
                            .take_while(|a| !matches!(a.as_str(), ";" | "+"))
                            .cloned()
                            .collect();
                        i += argv.len() + 1;
                        if !argv.is_empty() {
                            found.argvs.push(argv);
                        }
                    }
                    i += 1;
                }
            }
            "env" => {
                let mut i = 0;
                while i < rest.len() {
                    let a = rest[i].as_str();
                    let split = if matches!(a, "-S" | "--split-string") {
                        i += 1;
                        rest.get(i).map(String::as_str)
                    } else if let Some(s) = a.strip_prefix("--split-string=") {
                        Some(s)
                    } else {
                        a.strip_prefix("-S").filter(|s| !s.is_empty())
                    };
                    if let Some(s) = split {
                        // env splits the string into words and goes on with them and the
                        // words after it: `env -S 'git' push` runs `git push`.
                        let after: Vec<String> = rest[i + 1..].iter().map(|w| quote(w)).collect();
                        found.scripts.push(format!(
                            "env {} {}",
                            env_split_words(s),
                            after.join(" ")
                        ));
                        // That script holds every later word: a later `env` among them
                        // is its to check, not this one's again.
                        covered = true;
                        break;
                    }
                    i += 1;
                }
            }
            _ => {}
        }
        if !behind_wrapper || covered {
            break;
        }
    }
    if reads_stdin {
        if stdin.is_empty() {
            found.opaque = Some(
                "it is a shell or `source` reading its commands from standard input or a \
                 file descriptor (a pipe, a redirection, a process substitution)",
            );
        } else {
            found.scripts.extend(stdin.iter().cloned());
        }
    }
    found
}

/// `env -S`'s string as shell words: env splits it on blanks and honours quotes and
/// backslashes as the shell does, but has no operators, so `;&|<>()` are escaped
/// (`env -S 'rm x 2>y'` runs `rm` with the argument `2>y`).
fn env_split_words(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut quote = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\\') | (Some('"'), '\\') => {
                out.push(c);
                out.extend(chars.next());
                continue;
            }
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, ';' | '&' | '|' | '<' | '>' | '(' | ')' | '\n') => out.push('\\'),
            _ => {}
        }
        out.push(c);
    }
    out
}

/// `word` single-quoted for the shell (`it's` is `'it'\''s'`).
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Words after which a `coproc NAME` is followed by a compound command (the name is not
/// the command).
const COMPOUND_OPENERS: &[&str] = &["{", "while", "until", "if", "for", "select", "case", "[["];

/// Strips what is not the command itself from the front; `None` when nothing is left.
/// `function NAME` is a definition: the name goes to `defines`, and what follows (the
/// body's first command, after its `{` or `if` …) is a command like any other. `coproc`
/// and its name, and `time -p`, go too: what they run is the command.
fn normalize(
    mut words: Vec<String>,
    defines: &mut Vec<String>,
    assigns: &mut Vec<String>,
) -> Option<Vec<String>> {
    loop {
        let first = words.first()?;
        if NON_COMMANDS.contains(&first.as_str()) {
            return None;
        }
        if first == "function" {
            words.remove(0);
            if !words.is_empty() {
                defines.push(words.remove(0));
            }
        } else if first == "coproc" {
            words.remove(0);
            if words
                .get(1)
                .is_some_and(|w| COMPOUND_OPENERS.contains(&w.as_str()))
            {
                words.remove(0);
            }
        } else if first == "time" {
            words.remove(0);
            if words.first().is_some_and(|w| w == "-p") {
                words.remove(0);
            }
        } else if is_assignment(first) {
            let word = words.remove(0);
            let name = word.split_once('=').map_or(word.as_str(), |(n, _)| n);
            assigns.push(name.trim_end_matches('+').to_string());
        } else if RESERVED_PREFIXES.contains(&first.as_str()) {
            words.remove(0);
        } else {
            return Some(words);
        }
    }
}

/// `NAME=value` or `NAME+=value` (a variable assignment before the command).
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '[' || c == ']')
}

/// The command being read by one `parse_list`, and its open `case`s.
#[derive(Default)]
struct ListState {
    words: Vec<String>,
    word: Option<String>,
    /// The next word is a redirection target: scanned, then dropped.
    target_next: bool,
    /// The next word is a here-string (`<<<`): dropped from the words, kept as input.
    herestring_next: bool,
    /// The command's here-strings so far.
    stdin: Vec<String>,
    /// The ids of the heredocs the command opened (their bodies come after its line).
    docs: Vec<usize>,
    /// `case`s opened in this list and not yet closed by `esac`.
    open_cases: usize,
    /// A `case` pattern is due (after `case x in`, `;;`, `;&`, `;;&`), not a command.
    pattern_next: bool,
}

/// `words` from the command word on: leading reserved words (not `esac`, which closes a
/// `case`), `function NAME`, and `coproc` with the name of a compound one, skipped.
fn command_part(words: &[String]) -> &[String] {
    let mut k = 0;
    while let Some(w) = words.get(k).map(String::as_str) {
        k += match w {
            "function" => 2,
            "coproc"
                if words
                    .get(k + 2)
                    .is_some_and(|w| COMPOUND_OPENERS.contains(&w.as_str())) =>
            {
                2
            }
            "coproc" => 1,
            "esac" => break,
            _ if RESERVED_PREFIXES.contains(&w) => 1,
            _ => break,
        };
    }
    &words[k.min(words.len())..]
}

/// Whether a command starts after `words` (or `for`'s `((…))`).
fn starts_command(words: &[String]) -> bool {
    match command_part(words) {
        [] => true,
        [w] => w == "for",
        _ => false,
    }
}

struct Heredoc {
    /// Tells the heredocs of one command from another's.
    id: usize,
    /// The index in `Parser::out` of the command whose input it is, once that has ended.
    owner: Option<usize>,
    delimiter: String,
    /// A quoted delimiter: the body is literal, no substitution runs in it.
    quoted: bool,
    /// `<<-`: leading tabs of the body lines are stripped.
    strip_tabs: bool,
}

/// The marks of an unquoted `{`, `,` and `}` in a word being read: Unicode
/// noncharacters, which a command may not hold (`parse` refuses them).
const OPEN: char = '\u{FDD0}';
const COMMA: char = '\u{FDD1}';
const CLOSE: char = '\u{FDD2}';

/// Most words one word may brace-expand to, and most characters made on the way; a
/// larger expansion is refused (denied).
const MAX_BRACE_WORDS: usize = 100_000;
const MAX_BRACE_CHARS: usize = 4 << 20;

fn brace_mark(c: char) -> char {
    match c {
        '{' => OPEN,
        ',' => COMMA,
        _ => CLOSE,
    }
}

fn is_brace_mark(c: char) -> bool {
    matches!(c, OPEN | COMMA | CLOSE)
}

fn noncharacter() -> String {
    "the command holds a Unicode noncharacter (U+FDD0 to U+FDD2)".into()
}

/// `w` with its marks made the characters they mark.
fn unmark(w: &str) -> String {
    w.chars()
        .map(|c| match c {
            OPEN => '{',
            COMMA => ',',
            CLOSE => '}',
            c => c,
        })
        .collect()
}

/// The words bash makes of `w` by brace expansion (`{rm,-f,x}` is `rm -f x`,
/// `r{m..m}` is `rm`, `a{b,c}d` is `abd acd`): left to right, the first marked `{`
/// whose `}` closes a list with a top-level `,` or a sequence `x..y[..step]` (integers,
/// or single letters) is expanded, then each result again. An empty result is dropped,
/// as bash drops an empty unquoted word (`{,} rm x` runs `rm x`). Err past
/// `MAX_BRACE_WORDS` words or `MAX_BRACE_CHARS` characters.
fn brace_expand(w: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut todo = vec![(w.chars().collect::<Vec<char>>(), false)];
    let mut chars = 0;
    while let Some((word, expanded)) = todo.pop() {
        match expand_first(&word)? {
            Some(parts) => {
                chars += parts.iter().map(Vec::len).sum::<usize>();
                // Reversed onto the stack, so the results come out in order.
                todo.extend(parts.into_iter().rev().map(|p| (p, true)));
                if todo.len() + out.len() > MAX_BRACE_WORDS || chars > MAX_BRACE_CHARS {
                    return Err(format!(
                        "a brace expansion makes more than {MAX_BRACE_WORDS} words or \
                         {MAX_BRACE_CHARS} characters"
                    ));
                }
            }
            None => {
                let text = unmark(&word.iter().collect::<String>());
                if !(expanded && text.is_empty()) {
                    out.push(text);
                }
            }
        }
    }
    Ok(out)
}

/// The words of the first brace expansion in `word` (preamble, each alternative,
/// postscript), or None when it holds none.
fn expand_first(word: &[char]) -> Result<Option<Vec<Vec<char>>>, String> {
    let mut start = 0;
    while let Some(open) = word[start..]
        .iter()
        .position(|&c| c == OPEN)
        .map(|p| p + start)
    {
        start = open + 1;
        let mut depth = 0;
        let mut commas = Vec::new();
        let mut close = None;
        for (k, &c) in word.iter().enumerate().skip(open) {
            match c {
                OPEN => depth += 1,
                CLOSE => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                COMMA if depth == 1 => commas.push(k),
                _ => {}
            }
        }
        let Some(close) = close else {
            continue;
        };
        let (pre, post) = (&word[..open], &word[close + 1..]);
        let alternatives: Vec<Vec<char>> = if commas.is_empty() {
            let inner: String = word[open + 1..close].iter().collect();
            match sequence(&inner)? {
                Some(items) => items.into_iter().map(|s| s.chars().collect()).collect(),
                None => continue,
            }
        } else {
            let mut bounds = vec![open];
            bounds.extend(&commas);
            bounds.push(close);
            bounds
                .windows(2)
                .map(|b| word[b[0] + 1..b[1]].to_vec())
                .collect()
        };
        return Ok(Some(
            alternatives
                .into_iter()
                .map(|alt| [pre, &alt, post].concat())
                .collect(),
        ));
    }
    Ok(None)
}

/// The items of a sequence expression's inside (`1..5`, `a..e`, `01..10..3`), as bash
/// makes them (zero-padded to the wider end when either end is), or None when it is not
/// one; Err when it is longer than `MAX_BRACE_WORDS`.
fn sequence(inner: &str) -> Result<Option<Vec<String>>, String> {
    let Some((from, to, step, width, letters)) = sequence_bounds(inner) else {
        return Ok(None);
    };
    let count = (from.abs_diff(to) / step.unsigned_abs()).saturating_add(1);
    if count > MAX_BRACE_WORDS as u64 {
        return Err(format!(
            "a brace expansion makes more than {MAX_BRACE_WORDS} words"
        ));
    }
    let dir = if to >= from { step } else { -step };
    // Every item lies between the two ends: no overflow.
    Ok(Some(
        (0..count as i64)
            .map(|k| from + k * dir)
            .map(|v| match (letters, v < 0) {
                (true, _) => char::from_u32(v as u32).map_or_else(String::new, String::from),
                (false, true) => format!("-{:0w$}", v.unsigned_abs(), w = width.saturating_sub(1)),
                (false, false) => format!("{v:0width$}"),
            })
            .collect(),
    ))
}

/// A sequence expression's ends, step (positive), zero-padded width and whether its
/// ends are letters.
fn sequence_bounds(inner: &str) -> Option<(i64, i64, i64, usize, bool)> {
    let parts: Vec<&str> = inner.split("..").collect();
    let (a, b, step) = match parts.as_slice() {
        [a, b] => (*a, *b, 1i64),
        [a, b, s] => (*a, *b, s.parse::<i64>().ok()?.checked_abs()?.max(1)),
        _ => return None,
    };
    let letter = |s: &str| {
        let mut c = s.chars();
        match (c.next(), c.next()) {
            (Some(ch), None) if ch.is_ascii_alphabetic() => Some(ch as i64),
            _ => None,
        }
    };
    let (from, to, width, letters) = match (a.parse::<i64>(), b.parse::<i64>()) {
        (Ok(x), Ok(y)) => {
            let padded = |s: &str| {
                s.trim_start_matches('-').len() > 1 && s.trim_start_matches('-').starts_with('0')
            };
            let width = if padded(a) || padded(b) {
                a.len().max(b.len())
            } else {
                0
            };
            (x, y, width, false)
        }
        _ => (letter(a)?, letter(b)?, 0, true),
    };
    Some((from, to, step, width, letters))
}

/// A simple command as read, before `normalize`.
struct Raw {
    words: Vec<String>,
    /// The text of its here-strings and here-documents (a quoted heredoc's literally, an
    /// unquoted one's with the backslashes the shell removes removed).
    stdin: Vec<String>,
}

struct Parser {
    s: Vec<char>,
    i: usize,
    depth: usize,
    /// Every simple command found.
    out: Vec<Raw>,
    /// Names defined with `NAME()` (those defined with `function NAME` are found by
    /// `normalize`).
    defines: Vec<String>,
    heredocs: Vec<Heredoc>,
    /// Why the command cannot be followed, found where no `Result` is returned (a brace
    /// expansion too large, a noncharacter the tokenizer uses as a mark).
    refused: Option<String>,
    /// The id of the next heredoc.
    next_doc: usize,
}

/// Characters that end an unquoted word.
fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
    )
}

impl Parser {
    fn new(src: &str, depth: usize) -> Self {
        Parser {
            s: src.chars().collect(),
            i: 0,
            depth,
            out: Vec::new(),
            defines: Vec::new(),
            heredocs: Vec::new(),
            next_doc: 0,
            refused: None,
        }
    }

    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn peek_at(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn nest(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(format!(
                "nested more than {MAX_NESTING} levels deep (substitutions, subshells)"
            ));
        }
        Ok(())
    }

    /// Parses commands until the end of input, or (`in_parens`) the matching `)`.
    fn parse_list(&mut self, in_parens: bool) -> Result<(), String> {
        let mut st = ListState::default();
        loop {
            if st.pattern_next && st.word.is_none() && st.words.is_empty() {
                st.pattern_next = false;
                if self.case_pattern()? {
                    st.open_cases -= 1;
                }
                continue;
            }
            let Some(c) = self.peek() else {
                if in_parens {
                    return Err("a `(` or `$(` is never closed".into());
                }
                self.finish_word(&mut st);
                self.end_command(&mut st);
                if st.open_cases > 0 || st.pattern_next {
                    return Err("a `case` is never closed by `esac`".into());
                }
                return Ok(());
            };
            match c {
                ' ' | '\t' => {
                    self.finish_word(&mut st);
                    self.i += 1;
                }
                '\n' => {
                    self.finish_word(&mut st);
                    self.end_command(&mut st);
                    self.i += 1;
                    self.read_heredoc_bodies()?;
                }
                '&' if self.peek_at(1) == Some('>') => {
                    self.finish_word(&mut st);
                    self.i += if self.peek_at(2) == Some('>') { 3 } else { 2 };
                    st.target_next = true;
                }
                ';' | '&' | '|' => {
                    self.finish_word(&mut st);
                    self.end_command(&mut st);
                    let start = self.i;
                    self.i += 1;
                    while matches!(self.peek(), Some(';' | '&' | '|')) {
                        self.i += 1; // `&&`, `||`, `;;`, `|&`, `;;&`
                    }
                    let op: String = self.s[start..self.i].iter().collect();
                    // A `case` item ends: a pattern comes next, not a command.
                    if st.open_cases > 0 && matches!(op.as_str(), ";;" | ";&" | ";;&") {
                        st.pattern_next = true;
                    }
                }
                '(' => {
                    self.finish_word(&mut st);
                    if st.pattern_next {
                        continue; // `case x in(a)`: the pattern's `(`
                    }
                    if let Some(name) = self.function_name(&st.words) {
                        // `NAME ()`: a definition, not a call; the body that follows
                        // (`{ …; }`, `( … )`, `if …`) is parsed as commands.
                        self.defines.push(name);
                        st.words.clear();
                        continue;
                    }
                    if self.peek_at(1) == Some('(')
                        && starts_command(&st.words)
                        && self.arithmetic_command()?
                    {
                        self.end_command(&mut st);
                        continue;
                    }
                    // A subshell, an array `a=(…)`: the inside is checked as commands.
                    self.end_command(&mut st);
                    self.i += 1;
                    self.nest()?;
                    self.parse_list(true)?;
                    self.depth -= 1;
                }
                ')' => {
                    if !in_parens {
                        return Err("an unexpected `)`".into());
                    }
                    self.finish_word(&mut st);
                    self.end_command(&mut st);
                    if st.open_cases > 0 || st.pattern_next {
                        return Err("a `case` is never closed by `esac`".into());
                    }
                    self.i += 1;
                    return Ok(());
                }
                '<' | '>' => {
                    // A leading fd number (`2>`) or `{var}` belongs to the operator.
                    if st.word.as_deref().is_some_and(|w| {
                        w.chars().all(|c| c.is_ascii_digit()) || w.starts_with(OPEN)
                    }) {
                        st.word = None;
                    } else {
                        self.finish_word(&mut st);
                    }
                    self.redirection(c, &mut st)?;
                }
                '#' if st.word.is_none() => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                // A line continuation joins a word's halves (`r\⏎m`) but starts no
                // word: `git \⏎  push` is `git push`, not `git '' push`.
                '\\' if self.peek_at(1) == Some('\n') => self.i += 2,
                _ => {
                    let w = st.word.get_or_insert_with(String::new);
                    self.word_piece(w)?;
                }
            }
        }
    }

    /// Ends the word being read: a redirection's target is dropped, anything else joins
    /// the command. `case WORD in` ends that command (a pattern follows), and `esac`
    /// where a command starts closes a `case`.
    fn finish_word(&mut self, st: &mut ListState) {
        let Some(w) = st.word.take() else {
            return;
        };
        if st.target_next {
            st.target_next = false;
            if std::mem::take(&mut st.herestring_next) {
                st.stdin.push(unmark(&w));
            }
            return;
        }
        // Bash does not brace-expand an assignment (`A={x,y}` is that text).
        if is_assignment(&unmark(&w)) {
            st.words.push(unmark(&w));
        } else {
            match brace_expand(&w) {
                Ok(words) => st.words.extend(words),
                Err(e) => {
                    self.refused.get_or_insert(e);
                }
            }
        }
        let cmd: Vec<&str> = command_part(&st.words).iter().map(String::as_str).collect();
        match cmd.as_slice() {
            ["esac"] if st.open_cases > 0 => st.open_cases -= 1,
            ["case", _, "in"] => {
                self.end_command(st);
                st.open_cases += 1;
                st.pattern_next = true;
            }
            _ => {}
        }
    }

    /// Where a `case` pattern is due: skips blanks, newlines and comments, then reads
    /// `(a | b)` up to its `)` (substitutions in it are commands), or `esac`: then true.
    fn case_pattern(&mut self) -> Result<bool, String> {
        const UNCLOSED: &str = "a `case` is never closed by `esac`";
        loop {
            match self.peek() {
                None => return Err(UNCLOSED.into()),
                Some(' ' | '\t') => self.i += 1,
                Some('\n') => {
                    self.i += 1;
                    self.read_heredoc_bodies()?;
                }
                Some('#') => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                Some(_) => break,
            }
        }
        let esac: Vec<char> = "esac".chars().collect();
        if self.s[self.i..].starts_with(&esac) && self.peek_at(4).is_none_or(is_meta) {
            self.i += 4;
            return Ok(true);
        }
        if self.peek() == Some('(') {
            self.i += 1;
        }
        loop {
            match self.peek() {
                None => return Err(UNCLOSED.into()),
                Some(')') => {
                    self.i += 1;
                    return Ok(false);
                }
                Some(' ' | '\t' | '|') => self.i += 1,
                Some('(') => {
                    return Err("a `case` pattern with `(` (extglob) is not followed".into());
                }
                Some(c) if is_meta(c) => {
                    return Err(format!(
                        "an unexpected `{}` in a `case` pattern",
                        c.escape_default()
                    ));
                }
                Some(_) => {
                    let mut sink = String::new();
                    self.word_piece(&mut sink)?;
                }
            }
        }
    }

    /// At `((` where a command starts: an arithmetic command when the parentheses close
    /// as `))`, as bash decides (`((a) ; b)` is two subshells). It runs nothing itself but
    /// the substitutions in it; it is kept as a command `(( … ))` all the same, since a
    /// variable in it may hold code (`a[$(…)]`), so an allow list refuses it unless named.
    /// Read as arithmetic, `<<` is a shift, not a heredoc hiding the lines after it.
    /// False (nothing consumed): a subshell.
    fn arithmetic_command(&mut self) -> Result<bool, String> {
        let (start, out, defines, heredocs) = (
            self.i,
            self.out.len(),
            self.defines.len(),
            self.heredocs.len(),
        );
        self.i += 2;
        self.nest()?;
        let r = self.arithmetic();
        self.depth -= 1;
        if r.is_err() {
            self.i = start;
            self.out.truncate(out);
            self.defines.truncate(defines);
            self.heredocs.truncate(heredocs);
            return Ok(false);
        }
        let inner: String = self.s[start + 2..self.i - 2].iter().collect();
        self.out.push(Raw {
            words: vec!["((".into(), inner.trim().to_string(), "))".into()],
            stdin: Vec::new(),
        });
        Ok(true)
    }

    /// At `(`: the name when it opens the `()` of a definition (`f ()`, `function f()`,
    /// after reserved words such as `{`), which is then skipped; else `None`.
    fn function_name(&mut self, words: &[String]) -> Option<String> {
        let mut k = 1;
        while matches!(self.peek_at(k), Some(' ' | '\t')) {
            k += 1;
        }
        if self.peek_at(k) != Some(')') {
            return None;
        }
        let mut rest = words
            .iter()
            .skip_while(|w| RESERVED_PREFIXES.contains(&w.as_str()));
        let mut name = rest.next()?;
        if name == "function" {
            name = rest.next()?;
        }
        if rest.next().is_some() || is_assignment(name) {
            return None;
        }
        self.i += k + 1;
        Some(name.clone())
    }

    /// Ends the command being read; its heredocs now know whose input they are.
    fn end_command(&mut self, st: &mut ListState) {
        let docs = std::mem::take(&mut st.docs);
        let stdin = std::mem::take(&mut st.stdin);
        if st.words.is_empty() {
            return;
        }
        let index = self.out.len();
        for doc in self.heredocs.iter_mut().filter(|d| docs.contains(&d.id)) {
            doc.owner = Some(index);
        }
        self.out.push(Raw {
            words: std::mem::take(&mut st.words),
            stdin,
        });
    }

    /// At `<` or `>`: the operator; process substitution is parsed as commands; a heredoc
    /// is queued for the next newline; otherwise the next word is the target.
    fn redirection(&mut self, c: char, st: &mut ListState) -> Result<(), String> {
        if self.peek_at(1) == Some('(') {
            self.i += 2;
            self.nest()?;
            self.parse_list(true)?;
            self.depth -= 1;
            return Ok(());
        }
        self.i += 1;
        if c == '<' && self.peek() == Some('<') {
            self.i += 1;
            if self.peek() == Some('<') {
                self.i += 1; // `<<<` here-string: the next word is data
                st.target_next = true;
                st.herestring_next = true;
                return Ok(());
            }
            let strip_tabs = self.peek() == Some('-');
            if strip_tabs {
                self.i += 1;
            }
            st.docs.push(self.next_doc);
            return self.heredoc_delimiter(strip_tabs);
        }
        if matches!(self.peek(), Some('>' | '&' | '|')) || (c == '<' && self.peek() == Some('>')) {
            self.i += 1; // `>>`, `>&`, `<&`, `>|`, `<>`
        }
        st.target_next = true;
        Ok(())
    }

    fn heredoc_delimiter(&mut self, strip_tabs: bool) -> Result<(), String> {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.i += 1;
        }
        let mut delimiter = String::new();
        let mut quoted = false;
        while let Some(c) = self.peek() {
            if is_meta(c) {
                break;
            }
            match c {
                '\'' | '"' => {
                    quoted = true;
                    self.i += 1;
                    loop {
                        match self.peek() {
                            None => {
                                return Err("a heredoc delimiter's quote is never closed".into());
                            }
                            Some(q) if q == c => break,
                            Some(ch) => delimiter.push(ch),
                        }
                        self.i += 1;
                    }
                }
                '\\' => {
                    quoted = true;
                    if let Some(n) = self.peek_at(1) {
                        delimiter.push(n);
                        self.i += 1;
                    }
                }
                _ => delimiter.push(c),
            }
            self.i += 1;
        }
        if delimiter.is_empty() {
            return Err("a heredoc (`<<`) has no delimiter".into());
        }
        self.heredocs.push(Heredoc {
            id: self.next_doc,
            owner: None,
            delimiter,
            quoted,
            strip_tabs,
        });
        self.next_doc += 1;
        Ok(())
    }

    /// After a newline: the bodies of the heredocs queued on the line just ended. An
    /// unquoted body is scanned for substitutions, which bash would run.
    fn read_heredoc_bodies(&mut self) -> Result<(), String> {
        for doc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            loop {
                if self.peek().is_none() {
                    break; // bash ends the body at end of input (with a warning)
                }
                let start = self.i;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.i += 1;
                }
                let line: String = self.s[start..self.i].iter().collect();
                if self.peek() == Some('\n') {
                    self.i += 1;
                }
                let cmp = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if cmp == doc.delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            let text = if doc.quoted {
                body
            } else {
                let mut sub = Parser::new(&body, self.depth);
                sub.nest()?;
                let mut text = String::new();
                sub.double_quoted(&mut text, false)?;
                self.out.append(&mut sub.out);
                self.defines.append(&mut sub.defines);
                text
            };
            if let Some(raw) = doc.owner.and_then(|k| self.out.get_mut(k)) {
                raw.stdin.push(text);
            }
        }
        Ok(())
    }

    /// One piece of an unquoted word at `self.i` (a quoted string, an expansion, an
    /// escaped or plain character), appended to `w`.
    fn word_piece(&mut self, w: &mut String) -> Result<(), String> {
        let Some(c) = self.peek() else {
            return Ok(());
        };
        match c {
            '\'' => {
                self.i += 1;
                loop {
                    match self.peek() {
                        None => return Err("a single quote (') is never closed".into()),
                        Some('\'') => break,
                        Some(ch) => w.push(ch),
                    }
                    self.i += 1;
                }
                self.i += 1;
            }
            '"' => {
                self.i += 1;
                self.double_quoted(w, true)?;
            }
            '\\' => {
                self.i += 1;
                match self.peek() {
                    Some('\n') => self.i += 1, // line continuation
                    Some(ch) => {
                        w.push(ch);
                        self.i += 1;
                    }
                    None => w.push('\\'),
                }
            }
            '$' => self.dollar(w, false)?,
            '`' => self.backticks(w)?,
            // Unquoted, these may be a brace expansion: marked, so that `finish_word`
            // expands them and no quoted or escaped one.
            '{' | ',' | '}' => {
                w.push(brace_mark(c));
                self.i += 1;
            }
            _ => {
                w.push(c);
                self.i += 1;
            }
        }
        Ok(())
    }

    /// The inside of `"…"` (after the opening quote), or (`closed` false) a heredoc body
    /// read to the end.
    fn double_quoted(&mut self, w: &mut String, closed: bool) -> Result<(), String> {
        loop {
            match self.peek() {
                None if closed => return Err("a double quote (\") is never closed".into()),
                None => return Ok(()),
                Some('"') if closed => {
                    self.i += 1;
                    return Ok(());
                }
                Some('\\') => {
                    self.i += 1;
                    match self.peek() {
                        Some('\n') => self.i += 1,
                        Some(ch @ ('$' | '`' | '"' | '\\')) => {
                            w.push(ch);
                            self.i += 1;
                        }
                        _ => w.push('\\'),
                    }
                }
                Some('$') => self.dollar(w, true)?,
                Some('`') => self.backticks(w)?,
                Some(ch) => {
                    w.push(ch);
                    self.i += 1;
                }
            }
        }
    }

    /// At `$`: `$(…)`, `$((…))`, `${…}`, `$'…'`, `$"…"`, or a plain `$`. Inside double
    /// quotes `$'` and `$"` are not quotes: bash reads a literal `$` there.
    fn dollar(&mut self, w: &mut String, in_double_quotes: bool) -> Result<(), String> {
        let start = self.i;
        match self.peek_at(1) {
            Some('(') if self.peek_at(2) == Some('(') => {
                // Arithmetic when it closes as `))`; else, as bash reads it, a command
                // substitution starting with a subshell (`$((a); b)`).
                let (out, defines, heredocs) =
                    (self.out.len(), self.defines.len(), self.heredocs.len());
                self.i += 3;
                self.nest()?;
                if self.arithmetic().is_err() {
                    self.i = start + 2;
                    self.out.truncate(out);
                    self.defines.truncate(defines);
                    self.heredocs.truncate(heredocs);
                    self.parse_list(true)?;
                }
                self.depth -= 1;
            }
            Some('(') => {
                self.i += 2;
                self.nest()?;
                self.parse_list(true)?;
                self.depth -= 1;
            }
            Some('{') => {
                self.i += 2;
                self.nest()?;
                self.braced()?;
                self.depth -= 1;
            }
            Some('\'') if !in_double_quotes => {
                self.i += 2;
                self.ansi_c(w)?;
                return Ok(());
            }
            Some('"') if !in_double_quotes => {
                self.i += 2;
                self.double_quoted(w, true)?;
                return Ok(());
            }
            _ => {
                w.push('$');
                self.i += 1;
                return Ok(());
            }
        }
        w.extend(&self.s[start..self.i]);
        Ok(())
    }

    /// The inside of `$((…))` up to and including `))`: substitutions in it are commands.
    fn arithmetic(&mut self) -> Result<(), String> {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return Err("an arithmetic expansion `$((` is never closed".into()),
                Some('(') => {
                    depth += 1;
                    self.i += 1;
                }
                Some(')') if depth == 0 => {
                    if self.peek_at(1) != Some(')') {
                        return Err("an arithmetic expansion `$((` is not closed by `))`".into());
                    }
                    self.i += 2;
                    return Ok(());
                }
                Some(')') => {
                    depth -= 1;
                    self.i += 1;
                }
                Some(_) => {
                    let mut sink = String::new();
                    self.word_piece(&mut sink)?;
                }
            }
        }
    }

    /// The inside of `${…}` up to and including `}`: substitutions in it are commands.
    fn braced(&mut self) -> Result<(), String> {
        loop {
            match self.peek() {
                None => return Err("a `${` is never closed".into()),
                Some('}') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(_) => {
                    let mut sink = String::new();
                    self.word_piece(&mut sink)?;
                }
            }
        }
    }

    /// The inside of a backtick substitution: unescaped, then parsed as a command list.
    fn backticks(&mut self, w: &mut String) -> Result<(), String> {
        let start = self.i;
        self.i += 1;
        let mut inner = String::new();
        loop {
            match self.peek() {
                None => return Err("a backtick (`) is never closed".into()),
                Some('`') => break,
                Some('\\') => {
                    match self.peek_at(1) {
                        Some(ch @ ('\\' | '`' | '$')) => inner.push(ch),
                        Some(ch) => {
                            inner.push('\\');
                            inner.push(ch);
                        }
                        None => return Err("a backtick (`) is never closed".into()),
                    }
                    self.i += 1;
                }
                Some(ch) => inner.push(ch),
            }
            self.i += 1;
        }
        self.i += 1;
        let mut sub = Parser::new(&inner, self.depth);
        sub.nest()?;
        sub.parse_list(false)?;
        self.out.append(&mut sub.out);
        self.defines.append(&mut sub.defines);
        w.extend(&self.s[start..self.i]);
        Ok(())
    }

    /// The inside of `$'…'`, with its escapes decoded (`$'\x72m'` is `rm`).
    fn ansi_c(&mut self, w: &mut String) -> Result<(), String> {
        loop {
            let Some(c) = self.peek() else {
                return Err("a `$'` quote is never closed".into());
            };
            self.i += 1;
            match c {
                '\'' => return Ok(()),
                '\\' => {
                    let Some(e) = self.peek() else {
                        return Err("a `$'` quote is never closed".into());
                    };
                    self.i += 1;
                    match e {
                        'n' => w.push('\n'),
                        't' => w.push('\t'),
                        'r' => w.push('\r'),
                        'a' => w.push('\x07'),
                        'b' => w.push('\x08'),
                        'e' | 'E' => w.push('\x1b'),
                        'f' => w.push('\x0c'),
                        'v' => w.push('\x0b'),
                        'x' => self.numeric_escape(w, 16, 2),
                        'u' => self.numeric_escape(w, 16, 4),
                        'U' => self.numeric_escape(w, 16, 8),
                        '0'..='7' => {
                            self.i -= 1;
                            self.numeric_escape(w, 8, 3);
                        }
                        other => w.push(other),
                    }
                }
                other => w.push(other),
            }
        }
    }

    fn numeric_escape(&mut self, w: &mut String, radix: u32, max_digits: usize) {
        let mut value = 0u32;
        let mut n = 0;
        while n < max_digits {
            match self.peek().and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    value = value.saturating_mul(radix).saturating_add(d);
                    self.i += 1;
                    n += 1;
                }
                None => break,
            }
        }
        if let Some(ch) = char::from_u32(value).filter(|_| n > 0) {
            if is_brace_mark(ch) {
                self.refused.get_or_insert_with(noncharacter);
            }
            w.push(ch);
        }
    }
}

#[cfg(test)]
#[path = "shell_words_bash_tests.rs"]
mod bash_tests;

#[cfg(test)]
#[path = "shell_words_tests.rs"]
mod tests;
