"""edit_file / read_file against a real temp project and the in-memory editor."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_lsp.messages import ToolStatus
from agent_lsp.project.syntax import syntax_error
from agent_lsp.project.workspace import Workspace
from agent_lsp.tools.files import EditFileArgs, EditFileTool, ReadFileArgs, ReadFileTool
from tests.conftest import which_or_skip
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
    assert again.output == "no change: the edit is already applied (new_text is at lines 5-6)"
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
    assert result.metadata["reason"] == "stale"
    blind = await edit(ws, "def g(x):", "def h(x):")  # the same edit, still unread: refused
    assert blind.status is ToolStatus.ERROR and "changed since you last read it" in str(blind.error)
    assert (ws.root / "m.py").read_text() == SOURCE + "\nX = 1\n"
    await ReadFileTool(ws).run(ReadFileArgs(path="m.py"))  # read again: now it may
    retry = await edit(ws, "def g(x):", "def h(x):")
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


async def test_tolerant_edit_says_what_it_matched_and_shows_the_reindented_lines(
    ws: Workspace,
) -> None:
    old = "        def g(x):\n            return x + 1\n"  # the model's copy is 8 columns deeper
    new = "        def g(x):\n            y = x + 1\n            return y\n"
    result = await edit(ws, old, new)
    assert result.status is ToolStatus.SUCCESS, result
    assert result.output == (
        "edited m.py at line 5 (old_text matched with indentation adjusted by -8 columns at "
        "lines 5-6; new_text re-indented to match); the edited lines now read:\n"
        "5| def g(x):\n6|     y = x + 1\n7|     return y"
    )
    assert result.metadata["match"] == "indentation"
    assert (ws.root / "m.py").read_text() == SOURCE.replace(
        "def g(x):\n    return x + 1\n", "def g(x):\n    y = x + 1\n    return y\n"
    )
    again = await edit(ws, old, new)
    assert again.output == (
        "no change: the edit is already applied (new_text is at lines 5-7, matched with "
        "indentation adjusted by -8 columns)"
    )
    assert ws.edit_count == 1


async def test_crlf_file_stays_crlf(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_bytes(SOURCE.replace("\n", "\r\n").encode())
    ws = Workspace(tmp_path, RecordingChannel())
    result = await edit(ws, "def g(x):\n    return x + 1\n", "def g(x):\n    return x + 2\n")
    assert result.status is ToolStatus.SUCCESS
    assert "line endings converted to CRLF" in result.output
    expected = SOURCE[: SOURCE.rindex("x + 1")] + "x + 2\n"
    assert (tmp_path / "m.py").read_bytes() == expected.replace("\n", "\r\n").encode()


async def test_tolerant_edit_that_breaks_syntax_is_refused_with_what_matched(
    ws: Workspace,
) -> None:
    result = await edit(ws, "def g(x):  \n    return x + 1", "def g(x:\n    return x + 1")
    assert result.status is ToolStatus.ERROR
    assert result.error == (
        "edit rejected, it would break the syntax: line 5: '(' was never closed "
        "(old_text matched ignoring trailing whitespace at lines 5-6)"
    )
    assert (ws.root / "m.py").read_text() == SOURCE


JS = "function add(a, b) {\n  return a + b;\n}\n\nmodule.exports = { add };\n"


async def test_javascript_edit_that_breaks_syntax_is_refused(tmp_path: Path) -> None:
    which_or_skip("node")
    (tmp_path / "add.js").write_text(JS)
    ws = Workspace(tmp_path, RecordingChannel())
    broken = await edit(ws, "  return a + b;", "  return (a + b;", path="add.js")
    assert broken.status is ToolStatus.ERROR
    assert broken.error == (
        "edit rejected, it would break the syntax: line 2: SyntaxError: Unexpected token ';'"
    )
    fine = await edit(ws, "  return a + b;", "  return b + a;", path="add.js")
    assert fine.status is ToolStatus.SUCCESS
    assert (tmp_path / "add.js").read_text() == JS.replace("a + b;", "b + a;")


async def test_javascript_module_syntax_follows_package_json(tmp_path: Path) -> None:
    which_or_skip("node")
    (tmp_path / "package.json").write_text('{"type": "module"}')
    (tmp_path / "add.js").write_text("export function add(a, b) {\n  return a + b;\n}\n")
    ws = Workspace(tmp_path, RecordingChannel())
    broken = await edit(ws, "  return a + b;", "  return a +;", path="add.js")
    assert broken.status is ToolStatus.ERROR
    assert broken.error is not None and "line 2: SyntaxError" in broken.error


async def test_an_already_broken_file_can_still_be_edited(tmp_path: Path) -> None:
    which_or_skip("node")
    (tmp_path / "bad.js").write_text("function f( {\n  return 1;\n}\n")
    ws = Workspace(tmp_path, RecordingChannel())
    result = await edit(ws, "  return 1;", "  return 2;", path="bad.js")
    assert result.status is ToolStatus.SUCCESS


async def test_go_edit_that_breaks_syntax_is_refused(tmp_path: Path) -> None:
    which_or_skip("gofmt")
    source = "package calc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n"
    (tmp_path / "calc.go").write_text(source)
    ws = Workspace(tmp_path, RecordingChannel())
    broken = await edit(ws, "func Add(a, b int) int {", "func Add(a, b int int {", path="calc.go")
    assert broken.status is ToolStatus.ERROR
    assert broken.error is not None
    assert broken.error.startswith("edit rejected, it would break the syntax: line 3: ")
    # spaces in old_text and new_text, tabs in the file: the edit lands with tabs
    fine = await edit(
        ws, "    return a + b\n", "    sum := a + b\n    return sum\n", path="calc.go"
    )
    assert fine.status is ToolStatus.SUCCESS, fine
    assert (tmp_path / "calc.go").read_text() == source.replace(
        "\treturn a + b\n", "\tsum := a + b\n\treturn sum\n"
    )


async def test_syntax_checks_are_skipped_without_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert await syntax_error(tmp_path / "x.js", "function (") is None
    assert await syntax_error(tmp_path / "x.go", "package") is None
    assert await syntax_error(tmp_path / "x.py", "def (") == "line 1: invalid syntax"


async def test_an_edit_deleting_most_of_a_file_is_refused_once(tmp_path: Path) -> None:
    """A model rewriting a whole file often drops most of it: refused with the reason; the
    same edit again is its word that the task asks for it."""
    body = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(10))
    (tmp_path / "many.py").write_text(body)
    ws = Workspace(tmp_path, RecordingChannel())
    await ReadFileTool(ws).run(ReadFileArgs(path="many.py"))
    cut = EditFileArgs(path="many.py", old_text=body, new_text="def f0():\n    return 0\n")
    refused = await EditFileTool(ws).run(cut)
    assert refused.status is ToolStatus.ERROR and refused.metadata["reason"] == "large deletion"
    assert refused.error == (
        "edit refused: it would delete 38 of the 40 lines of many.py (95%). Change only the "
        "lines that must change (old_text: just those lines). If the task asks for this "
        "deletion, send the same edit again."
    )
    assert (tmp_path / "many.py").read_text() == body
    small = EditFileArgs(path="many.py", old_text="    return 3\n", new_text="    return 33\n")
    assert (await EditFileTool(ws).run(small)).status is ToolStatus.SUCCESS  # a normal edit
    tool = EditFileTool(ws)
    body = (tmp_path / "many.py").read_text()
    cut = EditFileArgs(path="many.py", old_text=body, new_text="def f0():\n    return 0\n")
    assert (await tool.run(cut)).status is ToolStatus.ERROR
    again = await tool.run(cut)
    assert again.status is ToolStatus.SUCCESS, again.error
    assert (tmp_path / "many.py").read_text() == "def f0():\n    return 0\n"
