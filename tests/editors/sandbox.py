"""The environment a headless editor under test runs in: this checkout's server, and nothing
written to the real home (state, caches, logs and temporary files all go under `tmp_path`)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def editor_env(server_env: dict[str, str], tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(server_env, **extra)
    # The server under test is this checkout, whatever the cwd (the editor runs in the project).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    xdg = tmp_path / "xdg"
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(xdg / "config"),
        XDG_DATA_HOME=str(xdg / "data"),
        XDG_STATE_HOME=str(xdg / "state"),
        XDG_CACHE_HOME=str(xdg / "cache"),
        XDG_RUNTIME_DIR=str(xdg / "runtime"),
        TMPDIR=str(tmp_path / "tmp"),
    )
    for directory in (tmp_path / "home", xdg / "runtime", tmp_path / "tmp"):
        directory.mkdir(parents=True, exist_ok=True)
    return env
