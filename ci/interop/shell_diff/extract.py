#!/usr/bin/env python3
"""Extracts real shell commands from public repositories for the differential (issue 43).

Reads snapshots of public GitHub repositories (bare git directories, read with
`git show`) and writes `real_commands.jsonl`: one JSON object a line, `{"source":
"owner/name@commit:path", "command": "…"}`, each command as a shell would get it:

- `.github/workflows/*.yml`: each `run:` step that runs in bash or sh (a step, job or
  workflow `shell:` of another kind, or a Windows runner without one, is skipped); the
  runner substitutes `${{ … }}` before the shell sees the script, so each becomes
  `${GHA_EXPR}` (a word known only when it runs);
- Makefiles: each recipe line (`@`, `-`, `+` taken off, continuations kept as the shell
  gets them); make expands its own references first, so `$$` becomes `$` and every
  `$(…)`, `${…}` and `$X` of make becomes `${MK}`;
- `*.sh`, `*.bash` and files whose `#!` names bash or sh.

A script is cut into its top-level commands as tree-sitter-bash parses it (a multi-line
`if`, loop, function or here-document stays one command); a command that does not parse
on its own, or is longer than `MAX_CHARS`, is left out; duplicates are kept once. Each
repository gives at most `--per-repo` commands, taken in turn from its files so that no
one file dominates.

Usage: extract.py [--per-repo N] [--out FILE] OWNER+NAME=GIT_DIR...
"""

import argparse
import json
import re
import subprocess
import sys

import tree_sitter_bash
import yaml
from tree_sitter import Language, Parser

TS = Parser(Language(tree_sitter_bash.language()))
MAX_CHARS = 500
SHEBANG = re.compile(rb"#!\s*/(usr/)?bin/(env\s+)?(ba|da)?sh\b")


def git(gitdir, *args):
    return subprocess.run(["git", "-C", gitdir, *args], capture_output=True,
                          check=True).stdout


def commands_of(script):
    """The top-level commands of a script that parse on their own."""
    src = script.encode()
    out = []
    for node in TS.parse(src).root_node.named_children:
        if node.type == "comment" or node.has_error:
            continue
        text = src[node.start_byte:node.end_byte].decode("utf-8", "replace").strip()
        if not text or len(text) > MAX_CHARS:
            continue
        # Its own parse: a here-document's body lies past the node's end in the file.
        if node.type != "redirected_statement" and TS.parse(text.encode()).root_node.has_error:
            continue
        if node.type == "redirected_statement":
            end = node.end_byte
            # Take the here-document bodies that follow the statement along with it.
            bodies = [c for c in node.children if c.type == "heredoc_redirect"]
            for b in bodies:
                end = max(end, b.end_byte)
            text = src[node.start_byte:end].decode("utf-8", "replace").strip()
            if len(text) > MAX_CHARS or TS.parse(text.encode()).root_node.has_error:
                continue
        out.append(text)
    return out


GHA = re.compile(r"\$\{\{.*?\}\}", re.S)


def shell_ok(shell):
    return shell is None or str(shell).split()[0].rsplit("/", 1)[-1] in ("bash", "sh")


def workflow_scripts(text):
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    if not isinstance(doc, dict):
        return []
    top = ((doc.get("defaults") or {}).get("run") or {}).get("shell")
    out = []
    for job in (doc.get("jobs") or {}).values():
        if not isinstance(job, dict):
            continue
        jshell = ((job.get("defaults") or {}).get("run") or {}).get("shell") or top
        windows = "windows" in json.dumps(job.get("runs-on", "")).lower()
        for step in job.get("steps") or []:
            if not isinstance(step, dict) or not isinstance(step.get("run"), str):
                continue
            shell = step.get("shell") or jshell
            if not shell_ok(shell) or (windows and shell is None):
                continue
            out.append(GHA.sub("${GHA_EXPR}", step["run"]))
    return out


def make_expand(line):
    """A recipe line as make hands it to the shell, make's references unknown."""
    out, i = [], 0
    while i < len(line):
        c = line[i]
        if c != "$" or i + 1 == len(line):
            out.append(c)
            i += 1
            continue
        n = line[i + 1]
        if n == "$":
            out.append("$")
            i += 2
        elif n in "({":
            close = ")" if n == "(" else "}"
            depth, j = 0, i + 1
            while j < len(line):
                if line[j] == n:
                    depth += 1
                elif line[j] == close:
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            out.append("${MK}")
            i = j + 1
        else:
            out.append("${MK}")
            i += 2
    return "".join(out)


def makefile_scripts(text):
    out, lines = [], text.split("\n")
    i = 0
    while i < len(lines):
        raw = lines[i]
        i += 1
        if not raw.startswith("\t"):
            continue
        parts = [raw[1:]]
        while parts[-1].endswith("\\") and i < len(lines):
            nxt = lines[i]
            i += 1
            parts.append(nxt[1:] if nxt.startswith("\t") else nxt)
        line = "\n".join(parts).lstrip("@-+ \t")
        if line and not line.startswith("#"):
            out.append(make_expand(line))
    return out


def kind_of(path, head):
    name = path.rsplit("/", 1)[-1]
    if re.match(r"(^|.*/)\.github/workflows/[^/]+\.ya?ml$", path):
        return "workflow"
    if re.match(r"^(GNU)?[Mm]akefile", name) or name.endswith(".mk"):
        return "make"
    if name.endswith((".sh", ".bash")) or ("." not in name and SHEBANG.match(head)):
        return "script"
    return None


def repo_commands(name, gitdir, per_repo):
    commit = git(gitdir, "rev-parse", "HEAD").decode().strip()
    listing = git(gitdir, "ls-tree", "-r", "-l", "HEAD").decode().splitlines()
    per_file = []
    for row in listing:
        meta, path = row.split("\t", 1)
        mode, kind, sha, size = meta.split()
        if kind != "blob" or mode == "120000" or size == "-" or int(size) > 512 * 1024:
            continue
        base = path.rsplit("/", 1)[-1]
        candidate = (base.endswith((".yml", ".yaml", ".sh", ".bash", ".mk"))
                     or "akefile" in base or "." not in base)
        if not candidate:
            continue
        blob = git(gitdir, "cat-file", "blob", sha)
        k = kind_of(path, blob[:128])
        if k is None:
            continue
        text = blob.decode("utf-8", "replace")
        scripts = {"workflow": workflow_scripts, "make": makefile_scripts,
                   "script": lambda t: [t]}[k](text)
        cmds = [c for s in scripts for c in commands_of(s)]
        if cmds:
            per_file.append((f"{name.replace('+', '/')}@{commit}:{path}", cmds))
    # In turn from each file, so the repository's share is spread over its files.
    out, seen, round_ = [], set(), 0
    while len(out) < per_repo and any(round_ < len(c) for _, c in per_file):
        for source, cmds in per_file:
            if round_ < len(cmds) and cmds[round_] not in seen and len(out) < per_repo:
                seen.add(cmds[round_])
                out.append({"source": source, "command": cmds[round_]})
        round_ += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-repo", type=int, default=400)
    ap.add_argument("--out", default="real_commands.jsonl")
    ap.add_argument("repos", nargs="+", help="OWNER+NAME=GIT_DIR")
    a = ap.parse_args()
    records, seen = [], set()
    for spec in a.repos:
        name, gitdir = spec.split("=", 1)
        got = [r for r in repo_commands(name, gitdir, a.per_repo) if r["command"] not in seen]
        seen.update(r["command"] for r in got)
        records += got
        print(f"{name}: {len(got)} commands", file=sys.stderr)
    with open(a.out, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(records)} commands in {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
