"""REVIEWING's own checks, computed before the reviewer model runs: the merged diff of the
files the team changed (against git's HEAD, the text the editor shows, bounded), the
whitespace rules of `git diff --check`, the project's linter where one is configured, and a
scan of the added lines for leaked secrets and ignored errors (`review_scan`).

The reviewer is given the diff and these findings; its answer is read into `ReviewFinding`s,
and the checks' errors count whatever it says (`merged`)."""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from adapters.linters import LintIssue
from agent_lsp.errors import AgentLspError
from agent_lsp.fileio import read_disk_text
from agent_lsp.project.git import Git
from agent_lsp.seams import EditorChannel
from agent_lsp.team.plan import json_list
from agent_lsp.team.review_scan import (
    Added,
    ReviewFinding,
    Severity,
    added_lines,
    ignored_errors,
    leaked_secrets,
    whitespace_errors,
)

DIFF_LIMIT = 12_000  # characters of the merged diff the reviewer is shown
FINDINGS_LIMIT = 40  # checks' findings the reviewer is shown
FAILS = ("F82",)  # ruff's (pyflakes') undefined names: the code fails when it runs

Lint = Callable[[EditorChannel], Awaitable[list[LintIssue]]]


@dataclass
class ReviewChecks:
    diff: str = ""  # bounded
    findings: list[ReviewFinding] = field(default_factory=list[ReviewFinding])

    def text(self) -> str:
        """The findings as the reviewer reads them, one a line."""
        shown = [f.text() for f in self.findings[:FINDINGS_LIMIT]]
        more = len(self.findings) - len(shown)
        return "\n".join(shown + ([f"... and {more} more"] if more > 0 else []))

    @property
    def errors(self) -> list[ReviewFinding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]


def lint_configured(root: Path) -> bool:
    """Whether the project configures a linter the adapters run (ruff, go vet, tsc): no
    linter is run on a project that did not ask for one."""
    if (root / "ruff.toml").is_file() or (root / ".ruff.toml").is_file():
        return True
    if (root / "go.mod").is_file() or (root / "tsconfig.json").is_file():
        return True
    try:
        pyproject: dict[str, Any] = tomllib.loads(read_disk_text(root / "pyproject.toml"))
    except (OSError, ValueError):
        return False
    return "ruff" in pyproject.get("tool", {})


async def _head_text(git: Git, rel: str) -> str:
    """The file at HEAD; empty for a new file, no commit or no repository."""
    result = await git.run("show", f"HEAD:{rel}")
    return result.output if result.exit_code == 0 else ""


def _in_project(root: Path, named: str) -> str | None:
    """`named` relative to the project with links resolved; None when it leads out."""
    real_root, path = root.resolve(), (root / named).resolve()
    return path.relative_to(real_root).as_posix() if path.is_relative_to(real_root) else None


def _now_text(channel: EditorChannel, path: Path) -> str:
    buffered = channel.buffers().get(path)
    if buffered is not None:
        return buffered
    try:
        return read_disk_text(path) if path.is_file() else ""
    except (OSError, ValueError):
        return ""


async def review_checks(
    root: Path, git: Git, channel: EditorChannel, changed: Sequence[str], lint: Lint | None
) -> ReviewChecks:
    """The checks on the files the team changed (relative to `root`)."""
    parts: list[str] = []
    ends_blank: set[str] = set()
    based = (await git.run("rev-parse", "--verify", "-q", "HEAD")).exit_code == 0
    for named in changed:
        rel = _in_project(root, named)
        if rel is None:
            continue  # out of the project (a checkpoint names the files): never read
        if git.hide(rel):
            continue  # a secret or denied file (links resolved): never shown
        old, new = await _head_text(git, rel), _now_text(channel, root / rel)
        if old == new:
            continue
        diff = "".join(
            difflib.unified_diff(
                old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{rel}", f"b/{rel}"
            )
        )
        parts.append(diff if diff.endswith("\n") else diff + "\n")
        if new.endswith("\n\n") and not old.endswith("\n\n"):
            ends_blank.add(rel)
    diff = "".join(parts)
    added = added_lines(diff)
    findings = whitespace_errors(added, ends_blank) + leaked_secrets(added) + ignored_errors(added)
    if lint is not None and lint_configured(root):
        findings += _lint_findings(await lint(channel), added)
    if not based:  # no commit to diff against: whole files, old lines too, so nothing forced
        findings = [f.model_copy(update={"severity": Severity.WARNING}) for f in findings]
        diff = (
            f"(no git commit to compare with: the changed files in whole)\n{diff}" if diff else ""
        )
    if len(diff) > DIFF_LIMIT:
        diff = diff[:DIFF_LIMIT] + f"\n... (diff cut at {DIFF_LIMIT} of {len(diff)} characters)"
    return ReviewChecks(diff=diff, findings=findings)


def _lint_findings(issues: list[LintIssue], added: list[Added]) -> list[ReviewFinding]:
    """The linter's issues on lines the team added; a syntax error, what the linter calls an
    error (tsc, go vet) and an undefined name (ruff F821-F823) are errors."""
    lines = {(a.file, a.line) for a in added}
    out: list[ReviewFinding] = []
    for issue in issues:
        if (issue.file, issue.line) not in lines:
            continue
        syntax = "syntax" in issue.message.lower() or issue.code in (None, "E999")
        error = syntax or issue.severity == "error" or (issue.code or "").startswith(FAILS)
        out.append(
            ReviewFinding(
                severity=Severity.ERROR if error else Severity.WARNING,
                file=issue.file,
                line=issue.line,
                category="syntax" if syntax else "lint",
                finding=f"{issue.source} {issue.code or ''}: {issue.message}".replace(" :", ":"),
                suggestion="fix what the linter reports",
            )
        )
    return out


def read_review(text: str) -> list[ReviewFinding]:
    """The reviewer's answer; the first slice's `{"finding", "files"}` shape is read too."""
    findings: list[ReviewFinding] = []
    for item in json_list(text, "review"):
        if isinstance(item, dict) and "file" not in item and item.get("files"):
            files: Any = item.get("files")
            item = {**item, "file": str(files[0]) if isinstance(files, list) and files else ""}
        try:
            findings.append(ReviewFinding.model_validate(item))
        except ValidationError as exc:
            why = exc.errors()[0]["msg"]
            raise AgentLspError(f"a review finding is malformed: {why}") from None
    return findings


def merged(model: list[ReviewFinding], checks: ReviewChecks) -> list[ReviewFinding]:
    """What goes back to the planner: the model's findings (not the merely informative ones)
    and every error of the checks the model did not name itself."""
    out = [f for f in model if f.severity is not Severity.INFO]
    named = {(f.file, f.line, f.category) for f in out}
    out += [f for f in checks.errors if (f.file, f.line, f.category) not in named]
    return out
