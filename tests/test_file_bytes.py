"""Files keep their bytes: encodings, line endings and binary files, checked on disk."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent_lsp.cli.terminal import TerminalChannel
from agent_lsp.messages import ToolStatus
from agent_lsp.project.workspace import Workspace
from agent_lsp.tools.files import EditFileArgs, EditFileTool, ReadFileArgs, ReadFileTool
from agent_lsp.tools.search import SearchTextArgs, SearchTextTool
from tests.conftest import BUG, FIX
from tests.fakes.openai_server import FakeOpenAIServer
from tests.scripts import fix_average_script
from tests.test_cli import agent_lsp

OLD, NEW = "value = 1", "value = 2"


def _body(eol: str, final: bool = True) -> str:
    text = eol.join(["# Café déjà vu", OLD, "# naïve façade", "x = 'ü'"])
    return text + (eol if final else "")


CASES: dict[str, bytes] = {
    "latin-1": _body("\n").encode("latin-1"),
    "cp1252": (_body("\n") + "# “quoted” €\n").encode("cp1252"),
    "utf-8": _body("\n").encode("utf-8"),
    "utf-8 with BOM": b"\xef\xbb\xbf" + _body("\n").encode("utf-8"),
    "utf-16 le with BOM": b"\xff\xfe" + _body("\r\n").encode("utf-16-le"),
    "crlf": _body("\r\n").encode("utf-8"),
    "crlf latin-1": _body("\r\n").encode("latin-1"),
    "mixed endings": b"# caf\xe9\r\nvalue = 1\n# na\xefve\r\nend\n",
    "no final newline": _body("\n", final=False).encode("latin-1"),
    "cr only": b"# caf\xe9\rvalue = 1\rend",
}


def _ws(root: Path) -> Workspace:
    return Workspace(root, TerminalChannel(out=io.StringIO()))


@pytest.mark.parametrize("name", list(CASES))
async def test_an_edit_changes_only_its_own_bytes(tmp_path: Path, name: str) -> None:
    data = CASES[name]
    (tmp_path / "m.py").write_bytes(data)
    ws = _ws(tmp_path)
    shown = await ReadFileTool(ws).run(ReadFileArgs(path="m.py"))
    assert shown.status is ToolStatus.SUCCESS
    assert "\ufffd" not in shown.output and "\ufeff" not in shown.output
    assert "café" in shown.output.lower()
    done = await EditFileTool(ws).run(EditFileArgs(path="m.py", old_text=OLD, new_text=NEW))
    assert done.status is ToolStatus.SUCCESS, done.error
    enc = "utf-16-le" if name.startswith("utf-16") else "latin-1"
    expected = data.replace(OLD.encode(enc), NEW.encode(enc))
    assert expected != data
    assert (tmp_path / "m.py").read_bytes() == expected


@pytest.mark.parametrize(
    ("name", "new", "bad"),
    [("latin-1", "value = '→'", "U+2192"), ("cp1252", "value = 'ő'", "U+0151")],
)
async def test_text_the_encoding_cannot_hold_is_refused(
    tmp_path: Path, name: str, new: str, bad: str
) -> None:
    data = CASES[name]
    (tmp_path / "m.py").write_bytes(data)
    ws = _ws(tmp_path)
    done = await EditFileTool(ws).run(EditFileArgs(path="m.py", old_text=OLD, new_text=new))
    assert done.status is ToolStatus.ERROR
    assert done.error is not None and bad in done.error and "cannot hold" in done.error
    assert (tmp_path / "m.py").read_bytes() == data
    assert ws.edit_count == 0


async def test_a_file_in_no_single_encoding_is_not_rewritten(tmp_path: Path) -> None:
    data = "# café\nvalue = 1\n".encode() + b"# na\xefve\n"  # UTF-8 and a Latin-1 byte
    (tmp_path / "m.py").write_bytes(data)
    ws = _ws(tmp_path)
    shown = await ReadFileTool(ws).run(ReadFileArgs(path="m.py"))
    assert "not in one text encoding" in shown.output and "not editable" in shown.output
    done = await EditFileTool(ws).run(EditFileArgs(path="m.py", old_text=OLD, new_text=NEW))
    assert done.status is ToolStatus.ERROR
    assert done.error is not None and "does not rewrite it" in done.error
    assert (tmp_path / "m.py").read_bytes() == data


async def test_binary_files_are_named_not_shown(tmp_path: Path) -> None:
    blob = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
    (tmp_path / "logo.png").write_bytes(blob)
    (tmp_path / "m.py").write_text("IHDR = 1\n")
    ws = _ws(tmp_path)
    read = await ReadFileTool(ws).run(ReadFileArgs(path="logo.png"))
    assert read.status is ToolStatus.SUCCESS
    assert read.output == f"logo.png: binary file, {len(blob)} bytes; not shown"
    one = await SearchTextTool(ws).run(SearchTextArgs(pattern="IHDR", path="logo.png"))
    assert one.output == f"logo.png: binary file, {len(blob)} bytes; not searched"
    every = await SearchTextTool(ws).run(SearchTextArgs(pattern="IHDR"))
    assert every.output == f"m.py:1: IHDR = 1\nlogo.png: binary file, {len(blob)} bytes, matches"
    elsewhere = await SearchTextTool(ws).run(SearchTextArgs(pattern="value"))
    assert elsewhere.output == "no matches for 'value'"
    edit = await EditFileTool(ws).run(EditFileArgs(path="logo.png", old_text="IHDR", new_text="x"))
    assert edit.status is ToolStatus.ERROR
    assert edit.error == f"logo.png: binary file, {len(blob)} bytes; agent-lsp does not rewrite it"
    assert (tmp_path / "logo.png").read_bytes() == blob


def test_a_run_and_its_undo_keep_a_latin1_file_byte_for_byte(
    project: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    calc = project / "calc.py"
    original = ("# Ünïcode-free: café, naïve, déjà vu\n" + calc.read_text()).encode("latin-1")
    calc.write_bytes(original)
    fake_openai.script(*fix_average_script())
    done = agent_lsp("run", "make the failing test pass", "--root", str(project), env=server_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert calc.read_bytes() == original.replace(BUG.encode(), FIX.encode())
    undo = agent_lsp("undo", "--all", "--root", str(project), env=server_env)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert "restored calc.py" in undo.stdout
    assert calc.read_bytes() == original


async def test_a_long_utf16_file_is_text_not_binary(tmp_path: Path) -> None:
    text = "".join(f"# line {n} 😀 déjà\n" for n in range(600)) + "value = 1\n"
    data = b"\xff\xfe" + text.encode("utf-16-le")
    assert len(data) > 8000
    (tmp_path / "m.py").write_bytes(data)
    ws = _ws(tmp_path)
    read = await ReadFileTool(ws).run(ReadFileArgs(path="m.py", start_line=601))
    assert read.output == "601| value = 1"
    done = await EditFileTool(ws).run(EditFileArgs(path="m.py", old_text=OLD, new_text=NEW))
    assert done.status is ToolStatus.SUCCESS, done.error
    assert (tmp_path / "m.py").read_bytes() == b"\xff\xfe" + text.replace(OLD, NEW).encode(
        "utf-16-le"
    )
