"use strict";
// A small stand-in for the `vscode` API, enough for vscode-languageclient and this extension to
// run in plain Node against a real agent-lsp server. What it does not model is a callable proxy
// that returns more of itself, so unused editor features (hover, folding, ...) are no-ops.
// Everything the user would see (status bar, messages, input boxes, context keys) is recorded.

const path = require("node:path");

const record = {
  status: [],
  messages: [],
  contexts: [],
  output: [],
  inputs: [],
  opened: [],
  progress: [],
};

function auto(name) {
  const fn = function () {
    return auto(`${name}()`);
  };
  return new Proxy(fn, {
    get(target, prop) {
      if (prop === "then") return undefined; // not a thenable
      if (prop === "dispose") return () => undefined;
      if (prop === Symbol.toPrimitive) return () => name;
      if (!(prop in target)) target[prop] = auto(`${name}.${String(prop)}`);
      return target[prop];
    },
    construct() {
      return auto(`new ${name}`);
    },
  });
}

/** Missing members: events are real emitters' events, anything else an auto proxy. */
function withFallback(name, members) {
  return new Proxy(members, {
    get(target, prop) {
      if (!(prop in target)) {
        target[prop] = String(prop).startsWith("on")
          ? new EventEmitter().event
          : auto(`${name}.${String(prop)}`);
      }
      return target[prop];
    },
  });
}

class Disposable {
  constructor(onDispose) {
    this.onDispose = onDispose;
  }
  dispose() {
    if (this.onDispose) this.onDispose();
    this.onDispose = undefined;
  }
  static from(...items) {
    return new Disposable(() => items.forEach((item) => item && item.dispose && item.dispose()));
  }
}

class EventEmitter {
  constructor() {
    this.listeners = [];
    this.event = (listener) => {
      this.listeners.push(listener);
      return new Disposable(() => {
        this.listeners = this.listeners.filter((l) => l !== listener);
      });
    };
  }
  fire(value) {
    for (const listener of [...this.listeners]) listener(value);
  }
  dispose() {
    this.listeners = [];
  }
}

class Uri {
  constructor(scheme, fsPath) {
    this.scheme = scheme;
    this.authority = "";
    this.path = fsPath;
    this.fsPath = fsPath;
    this.query = "";
    this.fragment = "";
  }
  static file(p) {
    return new Uri("file", path.resolve(p));
  }
  static parse(text) {
    return text.startsWith("file://")
      ? new Uri("file", decodeURIComponent(text.slice("file://".length)))
      : new Uri(text.split(":")[0], text);
  }
  with() {
    return this;
  }
  toString() {
    return this.scheme === "file" ? `file://${this.path}` : this.path;
  }
  toJSON() {
    return this.toString();
  }
}

class CancellationTokenSource {
  constructor() {
    this.token = {
      isCancellationRequested: false,
      onCancellationRequested: new EventEmitter().event,
    };
  }
  cancel() {
    this.token.isCancellationRequested = true;
  }
  dispose() {}
}

class CancellationError extends Error {}

/** User settings: full key -> {globalValue?, workspaceValue?, workspaceFolderValue?}. */
const settings = {};
const configChanged = new EventEmitter();

function getConfiguration(section) {
  const full = (key) => (section ? `${section}.${key}` : key);
  return {
    get(key, fallback) {
      const found = settings[full(key)];
      const value =
        found && (found.workspaceFolderValue ?? found.workspaceValue ?? found.globalValue);
      return value === undefined ? fallback : value;
    },
    inspect(key) {
      return { key: full(key), ...(settings[full(key)] || {}) };
    },
    has(key) {
      return full(key) in settings;
    },
    update() {
      return Promise.resolve();
    },
  };
}

/** Set a user setting and tell the listeners, as the Settings editor does. */
function setSetting(key, value) {
  settings[key] = { globalValue: value };
  configChanged.fire({
    affectsConfiguration: (section) => key === section || key.startsWith(`${section}.`),
  });
}

const commands = new Map();
const input = { next: [] };

function message(level) {
  return (text, ...items) => {
    record.messages.push({ level, text, items: items.filter((i) => typeof i === "string") });
    return Promise.resolve(undefined);
  };
}

function createStatusBarItem() {
  const item = { show() {}, hide() {}, dispose() {} };
  return new Proxy(item, {
    set(target, prop, value) {
      target[prop] = value;
      if (prop === "text") record.status.push(value);
      return true;
    },
  });
}

function createOutputChannel(name) {
  return {
    name,
    append: (text) => record.output.push(text),
    appendLine: (text) => record.output.push(`${text}\n`),
    show: () => record.messages.push({ level: "shown", text: `output: ${name}` }),
    replace() {},
    clear() {},
    hide() {},
    dispose() {},
  };
}

function vscodeFor(folder) {
  return withFallback("vscode", {
    version: "1.82.0",
    Disposable,
    EventEmitter,
    Uri,
    CancellationTokenSource,
    CancellationError,
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    StatusBarAlignment: { Left: 1, Right: 2 },
    workspace: withFallback("workspace", {
      getConfiguration,
      onDidChangeConfiguration: configChanged.event,
      workspaceFolders: [{ uri: Uri.file(folder), name: path.basename(folder), index: 0 }],
      // The server's edits (workspace/applyEdit) are taken; the test reads them from the trace.
      applyEdit: () => Promise.resolve(true),
      textDocuments: [],
    }),
    window: withFallback("window", {
      createOutputChannel,
      createStatusBarItem,
      showInformationMessage: message("info"),
      showWarningMessage: message("warning"),
      showErrorMessage: message("error"),
      showInputBox: (options) => {
        record.inputs.push(options.title);
        return Promise.resolve(input.next.shift());
      },
      showTextDocument: (uri) => {
        record.opened.push(String(uri));
        return Promise.resolve(undefined);
      },
      // A progress display: where it shows, whether it has Cancel, and every report.
      withProgress: (options, task) => {
        record.progress.push({
          location: options.location,
          title: options.title,
          cancellable: Boolean(options.cancellable),
        });
        return task(
          {
            report: (value) =>
              record.messages.push({ level: "progress", text: value.message || "" }),
          },
          new CancellationTokenSource().token,
        );
      },
      activeTextEditor: undefined,
    }),
    commands: {
      registerCommand: (id, fn) => {
        commands.set(id, fn);
        return new Disposable(() => commands.delete(id));
      },
      executeCommand: async (id, ...args) => {
        if (id === "setContext") {
          record.contexts.push(args);
          return undefined;
        }
        const fn = commands.get(id);
        return fn && fn(...args);
      },
      getCommands: async () => [...commands.keys()],
    },
    languages: withFallback("languages", { match: () => 10 }),
    env: {
      appName: "fake-vscode",
      language: "en",
      machineId: "m",
      sessionId: "s",
      openExternal: async () => true,
    },
  });
}

module.exports = { vscodeFor, record, commands, input, settings, setSetting };
