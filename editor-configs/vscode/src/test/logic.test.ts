// Unit tests of the extension's pure logic (node's built-in runner; no VS Code needed).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe as suite, test } from "node:test";
import {
  CATEGORY,
  cancelArguments,
  describe,
  expandHome,
  explicitValue,
  extraDirectories,
  improveArguments,
  improvementItems,
  improveRevertArguments,
  isTaskProgress,
  logTarget,
  missingServerNotice,
  PALETTE,
  rememberArguments,
  resolveServer,
  resultNotice,
  type SearchContext,
  askSelectionArguments,
  runTaskArguments,
  runTestsArguments,
  SERVER,
  serverCommand,
  serverSettings,
  serverSupports,
  settingKeys,
  statusView,
  type TaskState,
  TaskTracker,
  taskIdOf,
  unsupportedNotice,
} from "../logic";

interface Manifest {
  activationEvents: string[];
  contributes: {
    commands: { command: string; title: string; category?: string }[];
    configuration: { properties: Record<string, { default?: unknown }> };
  };
}

// out/test/logic.test.js -> the extension folder's package.json
const manifest = JSON.parse(
  readFileSync(join(__dirname, "..", "..", "package.json"), "utf8"),
) as Manifest;

suite("server command line", () => {
  test("defaults to agent-lsp serve", () => {
    assert.deepEqual(serverCommand(undefined, undefined), {
      command: "agent-lsp",
      args: ["serve"],
    });
  });
  test("python -m agent_lsp", () => {
    assert.deepEqual(serverCommand("/usr/bin/python3", ["-m", "agent_lsp", "serve"]), {
      command: "/usr/bin/python3",
      args: ["-m", "agent_lsp", "serve"],
    });
  });
  test("blank path and bad args fall back to the defaults", () => {
    assert.deepEqual(serverCommand("  ", "serve"), { command: "agent-lsp", args: ["serve"] });
    assert.deepEqual(serverCommand(" agent-lsp ", ["serve", 3]), {
      command: "agent-lsp",
      args: ["serve"],
    });
  });
  test("an empty args list is kept", () => {
    assert.deepEqual(serverCommand("my-wrapper", []), { command: "my-wrapper", args: [] });
  });
});

suite("finding the server", () => {
  function context(executables: string[], over: Partial<SearchContext> = {}): SearchContext {
    return {
      env: { PATH: "/usr/local/bin:/usr/bin" },
      home: "/home/u",
      folders: ["/work/proj"],
      platform: "linux",
      isExecutable: (path) => executables.includes(path),
      ...over,
    };
  }

  test("a name on the extension host's PATH is used from there", () => {
    assert.deepEqual(resolveServer("agent-lsp", context(["/usr/bin/agent-lsp"])), {
      found: true,
      command: "/usr/bin/agent-lsp",
    });
  });
  test("not on PATH: pipx / uv tool / plain-venv folders, then the workspace's .venv", () => {
    const all = [
      "/home/u/.local/bin/agent-lsp",
      "/home/u/.local/share/agent-lsp/bin/agent-lsp",
      "/work/proj/.venv/bin/agent-lsp",
    ];
    for (let i = 0; i < all.length; i++) {
      assert.deepEqual(resolveServer("agent-lsp", context(all.slice(i))), {
        found: true,
        command: all[i],
      });
    }
    assert.deepEqual(
      resolveServer(
        "agent-lsp",
        context(["/opt/pipx/agent-lsp", "/home/u/.local/bin/agent-lsp"], {
          env: { PATH: "/usr/bin", PIPX_BIN_DIR: "/opt/pipx" },
        }),
      ),
      { found: true, command: "/opt/pipx/agent-lsp" },
    );
    assert.deepEqual(
      extraDirectories(context([], { env: { UV_TOOL_BIN_DIR: "~/uvbin", XDG_BIN_HOME: "" } })),
      [
        "/home/u/uvbin",
        "/home/u/.local/bin",
        "/home/u/.local/share/agent-lsp/bin",
        "/work/proj/.venv/bin",
      ],
    );
  });
  test("PATH comes first, even before the workspace's .venv", () => {
    const found = resolveServer(
      "agent-lsp",
      context(["/work/proj/.venv/bin/agent-lsp", "/usr/local/bin/agent-lsp"]),
    );
    assert.deepEqual(found, { found: true, command: "/usr/local/bin/agent-lsp" });
  });
  test("a path is used as given, with ~ expanded; a missing one is reported", () => {
    assert.equal(expandHome("~/bin/agent-lsp", "/home/u"), "/home/u/bin/agent-lsp");
    assert.equal(expandHome("/opt/x", "/home/u"), "/opt/x");
    assert.equal(expandHome("~x/y", "/home/u"), "~x/y");
    assert.deepEqual(resolveServer("~/bin/agent-lsp", context(["/home/u/bin/agent-lsp"])), {
      found: true,
      command: "/home/u/bin/agent-lsp",
    });
    assert.deepEqual(resolveServer("/nonexistent/agent-lsp", context([])), {
      found: false,
      command: "/nonexistent/agent-lsp",
      looked: [],
    });
  });
  test("Windows: Scripts folders and .exe", () => {
    const found = resolveServer(
      "agent-lsp",
      context(["C:\\p\\.venv\\Scripts\\agent-lsp.exe"], {
        env: { Path: "C:\\Windows" },
        home: "",
        folders: ["C:\\p"],
        platform: "win32",
      }),
    );
    assert.deepEqual(found, { found: true, command: "C:\\p\\.venv\\Scripts\\agent-lsp.exe" });
  });
  test("the message names what was tried, the install command and the setting", () => {
    const missing = resolveServer("agent-lsp", context([]));
    assert.equal(missing.found, false);
    const notice = missingServerNotice(
      missing.command,
      missing.found ? [] : missing.looked,
      "/home/u",
    );
    assert.equal(notice.level, "error");
    assert.equal(
      notice.text,
      'agent-lsp: the server "agent-lsp" was not found (looked on PATH and in ~/.local/bin, ' +
        "~/.local/share/agent-lsp/bin, /work/proj/.venv/bin). Install it from a checkout of " +
        "agent-lsp: `uv tool install .` (or `pipx install .`) in it, or set " +
        "agentLsp.server.path to its full path in your User settings.",
    );
    assert.match(
      missingServerNotice("/nonexistent/agent-lsp", [], "/home/u").text,
      /"\/nonexistent\/agent-lsp" was not found \(no such executable file\)/,
    );
  });
});

suite("settings sent to the server", () => {
  const keys = [
    "server.path",
    "server.args",
    "trace.server",
    "model.name",
    "model.baseUrl",
    "maxSteps",
    "tests.runOnSave",
  ];

  test("the most specific scope wins; defaults do not count", () => {
    assert.equal(explicitValue(undefined), undefined);
    assert.equal(explicitValue({}), undefined);
    assert.equal(explicitValue({ globalValue: 1 }), 1);
    assert.equal(explicitValue({ globalValue: 1, workspaceValue: 2 }), 2);
    assert.equal(explicitValue({ globalValue: 1, workspaceValue: 2, workspaceFolderValue: 3 }), 3);
    assert.equal(explicitValue({ globalValue: false }), false);
    assert.equal(explicitValue({ globalValue: null }), null);
  });

  test("only values the user set, nested by key, without the extension's own keys", () => {
    const set: Record<string, { globalValue?: unknown; workspaceValue?: unknown }> = {
      "server.path": { globalValue: "/opt/agent-lsp" },
      "trace.server": { globalValue: "verbose" },
      "model.name": { globalValue: "qwen", workspaceValue: "deepseek-chat" },
      maxSteps: { workspaceValue: 40 },
      "tests.runOnSave": { globalValue: false },
    };
    assert.deepEqual(
      serverSettings(keys, (key) => set[key]),
      { model: { name: "deepseek-chat" }, maxSteps: 40, tests: { runOnSave: false } },
    );
  });

  test("nothing set gives an empty tree", () => {
    assert.deepEqual(
      serverSettings(keys, () => ({})),
      {},
    );
  });

  test("keys come from the contributed agentLsp.* properties", () => {
    assert.deepEqual(
      settingKeys({ "agentLsp.model.name": {}, "agentLsp.maxSteps": {}, "other.x": {} }),
      ["model.name", "maxSteps"],
    );
    assert.deepEqual(settingKeys(undefined), []);
  });

  test("the manifest contributes the server settings and the extension's own", () => {
    const properties = manifest.contributes.configuration.properties;
    assert.equal(properties["agentLsp.server.path"]?.default, "agent-lsp");
    assert.deepEqual(properties["agentLsp.server.args"]?.default, ["serve"]);
    assert.ok("agentLsp.model.baseUrl" in properties);
    assert.ok(!("agentLsp.model.apiKey" in properties), "API keys come from the environment");
    const tree = serverSettings(settingKeys(properties), () => ({ globalValue: "x" }));
    assert.ok(!("server" in tree) && !("trace" in tree));
    assert.equal((tree.model as Record<string, unknown>).name, "x");
  });
});

suite("executeCommand arguments", () => {
  test("run task trims and refuses an empty task", () => {
    assert.deepEqual(runTaskArguments("  make the failing test pass \n"), [
      { task: "make the failing test pass" },
    ]);
    assert.equal(runTaskArguments(""), undefined);
    assert.equal(runTaskArguments("   "), undefined);
    assert.equal(runTaskArguments(undefined), undefined); // input box dismissed
  });
  test("run task carries the active editor's file and selection", () => {
    const range = { start: { line: 8, character: 0 }, end: { line: 11, character: 0 } };
    assert.deepEqual(runTaskArguments(" why? ", "file:///p/calc.py", range), [
      { task: "why?", uri: "file:///p/calc.py", range },
    ]);
    assert.deepEqual(runTaskArguments("why?", "file:///p/calc.py"), [
      { task: "why?", uri: "file:///p/calc.py" },
    ]);
  });
  test("ask about the selection: the typed words join, empty keeps the default, Escape runs nothing", () => {
    const given = [
      {
        uri: "file:///p/calc.py",
        range: { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } },
      },
    ];
    assert.deepEqual(askSelectionArguments(given, " make it faster "), [
      { ...given[0], task: "make it faster" },
    ]);
    assert.deepEqual(askSelectionArguments(given, ""), [given[0]]);
    assert.equal(askSelectionArguments(given, undefined), undefined);
  });
  test("run tests: whole suite, or one file", () => {
    assert.deepEqual(runTestsArguments(), [{}]);
    assert.deepEqual(runTestsArguments("file:///p/test_calc.py"), [
      { uri: "file:///p/test_calc.py" },
    ]);
  });
  test("cancel: any task, or one", () => {
    assert.deepEqual(cancelArguments(), [{}]);
    assert.deepEqual(cancelArguments("ab12cd34"), [{ taskId: "ab12cd34" }]);
  });
  test("remember needs a note", () => {
    assert.deepEqual(rememberArguments(" run tests with make test "), [
      { note: "run tests with make test" },
    ]);
    assert.equal(rememberArguments(" "), undefined);
    assert.equal(rememberArguments(undefined), undefined);
  });
  test("server support comes from the advertised commands", () => {
    const advertised = [SERVER.fix, SERVER.runTask, SERVER.runTests, SERVER.cancel];
    assert.ok(serverSupports(advertised, SERVER.runTask));
    assert.ok(!serverSupports(advertised, SERVER.remember));
    assert.ok(!serverSupports(undefined, SERVER.runTask));
  });
});

suite("palette commands", () => {
  test("differ from the server's command IDs", () => {
    const server = new Set<string>(Object.values(SERVER));
    for (const id of Object.values(PALETTE)) {
      assert.ok(!server.has(id), id);
    }
  });
  test("are all contributed with a title and activate the extension", () => {
    const contributed = new Map(manifest.contributes.commands.map((c) => [c.command, c.title]));
    const categories = new Map(manifest.contributes.commands.map((c) => [c.command, c.category]));
    for (const id of Object.values(PALETTE)) {
      assert.ok(!/^Agent/.test(contributed.get(id) ?? "Agent"), id);
      assert.equal(categories.get(id), CATEGORY, id); // shown as "agent-lsp: Run task…"
      assert.ok(manifest.activationEvents.includes(`onCommand:${id}`), id);
    }
    for (const id of Object.values(SERVER)) {
      assert.ok(!contributed.has(id), `${id} is registered by vscode-languageclient`);
    }
  });
});

suite("messages for results", () => {
  test("a started task names its id", () => {
    assert.deepEqual(resultNotice(SERVER.runTask, { taskId: "ab12cd34" }), {
      level: "info",
      text: "agent-lsp: task ab12cd34 started (agent-lsp: Cancel task stops it)",
    });
  });
  test("refusals are shown by the server, not twice", () => {
    assert.equal(
      resultNotice(SERVER.runTask, { error: "an agent task is already running" }),
      undefined,
    );
    assert.equal(resultNotice(SERVER.runTests, { error: "no test runner found" }), undefined);
    assert.equal(resultNotice(SERVER.remember, { error: "bad note" }), undefined);
  });
  test("test runs", () => {
    assert.equal(
      resultNotice(SERVER.runTests, { status: "started" })?.text,
      "agent-lsp: running the tests",
    );
    assert.equal(
      resultNotice(SERVER.runTests, { status: "already running" })?.text,
      "agent-lsp: the tests are already running",
    );
  });
  test("cancel with nothing running says so; a real cancel is reported by the task", () => {
    assert.deepEqual(resultNotice(SERVER.cancel, { cancelled: false }), {
      level: "info",
      text: "agent-lsp: no task to cancel",
    });
    assert.equal(resultNotice(SERVER.cancel, { cancelled: true }), undefined);
  });
  test("remember is acknowledged; odd results are tolerated", () => {
    assert.equal(resultNotice(SERVER.remember, null)?.text, "agent-lsp: noted");
    assert.equal(resultNotice(SERVER.runTask, null), undefined);
    assert.equal(resultNotice(SERVER.runTask, ["x"]), undefined);
    assert.equal(resultNotice("agentLsp.unknown", {}), undefined);
  });
  test("an unsupported command is a warning naming it", () => {
    assert.deepEqual(unsupportedNotice(SERVER.remember), {
      level: "warning",
      text: "agent-lsp: this server has no agentLsp.remember command (update agent-lsp)",
    });
  });
  test("show log opens what the server names, else the output channel", () => {
    assert.deepEqual(logTarget({ uri: "file:///p/.agent-lsp/logs/x.log" }), {
      kind: "uri",
      uri: "file:///p/.agent-lsp/logs/x.log",
    });
    assert.deepEqual(logTarget({ path: "/p/.agent-lsp/logs/x.log" }), {
      kind: "path",
      path: "/p/.agent-lsp/logs/x.log",
    });
    assert.deepEqual(logTarget(undefined), { kind: "channel" });
    assert.deepEqual(logTarget({ path: "" }), { kind: "channel" });
  });
});

suite("progress text", () => {
  test("tool calls become verbs with their path", () => {
    assert.equal(describe('edit_file {"path": "calc.py", "old_text": "x"'), "editing calc.py");
    assert.equal(describe('read_file {"path":"src/a.ts"}'), "reading src/a.ts");
    assert.equal(describe("run_tests {}"), "running tests");
    assert.equal(describe('new_tool {"x": 1}'), "new_tool");
  });
  test("tool results and the start line keep the previous text", () => {
    assert.equal(describe("edit_file: success: edited calc.py"), undefined);
    assert.equal(describe("started: fix: ZeroDivisionError"), undefined);
    assert.equal(describe(""), undefined);
  });
  test("other messages are shown as they are", () => {
    assert.equal(describe("asking the model"), "asking the model");
    assert.equal(describe("checking: running the test suite"), "checking: running the test suite");
    assert.equal(describe("tests: 3 passed"), "tests: 3 passed");
  });
});

suite("task progress", () => {
  test("the agent's tasks are recognised by title or token", () => {
    assert.ok(isTaskProgress("agent-lsp/ab12/x1", undefined));
    assert.ok(isTaskProgress(3, "agent-lsp"));
    assert.ok(!isTaskProgress("pylance-1", "Indexing"));
  });
  test("the task id for Cancel comes from the token", () => {
    assert.equal(taskIdOf("agent-lsp/ab12cd34/x1y2z3"), "ab12cd34");
    assert.equal(taskIdOf("agent-lsp"), undefined);
    assert.equal(taskIdOf(7), undefined);
    assert.equal(taskIdOf("other/ab/cd"), undefined);
  });
});

suite("task status", () => {
  function tracked(): { tracker: TaskTracker; states: TaskState[] } {
    const states: TaskState[] = [];
    return { tracker: new TaskTracker((s) => states.push(s)), states };
  }

  test("idle -> running(message) -> idle", () => {
    const { tracker, states } = tracked();
    assert.deepEqual(tracker.state, { kind: "idle" });
    tracker.progress("agent-lsp/ab12/x1", {
      kind: "begin",
      title: "agent-lsp",
      message: "fix: ZeroDivisionError",
    });
    tracker.progress("agent-lsp/ab12/x1", { kind: "report", message: "asking the model" });
    tracker.progress("agent-lsp/ab12/x1", {
      kind: "report",
      message: 'edit_file {"path": "calc.py"',
    });
    tracker.progress("agent-lsp/ab12/x1", { kind: "report", message: "edit_file: success" });
    tracker.progress("agent-lsp/ab12/x1", { kind: "end", message: "completed" });
    assert.deepEqual(states, [
      { kind: "running", text: "fix: ZeroDivisionError" },
      { kind: "running", text: "asking the model" },
      { kind: "running", text: "editing calc.py" },
      { kind: "idle" },
    ]);
  });

  test("other servers' progress is ignored", () => {
    const { tracker, states } = tracked();
    tracker.progress("pylance-1", { kind: "begin", title: "Indexing" });
    tracker.progress("pylance-1", { kind: "report", message: "50%" });
    tracker.progress("pylance-1", { kind: "end" });
    tracker.progress(7, { kind: "end" });
    assert.deepEqual(states, []);
    assert.deepEqual(tracker.state, { kind: "idle" });
  });

  test("a begin titled agent-lsp counts, whatever its token; no message shows the title", () => {
    const { tracker } = tracked();
    tracker.progress(42, { kind: "begin", title: "agent-lsp" });
    assert.deepEqual(tracker.state, { kind: "running", text: "agent-lsp" });
    tracker.progress(42, { kind: "end" });
    assert.deepEqual(tracker.state, { kind: "idle" });
  });

  test("running while any token is open; a reset ends everything", () => {
    const { tracker, states } = tracked();
    tracker.progress("agent-lsp/a/1", { kind: "begin", title: "agent-lsp", message: "first" });
    tracker.progress("agent-lsp/b/2", { kind: "begin", title: "agent-lsp", message: "second" });
    tracker.progress("agent-lsp/b/2", { kind: "end" });
    assert.deepEqual(tracker.state, { kind: "running", text: "first" });
    tracker.reset();
    assert.deepEqual(tracker.state, { kind: "idle" });
    tracker.reset();
    assert.deepEqual(states.at(-1), { kind: "idle" });
    assert.equal(states.filter((s) => s.kind === "idle").length, 1);
  });
});

suite("status bar", () => {
  test("idle offers a task", () => {
    assert.deepEqual(statusView({ kind: "idle" }), {
      text: "$(hubot) agent",
      tooltip: "agent-lsp: idle (click to run a task)",
      command: PALETTE.runTask,
    });
  });
  test("running shows the step and offers cancel", () => {
    const view = statusView({ kind: "running", text: "editing calc.py" });
    assert.equal(view.text, "$(sync~spin) agent: editing calc.py");
    assert.equal(view.command, PALETTE.cancel);
  });
  test("long or multi-line text is shortened to one line", () => {
    const view = statusView({ kind: "running", text: `I will fix it.\n\n${"x".repeat(100)}` });
    assert.ok(!view.text.includes("\n"));
    assert.ok(view.text.endsWith("…"));
    assert.equal(view.text.length, "$(sync~spin) agent: ".length + 50);
    assert.ok(view.tooltip.includes("x".repeat(100)));
  });
});

suite("improve commands", () => {
  test("the request (with the active file), the id, the list as quick-pick items", () => {
    assert.deepEqual(improveArguments(" pass -p no:randomly ", "file:///p/a.py"), [
      { request: "pass -p no:randomly", uri: "file:///p/a.py" },
    ]);
    assert.equal(improveArguments("  "), undefined);
    assert.deepEqual(improveRevertArguments(" 20261202-0101-ab12 "), [
      { id: "20261202-0101-ab12" },
    ]);
    assert.equal(improveRevertArguments(undefined), undefined);
    const items = improvementItems({
      improvements: [
        { id: "a", patch: { summary: "first" }, reverted: null },
        { id: "b", patch: { summary: "second" }, reverted: "2026-12-02T01:00:00+00:00" },
      ],
    });
    assert.deepEqual(
      items.map((i) => [i.id, i.label, i.reverted]),
      [
        ["b", "second", true],
        ["a", "first", false],
      ],
    );
    assert.deepEqual(improvementItems({ error: "no" }), []);
    assert.equal(SERVER.improve, "agentLsp.improve");
    assert.match(resultNotice(SERVER.improve, { taskId: "t1" })?.text ?? "", /task t1 started/);
  });
});
