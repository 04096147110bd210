"""Records the harness keeps under `.agent-lsp/`, written and read as agent-lsp does: signed
with this user's key (`agent_lsp.signing`, the key under the suite's XDG_CACHE_HOME, which the
CLI subprocesses share), so a test that hand-writes one writes what the user's own agent-lsp
would have written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_lsp.signing import seal, unseal


def write_signed(path: Path, kind: str, record: dict[str, Any] | str) -> Path:
    """`record` (JSON, or a text as it is) as agent-lsp writes a record of `kind`."""
    text = record if isinstance(record, str) else json.dumps(record, indent=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(seal(kind, text.encode("utf-8")))
    return path


def read_signed(path: Path, kind: str) -> Any:
    """The JSON of a record agent-lsp wrote (it must carry this user's signature)."""
    return json.loads(unseal(kind, path.read_bytes()).decode("utf-8"))
