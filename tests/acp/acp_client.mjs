// An ACP client on the TypeScript SDK (@agentclientprotocol/sdk, its app API): spawns
// `agent-lsp acp`, prompts once in a session on the project, answers every permission request
// with the first option of `answer`'s kind, and prints one JSON object: the initialize
// response, the stop reason and usage of the prompt's response, the updates, the permission
// requests and the agent's exit code.
//
//   node acp_client.mjs SDK_ENTRY PYTHON PROJECT PROMPT ANSWER_KIND
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkEntry, python, project, text, answer] = process.argv.slice(2);
const acp = await import(pathToFileURL(sdkEntry).href);
const { agent: asks, client: tells } = acp.methods;

const agent = spawn(python, ["-m", "agent_lsp", "acp"], { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => agent.on("exit", (code) => resolve(code)));
const updates = [];
const permissions = [];
const app = acp
  .client({ name: "agent-lsp tests" })
  .onRequest(tells.session.requestPermission, ({ params }) => {
    permissions.push(params);
    const option = params.options.find((o) => o.kind === answer);
    return option
      ? { outcome: { outcome: "selected", optionId: option.optionId } }
      : { outcome: { outcome: "cancelled" } };
  })
  .onNotification(tells.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(tells.fs.writeTextFile, () => {
    throw new Error("not offered");
  })
  .onRequest(tells.fs.readTextFile, () => {
    throw new Error("not offered");
  });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const { init, done } = await app.connectWith(stream, async (peer) => {
  const init = await peer.request(asks.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } },
  });
  const session = await peer.request(asks.session.new, { cwd: project, mcpServers: [] });
  const done = await peer.request(asks.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text }],
  });
  return { init, done };
});
agent.stdin.end();
const code = await exited;
process.stdout.write(
  JSON.stringify({
    init,
    stopReason: done.stopReason,
    usage: done.usage, // unstable in v1's schema: passed through as the agent sent it
    updates,
    permissions,
    code,
  }) + "\n",
);
