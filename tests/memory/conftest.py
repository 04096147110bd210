from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """A project without a test runner: tasks end when the model stops (no pytest runs)."""
    root = tmp_path / "plain"
    root.mkdir()
    (root / "README.md").write_text("A small tool.\n")
    (root / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    return root
