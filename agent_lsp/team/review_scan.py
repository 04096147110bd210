"""The deterministic part of the review: the added lines of a unified diff scanned for
whitespace errors (the rules of `git diff --check`), leaked secrets and ignored errors. Pure
functions over text; no model, no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class ReviewFinding(BaseModel):
    """One finding of the review, the reviewer model's or the orchestrator's own checks'."""

    severity: Severity = Severity.WARNING
    file: str = ""
    line: int | None = None
    category: str = "style"  # whitespace, secret, ignored-error, syntax, lint, performance, style
    finding: str
    suggestion: str = ""

    def text(self) -> str:
        """e.g. `error area.py:3 [secret] an AWS access key id — read it from the environment`."""
        where = f"{self.file}:{self.line}" if self.file and self.line else self.file
        head = f"{self.severity.value} {where} [{self.category}] {self.finding}"
        return head.replace("  ", " ") + (f" — {self.suggestion}" if self.suggestion else "")


@dataclass(frozen=True)
class Added:
    file: str
    line: int  # 1-based, in the new text
    text: str


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def added_lines(diff: str) -> list[Added]:
    """The `+` lines of a unified diff with their file and line in the new text."""
    out: list[Added] = []
    file, line = "", 0
    for raw in diff.splitlines():
        if raw.startswith("+++ "):
            file = raw[4:].split("\t")[0].removeprefix("b/")
        elif raw.startswith("--- "):
            continue
        elif hunk := _HUNK.match(raw):
            line = int(hunk.group(1))
        elif raw.startswith("+"):
            out.append(Added(file, line, raw[1:]))
            line += 1
        elif raw.startswith(" "):
            line += 1
    return out


def _finding(
    severity: Severity, where: Added, category: str, finding: str, suggestion: str
) -> ReviewFinding:
    return ReviewFinding(
        severity=severity,
        file=where.file,
        line=where.line,
        category=category,
        finding=finding,
        suggestion=suggestion,
    )


_CONFLICT = re.compile(r"^(<{7}|={7}|>{7})( |$)")


def whitespace_errors(added: list[Added], ends_blank: set[str]) -> list[ReviewFinding]:
    """`git diff --check`'s default rules: blank-at-eol, space-before-tab, conflict markers,
    blank-at-eof (`ends_blank`: files whose new text ends in added blank lines)."""
    found: list[ReviewFinding] = []
    for a in added:
        if a.text != a.text.rstrip(" \t\r") and a.text.strip():
            what, fix = "trailing whitespace", "remove the spaces at the end of the line"
        elif " \t" in a.text[: len(a.text) - len(a.text.lstrip(" \t"))]:
            what, fix = "space before tab in indent", "indent with one kind of whitespace"
        elif _CONFLICT.match(a.text):
            what, fix = "leftover conflict marker", "resolve the merge conflict"
        else:
            continue
        found.append(_finding(Severity.ERROR, a, "whitespace", what, fix))
    for file in sorted(ends_blank):
        last = max((a for a in added if a.file == file), key=lambda a: a.line, default=None)
        if last is not None:
            fix = "remove the blank lines at the end of the file"
            found.append(_finding(Severity.ERROR, last, "whitespace", "new blank line at EOF", fix))
    return found


_SECRETS = (
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key"),
    (re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"\b(ghp|gho|ghs|github_pat)_[A-Za-z0-9_]{20,}"), "a GitHub token"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"), "an API secret key"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "a Slack token"),
    (
        re.compile(
            r"(?i)\b[\w.-]*(secret|token|passw(or)?d|api_?key|access_?key)[\w.-]*['\"]?\s*"
            r"(:=|=|:)\s*['\"`]([^'\"`\s]{8,})['\"`]"
        ),
        "a credential assigned",
    ),
)
_PLACEHOLDER = re.compile(r"(?i)^(x+|\*+|<.*>|\$\{.*\}|changeme|example\w*|dummy\w*|test\w*)$")


def leaked_secrets(added: list[Added]) -> list[ReviewFinding]:
    found: list[ReviewFinding] = []
    for a in added:
        for pattern, what in _SECRETS:
            match = pattern.search(a.text)
            if match is None:
                continue
            if match.lastindex and match.lastindex >= 4 and _PLACEHOLDER.match(match.group(4)):
                continue
            fix = "remove it from the code, read it from the environment or a secret store"
            found.append(_finding(Severity.ERROR, a, "secret", f"{what} in the code", fix))
            break
    return found


_BARE_EXCEPT = re.compile(r"^\s*except\b[^:]*:\s*(pass|\.\.\.)?\s*(#.*)?$")
_PASS = re.compile(r"^\s*(pass|\.\.\.)\s*(#.*)?$")
_GO_IGNORED = re.compile(r"^\s*_\s*=\s*err\b")
_EMPTY_CATCH = re.compile(r"\bcatch\s*(\([^)]*\))?\s*\{\s*\}")
_OPEN_CATCH = re.compile(r"\bcatch\s*(\([^)]*\))?\s*\{\s*$")


def ignored_errors(added: list[Added]) -> list[ReviewFinding]:
    """`except: pass` (Python), `_ = err` (Go), an empty `catch {}` (JS, TS, Java)."""
    found: list[ReviewFinding] = []
    for i, a in enumerate(added):
        nxt = added[i + 1] if i + 1 < len(added) else None
        follows = nxt is not None and nxt.file == a.file and nxt.line == a.line + 1
        if a.file.endswith(".py") and (m := _BARE_EXCEPT.match(a.text)):
            if not (m.group(1) or (follows and nxt is not None and _PASS.match(nxt.text))):
                continue
            what, fix = "an exception is caught and ignored", "handle it, log it, or let it rise"
        elif a.file.endswith(".go") and _GO_IGNORED.match(a.text):
            what, fix = "an error is discarded (`_ = err`)", "return or handle the error"
        elif _EMPTY_CATCH.search(a.text) or (
            _OPEN_CATCH.search(a.text) and follows and nxt is not None and nxt.text.strip() == "}"
        ):
            what, fix = "an empty catch block ignores the error", "handle it or rethrow it"
        else:
            continue
        found.append(_finding(Severity.WARNING, a, "ignored-error", what, fix))
    return found
