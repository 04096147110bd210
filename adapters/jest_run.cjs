'use strict';
// Runs jest through runCLI: process.argv is reset to a bare `jest` first (when jest runs tests
// in this process, tests reading process.argv would see our flags), the project's own
// `scripts.test` options are parsed by jest's own CLI parser, and agent-lsp's reporter writes
// the results. Usage: node jest_run.cjs spec.json
const fs = require('fs');
const os = require('os');
const path = require('path');

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
process.argv = [process.argv[0], spec.bin];
// the variables a wrapper script (kcd-scripts test) set before it called jest (jest's workers
// inherit them)
Object.assign(process.env, spec.env || {});

function load(name, paths) {
  return require(require.resolve(name, { paths }));
}

function fail(message) {
  console.error('agent-lsp: ' + message);
  process.exit(3);
}

// The worker count jest picks is one less than the CPUs (one at the least): on 2 CPUs that
// runs every file in this process. agent-lsp waits for the run, so it uses them all (2 at
// the least), unless the project chose (config, script) or jest runs a single file anyway.
async function chooseWorkers(argv, jestDir) {
  if (argv.runInBand || argv.maxWorkers != null || argv.detectOpenHandles || spec.oneFile) return;
  try {
    const config = load('jest-config', [jestDir, path.join(jestDir, 'node_modules', 'jest-cli')]);
    const initial = await config.readInitialOptions(argv.config, { cwd: spec.cwd });
    if (initial.config.maxWorkers != null) return;
  } catch {
    return; // jest reports a broken config itself
  }
  const cpus = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  if (cpus >= 2) argv.maxWorkers = Math.max(cpus - 1, 2);
}

// The files the reporter marked `{"retry": path}`.
function lostFiles() {
  let lines = [];
  try {
    lines = fs.readFileSync(spec.outputFile, 'utf8').split('\n');
  } catch {
    return [];
  }
  const files = [];
  for (const line of lines) {
    try {
      const record = JSON.parse(line);
      if (record && typeof record.retry === 'string') files.push(record.retry);
    } catch {
      // a line cut short
    }
  }
  return files;
}

async function main() {
  let jestPath;
  try {
    jestPath = require.resolve('jest', { paths: spec.paths });
  } catch (err) {
    fail('cannot load jest from ' + spec.paths.join(', ') + ': ' + err.message);
  }
  const jest = require(jestPath);
  const jestDir = path.dirname(path.dirname(jestPath));
  const runCLI = jest.runCLI || (jest.default && jest.default.runCLI);
  if (typeof runCLI !== 'function') fail('this jest has no runCLI');
  let argv = { _: [], $0: 'jest' };
  if (spec.args.length > 0) {
    const cliPaths = [jestDir, path.dirname(jestPath)];
    let { buildArgv } = load('jest-cli', cliPaths);
    if (typeof buildArgv !== 'function') {
      // jest 29 keeps it in build/run.js, which its package exports do not name
      const entry = require.resolve('jest-cli', { paths: cliPaths });
      buildArgv = require(path.join(path.dirname(entry), 'run.js')).buildArgv;
    }
    argv = await buildArgv(spec.args);
  }
  if (spec.files.length > 0 || spec.argv.runTestsByPath) argv._ = spec.files;
  Object.assign(argv, spec.argv);
  argv.reporters = ['default', [spec.reporter, { outputFile: spec.outputFile }]];
  await chooseWorkers(argv, jestDir);
  const { results } = await runCLI(argv, [spec.cwd]);
  let success = Boolean(results && results.success);
  const retry = lostFiles();
  if (retry.length > 0) {
    // jest's workers could not send these files' results back (a circular value): run them
    // again in this process, where nothing is serialised, as jest itself does on few CPUs.
    const again = { ...argv, _: retry, runTestsByPath: true, runInBand: true };
    delete again.maxWorkers;
    again.reporters = ['default', [spec.reporter, { outputFile: spec.outputFile, append: true }]];
    const second = await runCLI(again, [spec.cwd]);
    success = retry.length === results.numFailedTestSuites && Boolean(second.results && second.results.success);
  }
  process.exitCode = success ? 0 : 1;
  // Like --forceExit, but only after a grace period: open handles must not hang the agent.
  setTimeout(() => process.exit(process.exitCode), 1500).unref();
}

main().catch((err) => {
  console.error((err && err.stack) || String(err));
  process.exit(2);
});
