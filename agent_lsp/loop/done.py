"""Definition of done: which tests prove a task, and whether the diagnostic a fix started from
is gone — asked of the source that reported it (agent-lsp's own tests or linters here; the
wrapped language server through the `DiagnosticCheck` seam the LSP layer implements)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from adapters import tests_for_source
from agent_lsp.errors import WorkspaceError
from agent_lsp.loop.verify import NotPermittedError, Verifier
from agent_lsp.project.workspace import Workspace
from agent_lsp.task import DiagnosticInfo, Task, TaskKind

OWN_SOURCE = "agent-lsp"


@dataclass(frozen=True)
class Recheck:
    """What the source said about the diagnostic after the fix: `detail` names it."""

    state: Literal["gone", "present", "unchecked"]
    detail: str


class DiagnosticCheck(Protocol):
    """Asks the source of a fix task's diagnostic whether it still reports it."""

    async def recheck(self, task: Task, workspace: Workspace) -> Recheck | None:
        """None: this check cannot ask the diagnostic's source (another one may)."""
        ...


def describe(diagnostic: DiagnosticInfo, path: str | None) -> str:
    first = diagnostic.message.strip().splitlines()[0] if diagnostic.message.strip() else "?"
    return f"diagnostic '{first[:120]}' at {path or '?'}:{diagnostic.line + 1}"


def test_id_of(diagnostic: DiagnosticInfo) -> str | None:
    """The test an agent-lsp test diagnostic names (`file::name: message`), else None."""
    if diagnostic.source != OWN_SOURCE:
        return None
    head = diagnostic.message.split(": ", 1)[0].strip()
    return head if "::" in head else None


test_id_of.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


class OwnDiagnostics:
    """agent-lsp's own diagnostics: a failed test is re-run by its id (it must run and pass);
    a linter's is re-linted on the editor's text (the same code and message must be gone)."""

    def __init__(self, verifier: Verifier | None) -> None:
        self.verifier = verifier

    async def recheck(self, task: Task, workspace: Workspace) -> Recheck | None:
        diagnostic, verifier = task.diagnostic, self.verifier
        if diagnostic is None or verifier is None or diagnostic.source != OWN_SOURCE:
            return None
        what = describe(diagnostic, task.path)
        test_id = test_id_of(diagnostic)
        try:
            if test_id is not None and verifier.adapter is not None:
                report = await verifier.run(workspace, [test_id])
                if report.ok and report.passed > 0:
                    return Recheck("gone", f"{what} gone ({test_id} passed)")
                return Recheck("present", f"{what} still there ({test_id}: {report.summary()})")
            issues = await verifier.lint(workspace)
        except (NotPermittedError, WorkspaceError) as exc:
            return Recheck("unchecked", f"{what} could not be re-checked: {exc}")
        message = diagnostic.message.strip()
        same = [
            i
            for i in issues
            if (task.path is None or i.file == task.path)
            and f"{i.source}: {i.message}" == message
            and (diagnostic.code is None or i.code == diagnostic.code)
        ]
        if same:
            return Recheck("present", f"{what} still there (line {same[0].line})")
        return Recheck("gone", f"{what} gone (re-linted)")


class FirstAnswer:
    """The first check that can ask the diagnostic's source."""

    def __init__(self, checks: Sequence[DiagnosticCheck]) -> None:
        self.checks = list(checks)

    async def recheck(self, task: Task, workspace: Workspace) -> Recheck | None:
        for check in self.checks:
            answer = await check.recheck(task, workspace)
            if answer is not None:
                return answer
        return None


async def recheck(check: DiagnosticCheck | None, task: Task, workspace: Workspace) -> Recheck:
    """The re-check of a fix task's diagnostic, "unchecked" (said why) when nobody can."""
    diagnostic = task.diagnostic
    if diagnostic is None:
        return Recheck("gone", "")
    answer = await check.recheck(task, workspace) if check is not None else None
    if answer is not None:
        return answer
    source = diagnostic.source or "the editor"
    return Recheck(
        "unchecked",
        f"{describe(diagnostic, task.path)} could not be re-checked ({source} cannot be asked)",
    )


TARGETED_LIMIT = 20  # test files in one targeted run: the rest is the full suite's


@dataclass(frozen=True)
class Selection:
    """The affected test files a targeted run runs, nearest first, and how many more were
    found and left to the full suite (the budget: `TARGETED_LIMIT`)."""

    files: tuple[str, ...]
    left: int = 0

    def shown(self) -> str:
        text = ", ".join(self.files[:5]) + (" …" if len(self.files) > 5 else "")
        return text + (f" (+{self.left} more left to the full suite)" if self.left else "")


async def targeted_tests(
    root: Path, changed: Sequence[str], limit: int = TARGETED_LIMIT
) -> Selection:
    """The test files that import what changed, and the changed test files (SPEC D3): the
    files pytest's own configuration collects, the nearest to each change first, taken in
    turn from each changed file's list up to `limit`."""

    def find() -> Selection:
        lists = [tests_for_source(root, rel) for rel in changed]
        everything = list(dict.fromkeys(f for found in lists for f in found))
        chosen: list[str] = []
        for rank in range(max((len(found) for found in lists), default=0)):
            for found in lists:
                if rank < len(found) and found[rank] not in chosen and len(chosen) < limit:
                    chosen.append(found[rank])
        return Selection(tuple(chosen), len(everything) - len(chosen))

    return await asyncio.to_thread(find)


def text_key(workspace: Workspace, rels: Sequence[str]) -> str:
    """A hash of the text the tests would run on for the changed files ``rels`` (the editor's
    buffer, else the file on disk): equal keys, equal verdicts."""
    digest = hashlib.sha256()
    overlays = workspace.overlays()
    for rel in sorted(rels):
        text = overlays.get(rel)
        if text is not None:
            data = text.encode("utf-8", "surrogatepass")
        else:
            try:
                data = (workspace.root / rel).read_bytes()
            except OSError:
                data = b"\0missing"
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


def definition_of_done(task: Task, verifier: Verifier | None, check_by: str) -> str:
    """What has to hold for the task to be done, in words for current-task.md."""
    lines: list[str] = []
    if task.kind is TaskKind.EXPLAIN:
        return "- an answer in words; nothing edited"
    if task.kind is TaskKind.IMPROVE:
        return "- a patch proposed with propose_improvement (the user reviews it); nothing edited"
    if verifier is None or verifier.adapter is None:
        lines.append("- tests: none (no test runner found): the result cannot be verified")
    else:
        lines.append(
            "- tests: the tests affected by each change first, then the full suite "
            f"({verifier.adapter.name}) passes on the editor's text"
        )
    if task.diagnostic is not None:
        lines.append(f"- {describe(task.diagnostic, task.path)} is gone ({check_by})")
    return "\n".join(lines)


def check_by(task: Task, lsp_check: bool) -> str:
    """Who re-checks the task's diagnostic."""
    diagnostic = task.diagnostic
    if diagnostic is None:
        return ""
    if test_id_of(diagnostic) is not None:
        return f"re-run {test_id_of(diagnostic)}"
    if diagnostic.source == OWN_SOURCE:
        return "re-run the linters"
    if lsp_check:
        return f"asked again of {diagnostic.source or 'the language server'}"
    return "cannot be re-checked here"
