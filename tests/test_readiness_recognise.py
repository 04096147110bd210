"""Which commands `run_command` runs as a readiness check, and the ports it waits for: read
from the command line, package.json scripts and Go sources (nothing is run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_lsp.tools.readiness import parse_ready, recognise

SERVERS = [
    ("python -m http.server", (8000,)),
    ("python3 -m http.server 9000 --bind 127.0.0.1", (9000,)),
    ("vite", (5173,)),
    ("npx vite --port 4000", (4000,)),
    ("vite preview", (4173,)),
    ("next dev -p 3001", (3001,)),
    ("flask run", (5000,)),
    ("flask --app hello run --port=5001", (5001,)),
    ("uvicorn app.main:app --reload", (8000,)),
    ("python -m uvicorn app:app --port 8080", (8080,)),
    ("gunicorn -b 0.0.0.0:9090 app:app", (9090,)),
    ("python manage.py runserver", (8000,)),
    ("python manage.py runserver 0.0.0.0:8001", (8001,)),
    ("poetry run uvicorn app:app", (8000,)),
    ("webpack serve", (8080,)),
    ("PORT=4321 node_modules/.bin/vite", (4321, 5173)),
    ("cd web && vite", (5173,)),
    ("tsc --watch", ()),
    ("npx jest --watch", ()),
    ("vitest watch", ()),
    ("nodemon server.js", ()),
    ("node --watch server.js", ()),
]

FINITE = [
    "pytest -q",
    "vite build",
    "npx tsc --noEmit",
    "vitest run",
    "vitest",  # runs once outside a terminal
    "flask routes",
    "python manage.py migrate",
    "npm test",
    "npm install",
    "go run ./cmd/tool",
    "python app.py",
    "echo 'unclosed",
    "next build",
    "uvicorn --version",
]


@pytest.mark.parametrize(("command", "ports"), SERVERS)
def test_servers_and_watchers_are_recognised(
    tmp_path: Path, command: str, ports: tuple[int, ...]
) -> None:
    found = recognise(command, tmp_path, {})
    assert found is not None, command
    assert found.ports == ports


@pytest.mark.parametrize("command", FINITE)
def test_commands_that_finish_are_not(tmp_path: Path, command: str) -> None:
    (tmp_path / "cmd/tool").mkdir(parents=True)
    (tmp_path / "cmd/tool/main.go").write_text('package main\n\nfunc main() { println("x") }\n')
    assert recognise(command, tmp_path, {}) is None


def test_package_scripts_are_resolved_to_what_they_run(tmp_path: Path) -> None:
    scripts = {
        "dev": "vite --port 5174",
        "start": "node server.js",
        "serve": "PORT=8081 node server.js",
        "build": "vite build",
        "watch:css": "tailwindcss -i in.css -o out.css --watch",
        "api": "uvicorn api:app",
    }
    (tmp_path / "package.json").write_text(json.dumps({"scripts": scripts}))
    found = {c: recognise(c, tmp_path, {}) for c in ["npm run dev", "pnpm dev", "yarn start"]}
    assert {c: (r.reason, r.ports) for c, r in found.items() if r} == {
        "npm run dev": ("npm script dev: vite --port 5174", (5174,)),
        "pnpm dev": ("pnpm script dev: vite --port 5174", (5174,)),
        "yarn start": ("yarn script start: node server.js", ()),
    }
    serve = recognise("npm run serve", tmp_path, {})
    assert serve is not None and serve.ports == (8081,)
    assert recognise("npm run dev -- --port 6000", tmp_path, {}).ports == (6000,)  # type: ignore[union-attr]
    assert recognise("npm run api", tmp_path, {}).ports == (8000,)  # type: ignore[union-attr]
    assert recognise("npm run watch:css", tmp_path, {}) is not None
    assert recognise("npm run build", tmp_path, {}) is None
    assert recognise("npm start", tmp_path, {"PORT": "7000"}).ports == (7000,)  # type: ignore[union-attr]


def test_go_run_of_a_main_package_that_listens(tmp_path: Path) -> None:
    server = 'package main\n\nimport "net/http"\n\nfunc main() {\n'
    server += '\thttp.ListenAndServe(":8090", nil)\n}\n'
    (tmp_path / "main.go").write_text(server)
    found = recognise("go run .", tmp_path, {})
    assert found is not None and found.ports == (8090,)
    assert recognise("go run main.go", tmp_path, {}) is not None
    assert recognise("go test ./...", tmp_path, {}) is None


def test_the_ready_argument() -> None:
    assert parse_ready(" 5173 ") == ((5173,), None)
    assert parse_ready(r"listening on \d+") == ((), "listening on [0-9]+")
    assert parse_ready("+5173") == ((5173,), None)
    for bad in ["0", "70000", "(["]:
        with pytest.raises(ValueError, match="ready: "):
            parse_ready(bad)
    # A negative number is not a port: it was waited for as a line of output holding "-1".
    for negative in ["-1", " -8000 "]:
        with pytest.raises(ValueError, match=r"ready: -\d+ is not a port number \(1-65535\)"):
            parse_ready(negative)
