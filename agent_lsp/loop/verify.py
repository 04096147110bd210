"""Runs the project's tests against exactly the text the editor holds (via a shadow copy)."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from adapters import ShadowWorkspace, Shell, TestReport, ToolchainAdapter, real_paths
from adapters.affected import is_test_file
from adapters.linters import LintIssue, run_linters
from adapters.results import TestFailure
from agent_lsp.errors import AgentLspError, WorkspaceError
from agent_lsp.project.diagnostics import DiagnosticStore
from agent_lsp.project.workspace import Workspace
from agent_lsp.safety.confined import ConfinedShell
from agent_lsp.safety.paths import is_secret_path
from agent_lsp.safety.policy import CommandPolicy
from agent_lsp.safety.sandbox import Confinement
from agent_lsp.safety.setup import PolicySetup
from agent_lsp.safety.tempdirs import make_dir


class NotPermittedError(WorkspaceError):
    """The policy (the level, a rule or the user's answer) does not let the tests run."""


class BadTargetError(WorkspaceError):
    """A test target that is not a test id or a path inside the workspace."""


def target_problem(root: Path, target: str) -> str | None:
    """Why `target` may not reach the runner (None: it may): a test target is a test id or a
    path inside the workspace (`tests/test_x.py::test_y`, `pkg/...`, `TestFoo`), never an
    option (`--basetemp=…`), an argument file (`@args`) or a path out of the workspace."""
    if not target.strip() or any(ord(ch) < 32 or ord(ch) == 127 for ch in target):
        return f"{target!r}: empty, or holds control characters"
    if target.startswith(("-", "@", "+")):
        return f"{target!r} is an option, not a test id or path (tests.args set options)"
    location = target.partition("::")[0].removesuffix("/...").replace("\\", "/")
    if location.startswith("~"):
        return f"{target!r}: outside the workspace"
    path = Path(location) if Path(location).is_absolute() else root / location
    try:
        inside = path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        inside = False
    return None if inside else f"{target!r}: outside the workspace"


def check_targets(root: Path, targets: Sequence[str]) -> None:
    """`BadTargetError` naming every target that may not reach the runner."""
    problems = [why for why in (target_problem(root, t) for t in targets) if why]
    if problems:
        raise BadTargetError("the tests were not run: " + "; ".join(problems))


def new_shadow_dir() -> Path:
    """A new shadow folder, removed by `Verifier.close` or, at the latest, when the process
    ends (at exit, on SIGTERM, or by the next start after a SIGKILL: `safety.tempdirs`)."""
    return make_dir("agent-lsp-shadow-")


def runs_what(adapter: ToolchainAdapter | None) -> str:
    """What a test run would run, for the question that permits it: the runner, and a
    `tests.command` whole."""
    if adapter is None:
        return ""
    command = getattr(adapter, "command", None)
    if isinstance(command, str) and command:
        return f"the project's tests with `{command}` (tests.command)"
    return f"the project's tests ({adapter.name}), which run the project's own code"


async def permit(policy: CommandPolicy, tool: str = "run_tests", detail: str = "") -> None:
    """The gate of every run of the project's code the harness starts itself
    (`CommandPolicy.permit_project_code`); raises `NotPermittedError` with the reason."""
    decision = await policy.permit_project_code(tool, detail)
    if not decision.allowed:
        what = "tests" if tool == "run_tests" else "linters"
        raise NotPermittedError(f"the {what} were not run: {decision.decided_by}")


async def run_in_copy(
    root: Path,
    adapter: ToolchainAdapter,
    safety: PolicySetup,
    gate: CommandPolicy,
    targets: Sequence[str] = (),
    *,
    timeout: float,  # noqa: ASYNC109 - the test run's own limit, as in adapter.run
) -> TestReport:
    """The tests on the files as they are on disk, in a shadow copy made for this run and
    removed after it (`agent-lsp test`, the dry run of an improvement's self-check): only the
    copy is writable, so nothing the tests write (caches, output files) lands in the project;
    the secret files are not copied, as for every test run. `gate` decides first, as for
    every test run (without an OS sandbox it asks); `NotPermittedError` when it says no,
    `BadTargetError` for a target that is not a test id or path inside the workspace."""
    check_targets(root, targets)
    await permit(gate, detail=runs_what(adapter))
    folder = new_shadow_dir()
    home = safety.engine.guard.home
    shadow = ShadowWorkspace(
        root, folder, skip=lambda rel: is_secret_path(PurePosixPath(rel), home), watch=False
    )
    sandbox = safety.sandbox
    roots = (root, *sandbox.extra_writable)
    writable = (folder, *sandbox.extra_writable)
    shell = ConfinedShell(sandbox, Confinement(writable=writable, visible=roots))
    try:
        run_root = await asyncio.to_thread(shadow.sync, {})
        report = await adapter.run(root, run_root, list(targets), shell=shell, timeout=timeout)
        return real_paths(report, run_root, root)
    finally:
        shadow.close()
        shutil.rmtree(folder, ignore_errors=True)


class Verifier:
    """Owns the shadow workspace of one project and the last test report. `shell` runs the
    tests (confined to the shadow copy); `skip` names files never copied into the shadow (the
    secret files: a test sees them missing)."""

    def __init__(
        self,
        root: Path,
        adapter: ToolchainAdapter | None,
        shell: Shell,
        timeout: float,
        diagnostics: DiagnosticStore | None = None,
        *,
        shadow_dir: Path | None = None,
        skip: Callable[[str], bool] | None = None,
    ) -> None:
        self.diagnostics = diagnostics
        self.root = root
        self.adapter = adapter
        self.shell = shell
        self.timeout = timeout
        self.shadow_dir = shadow_dir or new_shadow_dir()
        self._shadow = ShadowWorkspace(root, self.shadow_dir, skip=skip)
        self._lock = asyncio.Lock()
        self.last_report: TestReport | None = None
        self.last_report_edit_count = -1

    async def permit(self, workspace: Workspace) -> None:
        """The task's policy lets the tests run (never at L0; without an OS sandbox the user
        is asked, once per task); raises `NotPermittedError` with the reason otherwise."""
        await permit(workspace.policy, detail=runs_what(self.adapter))

    async def run(self, workspace: Workspace, targets: Sequence[str] = ()) -> TestReport:
        if self.adapter is None:
            raise WorkspaceError("no test runner found for this project")
        check_targets(self.root, targets)
        await self.permit(workspace)
        async with self._lock:
            edit_count = workspace.edit_count
            overlays = workspace.overlays()
            run_root = await asyncio.to_thread(self._shadow.sync, overlays)
            report = await self.adapter.run(
                self.root, run_root, list(targets), shell=self.shell, timeout=self.timeout
            )
            report = real_paths(report, run_root, self.root)
            if not targets:
                self.last_report = report
                self.last_report_edit_count = edit_count
                if self.diagnostics is not None:
                    self.diagnostics.set_test_results(self.root, report)
            return report

    async def lint(self, workspace: Workspace) -> list[LintIssue]:
        """The project's linters on the editor's text (the same shadow copy as the tests;
        the user's own `lint.enabled`: not asked inside the sandbox, asked as the tests are
        without one — a linter can be the project's own program)."""
        await permit(workspace.policy, "lint")
        async with self._lock:
            run_root = await asyncio.to_thread(self._shadow.sync, workspace.overlays())
            return await run_linters(self.root, run_root, shell=self.shell, timeout=self.timeout)

    def passed_since(self, workspace: Workspace) -> bool:
        """Whether a full run passed on the current text (no edit since)."""
        report = self.last_report
        return (
            report is not None and report.ok and self.last_report_edit_count == workspace.edit_count
        )

    def note_changed(self, rels: Sequence[str]) -> None:
        """Files the editor saw change (relative POSIX paths): copied into the shadow again at
        the next run, whatever their size and mtime (`ShadowWorkspace.note_changed`)."""
        self._shadow.note_changed(rels)

    def close(self) -> None:
        self._shadow.close()
        shutil.rmtree(self.shadow_dir, ignore_errors=True)


SourceLine = Callable[[str, int], "str | None"]  # (a failure's file, line) -> that line's text


def format_report(
    report: TestReport,
    limit: int = 8,
    tail: int = 40,
    hint: bool = True,
    source: SourceLine | None = None,
    root: Path | None = None,
) -> str:
    """The report as the model and the user read it: the totals, each failure (the last
    `tail` lines of its output), then the hint (after the failures: a long hint must not push
    them out of a bounded excerpt; none without `hint`). With `source`, the failing line's own
    text follows its FAILED line when the output does not show it (jest, vitest and go do not:
    a small model that saw `Expected: 50 Received: 55` alone did not find which input), and
    for a failure in the code under test the test's line that called it (`_called_from`). With
    `root` (the model's view), the paths of the project's files are said from it, as the
    model's tools name them (`relative_to_root`)."""
    lines = [f"{report.runner}: {report.summary(with_hint=False)}"]
    seen: set[tuple[str, str | None]] = set()
    for failure in report.failures[:limit]:
        where = f"{failure.file}:{failure.line}" if failure.file and failure.line else failure.file
        at = f" at {where}" if where else ""
        lines.append(f"FAILED {failure.test_id}{at}: {failure.message}")
        if (failure.message, where) in seen:
            lines.append("    (the same failure as above)")
            continue
        seen.add((failure.message, where))
        code = None
        if source and failure.file and failure.line:
            code = source(failure.file, failure.line)
        if code and code.strip() and code.strip() not in failure.output:
            lines.append(f"    line {failure.line}: {code.strip()[:200]}")
        if source and (called := _called_from(failure, source)):
            lines.append(called)
        if own := _unsaid(_own_lines(failure.output), failure.message):
            lines.append(_indent(_tail(own, tail)))
    if len(report.failures) > limit:
        lines.append(f"... and {len(report.failures) - limit} more failures")
    if not report.failures and not report.ok and report.output:
        lines.append(_indent(_tail(_own_lines(report.output), 60)))
    if report.hint and (hint or not report.failures):
        lines.append(f"hint: {report.hint}")
    text = "\n".join(lines)
    return text if root is None else relative_to_root(text, root)


# A stack frame's file and line: Python's `File "path", line 8`; node's `(path:8:10)` or
# `at path:8:10`; Go's `path:8`.
_FRAME_AT = re.compile(
    r'File "(?P<py>[^"]+)", line (?P<py_line>\d+)'
    r"|(?P<path>[^\s()\"'`]+?\.(?:[cm]?[jt]sx?|go)):(?P<line>\d+)"
)


def _called_from(failure: TestFailure, source: SourceLine) -> str:
    """For a failure in the code under test (an exception thrown there, not an assertion of
    the test's), the test's own line that called it, when the output names but does not show
    it: the input that broke the code (held-out bench: told only that `part[0]` was undefined
    in initials.js, a small model never saw which name the test passed, and guarded against a
    name without spaces four times). "" when the failure is the test's or no frame says."""
    if not failure.file or is_test_file(failure.file):
        return ""
    for frame in _FRAME_AT.finditer(failure.output):
        path = frame["py"] or frame["path"]
        if not is_test_file(path):
            continue
        line = int(frame["py_line"] or frame["line"])
        code = source(path, line)
        if not code or not code.strip() or code.strip() in failure.output:
            return ""
        return f"    called from {path}:{line}: {code.strip()[:200]}"
    return ""


def relative_to_root(text: str, root: Path) -> str:
    """`text` with the project's own absolute paths said from its root: `File "test_roman.py"`,
    `(cart.test.js:8:42)`. unittest's tracebacks and node's stack frames name every file by
    its absolute path; the model's tools take the relative one, and the long prefix, repeated
    in every frame, is tokens and noise that differs from one checkout to the next (the
    benchmark's copies: one more thing that changed a small model's answer)."""
    if len(root.parts) < 2:  # the file system's own root: every path would lose its slash
        return text
    for base in dict.fromkeys((str(root), str(root.resolve()))):
        for sep in dict.fromkeys(("/", os.sep)):
            text = text.replace(base.rstrip("/\\") + sep, "")
    return text


# A stack frame in a dependency or the runtime (jest's circus, node's internals, Go's
# runtime): a dozen of them after every JS failure pushed its Expected/Received lines out of
# the excerpt, and no fix is ever made there.
_FOREIGN_FRAME = re.compile(
    r"^\s*at (?:.*[/\\]node_modules[/\\]|.*\bnode:internal/|new Promise \(<anonymous>\)$"
    r"|.*\(<anonymous>\)$)"
    r"|^\s*/\S*/go/src/(?:runtime|testing)/\S+\.go:\d+"
)


# A Python traceback entry in the standard library or an installed package: unittest's own
# case.py frames came before every unittest failure's own line.
_PY_FRAME = re.compile(r'^(\s*)File "([^"]+)", line \d+')
_PY_FOREIGN = re.compile(r"[/\\](?:lib[/\\]python\d[\d.]*|site-packages|dist-packages)[/\\]")


def _own_lines(text: str) -> str:
    """The output without the stack frames of dependencies and the runtime (one line says how
    many were left out)."""
    kept: list[str] = []
    left = 0
    skipping: int | None = None  # the indent of a Python frame left out (its lines follow)
    for row in text.splitlines():
        indent = len(row) - len(row.lstrip())
        if skipping is not None and row.strip() and indent > skipping:
            continue  # the frame's source line and its ^^^ markers
        skipping = None
        if (frame := _PY_FRAME.match(row)) and _PY_FOREIGN.search(frame.group(2)):
            skipping, left = len(frame.group(1)), left + 1
            continue
        if _FOREIGN_FRAME.match(row):
            left += 1
            continue
        kept.append(row)
    if left:
        kept.append(f"[{left} stack frames in dependencies left out]")
    return "\n".join(kept)


def source_lines(workspace: Workspace) -> SourceLine:
    """A failure's line as the editor holds it now, through the workspace's read guard (None:
    outside the workspace, hidden, refused, or no such line)."""

    def line_of(file: str, line: int) -> str | None:
        try:
            rel = file
            if Path(file).is_absolute():
                rel = Path(file).resolve().relative_to(workspace.root).as_posix()
            found = workspace.describe(rel, "read_file").path
            if workspace.hidden(found, "read_file") or not found.is_file():
                return None
            if found not in workspace.granted and workspace.reads.refusal(found) is not None:
                return None
            rows = workspace.read_text(found).splitlines()
        except (AgentLspError, OSError, ValueError):
            return None
        return rows[line - 1] if 0 < line <= len(rows) else None

    return line_of


def _unsaid(output: str, message: str) -> str:
    """The output without the lines its failure's message already says (jest's Expected and
    Received lines, said again under the FAILED line that holds them) and without blank lines
    at its ends or in a row."""
    kept: list[str] = []
    said = False  # the row before was left out: a blank line after it goes too
    for row in output.splitlines():
        line = row.strip()
        if line and len(line) >= 8 and line in message:
            while kept and not kept[-1].strip():
                kept.pop()
            said = True
            continue
        if not line and (said or not kept or not kept[-1].strip()):
            continue
        said = False
        kept.append(row)
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept)


def _tail(text: str, n: int) -> str:
    rows = text.rstrip().splitlines()
    if len(rows) <= n:
        return "\n".join(rows)
    return "\n".join([f"[... {len(rows) - n} lines omitted ...]", *rows[-n:]])


def _indent(text: str) -> str:
    return "\n".join("    " + row for row in text.splitlines())
