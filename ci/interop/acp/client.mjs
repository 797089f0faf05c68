// The ACP scenario driven by the official TypeScript SDK (@agentclientprotocol/sdk, the
// stable v1 entry point) against `agent acp` and the loopback model (mock_model.py).
// Usage: node client.mjs AGENT_BIN MCP_SERVER_BIN WORKSPACE SESSIONS_DIR MOCK_URL
// Exit 0 when every check passed; the session's message log (abridged) on stdout.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
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
// The editor's buffers: what fs/read_text_file answers and fs/write_text_file changes.
const buffers = new Map();
const fsLog = [];
const app = () =>
  acp
    .client({ name: "agent-interop-ts" })
    .onNotification("session/update", (ctx) => {
      updates.push(ctx.params.update);
      const u = ctx.params.update;
      note("<-", { update: u.sessionUpdate, id: u.toolCallId, status: u.status, text: u.content?.text });
    })
    .onRequest("fs/read_text_file", (ctx) => {
      const { path } = ctx.params;
      fsLog.push(`read ${path}`);
      note("<-", { read_text_file: path });
      const content = buffers.get(path) ?? readFileSync(path, "utf8");
      note("->", { content });
      return { content };
    })
    .onRequest("fs/write_text_file", (ctx) => {
      const { path, content } = ctx.params;
      fsLog.push(`write ${path}`);
      note("<-", { write_text_file: path, content });
      buffers.set(path, content);
      note("->", {});
      return {};
    })
    .onRequest("session/request_permission", (ctx) => {
      updates.push({ sessionUpdate: "asked", toolCallId: ctx.params.toolCall.toolCallId });
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
    const init = await cx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
    });
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
    const ended = (u) => u.status === "completed" || u.status === "failed";
    const firstEnd = tools.findIndex(ended);
    const startedFirst = tools.slice(0, firstEnd).filter((u) => u.sessionUpdate === "tool_call").map((u) => u.toolCallId).sort().join();
    check(startedFirst === "b1,b2,b3", "a parallel batch (MCP server from session/new): every call started before any finished");
    const s1 = tools.findIndex((u) => u.toolCallId === "s1");
    const lastB = tools.findLastIndex((u) => u.toolCallId.startsWith("b") && ended(u));
    check(s1 > lastB && tools.filter((u) => u.toolCallId === "s1").at(-1).status === "completed", "a serial call after the batch");

    n = updates.length;
    r = await prompt(cx, sessionId, "permissions");
    const st = (id) => since(n).filter((u) => u.toolCallId === id && u.sessionUpdate === "tool_call_update").at(-1)?.status;
    check(existsSync(`${ws}/allowed.txt`) && st("p1") === "completed", "a permission allowed: the call ran");
    check(!existsSync(`${ws}/rejected.txt`) && st("p2") === "failed", "a permission rejected: the call did not run");
    const order = (id) => since(n).filter((u) => u.toolCallId === id).map((u) => `${u.sessionUpdate} ${u.status ?? ""}`.trim()).join(", ");
    check(order("p1") === "tool_call pending, asked, tool_call_update in_progress, tool_call_update completed",
      `status order of an allowed call: ${order("p1")}`);
    check(order("p2") === "tool_call pending, asked, tool_call_update failed", `status order of a rejected call: ${order("p2")}`);

    // fs: the editor's unsaved buffer is what the model reads; the write reaches the editor, not the disk.
    writeFileSync(`${ws}/notes.txt`, "saved on disk\n");
    buffers.set(`${ws}/notes.txt`, "unsaved buffer text\n");
    n = updates.length;
    r = await prompt(cx, sessionId, "files");
    const reqs2 = JSON.stringify(await (await fetch(`${mockUrl}/requests`)).json());
    check(fsLog.join() === `read ${ws}/notes.txt,write ${ws}/out.txt`, `fs requests: ${fsLog.join()}`);
    check(reqs2.includes("1\\tunsaved buffer text") && !reqs2.includes("saved on disk"), "fs/read_text_file: the model read the buffer, not the disk");
    check(buffers.get(`${ws}/out.txt`) === "written through the client\n" && !existsSync(`${ws}/out.txt`),
      "fs/write_text_file: the write went to the client, not to disk");

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
