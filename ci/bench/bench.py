#!/usr/bin/env python3
"""The benchmark suite: measures `agent` against its peers in one run, checks the
performance targets (docs/SPEC.md §8), prints a Markdown table and writes it into
docs/performance.md (the book's performance page) (between the bench markers, replacing the previous table).

Run it through ci/bench/run.sh, which installs the tools and builds the release binary.
Direct use:
    python3 ci/bench/bench.py --agent target/release/agent [--claude PATH] [--tree DIR]
                              [--runs N] [--no-readme]
Environment: BENCH_TREE (the search tree), BENCH_RUNS (repetitions), BENCH_PATTERN (the rare
regex for Grep). Python 3.11 standard library only. See ci/bench/README.md for what each
number means."""
import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
START_MARK = "<!-- bench:start -->"
END_MARK = "<!-- bench:end -->"

SESSION_TURNS = 100  # tool turns in the scripted session; the model answers once more at the end
LONG_TURNS = 100  # tool turns of the long session
LONG_FILE_BYTES = 6000  # each long-session result: ~6 KB, ~150k tokens over the session
LONG_RUNS = 3  # long-session repetitions per agent mode (claude -p: LONG_CLAUDE_RUNS)
LONG_CLAUDE_RUNS = 1  # claude -p takes a minute or more per long session
LONG_COMPACT_WINDOW = 40000  # the long session's compacting mode: --context-window
LONG_WINDOW = 20  # turns compared: the first 20 against the last 20
SECTIONS = ("session", "codex", "long", "syscalls", "search", "streaming", "startup")
TIME = "/usr/bin/time"  # GNU time: a small parent, so %M is the peer's own peak RSS
SESSION_TIMEOUT_S = 600  # one peer's whole session; claude -p takes seconds, a hang must not block
DEFAULT_RUNS = 5  # session repetitions per peer (medians are quoted)
HYPERFINE_RUNS = 21  # runs per command in each hyperfine comparison, over all rounds
HYPERFINE_ROUNDS = 3  # hyperfine calls per comparison, the command order rotating
HYPERFINE_WARMUP = 2  # warm the page cache and the binaries before timing
STARTUP_RUNS = 100  # `agent --version` is a few ms: many runs for a stable median
STREAMING_RUNS = 10  # streaming check runs per mode, alternating
MIN_TEXT_S = 0.2  # the streaming check's text lasts at least this long, to stand out of the noise
CALIBRATION_RUNS = 3  # runs that time the Grep alone, to make the text after it as long
DEFAULT_PATTERN = r"def \w+_nonblocking\("  # rare in CPython's tree: both tools walk it all
GLOB_SUFFIX = "pyi"
API_KEY = "sk-ant-bench-not-a-real-key"

# The targets of docs/SPEC.md §8.
T_CPU_PER_TURN_MS = 1.0
T_PEER_FACTOR = 10.0
T_RSS_MB = 30.0
T_SEARCH_FACTOR = 1.3  # Glob against fd
T_GREP_FACTOR = 1.0  # Grep against rg over the same files
T_HIDDEN_SHARE = 0.8  # share of the shorter of (tool, text) that streaming execution must hide
T_STARTUP_MS = 5.0
# The long-session and small-session targets of docs/SPEC.md §8.
T_LONG_GROWTH = 1.2  # CPU per turn of turns 81-100 over turns 1-20, plain and with -o and --jsonl
T_LONG_RSS_SLACK_MB = 10.0  # peak RSS <= 2 x the history + this
T_SESSION_CPU_MS = 0.3  # the 101-turn small-file session's CPU per turn
T_SESSION_RSS_MB = 8.0
T_OTEL_OVERHEAD = 0.10  # OTLP export on (to a loopback collector): CPU per turn within 10 % of off
T_SYSCALLS_PER_TURN = 30  # strace -c -f of the small session, over its model requests
# The peers' ratios: agent's CPU per turn and peak RSS against theirs.
T_CLAUDE_CPU = 50.0  # claude -p, the small session
T_CODEX_CPU_READ = 100.0  # codex exec (exec_command) against agent with ReadFile (in-process)
T_CODEX_CPU_BASH = 7.0  # codex exec against agent with Bash (both start a shell per command)
T_PEER_RSS = 15.0  # peak RSS against either peer

# Peers that could not be measured: (peer, why). Any makes the run fail (exit 1) after the
# table is printed, and the page keeps its previous table: a table with a hole must not
# look finished.
PEER_FAILURES = []


def peer_failed(peer, why):
    PEER_FAILURES.append((peer, why))
    log(f"FAILED: {peer} cannot be measured: {why}")

CLAUDE_ENV = {
    "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
}


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def first_line(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError) as e:
        return f"unavailable ({e})"


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "kernel": f"{platform.system()} {platform.release()}",
        "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def default_tree():
    """The biggest of the installed Python library directories."""
    paths = sysconfig.get_paths()
    cands = {paths["stdlib"], os.path.dirname(paths["purelib"])}
    best, best_n = None, -1
    for c in cands:
        if os.path.isdir(c):
            n = sum(len(fs) for _, _, fs in os.walk(c))
            if n > best_n:
                best, best_n = c, n
    return best


# ---------------------------------------------------------------- processes


class Mock:
    """mock_server.py in the background, on a free loopback port."""

    def __init__(self, out_dir, name, *args):
        self.log = os.path.join(out_dir, f"mock-{name}.jsonl")
        port_file = os.path.join(out_dir, f"mock-{name}.port")
        for p in (self.log, port_file):
            if os.path.exists(p):
                os.remove(p)
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "mock_server.py"), *args,
                                      "--port-file", port_file, "--log", self.log])
        deadline = time.monotonic() + 10
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the mock server did not start")
            time.sleep(0.05)
        with open(port_file) as f:
            self.url = f"http://127.0.0.1:{f.read().strip()}"

    def requests(self):
        try:
            with open(self.log) as f:
                return [json.loads(line) for line in f if line.strip()]
        except OSError:
            return []

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class OtlpSink:
    """A loopback OTLP/HTTP collector that takes every export with 200 (the session's
    "agent, export on" peer sends its traces and metrics here); counts requests and bytes."""

    def __init__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        sink = self
        self.requests = 0
        self.bytes = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(n)
                sink.requests += 1
                sink.bytes += n
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()


def measure(argv, cwd, env, timeout=SESSION_TIMEOUT_S, pid_file=None):
    """Runs argv to its end; its own CPU (user+sys, children included) comes from wait4's
    rusage, so no other process's usage is counted. Peak RSS comes from GNU time's %M:
    wait4's ru_maxrss of a child spawned by Python starts at Python's own high-water mark
    (vfork/fork + exec keeps it), which made `agent --version` read 16 MB instead of 4.
    time forks the peer from a process of ~2 MB, so %M is the peer's own peak (to ~2 MB).
    With pid_file, the wrapper's pid is written there (the mock samples the peer's CPU)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r", suffix=".rss") as rss:
        wrapped = [TIME, "-f", "%M", "-o", rss.name, *argv] if os.access(TIME, os.X_OK) else argv
        t0 = time.monotonic()
        proc = subprocess.Popen(wrapped, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, start_new_session=True)
        if pid_file:
            with open(pid_file + ".tmp", "w") as f:
                f.write(str(proc.pid))
            os.replace(pid_file + ".tmp", pid_file)
        killer = threading.Timer(timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
        killer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
            if pid_file and os.path.exists(pid_file):
                os.remove(pid_file)  # the next run's first request must not sample a dead pid
        wall = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        rss_kb = ru.ru_maxrss
        if wrapped is not argv:
            try:  # the last line: time prints "Command exited with non-zero status" first
                rss_kb = int(rss.read().split()[-1])
            except (ValueError, IndexError):
                rss_kb = float("nan")
        return {"rc": proc.returncode, "cpu_s": ru.ru_utime + ru.ru_stime,
                "rss_mb": rss_kb / 1024.0, "wall_s": wall,
                "stdout": out.read().decode(errors="replace"),
                "stderr": err.read().decode(errors="replace")}


def hyperfine(commands, out_dir, name, env=None, runs=HYPERFINE_RUNS, warmup=HYPERFINE_WARMUP,
              rounds=HYPERFINE_ROUNDS):
    """Times [(label, argv)] with hyperfine (no shell in between); returns label -> stats (s).
    hyperfine runs one command's runs back to back, so a burst of load on a shared machine
    would land on one side only: the runs are split over `rounds` hyperfine calls, the
    command order rotating each round, and the statistics are taken over all the times."""
    times = {label: [] for label, _ in commands}
    per_round = max(2, -(-runs // rounds))
    log(f"hyperfine {name}: {', '.join(label for label, _ in commands)}")
    with open(os.path.join(out_dir, f"hyperfine-{name}.txt"), "w") as transcript:
        for r in range(rounds):
            k = r % len(commands)
            order = commands[k:] + commands[:k]
            export = os.path.join(out_dir, f"hyperfine-{name}-{r + 1}.json")
            argv = ["hyperfine", "-N", "--style", "basic", "--warmup", str(warmup), "--runs",
                    str(per_round), "--export-json", export]
            for label, cmd in order:
                argv += ["-n", label, shlex.join(cmd)]
            res = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True)
            transcript.write(f"== round {r + 1}\n{res.stdout}\n")
            if res.returncode != 0:
                raise RuntimeError(f"hyperfine {name} failed:\n{res.stdout[-2000:]}")
            with open(export) as f:
                for result in json.load(f)["results"]:
                    times[result["command"]] += result["times"]
    return {label: {"median": statistics.median(t), "mean": statistics.mean(t),
                    "stddev": statistics.stdev(t) if len(t) > 1 else 0.0, "min": min(t), "max": max(t),
                    "runs": len(t)} for label, t in times.items()}


# ---------------------------------------------------------------- cassettes


def frame(event, data):
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def sse_turn(n, blocks, stop_reason):
    """One recorded response: blocks are ("text", str) or ("tool", name, input)."""
    msg = {"id": f"msg_bench_{n}", "type": "message", "role": "assistant",
           "model": "claude-sonnet-4-5-20250929", "content": [], "stop_reason": None,
           "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 1}}
    out = [frame("message_start", {"type": "message_start", "message": msg})]
    for i, b in enumerate(blocks):
        if b[0] == "tool":
            out.append(frame("content_block_start", {"type": "content_block_start", "index": i,
                                                     "content_block": {"type": "tool_use", "name": b[1],
                                                                       "id": f"toolu_bench_{n}_{i}",
                                                                       "input": {}}}))
            out.append(frame("content_block_delta", {"type": "content_block_delta", "index": i,
                                                     "delta": {"type": "input_json_delta",
                                                               "partial_json": json.dumps(b[2])}}))
        else:
            out.append(frame("content_block_start", {"type": "content_block_start", "index": i,
                                                     "content_block": {"type": "text", "text": ""}}))
            out.append(frame("content_block_delta", {"type": "content_block_delta", "index": i,
                                                     "delta": {"type": "text_delta", "text": b[1]}}))
        out.append(frame("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(frame("message_delta", {"type": "message_delta",
                                       "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                       "usage": {"output_tokens": 10}}))
    out.append(frame("message_stop", {"type": "message_stop"}))
    return "".join(out)


def write_cassette(path, workspace, tool, tool_input):
    """A 2-turn cassette: one `tool` call, then end_turn (see src/provider/cassette.rs)."""
    lines = [
        {"type": "header", "format": 1, "provider": "anthropic", "model": "claude-sonnet-4-5-20250929",
         "agent_version": "bench", "workspace": workspace, "tools": ["Glob", "Grep", "ReadFile"]},
        {"type": "turn", "index": 1, "request": {"messages": 1, "tools": ["Glob", "Grep", "ReadFile"]},
         "sse": sse_turn(1, [("tool", tool, tool_input)], "tool_use")},
        {"type": "turn", "index": 2, "request": {"messages": 3, "tools": ["Glob", "Grep", "ReadFile"]},
         "sse": sse_turn(2, [("text", "Done.")], "end_turn")},
    ]
    with open(path, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


def first_tool_result(transcript_json):
    """The first tool call's result text, duration and metadata from an `agent --json` transcript."""
    t = json.loads(transcript_json)
    for m in t["messages"]:
        if m["role"] == "user" and isinstance(m["content"], list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    c = b.get("content")
                    if isinstance(c, list):
                        c = "".join(x.get("text", "") for x in c)
                    call = t["tool_calls"][0]
                    return str(c), call["duration_ms"] / 1000.0, call.get("metadata") or {}
    raise RuntimeError("no tool result in the transcript")


# ---------------------------------------------------------------- the benchmarks


def bench_session(agent, claude, out_dir, runs):
    """Item 1: per-turn CPU and peak RSS of a 100-turn scripted session, both peers."""
    ws = os.path.join(out_dir, "session-ws")
    shutil.rmtree(ws, ignore_errors=True)
    os.makedirs(os.path.join(ws, "files"))
    for n in range(1, SESSION_TURNS + 1):
        with open(os.path.join(ws, "files", f"f{n:03d}.txt"), "w") as f:
            f.write(f"small file {n}\n" + "some content line\n" * 8)
    home = os.path.join(out_dir, "claude-home")  # claude -p keeps its config out of the real HOME
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    expected = f"Read {SESSION_TURNS} files. Done."
    res = {"agent": [], "agent-otel": [], "claude": [], "claude_error": None,
           "turns": SESSION_TURNS + 1}
    with Mock(out_dir, "session", "--script", "session", "--turns", str(SESSION_TURNS),
              "--workspace", ws) as mock, OtlpSink() as sink:
        base = dict(os.environ, ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=mock.url)
        base = {k: v for k, v in base.items() if not k.startswith("OTEL_") and k != "TRACEPARENT"}
        agent_argv = [agent, "run", "Read the files one by one.", "-C", ws,
                      "--max-turns", str(SESSION_TURNS + 10), "--base-url", mock.url, "-q"]
        # The same agent with OpenTelemetry export on (README "OpenTelemetry"), to a
        # loopback collector: its CPU must stay within T_OTEL_OVERHEAD of export off.
        peers = {"agent": (agent_argv, base),
                 "agent-otel": (agent_argv, dict(base, OTEL_EXPORTER_OTLP_ENDPOINT=sink.url))}
        if claude:
            peers["claude"] = ([claude, "-p", "Read the files one by one.", "--allowedTools", "Read",
                                "--max-turns", str(SESSION_TURNS + 10), "--output-format", "text"],
                               dict(base, HOME=home, CLAUDE_CONFIG_DIR=os.path.join(home, ".claude"),
                                    **CLAUDE_ENV))
        else:
            res["claude_error"] = "the claude binary was not found (ci/bench/run.sh installs it)"
            peer_failed("claude -p", res["claude_error"])
        # One warm-up run each (not counted), then the peers alternate, so both see the
        # same machine load.
        for i in range(runs + 1):
            for peer, (argv, env) in list(peers.items()):
                before = len(mock.requests())
                r = measure(argv, ws, env)
                reqs = mock.requests()[before:]
                # The mock tells peers apart by their tools: both agent runs are "agent".
                main = [q for q in reqs if q.get("peer") == peer.removesuffix("-otel")]
                r["requests"] = len(reqs)
                r["main_requests"] = len(main)
                r["tool_errors"] = max([q.get("tool_errors", 0) for q in main] or [0])
                ok = r["rc"] == 0 and expected in r["stdout"] and len(main) == SESSION_TURNS + 1
                label = "warm-up" if i == 0 else f"run {i}"
                log(f"session {peer} {label}: rc={r['rc']} cpu={r['cpu_s']:.3f}s "
                    f"rss={r['rss_mb']:.1f}MB wall={r['wall_s']:.2f}s requests={len(reqs)} "
                    f"(main {len(main)}, tool errors {r['tool_errors']})")
                if not ok:
                    why = (f"exit {r['rc']}, {len(main)} of {SESSION_TURNS + 1} model requests, "
                           f"stdout {r['stdout'][-200:]!r}, stderr {r['stderr'][-400:]!r}")
                    if peer.startswith("agent"):
                        raise RuntimeError(f"agent's session ({peer}) failed: {why}")
                    res["claude_error"] = f"claude -p did not complete the session: {why}"
                    peer_failed("claude -p", res["claude_error"])
                    del peers["claude"]
                    continue
                if i > 0:
                    res[peer].append(r)
        side = [q for q in mock.requests() if q.get("peer") == "side" or q.get("method") != "POST"]
        res["side_requests"] = sorted({f"{q.get('method')} {q.get('path')} "
                                       f"{q.get('model') or ''}".strip() for q in side})
        res["otlp_exports"] = {"requests": sink.requests, "bytes": sink.bytes}
    for peer in ("agent", "agent-otel", "claude"):
        rs = res[peer]
        if rs:
            res[peer + "_summary"] = {
                "cpu_s": statistics.median(r["cpu_s"] for r in rs),
                "cpu_per_turn_ms": statistics.median(r["cpu_s"] for r in rs) / res["turns"] * 1000,
                "rss_mb": statistics.median(r["rss_mb"] for r in rs),
                "wall_s": statistics.median(r["wall_s"] for r in rs),
                "requests": statistics.median(r["requests"] for r in rs),
                "runs": len(rs),
            }
        res[peer] = [{k: v for k, v in r.items() if k not in ("stdout", "stderr")} for r in rs]
    return res


# codex exec's features that reach the network or run services: off, as the issue asks
# (update checks, analytics, OTel and plugin sync are off in its config.toml too).
CODEX_DISABLED_FEATURES = ("plugins", "remote_plugin", "apps", "in_app_updates", "daemon_auto_start",
                           "goals", "multi_agent", "browser_use", "computer_use",
                           "skill_mcp_dependency_install")
CODEX_MODEL = "gpt-5-codex"


def codex_home(path, url):
    """A fresh CODEX_HOME whose config points codex exec at the mock's Responses API."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    with open(os.path.join(path, "config.toml"), "w") as f:
        f.write(f"""model = "{CODEX_MODEL}"
model_provider = "mock"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.mock]
name = "mock"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "BENCH_MOCK_API_KEY"

[analytics]
enabled = false

[otel]
exporter = "none"
""")


def bench_codex(agent, codex, out_dir, runs):
    """codex exec and agent --provider openai-responses on one Responses mock: 100 turns,
    each one command (codex exec_command, agent Bash) or read (agent ReadFile), then the
    answer: CPU per turn and peak RSS, the peers alternating."""
    ws = os.path.join(out_dir, "codex-ws")
    shutil.rmtree(ws, ignore_errors=True)
    os.makedirs(os.path.join(ws, "files"))
    for n in range(1, SESSION_TURNS + 1):
        with open(os.path.join(ws, "files", f"f{n:03d}.txt"), "w") as f:
            f.write(f"small file {n}\n" + "some content line\n" * 8)
    expected = f"Ran {SESSION_TURNS} commands. Done."
    res = {"turns": SESSION_TURNS + 1, "codex_error": None}
    with Mock(out_dir, "codex", "--script", "shell", "--turns", str(SESSION_TURNS),
              "--workspace", ws) as mock:
        home = os.path.join(out_dir, "codex-home")
        codex_home(home, mock.url)
        base = dict(os.environ, OPENAI_API_KEY="sk-bench-not-a-real-key",
                    BENCH_MOCK_API_KEY="sk-bench-not-a-real-key")
        agent_argv = [agent, "run", "Run the commands one by one.", "-C", ws, "--provider",
                      "openai-responses", "--base-url", mock.url + "/v1", "-m", CODEX_MODEL,
                      "--max-turns", str(SESSION_TURNS + 10), "-q"]
        peers = {"agent-bash": (agent_argv + ["--allowed-tools", "Bash"], base),
                 "agent-read": (agent_argv, base)}
        if codex:
            disable = [x for f in CODEX_DISABLED_FEATURES for x in ("--disable", f)]
            peers["codex"] = ([codex, "exec", "--skip-git-repo-check", "-s", "danger-full-access",
                               "--color", "never", *disable, "Run the commands one by one."],
                              dict(base, CODEX_HOME=home))
        else:
            res["codex_error"] = "the codex binary was not found (ci/bench/run.sh installs it)"
            peer_failed("codex exec", res["codex_error"])
        for peer in peers:
            res[peer] = []
        for i in range(runs + 1):
            for peer, (argv, env) in list(peers.items()):
                before = len(mock.requests())
                r = measure(argv, ws, env)
                reqs = mock.requests()[before:]
                main = [q for q in reqs if q.get("peer") == peer]
                r["requests"] = len(reqs)
                r["tool_errors"] = max([q.get("tool_errors", 0) for q in main] or [0])
                ok = r["rc"] == 0 and expected in r["stdout"] and len(main) == SESSION_TURNS + 1
                label = "warm-up" if i == 0 else f"run {i}"
                log(f"codex section {peer} {label}: rc={r['rc']} cpu={r['cpu_s']:.3f}s "
                    f"rss={r['rss_mb']:.1f}MB wall={r['wall_s']:.2f}s requests={len(reqs)} "
                    f"(main {len(main)}, tool errors {r['tool_errors']})")
                if not ok:
                    why = (f"exit {r['rc']}, {len(main)} of {SESSION_TURNS + 1} model requests, "
                           f"stdout {r['stdout'][-200:]!r}, stderr {r['stderr'][-400:]!r}")
                    if peer != "codex":
                        raise RuntimeError(f"{peer}'s session failed: {why}")
                    res["codex_error"] = f"codex exec did not complete the session: {why}"
                    peer_failed("codex exec", res["codex_error"])
                    del peers["codex"]
                    continue
                if i > 0:
                    res[peer].append(r)
        res["side_requests"] = sorted({f"{q.get('method')} {q.get('path')}" for q in mock.requests()
                                       if q.get("peer") == "side" or q.get("method") != "POST"})
    for peer in ("agent-bash", "agent-read", "codex"):
        rs = res.get(peer) or []
        if rs:
            res[peer + "_summary"] = {
                "cpu_s": statistics.median(r["cpu_s"] for r in rs),
                "cpu_per_turn_ms": statistics.median(r["cpu_s"] for r in rs) / res["turns"] * 1000,
                "rss_mb": statistics.median(r["rss_mb"] for r in rs),
                "wall_s": statistics.median(r["wall_s"] for r in rs),
                "runs": len(rs),
            }
        res[peer] = [{k: v for k, v in r.items() if k not in ("stdout", "stderr")} for r in rs]
    return res


def report_codex(codex, add, targets):
    turns = codex["turns"]
    add(f"**codex exec on the same wire** ({SESSION_TURNS} turns of one command, then a final answer: "
        f"{turns} requests to a loopback mock of OpenAI's Responses API; codex exec with "
        "`exec_command`, agent `--provider openai-responses` with Bash and with ReadFile; CPU and "
        "peak RSS as above, medians after a warm-up, the peers alternating)")
    add("")
    add("| peer | CPU per turn | CPU total | peak RSS | wall |")
    add("|---|---|---|---|---|")
    rows = [("codex exec (`exec_command`)", "codex"), ("agent, Bash", "agent-bash"),
            ("agent, ReadFile", "agent-read")]
    for label, key in rows:
        s = codex.get(key + "_summary")
        if s:
            add(f"| {label} | {s['cpu_per_turn_ms']:.2f} ms | {s['cpu_s'] * 1000:.0f} ms "
                f"| {s['rss_mb']:.1f} MB | {s['wall_s']:.2f} s |")
    c, b = codex.get("codex_summary"), codex.get("agent-bash_summary")
    if c and b:
        add(f"| ratio (codex / agent with Bash) | {c['cpu_s'] / b['cpu_s']:.1f}× | "
            f"| {c['rss_mb'] / b['rss_mb']:.1f}× | {c['wall_s'] / b['wall_s']:.1f}× |")
    add("")
    if codex.get("codex_error"):
        add(f"codex exec could not be measured: {codex['codex_error']}")
        add("")
    r = codex.get("agent-read_summary")
    if c and b and r:
        for label, mine, limit in (("in-process tools (ReadFile)", r, T_CODEX_CPU_READ),
                                   ("Bash", b, T_CODEX_CPU_BASH)):
            ratio = c["cpu_s"] / mine["cpu_s"]
            targets.append((f"≥ {limit:.0f}× less CPU per turn than codex exec, agent with {label}",
                            f"{ratio:.1f}×", ratio >= limit, f"{limit / ratio:.2f}× short"))
        ratio = c["rss_mb"] / max(b["rss_mb"], r["rss_mb"])
        targets.append((f"≥ {T_PEER_RSS:.0f}× less peak RSS than codex exec", f"{ratio:.1f}×",
                        ratio >= T_PEER_RSS, f"{T_PEER_RSS / ratio:.2f}× short"))
    else:
        targets.append((f"≥ {T_CODEX_CPU_READ:.0f}× (ReadFile) and ≥ {T_CODEX_CPU_BASH:.0f}× (Bash) less "
                        f"CPU, ≥ {T_PEER_RSS:.0f}× less peak RSS than codex exec", "not measured", None, ""))
    if codex.get("side_requests"):
        add("Other requests to the mock: " + ", ".join(f"`{s}`" for s in codex["side_requests"]) + ".")
        add("")


def window_cpu_ms(reqs, first, last):
    """CPU per turn (ms) over turns first..last (1-based) from the mock's samples: turn k
    runs from the arrival of model request k to that of request k+1."""
    cpu = [q["cpu_ns"] for q in reqs if "cpu_ns" in q]
    if len(cpu) <= last:
        return None
    return (cpu[last] - cpu[first - 1]) / (last - first + 1) / 1e6


def strace_counts(path):
    """{syscall: calls} and the total from `strace -c -f -o PATH`'s summary table."""
    counts, total = {}, None
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) < 5 or not fields[3].isdigit():
                continue
            if fields[-1] == "total":
                total = int(fields[3])
            else:
                counts[fields[-1]] = int(fields[3])
    if total is None:
        raise RuntimeError(f"no total line in {path}")
    return counts, total


def bench_syscalls(agent, out_dir):
    """Syscalls per turn: the small session (100 ReadFile turns, 101 model requests) once
    under `strace -c -f` (every thread), start-up and exit included. A count, not a time:
    it does not move with the machine's load."""
    ws = os.path.join(out_dir, "syscalls-ws")
    shutil.rmtree(ws, ignore_errors=True)
    os.makedirs(os.path.join(ws, "files"))
    for n in range(1, SESSION_TURNS + 1):
        with open(os.path.join(ws, "files", f"f{n:03d}.txt"), "w") as f:
            f.write(f"small file {n}\n" + "some content line\n" * 8)
    table = os.path.join(out_dir, "strace-session.txt")
    with Mock(out_dir, "syscalls", "--script", "session", "--turns", str(SESSION_TURNS),
              "--workspace", ws) as mock:
        env = dict(os.environ, ANTHROPIC_API_KEY=API_KEY)
        argv = ["strace", "-c", "-f", "-o", table, agent, "run", "Read the files one by one.", "-C", ws,
                "--max-turns", str(SESSION_TURNS + 10), "--base-url", mock.url, "-q"]
        r = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=SESSION_TIMEOUT_S)
        main = [q for q in mock.requests() if q.get("peer") == "agent"]
    if r.returncode != 0 or len(main) != SESSION_TURNS + 1:
        raise RuntimeError(f"agent's session under strace failed: exit {r.returncode}, "
                           f"{len(main)} requests, stderr {r.stderr[-400:]!r}")
    counts, total = strace_counts(table)
    turns = SESSION_TURNS + 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:10]
    log(f"syscalls: {total} in {turns} turns ({total / turns:.1f} a turn)")
    return {"total": total, "turns": turns, "per_turn": total / turns, "top": top}


def report_syscalls(sc, add, targets):
    add(f"**Syscalls** (`strace -c -f` of one small session: {sc['turns']} model requests, each "
        f"turn one ReadFile; start-up and exit included): {sc['total']} in all, "
        f"{sc['per_turn']:.1f} a turn. Most frequent: "
        + ", ".join(f"`{name}` {n / sc['turns']:.1f}" for name, n in sc["top"]) + " a turn.")
    add("")
    targets.append((f"≤ {T_SYSCALLS_PER_TURN} syscalls per in-process turn", f"{sc['per_turn']:.1f}",
                    sc["per_turn"] <= T_SYSCALLS_PER_TURN,
                    f"{sc['per_turn'] - T_SYSCALLS_PER_TURN:.1f} over"))


def bench_long(agent, claude, out_dir, runs):
    """A long session (100 turns of ~6 KB results), agent plain and with -o and
    --jsonl, and claude -p: CPU per turn of the first and the last 20 turns, peak RSS."""
    ws = os.path.join(out_dir, "long-ws")
    shutil.rmtree(ws, ignore_errors=True)
    os.makedirs(os.path.join(ws, "files"))
    line = "long session line of about sixty characters, numbered: "
    for n in range(1, LONG_TURNS + 1):
        with open(os.path.join(ws, "files", f"g{n:03d}.txt"), "w") as f:
            text, i = f"long file {n}\n", 0
            while len(text) < LONG_FILE_BYTES:
                i += 1
                text += f"{line}{n}.{i}\n"
            f.write(text)
    home = os.path.join(out_dir, "claude-home-long")
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    expected = f"Read {LONG_TURNS} files. Done."
    pid_file = os.path.join(out_dir, "long.pid")
    if os.path.exists(pid_file):  # left by an interrupted run
        os.remove(pid_file)
    transcript = os.path.join(out_dir, "long-transcript.json")
    res = {"turns": LONG_TURNS + 1, "modes": {}, "claude_error": None}
    with Mock(out_dir, "long", "--script", "long", "--turns", str(LONG_TURNS), "--workspace", ws,
              "--pid-file", pid_file) as mock:
        base = dict(os.environ, ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL=mock.url)
        run = [agent, "run", "Read the files one by one.", "-C", ws, "--max-turns",
               str(LONG_TURNS + 10), "--base-url", mock.url, "-q"]
        # Compaction on: a 40k window is summarised every ~15 turns (the summary requests
        # have no tools, so the mock answers them as a side request).
        compacting = ["--context-window", str(LONG_COMPACT_WINDOW), "--context-strategy", "summarize"]
        modes = [("agent", run, base, runs),
                 ("agent -o --jsonl", run + ["-o", transcript, "--jsonl"], base, runs),
                 ("agent, compacting", run + compacting, base, runs)]
        if claude:
            modes.append(("claude -p", [claude, "-p", "Read the files one by one.", "--allowedTools",
                                        "Read", "--max-turns", str(LONG_TURNS + 10), "--output-format",
                                        "text"],
                          dict(base, HOME=home, CLAUDE_CONFIG_DIR=os.path.join(home, ".claude"),
                               **CLAUDE_ENV), LONG_CLAUDE_RUNS))
        else:
            res["claude_error"] = "the claude binary was not found (ci/bench/run.sh installs it)"
            peer_failed("claude -p", res["claude_error"])
        for label, argv, env, n in modes:
            peer = "claude" if label.startswith("claude") else "agent"
            rows = []
            for i in range(n):
                before = len(mock.requests())
                r = measure(argv, ws, env, pid_file=pid_file)
                main = [q for q in mock.requests()[before:] if q.get("peer") == peer]
                ok = r["rc"] == 0 and len(main) == LONG_TURNS + 1 and (
                    "--jsonl" in argv or expected in r["stdout"])
                first = window_cpu_ms(main, 1, LONG_WINDOW)
                last = window_cpu_ms(main, LONG_TURNS - LONG_WINDOW + 1, LONG_TURNS)
                log(f"long {label} run {i + 1}: rc={r['rc']} cpu={r['cpu_s']:.3f}s "
                    f"rss={r['rss_mb']:.1f}MB wall={r['wall_s']:.2f}s requests={len(main)} "
                    f"turns 1-{LONG_WINDOW}: {first} ms, last {LONG_WINDOW}: {last} ms")
                if not ok or first is None or last is None:
                    why = (f"exit {r['rc']}, {len(main)} of {LONG_TURNS + 1} model requests, "
                           f"stderr {r['stderr'][-400:]!r}")
                    if peer == "agent":
                        raise RuntimeError(f"agent's long session ({label}) failed: {why}")
                    res["claude_error"] = f"claude -p did not complete the long session: {why}"
                    peer_failed("claude -p", res["claude_error"])
                    break
                rows.append({"cpu_s": r["cpu_s"], "rss_mb": r["rss_mb"], "wall_s": r["wall_s"],
                             "first_ms": first, "last_ms": last})
            if rows:
                res["modes"][label] = {
                    "runs": len(rows),
                    "first_ms": statistics.median(x["first_ms"] for x in rows),
                    "last_ms": statistics.median(x["last_ms"] for x in rows),
                    "cpu_per_turn_ms": statistics.median(x["cpu_s"] for x in rows) / res["turns"] * 1000,
                    "rss_mb": statistics.median(x["rss_mb"] for x in rows),
                    "wall_s": statistics.median(x["wall_s"] for x in rows),
                }
    try:
        with open(transcript) as f:
            t = json.load(f)
        res["history_mb"] = len(json.dumps(t["messages"], separators=(",", ":"))) / 1e6
        res["context_tokens"] = t.get("context_tokens")
    except (OSError, ValueError, KeyError):
        res["history_mb"] = None
    return res


def bench_search(agent, fd, tree, pattern, out_dir):
    """Item 2: Grep against rg and Glob against fd on a large tree, through the real binary."""
    grep_cassette = os.path.join(out_dir, "grep.cassette.jsonl")
    glob_cassette = os.path.join(out_dir, "glob.cassette.jsonl")
    write_cassette(grep_cassette, tree, "Grep", {"pattern": pattern})
    write_cassette(glob_cassette, tree, "Glob", {"pattern": f"**/*.{GLOB_SUFFIX}"})
    res = {"tree": tree, "pattern": pattern}

    # What each tool finds, so the table shows they did the same work.
    files = sum(len(fs) for _, _, fs in os.walk(tree))
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tree) for f in fs
               if os.path.isfile(os.path.join(d, f)) and not os.path.islink(os.path.join(d, f)))
    res["tree_files"], res["tree_mb"] = files, size / 1e6
    rg_out = subprocess.run(["rg", "-n", pattern, tree], capture_output=True, text=True)
    res["rg_matches"] = len(rg_out.stdout.splitlines())
    fd_out = subprocess.run([fd, "-g", f"*.{GLOB_SUFFIX}", tree], capture_output=True, text=True)
    res["fd_files"] = len(fd_out.stdout.splitlines())
    t = subprocess.run([agent, "run", "x", "--replay", grep_cassette, "-C", tree, "--json", "-q"],
                       capture_output=True, text=True)
    _, res["agent_grep_tool_s"], meta = first_tool_result(t.stdout)
    res["agent_grep_run_s"] = json.loads(t.stdout)["duration_ms"] / 1000.0
    res["agent_grep_matches"] = meta.get("matches", "?")
    res["agent_grep_files"] = meta.get("files_considered", "?")
    rg_files = subprocess.run(["rg", "--files", tree], capture_output=True, text=True)
    res["rg_files"] = len(rg_files.stdout.splitlines())
    t = subprocess.run([agent, "run", "x", "--replay", glob_cassette, "-C", tree, "--json", "-q"],
                       capture_output=True, text=True)
    _, res["agent_glob_tool_s"], meta = first_tool_result(t.stdout)
    res["agent_glob_run_s"] = json.loads(t.stdout)["duration_ms"] / 1000.0
    res["agent_glob_files"] = meta.get("matches", "?")

    # The peers as a user would run them, and the same peers told to look at exactly the
    # files agent looks at (agent skips SKIP_DIRS such as __pycache__ and lists hidden files).
    skip = [".git", "node_modules", "vendor", ".idea", "__pycache__", "target"]  # src/tools/walk.rs
    rg_same = ["rg", "-n", "--hidden", *[a for d in skip for a in ("-g", f"!{d}/")], pattern, tree]
    fd_same = [fd, "-H", *[a for d in skip for a in ("-E", d)], "-g", f"*.{GLOB_SUFFIX}", tree]
    res["rg_same_files"] = len(subprocess.run(rg_same[:-2] + ["--files", tree], capture_output=True,
                                              text=True).stdout.splitlines())
    res["fd_same_found"] = len(subprocess.run(fd_same, capture_output=True, text=True).stdout.splitlines())
    res["rg_same_cmd"], res["fd_same_cmd"] = shlex.join(rg_same[:-1]), shlex.join(fd_same[:-1])
    grep = hyperfine([("agent Grep", [agent, "run", "x", "--replay", grep_cassette, "-C", tree, "-q"]),
                      ("rg", ["rg", "-n", pattern, tree]), ("rg same files", rg_same)], out_dir, "grep")
    glob = hyperfine([("agent Glob", [agent, "run", "x", "--replay", glob_cassette, "-C", tree, "-q"]),
                      ("fd", [fd, "-g", f"*.{GLOB_SUFFIX}", tree]), ("fd same files", fd_same)],
                     out_dir, "glob")
    res["grep"], res["glob"] = grep, glob
    return res


def bench_streaming(agent, tree, pattern, out_dir, runs=STREAMING_RUNS):
    """Item 3: a read-only call followed by as much streamed text; early execution on vs off.
    The runs alternate off/on; each reads the tool's own time from its transcript."""
    env = dict(os.environ, ANTHROPIC_API_KEY=API_KEY)
    with Mock(out_dir, "stream", "--script", "stream", "--workspace", tree, "--pattern", pattern,
              "--text-seconds", "0") as mock:
        def run(early, text_s):
            argv = ["env", f"AGENT_NO_EARLY_TOOLS={0 if early else 1}", agent, "run",
                    f"Search the tree. text_seconds={text_s:.3f}", "-C", tree, "--base-url", mock.url,
                    "--json", "-q"]
            r = measure(argv, tree, env, timeout=120)
            if r["rc"] != 0:
                raise RuntimeError(f"agent failed in the streaming check: {r['stderr'][-400:]}")
            _, tool, _ = first_tool_result(r["stdout"])
            return r["wall_s"], tool

        # Calibrate: the Grep's own time here, with no text after it.
        calib = [run(False, 0.0)[1] for _ in range(CALIBRATION_RUNS)]
        text_s = max(MIN_TEXT_S, statistics.median(calib))
        log(f"streaming: the Grep takes {statistics.median(calib) * 1000:.0f} ms; text {text_s * 1000:.0f} ms")
        walls = {False: [], True: []}
        tools = []
        for i in range(runs + 1):  # the first round is a warm-up
            for early in (False, True):
                wall, tool = run(early, text_s)
                if i > 0:
                    walls[early].append(wall)
                    tools.append(tool)
    with open(os.path.join(out_dir, "streaming.json"), "w") as f:
        json.dump({"text_s": text_s, "calibration_tool_s": calib, "tool_s": tools,
                   "off_wall_s": walls[False], "on_wall_s": walls[True]}, f, indent=2)
    return {"text_s": text_s, "tool_s": statistics.median(tools), "runs": runs,
            "off": statistics.median(walls[False]), "on": statistics.median(walls[True])}


def bench_startup(agent, out_dir):
    """Item 4: start-up time and binary size."""
    t = hyperfine([("agent --version", [agent, "--version"])], out_dir, "startup",
                  runs=STARTUP_RUNS, warmup=10, rounds=1)
    return {"version": t["agent --version"], "size_bytes": os.path.getsize(agent)}


# ---------------------------------------------------------------- the report


def ms(s):
    return f"{s * 1000:.1f} ms"


def verdict(ok):
    return "PASS" if ok else "FAIL"


def report(m, versions, session, codex, long, syscalls, search, streaming, startup):
    lines = []
    add = lines.append
    add(f"Measured {m['date']} on {m['nproc']} × {m['cpu']}, {m['kernel']} "
        f"(load average at start {m['loadavg']}; the machine may be shared). "
        f"Versions: {'; '.join(f'{k} {v}' for k, v in versions.items())}. "
        "Medians; every comparison in one run of `ci/bench/run.sh`.")
    add("")
    targets = []

    if session:
        report_session(session, add, targets)
    if codex:
        report_codex(codex, add, targets)
    if long:
        report_long(long, add, targets)
    if syscalls:
        report_syscalls(syscalls, add, targets)
    if search:
        report_search(search, add, targets)
    if streaming:
        report_streaming(streaming, add, targets)
    if startup:
        report_startup(startup, add, targets)

    add("| target (SPEC §8) | measured | verdict |")
    add("|---|---|---|")
    for name, value, ok, miss in targets:
        if ok is None:
            add(f"| {name} | {value} | NOT MEASURED |")
        else:
            add(f"| {name} | {value} | {verdict(ok)}{'' if ok else ' (' + miss + ')'} |")
    return "\n".join(lines), targets


def report_session(session, add, targets):
    a = session.get("agent_summary")
    c = session.get("claude_summary")
    turns = session["turns"]
    add(f"**Scripted session** ({SESSION_TURNS} turns of one small file read, then a final answer: "
        f"{turns} model requests against a loopback mock; CPU = user+sys of the process and its "
        f"children from wait4, peak RSS from `/usr/bin/time -f %M`, median of {a['runs']} runs after a "
        "warm-up)")
    add("")
    add("| peer | CPU per turn | CPU total | peak RSS | wall |")
    add("|---|---|---|---|---|")
    add(f"| agent | {a['cpu_per_turn_ms']:.2f} ms | {a['cpu_s'] * 1000:.0f} ms | {a['rss_mb']:.1f} MB "
        f"| {a['wall_s']:.2f} s |")
    o = session.get("agent-otel_summary")
    if o:
        add(f"| agent, OTLP export on | {o['cpu_per_turn_ms']:.2f} ms | {o['cpu_s'] * 1000:.0f} ms "
            f"| {o['rss_mb']:.1f} MB | {o['wall_s']:.2f} s |")
    if c:
        add(f"| claude -p | {c['cpu_per_turn_ms']:.2f} ms | {c['cpu_s'] * 1000:.0f} ms "
            f"| {c['rss_mb']:.1f} MB | {c['wall_s']:.2f} s |")
        cpu_ratio = c["cpu_s"] / a["cpu_s"]
        rss_ratio = c["rss_mb"] / a["rss_mb"]
        add(f"| ratio (claude / agent) | {cpu_ratio:.1f}× | | {rss_ratio:.1f}× | "
            f"{c['wall_s'] / a['wall_s']:.1f}× |")
    add("")
    if session.get("claude_error"):
        add(f"claude -p could not be measured: {session['claude_error']}")
        add("")
    if session.get("side_requests"):
        add("Requests claude -p made besides its main loop (answered by the mock): "
            + ", ".join(f"`{s}`" for s in session["side_requests"]) + ".")
        add("")
    cpt = a["cpu_per_turn_ms"]
    if o:
        over = o["cpu_per_turn_ms"] / cpt - 1
        exports = session.get("otlp_exports", {})
        add(f"With OTLP export on (http/protobuf to a loopback collector: "
            f"{exports.get('requests', 0)} exports, {exports.get('bytes', 0) / 1024:.0f} KB over all "
            f"runs), CPU per turn is {over * 100:+.1f} % of export off.")
        add("")
        targets.append((f"OTLP export on: CPU per turn within {T_OTEL_OVERHEAD * 100:.0f} % of off",
                        f"{over * 100:+.1f} %", over <= T_OTEL_OVERHEAD,
                        f"{(over - T_OTEL_OVERHEAD) * 100:.1f} points over"))
    targets.append(("CPU per turn < 1 ms", f"{cpt:.2f} ms", cpt < T_CPU_PER_TURN_MS,
                    f"{cpt / T_CPU_PER_TURN_MS:.1f}× the target"))
    targets.append(("peak RSS < 30 MB", f"{a['rss_mb']:.1f} MB", a["rss_mb"] < T_RSS_MB,
                    f"{a['rss_mb'] - T_RSS_MB:.1f} MB over"))
    if c:
        targets.append(("≥ 10× less CPU than claude -p", f"{cpu_ratio:.1f}×", cpu_ratio >= T_PEER_FACTOR,
                        f"{T_PEER_FACTOR / cpu_ratio:.1f}× short"))
        targets.append(("≥ 10× less peak RSS than claude -p", f"{rss_ratio:.1f}×",
                        rss_ratio >= T_PEER_FACTOR, f"{T_PEER_FACTOR / rss_ratio:.1f}× short"))
        targets.append((f"≥ {T_CLAUDE_CPU:.0f}× less CPU per turn than claude -p", f"{cpu_ratio:.1f}×",
                        cpu_ratio >= T_CLAUDE_CPU, f"{T_CLAUDE_CPU / cpu_ratio:.2f}× short"))
        targets.append((f"≥ {T_PEER_RSS:.0f}× less peak RSS than claude -p", f"{rss_ratio:.1f}×",
                        rss_ratio >= T_PEER_RSS, f"{T_PEER_RSS / rss_ratio:.2f}× short"))
    else:
        targets.append((f"≥ {T_CLAUDE_CPU:.0f}× less CPU and ≥ {T_PEER_RSS:.0f}× less peak RSS than claude -p",
                        "not measured", None, ""))
    targets.append((f"session CPU per turn ≤ {T_SESSION_CPU_MS} ms", f"{cpt:.2f} ms",
                    cpt <= T_SESSION_CPU_MS, f"{cpt / T_SESSION_CPU_MS:.1f}× the target"))
    targets.append((f"session peak RSS ≤ {T_SESSION_RSS_MB:.0f} MB", f"{a['rss_mb']:.1f} MB",
                    a["rss_mb"] <= T_SESSION_RSS_MB, f"{a['rss_mb'] - T_SESSION_RSS_MB:.1f} MB over"))


def report_long(long, add, targets):
    modes = long["modes"]
    add(f"**Long session** ({LONG_TURNS} turns each reading a different ~{LONG_FILE_BYTES // 1000} KB "
        f"file, then the answer; the mock reports input tokens of about the request's bytes / 4, so "
        f"the last request is ~150k tokens. CPU per turn is sampled by the mock from the peer's "
        f"/proc schedstat as each model request arrives: turns 1–{LONG_WINDOW} against turns "
        f"{LONG_TURNS - LONG_WINDOW + 1}–{LONG_TURNS}. Peak RSS from `/usr/bin/time -f %M`. Medians "
        f"of {LONG_RUNS} runs per agent mode, {LONG_CLAUDE_RUNS} of claude -p)")
    add("")
    add(f"| peer | CPU per turn, turns 1–{LONG_WINDOW} | turns {LONG_TURNS - LONG_WINDOW + 1}–{LONG_TURNS} "
        "| growth | CPU per turn, whole run | peak RSS | wall |")
    add("|---|---|---|---|---|---|---|")
    for label, v in modes.items():
        add(f"| {label} | {v['first_ms']:.2f} ms | {v['last_ms']:.2f} ms | "
            f"{v['last_ms'] / v['first_ms']:.2f}× | {v['cpu_per_turn_ms']:.2f} ms | {v['rss_mb']:.1f} MB "
            f"| {v['wall_s']:.2f} s |")
    add("")
    if long.get("claude_error"):
        add(f"claude -p could not be measured: {long['claude_error']}")
        add("")
    for mode, what in (("agent", "plain"), ("agent -o --jsonl", "-o and --jsonl on")):
        v = modes.get(mode)
        if v:
            growth = v["last_ms"] / v["first_ms"]
            targets.append((f"long session: CPU per turn of the last {LONG_WINDOW} turns ≤ "
                            f"{T_LONG_GROWTH}× the first {LONG_WINDOW}, {what}",
                            f"{growth:.2f}×", growth <= T_LONG_GROWTH,
                            f"{growth / T_LONG_GROWTH:.2f}× the limit"))
    full = modes.get("agent -o --jsonl")
    if full:
        hist = long.get("history_mb")
        if hist is not None:
            limit = 2 * hist + T_LONG_RSS_SLACK_MB
            targets.append((f"long session: peak RSS ≤ 2 × history ({hist:.2f} MB) + "
                            f"{T_LONG_RSS_SLACK_MB:.0f} MB", f"{full['rss_mb']:.1f} MB",
                            full["rss_mb"] <= limit, f"{full['rss_mb'] - limit:.1f} MB over"))


def report_search(search, add, targets):
    g, gl = search["grep"], search["glob"]
    grep_ratio = g["agent Grep"]["median"] / g["rg"]["median"]
    grep_same = g["agent Grep"]["median"] / g["rg same files"]["median"]
    glob_ratio = gl["agent Glob"]["median"] / gl["fd"]["median"]
    glob_same = gl["agent Glob"]["median"] / gl["fd same files"]["median"]
    add(f"**Search** on `{search['tree']}` ({search['tree_files']} files, {search['tree_mb']:.0f} MB): "
        f"the whole `agent` process replaying a 2-turn cassette (one tool call, then the answer) "
        f"against the peer's whole process; hyperfine, {g['rg']['runs']} runs each in "
        f"{HYPERFINE_ROUNDS} rounds, the order rotating, {HYPERFINE_WARMUP} warm-ups per round")
    add("")
    add("| search | wall | agent / this | found |")
    add("|---|---|---|---|")
    add(f"| agent Grep `{search['pattern']}` | {ms(g['agent Grep']['median'])} | | "
        f"{search['agent_grep_matches']} lines in {search['agent_grep_files']} files |")
    add(f"| `rg -n` | {ms(g['rg']['median'])} | {grep_ratio:.2f} | {search['rg_matches']} lines in "
        f"{search['rg_files']} files |")
    add(f"| `rg -n --hidden` minus agent's skipped dirs (same files) | {ms(g['rg same files']['median'])} "
        f"| {grep_same:.2f} | {search['rg_same_files']} files |")
    add(f"| agent Glob `**/*.{GLOB_SUFFIX}` | {ms(gl['agent Glob']['median'])} | | "
        f"{search['agent_glob_files']} files |")
    add(f"| `fd -g '*.{GLOB_SUFFIX}'` | {ms(gl['fd']['median'])} | {glob_ratio:.2f} | "
        f"{search['fd_files']} files |")
    add(f"| `fd -H` minus agent's skipped dirs (same files) | {ms(gl['fd same files']['median'])} "
        f"| {glob_same:.2f} | {search['fd_same_found']} files |")
    add("")
    add("agent skips `.git`, `node_modules`, `vendor`, `.idea`, `__pycache__` and `target` and lists "
        "hidden files; plain rg and fd do the opposite, hence the \"same files\" rows. All honour "
        "ignore files and walk the whole tree: agent's Grep caps at 100 matches, and the regex is "
        "rare, so it never stops early. The verdict takes the larger of the two ratios.")
    add("")
    add(f"Where agent's time goes (one `--json` run each, from the transcript): the Grep call itself "
        f"took {ms(search['agent_grep_tool_s'])} of a {ms(search['agent_grep_run_s'])} run, the Glob "
        f"call {ms(search['agent_glob_tool_s'])} of {ms(search['agent_glob_run_s'])}; the rest is the "
        "run around the tool (start-up, reading the cassette, writing the transcript; a read-only "
        "run does not scan the workspace for `files_changed`).")
    add("")
    gr, glr = max(grep_ratio, grep_same), max(glob_ratio, glob_same)
    targets.append((f"Grep ≤ {T_GREP_FACTOR:.1f} × rg", f"{gr:.2f}×", gr <= T_GREP_FACTOR,
                    f"{gr / T_GREP_FACTOR:.2f}× the limit"))
    targets.append(("Glob ≤ 1.3 × fd", f"{glr:.2f}×", glr <= T_SEARCH_FACTOR,
                    f"{glr / T_SEARCH_FACTOR:.2f}× the limit"))


def report_streaming(streaming, add, targets):
    s = streaming
    tool, text = s["tool_s"], s["text_s"]
    off, on = s["off"], s["on"]
    hidden = (off - on) / min(tool, text) if min(tool, text) > 0 else 0.0
    add(f"**Streaming tool execution**: the mock streams one Grep call over the tree above, then "
        f"{ms(text)} of text (as long as the Grep took alone, at least {ms(MIN_TEXT_S)}) before "
        f"`message_stop`, then a final answer. Wall time of the whole agent run, {s['runs']} runs "
        f"per mode, alternating, after a warm-up; the tool's own time (median {ms(tool)}) is read "
        "from each run's transcript. `AGENT_NO_EARLY_TOOLS=1` turns early execution off")
    add("")
    add("| early execution | wall | minus (tool + text) | minus max(tool, text) |")
    add("|---|---|---|---|")
    for label, v in (("off", off), ("on", on)):
        add(f"| {label} | {ms(v)} | {ms(v - tool - text)} | {ms(v - max(tool, text))} |")
    add("")
    add(f"Saved {ms(off - on)}, i.e. {hidden * 100:.0f}% of min(tool, text) = {ms(min(tool, text))} "
        "(100% means the total is max(tool, text) plus the fixed costs; 0% means the sum).")
    add("")
    targets.append(("streaming: total ≈ max(tool, text), not the sum",
                    f"{hidden * 100:.0f}% of min(tool, text) hidden", hidden >= T_HIDDEN_SHARE,
                    f"{(T_HIDDEN_SHARE - hidden) * 100:.0f} points under {T_HIDDEN_SHARE * 100:.0f}%"))


def report_startup(startup, add, targets):
    v = startup["version"]["median"]
    add(f"**Start-up**: `agent --version` {ms(v)} (hyperfine, {STARTUP_RUNS} runs after 10 warm-ups); "
        f"release binary {startup['size_bytes'] / 1e6:.2f} MB ({startup['size_bytes']} bytes).")
    add("")
    targets.append(("`agent --version` < 5 ms", ms(v), v * 1000 < T_STARTUP_MS,
                    f"{v * 1000 - T_STARTUP_MS:.1f} ms over"))


def write_readme(readme, table):
    with open(readme) as f:
        text = f.read()
    block = f"{START_MARK}\n{table}\n{END_MARK}"
    if START_MARK in text and END_MARK in text:
        head, rest = text.split(START_MARK, 1)
        _, tail = rest.split(END_MARK, 1)
        text = head + block + tail
    else:
        text = text.rstrip("\n") + "\n\n## Performance\n\n" + block + "\n"
    with open(readme, "w") as f:
        f.write(text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agent", default=os.path.join(ROOT, "target", "release", "agent"))
    p.add_argument("--claude", default=os.path.join(HERE, "peers", "claude-code", "node_modules", ".bin",
                                                     "claude"))
    p.add_argument("--codex", default=os.path.join(HERE, "peers", "codex", "node_modules", "@openai",
                                                    "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl",
                                                    "bin", "codex"),
                   help="codex's native binary (npm @openai/codex), run directly")
    p.add_argument("--claude-version", help="the pinned Claude Code version (run.sh's): another fails the run")
    p.add_argument("--codex-version", help="the pinned codex version (run.sh's): another fails the run")
    p.add_argument("--tree", default=os.environ.get("BENCH_TREE") or None)
    p.add_argument("--pattern", default=os.environ.get("BENCH_PATTERN") or DEFAULT_PATTERN)
    p.add_argument("--runs", type=int, default=int(os.environ.get("BENCH_RUNS") or DEFAULT_RUNS))
    p.add_argument("--readme", default=os.path.join(ROOT, "docs", "performance.md"),
                   help="the page whose table is rewritten (docs/performance.md)")
    p.add_argument("--no-readme", action="store_true", help="print the table only")
    p.add_argument("--out", default=os.path.join(HERE, "out"), help="logs and raw results")
    p.add_argument("--only", default=os.environ.get("BENCH_ONLY") or None,
                   help=f"comma-separated sections to run, of: {','.join(SECTIONS)} (the README is "
                        "then left alone)")
    a = p.parse_args()

    agent = os.path.abspath(a.agent)
    if not os.access(agent, os.X_OK):
        sys.exit(f"bench: no agent binary at {agent} (cargo build --release)")
    claude = os.path.abspath(a.claude) if os.access(a.claude, os.X_OK) else shutil.which("claude")
    codex = os.path.abspath(a.codex) if os.access(a.codex, os.X_OK) else None
    only = set(a.only.split(",")) if a.only else set(SECTIONS)
    unknown = only - set(SECTIONS)
    if unknown:
        sys.exit(f"bench: --only: unknown section(s) {', '.join(sorted(unknown))} "
                 f"(choose from {', '.join(SECTIONS)})")
    searching = bool(only & {"search", "streaming"})
    if "syscalls" in only and not shutil.which("strace"):
        sys.exit("bench: strace is not installed (ci/bench/run.sh installs it)")
    fd = shutil.which("fd") or shutil.which("fdfind")
    needed = [("hyperfine", shutil.which("hyperfine"))] if only & {"search", "startup"} else []
    if searching:
        needed += [("rg", shutil.which("rg")), ("fd", fd)]
    for tool, found in needed:
        if not found:
            sys.exit(f"bench: {tool} is not installed (ci/bench/run.sh installs it)")
    tree = os.path.abspath(a.tree or default_tree()) if searching else None
    if searching and not os.path.isdir(tree):
        sys.exit(f"bench: the search tree {tree} is not a directory")
    os.makedirs(a.out, exist_ok=True)

    m = machine()
    versions = {"agent": first_line([agent, "--version"]).removeprefix("agent "),
                "Claude Code": first_line([claude, "--version"]).removesuffix(" (Claude Code)") if claude else "not installed",
                "Python": platform.python_version()}
    if "codex" in only:
        versions["codex"] = first_line([codex, "--version"]).removeprefix("codex-cli ") if codex else "not installed"
    if searching:
        versions["ripgrep"] = first_line(["rg", "--version"]).removeprefix("ripgrep ")
        versions["fd"] = first_line([fd, "--version"]).split()[-1]
    if shutil.which("hyperfine"):
        versions["hyperfine"] = first_line(["hyperfine", "--version"]).removeprefix("hyperfine ")
    log(f"machine: {m}")
    log(f"versions: {versions}")
    # A peer at another version than the pinned one measures a different program: refuse it.
    for peer, want, section in (("Claude Code", a.claude_version, {"session", "long"}),
                                ("codex", a.codex_version, {"codex"})):
        have = versions.get(peer)
        if want and only & section and have != "not installed" and have != want:
            peer_failed({"Claude Code": "claude -p", "codex": "codex exec"}[peer],
                        f"version {have} is installed, {want} is pinned")
            if peer == "Claude Code":
                claude = None
            else:
                codex = None

    got = {}
    for i, name in enumerate(s for s in SECTIONS if s in only):
        log(f"{i + 1}/{len(only)} {name}")
        if name == "session":
            got[name] = bench_session(agent, claude, a.out, a.runs)
        elif name == "codex":
            got[name] = bench_codex(agent, codex, a.out, a.runs)
        elif name == "long":
            got[name] = bench_long(agent, claude, a.out, LONG_RUNS)
        elif name == "syscalls":
            got[name] = bench_syscalls(agent, a.out)
        elif name == "search":
            got[name] = bench_search(agent, fd, tree, a.pattern, a.out)
        elif name == "streaming":
            got[name] = bench_streaming(agent, tree, a.pattern, a.out)
        else:
            got[name] = bench_startup(agent, a.out)

    table, targets = report(m, versions, *(got.get(s) for s in SECTIONS))
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"machine": m, "versions": versions, **got}, f, indent=2)
    print(table)
    if a.only and not a.no_readme:
        log("--only: the README keeps its table (it holds a full run)")
    elif PEER_FAILURES:
        log("a peer could not be measured: the page keeps its previous table")
    elif not a.no_readme:
        write_readme(a.readme, table)
        log(f"wrote the table into {a.readme}")
    missed = [t[0] for t in targets if t[2] is False]
    log(f"targets: {len(targets) - len(missed)} of {len(targets)} met"
        + (f"; FAIL: {', '.join(missed)}" if missed else ""))
    for peer, why in PEER_FAILURES:
        log(f"FAILED: {peer} could not be measured: {why}")
    if PEER_FAILURES:
        return 1
    return 3 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
