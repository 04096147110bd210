"""The self-check of an improvement, on a copy of `.agent-lsp/` holding its after-state: the
settings load from it without a warning about the project's file and every changed key is in
effect; the tool notes name real tools and every tool's schema builds with its note; the notes
are used at all (a trusted workspace); and, when test settings change, the project's tests run
through the confined shell with the new settings (`agent-lsp test`'s machinery). The first
problem found is the reason the improvement is rolled back."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from adapters import detect_toolchain
from agent_lsp.config.schema import Settings
from agent_lsp.config.settings import load_settings
from agent_lsp.improve.files import FileChange, ImprovementError, read_current
from agent_lsp.improve.patch import ImprovementPatch, key_path
from agent_lsp.improve.tool import ProposeImprovementTool
from agent_lsp.improve.tools_check import check_tools, declared_tools
from agent_lsp.loop.toolbox import Described, tool_spec
from agent_lsp.loop.verify import NotPermittedError, run_in_copy
from agent_lsp.memory.layout import Layout
from agent_lsp.memory.notes import MAX_NOTE_CHARS, NotesError, parse_tool_notes
from agent_lsp.safety.policy import CommandPolicy, Unattended
from agent_lsp.safety.setup import PolicySetup, build_policy
from agent_lsp.seams import EditorChannel
from agent_lsp.tools import CONTRACT_TOOLS

__all__ = ["TOOLS", "self_check"]


@dataclass(frozen=True)
class _Named:
    name: str
    description: str
    args_model: type[BaseModel]


_CLASSES = (*CONTRACT_TOOLS, ProposeImprovementTool)
TOOLS: tuple[Described, ...] = tuple(_Named(c.name, c.description, c.args_model) for c in _CLASSES)
_FILES = ("config.toml", "prompt-notes.md", "tool-notes.toml", "tools.toml")


def _copy(root: Path, changes: list[FileChange], into: Path) -> None:
    """The three files in their after-state (the unchanged ones as they are) under `into`."""
    layout = Layout(root)
    after = {change.path: change.after for change in changes}
    (into / ".agent-lsp").mkdir(parents=True)
    for name in _FILES:
        rel = f".agent-lsp/{name}"
        text = after[rel] if rel in after else read_current(layout, root / rel)
        if text is not None:
            (into / rel).write_text(text, encoding="utf-8")


def _settings(
    root: Path,
    copy: Path,
    patch: ImprovementPatch,
    trusted: bool,
    user_config: Path | None,
    environ: Mapping[str, str] | None,
) -> Settings:
    def project_warnings(folder: Path) -> tuple[Settings, list[str]]:
        loaded = load_settings(folder, environ=environ, user_config=user_config, trusted=trusted)
        ours = str(folder / ".agent-lsp" / "config.toml")
        found = [w.replace(ours, ".agent-lsp/config.toml") for w in loaded.warnings if ours in w]
        return loaded.settings, found

    _, earlier = project_warnings(root)  # what the file already had is not this change's
    settings, warnings = project_warnings(copy)
    problems = [w for w in warnings if w not in earlier]
    if problems:
        raise ImprovementError("the settings do not load as written: " + "; ".join(problems))
    now: Any = settings.model_dump(mode="json", by_alias=True)
    for change in patch.config:
        node = now
        for part in key_path(change.key):
            node = node[part]
        if change.value is not None and node != change.value:
            raise ImprovementError(
                f"{change.key} = {change.value!r} is not in effect after a reload (it is "
                f"{node!r}: another source of settings overrides it)"
            )
    return settings


def _notes(copy: Path, patch: ImprovementPatch, trusted: bool, project: set[str]) -> None:
    layout = Layout(copy)
    if (patch.prompt_note.strip() or patch.tool_notes) and not trusted:
        raise ImprovementError(
            "project notes are used only in a trusted workspace: run `agent-lsp trust` first"
        )
    prompt = read_current(layout, layout.prompt_notes) or ""
    if len(prompt.strip()) > MAX_NOTE_CHARS:
        raise ImprovementError(f"prompt-notes.md would be over {MAX_NOTE_CHARS} characters")
    try:
        notes = parse_tool_notes(read_current(layout, layout.tool_notes) or "")
    except NotesError as exc:
        raise ImprovementError(str(exc)) from exc
    names = {tool.name for tool in TOOLS} | project
    unknown = sorted(set(notes) - names)
    if unknown:
        known = ", ".join(sorted(names))
        raise ImprovementError(f"tool-notes.toml names no tool {', '.join(unknown)} ({known})")
    for tool in TOOLS:  # every schema the model would see, notes included
        json.dumps(tool_spec(tool, notes.get(tool.name, "")).model_dump(mode="json"))


async def _dry_run(root: Path, settings: Settings, safety: PolicySetup, gate: CommandPolicy) -> str:
    adapter = detect_toolchain(root, settings.tests.args, settings.tests.command)
    if adapter is None:
        raise ImprovementError("the test settings change but the project has no test runner")
    try:
        report = await run_in_copy(root, adapter, safety, gate, timeout=settings.tests.timeout)
    except NotPermittedError as exc:
        raise ImprovementError(f"the dry run of the tests did not run: {exc}") from exc
    ran = report.passed + report.failed + report.skipped  # errors alone: nothing ran (a bad
    # argument, a usage error)
    if report.timed_out or report.exit_code is None or ran == 0:
        raise ImprovementError(f"the dry run of the tests did not run: {report.summary()}")
    return f"dry run of the tests ({adapter.name}): {report.summary()}"


async def self_check(
    root: Path,
    patch: ImprovementPatch,
    changes: list[FileChange],
    *,
    trusted: bool,
    user_config: Path | None = None,
    environ: Mapping[str, str] | None = None,
    channel: EditorChannel | None = None,
) -> list[str]:
    """What was checked, in words; `ImprovementError` with the first problem. What runs
    (the tests' dry run, a project tool's run) passes the one gate with the after-state's
    policy, asking through `channel` (None: nobody answers, so what needs asking is not run)."""
    copy = Path(tempfile.mkdtemp(prefix="agent-lsp-improve-"))
    try:
        _copy(root, changes, copy)
        settings = _settings(root, copy, patch, trusted, user_config, environ)
        done = ["settings reload and validate"]
        declared = declared_tools(copy, patch, trusted)
        _notes(copy, patch, trusted, set(declared))
        done.append("tool schemas build with the notes")
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    safety = build_policy(root, settings)
    gate = CommandPolicy(channel or Unattended(), engine=safety.engine)
    if patch.touches_tests():
        done.append(await _dry_run(root, settings, safety, gate))
    if patch.project_tools:
        done += await check_tools(root, patch, declared, safety, gate)
    return done
