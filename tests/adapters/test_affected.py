"""tests_for_source: which test files import a changed module."""

from __future__ import annotations

from pathlib import Path

from adapters import tests_for_source


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_python_imports(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "src/shop/cart.py": "",
            "src/shop/__init__.py": "",
            "src/shop/price.py": "",
            "tests/test_cart.py": "from shop.cart import Cart\n",
            "tests/test_cart2.py": "import shop.cart as c\n",
            "tests/test_pkg.py": "from shop import (\n    price,\n    cart,\n)\n",
            "tests/test_price.py": "from shop.price import total\n",
            "tests/test_rel.py": "from .cart import x\n",
            "tests/helper.py": "from shop.cart import Cart\n",  # not a test file
            ".venv/lib/test_cart_venv.py": "from shop.cart import Cart\n",
        },
    )
    assert tests_for_source(root, "src/shop/cart.py") == [
        "tests/test_cart.py",
        "tests/test_cart2.py",
        "tests/test_pkg.py",
        "tests/test_rel.py",
    ]
    assert tests_for_source(root, "tests/test_price.py") == ["tests/test_price.py"]
    assert tests_for_source(root, str(root / "src/shop/price.py")) == [
        "tests/test_pkg.py",
        "tests/test_price.py",
    ]


def test_js_imports(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "src/calc.ts": "",
            "src/util/index.js": "",
            "src/calc.test.ts": "import { add } from './calc'\n",
            "src/__tests__/deep.js": "const c = require('../calc.ts')\n",
            "test/other.spec.js": "import x from '../src/other'\n",
            "test/util.spec.mjs": "import u from '../src/util'\nvi.mock('../src/calc')\n",
            "node_modules/pkg/calc.test.js": "import './calc'\n",
        },
    )
    assert tests_for_source(root, "src/calc.ts") == [  # nearest first
        "src/calc.test.ts",
        "src/__tests__/deep.js",
        "test/util.spec.mjs",
    ]
    assert tests_for_source(root, "src/util/index.js") == ["test/util.spec.mjs"]


def test_go_package_folder(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "pkg/a.go": "",
            "pkg/a_test.go": "",
            "pkg/b_test.go": "",
            "other/c_test.go": "",
            "m.go": "",
        },
    )
    assert tests_for_source(root, "pkg/a.go") == ["pkg/a_test.go", "pkg/b_test.go"]
    assert tests_for_source(root, "m.go") == []


def test_python_reexports_and_late_imports(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "lib/__init__.py": "from .core import *\n",
            "lib/core.py": "",
            "lib/extra.py": "",
            "tests/test_api.py": '"""Doc."""\nimport os\n\nimport lib as L\n',
            "tests/test_extra.py": "import os\nfrom lib.extra import thing\n",
        },
    )
    assert tests_for_source(root, "lib/core.py") == ["tests/test_api.py"]
    assert tests_for_source(root, "lib/extra.py") == ["tests/test_extra.py"]


def test_importers_in_other_packages(tmp_path: Path) -> None:
    """A monorepo's other packages and another Go package import the changed module: their
    tests count; a bare name ("util") of another package does not."""
    root = _write(
        tmp_path,
        {
            "package.json": '{"workspaces": ["packages/*"]}',
            "packages/a/package.json": '{"name": "a"}',
            "packages/a/src/mod.js": "",
            "packages/a/src/mod.test.js": "import m from './mod'\n",
            "packages/b/package.json": '{"name": "b"}',
            "packages/b/src/y.test.js": "import x from '../../a/src/mod'\n",
            "packages/b/src/z.test.js": "import x from './mod'\n",
        },
    )
    assert tests_for_source(root, "packages/a/src/mod.js") == [
        "packages/a/src/mod.test.js",
        "packages/b/src/y.test.js",
    ]
    root = _write(
        tmp_path / "py",
        {
            "services/a/pyproject.toml": '[project]\nname = "a"\n',
            "services/a/pkg_a/__init__.py": "",
            "services/a/pkg_a/mod.py": "",
            "services/a/pkg_a/util.py": "",
            "services/a/tests/test_mod.py": "from pkg_a.mod import x\n",
            "services/b/pyproject.toml": '[project]\nname = "b"\n',
            "services/b/tests/pkg_b/test_y.py": "from pkg_a.mod import x\n",
            "services/b/tests/test_util.py": "import util\nfrom . import util\n",
            "services/b/util.py": "",
        },
    )
    assert tests_for_source(root, "services/a/pkg_a/mod.py") == [
        "services/a/tests/test_mod.py",
        "services/b/tests/pkg_b/test_y.py",
    ]
    assert tests_for_source(root, "services/a/pkg_a/util.py") == []


def test_go_importers_in_other_packages(tmp_path: Path) -> None:
    uses = 'package {0}\n\nimport (\n\t"testing"\n\n\t"example.com/m/{1}"\n)\n'
    root = _write(
        tmp_path,
        {
            "go.mod": "module example.com/m\n\ngo 1.21\n",
            "a/a.go": "package a\n",
            "a/a_test.go": "package a\n",
            "b/b_test.go": uses.format("b", "a"),
            "c/c_test.go": uses.format("c", "a/deeper"),
            "svc/go.mod": "module example.com/svc\n",
            "svc/api/api.go": "package api\n",
            "svc/main_test.go": uses.format("main", "api").replace("m/api", "svc/api"),
        },
    )
    assert tests_for_source(root, "a/a.go") == ["a/a_test.go", "b/b_test.go"]
    assert tests_for_source(root, "svc/api/api.go") == ["svc/main_test.go"]
