"""Which `tests.args` a source the user did not write may set (an untrusted repository's
`.agent-lsp/config.toml`, a model's improvement proposal).

A list of options known to be harmful cannot be complete: runners group short options
(`-vo log_file=/x` is `-v -o log_file=/x`), accept abbreviations and add options with every
release. So such a source may set only what is listed here as harmless — options that change
which tests run and how their results read, each with a value of the shape it needs — and test
ids or paths inside the workspace. One list serves every runner, so nothing is on it that
another runner reads otherwise: go test's single-dash options (`-run`, `-count`, `-race` …) are
clusters of short options to pytest (`-count` is `-c ount`, a config file; `-run X` is `-r un`
and the test path `X`) and to jest and vitest, so none is accepted from such a source. Anything
else (pytest `--basetemp`, which empties its folder
first; `--junitxml`; `-o cache_dir=`; jest and vitest `--outputFile`; go `-o`, `-coverprofile`;
an argument file `@args`; a path through `..`) is refused; the user's own settings may set
anything."""

from __future__ import annotations

import posixpath
import re

__all__ = ["unsafe_test_args"]

_WORD = re.compile(r"[A-Za-z0-9_.,:+-]+")
_NUMBER = re.compile(r"\d+%?|auto|logical")
_DURATION = re.compile(r"\d+(\.\d+)?(ns|us|ms|s|m|h)?")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def _text(value: str) -> bool:
    """A selection expression (`-k "not slow"`, `-run TestFoo/bar`): any printable text that is
    not itself an option."""
    return bool(value) and not value.startswith("-")


def _plugin_off(value: str) -> bool:
    return value.startswith("no:") and bool(_NAME.fullmatch(value[3:].replace(".", "_")))


def _inside(value: str) -> bool:
    return bool(value) and _path_problem(value) is None


def _report(value: str) -> bool:  # pytest-cov: a report kind printed, never a file (`html:dir`)
    return value in {"term", "term-missing", "term:skip-covered", "term-missing:skip-covered"}


# pytest's ini keys `-o key=value` may override: how tests are collected, marked and shown.
_INI_KEYS = frozenset(
    {"xfail_strict", "log_cli", "log_cli_level", "log_level", "filterwarnings", "markers"}
    | {"python_files", "python_classes", "python_functions", "console_output_style"}
    | {"asyncio_mode", "asyncio_default_fixture_loop_scope", "timeout", "timeout_method"}
    | {"empty_parameter_set_mark", "doctest_optionflags", "faulthandler_timeout", "minversion"}
    | {"verbosity_assertions", "verbosity_test_cases", "truncation_limit_lines"}
    | {"truncation_limit_chars", "usefixtures", "norecursedirs"}
)


def _ini(value: str) -> bool:
    """`key=value` for a listed key, with no path in it at all (to go test, `-o` names the
    file its test binary is written to)."""
    key, eq, setting = value.partition("=")
    return bool(eq) and key in _INI_KEYS and "/" not in setting and "\\" not in setting


# Options without a value (pytest, jest, vitest, go test), as written.
_FLAGS = frozenset(
    {"-v", "-vv", "-vvv", "-q", "-qq", "-x", "-s", "-l", "--verbose", "--quiet", "--exitfirst"}
    | {"--showlocals", "--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first"}
    | {"--sw", "--stepwise", "--sw-skip", "--stepwise-skip", "--strict-markers", "--strict"}
    | {"--strict-config", "--disable-warnings", "--disable-pytest-warnings", "--no-header"}
    | {"--no-summary", "--runxfail", "--full-trace", "--cov", "--cov-branch", "--no-cov"}
    | {"--doctest-modules", "--doctest-continue-on-failure", "--setup-show", "--co"}
    # jest and vitest
    | {"--runInBand", "-i", "--bail", "--ci", "--silent", "--passWithNoTests", "--no-cache"}
    | {"--detectOpenHandles", "--forceExit", "--noStackTrace", "--coverage", "--run"}
    | {"--no-file-parallelism", "--typecheck", "--allowOnly", "--globals", "--isolate"}
    | {"--no-isolate", "--expand", "--errorOnDeprecated", "--logHeapUsage", "--no-watchman"}
)
# Options with a value (`--opt value` or `--opt=value`), and the value each accepts.
_VALUED = {
    "-k": _text,
    "-m": _text,
    "--tb": _NAME.fullmatch,
    "-n": _NUMBER.fullmatch,
    "--numprocesses": _NUMBER.fullmatch,
    "--maxfail": _NUMBER.fullmatch,
    "--durations": _NUMBER.fullmatch,
    "--durations-min": _DURATION.fullmatch,
    "--timeout": _DURATION.fullmatch,
    "-p": _plugin_off,
    "-r": re.compile(r"[fEsxXpPaAwNR]+").fullmatch,
    "-o": _ini,
    "--override-ini": _ini,
    "--cov": _inside,
    "--cov-report": _report,
    "--capture": _NAME.fullmatch,
    "--color": _NAME.fullmatch,
    "--code-highlight": _NAME.fullmatch,
    "--import-mode": _NAME.fullmatch,
    "-W": _text,
    "--randomly-seed": _WORD.fullmatch,
    # jest and vitest
    "-t": _text,
    "--testNamePattern": _text,
    "--maxWorkers": _NUMBER.fullmatch,
    "--testTimeout": _NUMBER.fullmatch,
    "--reporter": _NAME.fullmatch,
    "--pool": _NAME.fullmatch,
    "--shard": re.compile(r"\d+/\d+").fullmatch,
    "--project": _NAME.fullmatch,
    "--seed": _WORD.fullmatch,
}
# pytest's grouped short flags (`-vx`) and the attached forms it reads (`-rA`, `-n2`).
_GROUPED = re.compile(r"-[vqxsl]{2,}")
_ATTACHED = {"-r": "-r", "-n": "-n"}


def _path_problem(text: str) -> str | None:
    """A path that leaves the workspace: absolute, from a home, or through `..`."""
    path = text.strip().strip("'\"").replace("\\", "/")
    if path.startswith(("/", "~")) or re.match(r"[A-Za-z]:", path):
        return "names a path outside the workspace"
    if posixpath.normpath(path).split("/")[0] == ".." or ".." in path.split("/"):
        return "names a path outside the workspace"
    return None


def _option_problem(args: list[str], i: int) -> tuple[str | None, int]:
    """Why the option at `args[i]` may not be set, and how many arguments it took."""
    arg = args[i]
    if arg in _FLAGS or _GROUPED.fullmatch(arg):
        return None, 1
    name, eq, value = arg.partition("=")
    if name in _VALUED:
        if not eq:
            if i + 1 >= len(args):
                return f"{arg!r} needs a value", 1
            value, taken = args[i + 1], 2
        else:
            taken = 1
        if _VALUED[name](value):
            return None, taken
        return f"{name} {value!r} is not a value agent-lsp accepts from this source", taken
    for short, key in _ATTACHED.items():
        if arg.startswith(short) and len(arg) > len(short) and _VALUED[key](arg[len(short) :]):
            return None, 1
    return (
        f"{arg!r} is not an option agent-lsp accepts from a source you did not write (it may "
        "write files or look elsewhere; set it in your own config)",
        1,
    )


def unsafe_test_args(args: list[str]) -> str | None:
    """Why `args` may not come from a source the user did not write (None: they may)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in arg):
            return f"{arg!r} holds control characters"
        if arg.startswith("@"):
            return f"{arg!r} reads arguments from a file"
        if arg.startswith("-"):
            problem, taken = _option_problem(args, i)
            if problem:
                return problem
            i += taken
            continue
        if arg.startswith("+") or not arg.strip():
            return f"{arg!r} is neither an option nor a test id or path"
        problem = _path_problem(arg.partition("::")[0].removesuffix("/..."))
        if problem:
            return f"{arg!r} {problem}"
        i += 1
    return None
