"""ShadowWorkspace refresh after a test run: what the run deleted in the shadow comes back,
what it swapped or wrote is undone (real files in temp folders)."""

from __future__ import annotations

import shutil
from pathlib import Path

from adapters import ShadowWorkspace


def _project(root: Path) -> Path:
    for rel, text in {
        "calc.py": "def add(a, b):\n    return a + b\n",
        "tests/data/fixture.txt": "original\n",
        "tests/test_calc.py": "from calc import add\n",
        "node_modules/lib/index.js": "module.exports = 1;\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "calc_link.py").symlink_to("calc.py")
    return root


def test_what_a_run_deleted_in_the_shadow_is_there_again(tmp_path: Path) -> None:
    source = _project(tmp_path / "src")
    shadow = ShadowWorkspace(source, tmp_path / "shadow")
    dest = shadow.sync({})
    (dest / "tests/data/fixture.txt").unlink()  # a test deleting its fixture
    shutil.rmtree(dest / "tests/data")
    (dest / "node_modules/lib").unlink()
    (dest / "calc_link.py").unlink()
    shadow.sync({})
    assert (dest / "tests/data/fixture.txt").read_text() == "original\n"
    assert (dest / "node_modules/lib").is_symlink()
    assert (dest / "node_modules/lib/index.js").read_text() == "module.exports = 1;\n"
    assert (dest / "calc_link.py").readlink() == Path("calc.py")


def test_a_link_a_run_pointed_elsewhere_is_made_again(tmp_path: Path) -> None:
    source = _project(tmp_path / "src")
    shadow = ShadowWorkspace(source, tmp_path / "shadow")
    dest = shadow.sync({})
    (dest / "calc_link.py").unlink()
    (dest / "calc_link.py").symlink_to("tests/test_calc.py")
    (dest / "calc.py").write_text("def add(a, b):\n    return 0\n")  # changed in place
    shadow.sync({})
    assert (dest / "calc_link.py").readlink() == Path("calc.py")
    assert (dest / "calc.py").read_text() == (source / "calc.py").read_text()
    assert sorted(p.name for p in dest.iterdir()) == [
        "calc.py",
        "calc_link.py",
        "node_modules",
        "tests",
    ]
