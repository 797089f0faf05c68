// The ACP scenario driven by the official TypeScript SDK (@agentclientprotocol/sdk, the
// stable v1 entry point) against `agent acp` and the loopback model (mock_model.py).
// Usage: node client.mjs AGENT_BIN MCP_SERVER_BIN WORKSPACE SESSIONS_DIR MOCK_URL
// Exit 0 when every check passed; the session's message log (abridged) on stdout.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { existsSync, readFileSync } from "node:fs";
import * as acp from "./node/node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js";

const [agentBin, mcpBin, ws, sessions, mockUrl] = process.argv.slice(2);
const log = [];
const note = (dir, what) => log.push(`${dir} ${JSON.stringify(what).slice(0, 160)}`);
const check = (ok, what) => {
  if (!ok) throw new Error(`check failed: ${what}`);
  console.log(`ok - ${what}`);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function start() {
  const child = spawn(agentBin, ["acp", "--sessions-dir", sessions, "--", "--full-auto"], {
    cwd: ws,
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, ANTHROPIC_BASE_URL: mockUrl, ANTHROPIC_API_KEY: "sk-interop-test" },
  });
  return { child, stream: acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)) };
}

const updates = [];
const app = () =>
  acp
    .client({ name: "agent-interop-ts" })
    .onNotification("session/update", (ctx) => {
      updates.push(ctx.params.update);
      const u = ctx.params.update;
      note("<-", { update: u.sessionUpdate, id: u.toolCallId, status: u.status, text: u.content?.text });
    })
    .onRequest("session/request_permission", (ctx) => {
      const cmd = ctx.params.toolCall.rawInput?.command ?? "";
      const optionId = cmd.includes("rejected") ? "reject_once" : "allow_once";
      note("<-", { request_permission: ctx.params.toolCall.toolCallId, title: ctx.params.toolCall.title });
      note("->", { outcome: optionId });
      return { outcome: { outcome: "selected", optionId } };
    });

async function prompt(cx, sessionId, text) {
  note("->", { prompt: text });
  const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  note("<-", { stopReason: r.stopReason, usage: r.usage });
  return r;
}
const since = (n) => updates.slice(n);
const chunks = (us, kind) => us.filter((u) => u.sessionUpdate === kind).map((u) => u.content.text);

let sessionId;
{
  const { child, stream } = start();
  await app().connectWith(stream, async (cx) => {
    const init = await cx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    note("<-", { protocolVersion: init.protocolVersion, loadSession: init.agentCapabilities.loadSession });
    check(init.protocolVersion === 1, "initialize answers protocol version 1");
    const server = { name: "t", command: mcpBin, args: [], env: [] };
    const s = await cx.request("session/new", { cwd: ws, mcpServers: [server] });
    sessionId = s.sessionId;
    note("<-", { sessionId, configOptions: s.configOptions.map((o) => o.id) });

    let n = updates.length;
    let r = await prompt(cx, sessionId, "say one");
    check(r.stopReason === "end_turn" && chunks(since(n), "agent_message_chunk").join() === "first answer", "first prompt");
    n = updates.length;
    r = await prompt(cx, sessionId, "say two");
    check(chunks(since(n), "agent_message_chunk").join() === "second answer", "second prompt, chunks in order");
    const reqs = await (await fetch(`${mockUrl}/requests`)).json();
    const users = reqs[1].messages.filter((m) => m.role === "user").map((m) => JSON.stringify(m.content));
    check(users.length === 2 && users[0].includes("say one"), "the second request carries the first's history");

    n = updates.length;
    r = await prompt(cx, sessionId, "batch");
    const tools = since(n).filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update");
    const firstEnd = tools.findIndex((u) => u.sessionUpdate === "tool_call_update");
    const startedFirst = tools.slice(0, firstEnd).map((u) => u.toolCallId).sort().join();
    check(startedFirst === "b1,b2,b3", "a parallel batch (MCP server from session/new): every call started before any finished");
    const s1 = tools.findIndex((u) => u.toolCallId === "s1");
    const lastB = tools.map((u) => u.toolCallId).lastIndexOf("b3");
    check(s1 > lastB && tools.filter((u) => u.toolCallId === "s1").at(-1).status === "completed", "a serial call after the batch");

    n = updates.length;
    r = await prompt(cx, sessionId, "permissions");
    const st = (id) => since(n).filter((u) => u.toolCallId === id && u.sessionUpdate === "tool_call_update").at(-1)?.status;
    check(existsSync(`${ws}/allowed.txt`) && st("p1") === "completed", "a permission allowed: the call ran");
    check(!existsSync(`${ws}/rejected.txt`) && st("p2") === "failed", "a permission rejected: the call did not run");

    const pending = prompt(cx, sessionId, "cancel");
    while (!existsSync(`${ws}/pid.txt`) || !readFileSync(`${ws}/pid.txt`, "utf8").trim()) await sleep(20);
    const pid = Number(readFileSync(`${ws}/pid.txt`, "utf8").trim());
    const t0 = Date.now();
    note("->", { cancel: sessionId });
    await cx.notify("session/cancel", { sessionId });
    r = await pending;
    const took = Date.now() - t0;
    let alive = true;
    try { process.kill(pid, 0); } catch { alive = false; }
    check(r.stopReason === "cancelled" && took < 2000 && !alive, `cancel during a long Bash: cancelled in ${took} ms, the command killed`);
  });
  child.stdin.end();
  await new Promise((r) => child.on("exit", r));
}
{
  const { child, stream } = start();
  await app().connectWith(stream, async (cx) => {
    await cx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    const n = updates.length;
    note("->", { load: sessionId });
    await cx.request("session/load", { sessionId, cwd: ws, mcpServers: [] });
    const replay = since(n);
    check(chunks(replay, "user_message_chunk")[0] === "say one" && chunks(replay, "agent_message_chunk").includes("second answer"),
      "session/load after a restart replays the history");
    const r = await prompt(cx, sessionId, "after load");
    check(r.stopReason === "end_turn", "a prompt after load");
  });
  child.stdin.end();
  await new Promise((r) => child.on("exit", r));
}
console.log("\nmessage log (abridged):");
for (const l of log) console.log(`  ${l}`);
