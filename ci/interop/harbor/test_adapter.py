"""The Harbor adapter (integrations/harbor/ci_coding_agent.py) in Harbor's own classes:
its install and run commands rendered for an environment object, the model connection
and MCP/skills options mapped onto agent's flags, and populate_context_post_run on a real
agent output directory (written by the built binary replaying the demo cassette) filling
Harbor's AgentContext and leaving a trajectory Harbor's model accepts. Run by
ci/interop/harbor/adapter.sh with pytest in Harbor's Python 3.12 environment.
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "integrations" / "harbor"))

from ci_coding_agent import AGENT, MCP_CONFIG, CiCodingAgent  # noqa: E402
from harbor.models.agent.context import AgentContext  # noqa: E402
from harbor.models.task.config import MCPServerConfig  # noqa: E402
from harbor.models.trajectories import Trajectory  # noqa: E402
from harbor.utils.trajectory_validator import TrajectoryValidator  # noqa: E402

BINARY = Path(os.environ.get("AGENT", ROOT / "target" / "debug" / "agent"))


class Result:
    def __init__(self, rc=0, stdout="agent 0.1.0\n", stderr=""):
        self.return_code, self.stdout, self.stderr = rc, stdout, stderr


class RecordingEnvironment:
    """The parts of Harbor's BaseEnvironment an installed agent calls, recorded."""

    default_user = None

    def __init__(self, fail_first=False):
        self.execs, self.uploads = [], []
        self.fail_first = fail_first

    async def exec(self, command, user=None, env=None, cwd=None, timeout_sec=None):
        self.execs.append({"command": command, "user": user, "env": env or {}})
        # A Debian image: apt-get is its package manager; `command -v curl` fails
        # (curl missing), so the install step asks for it.
        if "for manager in" in command:
            return Result(stdout="apt-get")
        if command.startswith("command -v"):
            return Result(rc=1, stdout="")
        return Result()

    async def upload_file(self, source, target):
        self.uploads.append((str(source), target, Path(source).read_bytes()))


def make(tmp_path, **kw):
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    return CiCodingAgent(logs_dir=logs, **kw)


def test_install_renders_install_sh_with_the_download_url_and_version(tmp_path):
    a = make(
        tmp_path,
        model_name="anthropic/claude-sonnet-4-5",
        extra_env={"ANTHROPIC_API_KEY": "sk-test"},
        version="0.1.0",
        download_url="http://172.17.0.1:8765",
    )
    env = RecordingEnvironment()
    asyncio.run(a.install(env))
    assert any("apt-get install -y curl" in e["command"] for e in env.execs)
    install = env.execs[-1]
    assert install["user"] == "root"
    assert "sh /installed-agent/install.sh" in install["command"]
    assert install["env"]["AGENT_DOWNLOAD_URL"] == "http://172.17.0.1:8765"
    assert install["env"]["AGENT_VERSION"] == "0.1.0"
    assert install["env"]["AGENT_INSTALL_DIR"] == "/installed-agent/bin"
    # The checkout's install.sh is uploaded, not fetched.
    (src, target, body) = env.uploads[0]
    assert target == "/installed-agent/install.sh"
    assert body == (ROOT / "install.sh").read_bytes()


def test_a_given_binary_is_uploaded_instead(tmp_path):
    a = make(tmp_path, model_name="anthropic/m", extra_env={"ANTHROPIC_API_KEY": "k"},
             agent_binary=str(BINARY))
    env = RecordingEnvironment()
    asyncio.run(a.install(env))
    assert env.uploads[0][1] == AGENT
    assert not any("install.sh" in e["command"] for e in env.execs)


def test_run_maps_the_anthropic_connection_mcp_and_skills(tmp_path):
    servers = [
        MCPServerConfig(name="files", transport="stdio", command="mcp-files", args=["/app"]),
        MCPServerConfig(name="web", transport="streamable-http", url="http://mcp:8000/mcp"),
    ]
    a = make(
        tmp_path,
        model_name="anthropic/claude-sonnet-4-5",
        extra_env={"ANTHROPIC_API_KEY": "sk-test"},
        base_url="http://mock:9000",
        mcp_servers=servers,
        skills_dir="/skills",
        max_turns=7,
        reasoning_effort="high",
    )
    env = RecordingEnvironment()
    asyncio.run(a.run("Fix the 'bug' now", env, AgentContext()))
    run = env.execs[-1]
    cmd = run["command"]
    for part in [
        f"{AGENT} run",
        "--provider anthropic",
        "--model claude-sonnet-4-5",
        "--base-url http://mock:9000",
        "--full-auto",
        "--json",
        "-o /logs/agent/transcript.json",
        "--trajectory /logs/agent/trajectory.json",
        f"--mcp-config {MCP_CONFIG}",
        "--skill /skills",
        "--effort high",
        "--max-turns 7",
        "-- 'Fix the '\"'\"'bug'\"'\"' now'",
    ]:
        assert part in cmd, (part, cmd)
    assert run["env"]["ANTHROPIC_API_KEY"] == "sk-test"
    assert "sk-test" not in cmd, "the key is in the environment, not the command line"
    asyncio.run(a.configure(env))
    (_, target, body) = env.uploads[-1]
    assert target == MCP_CONFIG
    assert json.loads(body) == {
        "mcpServers": {
            "files": {"command": "mcp-files", "args": ["/app"]},
            "web": {"type": "http", "url": "http://mcp:8000/mcp"},
        }
    }


@pytest.mark.parametrize(
    "model,fmt,provider",
    [
        ("openai/gpt-5", None, "openai"),
        ("openai/gpt-5", "openai_responses", "openai-responses"),
    ],
)
def test_run_maps_openai_chat_and_responses(tmp_path, model, fmt, provider):
    kw = {"model_api_format": fmt} if fmt else {}
    a = make(tmp_path, model_name=model, extra_env={"OPENAI_API_KEY": "sk-o"}, **kw)
    env = RecordingEnvironment()
    asyncio.run(a.run("x", env, AgentContext()))
    cmd = env.execs[-1]["command"]
    assert f"--provider {provider}" in cmd and "--model gpt-5" in cmd, cmd
    assert env.execs[-1]["env"]["OPENAI_API_KEY"] == "sk-o"


def test_a_run_that_ended_is_not_an_adapter_failure(tmp_path):
    a = make(tmp_path, model_name="anthropic/m", extra_env={"ANTHROPIC_API_KEY": "k"})
    cmd, _ = a.run_command("x")
    for code in (0, 1, 3, 4, 124, 130):
        assert f"{code}" in cmd.split("case $rc in ")[1].split(")")[0].split("|")
    assert "2" not in cmd.split("case $rc in ")[1].split(")")[0].split("|")


def agent_output_dir(tmp_path):
    """A real agent log directory: the demo cassette replayed with the adapter's flags."""
    work = tmp_path / "ws"
    shutil.copytree(ROOT / "fixtures" / "demo" / "project", work)
    logs = tmp_path / "logs"
    logs.mkdir(exist_ok=True)
    subprocess.run(
        [str(BINARY), "run", "--replay", str(ROOT / "fixtures/demo/demo.cassette.jsonl"),
         "--full-auto", "--json", "-o", str(logs / "transcript.json"),
         "--trajectory", str(logs / "trajectory.json"), "-C", str(work), "-q",
         "--", "Fix the failing tests"],
        check=True, stdout=subprocess.DEVNULL,
    )
    return logs


def test_populate_context_post_run_fills_tokens_and_cost(tmp_path):
    logs = agent_output_dir(tmp_path)
    a = make(tmp_path, model_name="anthropic/m", extra_env={"ANTHROPIC_API_KEY": "k"})
    ctx = AgentContext()
    a.populate_context_post_run(ctx)
    t = json.loads((logs / "transcript.json").read_text())
    u = t["usage"]
    assert ctx.n_input_tokens == u["input_tokens"] + u["cache_read_input_tokens"]
    assert ctx.n_cache_tokens == u["cache_read_input_tokens"]
    assert ctx.n_output_tokens == u["output_tokens"]
    assert ctx.cost_usd == t["cost_usd"] and ctx.cost_usd > 0
    assert ctx.metadata["status"] == "success"
    # The trajectory Harbor reads from the same directory is valid ATIF.
    traj = Trajectory.model_validate_json((logs / "trajectory.json").read_text())
    assert traj.final_metrics.total_completion_tokens == ctx.n_output_tokens
    assert TrajectoryValidator().validate(logs / "trajectory.json")


def test_populate_context_post_run_never_raises(tmp_path):
    a = make(tmp_path, model_name="anthropic/m", extra_env={"ANTHROPIC_API_KEY": "k"})
    ctx = AgentContext()
    a.populate_context_post_run(ctx)  # nothing there
    assert ctx.is_empty()
    (a.logs_dir / "transcript.json").write_text('{"usage": "not an object"')
    (a.logs_dir / "trajectory.json").mkdir()
    a.populate_context_post_run(ctx)
    (a.logs_dir / "transcript.json").write_text('{"usage": {"input_tokens": "x"}, "cost_usd": "y"}')
    a.populate_context_post_run(ctx)
    assert ctx.n_input_tokens == 0 and ctx.cost_usd is None


def test_version_is_parsed_from_agent_version(tmp_path):
    a = make(tmp_path, model_name="anthropic/m", extra_env={"ANTHROPIC_API_KEY": "k"})
    out = subprocess.run([str(BINARY), "--version"], capture_output=True, text=True).stdout
    assert a.parse_version(out) == "0.1.0"
    assert a.name() == "ci-coding-agent"
    assert a.capabilities.atif and a.capabilities.mcp_servers and a.capabilities.skills
