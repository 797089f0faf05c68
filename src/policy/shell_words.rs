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
//! `trap`, `alias`, `sh -c`). Words keep expansions literally (`$HOME` stays `$HOME`): a
//! rule can match only what is written. `shell_words_bash_tests` checks all of it against
//! real bash.

/// Deepest nesting of substitutions and subshells followed; a hostile command nested
/// deeper is refused instead of overflowing the stack.
const MAX_NESTING: usize = 64;

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
    /// `NAME=value` assignments stripped). A function's body is here like any command.
    pub(crate) commands: Vec<Vec<String>>,
    /// Every name defined as a function or alias, or `enable`d, in order.
    pub(crate) defines: Vec<String>,
    /// Every variable assigned before a command or on its own (`PATH=x cargo test`,
    /// `PATH=x; cargo test`): it may change what a later command runs.
    pub(crate) assigns: Vec<String>,
}

/// Splits `src` into simple commands (see `Script::commands`); errors as `parse`.
#[cfg(test)]
pub(crate) fn split_commands(src: &str) -> Result<Vec<Vec<String>>, String> {
    Ok(parse(src)?.commands)
}

/// The simple commands and function definitions of `src`. Err: why it cannot be parsed
/// (an unclosed quote, substitution or `case`, an unexpected `)`, nesting too deep).
pub(crate) fn parse(src: &str) -> Result<Script, String> {
    parse_at(src, 0)
}

/// `parse` of a script nested `depth` levels deep (in substitutions, or in the code an
/// `eval` runs).
fn parse_at(src: &str, depth: usize) -> Result<Script, String> {
    let mut p = Parser::new(src, depth);
    p.parse_list(false)?;
    let mut script = Script {
        commands: Vec::new(),
        defines: std::mem::take(&mut p.defines),
        assigns: Vec::new(),
    };
    for raw in p.out {
        let Some(words) = normalize(raw, &mut script.defines, &mut script.assigns) else {
            continue;
        };
        let code = code_in(&words, &mut script.defines);
        script.commands.push(words);
        for c in code {
            if depth + 1 > MAX_NESTING {
                return Err(format!(
                    "nested more than {MAX_NESTING} levels deep (`eval`, substitutions)"
                ));
            }
            let inner = parse_at(&c, depth + 1)?;
            script.commands.extend(inner.commands);
            script.defines.extend(inner.defines);
            script.assigns.extend(inner.assigns);
        }
    }
    Ok(script)
}

/// Shells whose `-c` argument is a script (`bash -c 'rm x'` runs `rm x`).
const SHELLS: &[&str] = &["bash", "sh", "dash", "ash", "ksh", "mksh", "zsh"];

/// The code a command runs from its arguments, to be checked as commands too: `eval`'s
/// words joined as bash joins them, a `trap`'s action, an alias's value, a shell's `-c`
/// script (behind a wrapper too). They are words as written (`eval "$x"` is the command `$x`, which only an
/// allow list refuses). `alias` and `enable` (which swaps a builtin for another or loads
/// one from a file) change what a name means, like a function: their names go to
/// `defines`.
fn code_in(words: &[String], defines: &mut Vec<String>) -> Vec<String> {
    let mut k = 0;
    // `command` and `builtin` run the builtin named after them (`builtin eval …`).
    while k < words.len() && matches!(words[k].as_str(), "command" | "builtin") {
        k += 1;
        while k < words.len() && words[k].starts_with('-') {
            k += 1;
        }
    }
    let Some(name) = words.get(k) else {
        return Vec::new();
    };
    let mut args = &words[k + 1..];
    if args.first().is_some_and(|a| a == "--") {
        args = &args[1..];
    }
    match name.as_str() {
        "eval" => vec![args.join(" ")],
        "trap" if args.len() >= 2 && !args[0].starts_with('-') => vec![args[0].clone()],
        "alias" => args
            .iter()
            .filter_map(|a| a.split_once('='))
            .map(|(n, value)| {
                defines.push(n.to_string());
                value.to_string()
            })
            .collect(),
        "enable" => {
            defines.extend(args.iter().filter(|a| !a.starts_with('-')).cloned());
            Vec::new()
        }
        _ => {
            // A shell anywhere in the command, so that a wrapper before it (`sudo bash -c`,
            // `env A=1 sh -c`) does not hide its script: as with deny rules' wrappers, this
            // can find more than runs, never less.
            let Some(j) = words[k..]
                .iter()
                .position(|w| SHELLS.contains(&w.rsplit('/').next().unwrap_or(w)))
            else {
                return Vec::new();
            };
            let mut rest = words[k + j + 1..].iter();
            rest.by_ref()
                .find(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'));
            rest.find(|a| !a.starts_with('-') && !a.starts_with('+'))
                .cloned()
                .into_iter()
                .collect()
        }
    }
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
    delimiter: String,
    /// A quoted delimiter: the body is literal, no substitution runs in it.
    quoted: bool,
    /// `<<-`: leading tabs of the body lines are stripped.
    strip_tabs: bool,
}

struct Parser {
    s: Vec<char>,
    i: usize,
    depth: usize,
    /// Every simple command found, raw (before `normalize`).
    out: Vec<Vec<String>>,
    /// Names defined with `NAME()` (those defined with `function NAME` are found by
    /// `normalize`).
    defines: Vec<String>,
    heredocs: Vec<Heredoc>,
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
                self.end_command(&mut st.words);
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
                    self.end_command(&mut st.words);
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
                    self.end_command(&mut st.words);
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
                        self.end_command(&mut st.words);
                        continue;
                    }
                    // A subshell, an array `a=(…)`: the inside is checked as commands.
                    self.end_command(&mut st.words);
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
                    self.end_command(&mut st.words);
                    if st.open_cases > 0 || st.pattern_next {
                        return Err("a `case` is never closed by `esac`".into());
                    }
                    self.i += 1;
                    return Ok(());
                }
                '<' | '>' => {
                    // A leading fd number (`2>`) or `{var}` belongs to the operator.
                    if st.word.as_deref().is_some_and(|w| {
                        w.chars().all(|c| c.is_ascii_digit()) || w.starts_with('{')
                    }) {
                        st.word = None;
                    } else {
                        self.finish_word(&mut st);
                    }
                    self.redirection(c, &mut st.target_next)?;
                }
                '#' if st.word.is_none() => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
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
            return;
        }
        st.words.push(w);
        let cmd: Vec<&str> = command_part(&st.words).iter().map(String::as_str).collect();
        match cmd.as_slice() {
            ["esac"] if st.open_cases > 0 => st.open_cases -= 1,
            ["case", _, "in"] => {
                self.end_command(&mut st.words);
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
        self.out
            .push(vec!["((".into(), inner.trim().to_string(), "))".into()]);
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

    fn end_command(&mut self, words: &mut Vec<String>) {
        if !words.is_empty() {
            self.out.push(std::mem::take(words));
        }
    }

    /// At `<` or `>`: the operator; process substitution is parsed as commands; a heredoc
    /// is queued for the next newline; otherwise the next word is the target.
    fn redirection(&mut self, c: char, target_next: &mut bool) -> Result<(), String> {
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
                *target_next = true;
                return Ok(());
            }
            let strip_tabs = self.peek() == Some('-');
            if strip_tabs {
                self.i += 1;
            }
            return self.heredoc_delimiter(strip_tabs);
        }
        if matches!(self.peek(), Some('>' | '&' | '|')) || (c == '<' && self.peek() == Some('>')) {
            self.i += 1; // `>>`, `>&`, `<&`, `>|`, `<>`
        }
        *target_next = true;
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
            delimiter,
            quoted,
            strip_tabs,
        });
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
            if !doc.quoted {
                let mut sub = Parser::new(&body, self.depth);
                sub.nest()?;
                let mut sink = String::new();
                sub.double_quoted(&mut sink, false)?;
                self.out.append(&mut sub.out);
                self.defines.append(&mut sub.defines);
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
