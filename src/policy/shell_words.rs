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
//! (dropped from the words, their targets still scanned), heredocs, comments. Words keep
//! expansions literally (`$HOME` stays `$HOME`): a rule can match only what is written.

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
    /// Every name defined as a function, in order.
    pub(crate) defines: Vec<String>,
}

/// Splits `src` into simple commands (see `Script::commands`). Err: why it cannot be
/// parsed (an unclosed quote or substitution, an unexpected `)`, nesting too deep).
#[cfg(test)]
pub(crate) fn split_commands(src: &str) -> Result<Vec<Vec<String>>, String> {
    Ok(parse(src)?.commands)
}

/// The simple commands and function definitions of `src`; errors as `split_commands`.
pub(crate) fn parse(src: &str) -> Result<Script, String> {
    let mut p = Parser::new(src, 0);
    p.parse_list(false)?;
    let mut script = Script {
        commands: Vec::new(),
        defines: std::mem::take(&mut p.defines),
    };
    for raw in p.out {
        if let Some(words) = normalize(raw, &mut script.defines) {
            script.commands.push(words);
        }
    }
    Ok(script)
}

/// Strips what is not the command itself from the front; `None` when nothing is left.
/// `function NAME` is a definition: the name goes to `defines`, and what follows (the
/// body's first command, after its `{` or `if` …) is a command like any other.
fn normalize(mut words: Vec<String>, defines: &mut Vec<String>) -> Option<Vec<String>> {
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
        } else if RESERVED_PREFIXES.contains(&first.as_str()) || is_assignment(first) {
            words.remove(0);
        } else {
            return Some(words);
        }
    }
}

/// `NAME=value` (a variable assignment before the command).
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '[' || c == ']')
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
        let mut words: Vec<String> = Vec::new();
        let mut word: Option<String> = None;
        // The next word is a redirection target: scanned, then dropped.
        let mut target_next = false;
        let finish_word =
            |word: &mut Option<String>, words: &mut Vec<String>, target_next: &mut bool| {
                if let Some(w) = word.take() {
                    if *target_next {
                        *target_next = false;
                    } else {
                        words.push(w);
                    }
                }
            };
        loop {
            let Some(c) = self.peek() else {
                if in_parens {
                    return Err("a `(` or `$(` is never closed".into());
                }
                finish_word(&mut word, &mut words, &mut target_next);
                self.end_command(&mut words);
                return Ok(());
            };
            match c {
                ' ' | '\t' => {
                    finish_word(&mut word, &mut words, &mut target_next);
                    self.i += 1;
                }
                '\n' => {
                    finish_word(&mut word, &mut words, &mut target_next);
                    self.end_command(&mut words);
                    self.i += 1;
                    self.read_heredoc_bodies()?;
                }
                '&' if self.peek_at(1) == Some('>') => {
                    finish_word(&mut word, &mut words, &mut target_next);
                    self.i += if self.peek_at(2) == Some('>') { 3 } else { 2 };
                    target_next = true;
                }
                ';' | '&' | '|' => {
                    finish_word(&mut word, &mut words, &mut target_next);
                    self.end_command(&mut words);
                    self.i += 1;
                    while matches!(self.peek(), Some(';' | '&' | '|')) {
                        self.i += 1; // `&&`, `||`, `;;`, `|&`, `;;&`
                    }
                }
                '(' => {
                    finish_word(&mut word, &mut words, &mut target_next);
                    if let Some(name) = self.function_name(&words) {
                        // `NAME ()`: a definition, not a call; the body that follows
                        // (`{ …; }`, `( … )`, `if …`) is parsed as commands.
                        self.defines.push(name);
                        words.clear();
                        continue;
                    }
                    // A subshell, an array `a=(…)`: the inside is checked as commands.
                    self.end_command(&mut words);
                    self.i += 1;
                    self.nest()?;
                    self.parse_list(true)?;
                    self.depth -= 1;
                }
                ')' => {
                    if !in_parens {
                        return Err("an unexpected `)`".into());
                    }
                    finish_word(&mut word, &mut words, &mut target_next);
                    self.end_command(&mut words);
                    self.i += 1;
                    return Ok(());
                }
                '<' | '>' => {
                    // A leading fd number (`2>`) or `{var}` belongs to the operator.
                    if word.as_deref().is_some_and(|w| {
                        w.chars().all(|c| c.is_ascii_digit()) || w.starts_with('{')
                    }) {
                        word = None;
                    } else {
                        finish_word(&mut word, &mut words, &mut target_next);
                    }
                    self.redirection(c, &mut target_next)?;
                }
                '#' if word.is_none() => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                _ => {
                    let w = word.get_or_insert_with(String::new);
                    self.word_piece(w)?;
                }
            }
        }
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
                self.i += 3;
                self.nest()?;
                self.arithmetic()?;
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
mod tests {
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
    fn empty_and_comment_only() {
        assert!(cmds("").is_empty());
        assert!(cmds("  # just a comment").is_empty());
    }
}
