"""Experience files `memory/YYYY-MM-DD--<topic>.md`: goal, steps, key decisions, pitfalls, open
questions, with a few header fields (tags, files, symbols) the index reads back."""

from __future__ import annotations

import os
import re
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from agent_lsp.safety.reads import ReadGuard

NAME = re.compile(r"^(\d{4}-\d{2}-\d{2})--(.+)\.md$")
LISTS = (
    ("steps", "Steps"),
    ("decisions", "Key decisions"),
    ("pitfalls", "Pitfalls"),
    ("open_questions", "Open questions"),
)
HEADER_KEYS = ("date", "project", "event", "tags", "files", "symbols")
_FIELD = re.compile(r"^- (\w+): ?(.*)$")


class Experience(BaseModel):
    title: str
    date: str = Field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d"))
    project: str = ""
    event: str = ""
    tags: list[str] = Field(default_factory=list[str])
    files: list[str] = Field(default_factory=list[str])
    symbols: list[str] = Field(default_factory=list[str])
    goal: str = ""
    steps: list[str] = Field(default_factory=list[str])
    decisions: list[str] = Field(default_factory=list[str])
    pitfalls: list[str] = Field(default_factory=list[str])
    open_questions: list[str] = Field(default_factory=list[str])
    body: str = ""  # the whole text, as read back (for the index)

    def to_markdown(self) -> str:
        head = [f"# {self.title.strip()}", ""]
        for key in HEADER_KEYS:
            value = getattr(self, key)
            text = ", ".join(value) if isinstance(value, list) else str(value)
            head.append(f"- {key}: {text}")
        parts = ["\n".join(head), f"## Goal\n{self.goal.strip() or '-'}"]
        for attr, heading in LISTS:
            items: list[str] = getattr(self, attr)
            if attr == "steps":
                lines = [f"{n}. {item}" for n, item in enumerate(items, 1)]
            else:
                lines = [f"- {item}" for item in items]
            parts.append(f"## {heading}\n" + ("\n".join(lines) or "-"))
        return "\n\n".join(parts) + "\n"


def slug(text: str, words: int = 6) -> str:
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    parts = re.findall(r"[a-z0-9]+", plain.lower())[:words]
    return "-".join(parts)[:60].strip("-") or "task"


def experience_path(folder: Path, date: str, topic: str) -> Path:
    base = f"{date}--{slug(topic)}"
    path = folder / f"{base}.md"
    n = 2
    while os.path.lexists(path):
        path = folder / f"{base}-{n}.md"
        n += 1
    return path


def write_experience(reads: ReadGuard, folder: Path, exp: Experience, topic: str) -> Path:
    """A new experience file (never through a link: `UnsafePathError`)."""
    path = experience_path(folder, exp.date, topic or exp.title)
    reads.write(path, exp.to_markdown(), "remember")
    return path


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_experience(text: str, name: str = "") -> Experience:
    """Lenient: a hand-written note without any of the structure is still an experience."""
    title = ""
    fields: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("# ") and not title and current is None:
            title = line[2:].strip()
        elif line.startswith("## "):
            current = line[3:].strip().lower()
            sections[current] = []
        elif current is None and (m := _FIELD.match(line)) and m.group(1) in HEADER_KEYS:
            fields[m.group(1)] = m.group(2).strip()
        elif current is not None:
            sections[current].append(line)
    match = NAME.match(name)
    exp = Experience(
        title=title or (match.group(2).replace("-", " ") if match else name or "note"),
        date=fields.get("date") or (match.group(1) if match else ""),
        project=fields.get("project", ""),
        event=fields.get("event", ""),
        tags=_split(fields.get("tags", "")),
        files=_split(fields.get("files", "")),
        symbols=_split(fields.get("symbols", "")),
        goal="\n".join(sections.get("goal", [])).strip(),
        body=text,
    )
    for attr, heading in LISTS:
        items = [_item(ln) for ln in sections.get(heading.lower(), []) if _item(ln)]
        setattr(exp, attr, [i for i in items if i != "-"])
    return exp


def _item(line: str) -> str:
    return re.sub(r"^\s*(?:[-*]|\d+[.)])\s+", "", line).strip()
