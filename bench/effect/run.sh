#!/usr/bin/env sh
# The effectiveness benchmark: agent-lsp and peer harnesses, side by side on the same real model
# and the same tasks, judged from outside (see bench/effect.md).
# Usage: bench/effect/run.sh [--tasks a,b] [--harness h1,h2] [--repeat N] [--timeout S]
#        bench/effect/run.sh --check-tasks      # the tasks alone: each fails, its fix passes
set -eu
cd "$(dirname "$0")/../.."
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
exec "$PY" -m bench.effect.run "$@"
