'use strict';
// Loaded with NODE_OPTIONS=--require into a wrapper script that runs jest (`kcd-scripts test`,
// `react-scripts test`) and every node process it starts: when jest's `run` is called, what
// the wrapper passes it (its own --config, its options) and the variables it set since the
// first process started are written to `target` (set by agent-lsp on the line below), and the
// process ends without running a test. agent-lsp then runs jest itself with those options
// and variables, its reporter added.
const target = null;
const fs = require('fs');
const Module = require('module');
const path = require('path');

const ENTRY = /[\\/]node_modules[\\/](jest|jest-cli)[\\/]build[\\/]index\.js$/;

if (target) {
  const startFile = target + '.start';
  if (!fs.existsSync(startFile)) fs.writeFileSync(startFile, JSON.stringify(process.env));
  const load = Module._load;
  Module._load = function agentLspLoad(request, parent, isMain) {
    const loaded = load.apply(this, arguments);
    if (!loaded || typeof loaded.run !== 'function') return loaded;
    let file;
    try {
      file = Module._resolveFilename(request, parent, isMain);
    } catch {
      return loaded;
    }
    if (!ENTRY.test(file)) return loaded;
    const run = function capturedRun(argv) {
      const args = Array.isArray(argv) ? argv.map(String) : process.argv.slice(2);
      const start = JSON.parse(fs.readFileSync(startFile, 'utf8'));
      const env = {};
      for (const [name, value] of Object.entries(process.env)) {
        if (name !== 'NODE_OPTIONS' && start[name] !== value) env[name] = value;
      }
      const record = { args, env, cwd: process.cwd(), jest: path.dirname(path.dirname(file)) };
      fs.writeFileSync(target, JSON.stringify(record));
      process.exit(0);
    };
    // jest's exports are getters that cannot be redefined: a child object shadows `run`
    return Object.create(loaded, { run: { value: run, enumerable: true } });
  };
}
