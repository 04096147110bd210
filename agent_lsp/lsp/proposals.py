"""Review mode: the agent's changes become proposals the user applies, inspects or rejects.

Each proposal is a diagnostic on the changed lines with the code actions *Apply agent change*,
*Show diff* and *Reject*. Until the user decides, the agent (and its test runs) see the proposed
text; the editor's buffer and the file stay as they are. Applying checks that the text has not
moved on since the proposal was made, then uses a versioned `workspace/applyEdit`.

Review proposals outlive a restart: each is kept in `.agent-lsp/proposals/<id>.json` (with its
`<id>.diff`) until applied or rejected, and offered again when the server starts, unless the file
changed meanwhile (then it is dropped; its diff stays to read). A record is signed with this
user's key (`agent_lsp.signing`): one a repository ships is never offered as the agent's (it is
ignored, and said so), and none is offered for a file outside the workspace or one the agent
may not write (`.git`, `.agent-lsp/`, editor settings)."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import logging
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as t

from agent_lsp.fileio import atomic_write, atomic_write_bytes, read_disk_text
from agent_lsp.lsp.convert import resolved_path
from agent_lsp.lsp.publisher import SOURCE, AgentDiagnostics
from agent_lsp.lsp.textedit import lsp_lines, minimal_edit, minimal_edits
from agent_lsp.safety.paths import PathGuard
from agent_lsp.signing import Unsigned, seal, unseal

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer
    from pygls.workspace import TextDocument

log = logging.getLogger(__name__)

APPLY, SHOW, REJECT = (
    "agentLsp.applyProposal",
    "agentLsp.showProposal",
    "agentLsp.rejectProposal",
)
PROPOSALS = Path(".agent-lsp/proposals")
KIND = "proposal"  # the kind its records are signed as


@dataclass
class Proposal:
    id: str
    path: Path
    uri: str
    base_text: str
    base_version: int | None
    new_text: str
    label: str

    def diff(self, root: Path) -> str:
        return _diff(self.path, self.base_text, self.new_text, root)


class ProposalStore:
    def __init__(
        self,
        server: LanguageServer,
        root: Path,
        publisher: AgentDiagnostics,
        markers: bool = True,
    ) -> None:
        self.markers = markers  # publish a diagnostic per proposal (review mode)
        self.server = server
        self.root = root
        self.publisher = publisher
        self.by_path: dict[Path, Proposal] = {}
        self._files_lock = threading.Lock()
        if markers:
            self._load()

    def texts(self) -> dict[Path, str]:
        """Proposed texts: what the agent reads while the user has not decided."""
        return {path: p.new_text for path, p in self.by_path.items()}

    def propose(self, path: Path, new_text: str, label: str) -> Proposal:
        """Record (or extend) the proposal for `path`; the buffer is not touched."""
        existing = self.by_path.get(path)
        if existing is not None:
            existing.new_text = new_text
            proposal = existing
        else:
            uri = path.as_uri()
            doc = self.server.workspace.text_documents.get(uri)
            base, version = (doc.source, doc.version) if doc else (_disk(path), None)
            uri = doc.uri if doc else uri
            proposal = Proposal(uuid.uuid4().hex[:8], path, uri, base, version, new_text, label)
            self.by_path[path] = proposal
        self._save_soon(proposal)
        if self.markers:
            self._publish(proposal)
        return proposal

    def find(self, proposal_id: str) -> Proposal | None:
        return next((p for p in self.by_path.values() if p.id == proposal_id), None)

    def stale(self, proposal: Proposal) -> bool:
        doc = self._document(proposal)
        current = doc.source if doc else _disk(proposal.path)
        return current != proposal.base_text

    def _document(self, proposal: Proposal) -> TextDocument | None:
        """The open buffer of the proposal's file, whatever form of its URI the editor uses."""
        documents = self.server.workspace.text_documents
        doc = documents.get(proposal.uri)
        if doc is None:
            doc = next(
                (d for uri, d in documents.items() if resolved_path(uri) == proposal.path), None
            )
        return doc

    def edit_for(self, proposal: Proposal) -> t.WorkspaceEdit | None:
        """A versioned edit turning the base text into the proposal, for an open buffer."""
        doc = self._document(proposal)
        if doc is None:
            return None
        edits = minimal_edits(
            proposal.base_text, proposal.new_text, doc.position_codec.client_num_units
        )
        if not edits:
            return None
        return t.WorkspaceEdit(
            document_changes=[
                t.TextDocumentEdit(
                    text_document=t.OptionalVersionedTextDocumentIdentifier(
                        uri=doc.uri, version=doc.version
                    ),
                    edits=edits,
                )
            ]
        )

    def drop(self, proposal: Proposal) -> None:
        with self._files_lock:  # a save still running in a thread writes nothing after this
            self.by_path.pop(proposal.path, None)
            for suffix in (".diff", ".json"):
                with contextlib.suppress(OSError):
                    (self.root / PROPOSALS / f"{proposal.id}{suffix}").unlink(missing_ok=True)
        self.publisher.set("proposals", proposal.uri, [])

    def diff_path(self, proposal: Proposal) -> Path:
        return self.root / PROPOSALS / f"{proposal.id}.diff"

    def _save_soon(self, proposal: Proposal) -> None:
        """Write the proposal's files in a worker thread: the diff of a big file takes long
        enough to delay the editor's requests if done here. Without a running loop, now."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.save(proposal)
            return
        loop.run_in_executor(None, self.save, proposal)

    def save(self, proposal: Proposal) -> None:
        """Write the proposal's diff (and, in review mode, its record), unless it was decided
        or changed meanwhile: then there is nothing to keep, or a later save writes it."""
        new_text = proposal.new_text
        if self.by_path.get(proposal.path) is not proposal:
            return
        diff = _diff(proposal.path, proposal.base_text, new_text, self.root)  # the slow part
        record = None
        if self.markers:  # a review proposal: kept for after a restart
            record = json.dumps(
                {
                    "id": proposal.id,
                    "path": str(proposal.path),
                    "label": proposal.label,
                    "base_text": proposal.base_text,
                    "new_text": new_text,
                }
            )
        with self._files_lock:
            if self.by_path.get(proposal.path) is not proposal or proposal.new_text != new_text:
                return
            try:
                atomic_write(self.diff_path(proposal), diff)
                if record is not None:
                    signed = seal(KIND, record.encode("utf-8"))
                    atomic_write_bytes(self.diff_path(proposal).with_suffix(".json"), signed)
            except OSError as exc:  # the proposal still works, until a restart
                log.warning("could not save proposal %s: %s", proposal.id, exc)

    def _load(self) -> None:
        """The review proposals a previous server left, still applicable, offered again."""
        folder = self.root / PROPOSALS
        try:
            records = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        except OSError:
            return
        guard = PathGuard(self.root)
        for record in records:
            try:
                if record.is_symlink():
                    raise OSError("a link")
                data = json.loads(unseal(KIND, record.read_bytes()).decode("utf-8"))
                path = Path(data["path"])
                proposal = Proposal(
                    str(data["id"]),
                    path,
                    path.as_uri(),
                    str(data["base_text"]),
                    None,
                    str(data["new_text"]),
                    str(data["label"]),
                )
            except Unsigned as exc:
                self._warn(f"{PROPOSALS.as_posix()}/{record.name}: ignored: {exc}")
                continue
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("ignoring unreadable proposal %s: %s", record.name, exc)
                continue
            where = guard.describe(path)
            if not path.is_absolute() or not where.in_root or where.protected:
                self._warn(f"{PROPOSALS.as_posix()}/{record.name}: ignored: not a file to change")
                continue
            if not path.is_file() or self.stale(proposal) or path in self.by_path:
                with contextlib.suppress(OSError):  # the text moved on: it cannot apply
                    record.unlink()
                continue
            self.by_path[path] = proposal
            self._publish(proposal)

    def _warn(self, message: str) -> None:
        log.warning("%s", message)
        self.server.window_show_message(
            t.ShowMessageParams(type=t.MessageType.Warning, message=f"agent-lsp: {message}")
        )

    def _publish(self, proposal: Proposal) -> None:
        edit = minimal_edit(proposal.base_text, proposal.new_text, len)
        lines = lsp_lines(proposal.base_text)
        start = edit.range.start.line if edit else 0
        end = max(start, (edit.range.end.line if edit else 0) - 1)
        width = len(lines[end].rstrip("\r\n")) if end < len(lines) else 0
        diagnostic = t.Diagnostic(
            range=t.Range(
                start=t.Position(line=start, character=0),
                end=t.Position(line=end, character=width),
            ),
            message=f"agent proposes a change ({proposal.label}): apply, show the diff or reject",
            severity=t.DiagnosticSeverity.Information,
            source=SOURCE,
            data={"proposalId": proposal.id},
        )
        self.publisher.set("proposals", proposal.uri, [diagnostic])


def review_actions(diagnostic: t.Diagnostic) -> list[t.CodeAction]:
    data = diagnostic.data
    proposal_id = data.get("proposalId") if isinstance(data, dict) else None
    if not isinstance(proposal_id, str):
        return []
    args = [{"proposalId": proposal_id}]
    return [
        t.CodeAction(
            title=title,
            kind=t.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=command == APPLY,
            command=t.Command(title=title, command=command, arguments=args),
        )
        for title, command in (
            ("Apply agent change", APPLY),
            ("Show diff of agent change", SHOW),
            ("Reject agent change", REJECT),
        )
    ]


def _diff(path: Path, base_text: str, new_text: str, root: Path) -> str:
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else ""
    return "".join(
        difflib.unified_diff(
            base_text.splitlines(keepends=True),
            new_text.splitlines(keepends=True),
            f"a/{rel or path.name}",
            f"b/{rel or path.name} (proposed)",
        )
    )


def _disk(path: Path) -> str:
    try:
        return read_disk_text(path)
    except OSError:
        return ""
