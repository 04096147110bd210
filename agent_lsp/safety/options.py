"""Command-line grammars: the options a program is known to accept and how one argv splits into
options and operands under such a grammar, the way GNU `getopt_long` does it — clustered short
options (`-rn`), attached values (`-n5`, `-oFILE`, `--lines=5`), separate values (`-n 5`),
options after operands, `--` ending them, and unique prefixes of long options (`--expr` is
`--expression`). Pure: no paths, no findings (`grammar` applies a parse to a part).

A grammar lists every option as one entry: its names, then what its value is::

    spec("-n --lines =", "-q --quiet --silent", "-o --output =w", "--follow =?")

`=` a value (opaque), `=?` an optional value (attached only), `=r` a file read, `=t` a folder
read recursively, `=m` a path whose metadata is read, `=w` a file written, `=x` a program or
code run, `=u` a value that makes the command undecidable (a list of file names to read). A
flag may carry `!x` (it runs a program) or `!w` (it writes files nobody names)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from agent_lsp.safety.shellwords import UNKNOWN, Word

__all__ = [
    "NONE",
    "OPTIONAL",
    "REQUIRED",
    "Given",
    "Opt",
    "Parsed",
    "Spec",
    "merge",
    "parse_args",
    "spec",
    "value_part",
]

NONE, REQUIRED, OPTIONAL = 0, 1, 2
_NUMERIC = re.compile(r"-[0-9]+")


@dataclass(frozen=True)
class Opt:
    name: str  # canonical: the first long name, else the short one ("--lines", "-v")
    arg: int  # NONE, REQUIRED or OPTIONAL
    effect: str = ""  # "", "r", "t", "m", "w", "x", "u" (see the module docstring)


@dataclass(frozen=True)
class Spec:
    short: Mapping[str, Opt]
    long: Mapping[str, Opt]
    numeric: bool = False  # `-5` is a count (head, tail, grep context)
    permute: bool = True  # options may follow operands (GNU); False: the first operand ends them
    single_dash_long: bool = False  # `-name` is a long option (go, find-like); no clusters
    abbrev: bool = True  # unique prefixes of long options are accepted
    cluster_values: bool = True  # `-n5`; False: a value-taking short option ends its cluster
    #   and takes the next word (tree: `-Lo 2 out` is -L 2 -o out)
    cluster: bool = True  # `-rn`; False: one option a word (xxd)


@dataclass(frozen=True)
class Given:
    """One option found in the argv."""

    opt: Opt
    text: str  # as written: "-n", "--lin", "-x" (one letter of a cluster)
    index: int  # argv index of the word holding the option
    value: Word | None = None
    value_index: int | None = None  # index of a separate value word (None: attached or none)
    abbrev: bool = False  # written as a prefix of its long name

    @property
    def name(self) -> str:
        return self.opt.name


@dataclass
class Parsed:
    given: list[Given] = field(default_factory=list[Given])
    operands: list[tuple[int, Word]] = field(default_factory=list[tuple[int, Word]])
    unknown: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])
    ambiguous: list[tuple[int, str]] = field(default_factory=list[tuple[int, str]])
    dynamic: list[tuple[int, Word]] = field(default_factory=list[tuple[int, Word]])
    end: int | None = None  # index of `--`, if any

    def has(self, *names: str) -> bool:
        return any(g.name in names for g in self.given)

    def get(self, *names: str) -> list[Given]:
        return [g for g in self.given if g.name in names]

    @property
    def clean(self) -> bool:
        """Every option known, spelled out in full and static."""
        return not (
            self.unknown or self.ambiguous or self.dynamic or any(g.abbrev for g in self.given)
        )


def spec(*entries: str, **flags: bool) -> Spec:
    """A grammar from entries like "-n --lines =" (see the module docstring)."""
    short: dict[str, Opt] = {}
    long: dict[str, Opt] = {}
    for entry in entries:
        names = entry.split()
        marker = names[-1] if names[-1][0] in "=!" else ""
        if marker:
            names = names[:-1]
        arg = NONE
        effect = ""
        if marker.startswith("="):
            rest = marker[1:]
            arg = OPTIONAL if rest.startswith("?") else REQUIRED
            effect = rest.lstrip("?")
        elif marker.startswith("!"):
            effect = marker[1:]
        canonical = next((n for n in names if n.startswith("--")), names[0])
        opt = Opt(canonical, arg, effect)
        for n in names:
            if n.startswith("--") or flags.get("single_dash_long"):
                long[n.lstrip("-")] = opt
            else:
                short[n[1:]] = opt
    return Spec(short, long, **flags)


def merge(base: Spec, *entries: str) -> Spec:
    """`base` with more entries (same flags)."""
    extra = spec(*entries, single_dash_long=base.single_dash_long)
    return Spec(
        {**base.short, **extra.short},
        {**base.long, **extra.long},
        base.numeric,
        base.permute,
        base.single_dash_long,
        base.abbrev,
        base.cluster_values,
        base.cluster,
    )


def _candidates(sp: Spec, name: str) -> list[tuple[str, Opt]]:
    exact = sp.long.get(name)
    if exact is not None:
        return [(name, exact)]
    if not sp.abbrev or not name:
        return []
    seen: dict[Opt, str] = {}
    for full, opt in sp.long.items():
        if full.startswith(name):
            seen.setdefault(opt, full)
    return [(full, opt) for opt, full in seen.items()]


def _long(sp: Spec, args: list[Word], i: int, body: str, out: Parsed) -> int:
    """`--name[=value]` (or `-name` for single-dash grammars) at args[i]; the next index."""
    w = args[i]
    name, eq, attached = body.partition("=")
    found = _candidates(sp, name)
    if not found:
        out.unknown.append((i, w.value))
        return i + 1
    abbrev = found[0][0] != name
    if len(found) > 1:
        out.ambiguous.append((i, w.value))
    arities = {opt.arg for _, opt in found}
    takes_next = not eq and arities == {REQUIRED}
    value: Word | None = None
    value_index: int | None = None
    if eq:
        value = value_part(w, len(w.value) - len(attached))
    elif takes_next and i + 1 < len(args):
        value, value_index = args[i + 1], i + 1
    for _, opt in found:
        if eq and opt.arg == NONE:
            out.unknown.append((i, w.value))  # --flag=value: getopt refuses it
        out.given.append(Given(opt, w.value.partition("=")[0], i, value, value_index, abbrev))
    return i + (2 if takes_next else 1)


def value_part(w: Word, offset: int) -> Word:
    """The part of a word from `offset` on (the value attached to an option, `of=` of dd):
    keeps what is known of its expansion (option names hold no quotes or wildcards)."""
    text = w.value[offset:]
    return Word(
        w.raw,
        text,
        dynamic=UNKNOWN in text,
        glob=w.glob,
        brace=w.brace,
        pattern=w.pattern[offset:] if w.pattern else text,
        variable=w.variable and UNKNOWN in text,
        pwd=w.pwd,
    )


def _short(sp: Spec, args: list[Word], i: int, out: Parsed) -> int:
    w = args[i]
    letters = w.value[1:]
    j = 0
    while j < len(letters):
        c = letters[j]
        opt = sp.short.get(c)
        if opt is None:
            out.unknown.append((i, "-" + letters[j:]))
            return i + 1
        rest = letters[j + 1 :]
        if opt.arg == NONE and rest and not sp.cluster:
            out.unknown.append((i, w.value))
            return i + 1
        if opt.arg == NONE:
            out.given.append(Given(opt, "-" + c, i))
            j += 1
            continue
        if rest and not sp.cluster_values:
            out.unknown.append((i, w.value))
            return i + 1
        if rest:
            out.given.append(Given(opt, "-" + c, i, value_part(w, j + 2)))
            return i + 1
        if opt.arg == REQUIRED and i + 1 < len(args):
            out.given.append(Given(opt, "-" + c, i, args[i + 1], i + 1))
            return i + 2
        out.given.append(Given(opt, "-" + c, i))
        return i + 1
    return i + 1


def parse_args(sp: Spec, args: list[Word], start: int = 0) -> Parsed:
    """Split `args[start:]` by the grammar; indexes are into `args`."""
    out = Parsed()
    i = start
    only_operands = False
    while i < len(args):
        w = args[i]
        v = w.value
        if only_operands or v == "-" or not v.startswith("-"):
            if v.startswith(UNKNOWN) and not only_operands:
                out.dynamic.append((i, w))  # `$X` may well be an option
            out.operands.append((i, w))
            if not sp.permute:
                only_operands = True
            i += 1
        elif v == "--":
            out.end = i
            only_operands = True
            i += 1
        elif UNKNOWN in v.split("=", 1)[0]:
            out.dynamic.append((i, w))
            i += 1
        elif v.startswith("--"):
            i = _long(sp, args, i, v[2:], out)
        elif sp.single_dash_long:
            i = _long(sp, args, i, v[1:], out)
        elif sp.numeric and _NUMERIC.fullmatch(v):
            out.given.append(Given(Opt("-NUM", NONE), v, i))
            i += 1
        else:
            i = _short(sp, args, i, out)
    return out
