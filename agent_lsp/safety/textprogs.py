"""Text tools whose scripts may write files or run commands: `sed` (its script read by
`sedscript`), `awk` (any way a program can run commands, write, or read other files asks) and
`jq` (the environment is a secret)."""

from __future__ import annotations

import re
from collections.abc import Callable

from agent_lsp.safety.builder import Builder
from agent_lsp.safety.grammar import check
from agent_lsp.safety.options import spec
from agent_lsp.safety.risk import Risk
from agent_lsp.safety.sedscript import effects
from agent_lsp.safety.shellwords import Word

__all__ = ["TEXT_HANDLERS"]

Args = list[Word]
SED = spec(
    "-n --quiet --silent", "--debug", "-e --expression =", "-f --file =r", "--follow-symlinks",
    "-i --in-place =?", "-l --line-length =", "--posix", "-E -r --regexp-extended",
    "-s --separate", "--sandbox", "-u --unbuffered", "-z --null-data", "--help", "--version",
)  # fmt: skip
AWK = spec(
    "-F --field-separator =", "-v --assign =", "-e --source =", "-b --characters-as-bytes",
    "-c --traditional", "-C --copyright", "-h --help", "-k --csv", "-M --bignum",
    "-N --use-lc-numeric", "-n --non-decimal-data", "-O --optimize", "-P --posix",
    "-r --re-interval", "-s --no-optimize", "-S --sandbox", "-t --lint-old", "-V --version",
    "-L --lint =?", "-f --file =x", "-E --exec =x", "-i --include =x", "-l --load =x",
    "-d --dump-variables =?w", "-o --pretty-print =?w", "-p --profile =?w", "-D --debug =?x",
    "-W =", "-g --gen-pot", "-I --trace", permute=False,
)  # fmt: skip
_AWK_UNSAFE = re.compile(r"system|\||>|getline|close|fflush|ENVIRON|PROCINFO|ARGV|ARGC|@|/inet")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_JQ_FLAGS = frozenset("nrjacCMSesR")
_JQ_LONG_FLAGS = frozenset(
    {"--null-input", "--raw-output", "--join-output", "--ascii-output", "--compact-output"}
    | {"--color-output", "--monochrome-output", "--sort-keys", "--exit-status", "--slurp"}
    | {"--raw-input", "--tab", "--stream", "--stream-errors", "--seq", "--unbuffered"}
    | {"--raw-output0", "--help", "--version", "-h", "-V", "--build-configuration"}
)
_JQ_ENV = re.compile(r"\benv\b|\$ENV|\$__loc__|input_filename|\$__prog")


def sed(b: Builder, name: str, args: Args) -> None:
    parsed = check(b, name, SED, args)
    operands = list(parsed.operands)
    scripts = [g.value for g in parsed.get("--expression") if g.value is not None]
    if parsed.has("--file"):
        b.add(Risk.EXEC, "sed -f runs a script file not read here")
    elif not scripts and operands:
        scripts.append(operands.pop(0)[1])
    if any(not w.static for w in scripts):
        b.add(Risk.UNDECIDABLE, "the sed script is not known before running")
    else:
        _sed_effects(b, "\n".join(w.value for w in scripts))
    in_place = parsed.has("--in-place")
    for i, w in operands:
        b.arg(i, w, "write" if in_place else "read")


def _sed_effects(b: Builder, script: str) -> None:
    for kind, detail in effects(script):
        if kind == "exec":
            b.add(Risk.EXEC, f"the sed script runs commands ({detail[:40]})")
        elif kind in ("read", "write"):
            if detail.strip():
                b.path(None, detail, kind)
            else:
                b.add(Risk.UNDECIDABLE, f"sed {kind}s a file with no name")
        elif kind == "undecidable":
            b.add(Risk.UNDECIDABLE, f"sed script: {detail}")
        else:
            b.add(Risk.EXEC, f"sed script: {detail}")


def awk(b: Builder, name: str, args: Args) -> None:
    parsed = check(b, name, AWK, args)
    for g in parsed.get("-W"):
        if g.value is None or g.value.value not in ("version", "v"):
            b.add(Risk.EXEC, f"{name} -W {g.value.raw if g.value else ''} is not known to be safe")
    operands = list(parsed.operands)
    programs = [g.value for g in parsed.get("--source") if g.value is not None]
    if not programs and not parsed.has("--file", "--exec") and operands:
        programs.append(operands.pop(0)[1])
    for program in programs:
        if not program.static:
            b.add(Risk.UNDECIDABLE, "the awk program is not known before running")
        elif match := _AWK_UNSAFE.search(program.value):
            b.add(Risk.EXEC, f"the awk program may run, write or read more ({match.group()})")
    for g in parsed.get("--assign"):
        if g.value is not None and g.value.variable:
            b.add(Risk.UNDECIDABLE, "awk -v sets a variable from a variable")
    for i, w in operands:
        if _ASSIGNMENT.match(w.value):
            if w.variable:
                b.add(Risk.UNDECIDABLE, f"{w.raw}: an assignment from a variable", b.token(i))
        else:
            b.arg(i, w, "read")


def jq(b: Builder, name: str, args: Args) -> None:
    i, program, strings = 0, None, False
    files: list[tuple[int, Word]] = []
    while i < len(args):
        w = args[i]
        v = w.value
        if v in ("--arg", "--argjson"):
            if any(a.variable for a in args[i + 1 : i + 3]):
                b.add(Risk.UNDECIDABLE, f"jq {v} passes a variable that may hold a secret")
            i += 3
            continue
        if v in ("--slurpfile", "--rawfile"):
            if i + 2 < len(args):
                b.arg(i + 2, args[i + 2], "read")
            i += 3
            continue
        if v == "--indent" or v.startswith("-L") or v in ("-f", "--from-file"):
            if v != "--indent":
                b.add(Risk.EXEC, f"jq {v} reads jq modules or programs from files")
                program = program or Word("", "")  # operands are all input files
                if v in ("-f", "--from-file") and i + 1 < len(args):
                    b.arg(i + 1, args[i + 1], "read")
            i += 2 if v in ("--indent", "-L", "-f", "--from-file") else 1
            continue
        if v in ("--args", "--jsonargs"):
            strings = True
        elif v in _JQ_LONG_FLAGS or (v[:1] == "-" and v[1:2] != "-" and set(v[1:]) <= _JQ_FLAGS):
            pass
        elif v.startswith("-") and v != "-":
            b.add(Risk.EXEC, f"jq {v}: an option not known to be safe", b.token(i))
        elif program is None:
            program = w
        elif not strings:
            files.append((i, w))
        i += 1
    if program is not None:
        if not program.static:
            b.add(Risk.UNDECIDABLE, "the jq program is not known before running")
        elif _JQ_ENV.search(program.value):
            b.add(Risk.SECRET, "the jq program reads the environment")
        elif re.search(r"\b(import|include)\b", program.value):
            b.add(Risk.EXEC, "the jq program loads modules")
    for i, w in files:
        b.arg(i, w, "read")


TEXT_HANDLERS: dict[str, Callable[[Builder, str, Args], None]] = {
    "sed": sed,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), awk),
    "jq": jq,
}
