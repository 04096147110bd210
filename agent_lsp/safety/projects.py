"""The project's own test and build commands — `pytest`, `python -m pytest`, `python -m
unittest`, `go test|vet|build`, `cargo test|build|check`, `npm test`, `yarn test`, `pnpm test`:
a `Risk.PROJECT` finding (they run project code, which the OS sandbox confines), provided
every option is one known to be safe and every test path lies in the workspace. Options that
load other code (`pytest -p plugin`, `-c`, `--rootdir`, `go test -exec`, `-toolexec`,
`cargo --config`, `npm --prefix`) run code: those are EXEC, outputs elsewhere OUTSIDE."""

from __future__ import annotations

import re

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.danger import danger
from agent_lsp.safety.grammar import check
from agent_lsp.safety.options import Parsed, spec
from agent_lsp.safety.projectspecs import CARGO, CARGO_GLOBAL, GO, LIBTEST, PYTEST, UNITTEST
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.shellwords import Word

__all__ = ["cargo", "go", "js_test", "pytest", "unittest"]

Args = list[Word]
_WARNINGS = re.compile(
    r"(error|ignore|always|default|module|once)(:[^:]*(:([A-Za-z]*Warning|Warning)(:.*)?)?)?"
)
_GO_RELATIVE = re.compile(r"\.{1,2}(/[^\s]*)?")
_JS_TEST = {"test", "t", "tst"}
_JS_OPTIONS = spec("-s --silent", "--if-present", "--loglevel =", "-q --quiet", "--color =")


def _runs(b: Builder, what: str, parsed: Parsed, ok: bool) -> None:
    """The PROJECT finding when everything was known, else EXEC; the folder it runs in."""
    if not (b.state.known and b.inside(b.cwd)):
        b.path(None, ".", "read")  # undecidable or outside
    if ok and parsed.clean and not any(g.opt.effect in ("x", "u") for g in parsed.given):
        b.add(Risk.PROJECT, f"runs the project's {what}")
    else:
        b.add(Risk.EXEC, f"runs the project's {what} with options not known to be safe")


def pytest(b: Builder, args: Args) -> None:
    parsed = check(b, "pytest", PYTEST, args)
    ok = True
    for g in parsed.get("-p"):
        if g.value is None or not g.value.value.startswith("no:"):
            b.add(Risk.EXEC, "pytest -p loads a plugin module")
            ok = False
    for g in parsed.get("--pythonwarnings"):
        if g.value is None or not _WARNINGS.fullmatch(g.value.value):
            b.add(Risk.EXEC, "pytest -W names a warning class in a module it imports")
            ok = False
    for g in parsed.get("--basetemp"):
        b.add(Risk.DESTRUCTIVE, "pytest --basetemp empties that folder first", b.token(g.index))
        if g.value is not None and g.value.static:
            where = g.value_index if g.value_index is not None else g.index
            danger(b, where, g.value, "pytest --basetemp")
    for i, w in parsed.operands:
        path = w.value.split("::", 1)[0]
        if not w.static:
            b.add(Risk.UNDECIDABLE, f"pytest {w.raw}: not known before running", b.token(i))
            ok = False
        elif path:
            b.path(b.token(i), path, "read")
    _runs(b, "tests", parsed, ok)


def unittest(b: Builder, args: Args) -> None:
    start = 0
    parsed = check(b, "unittest", UNITTEST, args)
    operands = list(parsed.operands)
    ok = True
    if operands and operands[0][1].value == "discover":
        start = 1
    for i, w in operands[start:]:
        name = w.value
        if not w.static:
            b.add(Risk.UNDECIDABLE, f"unittest {w.raw}: not known before running", b.token(i))
            ok = False
        elif "/" in name or name.endswith(".py"):
            b.path(b.token(i), name, "read")
        elif start:
            ok = False  # discover's pattern and top folder
        elif b.state.known and re.fullmatch(r"[A-Za-z_][\w.]*", name):
            top = name.split(".", 1)[0]
            if (b.cwd / top).is_dir() or (b.cwd / f"{top}.py").is_file():
                b.path(b.token(i), top, "read")
            else:
                b.add(Risk.EXEC, f"unittest imports {name}, not a module of the project")
                ok = False
        else:
            ok = False
    for g in parsed.get("--start-directory", "--top-level-directory"):
        if g.value is not None:
            b.path(b.token(g.index), g.value.value, "read")
    _runs(b, "tests", parsed, ok)


def go(b: Builder, sub: str, args: Args) -> None:
    parsed = check(b, f"go {sub}", GO[sub], args)
    ok = True
    for i, w in parsed.operands:
        if w.static and _GO_RELATIVE.fullmatch(w.value):
            folder = w.value.removesuffix("/...").removesuffix("...") or "."
            b.path(b.token(i), folder, "read")
        else:
            b.add(Risk.EXEC, f"go {sub} {w.raw}: a package by import path", b.token(i))
            ok = False
    _runs(b, "tests" if sub == "test" else "build", parsed, ok)


def cargo(b: Builder, args: Args) -> bool:
    """`cargo [globals] test|build|check ...`; False when it is some other command."""
    parsed = check(b, "cargo", CARGO_GLOBAL, args)
    operands = parsed.operands
    if not operands or operands[0][1].value not in ("test", "build", "check"):
        return False
    index, sub = operands[0][0], operands[0][1].value
    if args[0].value.startswith("+"):
        b.add(Risk.EXEC, "cargo +toolchain may install a toolchain")
    rest = args[index + 1 :]
    end = next((k for k, w in enumerate(rest) if w.value == "--"), len(rest))
    saved = b.offset
    b.offset += 1 + index
    inner = check(b, f"cargo {sub}", CARGO, rest[:end])
    ok = len(inner.operands) <= (1 if sub == "test" else 0)
    if end < len(rest):
        libtest = check(b, "cargo test --", LIBTEST, rest, end + 1)
        ok = ok and sub == "test" and libtest.clean
    b.offset = saved
    ok = ok and parsed.clean and not any(g.opt.effect in ("x", "u") for g in parsed.given)
    _runs(b, "tests" if sub == "test" else "build", inner, ok)
    return True


def js_test(b: Builder, name: str, args: Args) -> bool:
    """`npm test`, `npm run test`, `yarn test`, `pnpm test` ...; False for anything else."""
    words = [w.value for w in args]
    if words[:1] and words[0] in _JS_TEST:
        start = 1
    elif words[:2] in (["run", "test"], ["run-script", "test"]):
        start = 2
    else:
        return False
    saved = b.offset
    b.offset += start
    parsed = check(b, f"{name} test", _JS_OPTIONS, args[start:])
    b.offset = saved
    ok = True
    for i, w in parsed.operands:
        if w.value.startswith("-") or not w.static:
            b.add(Risk.EXEC, f"{name} test passes {w.raw} to the test script", b.token(start + i))
            ok = False
        else:
            b.path(b.token(start + i), w.value, "read")
    _runs(b, "tests", parsed, ok)
    return True
