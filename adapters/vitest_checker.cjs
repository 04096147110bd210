#!/usr/bin/env node
'use strict';
// vitest's type checker, run through agent-lsp: vitest asks tsc to keep its incremental build
// info in vitest's own dist folder (`--tsBuildInfoFile <vitest>/dist/tsconfig.tmp.tsbuildinfo`),
// which is the user's read-only node_modules when the tests run in the sandboxed shadow copy
// (tsc then fails the run with EROFS). This runs the project's tsc with that file moved to a
// writable scratch folder (SCRATCH, set when agent-lsp writes this file) and nothing else changed.
const { spawn } = require('child_process');
const path = require('path');

const SCRATCH = null; // replaced by the folder
const args = process.argv.slice(2);
const at = args.indexOf('--tsBuildInfoFile');
if (at >= 0 && at + 1 < args.length && SCRATCH) {
  args[at + 1] = path.join(SCRATCH, path.basename(args[at + 1]));
}
let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc', { paths: [process.cwd()] });
} catch (err) {
  console.error('agent-lsp: cannot find typescript from ' + process.cwd() + ': ' + err.message);
  process.exit(2);
}
const child = spawn(process.execPath, [tsc, ...args], { stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(signal ? 1 : code == null ? 1 : code));
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => child.kill(sig));
