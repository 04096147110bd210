"""State files: `state/project/*.md` (facts + reasons), `state/task/current-task.md` (goal,
progress, next, blockers) and its `task.json`. Hand edits are welcome; anything unreadable is a
WARN, never a crash. Every read and write goes through the layout's `ReadGuard`: a state file
that links out of the workspace, is a secret or is hidden by a path rule is a WARN, unread."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from agent_lsp.memory.layout import Layout
from agent_lsp.safety.reads import CONTEXT_TOOL, ReadGuard, Refused

SECTIONS = ("goal", "progress", "next", "blockers")  # what update_task writes
# The file's sections, in order: the model's, then the one only the harness writes.
ORDER = (*SECTIONS, "outcome")
ALIASES = {
    "goal": "goal",
    "goals": "goal",
    "task": "goal",
    "objective": "goal",
    "progress": "progress",
    "done": "progress",
    "status": "progress",
    "next": "next",
    "next step": "next",
    "next steps": "next",
    "blocker": "blockers",
    "blockers": "blockers",
    "blocked": "blockers",
    "outcome": "outcome",
    "result": "outcome",
}
# Lines the harness keeps in `progress` and `blockers` ("- step 3: ..." and the count of the
# entries no longer shown); update_task replaces the rest of the section and keeps these.
HARNESS_LINE = re.compile(r"^- (?:step \d+:|\((\d+) earlier (?:entries|entry) not shown)")
KEEP_ENTRIES = 12
TITLE = "# Current task\n"
MAX_FILE_CHARS = 64_000
FILES_KEY = "files"  # task.json: the paths the task state named while they were files
PROJECT_CHARS = 6_000
NOTES_LINES = 40
_HEADING = re.compile(r"^##[ \t]+(.+?)[ \t#]*$", re.M)


@dataclass
class TaskState:
    """The sections of current-task.md, known ones normalised, unknown ones kept."""

    sections: dict[str, str] = field(default_factory=dict[str, str])
    extra: dict[str, str] = field(default_factory=dict[str, str])

    def render(self) -> str:
        body = "".join(
            f"## {name}\n{self.sections[name].rstrip()}\n\n"
            for name in ORDER
            if name in self.sections
        )
        body += "".join(f"## {name}\n{text.rstrip()}\n\n" for name, text in self.extra.items())
        return TITLE + "\n" + body

    def summary(self) -> str:
        """The known sections, for the model."""
        return "".join(
            f"## {name}\n{self.sections[name].strip()}\n"
            for name in ORDER
            if self.sections.get(name, "").strip()
        )


def read_text_file(
    reads: ReadGuard, path: Path, label: str, warnings: list[str], tool: str = CONTEXT_TOOL
) -> str | None:
    """The text of a file loaded for the agent, or None: missing, refused by the guard (a
    WARN, without the content), unreadable or corrupted (a WARN)."""
    try:
        data = reads.read_bytes(path, tool)
    except FileNotFoundError:
        return None
    except Refused as exc:
        warnings.append(f"{label}: not loaded ({exc.reason})")
        return None
    except OSError as exc:
        warnings.append(f"{label}: cannot be read ({exc}); ignored")
        return None
    if b"\0" in data:
        warnings.append(f"{label}: looks corrupted (binary data); ignored")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        warnings.append(f"{label}: not valid UTF-8; read with replacement characters")
        text = data.decode("utf-8", errors="replace")
    if len(text) > MAX_FILE_CHARS:
        warnings.append(f"{label}: {len(text)} characters; only the first {MAX_FILE_CHARS} used")
        text = text[:MAX_FILE_CHARS]
    return text


def parse_task(text: str, label: str, warnings: list[str]) -> TaskState:
    state = TaskState()
    matches = list(_HEADING.finditer(text))
    preamble = text[: matches[0].start()] if matches else text
    stray = [ln for ln in preamble.splitlines() if ln.strip() and not ln.startswith("# ")]
    if stray:
        warnings.append(f"{label}: text outside the ## sections was ignored")
    for n, match in enumerate(matches):
        end = matches[n + 1].start() if n + 1 < len(matches) else len(text)
        body = text[match.end() + 1 : end] if match.end() < len(text) else ""
        heading = match.group(1).strip()
        name = ALIASES.get(heading.lower().rstrip(":"))
        if name is None:
            warnings.append(f"{label}: unknown section {heading!r} kept as written")
            state.extra[heading] = body
        elif name in state.sections:
            warnings.append(f"{label}: section {name!r} appears twice; the texts were joined")
            state.sections[name] = state.sections[name].rstrip() + "\n" + body
        else:
            state.sections[name] = body
    return state


def load_task(layout: Layout, warnings: list[str]) -> TaskState | None:
    text = read_text_file(layout.reads, layout.task_file, layout.rel(layout.task_file), warnings)
    if text is None:
        return None
    return parse_task(text, layout.rel(layout.task_file), warnings)


def write_task_section(layout: Layout, section: str, content: str) -> None:
    """Replace one section of current-task.md (the others, and unknown ones, are kept).
    Never through a link (`UnsafePathError`) nor against a deny path rule (`Refused`)."""
    ignored: list[str] = []
    path = layout.task_file
    text = read_text_file(layout.reads, path, path.name, ignored, "update_task") or ""
    state = parse_task(text, path.name, ignored)
    kept = _harness_lines(state.sections.get(section, ""))
    state.sections[section] = "\n".join([content, *kept]).strip() + "\n"
    layout.reads.write(path, state.render(), "update_task")
    record_files(layout, content)


def add_task_entry(layout: Layout, section: str, entry: str, keep: int = KEEP_ENTRIES) -> None:
    """Append the harness's `- step N: ...` line to `progress` or `blockers`: the model's own
    text stays first, then the last `keep` entries and how many earlier ones are not shown."""
    ignored: list[str] = []
    path = layout.task_file
    text = read_text_file(layout.reads, path, path.name, ignored) or TITLE
    state = parse_task(text, path.name, ignored)
    old = state.sections.get(section, "")
    own = [ln for ln in old.strip().splitlines() if not HARNESS_LINE.match(ln)]
    earlier, entries = 0, []
    for line in _harness_lines(old):
        match = HARNESS_LINE.match(line)
        if match and match.group(1):
            earlier += int(match.group(1))
        else:
            entries.append(line)
    entries.append(entry)
    earlier += max(0, len(entries) - keep)
    entries = entries[-keep:]
    count = [f"- ({earlier} earlier {'entry' if earlier == 1 else 'entries'} not shown)"]
    lines = [*own, *(count if earlier else []), *entries]
    state.sections[section] = "\n".join(lines).strip() + "\n"
    layout.reads.write(path, state.render())
    record_files(layout, entry)


def set_task_outcome(layout: Layout, text: str) -> None:
    """The task's end status and summary, in the `outcome` section (replaced)."""
    ignored: list[str] = []
    path = layout.task_file
    old = read_text_file(layout.reads, path, path.name, ignored) or TITLE
    state = parse_task(old, path.name, ignored)
    state.sections["outcome"] = text.strip() + "\n"
    layout.reads.write(path, state.render())


def _harness_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if HARNESS_LINE.match(ln)]


def start_task(layout: Layout, goal: str) -> None:
    layout.reads.write(layout.task_file, TaskState({"goal": goal.strip() + "\n"}).render())


def load_project_state(layout: Layout, warnings: list[str]) -> list[tuple[str, str]]:
    """`state/project/*.md` and the `remember` notes, capped to PROJECT_CHARS in all."""
    folder = layout.state_project
    files = layout.reads.folder(
        folder, warnings=warnings, label=layout.rel(folder), keep=lambda p: p.suffix == ".md"
    )
    out: list[tuple[str, str]] = []
    budget = PROJECT_CHARS
    for path in files:
        text = read_text_file(layout.reads, path, layout.rel(path), warnings)
        if text is None or not text.strip():
            continue
        out.append((path.name, _cap(text.strip(), budget, layout.rel(path))))
        budget -= len(out[-1][1])
        if budget <= 200:
            warnings.append("state/project: more than the context budget; the rest not loaded")
            break
    notes = read_text_file(layout.reads, layout.notes, layout.rel(layout.notes), warnings)
    if notes:
        lines = [ln for ln in notes.splitlines() if ln.startswith("- ")][-NOTES_LINES:]
        if lines:
            out.append(("notes (remember)", "\n".join(lines)))
    return out


def _cap(text: str, limit: int, rel: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f"\n[... truncated; read_file {rel} for the rest]"


def load_meta(layout: Layout, warnings: list[str]) -> dict[str, str]:
    text = read_text_file(layout.reads, layout.task_meta, layout.rel(layout.task_meta), warnings)
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        warnings.append(f"{layout.rel(layout.task_meta)}: not valid JSON ({exc.msg}); ignored")
        return {}
    if not isinstance(data, dict):
        warnings.append(f"{layout.rel(layout.task_meta)}: not a JSON object; ignored")
        return {}
    return {str(k): str(v) for k, v in data.items()}


def save_meta(layout: Layout, meta: dict[str, str]) -> None:
    layout.reads.write(layout.task_meta, json.dumps(meta, indent=1) + "\n")


def current_branch(root: Path) -> str | None:
    """The checked-out branch, read from .git/HEAD (no subprocess); None outside git. Only a
    branch name or a commit id comes back: a HEAD linked to another file shows nothing of it."""
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if dot_git.is_file():
            try:
                line = dot_git.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            if not line.startswith("gitdir:"):
                return None
            git_dir = Path(line.split(":", 1)[1].strip())
            dot_git = git_dir if git_dir.is_absolute() else folder / git_dir
        if dot_git.is_dir():
            try:
                head = (dot_git / "HEAD").read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            branch = head.removeprefix("ref: refs/heads/")
            if head.startswith("ref: refs/heads/") and _BRANCH.fullmatch(branch):
                return branch
            return f"detached {head[:7]}" if _COMMIT.fullmatch(head) else None
    return None


_BRANCH = re.compile(r"[\w./+-]{1,200}")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


PATHLIKE = re.compile(
    r"(?<![\w/.@-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,5})(?![\w/])"
)
SKIP_WALK = frozenset({".git", ".agent-lsp", "node_modules", ".venv", "venv", "__pycache__"})


def referenced_paths(text: str) -> list[str]:
    """File paths mentioned in a state file ("utils/parser.js", "calc.py")."""
    seen: dict[str, None] = {}
    for match in PATHLIKE.finditer(text):
        candidate = match.group(1).rstrip(".")
        if "." in candidate and not re.fullmatch(r"[\d.]+\w?", candidate):
            seen.setdefault(candidate, None)
    return list(seen)


def record_files(layout: Layout, text: str) -> None:
    """Note in task.json (`files`) the paths that `text`, just written to the task state,
    names and that are files now: only such a path, gone later, is a conflict. A name in the
    task's words that never was a file (`Stock.remove`, `self.items`) is none."""
    named = referenced_paths(text)
    if not named:
        return
    ignored: list[str] = []
    meta = load_meta(layout, ignored)
    known = recorded_files(meta)
    new = [rel for rel in named if rel not in known]
    files = _files_now(layout.root, new) if new else []
    if files:
        save_meta(layout, {**meta, FILES_KEY: "\n".join(sorted({*known, *files}))})


def recorded_files(meta: dict[str, str]) -> set[str]:
    """The paths the task state named while they were files (see `record_files`)."""
    return {line for line in meta.get(FILES_KEY, "").splitlines() if line}


def gone_files(layout: Layout, state: TaskState) -> list[str]:
    """The files the task state names, recorded as files when it named them, that exist
    nowhere in the project now (renamed or deleted): the conflicts of a rebuilt context."""
    text = state.summary() + "".join(state.extra.values())
    ignored: list[str] = []
    recorded = recorded_files(load_meta(layout, ignored))
    named = [rel for rel in referenced_paths(text) if rel in recorded]
    return missing_paths(layout.root, named) if named else []


# Bare names a walk of the project found to be no file (`Stock.remove`, `self.items`), per
# root: the harness's entries quote them step after step, and a walk per step is not needed.
_NO_FILE: dict[Path, set[str]] = {}
NO_FILE_LIMIT = 4_000


def _files_now(root: Path, paths: list[str], walk_limit: int = 20_000) -> list[str]:
    """Those of `paths` that are files in the project (bare names: anywhere in the tree)."""
    here = {rel for rel in paths if (root / rel).is_file()}
    no_file = _NO_FILE.setdefault(root, set())
    bare = {rel for rel in paths if rel not in here and "/" not in rel and rel not in no_file}
    found = _find_names(root, bare, walk_limit) if bare else set[str]()
    if len(no_file) > NO_FILE_LIMIT:
        no_file.clear()
    no_file.update(bare - found)
    return [rel for rel in paths if rel in here or rel in found]


def missing_paths(root: Path, paths: list[str], walk_limit: int = 20_000) -> list[str]:
    """Those of `paths` that exist nowhere in the project (bare names: anywhere in the tree)."""
    absent = [rel for rel in paths if not (root / rel).exists()]
    bare = {rel for rel in absent if "/" not in rel}
    found = _find_names(root, bare, walk_limit) if bare else set[str]()
    return [rel for rel in absent if rel not in found]


def _find_names(root: Path, names: set[str], limit: int) -> set[str]:
    found: set[str] = set()
    seen = 0
    for _folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_WALK]
        found.update(names.intersection(files))
        seen += len(files)
        if found == names or seen > limit:
            return names if seen > limit else found
    return found
