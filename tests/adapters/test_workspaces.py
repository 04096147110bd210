"""Monorepos: workspace packages at any depth, each run by its own runner; targets go to the
package that owns them; the report sums the packages with paths from the project root."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters import (
    CompositeAdapter,
    PosixShell,
    TestReport,
    detect_toolchain,
    owning_package,
    tests_for_source,
    workspace_layout,
)
from adapters.workspaces import go_work_uses, pnpm_packages
from tests.adapters.conftest import copy_fixture, link_node_modules

JEST_PACKAGES = ("tools", "packages/a")
VITEST_PACKAGES = ("packages/b", "apps/web/packages/c")


def js_workspace(dest: Path, node_modules: Callable[[str], Path]) -> Path:
    """A copy of the three-level pnpm workspace, each package with its runner installed."""
    root = copy_fixture("js-workspace", dest)
    for folder in JEST_PACKAGES:
        link_node_modules(node_modules("js-jest"), root / folder)
    for folder in VITEST_PACKAGES:
        link_node_modules(node_modules("js-vitest"), root / folder)
    return root


async def run(root: Path, targets: list[str]) -> TestReport:
    adapter = detect_toolchain(root)
    assert adapter is not None
    return await adapter.run(root, root, targets, shell=PosixShell(), timeout=180)


def test_pnpm_workspace_yaml_subset() -> None:
    text = "# top\npackages:\n  - 'packages/*'  # libs\n  - \"apps/**\"\n  - !x\ncatalog:\n  a: 1\n"
    assert pnpm_packages(text) == ["packages/*", "apps/**", "!x"]
    assert pnpm_packages("packages: [ 'a/*', b ]\n") == ["a/*", "b"]
    assert pnpm_packages("catalog:\n  - nope\n") == []


def test_go_work_use_forms() -> None:
    text = 'go 1.19\n\nuse ./one // main\nuse (\n\t./two\n\t"./three"\n)\n'
    assert sorted(go_work_uses(text)) == ["./one", "./three", "./two"]


def test_three_level_pnpm_workspace_packages() -> None:
    root = Path(__file__).resolve().parents[1] / "fixtures" / "js-workspace"
    layout = workspace_layout(root)
    assert layout.folders == ["apps/web/packages/c", "packages/a", "packages/b", "tools"]
    assert set(layout.declared.values()) == {"node"}
    assert owning_package(root, "apps/web/packages/c/src/clamp.js") == "apps/web/packages/c"
    assert owning_package(root, "packages/b") == "packages/b"
    assert owning_package(root, "README.md") == ""


@pytest.mark.parametrize(
    "workspaces", [["packages/*", "apps/**"], {"packages": ["packages/*", "apps/**"]}]
)
def test_package_json_workspaces_forms(tmp_path: Path, workspaces: object) -> None:
    (tmp_path / "package.json").write_text(json.dumps({"workspaces": workspaces}))
    for folder in ("packages/one", "apps/web/packages/two", "packages/one/node_modules/dep"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "package.json").write_text(
            json.dumps({"devDependencies": {"vitest": "3.2.4"}})
        )
    (tmp_path / "packages/not-a-package").mkdir()
    adapter = detect_toolchain(tmp_path)
    assert isinstance(adapter, CompositeAdapter)
    assert adapter.name == "vitest (apps/web/packages/two/) + vitest (packages/one/)"


async def test_full_run_runs_every_package_and_sums_them(
    tmp_path: Path, node_modules: Callable[[str], Path]
) -> None:
    root = js_workspace(tmp_path / "ws", node_modules)
    report = await run(root, [])
    assert report.runner == (
        "vitest (apps/web/packages/c/) + jest (packages/a/) + vitest (packages/b/) + jest (tools/)"
    )
    assert (report.passed, report.failed, report.errors) == (5, 2, 0), report.output
    assert report.exit_code == 1
    assert sorted(f.test_id.split("::")[0] for f in report.failures) == [
        "apps/web/packages/c/src/clamp.test.js",
        "packages/b/src/price.test.js",
    ]


async def test_a_target_runs_with_the_package_that_owns_it(
    tmp_path: Path, node_modules: Callable[[str], Path]
) -> None:
    root = js_workspace(tmp_path / "ws", node_modules)
    report = await run(root, ["packages/b/src/price.test.js"])
    assert report.runner == "vitest (packages/b/)"
    assert (report.passed, report.failed) == (1, 1), report.output
    (failure,) = report.failures
    assert failure.test_id.startswith("packages/b/src/price.test.js::")
    assert not report.ok
    whole = await run(root, ["packages/b"])  # the package folder: all its tests
    assert (whole.runner, whole.passed, whole.failed) == ("vitest (packages/b/)", 1, 1)


def test_tests_for_source_per_package(tmp_path: Path) -> None:
    for name in ("auth", "billing"):
        project = tmp_path / "services" / name
        (project / "tests").mkdir(parents=True)
        (project / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
        (project / "util.py").write_text("def helper():\n    return 1\n")
        (project / "tests/test_util.py").write_text("from util import helper\n")
    found = tests_for_source(tmp_path, "services/auth/util.py")
    assert found == ["services/auth/tests/test_util.py"]
    assert tests_for_source(tmp_path, "services/billing/tests/test_util.py") == [
        "services/billing/tests/test_util.py"
    ]


async def test_go_work_modules(tmp_path: Path, go_cache: Path) -> None:
    del go_cache
    root = copy_fixture("go-work", tmp_path / "gw")
    report = await run(root, [])
    assert report.runner == "go test (libs/strs/) + go test (svc/api/)"
    assert (report.passed, report.failed) == (2, 1), report.output
    (failure,) = report.failures
    assert failure.file == "svc/api/route_test.go"
    targeted = await run(root, ["libs/strs/rev_test.go"])
    assert (targeted.runner, targeted.passed, targeted.failed) == ("go test (libs/strs/)", 1, 0)


async def test_several_python_projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    root = copy_fixture("py-multi", tmp_path / "py")
    report = await run(root, [])
    assert report.runner == "pytest (services/auth/) + pytest (services/billing/)"
    assert (report.passed, report.failed) == (3, 1), report.output
    (failure,) = report.failures
    assert failure.test_id == "services/billing/tests/test_invoice.py::test_quantities"
    shutil.rmtree(root / "services/auth")
    single = await run(root, [])
    assert (single.runner, single.passed, single.failed) == ("pytest (services/billing/)", 1, 1)
