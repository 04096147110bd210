// An ACP client on the TypeScript SDK (@agentclientprotocol/sdk): spawns `agent-lsp acp`,
// prompts once in a session on the project, answers every permission request with the first
// option of `answer`'s kind, and prints one JSON object: the stop reason, the updates, the
// permission requests and the agent's exit code.
//
//   node acp_client.mjs SDK_ENTRY PYTHON PROJECT PROMPT ANSWER_KIND
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkEntry, python, project, text, answer] = process.argv.slice(2);
const acp = await import(pathToFileURL(sdkEntry).href);

const agent = spawn(python, ["-m", "agent_lsp", "acp"], { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => agent.on("exit", (code) => resolve(code)));
const updates = [];
const permissions = [];
const client = {
  async requestPermission(params) {
    permissions.push(params);
    const option = params.options.find((o) => o.kind === answer);
    return option
      ? { outcome: { outcome: "selected", optionId: option.optionId } }
      : { outcome: { outcome: "cancelled" } };
  },
  async sessionUpdate(params) {
    updates.push(params.update);
  },
  async writeTextFile() {
    throw new Error("not offered");
  },
  async readTextFile() {
    throw new Error("not offered");
  },
};
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const connection = new acp.ClientSideConnection(() => client, stream);
const init = await connection.initialize({
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
});
const session = await connection.newSession({ cwd: project, mcpServers: [] });
const done = await connection.prompt({
  sessionId: session.sessionId,
  prompt: [{ type: "text", text }],
});
agent.stdin.end();
const code = await exited;
process.stdout.write(
  JSON.stringify({ init, stopReason: done.stopReason, updates, permissions, code }) + "\n",
);
