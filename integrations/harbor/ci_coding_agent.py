"""agent (PyPI/npm/crates.io ``ci-coding-agent``) as a Harbor installed agent.

Load it with ``harbor run --agent-import-path ci_coding_agent:CiCodingAgent`` (with this
directory on ``PYTHONPATH``). Written so that it can be proposed upstream as
``harbor/agents/installed/ci_coding_agent.py`` unchanged but for its imports.

What it does (docs/guide/harbor.md):

* install: the release binary, by the project's ``install.sh`` (it verifies the archive's
  SHA-256 against the release's SHA256SUMS, and its signature when minisign is there),
  from ``download_url`` when given (a mirror or a local release directory served over
  HTTP), or a binary given with ``agent_binary`` (a host path, uploaded as is);
* run: ``agent run --full-auto --json -o transcript.json --trajectory trajectory.json``
  on the instruction, in the task's working directory, with Harbor's model connection
  mapped onto ``--provider``/``--model``/``--base-url`` and the provider's key variable,
  its MCP servers onto ``--mcp-config`` and its skills directory onto ``--skill``;
* ``trajectory.json`` (ATIF v1.7, written by agent itself on every way out) is left in
  the agent log directory, where Harbor reads it;
* populate_context_post_run: tokens and cost from the transcript; it never raises (an
  exception there would abort the trial before its verifier runs).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated, Any, override

from pydantic import Field

from harbor.agents.agent_auth_resolution import ModelConnectionSpec
from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import BaseInstalledAgent, with_prompt_template
from harbor.agents.options import Cli, InstalledAgentOptions
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.model_api_format import ModelApiFormat

INSTALL_DIR = "/installed-agent/bin"
AGENT = f"{INSTALL_DIR}/agent"
MCP_CONFIG = "/installed-agent/mcp.json"
INSTALL_SCRIPT_URL = "https://raw.githubusercontent.com/OWNER/agent/main/install.sh"
# The repository's own install.sh, when this file is used from a checkout.
_BUNDLED_INSTALL_SH = Path(__file__).resolve().parents[2] / "install.sh"

# agent's exit codes for a run that ended (docs/reference/exit-codes.md): the verifier
# judges the workspace; only a usage error (2: a flag this adapter built is wrong) or a
# missing binary (126, 127) is the adapter's failure.
_RUN_ENDED = {0, 1, 3, 4, 5, 6, 124, 130, 143}


class CiCodingAgentOptions(InstalledAgentOptions):
    agent_binary: str | None = Field(
        default=None,
        description="A host path to an agent binary to upload instead of installing.",
    )
    download_url: str | None = Field(
        default=None,
        description="Where releases live (install.sh's AGENT_DOWNLOAD_URL).",
    )
    install_script: str | None = Field(
        default=None,
        description="A host path to install.sh (default: the checkout's, else downloaded).",
    )
    install_script_url: str = Field(
        default=INSTALL_SCRIPT_URL, description="Where install.sh is downloaded from."
    )
    max_turns: Annotated[int | None, Cli("--max-turns")] = Field(
        default=None, description="agent's --max-turns."
    )
    timeout: Annotated[str | None, Cli("--timeout")] = Field(
        default=None, description="agent's --timeout (e.g. 30m)."
    )
    extra_args: str | None = Field(
        default=None, description="More `agent run` flags, as one shell-quoted string."
    )


class CiCodingAgent(BaseInstalledAgent):
    """agent, the headless CI coding agent, run with ``agent run --full-auto``."""

    capabilities = AgentCapabilities(
        base_url=True, atif=True, reasoning_effort=True, skills=True, mcp_servers=True
    )
    MODEL_CONNECTION = ModelConnectionSpec(
        supported_api_formats=[
            ModelApiFormat.ANTHROPIC_MESSAGES,
            ModelApiFormat.OPENAI_CHAT_COMPLETIONS,
            ModelApiFormat.OPENAI_RESPONSES,
        ],
        default_api_format_by_provider={
            "anthropic": ModelApiFormat.ANTHROPIC_MESSAGES,
            "openai": ModelApiFormat.OPENAI_CHAT_COMPLETIONS,
            "default": ModelApiFormat.OPENAI_CHAT_COMPLETIONS,
        },
        # The URL goes on the command line (--base-url), not into a variable.
        base_url_destination_names={"default": None},
    )
    options_model = CiCodingAgentOptions
    options: CiCodingAgentOptions

    _TRANSCRIPT = "transcript.json"
    _TRAJECTORY = "trajectory.json"

    @staticmethod
    @override
    def name() -> str:
        return "ci-coding-agent"

    @override
    def get_version_command(self) -> str | None:
        return f"{AGENT} --version"

    @override
    def parse_version(self, stdout: str) -> str:
        # "agent 0.1.0 (…)" → "0.1.0"
        parts = stdout.strip().split()
        return parts[1] if len(parts) > 1 and parts[0] == "agent" else stdout.strip()

    # --- install -------------------------------------------------------------------

    def install_commands(self) -> tuple[str, dict[str, str]]:
        """The shell command that installs agent with install.sh, and its environment
        (install.sh is uploaded first when it is a host file: `_install_script_path`)."""
        env = {"AGENT_INSTALL_DIR": INSTALL_DIR, "AGENT_FORCE": "1"}
        if self._version:
            env["AGENT_VERSION"] = self._version
        if self.options.download_url:
            env["AGENT_DOWNLOAD_URL"] = self.options.download_url
        if self._install_script_path() is not None:
            command = "sh /installed-agent/install.sh"
        else:
            url = shlex.quote(self.options.install_script_url)
            command = (
                f"curl -fsSL --proto '=https,http' {url} -o /installed-agent/install.sh"
                " && sh /installed-agent/install.sh"
            )
        return f"set -eu; mkdir -p {INSTALL_DIR}; {command}", env

    def _install_script_path(self) -> Path | None:
        if self.options.install_script:
            return Path(self.options.install_script)
        if self.options.install_script_url == INSTALL_SCRIPT_URL and _BUNDLED_INSTALL_SH.is_file():
            return _BUNDLED_INSTALL_SH
        return None

    @override
    async def install(self, environment: BaseEnvironment) -> None:
        if self.options.agent_binary:
            binary = Path(self.options.agent_binary)
            if not binary.is_file():
                raise ValueError(f"agent_binary {binary} is not a file")
            await self.exec_as_root(environment, command=f"mkdir -p {INSTALL_DIR}")
            await environment.upload_file(binary, AGENT)
            await self.exec_as_root(environment, command=f"chmod 755 {AGENT} && {AGENT} --version")
            return
        await self.ensure_system_dependencies(environment, ("curl", "ca_certificates"))
        script = self._install_script_path()
        if script is not None:
            await environment.upload_file(script, "/installed-agent/install.sh")
        command, env = self.install_commands()
        await self.exec_as_root(environment, command=command, env=env)

    # --- configure: MCP servers ------------------------------------------------------

    def mcp_config(self) -> dict[str, Any] | None:
        """Harbor's MCP servers in the `{"mcpServers": …}` shape `--mcp-config` reads."""
        if not self.mcp_servers:
            return None
        servers: dict[str, dict[str, Any]] = {}
        for s in self.mcp_servers:
            if s.transport == "stdio":
                servers[s.name] = {"command": s.command, "args": list(s.args)}
            else:
                kind = "http" if s.transport == "streamable-http" else s.transport
                entry: dict[str, Any] = {"type": kind, "url": s.url}
                if s.headers:
                    entry["headers"] = dict(s.headers)
                servers[s.name] = entry
        return {"mcpServers": servers}

    @override
    async def configure(self, environment: BaseEnvironment) -> None:
        config = self.mcp_config()
        if config is not None:
            await self._upload_config_text(
                environment,
                content=json.dumps(config, indent=2),
                remote_path=MCP_CONFIG,
                filename="mcp.json",
            )

    # --- run -------------------------------------------------------------------------

    def connection_flags(self) -> tuple[list[str], dict[str, str]]:
        """`--provider`, `--model`, `--base-url` and the key variable for Harbor's model
        connection (Anthropic, OpenAI chat or Responses, Bedrock, Vertex, or any
        OpenAI-compatible endpoint)."""
        flags: list[str] = []
        env: dict[str, str] = {}
        if not self.model_name:
            return flags, env
        access = self.model_connection
        provider, model_id = self._parse_model_name(self.model_name)
        provider = access.provider or provider or ""
        fmt = access.model_api_format
        if provider in ("amazon-bedrock", "bedrock"):
            kind = "bedrock"
        elif provider in ("vertex_ai", "vertex", "google-vertex", "vertex-ai"):
            kind = "vertex"
        elif fmt == ModelApiFormat.ANTHROPIC_MESSAGES or (fmt is None and provider == "anthropic"):
            kind = "anthropic"
        elif fmt == ModelApiFormat.OPENAI_RESPONSES:
            kind = "openai-responses"
        else:
            kind = "openai"
        flags += ["--provider", kind, "--model", model_id or self.model_name]
        if access.execution_base_url:
            flags += ["--base-url", access.execution_base_url]
        env.update({k: v for k, v in access.env.items() if v is not None})
        if access.api_key:
            key_var = "ANTHROPIC_API_KEY" if kind == "anthropic" else "OPENAI_API_KEY"
            if kind in ("anthropic", "openai", "openai-responses"):
                env[key_var] = access.api_key
        return flags, env

    def run_command(self, instruction: str) -> tuple[str, dict[str, str]]:
        """The shell command of `agent run` for `instruction`, and its environment."""
        logs = str(self.environment_logs_dir)
        flags, env = self.connection_flags()
        flags += [
            "--full-auto",
            "--json",
            "-o",
            f"{logs}/{self._TRANSCRIPT}",
            "--trajectory",
            f"{logs}/{self._TRAJECTORY}",
        ]
        if self.options.reasoning_effort:
            flags += ["--effort", self.options.reasoning_effort]
        if self.mcp_servers:
            flags += ["--mcp-config", MCP_CONFIG]
        if self.skills_dir:
            flags += ["--skill", self.skills_dir]
        argv = shlex.join([AGENT, "run", *flags])
        cli = self.build_cli_flags()
        if cli:
            argv += " " + cli
        if self.options.extra_args:
            argv += " " + self.options.extra_args
        argv += " -- " + shlex.quote(instruction)
        command = (
            f"mkdir -p {shlex.quote(logs)}; "
            f"{argv} > {shlex.quote(logs + '/stdout.json')} 2> {shlex.quote(logs + '/stderr.log')}; "
            f"rc=$?; echo $rc > {shlex.quote(logs + '/exit_code')}; "
            f"case $rc in {'|'.join(str(c) for c in sorted(_RUN_ENDED))}) exit 0;; esac; "
            f"tail -n 20 {shlex.quote(logs + '/stderr.log')} >&2; exit $rc"
        )
        return command, env

    @override
    @with_prompt_template
    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        command, env = self.run_command(instruction)
        await self.exec_as_agent(environment, command=command, env=env)

    # --- after the run ---------------------------------------------------------------

    @override
    def populate_context_post_run(self, context: AgentContext) -> None:
        """Tokens and cost from the transcript (the trajectory's final metrics when the
        transcript is unreadable). Never raises."""
        try:
            self._populate(context)
        except Exception as exc:  # noqa: BLE001 - must not abort the trial
            self.logger.warning(f"ci-coding-agent: cannot read the run's usage: {exc}")

    def _populate(self, context: AgentContext) -> None:
        transcript = self.logs_dir / self._TRANSCRIPT
        t = _read_json(transcript)
        if isinstance(t, dict) and isinstance(t.get("usage"), dict):
            u = t["usage"]
            n = lambda k: u.get(k) if isinstance(u.get(k), int) else 0  # noqa: E731
            context.n_input_tokens = (
                n("input_tokens") + n("cache_read_input_tokens") + n("cache_creation_input_tokens")
            )
            context.n_cache_tokens = n("cache_read_input_tokens")
            context.n_output_tokens = n("output_tokens")
            cost = t.get("cost_usd")
            context.cost_usd = float(cost) if isinstance(cost, (int, float)) else None
            context.metadata = {
                "status": t.get("status"),
                "num_turns": t.get("num_turns"),
                "session_id": t.get("session_id"),
            }
            return
        f = _read_json(self.logs_dir / self._TRAJECTORY)
        fm = f.get("final_metrics") if isinstance(f, dict) else None
        if isinstance(fm, dict):
            context.n_input_tokens = fm.get("total_prompt_tokens")
            context.n_cache_tokens = fm.get("total_cached_tokens")
            context.n_output_tokens = fm.get("total_completion_tokens")
            context.cost_usd = fm.get("total_cost_usd")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
