"""Which `tests.args` a source the user did not write may set (an untrusted repository's
`.agent-lsp/config.toml`, a model's improvement proposal): arguments that change what the tests
do, never ones that name a path outside the workspace or make the runner write files (pytest
`--basetemp`, which empties the folder first; `--junitxml`; `-o cache_dir=`; jest and vitest
`--outputFile`; go `-o`, `-coverprofile` …), nor an argument file (`@args`) or `-o addopts=`
that could hold such options."""

from __future__ import annotations

import re

__all__ = ["unsafe_test_args"]

# Option names (lower case, without dashes and underscores, so `--output-file`, `--outputFile`
# and `-outputfile` are one) that write files or move where the runner looks or writes.
_WRITES = frozenset(
    # pytest and its common plugins
    {"basetemp", "junitxml", "resultlog", "reportlog", "rootdir", "confcutdir", "logfile"}
    | {"debug", "html", "jsonreportfile", "covreport", "pastebin", "cachedir", "configfile"}
    | {"c", "inifile"}
    # jest, vitest
    | {"outputfile", "cachedirectory", "coveragedirectory", "coveragereportsdirectory"}
    | {"config", "roots", "root", "dir", "cachedir", "json"}
    # go test and go build
    | {"coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile", "trace"}
    | {"outputdir", "exec", "toolexec", "overlay", "modfile", "pkgdir", "fuzzcachedir"}
)
# `-o`/`--override-ini` keys of pytest that name paths or smuggle options in.
_INI_KEYS = frozenset(
    {"cache_dir", "log_file", "addopts", "testpaths", "pythonpath", "rootdir", "confcutdir"}
    | {"basetemp", "junit_logging", "required_plugins", "junit_suite_name"}
)
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTDOT = re.compile(r"(^|[/\\])\.\.([/\\]|$)")


def _norm(name: str) -> str:
    return name.lstrip("-").split("=", 1)[0].lower().replace("-", "").replace("_", "")


def _outside(text: str) -> bool:
    """A path that leaves the folder it is read from: absolute, from a home, or through `..`."""
    text = text.strip().strip("'\"")
    if ":" in text and not text.startswith(("/", "~")):  # html:dir, junit:path, a drive
        text = text.split(":", 1)[1] if len(text.split(":", 1)[0]) > 1 else text[2:]
    return text.startswith(("/", "\\", "~")) or bool(_DOTDOT.search(text))


def _writes(arg: str) -> bool:
    if not arg.startswith("-") or arg in ("-", "--"):
        return False
    name = _norm(arg)
    if name in _WRITES:
        return True
    # vitest's dotted forms: --outputFile.json=…, --coverage.reportsDirectory=…, --cache.dir
    # (pytest, jest and go accept no abbreviations: the names are matched whole)
    return "." in name and name.split(".", 1)[0] in {"outputfile", "coverage", "cache"}


def unsafe_test_args(args: list[str]) -> str | None:
    """Why `args` may not come from a source the user did not write (None: they may)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("@"):
            return f"{arg!r} reads arguments from a file"
        if _writes(arg):
            return f"{arg!r} makes the test runner write files or look elsewhere"
        if arg in ("-o", "--override-ini") or arg.startswith(("-o", "--override-ini=")):
            if arg in ("-o", "--override-ini"):  # pytest's ini override, or go's output file
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            else:
                value = arg.split("=", 1)[1] if arg.startswith("--") else arg[2:]
            key, _, setting = value.partition("=")
            if not _KEY.fullmatch(key) or key in _INI_KEYS or _outside(setting):
                shown = arg if value in arg else f"{arg} {value}"
                return f"{shown!r} writes a file or moves where the runner looks"
        elif _outside(arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg):
            return f"{arg!r} names a path outside the workspace"
        i += 1
    return None
