// The client command the MCP conformance suite runs for each client scenario (see
// mcp-conformance.sh): `node mcp-conformance-client.mjs SERVER_URL`, with the scenario's
// name in MCP_CONFORMANCE_SCENARIO and its credentials, if any, in MCP_CONFORMANCE_CONTEXT.
// It writes what a user would: an .mcp.json naming the server (the credentials in its
// "oauth" block, as ${VAR}s expanded from the environment) and a cassette that plays the
// model (one call of the scenario's tool, then an answer); then it runs
// `agent run --replay` and exits with its exit code. Nothing here is scenario logic: the
// only per-scenario choice is which tool the model calls.
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const url = process.argv[2];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO || "";
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
const agent = process.env.AGENT || "agent";
const dir = mkdtempSync(join(tmpdir(), "agent-conformance-"));

// The tool each scenario's server offers (the auth scenarios all offer `test-tool`).
const tools = {
  initialize: null,
  tools_call: ["add_numbers", { a: 5, b: 3 }],
  "elicitation-sep1034-client-defaults": ["test_client_elicitation_defaults", {}],
  "sse-retry": ["test_reconnection", {}],
};
const call = scenario in tools ? tools[scenario] : ["test-tool", {}];

// Credentials go in the environment and are named in the file, as a user keeps secrets.
const env = { ...process.env };
const oauth = {
  // A Client ID Metadata Document URL: used when the authorization server says it
  // accepts them (the suite's own URL; nothing fetches it here).
  client_metadata_url: "https://conformance-test.local/client-metadata.json",
};
const secret = (key, name, value) => {
  env[name] = value;
  oauth[key] = "${" + name + "}";
};
if (context.client_id) oauth.client_id = context.client_id;
if (context.client_secret) secret("client_secret", "CONF_CLIENT_SECRET", context.client_secret);
if (context.private_key_pem) {
  secret("private_key", "CONF_PRIVATE_KEY", context.private_key_pem);
  oauth.signing_algorithm = context.signing_algorithm || "RS256";
}
if (context.idp_id_token) {
  secret("idp_id_token", "CONF_IDP_ID_TOKEN", context.idp_id_token);
  oauth.idp_token_endpoint = context.idp_token_endpoint;
  oauth.idp_client_id = context.idp_client_id;
}
// Flags and keys of a newer agent (the suite runs older ones too, for a baseline).
const help = spawnSync(agent, ["run", "--help"], { encoding: "utf8" }).stdout || "";
const server = { type: "http", url };
if (help.includes("--mcp-token-cache")) server.oauth = oauth;
const config = join(dir, "mcp.json");
writeFileSync(config, JSON.stringify({ mcpServers: { conf: server } }, null, 2));

// The cassette: Anthropic stream events, one turn per model answer.
const model = "claude-sonnet-4-5-20250929";
const frame = (event, data) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const turn = (index, blocks, stop) => {
  const usage = { input_tokens: 100, output_tokens: 10 };
  let sse = frame("message_start", {
    type: "message_start",
    message: { id: `msg_conf_${index}`, type: "message", role: "assistant", model, content: [],
               stop_reason: null, stop_sequence: null, usage },
  });
  blocks.forEach((b, i) => {
    if (b.text !== undefined) {
      sse += frame("content_block_start", { type: "content_block_start", index: i,
                                            content_block: { type: "text", text: "" } });
      sse += frame("content_block_delta", { type: "content_block_delta", index: i,
                                            delta: { type: "text_delta", text: b.text } });
    } else {
      sse += frame("content_block_start", { type: "content_block_start", index: i,
        content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } });
      sse += frame("content_block_delta", { type: "content_block_delta", index: i,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input) } });
    }
    sse += frame("content_block_stop", { type: "content_block_stop", index: i });
  });
  sse += frame("message_delta", { type: "message_delta",
                                  delta: { stop_reason: stop, stop_sequence: null }, usage });
  sse += frame("message_stop", { type: "message_stop" });
  return { type: "turn", index, request: { messages: index * 2 - 1, tools: [] }, sse };
};
const lines = [{ type: "header", format: 1, provider: "anthropic", model, agent_version: "0",
                 workspace: dir, tools: [] }];
if (call) {
  lines.push(turn(1, [{ text: "Calling the tool." },
                      { id: "toolu_conf_1", name: `mcp__conf__${call[0]}`, input: call[1] }],
                  "tool_use"));
  lines.push(turn(2, [{ text: "Done." }], "end_turn"));
} else {
  lines.push(turn(1, [{ text: "Connected." }], "end_turn"));
}
const cassette = join(dir, "cassette.jsonl");
writeFileSync(cassette, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");

const args = ["run", "--replay", cassette, "-C", dir, "--no-project-settings",
              "--mcp-config", config, "--strict-mcp", "--allow-mcp", "--json", "-v"];
if (help.includes("--mcp-elicitation")) args.push("--mcp-elicitation", "defaults");
args.push(`Use the MCP server's tool (scenario ${scenario}).`);
const run = spawnSync(agent, args, { stdio: "inherit", env });
process.exit(run.status ?? 1);
