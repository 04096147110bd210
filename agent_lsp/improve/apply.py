"""Apply, list and revert improvements. Applying: the guard, the after-state rendered, the
self-check on a copy, then the real files replaced (each atomically; all put back if one
cannot be written) and the change logged in `.agent-lsp/improvements/<id>.json` with each
file's before- and after-state, the request and the time. Any failure changes nothing.

A revert restores one change's before-state, only while the files still hold its after-state.

The log is in the project, where a repository can ship files: each record is signed with this
user's key (`agent_lsp.signing`); one that is not is ignored, with a warning, never listed as
the user's or reverted. And even a signed record only ever writes the files an improvement
writes (`improvable`): never `.git`, never outside the workspace, never through a link."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

from agent_lsp.config.schema import Settings
from agent_lsp.improve.check import self_check
from agent_lsp.improve.files import FileChange, ImprovementError, read_current, render
from agent_lsp.improve.patch import ImprovementPatch, refusals
from agent_lsp.memory.layout import Layout
from agent_lsp.safety.reads import Refused
from agent_lsp.seams import EditorChannel
from agent_lsp.signing import Unsigned, seal, unseal

KIND = "improvement"  # the kind its records are signed as

__all__ = ["Improvement", "apply_improvement", "list_improvements", "revert_improvement"]


class Improvement(BaseModel):
    id: str
    time: str
    request: str
    patch: ImprovementPatch
    files: list[FileChange]
    checked: list[str] = []
    reverted: str | None = None  # when


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def improvable(layout: Layout) -> frozenset[str]:
    """The only files an improvement writes, relative to the root."""
    paths = (layout.config, layout.prompt_notes, layout.tool_notes, layout.tools_file)
    return frozenset(layout.rel(p) for p in paths)


def _refused_paths(layout: Layout, changes: list[FileChange]) -> list[str]:
    """The files of `changes` an improvement never writes (or that resolve elsewhere)."""
    allowed = improvable(layout)
    refused: list[str] = []
    for change in changes:
        inside = layout.reads.describe(layout.root / change.path).in_root
        if change.path not in allowed or not inside:
            refused.append(change.path)
    return refused


def _write(layout: Layout, changes: list[FileChange], after: bool) -> None:
    """Each file to its after- (or before-) state; if one cannot be written, the ones
    written so far are put back and the error raised. Only `improvable` files, ever."""
    refused = _refused_paths(layout, changes)
    if refused:
        raise ImprovementError(
            f"refused: {', '.join(refused)} is not a file an improvement writes; nothing changed"
        )
    done: list[FileChange] = []
    try:
        for change in changes:
            path = layout.root / change.path
            text = change.after if after else change.before
            if text is None:
                path.unlink(missing_ok=True)
            else:
                layout.reads.mkdir(path.parent)
                layout.reads.write(path, text)
            done.append(change)
    except OSError as exc:
        for change in reversed(done):
            path = layout.root / change.path
            old = change.before if after else change.after
            with contextlib.suppress(OSError):
                if old is None:
                    path.unlink(missing_ok=True)
                else:
                    layout.reads.write(path, old)
        raise ImprovementError(f"not applied: {exc}; nothing changed") from exc


def plan(root: Path, patch: ImprovementPatch, settings: Settings) -> list[FileChange]:
    """The files `patch` would change; `ImprovementError` when the guard refuses it."""
    refused = refusals(patch, settings)
    if refused:
        raise ImprovementError("refused: " + "; ".join(refused))
    return render(root, patch)


async def apply_improvement(
    root: Path,
    patch: ImprovementPatch,
    request: str,
    settings: Settings,
    *,
    trusted: bool,
    user_config: Path | None = None,
    environ: Mapping[str, str] | None = None,
    channel: EditorChannel | None = None,
) -> Improvement:
    """Guard, self-check on a copy, replace the files, log: the logged change. `channel`
    answers the gate's questions of the self-check (without an OS sandbox the dry run of the
    tests asks; None: nobody answers)."""
    changes = plan(root, patch, settings)
    if not changes:
        raise ImprovementError("nothing to change: the files already say this")
    try:
        checked = await self_check(
            root,
            patch,
            changes,
            trusted=trusted,
            user_config=user_config,
            environ=environ,
            channel=channel,
        )
    except ImprovementError as exc:
        raise ImprovementError(f"rolled back, nothing changed: {exc}") from exc
    layout = Layout(root)
    moved = [c.path for c in changes if read_current(layout, root / c.path) != c.before]
    if moved:  # changed while the tests ran: the check was of another state
        raise ImprovementError(f"not applied: {', '.join(moved)} changed meanwhile; try again")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    record = Improvement(
        id=f"{stamp}-{secrets.token_hex(2)}",
        time=_now(),
        request=request,
        patch=patch,
        files=changes,
        checked=checked,
    )
    layout.reads.mkdir(layout.improvements)
    _write(layout, changes, after=True)
    _save(layout, record)
    return record


def _save(layout: Layout, record: Improvement) -> None:
    body = record.model_dump_json(indent=2).encode("utf-8")
    layout.reads.write_bytes(layout.improvements / f"{record.id}.json", seal(KIND, body))


def _load(layout: Layout, path: Path) -> Improvement:
    """One record: `Unsigned` when it is not this user's, `Refused` / `OSError` when it cannot
    be read, `ValueError` when it is not a record."""
    body = unseal(KIND, layout.reads.read_bytes(path, ""))
    record = Improvement.model_validate(json.loads(body.decode("utf-8")))
    if f"{record.id}.json" != path.name:
        raise ValueError(f"it names another record ({record.id})")
    return record


def list_improvements(root: Path, warnings: list[str] | None = None) -> list[Improvement]:
    """Every logged change of this user, oldest first. A file that is not one (unsigned, signed
    by another key, unreadable) is skipped, and said in `warnings`."""
    layout = Layout(root)
    out: list[Improvement] = []
    said = [] if warnings is None else warnings
    for path in layout.reads.folder(layout.improvements, "", said, "improvements"):
        if not path.name.endswith(".json"):
            continue
        try:
            out.append(_load(layout, path))
        except Unsigned as exc:
            said.append(f"{layout.rel(path)}: ignored: {exc}")
        except (OSError, ValueError, ValidationError) as exc:
            reason = exc.reason if isinstance(exc, Refused) else str(exc).splitlines()[0][:120]
            said.append(f"{layout.rel(path)}: ignored: unreadable ({reason})")
    return sorted(out, key=lambda r: r.id)


def revert_improvement(root: Path, ident: str, warnings: list[str] | None = None) -> Improvement:
    """Restore the before-state of change `ident` (a unique part of its id will do); files
    that are not this user's records are never reverted (said in `warnings`)."""
    layout = Layout(root)
    said: list[str] = []
    found = [r for r in list_improvements(root, said) if ident and ident in r.id]
    if warnings is not None:
        warnings.extend(said)
    if not found and ident and any(ident in w.split(":", 1)[0] for w in said):
        ignored = next(w for w in said if ident in w.split(":", 1)[0])
        raise ImprovementError(f"not reverted: {ignored}")
    if len(found) != 1:
        what = "no improvement" if not found else "more than one improvement"
        raise ImprovementError(f"{what} matches {ident!r} (agent-lsp improve --list)")
    record = found[0]
    if record.reverted:
        raise ImprovementError(f"{record.id} was already reverted ({record.reverted})")
    changed = [
        c.path for c in record.files if read_current(layout, layout.root / c.path) != c.after
    ]
    if changed:
        raise ImprovementError(
            f"not reverted: {', '.join(changed)} changed since {record.id} was applied "
            "(a later improvement or an edit); revert the later change first or edit by hand"
        )
    _write(layout, record.files, after=False)
    record.reverted = _now()
    _save(layout, record)
    return record
