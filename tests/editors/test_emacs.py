"""Real editor: headless Emacs with the shipped package (editor-configs/emacs/agent-lsp.el) set
up as a user would, with eglot (agent-lsp in proxy mode in front of pylsp, and agent-lsp alone)
and with lsp-mode (agent-lsp as an add-on server next to pylsp), against the fake model."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BUG, FIX, which_or_skip
from tests.editors.sandbox import ROOT, editor_env
from tests.fakes.openai_server import FakeOpenAIServer, Hang, Reply, ToolCall
from tests.scripts import SUMMARY, fix_average_script, outcome, tool_messages

pytestmark = [pytest.mark.editor, pytest.mark.timeout(300)]

PACKAGE = ROOT / "editor-configs" / "emacs"
DRIVER = Path(__file__).with_name("emacs_agent.el")
ELPA = Path("/usr/share/emacs/site-lisp/elpa")  # Debian's elpa-eglot and elpa-lsp-mode
PYLSP = Path(sys.executable).with_name("pylsp")
AGENT = [sys.executable, "-m", "agent_lsp", "serve"]
COMPLETED = f"agent-lsp: completed: {SUMMARY} (changed: calc.py)"
NAME_BUG = "    return sum(values) / len(valuez)\n"  # pyflakes: undefined name 'valuez'
UNDEFINED = "undefined name 'valuez'"
STRICT = "(setq byte-compile-error-on-warn t)"
MISSING = "agent-lsp-test-no-such-server"


def _elisp(value: object) -> str:
    """An Elisp string literal (JSON's escapes are valid Elisp for these paths)."""
    return json.dumps(str(value), ensure_ascii=False)


def _elisp_list(values: list[str]) -> str:
    return "(list " + " ".join(_elisp(v) for v in values) + ")"


def _init(client: str) -> str:
    """What a user puts in init.el."""
    common = (
        # emacs -Q skips site-start, which activates Debian's elpa packages.
        f"(setq package-directory-list (list {_elisp(ELPA)}))\n"
        "(package-initialize)\n"
        f"(add-to-list 'load-path {_elisp(PACKAGE)})\n"
        "(require 'agent-lsp)\n"
        f"(setq agent-lsp-command {_elisp_list(AGENT)})\n"
    )
    if client in ("eglot", "missing"):
        wrapped = str(PYLSP) if client == "eglot" else MISSING
        return common + (
            "(setq agent-lsp-wrapped-servers\n"
            f"      (list (cons 'python-mode {_elisp_list([wrapped])})))\n"
            "(agent-lsp-eglot-setup)\n"
            "(setq eglot-confirm-server-initiated-edits nil)\n"
        )
    if client == "alone":
        return common + (
            "(agent-lsp-eglot-setup 'standalone)\n(setq eglot-confirm-server-initiated-edits nil)\n"
        )
    return common + (
        "(setq lsp-client-packages '(lsp-pylsp)\n"
        "      lsp-diagnostics-provider :none\n"
        "      lsp-enable-file-watchers nil\n"
        "      lsp-modeline-code-actions-enable nil\n"
        f"      lsp-pylsp-server-command {_elisp_list([str(PYLSP)])})\n"
        "(require 'lsp-mode)\n"
        "(agent-lsp-lsp-mode-setup)\n"
        "(add-hook 'python-mode-hook #'lsp)\n"
    )


def run_emacs(
    mode: str, project: Path, tmp_path: Path, server_env: dict[str, str]
) -> dict[str, Any]:
    """Run the driver in headless Emacs; return what it recorded."""
    emacs = which_or_skip("emacs")
    client = mode.split("-")[0]
    package = "lsp-mode" if client == "lsp" else "eglot"
    if not any(ELPA.glob(f"{package}-*")):
        if os.environ.get("CI"):
            pytest.fail(f"Debian's elpa-{package} is required in CI")
        pytest.skip(f"Debian's elpa-{package} is not installed in {ELPA}")
    if client in ("eglot", "lsp") and not PYLSP.exists():
        pytest.skip("pylsp is not installed in this environment")
    if client != "lsp":  # eglot's project is the version-controlled folder
        subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
    init = tmp_path / f"init-{client}.el"
    init.write_text(_init(client))
    result = tmp_path / f"emacs-{mode}.json"
    # Nothing lands in ~: HOME (eln-cache, .lsp-session-v1, elpa) and XDG dirs go to tmp_path.
    env = editor_env(
        server_env,
        tmp_path,
        AGENT_EMACS_MODE=mode,
        AGENT_EMACS_ROOT=str(project),
        AGENT_EMACS_RESULT=str(result),
    )
    started = time.monotonic()
    proc = subprocess.run(
        [emacs, "-Q", "--batch", "-l", str(init), "-l", str(DRIVER)],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    output = (
        f"exit {proc.returncode} after {time.monotonic() - started:.1f} s\n"
        f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    assert result.exists(), output
    seen: dict[str, Any] = json.loads(result.read_text())
    stderr = "\n".join(seen.pop("stderr", []))
    recorded = json.dumps(seen, indent=1)[:4000]
    assert proc.returncode == 0, f"{output}\nrecorded: {recorded}\nservers' stderr:\n{stderr}"
    assert seen["ok"] is True, output
    return seen


def assert_fixed_in_buffer_not_on_disk(
    seen: dict[str, Any], before: str, bug: str, recheck: str | None
) -> None:
    """`recheck`: the verdict on the fix's diagnostic (None: a task without one)."""
    assert re.fullmatch(outcome(COMPLETED, recheck=recheck), seen["outcome"])
    assert seen["buffer"] == before.replace(bug, FIX)
    assert seen["modified"] is True
    assert seen["disk"] == before  # the agent's edit is in the buffer, unsaved
    # `agent-lsp-show-log' shows the agent's transcript, ending with the outcome.
    transcript = seen["transcript"]
    assert "agent-lsp: " in transcript.splitlines()[0]
    assert re.search(outcome(COMPLETED, recheck=recheck) + r"\Z", transcript.rstrip())


def assert_model_saw_tests_pass(fake_openai: FakeOpenAIServer) -> None:
    assert len(fake_openai.requests) == 4
    assert "2 passed" in tool_messages(fake_openai.requests[-1])[-1]


def test_eglot_proxy_fix_pyflakes_diagnostic(
    project: Path, tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    calc = project / "calc.py"
    calc.write_text(calc.read_text().replace(BUG, NAME_BUG))
    before = calc.read_text()
    fake_openai.script(
        Reply(tool_calls=[ToolCall("read_file", {"path": "calc.py"})]),
        Reply(
            tool_calls=[
                ToolCall("edit_file", {"path": "calc.py", "old_text": NAME_BUG, "new_text": FIX})
            ]
        ),
        Reply(tool_calls=[ToolCall("run_tests", {})]),
        Reply(SUMMARY),
    )

    seen = run_emacs("eglot-fix", project, tmp_path, server_env)

    # eglot runs agent-lsp in proxy mode, in front of pylsp, through one connection.
    assert seen["server_command"] == [*AGENT, "--wrap", "--", str(PYLSP)]
    assert "agentLsp.fix" in seen["commands"]
    # pylsp's pyflakes diagnostic reached eglot through the proxy...
    assert {"line": 10, "source": "pyflakes", "message": UNDEFINED} in [
        {k: d[k] for k in ("line", "source", "message")} for d in seen["diagnostics"]
    ]
    # ...and `agent-lsp-fix' sent it in the code-action context, then ran the agent's action.
    methods = [r["method"] for r in seen["requests"]]
    assert methods == ["textDocument/codeAction", "workspace/executeCommand"]
    context = seen["requests"][0]["params"]["context"]
    assert [d["message"] for d in context["diagnostics"]] == [UNDEFINED]
    command = seen["requests"][1]["params"]
    assert command["command"] == "agentLsp.fix"
    assert command["arguments"][0] == calc.as_uri()
    assert command["arguments"][1]["message"] == UNDEFINED
    assert command["arguments"][1]["source"] == "pyflakes"
    assert seen["answer"].keys() == {"taskId"}

    assert_fixed_in_buffer_not_on_disk(seen, before, NAME_BUG, recheck="gone")  # pylsp asked
    # pylsp saw the agent's edit (didChange through the proxy) and withdrew its diagnostic.
    assert seen["diagnostics_after"] == []
    assert_model_saw_tests_pass(fake_openai)
    assert UNDEFINED in json.dumps(fake_openai.requests[0])


def test_eglot_proxy_run_task(
    project: Path, tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(*fix_average_script())
    before = (project / "calc.py").read_text()

    seen = run_emacs("eglot-task", project, tmp_path, server_env)

    assert seen["server_command"] == [*AGENT, "--wrap", "--", str(PYLSP)]
    assert seen["requests"] == [
        {
            "method": "workspace/executeCommand",
            "params": {
                "command": "agentLsp.runTask",
                "arguments": [{"task": "make the failing test pass"}],
            },
        },
        {
            "method": "workspace/executeCommand",
            "params": {"command": "agentLsp.cancel", "arguments": []},
        },
    ]
    assert seen["answer"].keys() == {"taskId"}
    assert_fixed_in_buffer_not_on_disk(seen, before, BUG, recheck=None)  # no diagnostic
    assert_model_saw_tests_pass(fake_openai)
    assert "make the failing test pass" in json.dumps(fake_openai.requests[0])
    assert seen["cancel_answer"] == {"cancelled": False}  # nothing left to cancel


def test_eglot_proxy_cancel(
    project: Path, tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    fake_openai.script(Hang(60), Reply("too late"))
    before = (project / "calc.py").read_text()

    seen = run_emacs("eglot-cancel", project, tmp_path, server_env)

    assert seen["answer"].keys() == {"taskId"}
    assert seen["cancel_answer"] == {"cancelled": True}
    assert re.fullmatch(outcome("agent-lsp: cancelled: cancelled"), seen["outcome"])
    assert seen["buffer"] == before and seen["modified"] is False
    assert seen["transcript"].rstrip().endswith(seen["outcome"])


@pytest.mark.parametrize("how", ["fix", "menu"])
def test_lsp_mode_add_on_run_tests_then_fix(
    how: str,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    """`agent-lsp-fix` (how=fix) or lsp-mode's own code-action menu (how=menu)."""
    fake_openai.script(*fix_average_script())
    before = (project / "calc.py").read_text()

    seen = run_emacs(f"lsp-{how}", project, tmp_path, server_env)

    # agent-lsp runs next to pylsp in both buffers: an add-on server, not a replacement.
    assert seen["servers"] == ["agent-lsp", "pylsp"]
    assert seen["test_servers"] == ["agent-lsp", "pylsp"]
    assert seen["tests_answer"] == {"status": "started"}
    assert any(m.startswith("agent-lsp: tests: ") for m in seen["messages"])
    # The failing test became an agent-lsp diagnostic on tests/test_calc.py line 9...
    [failure] = seen["line_diagnostics"]
    assert failure["source"] == "agent-lsp"
    assert failure["range"]["start"]["line"] == 8
    # ...which lsp-mode sent in the code-action context. `agent-lsp-fix' asks agent-lsp only;
    # the menu asks every server. Either way only agent-lsp gets the agent's commands.
    asked = ["agent-lsp"] if how == "fix" else ["agent-lsp", "pylsp"]
    methods = [(r["method"], sorted(r["servers"])) for r in seen["requests"]]
    assert methods == [
        ("workspace/executeCommand", ["agent-lsp"]),  # agentLsp.runTests
        ("textDocument/codeAction", asked),
        ("workspace/executeCommand", ["agent-lsp"]),  # agentLsp.fix
    ]
    if how == "menu":
        assert f"Ask agent to fix: {failure['message']}" in seen["menu"]
    assert seen["requests"][1]["params"]["context"]["diagnostics"] == [failure]
    command = seen["requests"][2]["params"]
    assert command["command"] == "agentLsp.fix"
    assert command["arguments"][0] == (project / "tests" / "test_calc.py").as_uri()
    assert command["arguments"][1] == failure
    if how == "fix":
        assert seen["answer"].keys() == {"taskId"}

    # The failed test's diagnostic: the test is re-run on the fixed text and passes.
    assert_fixed_in_buffer_not_on_disk(seen, before, BUG, recheck="gone")
    assert_model_saw_tests_pass(fake_openai)
    assert failure["message"] in json.dumps(fake_openai.requests[0])


def _prompt(path: Path) -> str:
    return f"[eglot] Server wants to edit:\n  {path}\n Proceed? "


def assert_test_failure(seen: dict[str, Any]) -> None:
    """agent-lsp's diagnostic for test_average, on tests/test_calc.py line 9."""
    assert seen["tests_answer"] == {"status": "started"}
    [failure] = seen["test_diagnostics"]
    assert (failure["line"], failure["source"]) == (9, "agent-lsp")
    assert "average" in failure["message"]


def assert_fixed_in_the_closed_source(seen: dict[str, Any], before: str) -> None:
    """The fix is in calc.py, which was not visited: it is in a buffer now, unsaved; the failed
    test it started from was re-run on the fixed text and passed."""
    assert seen["answer"].keys() == {"taskId"}
    assert re.fullmatch(outcome(COMPLETED, recheck="gone"), seen["outcome"])
    assert seen["calc_visited"] is True
    assert seen["buffer"] == before.replace(BUG, FIX)
    assert seen["modified"] is True
    assert seen["disk"] == before


@pytest.mark.parametrize("client", ["eglot", "alone", "lsp"])
def test_failing_test_then_fix_lands_unsaved_in_the_closed_source(
    client: str,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    """The documented flow: in tests/test_calc.py, C-u M-x agent-lsp-run-tests, then
    M-x agent-lsp-fix on the failure; eglot through the proxy (eglot), eglot with agent-lsp
    alone (alone), lsp-mode (lsp)."""
    fake_openai.script(*fix_average_script())
    calc = project / "calc.py"
    before = calc.read_text()

    seen = run_emacs(f"{client}-tests", project, tmp_path, server_env)

    if client == "alone":
        assert seen["server_command"] == AGENT
    elif client == "eglot":
        assert seen["server_command"] == [*AGENT, "--wrap", "--", str(PYLSP)]
    assert_test_failure(seen)
    assert_fixed_in_the_closed_source(seen, before)
    # eglot 1.9 asks before it edits a file that is not visited (whatever
    # eglot-confirm-server-initiated-edits says); the user answered y. lsp-mode does not ask.
    assert seen.get("prompts", []) == ([] if client == "lsp" else [_prompt(calc)])
    assert_model_saw_tests_pass(fake_openai)


@pytest.mark.parametrize("client", ["eglot", "alone", "lsp"])
def test_run_tests_from_the_source_file(
    client: str,
    project: Path,
    tmp_path: Path,
    fake_openai: FakeOpenAIServer,
    server_env: dict[str, str],
) -> None:
    """C-u M-x agent-lsp-run-tests in calc.py runs calc.py's tests: the failure shows in
    tests/test_calc.py."""
    seen = run_emacs(f"{client}-source", project, tmp_path, server_env)

    assert_test_failure(seen)
    assert fake_openai.requests == []


def test_eglot_proxy_without_the_wrapped_server_runs_agent_lsp_alone(
    project: Path, tmp_path: Path, fake_openai: FakeOpenAIServer, server_env: dict[str, str]
) -> None:
    """Proxy mode whose wrapped server is not installed: a warning that says what to do, and
    agent-lsp alone (not "[eglot] -1: Server died")."""
    fake_openai.script(*fix_average_script())
    before = (project / "calc.py").read_text()

    seen = run_emacs("missing-tests", project, tmp_path, server_env)

    assert seen["server_command"] == AGENT
    [warning] = seen["warnings"]
    assert f"`{MISSING}' (the server agent-lsp wraps for eglot) is not installed" in warning
    assert "(agent-lsp-eglot-setup 'standalone)" in warning
    assert_test_failure(seen)
    assert_fixed_in_the_closed_source(seen, before)


@pytest.mark.parametrize("loaded", [False, True], ids=["alone", "with-eglot-and-lsp-mode"])
def test_package_byte_compiles_without_warnings(loaded: bool, tmp_path: Path) -> None:
    emacs = which_or_skip("emacs")
    source = tmp_path / "agent-lsp.el"
    source.write_text((PACKAGE / "agent-lsp.el").read_text())
    setup = (
        f"(progn (setq package-directory-list (list {_elisp(ELPA)})) (package-initialize)"
        " (require 'eglot) (require 'lsp-mode))"
    )
    if loaded and not any(ELPA.glob("lsp-mode-*")):
        pytest.skip("Debian's elpa-eglot and elpa-lsp-mode are not installed")
    load = ["--eval", setup] if loaded else []
    proc = subprocess.run(
        [emacs, "-Q", "--batch", *load, "--eval", STRICT, "-f", "batch-byte-compile", str(source)],
        cwd=tmp_path,
        env=dict(os.environ, HOME=str(tmp_path)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr
    assert source.with_suffix(".elc").exists()
