"""Which earlier experiences a new task gets: the few most relevant, summarised in a word budget.

Relevant means a query term in an experience's title, tags, files or symbols, or at least two in
its text; generic words ("fix", "test", "error") count for nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_lsp.memory.experience import parse_experience
from agent_lsp.memory.index import TOKEN, Hit, MemoryIndex
from agent_lsp.memory.state import read_text_file

STOPWORDS = frozenset(
    """
    a an and are as at be been but by can could did do does doing done for from has have how i
    if in into is it its me my no not of on or our please should so some than that the their
    them then there these this those to too up us was we were what when where which while who
    why will with would you your all any each every also just only very more most less same
    other new old add added adds make makes made fix fixes fixed fixing change changes changed
    update updated use used using run runs running work works working get got set let want need
    needs like test tests testing tested pass passes passing passed fail fails failing failed
    failure error errors wrong bug bugs issue issues problem problems task tasks code file
    files line lines function functions method value values return returns returned py js ts go
    md txt json toml
    """.split()  # noqa: SIM905
)
MAX_TERMS = 24


@dataclass(frozen=True)
class Recalled:
    text: str  # the summary block, "" when nothing is relevant
    paths: list[str]
    words: int


def query_terms(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for token in TOKEN.findall(text):
        word = token.lower()
        if len(word) >= 3 and word not in STOPWORDS and not word.isdigit():
            seen.setdefault(word, None)
    return list(seen)[:MAX_TERMS]


def relevant(hit: Hit) -> bool:
    return bool(hit.strong) or len(hit.weak) >= 2


def recall(
    index: MemoryIndex, query: str, warnings: list[str], limit: int = 5, words: int = 300
) -> Recalled:
    """Sync the index with the files, then summarise the best relevant experiences."""
    index.sync(warnings)
    hits = [h for h in index.search(query_terms(query), warnings) if relevant(h)][:limit]
    if not hits:
        return Recalled("", [], 0)
    return summarize(index, hits, words, warnings)


def summarize(index: MemoryIndex, hits: Sequence[Hit], words: int, warnings: list[str]) -> Recalled:
    """One entry per experience, each within an equal share of the word budget."""
    folder = index.folder
    share = max(words // len(hits), 20)
    entries: list[str] = []
    used = 0
    for hit in hits:
        text = read_text_file(index.reads, folder / hit.path, f"memory/{hit.path}", warnings)
        if text is None:
            continue
        exp = parse_experience(text, hit.path)
        parts = [f"{exp.title} ({hit.path})"]
        if exp.goal:
            parts.append(f"Goal: {exp.goal}")
        for label, items in (
            ("Pitfalls", exp.pitfalls),
            ("Decisions", exp.decisions),
            ("Open", exp.open_questions),
        ):
            if items:
                parts.append(f"{label}: " + "; ".join(items))
        entry = _clip(" ".join(_sentence(p) for p in parts), min(share, words - used))
        if not entry:
            break
        used += len(entry.split())
        entries.append(f"- {entry}")
    return Recalled("\n".join(entries), [h.path for h in hits[: len(entries)]], used)


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _clip(text: str, budget: int) -> str:
    if budget <= 0:
        return ""
    tokens = " ".join(text.split()).split(" ")
    if len(tokens) <= budget:
        return " ".join(tokens)
    return " ".join(tokens[: budget - 1]) + " …"
