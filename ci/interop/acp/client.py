"""The ACP scenario driven by the official Python SDK (agent-client-protocol) against
`agent acp` and the loopback model (mock_model.py): initialize, a session with an MCP
server, two prompts (the second carrying the first), a parallel batch and a serial call,
a permission allowed then rejected (each call pending before its request, in_progress
once allowed), the file tools through the client's fs (a buffer read, a write that stays
off disk), cancel during a long Bash, and session/load after a restart, in one script an orchestrator could start from.
Usage: client.py AGENT_BIN MCP_SERVER_BIN WORKSPACE SESSIONS_DIR MOCK_URL"""

import asyncio
import json
import os
import sys
import time
import urllib.request

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (AllowedOutcome, ClientCapabilities, FileSystemCapabilities,
                        McpServerStdio, ReadTextFileResponse, RequestPermissionResponse,
                        WriteTextFileResponse)

agent_bin, mcp_bin, ws, sessions, mock_url = sys.argv[1:6]
log = []
updates = []
# The editor's buffers: what fs/read_text_file answers and fs/write_text_file changes.
buffers = {}
fs_log = []


def note(direction, what):
    log.append(f"{direction} {json.dumps(what, default=str)[:160]}")


def check(ok, what):
    if not ok:
        raise SystemExit(f"check failed: {what}")
    print(f"ok - {what}")


class Client:
    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        fs_log.append(f"read {path}")
        note("<-", {"read_text_file": path})
        content = buffers[path] if path in buffers else open(path).read()
        note("->", {"content": content})
        return ReadTextFileResponse(content=content)

    async def write_text_file(self, session_id, path, content, **kwargs):
        fs_log.append(f"write {path}")
        note("<-", {"write_text_file": path, "content": content})
        buffers[path] = content
        note("->", {})
        return WriteTextFileResponse()

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        updates.append({"sessionUpdate": "asked", "toolCallId": tool_call.tool_call_id})
        command = (tool_call.raw_input or {}).get("command", "")
        option = "reject_once" if "rejected" in command else "allow_once"
        note("<-", {"request_permission": tool_call.tool_call_id, "title": tool_call.title})
        note("->", {"outcome": option})
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option))

    async def session_update(self, session_id, update, **kwargs):
        u = update.model_dump(by_alias=True, exclude_none=True)
        updates.append(u)
        note("<-", {"update": u.get("sessionUpdate"), "id": u.get("toolCallId"),
                    "status": u.get("status"), "text": (u.get("content") or {}).get("text")
                    if isinstance(u.get("content"), dict) else None})


def since(n):
    return updates[n:]


def chunks(us, kind):
    return [u["content"]["text"] for u in us if u.get("sessionUpdate") == kind]


async def prompt(conn, sid, text):
    note("->", {"prompt": text})
    r = await conn.prompt(session_id=sid, prompt=[text_block(text)])
    note("<-", {"stopReason": r.stop_reason})
    return r


def env():
    e = dict(os.environ)
    e.update(ANTHROPIC_BASE_URL=mock_url, ANTHROPIC_API_KEY="sk-interop-test")
    return e


async def main():
    args = ["acp", "--sessions-dir", sessions, "--", "--full-auto"]
    async with spawn_agent_process(Client(), agent_bin, *args, env=env(), cwd=ws) as (conn, proc):
        fs = FileSystemCapabilities(read_text_file=True, write_text_file=True)
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION,
                                     client_capabilities=ClientCapabilities(fs=fs))
        check(init.protocol_version == 1, "initialize answers protocol version 1")
        server = McpServerStdio(name="t", command=mcp_bin, args=[], env=[])
        s = await conn.new_session(cwd=ws, mcp_servers=[server])
        sid = s.session_id
        note("<-", {"sessionId": sid})
        n = len(updates)
        r = await prompt(conn, sid, "say one")
        check(r.stop_reason == "end_turn" and chunks(since(n), "agent_message_chunk") == ["first answer"], "first prompt")
        n = len(updates)
        await prompt(conn, sid, "say two")
        check(chunks(since(n), "agent_message_chunk") == ["second answer"], "second prompt, chunks in order")
        reqs = json.load(urllib.request.urlopen(f"{mock_url}/requests"))
        users = [json.dumps(m["content"]) for m in reqs[1]["messages"] if m["role"] == "user"]
        check(len(users) == 2 and "say one" in users[0], "the second request carries the first's history")

        n = len(updates)
        await prompt(conn, sid, "batch")
        tools = [u for u in since(n) if u.get("sessionUpdate") in ("tool_call", "tool_call_update")]
        def ended(u):
            return u.get("status") in ("completed", "failed")
        first_end = next(i for i, u in enumerate(tools) if ended(u))
        check(sorted(u["toolCallId"] for u in tools[:first_end] if u["sessionUpdate"] == "tool_call") == ["b1", "b2", "b3"],
              "a parallel batch (MCP server from session/new): every call started before any finished")
        ids = [u["toolCallId"] for u in tools]
        last_b = max(i for i, u in enumerate(tools) if u["toolCallId"].startswith("b") and ended(u))
        check(ids.index("s1") > last_b, "a serial call after the batch")

        n = len(updates)
        await prompt(conn, sid, "permissions")
        def status(i):
            return [u.get("status") for u in since(n) if u.get("toolCallId") == i and u["sessionUpdate"] == "tool_call_update"][-1]
        check(os.path.exists(f"{ws}/allowed.txt") and status("p1") == "completed", "a permission allowed: the call ran")
        check(not os.path.exists(f"{ws}/rejected.txt") and status("p2") == "failed", "a permission rejected: the call did not run")

        def order(i):
            return ", ".join(f"{u['sessionUpdate']} {u.get('status') or ''}".strip()
                             for u in since(n) if u.get("toolCallId") == i)
        check(order("p1") == "tool_call pending, asked, tool_call_update in_progress, tool_call_update completed",
              f"status order of an allowed call: {order('p1')}")
        check(order("p2") == "tool_call pending, asked, tool_call_update failed",
              f"status order of a rejected call: {order('p2')}")

        # fs: the editor's unsaved buffer is what the model reads; the write reaches the
        # editor, not the disk.
        with open(f"{ws}/notes.txt", "w") as f:
            f.write("saved on disk\n")
        buffers[f"{ws}/notes.txt"] = "unsaved buffer text\n"
        await prompt(conn, sid, "files")
        reqs = json.dumps(json.load(urllib.request.urlopen(f"{mock_url}/requests")))
        check(fs_log == [f"read {ws}/notes.txt", f"write {ws}/out.txt"], f"fs requests: {fs_log}")
        check("1\\tunsaved buffer text" in reqs and "saved on disk" not in reqs,
              "fs/read_text_file: the model read the buffer, not the disk")
        check(buffers.get(f"{ws}/out.txt") == "written through the client\n" and not os.path.exists(f"{ws}/out.txt"),
              "fs/write_text_file: the write went to the client, not to disk")

        pending = asyncio.create_task(prompt(conn, sid, "cancel"))
        pid_file = f"{ws}/pid.txt"
        while not (os.path.exists(pid_file) and open(pid_file).read().strip()):
            await asyncio.sleep(0.02)
        pid = int(open(pid_file).read().strip())
        t0 = time.monotonic()
        note("->", {"cancel": sid})
        await conn.cancel(session_id=sid)
        r = await pending
        took = time.monotonic() - t0
        try:
            os.kill(pid, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        check(r.stop_reason == "cancelled" and took < 2 and not alive,
              f"cancel during a long Bash: cancelled in {took * 1000:.0f} ms, the command killed")
    async with spawn_agent_process(Client(), agent_bin, *args, env=env(), cwd=ws) as (conn, proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities())
        n = len(updates)
        note("->", {"load": sid})
        await conn.load_session(cwd=ws, session_id=sid, mcp_servers=[])
        replay = since(n)
        check(chunks(replay, "user_message_chunk")[0] == "say one" and "second answer" in chunks(replay, "agent_message_chunk"),
              "session/load after a restart replays the history")
        r = await prompt(conn, sid, "after load")
        check(r.stop_reason == "end_turn", "a prompt after load")
    print("\nmessage log (abridged):")
    for line in log:
        print(f"  {line}")


asyncio.run(main())
