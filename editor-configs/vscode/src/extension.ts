// agent-lsp for VS Code: starts `agent-lsp serve`, adds palette commands and a status-bar item.
// The decisions live in ./logic (unit-tested without VS Code); this file wires them to the editor.

import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
} from "vscode-languageclient/node";
import {
  cancelArguments,
  logTarget,
  type Notice,
  PALETTE,
  rememberArguments,
  resultNotice,
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
  unsupportedNotice,
} from "./logic";

const SECTION = "agentLsp";
const LANGUAGES = [
  "python",
  "javascript",
  "javascriptreact",
  "typescript",
  "typescriptreact",
  "go",
];

let client: LanguageClient | undefined;
let starting: Promise<void> = Promise.resolve();
let outputChannel: vscode.OutputChannel | undefined;

/** Settings for the server: only what the user set, nested (see logic.serverSettings). */
function currentServerSettings(context: vscode.ExtensionContext): Record<string, unknown> {
  const json = context.extension.packageJSON as {
    contributes?: { configuration?: { properties?: Record<string, unknown> } };
  };
  const config = vscode.workspace.getConfiguration(SECTION);
  return serverSettings(settingKeys(json.contributes?.configuration?.properties), (key) =>
    config.inspect(key),
  );
}

function createClient(context: vscode.ExtensionContext, tracker: TaskTracker): LanguageClient {
  const config = vscode.workspace.getConfiguration(SECTION);
  const { command, args } = serverCommand(config.get("server.path"), config.get("server.args"));
  // stdio without a `transport`: TransportKind.stdio would append "--stdio" to the arguments.
  const serverOptions: ServerOptions = { command, args };
  const clientOptions: LanguageClientOptions = {
    documentSelector: LANGUAGES.map((language) => ({ scheme: "file", language })),
    outputChannel,
    initializationOptions: () => currentServerSettings(context),
    synchronize: { configurationSection: SECTION },
    middleware: {
      // The server reads `agentLsp` from the notification; VS Code's defaults stay out of it.
      workspace: {
        // The pull model likewise: only what the user set (VS Code would answer with every
        // default, hiding the user's own agent-lsp config file).
        configuration: (params, token, next) =>
          params.items.every((item) => item.section === SECTION)
            ? params.items.map(() => currentServerSettings(context))
            : next(params, token),
        didChangeConfiguration: async () => {
          if (client !== created || created.state !== State.Running) {
            return; // being replaced: the new server gets them as initializationOptions
          }
          await created
            .sendNotification(DidChangeConfigurationNotification.type, {
              settings: { [SECTION]: currentServerSettings(context) },
            })
            .catch((error: unknown) => {
              outputChannel?.appendLine(`agent-lsp: settings not sent: ${String(error)}`);
            });
        },
      },
      // Watch the server's work-done progress for the status bar; VS Code's own display
      // (the notification with its Cancel button) still gets every message through next().
      handleWorkDoneProgress: (token, params, next) => {
        tracker.progress(token, params);
        next(token, params);
      },
    },
  };
  const created = new LanguageClient(SECTION, "agent-lsp", serverOptions, clientOptions);
  created.onDidChangeState((event) => {
    if (event.newState === State.Stopped) {
      tracker.reset();
    }
  });
  return created;
}

function showStartError(error: unknown): void {
  const { command } = serverCommand(
    vscode.workspace.getConfiguration(SECTION).get("server.path"),
    undefined,
  );
  void vscode.window
    .showErrorMessage(
      `agent-lsp could not start "${command}": ${String(error)}. ` +
        "Install agent-lsp, or set agentLsp.server.path (and agentLsp.server.args).",
      "Open settings",
    )
    .then((choice) => {
      if (choice !== undefined) {
        void vscode.commands.executeCommand("workbench.action.openSettings", "agentLsp.server");
      }
    });
}

/** (Re)start the server with the current settings; restarts run one after the other. */
function launch(context: vscode.ExtensionContext, tracker: TaskTracker): Promise<void> {
  const previous = client;
  client = undefined;
  starting = starting.then(async () => {
    await previous?.dispose().catch(() => undefined);
    tracker.reset();
    const created = createClient(context, tracker);
    client = created;
    try {
      await created.start();
    } catch (error) {
      showStartError(error);
    }
  });
  return starting;
}

/** The running client, or undefined (after telling the user why). */
async function readyClient(): Promise<LanguageClient | undefined> {
  let awaited: Promise<void>;
  do {
    awaited = starting;
    await awaited;
  } while (awaited !== starting); // a restart began meanwhile
  if (client?.state === State.Running) {
    return client;
  }
  void vscode.window.showWarningMessage(
    "agent-lsp is not running (see the agent-lsp output for why)",
  );
  outputChannel?.show(true);
  return undefined;
}

function show(notice: Notice | undefined): void {
  if (notice === undefined) {
    return;
  }
  const text = notice.text;
  if (notice.level === "error") {
    void vscode.window.showErrorMessage(text);
  } else if (notice.level === "warning") {
    void vscode.window.showWarningMessage(text);
  } else {
    void vscode.window.showInformationMessage(text);
  }
}

/** Run a server command through workspace/executeCommand; undefined when it could not run. */
async function execute(command: string, args: unknown[], optional = false): Promise<unknown> {
  const running = await readyClient();
  if (running === undefined) {
    return undefined;
  }
  const advertised = running.initializeResult?.capabilities.executeCommandProvider?.commands;
  if (optional && !serverSupports(advertised, command)) {
    show(unsupportedNotice(command));
    return undefined;
  }
  try {
    const result: unknown = await running.sendRequest(ExecuteCommandRequest.type, {
      command,
      arguments: args,
    });
    show(resultNotice(command, result));
    return result;
  } catch (error) {
    void vscode.window.showErrorMessage(`agent-lsp: ${command} failed: ${String(error)}`);
    return undefined;
  }
}

async function runTask(): Promise<void> {
  if ((await readyClient()) === undefined) {
    return; // say so before asking for a task
  }
  const text = await vscode.window.showInputBox({
    title: "Agent: Run task",
    prompt: "What should the agent do?",
    placeHolder: "make the failing test pass",
    ignoreFocusOut: true,
  });
  const args = runTaskArguments(text);
  if (args !== undefined) {
    await execute(SERVER.runTask, args);
  }
}

async function remember(): Promise<void> {
  if ((await readyClient()) === undefined) {
    return;
  }
  const text = await vscode.window.showInputBox({
    title: "Agent: Remember",
    prompt: "A note the agent keeps for this project (.agent-lsp/memory/notes.md)",
    placeHolder: "tests run with `make test`",
    ignoreFocusOut: true,
  });
  const args = rememberArguments(text);
  if (args !== undefined) {
    await execute(SERVER.remember, args, true);
  }
}

async function showLog(): Promise<void> {
  const running = client?.state === State.Running ? client : undefined;
  const advertised = running?.initializeResult?.capabilities.executeCommandProvider?.commands;
  let result: unknown;
  if (running && serverSupports(advertised, SERVER.showLog)) {
    result = await execute(SERVER.showLog, []);
  }
  const target = logTarget(result);
  if (target.kind === "channel") {
    outputChannel?.show(true);
    return;
  }
  const uri = target.kind === "uri" ? vscode.Uri.parse(target.uri) : vscode.Uri.file(target.path);
  await vscode.window.showTextDocument(uri, { preview: true });
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  outputChannel = vscode.window.createOutputChannel("agent-lsp");
  context.subscriptions.push(outputChannel);
  const item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 0);
  let shown: TaskState["kind"] | undefined;
  const render = (state: TaskState): void => {
    const view = statusView(state);
    item.text = view.text;
    item.tooltip = view.tooltip;
    item.command = view.command;
    if (state.kind !== shown) {
      shown = state.kind; // a context key for keybindings: "when": "agentLsp.taskRunning"
      void vscode.commands.executeCommand(
        "setContext",
        "agentLsp.taskRunning",
        shown === "running",
      );
    }
  };
  const tracker = new TaskTracker(render);
  render(tracker.state);
  item.name = "agent-lsp";
  item.show();

  context.subscriptions.push(
    item,
    vscode.commands.registerCommand(PALETTE.runTask, runTask),
    vscode.commands.registerCommand(PALETTE.runTests, () =>
      execute(SERVER.runTests, runTestsArguments()),
    ),
    vscode.commands.registerCommand(PALETTE.cancel, () =>
      execute(SERVER.cancel, cancelArguments()),
    ),
    vscode.commands.registerCommand(PALETTE.showLog, showLog),
    vscode.commands.registerCommand(PALETTE.remember, remember),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.server`)) {
        void launch(context, tracker);
      }
    }),
  );
  await launch(context, tracker);
}

export async function deactivate(): Promise<void> {
  const old = client;
  client = undefined;
  await old?.dispose().catch(() => undefined); // a server that never started cannot stop
}
