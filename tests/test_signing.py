"""Signed records (`agent_lsp.signing`): only this user's key, for this kind of record and
these exact bytes, verifies; without a usable key a process reads back only its own records."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_lsp.signing import Unsigned, seal, unseal


def test_a_record_verifies_only_as_written_by_this_key() -> None:
    mine, theirs = os.urandom(32), os.urandom(32)
    record = seal("improvement", b'{"id": "x"}', mine)
    assert unseal("improvement", record, mine) == b'{"id": "x"}'
    for kind, data, key, why in (
        ("checkpoint", record, mine, "not this user's"),  # another kind of record
        ("improvement", record.replace(b'"x"', b'"y"'), mine, "not this user's"),  # edited
        ("improvement", seal("improvement", b'{"id": "x"}', theirs), mine, "not this user's"),
        ("improvement", b'{"id": "x"}', mine, "not signed by agent-lsp"),  # plain JSON
    ):
        with pytest.raises(Unsigned, match=why):
            unseal(kind, data, key)


def test_without_a_usable_key_a_process_reads_back_only_its_own_records(tmp_path: Path) -> None:
    env = os.environ | {"XDG_CACHE_HOME": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    (tmp_path / "cache").write_text("a file where the key's folder would be")
    script = (
        "import sys; from agent_lsp import signing as s\n"
        "assert s.user_key() is None\n"
        "mine = s.seal('team', b'state')\n"
        "assert s.unseal('team', mine) == b'state'\n"
        "sys.stdout.buffer.write(mine)\n"
    )
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, check=True)
    later = (
        "import sys; from agent_lsp import signing as s\n"
        "try:\n    s.unseal('team', sys.stdin.buffer.read())\nexcept s.Unsigned as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", later], env=env, input=first.stdout, capture_output=True, check=True
    )
    assert done.stdout.decode().startswith("no usable user key (")
