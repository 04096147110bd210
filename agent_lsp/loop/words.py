"""Edits written in words: what a small model writes instead of a tool call.

Small models fix code far more often than they manage a tool call's JSON (aider's experience,
and ours). A reply without a tool call is searched for edits in the forms they write:

- a search/replace block after the file's name (aider's format):

      text.py
      <<<<<<< SEARCH
      old lines
      =======
      new lines
      >>>>>>> REPLACE

- a fenced code block whose file is named on the line before it, in its info string
  (```python text.py) or in a first-line comment (# text.py): the whole file when the block
  keeps every top-level definition of the file, else, for Python, each definition it holds
  replaces the one of that name in the file;
- a fenced Python block naming no file, whose top-level definitions are all found in exactly
  one of the files the model has read (`candidates`): those definitions are replaced there.

A fenced block never changes a test file (small models show tests back, edited to pass): a
test changes through edit_file or a search/replace block only.

Each edit becomes an `edit_file` call (old text, new text) run through the tool box like any
other, so every guard applies (path rules, read before write, the syntax check, review mode).
Nothing here touches a file."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from adapters.affected import is_test_file
from agent_lsp.messages import ToolCall

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})(?P<info>[^\n`]*)$", re.M)
# A SEARCH/REPLACE block; a small model also writes it as a merge conflict (`<<<<<<< HEAD`,
# `>>>>>>> branch`), which reads the same way: the old text, then the new.
_SEARCH = re.compile(
    r"^[ \t]*<{5,9} ?(?:SEARCH|HEAD|ORIGINAL|OLD|BEFORE)\b[^\n]*\n(?P<old>.*?)^[ \t]*={5,9}[ \t]*\n"
    r"(?P<new>.*?)^[ \t]*>{5,9}[^\n]*$",
    re.M | re.S,
)
_PATHLIKE = re.compile(r"[\w./\\-]+\.[A-Za-z0-9]{1,8}")
_PY_DEF = re.compile(r"^(?:async[ \t]+def|def|class)[ \t]+(\w+)", re.M)
_JS_DEF = re.compile(
    r"^(?:export[ \t]+)?(?:default[ \t]+)?(?:async[ \t]+)?(?:function\*?|class|const|let|var)"
    r"[ \t]+(\w+)",
    re.M,
)
_GO_DEF = re.compile(r"^(?:func(?:[ \t]*\([^)]*\))?|type)[ \t]+(\w+)", re.M)


@dataclass(frozen=True)
class WordsEdit:
    """One edit found in a reply: `old` replaced by `new` in `path` (`what` says which form)."""

    path: str
    old: str
    new: str
    what: str

    def call(self, ident: str) -> ToolCall:
        arguments = {"path": self.path, "old_text": self.old, "new_text": self.new}
        return ToolCall(id=ident, name="edit_file", arguments=json.dumps(arguments))


@dataclass(frozen=True)
class Found:
    """The edits a reply holds, and why other blocks in it could not be used (for the model)."""

    edits: list[WordsEdit]
    problems: list[str]


Reader = Callable[[str], str | None]  # a workspace path -> its current text (None: no file)
Resolver = Callable[[str], str | None]  # a path as the model wrote it -> the file's (None: none)


def edits_in_words(text: str, read: Reader, candidates: Sequence[str] = ()) -> Found:
    """The edits written in `text`; `read` gives a file's current text by its workspace path
    (None when there is no such file), `candidates` the files the model has read (for a block
    that names no file)."""
    edits: list[WordsEdit] = []
    problems: list[str] = []
    taken: list[tuple[int, int]] = []
    resolve = _resolver(read, candidates)
    for match in _SEARCH.finditer(text):
        taken.append(match.span())
        old, new = _block_text(match.group("old")), _block_text(match.group("new"))
        path = _named_before(text, match.start(), resolve) or _holding(old, read, candidates)
        if path is None:
            problems.append("a SEARCH/REPLACE block without its file's path on the line before")
        elif not old.strip():
            problems.append(f"a SEARCH/REPLACE block for {path} with an empty SEARCH part")
        else:
            edits.append(WordsEdit(path, old, new, "search/replace"))
    for start, _end, info, body in _fences(text):
        if any(s <= start < e for s, e in taken) or _SEARCH.search(body):
            continue
        path = (
            _path_in(info, resolve)
            or _named_before(text, start, resolve)
            or _first_line(body, resolve)
        )
        found = _fenced_edit(path, body, read, candidates, resolve)
        if isinstance(found, str):
            if path is not None:  # an unnamed block that fits nowhere is just code shown
                problems.append(found)
            continue
        edits.extend(found)
    return Found(edits, problems)


def _holding(old: str, read: Reader, candidates: Sequence[str]) -> str | None:
    """The one file the model has read whose text holds `old` (a block whose path is missing
    or wrong: small models copy an example's), code before tests; lines compared without
    their outer whitespace when no file holds it exactly."""
    if not old.strip():
        return None
    texts = {rel: t for rel in dict.fromkeys(candidates) if (t := read(rel)) is not None}
    for loose in (False, True):
        want = _loose(old) if loose else old
        found = [rel for rel, t in texts.items() if want in (_loose(t) if loose else t)]
        code = [rel for rel in found if not is_test_file(rel)]
        if len(code) == 1:
            return code[0]
        if len(found) == 1:
            return found[0]
        if found:
            return None
    return None


def _loose(text: str) -> str:
    return "\n".join(line.strip() for line in text.splitlines())


def _fences(text: str) -> list[tuple[int, int, str, str]]:
    """Fenced blocks: (start, end, info string, body), outermost first, unclosed ones skipped."""
    out: list[tuple[int, int, str, str]] = []
    pos = 0
    while (opening := _FENCE.search(text, pos)) is not None:
        ticks = opening.group("ticks")
        closing = re.compile(rf"^[ \t]*{re.escape(ticks[0])}{{{len(ticks)},}}[ \t]*$", re.M)
        end = closing.search(text, opening.end())
        if end is None:
            break
        body = text[opening.end() + 1 : end.start()]
        out.append((opening.start(), end.end(), opening.group("info").strip(), body))
        pos = end.end()
    return out


def _block_text(raw: str) -> str:
    """A block's lines as the file has them (the newline before the closing marker kept out)."""
    return raw[:-1] if raw.endswith("\n") else raw


def _clean(word: str) -> str:
    """A path as a model wrote it, with "/" for every separator (a backslash is one on
    Windows, and the workspace reads it so: the test-file check must too)."""
    return word.strip().strip("`*'\":,;()[]<>").replace("\\", "/").removeprefix("./")


def _resolver(read: Reader, candidates: Sequence[str]) -> Resolver:
    """A path as written when it is a file, else the one file the model has read that it
    names in other letter cases (a small model capitalises the first word of its reply:
    "Roman.py" for roman.py, three replies lost in a run of the benchmark)."""
    folded: dict[str, list[str]] = {}
    for rel in dict.fromkeys(candidates):
        folded.setdefault(rel.casefold(), []).append(rel)

    def resolve(word: str) -> str | None:
        if read(word) is not None:
            return word
        hits = folded.get(word.casefold(), [])
        return hits[0] if len(hits) == 1 and read(hits[0]) is not None else None

    return resolve


def _existing(word: str, resolve: Resolver) -> str | None:
    word = _clean(word)
    if not word or not _PATHLIKE.fullmatch(word):
        return None
    return resolve(word)


def _path_in(info: str, resolve: Resolver) -> str | None:
    for word in re.split(r"[\s=]+", info):
        if found := _existing(word, resolve):
            return found
    return None


def _named_before(text: str, start: int, resolve: Resolver) -> str | None:
    """A file named on the last non-empty line before `start`, or, when that line opens a
    fence, in its info string or on the line before it."""
    lines = [line for line in text[:start].splitlines() if line.strip()]
    for line in reversed(lines[-2:]):
        fence = _FENCE.fullmatch(line)
        if fence is not None:
            if found := _path_in(fence.group("info"), resolve):
                return found
            continue
        for word in reversed(line.split()):
            if found := _existing(word, resolve):
                return found
        return None
    return None


def _first_line(body: str, resolve: Resolver) -> str | None:
    """`# text.py` or `// file: text.js` as a block's first line."""
    first = body.split("\n", 1)[0].strip()
    match = re.fullmatch(r"(?:#|//|--)\s*(?:file(?:name)?:?\s*)?(\S+)", first, re.I)
    return _existing(match.group(1), resolve) if match else None


def _definitions(path: str, text: str) -> list[str]:
    pattern = _PY_DEF
    if path.endswith((".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx")):
        pattern = _JS_DEF
    elif path.endswith(".go"):
        pattern = _GO_DEF
    return pattern.findall(text)


def _fenced_edit(
    path: str | None, body: str, read: Reader, candidates: Sequence[str], resolve: Resolver
) -> list[WordsEdit] | str:
    """The edits a fenced block makes, or why it makes none."""
    if path is not None:
        if is_test_file(path):  # shown, not meant as a change: a test changes only explicitly
            return f"a code block for the test file {path} (change tests with edit_file)"
        current = read(path) or ""
        if _first_line(body, resolve) == path:  # its first line only names the file
            body = body.split("\n", 1)[1] if "\n" in body else ""
        if _whole_file(path, current, body):
            return [WordsEdit(path, current, _with_end(body, current), "whole file")]
        if path.endswith(".py") and (edits := _python_definitions(path, current, body)):
            return edits
        return (
            f"a code block for {path} that is neither the whole file (it lacks some of its "
            "definitions) nor whole definitions found in it"
        )
    names = _PY_DEF.findall(body)
    if not names:
        return "no file named"
    fits: list[list[WordsEdit]] = []
    for candidate in candidates:
        if not candidate.endswith(".py") or is_test_file(candidate):
            continue
        text = read(candidate)
        if text is not None and (edits := _python_definitions(candidate, text, body)):
            fits.append(edits)
    if len(fits) != 1:
        return "no file named"
    return fits[0]


def _with_end(body: str, current: str) -> str:
    """The new whole text ends with a newline when the file did."""
    if current.endswith("\n") and not body.endswith("\n"):
        return body + "\n"
    return body


def _whole_file(path: str, current: str, body: str) -> bool:
    """The block is the whole new file: it keeps every top-level definition of the current
    one (a block that drops some is a part shown, not the file) and is not a fragment."""
    if not body.strip():
        return False
    if not current.strip():
        return True
    before, after = set(_definitions(path, current)), set(_definitions(path, body))
    if before and not before <= after:
        return False
    if not before:  # a file without definitions: only when the block is about its size
        return len(body) >= len(current) // 2
    return True


def _python_span(lines: list[str], name: str) -> tuple[int, int] | None:
    """The lines [start, end) of the one top-level definition of `name` (decorators included,
    trailing blank lines not), or None when there is none or more than one."""
    starts = [
        n
        for n, line in enumerate(lines)
        if (m := _PY_DEF.match(line)) is not None and m.group(1) == name
    ]
    if len(starts) != 1:
        return None
    start = starts[0]
    while start > 0 and lines[start - 1].startswith("@"):
        start -= 1
    end = starts[0] + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0].isspace()):
        end += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return start, end


def _python_definitions(path: str, current: str, body: str) -> list[WordsEdit]:
    """One edit per top-level definition of `body`, each replacing the definition of the same
    name in `current`; none unless every definition of the block is found there once."""
    block = body.splitlines()
    names = [m.group(1) for line in block if (m := _PY_DEF.match(line)) is not None]
    if not names:
        return []
    lines = current.splitlines()
    edits: list[WordsEdit] = []
    for name in names:
        old_span, new_span = _python_span(lines, name), _python_span(block, name)
        if old_span is None or new_span is None:
            return []
        old = "\n".join(lines[old_span[0] : old_span[1]])
        new = "\n".join(block[new_span[0] : new_span[1]])
        if old != new:
            edits.append(WordsEdit(path, old, new, f"definition {name}"))
    return edits


_ATTEMPT = re.compile(
    r"<tool_call|&lt;tool_call|\"arguments\"\s*:|&#34;arguments|\bfunctions\.\w+|<{7} ?SEARCH",
)

CALL_SYNTAX = """\
To act, write a tool call exactly like this (one block per call, JSON inside):
<tool_call>{"name": "read_file", "arguments": {"path": "src/app.py"}}</tool_call>
or change a file with a SEARCH/REPLACE block, the file's path alone on the line before it:
src/app.py
<<<<<<< SEARCH
the exact lines to change, copied from the file
=======
the new lines
>>>>>>> REPLACE"""


def attempted(text: str | None) -> bool:
    """The reply tried to make a tool call or an edit (in some form that was not used)."""
    return bool(text) and _ATTEMPT.search(text or "") is not None


def correction(problems: Sequence[str], left: int, syntax: bool = True) -> str:
    """What a model is told after a reply whose call or edit could not be used (`syntax`:
    with the exact syntax of both; a small model gets its own reminder instead)."""
    said = "; ".join(problems) if problems else "no tool call or edit could be read in it"
    again = (
        "If the next reply has no usable tool call or edit either, the task stops here."
        if left <= 1
        else f"After {left} more replies without a usable tool call or edit, the task stops."
    )
    how = f"\n{CALL_SYNTAX}" if syntax else ""
    return f"Your last reply could not be used: {said}.{how}\n{again}"


def prose(text: str) -> str:
    """The reply's words without its code: fenced blocks and SEARCH/REPLACE blocks taken out
    (with a file name alone on the line before one), for an outcome's summary."""
    cut = _SEARCH.sub("", text)
    for start, end, _info, _body in reversed(_fences(cut)):
        cut = cut[:start] + cut[end:]
    lines = [line for line in cut.splitlines() if line.strip()]
    kept = [line for line in lines if not _PATHLIKE.fullmatch(_clean(line))]
    return "\n".join(kept).strip()
