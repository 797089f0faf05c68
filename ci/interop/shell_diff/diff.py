#!/usr/bin/env python3
"""The policy's command splitting held against real shell parsers (issue 43).

For every command line of the corpora -- (a) compound commands generated from a seed,
(b) real commands from public repositories' CI workflows, Makefiles and scripts
(`real_commands.jsonl` beside this script, made by `extract.py`, each with its
repo@commit:path), and, as an extra, (c) command lines harvested at run time from the
shell scripts and Makefiles already on this machine (`--local-max`, 0 by default) --
every command a real parser sees executed (its name and its arguments) must be
among the simple commands `agent tools --split-commands` says the permission rules check,
or the policy must call the line opaque (no rule naming a command can vouch for it) or
refuse to parse it (which the rules deny). "Executed" includes what a command runs from
its arguments or input: a shell's `-c` script, here-document or here-string, `eval`'s
words, `find -exec`'s command, `env -S`'s string.

The reference parsers: tree-sitter-bash (every command, with its arguments) and mvdan/sh
(`shfmt --to-json`; every command's name, on the real corpus and a sample of the
generated one, since it runs as one process per command). A word holding an expansion
matches any word; a command whose name is an expansion must make the line opaque.

A disagreement already read by hand and found to be the reference parser's misreading
(each checked against bash itself) is listed, with why, in `reviewed.txt` beside this
script; those are counted, not failed. Any other disagreement is printed with both views
and fails the run.

The canary pass (`--canary`, on by default where it can run: root, `unshare`, `setpriv`)
runs every generated command that the policy allows under the deny rules
`Bash(rm:*)`, `Bash(curl:*)`, `Bash(git push:*)` and `Bash(chmod:*)` in bash itself: in
a scratch directory holding a canary file, as the user nobody, in a network namespace of
its own (no network), under a timeout, with `git` and `curl` replaced by shims that
record their arguments. A canary deleted or changed, or a `git push` or `curl` recorded,
for a command the policy allowed is a bypass and fails the run. A sample of the commands
the policy denied runs the same way, to show that the pass sees what they would have
done.

Usage: diff.py [--generated N] [--seed S] [--real FILE] [--local-max N] [--shfmt-sample N]
               [--agent PATH] [--no-canary] [--canary-control N] [--reviewed FILE]
Exit 0 when every disagreement is a reviewed one and no bypass was found; 1 otherwise.
"""

import argparse
import glob
import json
import os
import random
import re
import shlex
import subprocess
import sys

import tree_sitter_bash
from tree_sitter import Language, Parser

TS = Parser(Language(tree_sitter_bash.language()))
SHELLS = {"bash", "sh", "dash", "ash", "ksh", "mksh", "zsh"}
WILD = object()  # a word known only when the command runs

# --- words ----------------------------------------------------------------------------


def ansi_c(s):
    """The value of a `$'…'` body, as bash decodes it."""
    out, i = [], 0
    simple = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b",
              "E": "\x1b", "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
    while i < len(s):
        c = s[i]
        if c != "\\" or i + 1 == len(s):
            out.append(c)
            i += 1
            continue
        e = s[i + 1]
        i += 2
        if e in simple:
            out.append(simple[e])
        elif e in "xuU":
            n = {"x": 2, "u": 4, "U": 8}[e]
            m = re.match(r"[0-9a-fA-F]{1,%d}" % n, s[i:])
            if m:
                out.append(chr(min(int(m.group(0), 16), 0x10FFFF)))
                i += len(m.group(0))
            else:
                out.append("\\" + e)
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", s[i - 1:])
            out.append(chr(int(m.group(0), 8) & 0xFF))
            i += len(m.group(0)) - 1
        else:
            out.append("\\" + e)
    return "".join(out)


# Unquoted `{`, `,` and `}` are marked (bash brace-expands them before a command runs;
# no parser here does), and so is where an expansion sits in a word that has them.
OPEN, COMMA, CLOSE, HOLE = "\ufdd0", "\ufdd1", "\ufdd2", "\ufdd3"
MARKS = {"{": OPEN, ",": COMMA, "}": CLOSE}


def unescape_word(t):
    """An unquoted word's text with its backslashes removed, its unescaped braces and
    commas marked."""
    out, i = [], 0
    while i < len(t):
        if t[i] == "\\" and i + 1 < len(t):
            if t[i + 1] != "\n":
                out.append(t[i + 1])
            i += 2
        else:
            out.append(MARKS.get(t[i], t[i]))
            i += 1
    return "".join(out)


def unmark(w):
    return w.replace(OPEN, "{").replace(COMMA, ",").replace(CLOSE, "}")


def sequence(inner):
    """A brace sequence's items (`1..3`, `a..c`, `01..09..2`), or None."""
    m = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?", inner)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        step = max(abs(int(m.group(3) or 1)), 1)
        pad = any(re.match(r"-?0\d", g) for g in (m.group(1), m.group(2)))
        width = max(len(m.group(1)), len(m.group(2))) if pad else 0
        rng = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        if len(rng) > 100_000:
            return None
        return [("-%0*d" % (width - 1, -v) if v < 0 else "%0*d" % (width, v)) if width
                else str(v) for v in rng]
    m = re.fullmatch(r"([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?", inner)
    if m:
        a, b = ord(m.group(1)), ord(m.group(2))
        step = max(abs(int(m.group(3) or 1)), 1)
        rng = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [chr(v) for v in rng]
    return None


def brace_expand(w):
    """The words bash makes of a marked word by brace expansion (empty ones dropped);
    each holding an expansion (`HOLE`) is WILD."""
    def first(w):
        start = 0
        while True:
            o = w.find(OPEN, start)
            if o < 0:
                return None
            start = o + 1
            depth, commas, close = 0, [], None
            for k in range(o, len(w)):
                if w[k] == OPEN:
                    depth += 1
                elif w[k] == CLOSE:
                    depth -= 1
                    if depth == 0:
                        close = k
                        break
                elif w[k] == COMMA and depth == 1:
                    commas.append(k)
            if close is None:
                continue
            if commas:
                b = [o] + commas + [close]
                alts = [w[b[i] + 1:b[i + 1]] for i in range(len(b) - 1)]
            else:
                alts = sequence(w[o + 1:close])
                if alts is None:
                    continue
            return [w[:o] + a + w[close + 1:] for a in alts]

    out, todo = [], [(w, False)]
    while todo:
        word, expanded = todo.pop()
        parts = first(word)
        if parts is None:
            if not (expanded and word == ""):
                out.append(WILD if HOLE in word else unmark(word))
        else:
            todo.extend((p, True) for p in reversed(parts))
    return out


def join_parts(parts):
    """A word of parts: WILD when one is an expansion, unless braces in the others may
    expand it to several words (then `HOLE` stands for the expansion)."""
    if any(p is WILD for p in parts):
        if not any(p is not WILD and OPEN in p for p in parts):
            return WILD
        return "".join(HOLE if p is WILD else p for p in parts)
    return "".join(parts)


def expand_argv(argv):
    out = []
    for a in argv:
        out.extend([a] if a is WILD else brace_expand(a))
    return out


EXPANSIONS = {"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion",
              "process_substitution", "brace_expression"}


def ts_word(node, src):
    """A tree-sitter word node's value, or WILD when it holds an expansion."""
    t = src[node.start_byte:node.end_byte].decode("utf-8", "replace")
    k = node.type
    if k == "brace_expression":
        return OPEN + t[1:-1] + CLOSE  # a sequence `{1..3}`
    if k in EXPANSIONS:
        return WILD
    if k == "variable_assignment":
        kids = node.named_children
        if len(kids) == 2:
            v = ts_word(kids[1], src)
            name = src[kids[0].start_byte:kids[0].end_byte].decode("utf-8", "replace")
            # (an assignment is not brace-expanded)
            return WILD if v is WILD or HOLE in v else name + "=" + unmark(v)
    if k == "raw_string":
        return t[1:-1]
    if k == "ansi_c_string":
        return ansi_c(t[2:-1])
    if k in ("string", "translated_string"):
        if any(c.type in EXPANSIONS for c in node.named_children):
            return WILD
        body = t[2:-1] if k == "translated_string" else t[1:-1]
        return re.sub(r'\\([$`"\\])', r"\1", body).replace("\\\n", "")
    if k == "concatenation":
        return join_parts([ts_word(c, src) for c in node.children])
    if k in ("word", "number", "command_name", "extglob_pattern"):
        if any(c.type in EXPANSIONS or c.type in ("string", "raw_string", "ansi_c_string",
                                                   "concatenation")
               for c in node.named_children):
            parts = [ts_word(c, src) for c in node.named_children]
            if len(node.named_children) == 1 and node.named_children[0].end_byte - \
                    node.named_children[0].start_byte == len(t.encode()):
                return parts[0]
            return WILD
        if "$" in t or "`" in t:
            return WILD
        return unescape_word(t)
    return WILD if ("$" in t or "`" in t) else unescape_word(t)


# --- what runs, as a real parser sees it ------------------------------------------------


def shell_input(args):
    """('code', text) for `-c`, ('stdin', None) when the shell reads standard input."""
    c = s = False
    it = iter(args)
    for a in it:
        if a is WILD:
            return ("file", None)
        if a == "--":
            break
        if a.startswith("--"):
            if a in ("--rcfile", "--init-file"):
                next(it, None)
            continue
        if a[:1] in "-+" and len(a) > 1:
            c |= a[0] == "-" and "c" in a[1:]
            s |= "s" in a[1:]
            if "o" in a[1:] or "O" in a[1:]:
                next(it, None)
            continue
        return ("code", a) if c else ("stdin", None) if s or a in ("-", "/dev/stdin") \
            else ("file", None)
    a = next(it, None)
    if a is not None and a is not WILD:
        return ("code", a) if c else ("stdin", None) if s else ("file", None)
    return ("file", None) if c else ("stdin", None)


def runs_from(argv, stdin_texts):
    """What a command runs from its arguments or input: scripts and argvs."""
    scripts, argvs = [], []
    if not argv or argv[0] is WILD:
        return scripts, argvs
    name = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    if name in ("command", "builtin", "exec", "nohup", "time", "nice", "timeout", "sudo",
                "xargs", "setsid", "stdbuf"):
        # The wrapped command (the first word not an option or a number) runs too.
        rest = [a for a in args]
        while rest and rest[0] is not WILD and (rest[0].startswith("-") or rest[0].isdigit()):
            rest = rest[1:]
        # A program runs only programs (`xargs eval` fails); `command`/`builtin` run both.
        if rest and (name in ("command", "builtin") or rest[0] is WILD or rest[0] not in (
                "eval", "source", ".", "alias", "trap", "export", "declare", "unset",
                "builtin", "command", "exec", "time", "coproc") and rest[0] not in RESERVED):
            s2, a2 = runs_from(rest, stdin_texts)
            return s2, a2 + [rest]
    if name == "eval" and args and all(a is not WILD for a in args):
        scripts.append(" ".join(args))
    if name in SHELLS:
        kind, code = shell_input(args)
        if kind == "code":
            scripts.append(code)
        elif kind == "stdin":
            scripts.extend(stdin_texts)
    if name == "find":
        i = 0
        while i < len(args):
            if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(args) and args[j] not in (";", "+"):
                    j += 1
                if j > i + 1:
                    argvs.append(args[i + 1:j])
                i = j
            i += 1
    if name == "env":
        for i, a in enumerate(args):
            if a is WILD:
                break
            split = None
            if a in ("-S", "--split-string") and i + 1 < len(args) and args[i + 1] is not WILD:
                split, after = args[i + 1], args[i + 2:]
            elif a.startswith("-S") and len(a) > 2:
                split, after = a[2:], args[i + 1:]
            if split is not None:
                try:
                    words = shlex.split(split) + list(after)
                except ValueError:
                    break
                while words and words[0] is not WILD and (
                        words[0].startswith("-") or re.match(r"^\w+=", words[0])):
                    words = words[1:]
                if words:
                    argvs.append(words)
                break
            if not (a.startswith("-") or "=" in a):
                if args[i] not in ("eval", "builtin", "command", "exec", "source", "."):
                    argvs.append(args[i:])  # (env runs programs, not builtins)
                break
    return scripts, argvs


def heredoc_texts(node, src):
    """The here-documents and here-strings of a redirected statement."""
    out = []
    for c in node.children:
        if c.type == "heredoc_redirect":
            start = src[c.start_byte:c.end_byte].decode("utf-8", "replace")
            quoted = bool(re.match(r"<<-?\s*(['\"\\])", start))
            for b in c.children:
                if b.type == "heredoc_body":
                    body = src[b.start_byte:b.end_byte].decode("utf-8", "replace")
                    if not quoted:
                        body = re.sub(r"\\([$`\\])", r"\1", body).replace("\\\n", "")
                    out.append(body)
        if c.type == "herestring_redirect":
            for w in c.named_children:
                v = ts_word(w, src)
                out.append("$x" if v is WILD or HOLE in v else unmark(v))
    return out


def ts_commands(text, depth=0):
    """(commands, error): every command tree-sitter sees executed, as argv lists."""
    src = text.encode("utf-8", "replace")
    tree = TS.parse(src)
    cmds = []
    if tree.root_node.has_error:
        return cmds, True

    def walk(node, stdin_texts, extra=()):
        if node.type == "redirected_statement":
            texts = heredoc_texts(node, src)
            # tree-sitter-bash puts the words after `>&2 x` in the redirection (`echo
            # >&2 a b`): the first is its target, the rest the command's arguments.
            more = []
            for c in node.children:
                if c.type == "file_redirect":
                    dests = [c.children[j] for j in range(c.child_count)
                             if c.field_name_for_child(j) == "destination"]
                    more.extend(ts_word(d, src) for d in dests[1:])
            for c in node.children:
                walk(c, texts, more)
            return
        if node.type == "pipeline":
            for c in node.named_children:
                walk(c, stdin_texts)
            return
        if node.type in ("command", "declaration_command", "unset_command"):
            argv = []
            texts = list(stdin_texts)
            for i in range(node.child_count):
                c = node.children[i]
                field = node.field_name_for_child(i)
                if node.type == "command":
                    if field == "name":
                        inner = c.named_children
                        argv.insert(0, ts_word(inner[0] if len(inner) == 1 else c, src))
                    elif field == "argument" and c.type != "process_substitution":
                        # (a process substitution is a path; the rules drop it)
                        argv.append(ts_word(c, src))
                    elif c.type == "file_redirect":
                        # tree-sitter-bash puts the words after `>&2 x` in the redirection
                        # (`echo >&2 a b`): the first is its target, the rest arguments.
                        dests = [c.children[j] for j in range(c.child_count)
                                 if c.field_name_for_child(j) == "destination"]
                        argv.extend(ts_word(d, src) for d in dests[1:])
                    elif c.type == "herestring_redirect":
                        texts += [("$x" if v is WILD else unmark(v)) for v in
                                  (ts_word(w, src) for w in c.named_children)]
                elif not c.is_named and i == 0:
                    argv.append(src[c.start_byte:c.end_byte].decode())
                elif c.is_named:
                    argv.append(ts_word(c, src))
            argv = expand_argv(argv + list(extra))
            if argv:
                cmds.append(argv)
                scripts, argvs = runs_from(argv, texts)
                if depth < 8:
                    for s in scripts:
                        inner, err = ts_commands(s, depth + 1)
                        cmds.extend(inner)
                    for a in argvs:
                        cmds.append(a)
                        s2, a2 = runs_from(a, [])
                        for s in s2:
                            cmds.extend(ts_commands(s, depth + 1)[0])
                        cmds.extend(a2)
        for c in node.children:
            if c.type not in ("heredoc_body",):
                walk(c, [] if node.type != "command" else stdin_texts)

    walk(tree.root_node, [])
    return cmds, False


# --- mvdan/sh ---------------------------------------------------------------------------


def sh_names(text):
    """The literal names of the commands mvdan/sh sees (None: it cannot parse the line)."""
    try:
        r = subprocess.run(["shfmt", "--to-json", "-ln", "bash"], input=text.encode(),
                           capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        return None
    if r.returncode != 0:
        return None
    names, wild = set(), False

    def word(w, quoted=False):
        """A word's value, its unquoted braces marked, or WILD."""
        parts = w.get("Parts", [])
        out = []
        for p in parts:
            t = p.get("Type")
            if t == "Lit":
                v = unescape_word(p["Value"])
                out.append(unmark(v) if quoted else v)
            elif t == "SglQuoted":
                out.append(ansi_c(p["Value"]) if p.get("Dollar") else p["Value"])
            elif t == "DblQuoted":
                inner = word(p, True)
                if inner is WILD:
                    return WILD
                out.append(inner)
            else:
                return WILD
        return "".join(out)

    def walk(n):
        nonlocal wild
        if isinstance(n, dict):
            if n.get("Type") == "CallExpr" and n.get("Args"):
                # The name is the first word the arguments brace-expand to.
                for a in n["Args"]:
                    w = word(a)
                    words = [WILD] if w is WILD else brace_expand(w)
                    if words:
                        if words[0] is WILD:
                            wild = True
                        else:
                            names.add(words[0])
                        break
            for v in n.values():
                walk(v)
        elif isinstance(n, list):
            for v in n:
                walk(v)

    walk(json.loads(r.stdout))
    return names, wild


# --- the policy's view ------------------------------------------------------------------


def policy_views(agent, lines):
    """The policy's view of each line, and its verdict under `DENY_RULES`."""
    data = "".join(json.dumps(line) + "\n" for line in lines)
    flags = [x for r in DENY_RULES for x in ("--disallowed-tools", r)]
    r = subprocess.run([agent, "tools", "--split-commands", *flags], input=data.encode(),
                       capture_output=True, check=True)
    return [json.loads(x) for x in r.stdout.decode().splitlines()]


def is_wild(w):
    return w is WILD or "$" in w or "`" in w


WRAPPERS = {"command", "builtin", "exec", "nohup", "time", "env", "sudo", "doas", "nice",
            "ionice", "timeout", "stdbuf", "setsid", "chrt", "taskset", "strace", "ltrace",
            "watch", "flock", "unbuffer", "xargs", "coproc"}


def covered(argv, policy_cmds):
    """A policy command is argv, or ends with it behind a wrapper (deny rules try every
    word after a wrapper as the command's start)."""
    for p in policy_cmds:
        if len(p) == 3 and p[0] == "((" and " ".join(map(str, argv)) in p[1]:
            return True  # (tree-sitter-bash reads `! (( … ))` as subshells)
        starts = [0]
        if p and p[0].rsplit("/", 1)[-1] in WRAPPERS:
            starts = range(len(p))
        for k in starts:
            q = p[k:]
            if len(q) == len(argv) and all(is_wild(a) or is_wild(b) or a == b
                                           for a, b in zip(argv, q)):
                return True
    return False


RESERVED = {"coproc", "{", "}", "do", "done", "then", "else", "elif", "fi", "esac", "in",
            "if", "while", "until", "for", "case", "function", "select", "[[", "]]"}


def disagreement(line, view):
    """Why the policy's view misses something tree-sitter sees run, or None."""
    if "error" in view:
        return None  # the rules deny what they cannot parse
    refs, err = ts_commands(line)
    if err:
        return None
    opaque = bool(view["opaque"])
    for argv in refs:
        while argv and argv[0] in ("time", "-p", "!"):
            argv = argv[1:]  # (keywords tree-sitter-bash reads as a command)
        if argv and argv[0] is not WILD and re.match(r"^\w+=", argv[0]):
            continue  # (`time -p x=rm`: tree-sitter-bash reads the assignment as a command)
        if not argv or argv[0] in RESERVED:
            # tree-sitter-bash reads `coproc NAME { …; }` as a command, and a keyword
            # where bash expects none (`xargs for …`, a syntax error) as one.
            continue
        if argv[0] is WILD:
            if not opaque:
                return f"runs {show(argv)}, whose program is an expansion, and is not opaque"
            continue
        if opaque and any(is_wild(a) for a in argv):
            continue
        if not covered(argv, view["commands"]):
            return f"runs {show(argv)}, which the rules do not check"
    return None


def show(argv):
    return " ".join("<expansion>" if a is WILD else repr(a) for a in argv)


# --- corpora ----------------------------------------------------------------------------

PAYLOADS = ["rm -f canary", "git push origin main", "curl -s https://x.invalid/p",
            "rm -rf /tmp/canary", "'r'm -f canary", r"\rm canary", "$'\\x72m' -f canary",
            "/bin/rm canary", "chmod 777 canary"]


def generate(rng, depth=0):
    """One compound command embedding a payload command in random constructs."""
    p = rng.choice(PAYLOADS)
    if depth > 2:
        return p
    inner = generate(rng, depth + 1) if rng.random() < 0.5 else p
    q = inner.replace("'", "'\\''")
    # After a here-document the line must end: `; }` would join its delimiter line.
    nl = "\n" in inner
    sep = "\n" if nl else "; "
    end = "\n" if nl else " "
    forms = [
        lambda: f"f() {{ {inner}{sep}}}; f",
        lambda: f"function g {{ {inner}{sep}}}; g",
        lambda: f"function h() ( {inner}{end}); h",
        lambda: f"( {inner}{end})",
        lambda: f"{{ {inner}{sep}}}",
        lambda: f"cat <<'EOF'\n{inner}\nEOF",
        lambda: f"bash <<'EOF'\n{inner}\nEOF",
        lambda: f"sh -s <<EOF\n{inner}\nEOF",
        lambda: f"bash <<< '{q}'",
        lambda: f"diff <({inner}{end}) <(ls)",
        lambda: f"echo $({inner}{end})",
        lambda: f"echo \"`{inner}`\"" if "`" not in inner and "\\" not in inner
        else f"echo \"$({inner}{end})\"",
        lambda: f"eval '{q}'",
        lambda: f"exec {inner}",
        lambda: f"env A=1 {inner}",
        lambda: f"env -S '{q}'" if "\n" not in inner and not inner.startswith(("f(", "function", "(", "{", "cat", "bash", "sh", "echo", "diff", "eval", "exec", "env", "xargs", "find", "source", "command", "builtin", "alias", "if", "for", "while", "case", "coproc", "time", "!", "x=", "[[", "((", "ls", "true", "nohup"))
        else inner,
        lambda: f"echo a | xargs {inner}",
        lambda: f"find . -name x -exec {inner} \\;" if "\n" not in inner
        and inner.split()[0] in ("rm", "git", "curl", "chmod", "/bin/rm") else inner,
        lambda: f"find . -execdir sh -c '{q}' \\;",
        lambda: f"source <(echo '{q}')",
        lambda: f". /dev/stdin <<< '{q}'",
        lambda: f"command {inner}",
        lambda: f"builtin eval '{q}'",
        lambda: f"alias x='{q}'",
        lambda: inner.replace(" ", " \\\n  ", 1),
        lambda: f"(( n = 1 + 2 )) && {inner}",
        lambda: f"coproc C {{ {inner}{sep}}}",
        lambda: f"time -p {inner}",
        lambda: f"! {inner}",
        lambda: inner if nl else f"{inner} 2>&1 >/dev/null 3<&0",
        lambda: f"case $v in a|b) {inner}{end};; *) ls;; esac",
        lambda: f"for i in 1 2; do {inner}{sep}done",
        lambda: f"while false; do {inner}{sep}done",
        lambda: f"if true; then {inner}{sep}else ls; fi",
        lambda: f"x=rm; $x -f canary",
        lambda: f"$(echo rm) -f canary",
        lambda: f"echo '{q}' | bash",
        lambda: f"nohup {inner}{end}&",
        lambda: f"timeout 5 {inner}{end}|| true",
        lambda: f"sudo -E bash -c '{q}'",
        lambda: f"true && {inner}{sep}ls",
        lambda: f"[[ -f x ]] && {inner}",
    ]
    return rng.choice(forms)()


HARVEST_GLOBS = ["/usr/bin/*", "/usr/sbin/*", "/usr/share/**/*.sh", "/usr/lib/**/*.sh",
                 "/etc/**/*.sh", "/etc/init.d/*", "/usr/share/**/Makefile*",
                 "/usr/lib/**/Makefile*", os.path.expanduser("~/.rustup/**/*.sh"),
                 os.path.expanduser("~/.pyenv/plugins/**/*.sh"),
                 os.path.expanduser("~/.pyenv/libexec/*"),
                 "/usr/lib/node_modules/**/*.sh"]


REAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "real_commands.jsonl")


def load_real(path=REAL):
    """The committed real commands: their command lines, and how many came from each
    repository."""
    lines, repos = [], {}
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            try:
                rec = json.loads(raw)
                line, source = rec["command"], rec["source"]
            except (ValueError, KeyError, TypeError) as e:
                sys.exit(f"{path}:{n}: not a {{source, command}} record: {e}")
            lines.append(line)
            repo = source.split("@", 1)[0]
            repos[repo] = repos.get(repo, 0) + 1
    return lines, repos


def harvest(limit):
    """Real command lines from shell scripts and Makefiles on this machine: each logical
    line (continuations joined) that parses on its own, deduplicated. Returns the lines
    and the files they came from."""
    lines, seen, files = [], set(), {}
    for pattern in HARVEST_GLOBS:
        for path in sorted(glob.glob(pattern, recursive=True)):
            if len(lines) >= limit:
                return lines, files
            if not os.path.isfile(path) or os.path.getsize(path) > 1 << 20:
                continue
            try:
                with open(path, "rb") as f:
                    head = f.read(1 << 20)
            except OSError:
                continue
            text = head.decode("utf-8", "replace")
            make = "Makefile" in os.path.basename(path)
            if not make and not re.match(r"#!\s*/(usr/)?bin/(env\s+)?(ba|da|k)?sh\b", text):
                if not path.endswith(".sh"):
                    continue
            body = text.replace("\\\n", " ")
            n = 0
            for raw in body.splitlines():
                if make:
                    if not raw.startswith("\t"):
                        continue
                    raw = raw.lstrip("\t@-+ ").replace("$$", "$")
                line = raw.strip()
                if not line or line.startswith("#") or line in seen or len(line) > 2000:
                    continue
                if TS.parse(line.encode()).root_node.has_error:
                    continue
                seen.add(line)
                lines.append(line)
                n += 1
            if n:
                files[path] = n
    return lines, files


# --- the reviewed disagreements -----------------------------------------------------------

REVIEWED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reviewed.txt")


def load_reviewed(path=REVIEWED):
    """The command lines of `reviewed.txt` (one JSON string a line; `#` comments)."""
    out = set()
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            raw = raw.strip()
            if not raw or raw.startswith("#"):
                continue
            try:
                line = json.loads(raw)
            except ValueError as e:
                sys.exit(f"{path}:{n}: not a JSON string: {e}")
            if not isinstance(line, str):
                sys.exit(f"{path}:{n}: not a JSON string")
            out.add(line)
    return out


# --- the canary pass ----------------------------------------------------------------------

DENY_RULES = ["Bash(rm:*)", "Bash(curl:*)", "Bash(git push:*)", "Bash(chmod:*)"]
NOBODY = 65534
SHIM = """#!/bin/sh
printf '%s' "$(basename "$0")" >> "$TRACE"
for a in "$@"; do printf ' %s' "$a" >> "$TRACE"; done
echo >> "$TRACE"
"""


def canary_possible():
    import shutil
    return os.geteuid() == 0 and shutil.which("unshare") and shutil.which("setpriv")


def run_in_bash(line, timeout=5, xtrace=None):
    """Runs `line` in bash, sandboxed; returns what it did to the canaries: a list of
    findings (empty: nothing). With `xtrace` (a list), bash runs with `-x` and the argv
    of every command it ran is appended to it."""
    import shutil
    import tempfile
    base = tempfile.mkdtemp(prefix="shell-diff-canary-")
    try:
        ws, shims = os.path.join(base, "ws"), os.path.join(base, "shims")
        os.makedirs(ws)
        os.makedirs(shims)
        trace = os.path.join(base, "trace")
        for name in ("git", "curl"):
            p = os.path.join(shims, name)
            with open(p, "w") as f:
                f.write(SHIM)
            os.chmod(p, 0o755)
        canary = os.path.join(ws, "canary")
        tmp_canary = "/tmp/canary"
        if os.path.isdir(tmp_canary) and not os.path.islink(tmp_canary):
            shutil.rmtree(tmp_canary)
        for c in (canary, tmp_canary):
            with open(c, "w") as f:
                f.write("canary\n")
            os.chmod(c, 0o644)
            os.chown(c, NOBODY, NOBODY)
        open(trace, "w").close()
        for p in (base, ws, trace):
            os.chown(p, NOBODY, NOBODY)
        os.chmod(base, 0o755)
        env = {"PATH": f"{shims}:/usr/local/bin:/usr/bin:/bin", "HOME": ws, "TRACE": trace,
               "LANG": "C.UTF-8"}
        argv = ["unshare", "--net", "--", "setpriv", f"--reuid={NOBODY}",
                f"--regid={NOBODY}", "--clear-groups", "--no-new-privs", "--",
                "timeout", "-s", "KILL", str(timeout), "bash",
                *(["-x"] if xtrace is not None else []), "-c", line]
        # The trace goes to descriptor 3, a file of its own, so that what the commands
        # write to stderr cannot mix with it.
        tfile = os.path.join(base, "xtrace")
        tf = open(tfile, "wb")
        if xtrace is not None:
            env["PS4"] = "+\x01 "
            env["BASH_XTRACEFD"] = "3"
        try:
            subprocess.run(argv, cwd=ws, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=timeout + 5, pass_fds=(3,),
                           preexec_fn=lambda: os.dup2(tf.fileno(), 3))
        except subprocess.TimeoutExpired:
            pass
        tf.close()
        if xtrace is not None:
            with open(tfile, "rb") as f:
                xtrace.extend(parse_xtrace(f.read().decode("utf-8", "replace")))
        found = []
        for c in (canary, tmp_canary):
            try:
                st = os.lstat(c)
                if (st.st_mode & 0o7777) != 0o644:
                    found.append(f"{c}: mode changed to {oct(st.st_mode & 0o7777)}")
                elif open(c).read() != "canary\n":
                    found.append(f"{c}: changed")
            except FileNotFoundError:
                found.append(f"{c}: deleted")
        with open(trace) as f:
            for t in f.read().splitlines():
                if t.startswith("curl") or t.startswith("git push"):
                    found.append(f"ran: {t}")
        return found
    finally:
        shutil.rmtree(base, ignore_errors=True)


def parse_xtrace(text):
    """The argv of each command in bash's `-x` trace (PS4 `+\\x01 `), assignments and
    keywords left out."""
    out = []
    for raw in re.split(r"\n(?=\++\x01 )", text):
        raw = raw.lstrip("+")
        if not raw.startswith("\x01 "):
            continue
        try:
            argv = shlex.split(raw[2:], posix=True)
        except ValueError:
            continue
        while argv and re.match(r"^\w+(\[[^]]*\])?\+?=", argv[0]):
            argv = argv[1:]
        # (`[k]=v` words: the rest of a traced array assignment, not a command)
        if argv and argv[0] not in RESERVED | {"[[", "((", "for", "select", "case", "!"} \
                and not argv[0].startswith("["):
            out.append(argv)
    return out


def runs_as(policy_words, argv):
    """Whether bash's `argv` can be what the policy's words became: a word holding an
    expansion may become any number of words (none, when it expands to nothing)."""
    if not policy_words:
        return not argv
    w = policy_words[0]
    if is_wild(w):
        return any(runs_as(policy_words[1:], argv[k:]) for k in range(len(argv) + 1))
    return bool(argv) and argv[0] == w and runs_as(policy_words[1:], argv[1:])


DECLARATIONS = {"declare", "typeset", "local", "export", "readonly"}


def bash_uncovered(line, view):
    """What bash itself runs for `line` (its `-x` trace, sandboxed as in the canary pass)
    that the policy's view does not cover: the check a reviewed disagreement must pass.
    An expanded word in the policy's view matches any word."""
    ran = []
    run_in_bash(line, xtrace=ran)
    if "error" in view:
        return []
    def seen(argv):
        if argv[0] in DECLARATIONS:
            # bash traces a declaration's array assignments in its own format; the name
            # and the options are what a rule can name.
            head = [w for w in argv if w.startswith("-")]
            return any(c and c[0] == argv[0] and [w for w in c if w.startswith("-")] == head
                       for c in view["commands"])
        return covered(argv, view["commands"]) or any(
            runs_as(c[k:], argv) for c in view["commands"]
            for k in (range(len(c)) if c and c[0].rsplit("/", 1)[-1] in WRAPPERS else [0]))
    return [argv for argv in ran if not seen(argv)
            and not (view["opaque"] and argv[0] in view["opaque"])]


def canary_pass(lines, views, control):
    """Runs the allowed lines (and `control` denied ones) in bash; the bypasses and the
    figures."""
    allowed = [ln for ln, v in zip(lines, views) if v.get("denied") is None]
    denied = [ln for ln, v in zip(lines, views) if v.get("denied") is not None]
    bypasses = []
    for ln in dict.fromkeys(allowed):
        found = run_in_bash(ln)
        if found:
            bypasses.append((ln, found))
    seen = 0
    sample = list(dict.fromkeys(denied))[:control]
    for ln in sample:
        seen += bool(run_in_bash(ln))
    return bypasses, {"rules": DENY_RULES, "allowed": len(allowed),
                      "allowed_distinct_run": len(dict.fromkeys(allowed)),
                      "denied": len(denied), "denied_sample_run": len(sample),
                      "denied_sample_that_would_have_hit_a_canary": seen,
                      "bypasses": len(bypasses)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=43)
    ap.add_argument("--real", default=REAL, help="the real commands (real_commands.jsonl)")
    ap.add_argument("--local-max", type=int, default=0,
                    help="also this many lines harvested from this machine's scripts")
    ap.add_argument("--shfmt-sample", type=int, default=2_000)
    ap.add_argument("--agent", default="target/debug/agent")
    ap.add_argument("--no-canary", action="store_true")
    ap.add_argument("--canary-control", type=int, default=500)
    ap.add_argument("--reviewed", default=REVIEWED, help="the reviewed list (reviewed.txt)")
    a = ap.parse_args()
    reviewed = load_reviewed(a.reviewed)
    seen_reviewed = set()
    rng = random.Random(a.seed)
    generated = [generate(rng) for _ in range(a.generated)]
    real, repos = load_real(a.real)
    local, files = harvest(a.local_max) if a.local_max else ([], {})
    total_bad = 0
    report = {}
    for name, corpus in (("generated", generated), ("real", real), ("local", local)):
        if not corpus:
            continue
        views = policy_views(a.agent, corpus)
        bad, errors, opaque = [], 0, 0
        for line, view in zip(corpus, views):
            errors += "error" in view
            opaque += bool(view.get("opaque"))
            why = disagreement(line, view)
            if why:
                bad.append((line, why, view))
        # mvdan/sh: every command name it sees must be a policy command's first word.
        sample = corpus if name != "generated" else corpus[:a.shfmt_sample]
        sample = sample[:a.shfmt_sample]
        sh_checked = 0
        for line, view in zip(sample, views):
            if "error" in view:
                continue
            r = sh_names(line)
            if r is None:
                continue
            sh_checked += 1
            names, wild = r
            if wild and not view["opaque"]:
                # An expansion as a program: only a bypass if a real parser agrees.
                if any(c and c[0] is WILD for c in ts_commands(line)[0]):
                    bad.append((line, "mvdan/sh: a program is an expansion, not opaque", view))
                continue
            names -= RESERVED
            heads = {c[0] for c in view["commands"] if c}
            heads |= {c[0].rsplit("/", 1)[-1] for c in view["commands"] if c}
            missing = sorted(n for n in names if n not in heads)
            if missing:
                bad.append((line, f"mvdan/sh runs {missing}, which the rules do not check",
                            view))
        known = [b for b in bad if b[0] in reviewed]
        seen_reviewed.update(b[0] for b in known)
        new = [b for b in bad if b[0] not in reviewed]
        # Each reviewed one is checked against bash again: what bash runs must be covered.
        verified = 0
        if canary_possible() and not a.no_canary:
            for line, why, view in known:
                missed = bash_uncovered(line, view)
                if missed:
                    new.append((line, f"reviewed, but bash runs {missed}, which the rules "
                                f"do not check", view))
                else:
                    verified += 1
        report[name] = {"commands": len(corpus), "tree_sitter_checked": len(corpus),
                        "mvdan_sh_checked": sh_checked, "policy_parse_errors": errors,
                        "opaque": opaque, "disagreements": len(bad),
                        "reviewed_misreadings": len(known),
                        "reviewed_checked_against_bash": verified,
                        "new_disagreements": len(new)}
        for line, why, view in new[:50]:
            print(f"--- {name}: {why}\n{json.dumps(line)}\npolicy: {json.dumps(view)}",
                  file=sys.stderr)
        total_bad += len(new)
        if name == "generated" and not a.no_canary:
            if canary_possible():
                bypasses, figures = canary_pass(corpus, views, a.canary_control)
                report["canary"] = figures
                for line, found in bypasses[:50]:
                    print(f"--- canary bypass: {found}\n{json.dumps(line)}", file=sys.stderr)
                total_bad += len(bypasses)
            else:
                report["canary"] = "not run: needs root, unshare and setpriv"
    # Reviewed lines this run did not meet (another machine's real corpus, or another seed).
    report["reviewed_not_met"] = len(reviewed - seen_reviewed)
    report["real_sources"] = {"repositories": len(repos), "commands": repos}
    if local:
        report["local_sources"] = {"files": len(files),
                                   "top": sorted(files.items(), key=lambda kv: -kv[1])[:10]}
    print(json.dumps(report, indent=2))
    sys.exit(1 if total_bad else 0)


if __name__ == "__main__":
    main()
