"""Reading a project's ``scripts.test``: the runner's options, variables and Node flags."""

from __future__ import annotations

from adapters.jsscript import ScriptRun, script_run
from adapters.vitest_runner import _without_filters  # pyright: ignore[reportPrivateUsage]


def test_runner_options_and_variables() -> None:
    script = "tsc -p . && APP_MODE=strict jest --passWithNoTests -c jest.ci.js src/"
    run = script_run(script, "jest")
    assert run == ScriptRun(
        ("--passWithNoTests", "-c", "jest.ci.js", "src/"), {"APP_MODE": "strict"}, ()
    )
    assert run.option("-c", "--config") == "jest.ci.js"
    assert run.option("--selectProjects") is None


def test_wrappers_and_node_entry_points() -> None:
    esm = script_run(
        "cross-env NODE_ENV=test node --experimental-vm-modules node_modules/jest/bin/jest.js -i",
        "jest",
    )
    assert esm == ScriptRun(("-i",), {"NODE_ENV": "test"}, ("--experimental-vm-modules",))
    assert script_run("pnpm exec vitest run --typecheck", "vitest").args == ("--typecheck",)
    assert script_run("npx vitest --project=unit", "vitest").args == ("--project=unit",)


def test_options_the_adapter_owns_are_dropped() -> None:
    jest = script_run("jest --coverage --watch --outputFile out.json --bail --ci -w 2", "jest")
    assert jest.args == ("-w", "2")
    vitest = script_run(
        "vitest --reporter verbose --coverage.enabled --outputFile.json=x --bail 1 --typecheck",
        "vitest",
    )
    assert vitest.args == ("--typecheck",)


def test_no_runner_in_the_script() -> None:
    assert script_run("eslint . && tsc", "jest") == ScriptRun()
    assert script_run("echo 'unterminated", "jest") == ScriptRun()
    assert script_run("", "vitest") == ScriptRun()


def test_vitest_targets_replace_the_scripts_filters() -> None:
    assert _without_filters(["--project", "unit", "test/", "--typecheck"]) == [
        "--project",
        "unit",
        "--typecheck",
    ]
