'use strict';
// agent-lsp's reporter for Node's own test runner (`node --test`): one JSON line per test, in
// the shape agent-lsp's jest reporter writes (a file and its one case: titles, status, failure
// messages with their stacks, the test's line), then `{"done": true}`. Suites (`describe`)
// give their tests their titles and are not counted themselves. A test file that fails as a
// whole (it cannot load) is a failed file, its message what the file wrote to stderr.
function text(value) {
  return typeof value === 'string' ? value : value == null ? '' : String(value);
}

function failure(error) {
  if (!error) return 'test failed';
  const cause = error.cause && typeof error.cause === 'object' ? error.cause : error;
  const stack = text(cause.stack || cause.message || cause);
  return stack || text(error.message) || 'test failed';
}

// The name pattern of a targeted run (written in by the adapter): the tests it left out, which
// node reports as skipped, are not counted.
const PATTERN_SOURCE = null;
const PATTERN = PATTERN_SOURCE ? new RegExp(PATTERN_SOURCE) : null;

module.exports = async function* agentLspReporter(source) {
  const titles = [];
  const stderr = new Map();
  for await (const event of source) {
    const data = event.data || {};
    const nesting = Number.isInteger(data.nesting) ? data.nesting : 0;
    if (event.type === 'test:stderr' && data.file) {
      const said = (stderr.get(data.file) || '') + text(data.message);
      stderr.set(data.file, said.slice(-20000));
      continue;
    }
    if (event.type === 'test:start') {
      titles.length = nesting;
      titles[nesting] = text(data.name);
      continue;
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const details = data.details || {};
    if (details.type === 'suite' && event.type === 'test:pass') continue;
    let status = event.type === 'test:pass' ? 'passed' : 'failed';
    if (data.skip !== undefined && data.skip !== false) status = 'skipped';
    if (data.todo !== undefined && data.todo !== false) status = 'todo';
    if (status === 'skipped' && PATTERN && !PATTERN.test(text(data.name))) continue;
    const suiteOnly = details.type === 'suite' && details.error && details.error.failureType === 'subtestsFailed';
    if (suiteOnly) continue; // a suite fails because a test of it did: that test is counted
    if (status === 'failed' && nesting === 0 && data.file && text(data.name) === text(data.file)) {
      const message = stderr.get(data.file) || failure(details.error);
      yield JSON.stringify({ name: text(data.file), status, message, assertionResults: [] }) + '\n';
      continue;
    }
    const line = Number.isInteger(data.line) ? { line: data.line } : null;
    const record = {
      name: text(data.file),
      status,
      message: '',
      assertionResults: [
        {
          ancestorTitles: titles.slice(0, nesting),
          title: text(data.name),
          status,
          failureMessages: status === 'failed' ? [failure(details.error)] : [],
          location: line,
        },
      ],
    };
    yield JSON.stringify(record) + '\n';
  }
  yield JSON.stringify({ done: true }) + '\n';
};
