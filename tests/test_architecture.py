"""The layers hold: the import contracts in pyproject.toml are kept, a planted violation breaks
them (so the check can fail), and every package says what it may import."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT = (
    "import sys; from importlinter.cli import lint_imports_command; "
    "sys.exit(lint_imports_command())"
)


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_repository_keeps_every_contract() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
    assert result.stdout.count("KEPT") == 8, result.stdout


def copy_tree(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "sample")
    for package in ("agent_lsp", "adapters"):
        shutil.copytree(REPO / package, dest / package, ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    return dest


def plant(path: Path, line: str) -> None:
    text = path.read_text()
    path.write_text(
        text.replace(
            "from __future__ import annotations\n",
            f"from __future__ import annotations\n\n{line}\n",
            1,
        )
    )


def test_a_loop_module_that_imports_the_lsp_layer_breaks_the_layers(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    plant(root / "agent_lsp" / "loop" / "guard.py", "import agent_lsp.lsp.convert  # noqa")
    result = lint_imports(root)
    assert result.returncode == 1, result.stdout
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN")]
    assert "Layers (docs/architecture.md) BROKEN" in broken, result.stdout
    assert "The loop imports no tool, model provider, session or front end BROKEN" in broken
    assert "agent_lsp.loop.guard -> agent_lsp.lsp.convert" in result.stdout


def test_pygls_outside_the_lsp_layer_and_agent_lsp_in_adapters_break_their_contracts(
    tmp_path: Path,
) -> None:
    root = copy_tree(tmp_path)
    plant(root / "agent_lsp" / "project" / "syntax.py", "import lsprotocol  # noqa")
    plant(root / "adapters" / "locate.py", "import agent_lsp.errors  # noqa")
    result = lint_imports(root)
    assert result.returncode == 1
    assert "Only the LSP layer speaks LSP (pygls, lsprotocol) BROKEN" in result.stdout
    assert "adapters never imports agent_lsp BROKEN" in result.stdout


def test_the_acp_sdk_outside_the_acp_layer_and_acp_importing_lsp_break_their_contracts(
    tmp_path: Path,
) -> None:
    root = copy_tree(tmp_path)
    plant(root / "agent_lsp" / "lsp" / "textedit.py", "import acp  # noqa")
    plant(root / "agent_lsp" / "acp" / "updates.py", "import agent_lsp.lsp.textedit  # noqa")
    result = lint_imports(root)
    assert result.returncode == 1
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN")]
    assert any(line.startswith("Only the ACP layer speaks ACP") for line in broken), broken
    assert "Layers (docs/architecture.md) BROKEN" in broken, result.stdout
    assert "agent_lsp.acp.updates -> agent_lsp.lsp.textedit" in result.stdout


def test_an_import_circle_breaks_the_acyclic_contract(tmp_path: Path) -> None:
    root = copy_tree(tmp_path)
    plant(root / "agent_lsp" / "project" / "status.py", "import agent_lsp.tools.git  # noqa")
    result = lint_imports(root)
    assert "No import circles, at any depth BROKEN" in result.stdout, result.stdout


def test_every_package_says_what_it_may_import() -> None:
    for init in sorted(
        [*(REPO / "agent_lsp").rglob("__init__.py"), REPO / "adapters" / "__init__.py"]
    ):
        if "sample" in init.parts:
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert doc, init
        assert "import" in doc.lower(), f"{init.relative_to(REPO)} does not say what it may import"
