#!/usr/bin/env sh
# agent-lsp vs a bare pygls server vs GitHub Copilot's language server, and proxy-mode overhead;
# table on stdout, results in bench/results/lsp.json (see bench/README.md).
# Usage: bench/run.sh [lsp_bench.py options]   (e.g. --profile, --no-copilot; see --help)
set -eu
cd "$(dirname "$0")/.."
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
exec "$PY" bench/lsp_bench.py "$@"
