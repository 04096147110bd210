"""Where an `edit_file` edit lands: the exact text first, then tolerant matches that say so.

Rules, in order; the first rule that finds old_text decides, and several places are an error:
1. exact: old_text occurs in the file;
2. line endings: old_text with the file's line endings (CRLF file and LF old_text, or the reverse);
3. trailing whitespace: whole lines equal but for trailing whitespace;
4. indentation: whole lines equal but for one indentation offset or tabs for spaces; new_text is
   re-indented the same way, in the file's convention;
5. close: one window of as many lines where at most one line in four differs a little (ratio
   >= 0.9 overall) and no other place comes near (>= 0.85 and within 0.1 of it): rivals are an
   error listing them, never a guess.
Rules 3-5 ignore blank lines at the edges of old_text; there the lines new_text keeps from old_text
keep the file's text (its whitespace, a stale line's real text), and trailing whitespace that
old_text has and the file has not is dropped from new_text. new_text gets the file's line endings.
When new_text is already where old_text matches, or old_text is gone and new_text is found once,
the edit is already applied. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from agent_lsp.project import edit_text as tx

CLOSE_RATIO = 0.9  # a close match must be this similar to old_text,
RIVAL_RATIO = 0.85  # with no other place this similar
RIVAL_MARGIN = 0.1  # and within this margin of it,
LINE_RATIO = 0.75  # and each line that differs must still be this similar


class MatchKind(StrEnum):
    EXACT = "exact"
    LINE_ENDINGS = "line_endings"
    TRAILING_WHITESPACE = "trailing_whitespace"
    INDENTATION = "indentation"
    CLOSE = "close"


class FailureKind(StrEnum):
    EMPTY = "empty"
    NOT_FOUND = "not_found"
    AMBIGUOUS = "ambiguous"


@dataclass(frozen=True)
class EditMatch:
    """The file's text after the edit (the same text when the edit is already applied)."""

    text: str
    kind: MatchKind
    start_line: int  # 1-based lines of the matched region in the original text
    end_line: int
    new_end_line: int  # last line of the replacement in `text`
    already_applied: bool = False
    note: str = ""  # what a tolerant match did, with line numbers; "" for an exact edit


@dataclass(frozen=True)
class EditFailure:
    kind: FailureKind
    message: str
    candidates: tuple[tuple[int, int], ...] = ()  # 1-based first and last lines


@dataclass(frozen=True)
class _Hit:
    start: int  # character span in the file
    end: int
    replacement: str
    kind: MatchKind
    how: str = ""  # e.g. "ignoring trailing whitespace"
    ratio: float = 1.0
    reindented: bool = False
    stale: frozenset[int] = frozenset()  # lines of a close match that differ


class _Place(NamedTuple):
    ratio: float
    line: int  # 0-based first line of the window
    notes: list[str]  # what differs, for the note
    stale: frozenset[int]  # the lines that differ
    ok: bool  # close enough to apply (otherwise only a rival)


class _File:
    """The text as lines without their endings, where each starts, and the main line ending."""

    def __init__(self, text: str) -> None:
        self.text, self.lines, self.starts = text, list[str](), list[int]()
        pieces, pos = text.split("\n"), 0
        for k, piece in enumerate(pieces):
            if k == len(pieces) - 1 and not piece:
                break
            self.starts.append(pos)
            self.lines.append(piece[:-1] if piece.endswith("\r") and k < len(pieces) - 1 else piece)
            pos += len(piece) + 1
        self.stripped = [line.strip() for line in self.lines]
        self.eol = "\r\n" if 2 * text.count("\r\n") > text.count("\n") else "\n"

    def lines_of(self, hit: _Hit) -> tuple[int, int]:
        first = self.text.count("\n", 0, hit.start) + 1
        return first, first + self.text.count("\n", hit.start, max(hit.start, hit.end - 1))

    def span(self, first: int, count: int, keep_eol: bool) -> tuple[int, int]:
        """Characters of lines first..first+count-1, with the last one's line ending unless kept."""
        last = first + count - 1
        end = self.starts[last] + len(self.lines[last])
        if keep_eol:
            return self.starts[first], end
        if last + 1 < len(self.starts):
            return self.starts[first], self.starts[last + 1]
        return (self.starts[first - 1] + len(self.lines[first - 1]), end) if first else (0, end)

    def excerpt(self, first: int, last: int) -> str:
        return tx.excerpt(self.lines, first, last)


def find_edit(text: str, old: str, new: str, name: str = "the file") -> EditMatch | EditFailure:
    """Where replacing `old` by `new` applies in `text`, by the rules above (`name` for errors)."""
    if not old.strip():
        return EditFailure(FailureKind.EMPTY, "old_text is empty: copy the lines to replace")
    f = _File(text)
    new = tx.to_eol(new, f.eol)
    olds = _hits(f, old, new)
    news = _hits(f, new, new) if new.strip() else []
    if len(news) == 1 and _already(olds, news[0]):
        return _matched(f, news[0], already=True)
    if len(olds) == 1:
        return _matched(f, olds[0])
    if olds:
        return _ambiguous(f, olds, name)
    return EditFailure(
        FailureKind.NOT_FOUND, f"old_text not found in {name}. {tx.closest(f.lines, old)}"
    )


def _already(olds: list[_Hit], done: _Hit) -> bool:
    """Whether new_text found once (`done`) means the edit is applied: when it holds every place
    found for old_text (close ones are outweighed by an exact new_text); when new_text is only
    close, if old_text is not found, is close at the same place with the same stale lines, or is
    ambiguous there."""
    if done.kind is not MatchKind.CLOSE:
        sure = [h for h in olds if h.kind is not MatchKind.CLOSE]
        return all(done.start <= h.start and h.end <= done.end for h in sure)
    if any(h.kind is not MatchKind.CLOSE for h in olds):
        return False
    if len(olds) == 1:
        inside = done.start <= olds[0].start and olds[0].end <= done.end
        return inside and done.stale <= olds[0].stale
    return not olds or any(h.start < done.end and done.start < h.end for h in olds)


def _hits(f: _File, needle: str, new: str) -> list[_Hit]:
    """The places the first rule that finds `needle` finds, each with its replacement."""
    found = [_Hit(p, p + len(needle), new, MatchKind.EXACT) for p in _find_all(f, needle)]
    converted = tx.to_eol(needle, f.eol)
    if not found and converted != needle:
        how = _eol_change(f, needle)
        spots = _find_all(f, converted)
        found = [_Hit(p, p + len(converted), new, MatchKind.LINE_ENDINGS, how) for p in spots]
    if found and needle[:1] in " \t" and all(_in_indent(f.text, h.start) for h in found):
        return _line_hits(f, needle, new) or found  # indented old_text inside an indentation
    return found or _line_hits(f, needle, new)


def _in_indent(text: str, at: int) -> bool:
    line_start = text.rfind("\n", 0, at) + 1
    return at > line_start and not text[line_start:at].strip()


def _find_all(f: _File, needle: str) -> list[int]:
    return [m.start() for m in re.finditer(re.escape(needle), f.text)]


def _line_hits(f: _File, needle: str, new: str) -> list[_Hit]:
    """Rules 3-5: windows of whole lines, each judged once; the best rule found decides."""
    core, lead, trail = tx.core(needle)
    want, n = [line.strip() for line in core], len(core)
    allowed = max(1, n // 4) if sum(map(bool, want)) >= 2 else 0
    rivals = max(allowed, n // 2)  # a place this many lines off can still make a close match moot
    found: dict[MatchKind, list[_Place]] = {}
    for i in range(len(f.lines) - n + 1 if core else 0):
        differ: list[int] = []
        for k in range(n):
            if f.stripped[i + k] != want[k]:
                differ.append(k)
                if len(differ) > rivals:
                    break
        judged = _judge(f, i, core, differ, allowed) if len(differ) <= rivals else None
        if judged is not None:
            found.setdefault(judged[0], []).append(judged[1])
    kind = next((k for k in MatchKind if k in found), None)
    if kind is None:
        return []
    places = found[kind] if kind is not MatchKind.CLOSE else _unrivalled(found[kind], n)
    new_lines, hits = tx.trim(tx.split_lines(new), lead, trail), list[_Hit]()
    for ratio, i, notes, stale, _ in places:
        window = f.lines[i : i + n]
        keep = [k for k in range(n) if f.stripped[i + k] == want[k]]
        size, drift, _ = tx.drift(window, core, keep)
        fix, how, moved = tx.adjust(f.lines, window, core, size, drift)
        if kind is MatchKind.CLOSE:
            how = f"a close text ({ratio:.0%} similar; {'; '.join(notes)}) {how}".rstrip()
        elif kind is MatchKind.TRAILING_WHITESPACE:
            how = "ignoring trailing whitespace" if window != core else ""
        how = " and ".join(filter(None, [_eol_change(f, needle), how])) or "ignoring line endings"
        lines = tx.merge(window, core, new_lines, fix)
        start, end = f.span(i, n, keep_eol=bool(lines))
        hits.append(_Hit(start, end, f.eol.join(lines), kind, how, ratio, moved, stale))
    return hits


def _judge(
    f: _File, i: int, core: list[str], differ: list[int], allowed: int
) -> tuple[MatchKind, _Place] | None:
    """Which rule the window at line i meets (with its similarity and stale lines), if any; a
    close window with too many or too different lines only counts as a rival."""
    n, want = len(core), [line.strip() for line in core]
    window, have = f.lines[i : i + n], f.stripped[i : i + n]
    _, _, outliers = tx.drift(window, core, [k for k in range(n) if k not in differ])
    if not differ and not outliers:
        same = all(w.rstrip() == o.rstrip() for w, o in zip(window, core, strict=True))
        kind = MatchKind.TRAILING_WHITESPACE if same else MatchKind.INDENTATION
        return kind, _Place(1.0, i, [], frozenset(), True)
    stale = [f"the file's line {i + k + 1} is `{tx.short(window[k])}`" for k in differ]
    stale += [f"the file's line {i + k + 1} is indented differently" for k in sorted(outliers)]
    ratio = tx.similarity("\n".join(have), "\n".join(want))
    if ratio < RIVAL_RATIO:
        return None
    ok = len(stale) <= allowed and all(
        tx.similarity(have[k], want[k]) >= LINE_RATIO for k in differ
    )
    lines = frozenset(i + k for k in (*differ, *outliers))
    return MatchKind.CLOSE, _Place(ratio, i, stale, lines, ok)


def _unrivalled(places: list[_Place], n: int) -> list[_Place]:
    """The best close place when it is clearly best; all rivals when not; none when too far."""
    chosen: list[_Place] = []
    for place in sorted(places, key=lambda p: (-p.ratio, p.line)):
        if all(abs(place.line - other.line) >= n for other in chosen):
            chosen.append(place)
    rivals = [p for p in chosen[1:] if chosen[0].ratio - p.ratio < RIVAL_MARGIN]
    if rivals:
        return [chosen[0], *rivals]
    return chosen[:1] if chosen and chosen[0].ok and chosen[0].ratio >= CLOSE_RATIO else []


def _ambiguous(f: _File, hits: list[_Hit], name: str) -> EditFailure:
    spans = tuple(f.lines_of(h) for h in hits)
    unique = "include more surrounding lines so it is unique"
    if hits[0].kind is MatchKind.EXACT:
        lines = ", ".join(str(a) for a, _ in spans[:10])
        message = f"old_text occurs {len(hits)} times in {name} (lines {lines}); {unique}"
    elif hits[0].kind is MatchKind.CLOSE:
        shown = "\n".join(
            f"{tx.lines_label(a, b)} ({h.ratio:.0%} similar):\n{f.excerpt(a, b)}"
            for (a, b), h in zip(spans[: tx.SHOWN], hits, strict=False)
        )
        message = (
            f"old_text not found in {name}, and {len(hits)} places are close to it, so none "
            f"was chosen:\n{shown}\nCopy old_text exactly from the file and {unique}"
        )
    else:
        lines = ", ".join(tx.lines_label(a, b) for a, b in spans[:10])
        message = (
            f"old_text does not occur exactly in {name}; {hits[0].how}, it matches "
            f"{len(hits)} places ({lines}); {unique}"
        )
    return EditFailure(FailureKind.AMBIGUOUS, message, spans)


def _matched(f: _File, hit: _Hit, already: bool = False) -> EditMatch:
    first, last = f.lines_of(hit)
    text = f.text if already else f.text[: hit.start] + hit.replacement + f.text[hit.end :]
    if already or text == f.text:
        how = f", matched {hit.how}" if hit.how and hit.kind is not MatchKind.CLOSE else ""
        note = f"new_text is at {tx.lines_label(first, last)}{how}"
        return EditMatch(f.text, hit.kind, first, last, last, already_applied=True, note=note)
    note = (
        ""
        if hit.kind is MatchKind.EXACT
        else f"old_text matched {hit.how} at {tx.lines_label(first, last)}"
    )
    note += "; new_text re-indented to match" if hit.reindented else ""
    new_last = first + hit.replacement[:-1].count("\n") - (not hit.replacement)
    return EditMatch(text, hit.kind, first, last, new_last, note=note)


def _eol_change(f: _File, needle: str) -> str:
    if "\n" not in needle or ("\r\n" in needle) == (f.eol == "\r\n"):
        return ""
    name = "CRLF" if f.eol == "\r\n" else "LF"
    return f"with line endings converted to {name}"
