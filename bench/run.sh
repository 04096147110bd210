#!/usr/bin/env sh
# Benchmark agent-lsp against a bare pygls server; results in bench/results/lsp.json.
# Usage: bench/run.sh [lsp_bench.py options]   (see: bench/run.sh --help)
set -eu
cd "$(dirname "$0")/.."
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
exec "$PY" bench/lsp_bench.py "$@"
