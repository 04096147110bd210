"use strict";
// Runs the compiled extension in plain Node with test-host/fake-vscode.js standing in for VS Code,
// against a real agent-lsp server, the way a user drives it from the palette. Writes what the
// user saw, and the LSP traffic (from the client's verbose trace), as JSON to $RESULT.
//
//   EXT_DIR=<built extension> RESULT=out.json SCENARIO=task|missing|located WORKSPACE=<folder> \
//   SETTINGS='{"agentLsp.server.path": ...}' INPUTS='["task text", "note"]' node test-host/run.js

const fs = require("node:fs");
const path = require("node:path");
const Module = require("node:module");
const fake = require("./fake-vscode.js");

const extDir = path.resolve(process.env.EXT_DIR || path.join(__dirname, ".."));
const vscode = fake.vscodeFor(process.env.WORKSPACE || process.cwd());
const load = Module._load;
Module._load = function (request, ...rest) {
  return request === "vscode" ? vscode : load.call(this, request, ...rest);
};

const { record, commands } = fake;
const unhandled = [];
process.on("unhandledRejection", (error) => unhandled.push(String(error && error.message)));

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function waitFor(what, predicate, ms = 60000) {
  const until = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
const said = (pattern) => () => record.messages.some((m) => pattern.test(m.text));
const run = (id) => commands.get(id)();

/** The client's verbose trace -> [{direction, kind, method, body}]. */
function traffic() {
  const text = record.output.join("");
  const head = String.raw`\[Trace - [^\]]+\] (Sending|Received) (request|notification|response)`;
  const rest = String.raw` '([^']+)'[^\n]*\n(?:(?:Params|Result): )?([\s\S]*?)\n\n\n`;
  const entry = new RegExp(head + rest, "g");
  const found = [];
  for (const match of text.matchAll(entry)) {
    let body = match[4];
    try {
      body = JSON.parse(match[4]);
    } catch {
      // "No parameters provided." and the like
    }
    found.push({
      direction: match[1],
      kind: match[2],
      method: match[3].replace(/ - \(\d+\)$/, ""),
      body,
    });
  }
  return found;
}

async function task() {
  await run("agentLsp.palette.runTask");
  await waitFor("the outcome", said(/^agent-lsp: (completed|failed|error|cancelled)/));
  await waitFor("the status to go idle", () => record.status.at(-1) === "$(hubot) agent");
  await run("agentLsp.palette.cancel");
  await run("agentLsp.palette.remember");
  await run("agentLsp.palette.showLog");
  fake.setSetting("agentLsp.tests.runOnSave", true);
  await run("agentLsp.palette.runTests");
  await waitFor("the test run", said(/^agent-lsp: tests: /));
  // A new server command line restarts the server; the palette works with the new one.
  fake.setSetting("agentLsp.server.args", fake.settings["agentLsp.server.args"].globalValue);
  await run("agentLsp.palette.cancel");
}

async function missing() {
  await run("agentLsp.palette.runTask");
}

/** The server was found off PATH: it runs the tests. */
async function located() {
  await run("agentLsp.palette.runTests");
  await waitFor("the test run", said(/^agent-lsp: tests: /));
}

(async () => {
  for (const [key, value] of Object.entries(JSON.parse(process.env.SETTINGS || "{}"))) {
    fake.settings[key] = { globalValue: value };
  }
  fake.input.next.push(...JSON.parse(process.env.INPUTS || "[]"));
  const extension = require(path.join(extDir, "out", "extension.js"));
  const manifest = JSON.parse(fs.readFileSync(path.join(extDir, "package.json"), "utf8"));
  const context = { subscriptions: [], extension: { packageJSON: manifest } };
  let error = null;
  try {
    await extension.activate(context);
    await { task, missing, located }[process.env.SCENARIO || "task"]();
  } catch (e) {
    error = String(e && e.stack);
  }
  try {
    await extension.deactivate();
    context.subscriptions.forEach((d) => d.dispose());
  } catch (e) {
    error = `${error || ""}\ndeactivate: ${String(e && e.stack)}`;
  }
  const result = {
    error,
    unhandled,
    status: record.status,
    messages: record.messages,
    contexts: record.contexts.map((args) => args[1]),
    inputs: record.inputs,
    opened: record.opened,
    progress: record.progress,
    traffic: traffic(),
    output: record.output.join("").slice(-20000),
  };
  fs.writeFileSync(process.env.RESULT || "result.json", JSON.stringify(result, null, 1));
  process.exit(0);
})();
