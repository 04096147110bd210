"""Benchmark `agent_lsp.project.editing.find_edit` on a corpus of realistic imperfect edits.

The corpus is built from real source files on this machine (the Python standard library and the
JavaScript of the global npm install), chosen deterministically with a fixed seed. Each case takes
a unique block of 2-8 lines, makes the intended edit (rename an identifier in the block, or insert
a line), then writes old_text/new_text the way models get them wrong:

  exact             the block as it is
  indent_deeper     old_text and new_text indented 2, 4 or 8 columns more than the file
  indent_shallower  ... 2 or 4 columns less
  tabs              the file is indented with tabs, old_text and new_text with spaces
  trailing_ws       trailing spaces in the file the model left out, or the reverse
  crlf              the file has CRLF line endings, old_text and new_text LF
  stale_line        one line the edit keeps is slightly different in the model's copy
  combined          CRLF file; old_text 4 columns deeper with trailing spaces; half with a
                    stale line too
  ambiguous         a block that occurs twice in the file (sometimes also drifted): must be refused

Outcomes: applied as intended (the result equals the intended file byte for byte), applied at the
intended place with other text, applied at a wrong place (must be 0), correctly refused (ambiguous
cases), wrongly refused (includes "already applied" answers). Every case applied as intended is
run a second time, which must answer "already applied".

Run: `.venv/bin/python bench/edit_corpus.py [--seed N] [--per-kind N]`; figures in
bench/edit_corpus.md, details in bench/results/edit_corpus.json.
"""

from __future__ import annotations

import argparse
import json
import keyword
import random
import re
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))

from agent_lsp.project.editing import EditFailure, find_edit  # noqa: E402

RESULTS_PATH = BENCH_DIR / "results" / "edit_corpus.json"
KINDS = (
    "exact",
    "indent_deeper",
    "indent_shallower",
    "tabs",
    "trailing_ws",
    "crlf",
    "stale_line",
    "combined",
    "ambiguous",
)
JS_ROOTS = (Path("/usr/lib/node_modules"), Path("/usr/local/lib/node_modules"))
IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{2,}\b")
JS_WORDS = {"function", "return", "const", "let", "var", "this", "new", "typeof", "async", "await"}
JS_WORDS |= {"true", "false", "null", "undefined", "else", "for", "while", "throw", "catch"}


@dataclass(frozen=True)
class Source:
    path: Path
    lines: list[str]

    @property
    def text(self) -> str:
        return "".join(self.lines)

    @property
    def comment(self) -> str:
        return "#" if self.path.suffix == ".py" else "//"


@dataclass
class Case:
    kind: str
    source: str
    variant: str
    block: tuple[int, int]  # 1-based first and last line of the intended place
    file: str
    old: str
    new: str
    expected: str | None  # None: must be refused


@dataclass
class Outcome:
    kind: str
    source: str
    variant: str
    block: tuple[int, int]
    outcome: str
    idempotent: bool | None
    match: str | None
    message: str
    ms: float


# --------------------------------------------------------------------------- sources


def load_sources(rng: random.Random, count: int) -> list[Source]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    py = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    js = sorted(p for root in JS_ROOTS if root.is_dir() for p in root.rglob("*.js"))
    rng.shuffle(py)
    rng.shuffle(js)
    picked: list[Source] = []
    for pool, share in ((py, count - count * 2 // 5 if js else count), (js, count * 2 // 5)):
        taken = 0
        for path in pool:
            if taken >= share:
                break
            source = _readable(path)
            if source is not None:
                picked.append(source)
                taken += 1
    return picked


def _readable(path: Path) -> Source | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = re.findall(r"[^\n]*\n", text)  # lines as find_edit counts them (only \n ends one)
    if not 40 <= len(lines) <= 4000 or "\r" in text or "\t" in text:
        return None
    if any(len(line) > 160 for line in lines) or not text.endswith("\n"):
        return None
    if any(line.rstrip("\n") != line.rstrip() for line in lines):
        return None  # no trailing whitespace of its own: the perturbations add it
    return Source(path, lines)


# --------------------------------------------------------------------------- cases


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def pick_block(
    src: Source, rng: random.Random, ok: Callable[[list[str]], bool]
) -> tuple[int, int] | None:
    """(start, size) of a block meeting `ok`, unique in the file, also ignoring indentation."""
    stripped = [line.strip() for line in src.lines]
    for _ in range(80):
        size = rng.randint(2, 8)
        start = rng.randrange(0, len(src.lines) - size)
        block = src.lines[start : start + size]
        if not block[0].strip() or not block[-1].strip():
            continue
        if sum(1 for line in block if line.strip()) < 2 or not ok(block):
            continue
        if src.text.count("".join(block)) != 1:
            continue
        key = stripped[start : start + size]
        if sum(stripped[i : i + size] == key for i in range(len(stripped) - size + 1)) != 1:
            continue
        return start, size
    return None


Edit = Callable[[list[str]], list[str]]
Keeps = Callable[[str], bool]


def intended_edit(src: Source, block: list[str], rng: random.Random) -> tuple[str, Edit, Keeps]:
    """A rename of an identifier of the block, or a comment line inserted, for any copy of it;
    and which lines the edit leaves as they are."""
    words = {
        w
        for line in block
        for w in IDENT.findall(line)
        if not keyword.iskeyword(w) and w not in JS_WORDS
    }
    if words and rng.random() < 0.6:
        name = rng.choice(sorted(words))
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        return (
            "rename",
            lambda lines: [pattern.sub(name + "_v2", line) for line in lines],
            lambda line: pattern.search(line) is None,
        )
    at = rng.randint(1, len(block))

    def insert(lines: list[str]) -> list[str]:
        above = next(line for line in reversed(lines[:at]) if line.strip())
        indent = above[: len(above) - len(above.lstrip(" \t"))]
        return [*lines[:at], f"{indent}{src.comment} checked by the edit corpus\n", *lines[at:]]

    return "insert", insert, lambda line: True


def shift(lines: Sequence[str], by: int) -> list[str]:
    return [
        line if not line.strip() else " " * by + line if by >= 0 else line[-by:] for line in lines
    ]


def tabify(line: str) -> str:
    width = indent_of(line)
    return "\t" * (width // 4) + " " * (width % 4) + line[width:] if line.strip() else line


def stale(line: str, rng: random.Random) -> str | None:
    """The line as a model might misremember it: one small change."""
    body = line.rstrip("\n")
    digits = [m.start() for m in re.finditer(r"\d", body)]
    words = [m for m in IDENT.finditer(body) if len(m.group()) >= 4]
    options: list[str] = []
    if digits:
        at = rng.choice(digits)
        options.append(body[:at] + str((int(body[at]) + 1) % 10) + body[at + 1 :])
    if words:
        m = rng.choice(words)
        options.append(body[: m.end() - 1] + body[m.end() :])  # last letter dropped
        options.append(body[: m.start()] + m.group().swapcase()[0] + body[m.start() + 1 :])
    if ", " in body:
        options.append(body.replace(", ", ",", 1))
    if " = " in body:
        options.append(body.replace(" = ", "=", 1))
    options = [o for o in options if o.strip() != body.strip()]
    return rng.choice(options) + "\n" if options else None


def _with_stale(view: list[str], keeps: Keeps, rng: random.Random) -> list[str] | None:
    """`view` with one line the edit keeps slightly changed, or None."""
    kept = [k for k, line in enumerate(view) if line.strip() and keeps(line)]
    rng.shuffle(kept)
    for k in kept:
        wrong = stale(view[k], rng)
        if wrong is not None and keeps(wrong):
            return [*view[:k], wrong, *view[k + 1 :]]
    return None


NEEDS: dict[str, Callable[[list[str]], bool]] = {
    "indent_shallower": lambda b: all(indent_of(x) >= 4 for x in b if x.strip()),
    "tabs": lambda b: any(indent_of(x) >= 4 for x in b if x.strip()),
}


def make_case(kind: str, src: Source, rng: random.Random) -> Case | None:
    if kind == "ambiguous":
        return ambiguous_case(src, rng)
    found = pick_block(src, rng, NEEDS.get(kind, lambda b: True))
    if found is None:
        return None
    start, size = found
    lines = list(src.lines)
    block = lines[start : start + size]
    variant, edit, keeps = intended_edit(src, block, rng)
    if edit(block) == block:
        return None
    old_view = list(block)
    file_lines = [tabify(line) for line in lines] if kind == "tabs" else list(lines)
    if kind in ("indent_deeper", "indent_shallower"):
        least = min(indent_of(x) for x in block if x.strip())
        by = rng.choice([2, 4, 4, 8]) if kind == "indent_deeper" else -rng.choice([2, 4, 4])
        if least + by < 0:
            return None
        variant += f"/{by:+d}"
        old_view = shift(block, by)
    elif kind == "combined":  # CRLF file, old_text 4 columns deeper with trailing spaces
        old_view = [x.rstrip("\n") + " \n" if x.strip() else x for x in shift(block, 4)]
        if rng.random() < 0.5:
            variant += "/stale"
            old_view = _with_stale(old_view, keeps, rng)
            if old_view is None:
                return None
    elif kind == "trailing_ws" and rng.random() < 0.5:
        variant += "/file_has_ws"  # trailing spaces in the file that the model does not copy
        kept = [k for k in range(size) if block[k].strip() and keeps(block[k])]
        if not kept:
            return None
        for k in rng.sample(kept, k=min(len(kept), rng.randint(1, 3))):
            file_lines[start + k] = block[k].rstrip("\n") + "  \n"
    elif kind == "trailing_ws":
        variant += "/old_has_ws"  # the model's copy has trailing spaces the file does not
        old_view = [line.rstrip("\n") + " \n" if line.strip() else line for line in block]
    elif kind == "stale_line":
        stale_view = _with_stale(old_view, keeps, rng)
        if stale_view is None:
            return None
        old_view = stale_view
    file_text = "".join(file_lines)
    file_lines[start : start + size] = edit(file_lines[start : start + size])
    expected = "".join(file_lines)
    old, new = "".join(old_view), "".join(edit(old_view))
    if kind in ("crlf", "combined"):
        file_text, expected = file_text.replace("\n", "\r\n"), expected.replace("\n", "\r\n")
    place = (start + 1, start + size)
    return Case(kind, str(src.path), variant, place, file_text, old, new, expected)


def ambiguous_case(src: Source, rng: random.Random) -> Case | None:
    """A block of real code whose whole lines occur at least twice in the file."""
    lines, text = src.lines, src.text
    starts = list(range(len(lines) - 1))
    rng.shuffle(starts)
    for start in starts:
        for size in range(2, 9):
            block = lines[start : start + size]
            core = [line.strip() for line in block if line.strip()]
            if len(core) < 2 or not block[-1].strip() or not block[0].strip():
                continue
            if len("".join(core)) < 30 or text.count("".join(block)) < 2:
                continue
            twins = [i for i in range(len(lines) - size + 1) if lines[i : i + size] == block]
            if len(twins) < 2:
                continue
            variant, edit, _ = intended_edit(src, block, rng)
            old_view = block
            if rng.random() < 0.5:
                variant, old_view = variant + "/drifted", shift(block, 4)
            old, new = "".join(old_view), "".join(edit(old_view))
            if old_view is not block and old in text:
                continue  # the drifted copy is real code elsewhere: not ambiguous
            place = (start + 1, start + size)
            return Case("ambiguous", str(src.path), variant, place, text, old, new, None)
    return None


# --------------------------------------------------------------------------- running


def judge(case: Case) -> Outcome:
    began = time.perf_counter()
    result = find_edit(case.file, case.old, case.new, "the file")
    ms = (time.perf_counter() - began) * 1000
    match = None if isinstance(result, EditFailure) else result.kind.value
    idempotent: bool | None = None
    if isinstance(result, EditFailure):
        outcome = "refused_ok" if case.expected is None else "wrongly_refused"
        message = result.message
    elif result.already_applied:
        outcome, message = "wrongly_refused", f"already applied: {result.note}"
    else:
        message = result.note
        first, last = case.block
        here = result.start_line <= last and first <= result.end_line
        if case.expected is None or not here:
            outcome = "wrong_place"
        elif result.text == case.expected:
            outcome = "applied_ok"
            again = find_edit(result.text, case.old, case.new)
            idempotent = not isinstance(again, EditFailure) and again.already_applied
        else:
            outcome = "other_text"
    return Outcome(
        case.kind, case.source, case.variant, case.block, outcome, idempotent, match, message, ms
    )


def build(seed: int, per_kind: int) -> list[Case]:
    rng = random.Random(seed)
    sources = load_sources(rng, 400)
    cases: list[Case] = []
    for kind in KINDS:
        made, attempts = 0, 0
        while made < per_kind and attempts < per_kind * 50:
            attempts += 1
            case = make_case(kind, sources[rng.randrange(len(sources))], rng)
            if case is not None:
                cases.append(case)
                made += 1
    return cases


COLUMNS = ("applied_ok", "other_text", "wrong_place", "refused_ok", "wrongly_refused")


def table(outcomes: list[Outcome]) -> tuple[str, dict[str, object]]:
    rows = ["| kind | cases | " + " | ".join(COLUMNS) + " | again: no change |"]
    rows.append("|" + "---|" * (len(COLUMNS) + 3))
    summary: dict[str, object] = {}
    for kind in (*KINDS, "total"):
        mine = [o for o in outcomes if kind in ("total", o.kind)]
        counts = Counter(o.outcome for o in mine)
        again = [o.idempotent for o in mine if o.idempotent is not None]
        cells = [str(counts[c]) for c in COLUMNS]
        rows.append(
            f"| {kind} | {len(mine)} | " + " | ".join(cells) + f" | {sum(again)}/{len(again)} |"
        )
        summary[kind] = {"cases": len(mine), **{c: counts[c] for c in COLUMNS}}
    plain = [o for o in outcomes if o.kind != "ambiguous"]
    rate = sum(o.outcome == "applied_ok" for o in plain) / max(1, len(plain))
    wrong = sum(o.outcome == "wrong_place" for o in outcomes)
    times = sorted(o.ms for o in outcomes)
    footer = (
        f"\napplied as intended among non-ambiguous cases: {rate:.1%} "
        f"({sum(o.outcome == 'applied_ok' for o in plain)}/{len(plain)}); wrong place: {wrong}; "
        f"find_edit time median {times[len(times) // 2]:.2f} ms, max {times[-1]:.1f} ms"
    )
    summary["intended_rate"] = rate
    summary["wrong_place"] = wrong
    return "\n".join(rows) + footer, summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seed", type=int, default=20240601, help="corpus seed")
    parser.add_argument("--per-kind", type=int, default=40, help="cases per perturbation kind")
    parser.add_argument("--output", type=Path, default=RESULTS_PATH, help="JSON results file")
    parser.add_argument("--show", action="store_true", help="print every case not applied ok")
    args = parser.parse_args(argv)
    cases = build(args.seed, args.per_kind)
    outcomes = [judge(case) for case in cases]
    text, summary = table(outcomes)
    print(text)
    if args.show:
        for o in outcomes:
            if o.outcome not in ("applied_ok", "refused_ok"):
                print(f"\n== {o.kind} {o.variant} {o.outcome} {o.source}:{o.block}\n{o.message}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "seed": args.seed,
        "per_kind": args.per_kind,
        "python": sys.version.split()[0],
        "summary": summary,
        "cases": [asdict(o) for o in outcomes],
    }
    args.output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0 if summary["wrong_place"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
