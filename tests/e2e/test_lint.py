"""Opt-in linters as a source of diagnostics: run on the editor's text, published by agent-lsp."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from lsprotocol import types as t

from adapters.linters import parse_go_vet, parse_tsc
from tests.conftest import which_or_skip
from tests.e2e.editor_client import editor_session
from tests.e2e.test_lsp_tests import until

LINT = {"lint": {"enabled": True}}


async def test_python_linter_runs_on_the_unsaved_buffer(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "mod.py").write_text("def f():\n    return 1\n")
    async with editor_session("vscode", root, server_env, LINT) as client:
        uri = client.open(root / "mod.py")
        client.type_at_top(uri, "import os\n")
        client.text_document_did_save(
            t.DidSaveTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=uri))
        )
        await until(lambda: any("os" in d.message for d in client.diagnostics.get(uri, [])))
        (found,) = [d for d in client.diagnostics[uri] if "os" in d.message]
        linter = "ruff" if shutil.which("ruff") else "pyflakes"
        assert found.source == "agent-lsp" and found.message.startswith(f"{linter}: ")
        assert found.range.start.line == 0
        actions = await client.text_document_code_action_async(
            t.CodeActionParams(
                text_document=t.TextDocumentIdentifier(uri=uri),
                range=found.range,
                context=t.CodeActionContext(diagnostics=[found]),
            )
        )
        assert actions is not None
        assert actions[0].title == f"Ask agent to fix: {found.message}"
        assert (root / "mod.py").read_text() == "def f():\n    return 1\n"  # disk untouched


async def test_linters_are_off_by_default(tmp_path: Path, server_env: dict[str, str]) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "mod.py").write_text("import os\n")
    async with editor_session("vscode", root, server_env) as client:
        uri = client.open(root / "mod.py")
        client.text_document_did_save(
            t.DidSaveTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=uri))
        )
        await asyncio.sleep(2)
        assert not client.diagnostics.get(uri)


async def test_go_vet_through_the_adapter(tmp_path: Path, server_env: dict[str, str]) -> None:
    which_or_skip("go")
    root = tmp_path / "gomod"
    root.mkdir()
    (root / "go.mod").write_text("module example.com/v\n\ngo 1.19\n")
    (root / "v.go").write_text(
        'package v\n\nimport "fmt"\n\nfunc Show() string {\n\treturn fmt.Sprintf("%d", "x")\n}\n'
    )
    async with editor_session("neovim", root, server_env, LINT) as client:
        uri = client.open(root / "v.go", "go")
        await until(lambda: bool(client.diagnostics.get(uri)), timeout=90)
        (found,) = client.diagnostics[uri]
        assert found.message.startswith("go vet: ") and "%d" in found.message
        assert found.range.start.line == 5


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (
            "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
            ("src/a.ts", 3, 7, "TS2322", "error"),
        ),
    ],
)
def test_tsc_output_is_parsed(
    tmp_path: Path, output: str, expected: tuple[str, int, int, str, str]
) -> None:
    (issue,) = parse_tsc(output, tmp_path)
    assert (issue.file, issue.line, issue.column, issue.code, issue.severity) == expected


def test_go_vet_output_is_parsed(tmp_path: Path) -> None:
    (tmp_path / "v.go").write_text("package v\n")
    output = '# example.com/v\nvet: ./v.go:6:9: fmt.Sprintf format %d has arg "x" of wrong type'
    (issue,) = parse_go_vet(output, tmp_path)
    assert (issue.file, issue.line, issue.column) == ("v.go", 6, 9)
