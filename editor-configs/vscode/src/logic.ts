// Pure logic of the extension: no `vscode` import, so `node --test` checks it without an editor.

/** Commands the agent-lsp server registers (workspace/executeCommand). */
export const SERVER = {
  fix: "agentLsp.fix",
  runTask: "agentLsp.runTask",
  runTests: "agentLsp.runTests",
  cancel: "agentLsp.cancel",
  showLog: "agentLsp.showLog",
  remember: "agentLsp.remember",
  continue: "agentLsp.continue",
  steer: "agentLsp.steer",
  improve: "agentLsp.improve",
  improveList: "agentLsp.improveList",
  improveRevert: "agentLsp.improveRevert",
  askSelection: "agentLsp.askSelection",
} as const;

/**
 * The palette commands of this extension. They differ from the server's IDs on purpose:
 * vscode-languageclient registers every ID the server advertises as a VS Code command itself.
 */
export const PALETTE = {
  runTask: "agentLsp.palette.runTask",
  runTests: "agentLsp.palette.runTests",
  cancel: "agentLsp.palette.cancel",
  showLog: "agentLsp.palette.showLog",
  remember: "agentLsp.palette.remember",
  continue: "agentLsp.palette.continue",
  steer: "agentLsp.palette.steer",
  improve: "agentLsp.palette.improve",
  improveList: "agentLsp.palette.improveList",
  improveRevert: "agentLsp.palette.improveRevert",
} as const;

/** The palette category: commands show as "agent-lsp: Run task…" (the product's name). */
export const CATEGORY = "agent-lsp";

/** Settings of the extension itself: how to start the server. Never sent to the server. */
export const EXTENSION_ONLY = ["server", "trace"] as const;
export const DEFAULT_SERVER_PATH = "agent-lsp";
export const DEFAULT_SERVER_ARGS: readonly string[] = ["serve"];
/** Title of the server's work-done progress; its tokens start with "agent-lsp/". */
export const PROGRESS_TITLE = "agent-lsp";
/** The install line a missing server's message shows: in a checkout of agent-lsp (its
 * distribution, `agent-lsp-editor`, is not on PyPI yet). */
export const INSTALL_COMMAND = "uv tool install .";
export const INSTALL_ALTERNATIVE = "pipx install .";

// ---------------------------------------------------------------- server command line

export interface ServerCommand {
  command: string;
  args: string[];
}

/** `agentLsp.server.path` + `agentLsp.server.args` -> what to spawn; bad values fall back. */
export function serverCommand(path: unknown, args: unknown): ServerCommand {
  const command =
    typeof path === "string" && path.trim() !== "" ? path.trim() : DEFAULT_SERVER_PATH;
  const list =
    Array.isArray(args) && args.every((a): a is string => typeof a === "string")
      ? [...args]
      : [...DEFAULT_SERVER_ARGS];
  return { command, args: list };
}

// ---------------------------------------------------------------- finding the server

/** What the extension host knows about where programs live (process.env, os.homedir(), ...). */
export interface SearchContext {
  env: Record<string, string | undefined>;
  home: string;
  /** The workspace folders' paths (the extension only runs in trusted workspaces). */
  folders: readonly string[];
  platform: string;
  /** Whether `path` is an executable file. */
  isExecutable: (path: string) => boolean;
}

function joinPath(platform: string, dir: string, ...parts: string[]): string {
  const sep = platform === "win32" ? "\\" : "/";
  return [dir.replace(/[\\/]+$/, ""), ...parts].join(sep);
}

/** "~/bin/agent-lsp" -> "<home>/bin/agent-lsp"; other paths unchanged. */
export function expandHome(path: string, home: string): string {
  if (home === "" || !(path === "~" || path.startsWith("~/") || path.startsWith("~\\"))) {
    return path;
  }
  return home.replace(/[\\/]+$/, "") + path.slice(1);
}

/**
 * Where a bare command name is looked for besides the extension host's PATH (which, when
 * VS Code starts from a desktop launcher or as code-server, often lacks the shell's
 * additions): where `pipx`, `uv tool` and the README's plain-venv install put commands, then
 * each workspace folder's `.venv`. A workspace never names the executable (agentLsp.server.path
 * is a user setting); its `.venv` only counts when nothing else is found, and only in a
 * trusted workspace (the extension does not run in others).
 */
export function extraDirectories(context: SearchContext): string[] {
  const { env, home, folders, platform } = context;
  const bin = platform === "win32" ? "Scripts" : "bin";
  const dirs: string[] = [];
  for (const dir of [env.PIPX_BIN_DIR, env.UV_TOOL_BIN_DIR, env.XDG_BIN_HOME]) {
    if (dir !== undefined && dir !== "") {
      dirs.push(expandHome(dir, home));
    }
  }
  if (home !== "") {
    dirs.push(joinPath(platform, home, ".local", "bin"));
    dirs.push(joinPath(platform, home, ".local", "share", "agent-lsp", bin));
  }
  for (const folder of folders) {
    dirs.push(joinPath(platform, folder, ".venv", bin));
  }
  return [...new Set(dirs)];
}

export type Resolved =
  { found: true; command: string } | { found: false; command: string; looked: string[] };

/**
 * The program to spawn for `agentLsp.server.path`: a bare name is searched for on PATH, then in
 * extraDirectories; a path (with `~` expanded) is used if it is executable.
 */
export function resolveServer(command: string, context: SearchContext): Resolved {
  const expanded = expandHome(command, context.home);
  if (/[\\/]/.test(expanded)) {
    return context.isExecutable(expanded)
      ? { found: true, command: expanded }
      : { found: false, command: expanded, looked: [] };
  }
  const windows = context.platform === "win32";
  const names =
    windows && !/\.[a-z]+$/i.test(expanded) ? [`${expanded}.exe`, expanded] : [expanded];
  const onPath = (context.env.PATH ?? context.env.Path ?? "")
    .split(windows ? ";" : ":")
    .filter((dir) => dir !== "");
  const looked = extraDirectories(context);
  for (const dir of [...onPath, ...looked]) {
    for (const name of names) {
      const candidate = joinPath(context.platform, dir, name);
      if (context.isExecutable(candidate)) {
        return { found: true, command: candidate };
      }
    }
  }
  return { found: false, command: expanded, looked };
}

/** The message for a server that is not there: what was tried, how to install, the setting. */
export function missingServerNotice(
  command: string,
  looked: readonly string[],
  home: string,
): Notice {
  const short = (dir: string): string =>
    home !== "" && dir.startsWith(home) ? `~${dir.slice(home.replace(/[\\/]+$/, "").length)}` : dir;
  const where =
    looked.length === 0
      ? "no such executable file"
      : `looked on PATH and in ${looked.map(short).join(", ")}`;
  return {
    level: "error",
    text:
      `agent-lsp: the server "${command}" was not found (${where}). ` +
      "Install it from a checkout of agent-lsp: " +
      `\`${INSTALL_COMMAND}\` (or \`${INSTALL_ALTERNATIVE}\`) in it, ` +
      "or set agentLsp.server.path to its full path in your User settings.",
  };
}

// ---------------------------------------------------------------- settings sent to the server

/** What `WorkspaceConfiguration.inspect(key)` reports (the fields used here). */
export interface Inspection {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** The value the user set, most specific scope first; undefined when only the default applies. */
export function explicitValue(inspection: Inspection | undefined): unknown {
  if (inspection === undefined) {
    return undefined;
  }
  for (const value of [
    inspection.workspaceFolderValue,
    inspection.workspaceValue,
    inspection.globalValue,
  ]) {
    if (value !== undefined) {
      return value;
    }
  }
  return undefined;
}

/**
 * The settings tree for the server (initializationOptions, workspace/didChangeConfiguration):
 * only the values the user set, nested by their dotted keys, without the extension's own keys.
 * VS Code's defaults are left out so that they do not override the user's and the project's
 * `config.toml` files, which rank below the editor's settings.
 *
 * `keys` are relative to the `agentLsp` section ("model.name"); `inspect` reads one of them.
 */
export function serverSettings(
  keys: readonly string[],
  inspect: (key: string) => Inspection | undefined,
): Record<string, unknown> {
  const tree: Record<string, unknown> = {};
  for (const key of keys) {
    const parts = key.split(".");
    if ((EXTENSION_ONLY as readonly string[]).includes(parts[0] ?? "")) {
      continue;
    }
    const value = explicitValue(inspect(key));
    if (value === undefined) {
      continue;
    }
    let node = tree;
    for (const part of parts.slice(0, -1)) {
      const child = node[part];
      if (typeof child !== "object" || child === null || Array.isArray(child)) {
        node[part] = {};
      }
      node = node[part] as Record<string, unknown>;
    }
    node[parts[parts.length - 1] ?? key] = value;
  }
  return tree;
}

/** The `agentLsp.*` keys contributed in package.json, relative to the section. */
export function settingKeys(contributed: Record<string, unknown> | undefined): string[] {
  const prefix = "agentLsp.";
  return Object.keys(contributed ?? {})
    .filter((key) => key.startsWith(prefix))
    .map((key) => key.slice(prefix.length));
}

// ---------------------------------------------------------------- executeCommand arguments

/** An LSP range, as the server reads it (0-based lines and characters). */
export interface LspRange {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/**
 * `agentLsp.runTask` arguments; with the active editor's `uri` and selection (or cursor) the
 * task sees where the user is.
 */
export function runTaskArguments(
  text: string | undefined,
  uri?: string,
  range?: LspRange,
): unknown[] | undefined {
  const task = (text ?? "").trim();
  if (task === "") {
    return undefined;
  }
  return uri === undefined
    ? [{ task }]
    : [{ task, uri, ...(range === undefined ? {} : { range }) }];
}

/**
 * The code action "Ask agent about the selection…" carries no instruction: the one typed in
 * the prompt joins its arguments (empty: the server's default); undefined when the prompt
 * was dismissed (nothing runs).
 */
export function askSelectionArguments(
  args: unknown[],
  typed: string | undefined,
): unknown[] | undefined {
  if (typed === undefined) {
    return undefined;
  }
  const given = (args[0] ?? {}) as Record<string, unknown>;
  const task = typed.trim();
  return [task === "" ? given : { ...given, task }];
}

/** The whole suite (a `uri` would make that file the test target). */
export function runTestsArguments(uri?: string): unknown[] {
  return [uri === undefined ? {} : { uri }];
}

/** Without a task id the server cancels whichever task runs. */
export function cancelArguments(taskId?: string): unknown[] {
  return [taskId === undefined ? {} : { taskId }];
}

export function rememberArguments(text: string | undefined): unknown[] | undefined {
  const note = (text ?? "").trim();
  return note === "" ? undefined : [{ note }];
}

/** `agentLsp.continue` arguments: the hint (required here: cancelling the box sends nothing). */
export function continueArguments(
  text: string | undefined,
  taskId?: string,
): unknown[] | undefined {
  if (text === undefined) {
    return undefined;
  }
  const hint = text.trim();
  return [taskId ? { taskId, hint } : { hint }];
}

/** `agentLsp.steer` arguments: a note for the running task. */
export function steerArguments(text: string | undefined): unknown[] | undefined {
  const note = (text ?? "").trim();
  return note === "" ? undefined : [{ note }];
}

/** `agentLsp.improve` arguments: the request (and the active file, for the question). */
export function improveArguments(text: string | undefined, uri?: string): unknown[] | undefined {
  const request = (text ?? "").trim();
  if (request === "") {
    return undefined;
  }
  return [uri ? { request, uri } : { request }];
}

/** `agentLsp.improveRevert` arguments: the improvement's id. */
export function improveRevertArguments(id: string | undefined): unknown[] | undefined {
  const ident = (id ?? "").trim();
  return ident === "" ? undefined : [{ id: ident }];
}

export interface ImprovementItem {
  id: string;
  label: string;
  description: string;
  reverted: boolean;
}

/** `agentLsp.improveList`'s answer as quick-pick items, newest first. */
export function improvementItems(result: unknown): ImprovementItem[] {
  const list = record(result).improvements;
  if (!Array.isArray(list)) {
    return [];
  }
  const items: ImprovementItem[] = [];
  for (const entry of list as unknown[]) {
    const fields = record(entry);
    if (typeof fields.id !== "string") {
      continue;
    }
    const summary = record(fields.patch).summary;
    const reverted = typeof fields.reverted === "string";
    items.push({
      id: fields.id,
      label: typeof summary === "string" ? summary : fields.id,
      description: `${fields.id} · ${reverted ? "reverted" : "applied"}`,
      reverted,
    });
  }
  return items.reverse();
}

/** Whether the server advertised `command` (initialize result, executeCommandProvider). */
export function serverSupports(
  advertised: readonly string[] | undefined,
  command: string,
): boolean {
  return (advertised ?? []).includes(command);
}

// ---------------------------------------------------------------- what to tell the user

export type Level = "info" | "warning" | "error";

export interface Notice {
  level: Level;
  text: string;
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/**
 * The message for a server command's result, or undefined when there is nothing to add.
 * A refusal (`{error}`) is shown by the server itself (window/showMessage), so not again here;
 * a task's outcome arrives later the same way ("agent-lsp: completed: ...").
 */
export function resultNotice(command: string, result: unknown): Notice | undefined {
  const fields = record(result);
  if (typeof fields.error === "string") {
    return undefined;
  }
  switch (command) {
    case SERVER.runTask:
    case SERVER.fix:
      return typeof fields.taskId === "string"
        ? {
            level: "info",
            text: `agent-lsp: task ${fields.taskId} started (${CATEGORY}: Cancel task stops it)`,
          }
        : undefined;
    case SERVER.runTests:
      if (fields.status === "already running") {
        return { level: "info", text: "agent-lsp: the tests are already running" };
      }
      return fields.status === "started"
        ? { level: "info", text: "agent-lsp: running the tests" }
        : undefined;
    case SERVER.cancel:
      return fields.cancelled === false
        ? { level: "info", text: "agent-lsp: no task to cancel" }
        : undefined;
    case SERVER.remember:
      return { level: "info", text: "agent-lsp: noted" };
    case SERVER.improve:
      return typeof fields.taskId === "string"
        ? {
            level: "info",
            text: `agent-lsp: improvement task ${fields.taskId} started (you review its patch)`,
          }
        : undefined;
    default:
      return undefined;
  }
}

export function unsupportedNotice(command: string): Notice {
  return {
    level: "warning",
    text: `agent-lsp: this server has no ${command} command (update agent-lsp)`,
  };
}

export type LogTarget =
  { kind: "uri"; uri: string } | { kind: "path"; path: string } | { kind: "channel" };

/** Where "Agent: Show log" goes: a log the server names, else the extension's output channel. */
export function logTarget(result: unknown): LogTarget {
  const fields = record(result);
  if (typeof fields.uri === "string" && fields.uri !== "") {
    return { kind: "uri", uri: fields.uri };
  }
  if (typeof fields.path === "string" && fields.path !== "") {
    return { kind: "path", path: fields.path };
  }
  return { kind: "channel" };
}

// ---------------------------------------------------------------- task status

const VERBS: Record<string, string> = {
  read_file: "reading",
  edit_file: "editing",
  write_file: "writing",
  list_files: "listing",
  search_text: "searching",
  find_symbol: "looking up",
  run_tests: "running tests",
  run_command: "running a command",
  git_status: "git status",
  git_diff: "git diff",
  get_diagnostics: "reading diagnostics",
  remember: "remembering",
  update_task: "taking notes",
};

/**
 * Progress report text -> status text: 'edit_file {"path": "calc.py", ...}' -> "editing calc.py".
 * Tool results ("edit_file: success ...") and "started: ..." keep the previous text (undefined).
 */
export function describe(message: string): string | undefined {
  const call = /^(\w+) (\{.*)/s.exec(message);
  if (call) {
    const tool = call[1] ?? "";
    const path = /"path":\s*"([^"]*)"/.exec(call[2] ?? "");
    return (VERBS[tool] ?? tool) + (path ? ` ${path[1]}` : "");
  }
  const head = /^(\w+): /.exec(message);
  if (head && (head[1] === "started" || (head[1] ?? "") in VERBS)) {
    return undefined;
  }
  return message === "" ? undefined : message;
}

export type ProgressToken = string | number;

/** The fields of WorkDoneProgressBegin / Report / End used here. */
export interface ProgressValue {
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
}

/** Whether a progress begin is one of agent-lsp's tasks (title "agent-lsp" or its token). */
export function isTaskProgress(token: ProgressToken, title: string | undefined): boolean {
  return title === PROGRESS_TITLE || String(token).startsWith(`${PROGRESS_TITLE}/`);
}

/** "agent-lsp/<task id>/<nonce>" -> the task id, for agentLsp.cancel; undefined otherwise. */
export function taskIdOf(token: ProgressToken): string | undefined {
  const parts = String(token).split("/");
  return parts.length === 3 && parts[0] === PROGRESS_TITLE && parts[1] !== ""
    ? parts[1]
    : undefined;
}

export type TaskState = { kind: "idle" } | { kind: "running"; text: string };

/**
 * idle -> running(text) -> idle, driven by the server's work-done progress. Only progress
 * titled "agent-lsp" (or with an "agent-lsp/..." token) counts; other servers' progress is
 * ignored. Several tokens may be open; the status is running while any is.
 */
export class TaskTracker {
  private readonly open = new Map<ProgressToken, string>();

  constructor(private readonly onChange: (state: TaskState) => void = () => undefined) {}

  get state(): TaskState {
    let text: string | undefined;
    for (const value of this.open.values()) {
      text = value; // the newest
    }
    return text === undefined ? { kind: "idle" } : { kind: "running", text };
  }

  progress(token: ProgressToken, value: ProgressValue): void {
    const before = this.state;
    if (value.kind === "begin") {
      if (isTaskProgress(token, value.title)) {
        this.open.set(token, value.message || value.title || "working");
      }
    } else if (!this.open.has(token)) {
      return;
    } else if (value.kind === "report") {
      const text = describe(value.message ?? "");
      if (text !== undefined) {
        this.open.set(token, text);
      }
    } else {
      this.open.delete(token);
    }
    this.notify(before);
  }

  /** The server stopped or restarted: nothing runs any more. */
  reset(): void {
    const before = this.state;
    this.open.clear();
    this.notify(before);
  }

  private notify(before: TaskState): void {
    const after = this.state;
    if (JSON.stringify(after) !== JSON.stringify(before)) {
      this.onChange(after);
    }
  }
}

export interface StatusView {
  text: string;
  tooltip: string;
  command: string;
}

const MAX_STATUS = 50;

/** The status-bar item for a state; clicking it cancels a running task or asks for a new one. */
export function statusView(state: TaskState): StatusView {
  if (state.kind === "idle") {
    return {
      text: "$(hubot) agent",
      tooltip: "agent-lsp: idle (click to run a task)",
      command: PALETTE.runTask,
    };
  }
  const oneLine = state.text.replace(/\s+/g, " ").trim();
  const text = oneLine.length > MAX_STATUS ? `${oneLine.slice(0, MAX_STATUS - 1)}…` : oneLine;
  return {
    text: `$(sync~spin) agent: ${text}`,
    tooltip: `agent-lsp: ${oneLine} (click to cancel)`,
    command: PALETTE.cancel,
  };
}
