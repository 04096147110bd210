'use strict';
// agent-lsp's jest reporter: one JSON line per test file, written as soon as the file has
// finished, holding only strings and numbers. jest's own --json serialises raw error objects
// (a failing assertion on a circular value makes it throw), and a run that is killed midway
// still leaves the files that finished. A file whose results jest's worker pool could not send
// back (jest-worker serialises them as JSON: a circular value in a failing assertion throws) is
// written as `{"retry": path}`: jest_run.cjs runs those files again in band.
const fs = require('fs');

const UNSENDABLE = /Converting circular structure to JSON|could not be cloned/;

function text(value) {
  return typeof value === 'string' ? value : value == null ? '' : String(value);
}

function caseRecord(c) {
  const location = c.location && Number.isInteger(c.location.line) ? { line: c.location.line } : null;
  return {
    ancestorTitles: (c.ancestorTitles || []).map(text),
    title: text(c.title),
    status: text(c.status),
    failureMessages: (c.failureMessages || []).map(text),
    location,
  };
}

function fileRecord(path, result) {
  const failed = Boolean(result.testExecError) || result.numFailingTests > 0;
  return {
    name: text(path || result.testFilePath),
    status: failed ? 'failed' : 'passed',
    message: text(result.failureMessage || (result.testExecError && result.testExecError.message)),
    assertionResults: (result.testResults || []).map(caseRecord),
  };
}

class AgentLspReporter {
  constructor(globalConfig, options) {
    this._file = options && options.outputFile;
    if (this._file && !options.append) fs.writeFileSync(this._file, '');
  }

  _write(record) {
    if (this._file) fs.appendFileSync(this._file, JSON.stringify(record) + '\n');
  }

  onTestResult(test, result) {
    const error = result.testExecError;
    const lost = error && result.numPassingTests + result.numFailingTests === 0;
    if (lost && UNSENDABLE.test(text(error.message)) && test && test.path) {
      this._write({ retry: test.path });
      return;
    }
    this._write(fileRecord(test && test.path, result));
  }

  onRunComplete(contexts, results) {
    this._write({ done: true, success: Boolean(results && results.success) });
  }
}

module.exports = AgentLspReporter;
