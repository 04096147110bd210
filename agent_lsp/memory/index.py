"""`memory/index.sqlite`: an FTS5 index of the experience files (path, project, tags, files,
symbols, title, text). The files are the truth: the index follows them (by mtime and size) and is
rebuilt from scratch when it is missing or corrupted. It is kept in this user's folder, outside
the project (`Layout.index`): a repository can ship experience files, never the index that
says what they hold. The experience files are read through the `ReadGuard`; the database (and
its journal files) is never opened through a link."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from agent_lsp.memory.experience import NAME, Experience, parse_experience
from agent_lsp.memory.state import read_text_file
from agent_lsp.safety.reads import ReadGuard

SCHEMA = """
CREATE TABLE IF NOT EXISTS experience(
  id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, project TEXT, date TEXT, title TEXT,
  tags TEXT, files TEXT, symbols TEXT, mtime_ns INTEGER, size INTEGER);
CREATE VIRTUAL TABLE IF NOT EXISTS experience_fts USING fts5(
  title, tags, files, symbols, body, tokenize = 'unicode61');
"""
# bm25 weights for title, tags, files, symbols, body.
WEIGHTS = (3.0, 4.0, 4.0, 4.0, 1.0)
TOKEN = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Hit:
    path: str
    title: str
    date: str
    tags: str
    files: str
    symbols: str
    rank: float
    strong: frozenset[str]  # query terms found in the title, tags, files or symbols
    weak: frozenset[str]  # query terms found only in the text


@dataclass(frozen=True)
class SyncStats:
    added: int
    updated: int
    removed: int
    total: int


def tokens(text: str) -> set[str]:
    return {t.lower() for t in TOKEN.findall(text)}


class MemoryIndex:
    """One SQLite connection per call site; cheap to open, safe across threads that way."""

    def __init__(self, db: Path, folder: Path, reads: ReadGuard | None = None) -> None:
        """`reads`: the guard of the workspace (default: one for the folder holding
        `.agent-lsp`, or the folder itself)."""
        self.db = db
        self.folder = folder
        self.reads = reads or ReadGuard(_workspace_of(folder))

    def connect(self, warnings: list[str]) -> sqlite3.Connection:
        if self.db.parent.is_relative_to(self.reads.root):
            self.reads.mkdir(self.db.parent)
        else:  # this user's folder, outside every project
            self.db.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        for suffix in ("", "-wal", "-shm", "-journal"):
            linked = Path(f"{self.db}{suffix}")
            if linked.is_symlink():  # never written through: dropped, the index rebuilt
                warnings.append(f"memory/{linked.name}: a link; removed, the index rebuilt")
                linked.unlink()
        try:
            return self._open()
        except sqlite3.DatabaseError as exc:
            warnings.append(f"memory/index.sqlite: unusable ({exc}); rebuilt from the files")
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(OSError):
                    Path(f"{self.db}{suffix}").unlink()
            return self._open()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.db, timeout=5)
        try:
            conn.executescript(SCHEMA)
            conn.execute("SELECT count(*) FROM experience").fetchone()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def sync(self, warnings: list[str]) -> SyncStats:
        """Bring the index in line with the files: add new, re-read changed, drop deleted."""
        conn = self.connect(warnings)
        try:
            with conn:
                return self._sync(conn, warnings)
        finally:
            conn.close()

    def _sync(self, conn: sqlite3.Connection, warnings: list[str]) -> SyncStats:
        known = {
            row[0]: (row[1], row[2], row[3])
            for row in conn.execute("SELECT path, id, mtime_ns, size FROM experience")
        }
        on_disk: dict[str, os.stat_result] = {}
        listed = self.reads.folder(
            self.folder, warnings=warnings, label="memory", keep=lambda p: bool(NAME.match(p.name))
        )
        for path in listed:
            if path.is_file():
                on_disk[path.name] = path.stat()
        added = updated = 0
        for name, st in on_disk.items():
            old = known.get(name)
            if old is not None and (old[1], old[2]) == (st.st_mtime_ns, st.st_size):
                continue
            text = read_text_file(self.reads, self.folder / name, f"memory/{name}", warnings)
            if text is None:
                continue
            exp = parse_experience(text, name)
            if old is not None:
                self._delete(conn, old[0])
                updated += 1
            else:
                added += 1
            self._insert(conn, name, exp, st)
        removed = 0
        for name, (row_id, _, _) in known.items():
            if name not in on_disk:
                self._delete(conn, row_id)
                removed += 1
        return SyncStats(added, updated, removed, len(on_disk))

    def _insert(
        self, conn: sqlite3.Connection, name: str, exp: Experience, st: os.stat_result
    ) -> None:
        cur = conn.execute(
            "INSERT INTO experience(path, project, date, title, tags, files, symbols, mtime_ns,"
            " size) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                name,
                exp.project,
                exp.date,
                exp.title,
                ", ".join(exp.tags),
                ", ".join(exp.files),
                ", ".join(exp.symbols),
                st.st_mtime_ns,
                st.st_size,
            ),
        )
        conn.execute(
            "INSERT INTO experience_fts(rowid, title, tags, files, symbols, body)"
            " VALUES (?,?,?,?,?,?)",
            (
                cur.lastrowid,
                exp.title,
                " ".join(exp.tags),
                " ".join(exp.files),
                " ".join(exp.symbols),
                exp.body,
            ),
        )

    @staticmethod
    def _delete(conn: sqlite3.Connection, row_id: int) -> None:
        conn.execute("DELETE FROM experience_fts WHERE rowid = ?", (row_id,))
        conn.execute("DELETE FROM experience WHERE id = ?", (row_id,))

    def search(self, terms: list[str], warnings: list[str], limit: int = 20) -> list[Hit]:
        """The best matches for any of `terms`, best first, with the terms each one matched."""
        if not terms:
            return []
        query = " OR ".join(f'"{t}"' for t in terms)
        weights = ", ".join(str(w) for w in WEIGHTS)
        conn = self.connect(warnings)
        try:
            rows = conn.execute(
                "SELECT e.path, e.title, e.date, e.tags, e.files, e.symbols,"
                f" bm25(experience_fts, {weights}) AS rank, experience_fts.body"
                " FROM experience_fts JOIN experience e ON e.id = experience_fts.rowid"
                " WHERE experience_fts MATCH ? ORDER BY rank LIMIT ?",
                (query, limit),
            ).fetchall()
        except sqlite3.DatabaseError as exc:
            warnings.append(f"memory/index.sqlite: search failed ({exc})")
            return []
        finally:
            conn.close()
        wanted = set(terms)
        hits: list[Hit] = []
        for path, title, date, tags, files, symbols, rank, body in rows:
            strong = wanted & tokens(f"{title} {tags} {files} {symbols}")
            weak = (wanted & tokens(body)) - strong
            hits.append(
                Hit(
                    path,
                    title,
                    date,
                    tags,
                    files,
                    symbols,
                    rank,
                    frozenset(strong),
                    frozenset(weak),
                )
            )
        return hits

    def count(self, warnings: list[str]) -> int:
        conn = self.connect(warnings)
        try:
            return int(conn.execute("SELECT count(*) FROM experience").fetchone()[0])
        finally:
            conn.close()

    def forget(self, name: str, warnings: list[str]) -> None:
        conn = self.connect(warnings)
        try:
            with conn:
                row = conn.execute("SELECT id FROM experience WHERE path = ?", (name,)).fetchone()
                if row is not None:
                    self._delete(conn, int(row[0]))
        finally:
            conn.close()


def _workspace_of(folder: Path) -> Path:
    parts = folder.parts
    return Path(*parts[: parts.index(".agent-lsp")]) if ".agent-lsp" in parts[1:] else folder
