"""edit_file / read_file against a real temp project and the in-memory editor."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_lsp.messages import ToolStatus
from agent_lsp.tools.files import EditFileArgs, EditFileTool, ReadFileArgs, ReadFileTool
from agent_lsp.workspace import Workspace
from tests.fakes.channel import RecordingChannel

SOURCE = "def f(x):\n    return x + 1\n\n\ndef g(x):\n    return x + 1\n"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "m.py").write_text(SOURCE)
    return Workspace(tmp_path, RecordingChannel())


async def edit(ws: Workspace, old: str, new: str, path: str = "m.py"):
    return await EditFileTool(ws).run(EditFileArgs(path=path, old_text=old, new_text=new))


async def test_exact_unique_edit_and_idempotence(ws: Workspace) -> None:
    old = "def g(x):\n    return x + 1"
    new = "def g(x):\n    return x + 2"
    first = await edit(ws, old, new)
    assert first.status is ToolStatus.SUCCESS and first.output == "edited m.py at line 5"
    assert (ws.root / "m.py").read_text() == SOURCE.replace("x + 1\n", "x + 2\n").replace(
        "def f(x):\n    return x + 2", "def f(x):\n    return x + 1"
    )
    again = await edit(ws, old, new)
    assert again.status is ToolStatus.SUCCESS
    assert again.output == "no change: the edit is already applied"
    assert ws.edit_count == 1


async def test_ambiguous_edit_is_an_error_with_lines(ws: Workspace) -> None:
    result = await edit(ws, "    return x + 1", "    return x")
    assert result.status is ToolStatus.ERROR
    assert result.error == (
        "old_text occurs 2 times in m.py (lines 2, 6); include more surrounding lines so it "
        "is unique"
    )
    assert (ws.root / "m.py").read_text() == SOURCE


async def test_missing_text_points_at_the_closest_lines(ws: Workspace) -> None:
    result = await edit(ws, "def g(y):\n    return y + 1", "def g(y):\n    return y")
    assert result.status is ToolStatus.ERROR
    assert result.error is not None and "old_text not found in m.py" in result.error
    assert "5| def g(x):\n6|     return x + 1" in result.error


async def test_edit_that_breaks_syntax_is_refused(ws: Workspace) -> None:
    result = await edit(ws, "def g(x):", "def g(x:")
    assert result.status is ToolStatus.ERROR
    assert result.error is not None and result.error.startswith("edit rejected, it would break")
    assert (ws.root / "m.py").read_text() == SOURCE


async def test_file_changed_since_read_is_refused(ws: Workspace) -> None:
    read = await ReadFileTool(ws).run(ReadFileArgs(path="m.py", start_line=5, end_line=6))
    assert read.output == "5| def g(x):\n6|     return x + 1"
    (ws.root / "m.py").write_text(SOURCE + "\nX = 1\n")  # the user changed it meanwhile
    result = await edit(ws, "def g(x):", "def h(x):")
    assert result.status is ToolStatus.ERROR
    assert result.error is not None and "changed since you last read it" in result.error
    retry = await edit(ws, "def g(x):", "def h(x):")  # after the refusal the new text is known
    assert retry.status is ToolStatus.SUCCESS


async def test_paths_outside_the_workspace_are_refused(ws: Workspace, tmp_path: Path) -> None:
    from agent_lsp.errors import WorkspaceError

    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve("../x.py")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve("/etc/passwd")
    (tmp_path / "link").symlink_to("/etc")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve("link/passwd")


async def test_open_buffer_is_the_truth(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    unsaved = SOURCE + "\n\ndef unsaved():\n    pass\n"
    channel = RecordingChannel({tmp_path / "m.py": unsaved})
    ws = Workspace(tmp_path, channel)
    read = await ReadFileTool(ws).run(ReadFileArgs(path="m.py", start_line=9))
    assert read.output == " 9| def unsaved():\n10|     pass"
    result = await edit(ws, "def unsaved():\n    pass", "def unsaved():\n    return 1")
    assert result.status is ToolStatus.SUCCESS
    assert channel.open[(tmp_path / "m.py").resolve()].endswith("def unsaved():\n    return 1\n")
    assert (tmp_path / "m.py").read_text() == SOURCE
