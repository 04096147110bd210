"""`agent-lsp improve "request"`, `--list`, `--revert ID`: the agent proposes a change to its own
setup for the project (a task of kind improve: read-only tools and `propose_improvement`); the
terminal shows the patch and asks (Apply / Reject) unless `--yes`; then it is applied, checked
and logged (`agent_lsp.improve`)."""

from __future__ import annotations

import sys
from pathlib import Path

from agent_lsp.cli.terminal import TerminalChannel
from agent_lsp.config.settings import load_settings
from agent_lsp.improve import (
    ImprovementError,
    ImprovementPatch,
    ProposeImprovementTool,
    apply_improvement,
    improve_task,
    list_improvements,
    plan,
    revert_improvement,
    unified_diff,
)
from agent_lsp.seams import Model
from agent_lsp.session import Session

EXIT_OK, EXIT_NOT_DONE, EXIT_USAGE = 0, 1, 2
APPLY, REJECT = "Apply", "Reject"


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def improve(
    root: Path, request: str, *, yes: bool = False, model: Model | None = None
) -> int:
    """Propose (one task), show, ask, apply; exit 0 applied, 1 not (none proposed, rejected,
    refused, rolled back), 2 bad input."""
    if not root.is_dir():  # noqa: ASYNC240 - one stat before anything starts
        _err(f"agent-lsp: {root} is not a folder")
        return EXIT_USAGE
    if not request.strip():
        _err('agent-lsp improve: say what to improve: agent-lsp improve "…"')
        return EXIT_USAGE
    loaded = load_settings(root)
    for warning in loaded.warnings:
        _err(f"agent-lsp: warning: {warning}")
    session = Session(root, loaded.settings, model)
    channel = TerminalChannel()  # --yes applies the patch; it answers no permission question
    tool = ProposeImprovementTool(loaded.settings)
    task = improve_task(request)
    try:
        outcome = await session.run_task(task, channel, tools=[tool])
    finally:
        channel.close()
        await session.aclose()
    patch = tool.proposed
    if patch is None:
        print(f"■ no improvement proposed: {outcome.summary}", flush=True)
        return EXIT_NOT_DONE
    return await _review(root, request, patch, loaded.trusted, channel, yes)


async def _review(
    root: Path,
    request: str,
    patch: ImprovementPatch,
    trusted: bool,
    channel: TerminalChannel,
    yes: bool,
) -> int:
    settings = load_settings(root).settings  # as they are now
    try:
        changes = plan(root, patch, settings)
    except ImprovementError as exc:
        print(f"■ improvement {exc}", flush=True)
        return EXIT_NOT_DONE
    print(f"proposed: {patch.summary}\n{unified_diff(changes)}", end="", flush=True)
    answer = APPLY if yes else await channel.ask("Apply this improvement?", [APPLY, REJECT])
    if answer != APPLY:
        print("■ rejected: nothing changed", flush=True)
        return EXIT_NOT_DONE
    try:
        record = await apply_improvement(
            root, patch, request, settings, trusted=trusted, channel=channel
        )
    except ImprovementError as exc:
        print(f"■ improvement {exc}", flush=True)
        return EXIT_NOT_DONE
    print(f"■ applied {record.id}: {patch.summary}", flush=True)
    print(f"  checked: {'; '.join(record.checked)}", flush=True)
    print(f"  revert: agent-lsp improve --revert {record.id}", flush=True)
    return EXIT_OK


def show_list(root: Path) -> int:
    warnings: list[str] = []
    records = list_improvements(root, warnings)
    for warning in warnings:
        _err(f"agent-lsp: warning: {warning}")
    if not records:
        print('no improvements yet (agent-lsp improve "…")')
    for r in records:
        state = f"reverted {r.reverted}" if r.reverted else "applied"
        files = ", ".join(c.path for c in r.files)
        print(f"{r.id}  {r.time}  {state}  {r.patch.summary}  [{files}]  request: {r.request}")
    return EXIT_OK


def revert(root: Path, ident: str) -> int:
    warnings: list[str] = []
    try:
        record = revert_improvement(root, ident, warnings)
    except ImprovementError as exc:
        for warning in warnings:
            _err(f"agent-lsp: warning: {warning}")
        _err(f"agent-lsp improve: {exc}")
        return EXIT_NOT_DONE
    for warning in warnings:
        _err(f"agent-lsp: warning: {warning}")
    files = ", ".join(c.path for c in record.files)
    print(f"reverted {record.id}: {record.patch.summary} ({files} as before)")
    return EXIT_OK
