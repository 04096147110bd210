"""Workspaces the user trusts. Until the user trusts a workspace once, its own
`.agent-lsp/config.toml` and `.agent-lsp/policy.toml` may only restrict: they cannot raise the
permission level, add allow rules, turn the sandbox off or point the model endpoint (which
receives the API key) elsewhere.

The list lives in the user's config folder (`~/.config/agent-lsp/trusted.toml`), keyed by the
workspace's resolved path; the agent cannot write it (it is outside every workspace, and hidden
inside the sandbox). Only the user adds to it: `agent-lsp trust` or the editor command."""

from __future__ import annotations

import os
import tomllib
from datetime import UTC, datetime
from pathlib import Path

from agent_lsp.errors import AgentLspError
from agent_lsp.fileio import atomic_write

__all__ = ["TRUST_FILE", "TrustStore"]

TRUST_FILE = Path("~/.config/agent-lsp/trusted.toml")


def _key(root: Path) -> str:
    return os.path.realpath(root.expanduser())


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class TrustStore:
    def __init__(self, path: Path | None = None) -> None:
        self.path = (path or TRUST_FILE).expanduser()

    def _load(self, *, to_change: bool = False) -> dict[str, str]:
        """resolved root -> when it was trusted; an unreadable file trusts nothing. Before a
        change (`to_change`) a file that is there but cannot be read as a trust list is an
        error: rewriting it would lose the user's other entries."""
        try:
            with self.path.open("rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            return {}
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            if to_change:
                raise self._unreadable(f"it is not valid TOML ({exc})") from None
            return {}
        except OSError:
            if to_change:
                raise
            return {}
        entries = data.get("workspace", [])
        out: dict[str, str] = {}
        if not isinstance(entries, list) and to_change:
            raise self._unreadable("its `workspace` is not a list of [[workspace]] tables")
        if isinstance(entries, list):
            for entry in entries:  # pyright: ignore[reportUnknownVariableType]
                if isinstance(entry, dict) and isinstance(entry.get("path"), str):
                    out[str(entry["path"])] = str(entry.get("trusted_at", ""))  # pyright: ignore[reportUnknownArgumentType]
        return out

    def _unreadable(self, why: str) -> AgentLspError:
        return AgentLspError(
            f"cannot change {self.path}: {why}; nothing was changed — fix the file or remove it"
        )

    def _save(self, entries: dict[str, str]) -> None:
        lines = ["# Workspaces whose own .agent-lsp config you trust (agent-lsp trust).\n"]
        for path, when in sorted(entries.items()):
            lines.append(f"\n[[workspace]]\npath = {_quote(path)}\ntrusted_at = {_quote(when)}\n")
        atomic_write(self.path, "".join(lines))

    def is_trusted(self, root: Path) -> bool:
        return _key(root) in self._load()

    def trust(self, root: Path) -> str:
        """Trust `root` (its resolved path); returns that path."""
        key = _key(root)
        entries = self._load(to_change=True)
        entries[key] = datetime.now(UTC).isoformat(timespec="seconds")
        self._save(entries)
        return key

    def untrust(self, root: Path) -> bool:
        key = _key(root)
        entries = self._load(to_change=True)
        if key not in entries:
            return False
        del entries[key]
        self._save(entries)
        return True

    def trusted(self) -> list[str]:
        return sorted(self._load())
