#!/usr/bin/env python3
"""Writes ci/link/hot-symbols.txt: the functions of the `agent` binary that the benchmark's
runs execute, hottest first, for the release link's `--symbol-ordering-file` (build.rs).

Placed together at the start of `.text`, the code a run executes shares a few 64 KB
fault-around windows instead of touching windows spread over the whole 7 MB of code: the
kernel maps every cached page of a window on the first fault in it, so scattered hot code
made most of the binary resident (decision 0134).

The runs, each under `valgrind --tool=callgrind --demangle=no` (the symbol names the linker
sees): the small session (ReadFile, bench.py's), the long session with `-o --jsonl`, a
Grep and a Glob replay over this repository's src/. A function is
listed once: the small session's functions first, then the others, each part ordered by
the function's own instruction count over all runs (ties by name, so the file is stable). Needs valgrind and an unstripped release binary of the same commit and
toolchain (mangled names carry a hash of the crate's build):

    CARGO_PROFILE_RELEASE_STRIP=none cargo build --release --bin agent
    python3 ci/bench/hot_symbols.py target/release/agent

A stale list costs memory, not correctness: symbols it names that no longer exist are
skipped by the linker (`--no-warn-symbol-ordering`). Not part of .ci/run; about a minute."""
import collections
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import bench  # noqa: E402  (Mock, write_cassette, API_KEY)

OUT = os.path.join(ROOT, "ci", "link", "hot-symbols.txt")
HEADER = ("# The functions a benchmark run executes, hottest first: the release link places them\n"
          "# first in .text (build.rs, decision 0134). Written by ci/bench/hot_symbols.py.\n")


def costs(profile, binary):
    """Self instruction count per function of `binary` in one callgrind profile (not the
    nameless: callgrind's `0x…` addresses and "(below main)")."""
    names, objs = {}, {}
    total = collections.Counter()
    ob = fn = None
    skip_next = False
    for line in open(profile, errors="replace"):
        line = line.rstrip("\n")
        m = re.match(r"^(c?ob|c?fn|c?fi|c?fe|fl)=\((\d+)\)(?: (.*))?$", line)
        if m:
            kind, ident, name = m.groups()
            table = objs if kind.endswith("ob") else names
            if name is not None and kind.endswith(("ob", "fn")):
                # callgrind marks recursion levels ('2); the linker knows the plain name
                table[ident] = re.sub(r"'\d+$", "", name)
            if kind == "ob":
                ob = objs.get(ident)
            elif kind == "fn":
                fn = names.get(ident)
            continue
        if line.startswith("calls="):
            skip_next = True  # the next line is the call's inclusive cost
            continue
        if skip_next:
            skip_next = False
            continue
        if fn and ob and fn[0] not in "0(" and os.path.realpath(ob) == binary and line and line[0] in "0123456789+-*":
            parts = line.split()
            if len(parts) >= 2 and parts[-1].isdigit():
                total[fn] += int(parts[-1])
    return total


def callgrind(binary, out, name, argv, cwd, env):
    profile = os.path.join(out, f"cg.{name}")
    subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={profile}",
                    binary, *argv], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                   stderr=open(os.path.join(out, f"valgrind.{name}.log"), "w"), check=True)
    return costs(profile, binary)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: hot_symbols.py AGENT_BINARY (unstripped release build)")
    binary = os.path.realpath(sys.argv[1])
    if b".symtab" not in subprocess.run(["readelf", "-S", binary], capture_output=True).stdout:
        sys.exit(f"hot_symbols: {binary} has no symbol table (CARGO_PROFILE_RELEASE_STRIP=none)")
    out = os.path.join(HERE, "out", "hot-symbols")
    shutil.rmtree(out, ignore_errors=True)
    ws = os.path.join(out, "ws")
    os.makedirs(os.path.join(ws, "files"))
    for n in range(1, 101):  # both sessions' files, as bench.py writes them
        with open(os.path.join(ws, "files", f"f{n:03d}.txt"), "w") as f:
            f.write(f"small file {n}\n" + "some content line\n" * 8)
        text, i = f"long file {n}\n", 0
        while len(text) < bench.LONG_FILE_BYTES:
            i += 1
            text += f"long session line of about sixty characters, numbered: {n}.{i}\n"
        with open(os.path.join(ws, "files", f"g{n:03d}.txt"), "w") as f:
            f.write(text)
    env = dict(os.environ, ANTHROPIC_API_KEY=bench.API_KEY)
    total = collections.Counter()
    session = collections.Counter()
    prompt = ["run", "Read the files one by one.", "-C", ws, "--max-turns", "110", "-q"]
    with bench.Mock(out, "session", "--script", "session", "--turns", "100", "--workspace", ws) as m:
        session = callgrind(binary, out, "session", prompt + ["--base-url", m.url], ws, env)
        total += session
    with bench.Mock(out, "long", "--script", "long", "--turns", "100", "--workspace", ws) as m:
        total += callgrind(binary, out, "long", prompt + ["--base-url", m.url, "-o",
                                                          os.path.join(out, "t.json"), "--jsonl"], ws, env)
    src = os.path.join(ROOT, "src")
    for tool, tool_input in (("Grep", {"pattern": r"fn \w+_nonblocking\("}), ("Glob", {"pattern": "**/*.rs"})):
        cassette = os.path.join(out, f"{tool}.cassette.jsonl")
        bench.write_cassette(cassette, src, tool, tool_input)
        total += callgrind(binary, out, tool, ["run", "x", "--replay", cassette, "-C", src, "-q"], src, env)
    # The small session's functions first (the benchmark's peak RSS), then the others.
    names = sorted(total, key=lambda k: (k not in session, -total[k], k))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write(HEADER)
        for n in names:
            f.write(n + "\n")
    print(f"hot_symbols: {len(names)} functions, {sum(total.values()):,} instructions -> "
          f"{os.path.relpath(OUT, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
