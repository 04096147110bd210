"""The line work behind `edit_file`'s matcher (`agent_lsp.project.editing`): splitting and
trimming old_text, indentation drift and how new_text is re-indented, the closest regions of a
failed match, line labels. Pure: no I/O."""

from __future__ import annotations

import difflib
import heapq
import re
from collections import Counter
from collections.abc import Callable, Sequence

TAB_SIZES = (4, 8, 2)
SHOWN = 3  # candidates shown in an error
_TOKEN = re.compile(r"\w+|[^\w\s]")
Fix = Callable[[str], str]


def excerpt(file_lines: list[str], first: int, last: int) -> str:
    return "\n".join(f"{n}| {file_lines[n - 1]}" for n in range(first, last + 1))


def merge(window: list[str], old: list[str], new: list[str], fix: Fix) -> list[str]:
    """new_text's lines, where the lines it keeps from old_text are the file's own lines."""
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, False).get_opcodes():
        out.extend(window[i1:i2] if op == "equal" else [fix(line) for line in new[j1:j2]])
    return out


def drift(
    window: Sequence[str], old: Sequence[str], keep: Sequence[int]
) -> tuple[int, int, set[int]]:
    """(tab size, most common drift, lines off it): how much deeper old_text is indented."""
    rows = [k for k in keep if old[k].strip()]
    tabs = any("\t" in indent_of(window[k]) + indent_of(old[k]) for k in rows)
    best: tuple[int, int, set[int]] = (4, 0, set(rows))
    for size in TAB_SIZES if tabs else TAB_SIZES[:1]:
        drifts = [
            len(indent_of(old[k]).expandtabs(size)) - len(indent_of(window[k]).expandtabs(size))
            for k in rows
        ]
        common = Counter(drifts).most_common(1)[0][0] if drifts else 0
        outliers = {k for k, d in zip(rows, drifts, strict=True) if d != common}
        if len(outliers) < len(best[2]) or not rows:
            best = (size, common, outliers)
    return best


def adjust(
    file_lines: list[str], window: list[str], old: list[str], size: int, drift: int
) -> tuple[Fix, str, bool]:
    """How new_text's lines are fitted to the file (moved by -drift columns in its convention,
    trailing whitespace dropped when only old_text has it): the fix, its name, whether it moves."""
    pairs = [(indent_of(w), indent_of(o)) for w, o in zip(window, old, strict=True) if o.strip()]
    moves = drift != 0 or any(w != o for w, o in pairs)
    trims = any(o != o.rstrip() and w == w.rstrip() for w, o in zip(window, old, strict=True))
    known = {len(indent_of(x).expandtabs(size)): indent_of(x) for x in window if x.strip()}
    tabs = uses_tabs(window if any(w for w, _ in pairs) else file_lines, size)

    def fix(line: str) -> str:
        if moves:
            width = max(0, len(indent_of(line).expandtabs(size)) - drift)
            plain = "\t" * (width // size) + " " * (width % size) if tabs else " " * width
            line = known.get(width, plain) + line.lstrip(" \t") if line.strip() else ""
        return line.rstrip() if trims else line

    file_tabs, old_tabs = (any("\t" in pair[k] for pair in pairs) for k in (0, 1))
    style = "to tabs" if file_tabs > old_tabs else "to spaces" if old_tabs > file_tabs else ""
    moved = " ".join(filter(None, [f"by {-drift:+d} columns" if drift else "", style]))
    how = f"with indentation adjusted {moved}".rstrip() if moves else ""
    return (
        fix,
        ", ".join(filter(None, [how, "trailing whitespace dropped" if trims else ""])),
        moves,
    )


def closest(file_lines: list[str], old: str) -> str:
    """The regions most similar to old_text (ranked by shared tokens, then by difflib)."""
    want = core(old)[0] or [""]
    size, ranked = len(want), list[tuple[float, int]]()
    for _, i in heapq.nlargest(SHOWN * 4, token_scores(file_lines, want)):
        ranked.append((similarity("\n".join(file_lines[i : i + size]), "\n".join(want)), i))
    picked: list[tuple[float, int]] = []
    for ratio, i in sorted(ranked, key=lambda r: (-r[0], r[1])):
        if ratio >= 0.5 and len(picked) < SHOWN and all(abs(i - j) >= size for _, j in picked):
            picked.append((ratio, i))
    if not picked:
        return "Read the file again and copy the text exactly."
    ends = [(r, i + 1, min(i + size, len(file_lines))) for r, i in picked]
    (ratio, a, b), more = (
        ends[0],
        ", ".join(f"{lines_label(a, b)} ({r:.0%})" for r, a, b in ends[1:]),
    )
    tail = f"\nOther similar places: {more}." if more else ""
    shown = excerpt(file_lines, a, b)
    return f"The closest text ({ratio:.0%} similar) is at {lines_label(a, b)}:\n{shown}{tail}"


def token_scores(lines: list[str], want: list[str]) -> list[tuple[float, int]]:
    """Per window of len(want) lines, the Dice coefficient of its tokens and want's (sliding)."""
    goal, tokens = Counter(_TOKEN.findall(" ".join(want))), [_TOKEN.findall(x) for x in lines]
    size, held, shared, count, scores = len(want), Counter[str](), 0, 0, [(0.0, 0)]
    for i, row in enumerate(tokens):
        for t in row:
            shared, held[t] = shared + (held[t] < goal[t]), held[t] + 1
        count += len(row)
        if i >= size:
            for t in tokens[i - size]:
                held[t] -= 1
                shared -= held[t] < goal[t]
            count -= len(tokens[i - size])
        if i >= size - 1:
            scores.append((2 * shared / max(1, count + goal.total()), i - size + 1))
    return scores


def split_lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").split("\n")
    return lines[:-1] if text.endswith("\n") or not text else lines


def core(text: str) -> tuple[list[str], int, int]:
    """The lines of `text` without blank lines at the edges, and how many were dropped each side."""
    lines = split_lines(text)
    lead = next((k for k, line in enumerate(lines) if line.strip()), len(lines))
    trail = next((k for k, line in enumerate(reversed(lines)) if line.strip()), 0)
    return lines[lead : len(lines) - trail], lead, trail


def trim(lines: list[str], lead: int, trail: int) -> list[str]:
    """Drops up to `lead`/`trail` blank lines from the edges, as old_text's were dropped."""
    while lead and lines and not lines[0].strip():
        lines, lead = lines[1:], lead - 1
    while trail and lines and not lines[-1].strip():
        lines, trail = lines[:-1], trail - 1
    return lines


def to_eol(text: str, eol: str) -> str:
    lf = text.replace("\r\n", "\n")
    return lf if eol == "\n" else lf.replace("\n", eol)


def uses_tabs(lines: Sequence[str], size: int) -> bool:
    """Whether lines indent with tabs: the first one indented by a tab or a full level says."""
    for line in lines:
        indent = indent_of(line)
        if line.strip() and ("\t" in indent or len(indent) >= size):
            return "\t" in indent
    return False


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, False).ratio()


def short(line: str, limit: int = 80) -> str:
    line = line.strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


def lines_label(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"
