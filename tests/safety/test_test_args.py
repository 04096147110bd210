"""Test targets and `tests.args` from sources the user did not write: tables of what passes and
what is refused (`agent_lsp.loop.verify.target_problem`, `agent_lsp.config.testargs`), and the
same rule applied where settings are loaded (an untrusted project's config) and where an
improvement is guarded."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_lsp.config.settings import load_settings
from agent_lsp.config.testargs import unsafe_test_args
from agent_lsp.improve import ImprovementPatch
from agent_lsp.improve.patch import refusals
from agent_lsp.loop.verify import target_problem

SAFE_ARGS = [
    ["-p", "no:randomly"],
    ["-x", "-q", "-k", "not slow"],
    ["--cov=src"],
    ["-o", "xfail_strict=true"],
    ["--maxWorkers=2"],
    ["-v", "tests/unit"],
    ["-vx", "-rA", "-n2", "--tb=short"],
    ["-p", "no:cacheprovider", "-W", "error::DeprecationWarning"],
    ["--runInBand", "-t", "adds numbers", "--maxWorkers", "50%"],
    ["./pkg/...", "-v"],
    ["tests/test_x.py::test_a[1-2]"],
]
UNSAFE_ARGS = [
    ["--basetemp=/tmp/x"],
    ["--basetemp", "build/tmp"],
    ["--junitxml", "r.xml"],
    ["--junit-xml=r.xml"],
    ["--result-log=r.log"],
    ["--rootdir=/"],
    ["-c", "other.ini"],
    ["-o", "cache_dir=/tmp/c"],
    ["-ocache_dir=c"],
    ["--override-ini=addopts=--basetemp=/x"],
    ["-o", "out.bin"],  # go test -o
    ["-o=out.bin"],
    ["-coverprofile=c.out"],
    ["--cpuprofile", "p"],
    ["-outputdir", "d"],
    ["-exec", "sh"],
    ["--outputFile=r.json"],
    ["--output-file", "r.json"],
    ["--outputFile.json=r.json"],
    ["--cacheDirectory", "c"],
    ["--coverage.reportsDirectory=x"],
    ["--cov-report=html:/tmp/x"],
    ["../sibling/tests"],
    ["/elsewhere/tests"],
    ["~/tests"],
    ["@args.txt"],
    # grouped short options hide an option that takes a value (pytest reads `-vo x` as -v -o x)
    ["-vo", "log_file=/tmp/x.log"],
    ["-vvo", "cache_dir=/tmp/c"],
    ["-rAo", "addopts=--basetemp=/tmp/x"],
    ["-vc", "pytest.ini"],
    ["-qp", "pytest_html"],
    ["-o", "log_file=build/x.log"],  # an ini key not on the list, even inside
    ["-o", "addopts=-q"],
    ["--basetemp=build/tmp"],
    [".."],
    ["..", "tests"],
    ["tests/../../x"],
    ["C:/x"],
    ["-k"],  # a value missing
    ["-p", "some_plugin"],  # loads a module: only `no:` switches one off
    ["--", "tests"],
    ["--cov=/elsewhere"],
    ["-vvvv", "--unknown-option"],
    ["tests/\x1b[2J"],
    # go test's options are short-option clusters to pytest: `-run X` is `-r un X` (a path
    # outside read as a test path), `-count` is `-c ount` (an option file)
    ["-run", "/elsewhere/tests"],
    ["-count=1"],
    ["-coverpkg", ".."],
    ["-race"],
    ["-o", "markers=link/x"],  # go test -o: the test binary written through a link
]


@pytest.mark.parametrize("args", SAFE_ARGS, ids=" ".join)
def test_arguments_that_write_nothing_anywhere_pass(args: list[str]) -> None:
    assert unsafe_test_args(args) is None


@pytest.mark.parametrize("args", UNSAFE_ARGS, ids=" ".join)
def test_arguments_that_write_files_or_leave_the_workspace_are_refused(args: list[str]) -> None:
    assert unsafe_test_args(args) is not None


@pytest.mark.parametrize(
    "target",
    ["tests/test_calc.py::test_average", "tests", "./pkg/...", "TestFoo", "tests.test_calc"],
)
def test_a_target_inside_the_workspace_passes(tmp_path: Path, target: str) -> None:
    assert target_problem(tmp_path, target) is None


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("--basetemp=/tmp/x", "is an option"),
        ("-k", "is an option"),
        ("@args.txt", "is an option"),
        ("+x", "is an option"),
        ("../other/test_x.py", "outside the workspace"),
        ("/etc/passwd", "outside the workspace"),
        ("~/test_x.py", "outside the workspace"),
        ("tests/\x1b[2J", "control characters"),
        ("", "empty"),
    ],
)
def test_a_target_that_is_an_option_or_outside_is_refused(
    tmp_path: Path, target: str, why: str
) -> None:
    problem = target_problem(tmp_path, target)
    assert problem is not None and why in problem


def test_an_untrusted_project_config_may_not_set_them(tmp_path: Path) -> None:
    (tmp_path / ".agent-lsp").mkdir()
    config = tmp_path / ".agent-lsp" / "config.toml"
    user = tmp_path / "user.toml"
    config.write_text('[tests]\nargs = ["--basetemp=/tmp/elsewhere"]\n')
    loaded = load_settings(tmp_path, environ={}, user_config=user, trusted=False)
    assert loaded.settings.tests.args == []
    assert any("ignored tests.args" in w for w in loaded.warnings), loaded.warnings
    config.write_text('[tests]\nargs = ["-p", "no:randomly"]\n')
    loaded = load_settings(tmp_path, environ={}, user_config=user, trusted=False)
    assert loaded.settings.tests.args == ["-p", "no:randomly"]
    trusted = load_settings(tmp_path, environ={}, user_config=user, trusted=True)
    assert trusted.settings.tests.args == ["-p", "no:randomly"]


def test_an_improvement_may_not_set_them_even_in_a_trusted_workspace(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, environ={}, user_config=tmp_path / "u.toml").settings
    patch = ImprovementPatch.model_validate(
        {"summary": "s", "config": [{"key": "tests.args", "value": ["--junitxml=/tmp/r.xml"]}]}
    )
    [why] = refusals(patch, settings)
    assert why.startswith("tests.args: refused: '--junitxml=/tmp/r.xml'"), why
    fine = ImprovementPatch.model_validate(
        {"summary": "s", "config": [{"key": "tests.args", "value": ["-p", "no:randomly"]}]}
    )
    assert refusals(fine, settings) == []
