// agent-lsp for VS Code: starts `agent-lsp serve`, adds palette commands, a status-bar item and
// a progress notification (with Cancel) while a task runs.
// The decisions live in ./logic (unit-tested without VS Code); this file wires them to the editor.

import { accessSync, constants, statSync } from "node:fs";
import { homedir } from "node:os";
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
  CATEGORY,
  cancelArguments,
  continueArguments,
  improveArguments,
  improveRevertArguments,
  improvementItems,
  isTaskProgress,
  logTarget,
  missingServerNotice,
  type Notice,
  PALETTE,
  type ProgressValue,
  rememberArguments,
  resolveServer,
  resultNotice,
  askSelectionArguments,
  runTaskArguments,
  runTestsArguments,
  SERVER,
  serverCommand,
  serverSettings,
  serverSupports,
  settingKeys,
  statusView,
  steerArguments,
  type TaskState,
  TaskTracker,
  taskIdOf,
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

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Where agentLsp.server.path points: found on PATH or in the usual install folders, or not. */
function locateServer(): ReturnType<typeof resolveServer> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const { command } = serverCommand(config.get("server.path"), undefined);
  return resolveServer(command, {
    env: process.env,
    home: homedir(),
    folders: (vscode.workspace.workspaceFolders ?? [])
      .filter((folder) => folder.uri.scheme === "file")
      .map((folder) => folder.uri.fsPath),
    platform: process.platform,
    isExecutable,
  });
}

/**
 * A task's progress as a notification with a Cancel button (vscode-languageclient would show
 * it in the status bar only, where it cannot be cancelled). Cancel runs agentLsp.cancel.
 */
class TaskNotifications {
  private readonly open = new Map<
    string | number,
    { progress?: vscode.Progress<{ message?: string }>; pending: string[]; done: () => void }
  >();

  /** True when the progress is one of the agent's tasks (shown here, not passed on). */
  handle(token: string | number, value: ProgressValue): boolean {
    if (value.kind === "begin") {
      if (!isTaskProgress(token, value.title)) {
        return false;
      }
      this.begin(token, value.message);
      return true;
    }
    const entry = this.open.get(token);
    if (entry === undefined) {
      return false;
    }
    if (value.kind === "report") {
      if (value.message) {
        if (entry.progress) {
          entry.progress.report({ message: value.message });
        } else {
          entry.pending.push(value.message);
        }
      }
    } else {
      this.open.delete(token);
      entry.done();
    }
    return true;
  }

  /** The server went away: close every notification. */
  reset(): void {
    for (const entry of this.open.values()) {
      entry.done();
    }
    this.open.clear();
  }

  private begin(token: string | number, message: string | undefined): void {
    let done: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => {
      done = resolve;
    });
    const entry: {
      progress?: vscode.Progress<{ message?: string }>;
      pending: string[];
      done: () => void;
    } = { pending: message ? [message] : [], done };
    this.open.set(token, entry);
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: CATEGORY, cancellable: true },
      (progress, cancelled) => {
        entry.progress = progress;
        for (const text of entry.pending.splice(0)) {
          progress.report({ message: text });
        }
        const subscription = cancelled.onCancellationRequested(() => {
          void execute(SERVER.cancel, cancelArguments(taskIdOf(token)));
        });
        return finished.finally(() => subscription.dispose());
      },
    );
  }
}

function createClient(
  context: vscode.ExtensionContext,
  tracker: TaskTracker,
  notifications: TaskNotifications,
  command: string,
): LanguageClient {
  const config = vscode.workspace.getConfiguration(SECTION);
  const { args } = serverCommand(undefined, config.get("server.args"));
  // stdio without a `transport`: TransportKind.stdio would append "--stdio" to the arguments.
  const serverOptions: ServerOptions = { command, args };
  const clientOptions: LanguageClientOptions = {
    documentSelector: LANGUAGES.map((language) => ({ scheme: "file", language })),
    outputChannel,
    initializationOptions: () => currentServerSettings(context),
    synchronize: { configurationSection: SECTION },
    middleware: {
      // The code action "Agent: continue the stopped task…" carries no hint: ask for one.
      executeCommand: async (command, args, next) => {
        const given = args[0] as { taskId?: string; hint?: string } | undefined;
        if (command === SERVER.continue && given?.hint === undefined) {
          const asked = await askHint(given?.taskId);
          return asked === undefined ? undefined : next(command, asked);
        }
        if (
          command === SERVER.askSelection &&
          (args[0] as { task?: string } | undefined)?.task === undefined
        ) {
          const typed = await vscode.window.showInputBox({
            title: `${CATEGORY}: Ask agent about the selection`,
            prompt:
              "What should the agent do with the selected code? (empty: explain it, fix what is wrong)",
            ignoreFocusOut: true,
          });
          const asked = askSelectionArguments(args, typed);
          return asked === undefined ? undefined : next(command, asked);
        }
        return next(command, args);
      },
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
      // The server's work-done progress: the status bar follows it, and a task's progress
      // becomes a notification with Cancel. vscode-languageclient's own display (a status-bar
      // spinner without Cancel) only gets other progress, and the end (to clean up).
      handleWorkDoneProgress: (token, params, next) => {
        tracker.progress(token, params);
        if (!notifications.handle(token, params) || params.kind === "end") {
          next(token, params);
        }
      },
    },
  };
  const created = new LanguageClient(SECTION, "agent-lsp", serverOptions, clientOptions);
  created.onDidChangeState((event) => {
    if (event.newState === State.Stopped) {
      tracker.reset();
      notifications.reset();
    }
  });
  return created;
}

const OPEN_SETTING = "Open setting";

/** An error with a button that opens the Settings editor at agentLsp.server.path. */
function showServerError(text: string): void {
  void vscode.window.showErrorMessage(text, OPEN_SETTING).then((choice) => {
    if (choice === OPEN_SETTING) {
      void vscode.commands.executeCommand(
        "workbench.action.openSettings",
        `${SECTION}.server.path`,
      );
    }
  });
}

function showStartError(command: string, error: unknown): void {
  showServerError(
    `agent-lsp could not start "${command}": ${String(error)}. ` +
      "Set agentLsp.server.path (and agentLsp.server.args) in your User settings.",
  );
}

/** (Re)start the server with the current settings; restarts run one after the other. */
function launch(
  context: vscode.ExtensionContext,
  tracker: TaskTracker,
  notifications: TaskNotifications,
): Promise<void> {
  const previous = client;
  client = undefined;
  starting = starting.then(async () => {
    await previous?.dispose().catch(() => undefined);
    tracker.reset();
    notifications.reset();
    const located = locateServer();
    if (!located.found) {
      const notice = missingServerNotice(located.command, located.looked, homedir());
      outputChannel?.appendLine(notice.text);
      showServerError(notice.text);
      return;
    }
    const created = createClient(context, tracker, notifications, located.command);
    client = created;
    try {
      await created.start();
    } catch (error) {
      showStartError(located.command, error);
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
    title: `${CATEGORY}: Run task`,
    prompt: "What should the agent do?",
    placeHolder: "make the failing test pass",
    ignoreFocusOut: true,
  });
  const editor = vscode.window.activeTextEditor;
  const selected = editor?.selection;
  const range =
    selected === undefined
      ? undefined
      : {
          start: { line: selected.start.line, character: selected.start.character },
          end: { line: selected.end.line, character: selected.end.character },
        };
  const uri = editor?.document.uri.scheme === "file" ? editor.document.uri.toString() : undefined;
  const args = runTaskArguments(text, uri, uri === undefined ? undefined : range);
  if (args !== undefined) {
    await execute(SERVER.runTask, args);
  }
}

async function remember(): Promise<void> {
  if ((await readyClient()) === undefined) {
    return;
  }
  const text = await vscode.window.showInputBox({
    title: `${CATEGORY}: Remember`,
    prompt: "A note the agent keeps for this project (.agent-lsp/memory/notes.md)",
    placeHolder: "tests run with `make test`",
    ignoreFocusOut: true,
  });
  const args = rememberArguments(text);
  if (args !== undefined) {
    await execute(SERVER.remember, args, true);
  }
}

async function askHint(taskId?: string): Promise<unknown[] | undefined> {
  const text = await vscode.window.showInputBox({
    title: `${CATEGORY}: Continue the stopped task`,
    prompt: "A hint for the agent: it goes on in the same conversation",
    placeHolder: "try the + 1 in average()",
    ignoreFocusOut: true,
  });
  return continueArguments(text, taskId);
}

async function continueTask(): Promise<void> {
  if ((await readyClient()) === undefined) {
    return;
  }
  const args = await askHint();
  if (args !== undefined) {
    await execute(SERVER.continue, args);
  }
}

async function steer(): Promise<void> {
  if ((await readyClient()) === undefined) {
    return;
  }
  const text = await vscode.window.showInputBox({
    title: `${CATEGORY}: Steer the running task`,
    prompt: "A note the agent takes at its next step",
    placeHolder: "use the existing helper in utils.py",
    ignoreFocusOut: true,
  });
  const args = steerArguments(text);
  if (args !== undefined) {
    await execute(SERVER.steer, args);
  }
}

async function improve(): Promise<void> {
  if ((await readyClient()) === undefined) {
    return;
  }
  const text = await vscode.window.showInputBox({
    title: `${CATEGORY}: Improve its setup`,
    prompt: "What should agent-lsp change in its own setup for this project?",
    placeHolder: "when you run the tests here, always pass -p no:randomly",
    ignoreFocusOut: true,
  });
  const uri = vscode.window.activeTextEditor?.document.uri.toString();
  const args = improveArguments(text, uri);
  if (args !== undefined) {
    await execute(SERVER.improve, args, true);
  }
}

async function pickImprovement(onlyApplied: boolean): Promise<string | undefined> {
  const items = improvementItems(await execute(SERVER.improveList, [{}], true)).filter(
    (item) => !onlyApplied || !item.reverted,
  );
  if (items.length === 0) {
    void vscode.window.showInformationMessage(
      onlyApplied ? "agent-lsp: no applied improvement" : "agent-lsp: no improvements yet",
    );
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(items, {
    title: `${CATEGORY}: Improvements`,
    placeHolder: onlyApplied ? "The improvement to revert" : "Pick one to revert it",
  });
  return picked?.reverted === false ? picked.id : undefined;
}

async function improveList(): Promise<void> {
  const id = await pickImprovement(false);
  if (id !== undefined) {
    await improveRevert(id);
  }
}

async function improveRevert(id?: string): Promise<void> {
  const ident = id ?? (await pickImprovement(true));
  const args = improveRevertArguments(ident);
  if (args !== undefined) {
    await execute(SERVER.improveRevert, args, true);
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
  const notifications = new TaskNotifications();
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
    vscode.commands.registerCommand(PALETTE.continue, continueTask),
    vscode.commands.registerCommand(PALETTE.steer, steer),
    vscode.commands.registerCommand(PALETTE.improve, improve),
    vscode.commands.registerCommand(PALETTE.improveList, improveList),
    vscode.commands.registerCommand(PALETTE.improveRevert, () => improveRevert()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.server`)) {
        void launch(context, tracker, notifications);
      }
    }),
  );
  await launch(context, tracker, notifications);
}

export async function deactivate(): Promise<void> {
  const old = client;
  client = undefined;
  await old?.dispose().catch(() => undefined); // a server that never started cannot stop
}
