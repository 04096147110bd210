"""The tests run against the bytes on disk even when a rewrite kept the file's size and mtime
(real pytest in a temp project, through the verifier and its change-fed shadow copy)."""

from __future__ import annotations

import os
from pathlib import Path

from adapters import PytestRunner, default_shell
from agent_lsp.loop.verify import Verifier
from agent_lsp.project.workspace import Workspace
from tests.fakes.channel import RecordingChannel

CALC = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add() -> None:\n    assert add(2, 3) == 5\n"


async def test_an_in_place_rewrite_with_an_old_mtime_reaches_the_tests(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(TEST)
    verifier = Verifier(root, PytestRunner(), default_shell(), 120, shadow_dir=tmp_path / "sh")
    workspace = Workspace(root, RecordingChannel())
    try:
        first = await verifier.run(workspace)
        before = (root / "calc.py").stat()
        with (root / "calc.py").open("r+b") as handle:  # same size, then the old mtime back
            handle.write(CALC.replace("a + b", "a - b").encode())
        os.utime(root / "calc.py", ns=(before.st_atime_ns, before.st_mtime_ns))
        second = await verifier.run(workspace)
    finally:
        verifier.close()
    assert (first.passed, first.failed) == (1, 0), first.output
    assert (second.passed, second.failed) == (0, 1), second.output
