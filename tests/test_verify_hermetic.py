"""Hermetic verification: what one test run wrote or changed in the shadow copy is gone before
the next run (real pytest in a temp project, through the verifier)."""

from __future__ import annotations

from pathlib import Path

from adapters import PytestRunner, default_shell
from agent_lsp.loop.verify import Verifier
from agent_lsp.project.workspace import Workspace
from tests.fakes.channel import RecordingChannel

TEST = """\
from pathlib import Path

HERE = Path(__file__).parent


def test_fixture_is_pristine_and_nothing_stray() -> None:
    fixture = HERE / "data.txt"
    assert fixture.read_text() == "original\\n"
    assert not (HERE / "stray.tmp").exists()
    assert not (HERE / "out").exists()
    fixture.write_text("changed by the test\\n")
    (HERE / "stray.tmp").write_text("left behind")
    (HERE / "out").mkdir()
    (HERE / "out" / "result.json").write_text("{}")
"""


async def test_a_run_cannot_see_the_previous_runs_files(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_state.py").write_text(TEST)
    (root / "tests" / "data.txt").write_text("original\n")
    verifier = Verifier(root, PytestRunner(), default_shell(), 120, shadow_dir=tmp_path / "sh")
    workspace = Workspace(root, RecordingChannel())
    try:
        first = await verifier.run(workspace)
        second = await verifier.run(workspace)
    finally:
        verifier.close()
    assert (first.passed, first.failed) == (1, 0), first.output
    assert (second.passed, second.failed) == (1, 0), second.output
    assert (root / "tests" / "data.txt").read_text() == "original\n"  # the user's file
    assert sorted(p.name for p in (root / "tests").iterdir()) == ["data.txt", "test_state.py"]
