"""Harbor's own ACP agent (harbor.agents.installed.acp.AcpAgent) with one step replaced, for a
machine whose containers reach Debian's mirror but not the rest of the internet
(ci/interop/harbor/acp-trial.sh).

The stock install step puts Harbor's ACP runner (acp_runner.py, a client built on the Python SDK
`agent-client-protocol`) into /opt/harbor-acp-venv by downloading uv from astral.sh, a Python
3.12 through uv, and the SDK from PyPI inside the container. Here that step is: Debian's
python3 (3.11) and python3-venv from apt, and the SDK installed from wheels the host downloaded
(uploaded to the container; pip needs no network there). Everything else is Harbor's code: the
registry entry, the launcher script, the runner, the permission answers, the trajectory.

agent itself is the registry entry's `local` distribution (a command already in the
container), so the binary named by HARBOR_ACP_AGENT_BINARY is uploaded to that command's path
and checked against HARBOR_ACP_AGENT_SHA256 first. Harbor's `binary` distribution would
download an archive and check its SHA-256 itself, but it accepts only HTTPS URLs, and no HTTPS
server is reachable from the containers here.
"""

import hashlib
import os
import shlex
from pathlib import Path

from harbor.agents.installed.acp import AcpAgent, AcpLocalTarget, DistributionKind
from harbor.environments.base import BaseEnvironment

WHEELS_REMOTE_DIR = "/installed-agent/acp-wheels"


class LocalAcpAgent(AcpAgent):
    """AcpAgent whose runner is installed without the internet (see the module's text)."""

    def _build_dependencies_command(self, kind: DistributionKind) -> str:
        # Replaces only the stock step; the same venv path, so run() finds the runner's Python.
        venv = self._RUNNER_VENV_PATH
        return f"""
            set -euo pipefail
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq
            apt-get install -y -qq --no-install-recommends python3 python3-venv ca-certificates tar >/dev/null
            rm -rf {venv}
            python3 -m venv {venv}
            {venv}/bin/pip install -q --no-index --find-links {WHEELS_REMOTE_DIR} agent-client-protocol
            {venv}/bin/python -c "import acp"
            chmod -R a+rX {venv}
        """.strip()

    async def install(self, environment: BaseEnvironment) -> None:
        wheels = Path(os.environ["HARBOR_ACP_WHEELS"])
        await environment.upload_dir(source_dir=wheels, target_dir=WHEELS_REMOTE_DIR)
        await super().install(environment)
        kind, target = await self._resolve_distribution(environment)
        if kind != "local" or not isinstance(target, AcpLocalTarget):
            return
        binary = Path(os.environ["HARBOR_ACP_AGENT_BINARY"])
        expected = os.environ["HARBOR_ACP_AGENT_SHA256"].strip().lower()
        actual = hashlib.sha256(binary.read_bytes()).hexdigest()
        if actual != expected:
            raise RuntimeError(f"{binary}: SHA-256 {actual}, expected {expected}")
        remote = target.cmd
        await environment.exec(command=f"mkdir -p {shlex.quote(str(Path(remote).parent))}", user="root")
        await environment.upload_file(source_path=binary, target_path=remote)
        check = await environment.exec(
            command=f"chmod 0755 {shlex.quote(remote)} && echo '{expected}  {remote}' | sha256sum -c -",
            user="root",
        )
        if check.return_code != 0:
            raise RuntimeError(f"agent in the container failed its SHA-256 check: {check.stdout} {check.stderr}")
