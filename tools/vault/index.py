"""The vault index (SPEC V6): notes chunked by heading, in SQLite full text and vectors.

`vault_chunks` is the owner table of the shared `HybridIndex` engine (the same code that
serves conclusions, another collection). Each chunk's id is derived from its note's path
and its content hash, so re-indexing a changed note adds only chunks whose text changed and
drops the ones that are gone; an unchanged note (same size and mtime) is not even read.
Renames and deletes remove every chunk of the old path. Files that are not notes are
recorded with the reason they were skipped.

The content hash is of the chunk's text as a reader sees it (links as their words): a
chunk whose only change is where a link points keeps its id and its vector; only its
stored text and full-text terms are rewritten. A whole-vault run is two passes, full text
first and vectors after, so search answers before the embedding model is done. With
`background`, the index follows the vault's writes on a thread of its own: a write (and
the tool that made it) never waits for the model; `pending()` says what is still queued.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

from memory.db import Database, Migrations, Statement
from memory.index import HybridIndex, Vectors, Weights
from memory.text import STOP_WORDS, fts_document, query_terms
from tools.vault.notes import (
    Chunk,
    NotANote,
    chunk_embed_text,
    chunk_note,
    name_problem,
    note_title,
    parse_note,
    read_note_bytes,
    readable_name,
    shown_text,
    skip_reason,
    unique_tags,
)
from tools.vault.store import Vault, VaultEvent

log = logging.getLogger(__name__)

EMBED_BATCH = 256
BACKGROUND_BATCH = 32
SEARCH_MAX_CANDIDATES = 2000
SNIPPET_CHARS = 180
Progress = Callable[[str, int, int], None]  # (phase, done, total)
TEXT_COMMIT_STATEMENTS = 5000
_HEADING_LINE = re.compile(r"\A\s{0,3}#{1,6}[ \t][^\n]*\n?")
SKIPPED_INSERT = "INSERT OR REPLACE INTO vault_skipped (path, reason, seen_at) VALUES (?, ?, ?)"

migrations = Migrations("vault_index")


@migrations
def m001_tables(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE vault_notes (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, "
        "size INTEGER NOT NULL, chunks INTEGER NOT NULL, frontmatter_error TEXT, "
        "indexed_at REAL NOT NULL)"
    )
    db.execute(
        "CREATE TABLE vault_chunks (id TEXT PRIMARY KEY, path TEXT NOT NULL, heading TEXT NOT "
        "NULL, ordinal INTEGER NOT NULL, text TEXT NOT NULL, hash TEXT NOT NULL, "
        "mtime REAL NOT NULL)"
    )
    db.execute("CREATE INDEX vault_chunks_by_path ON vault_chunks (path)")
    db.execute(
        "CREATE TABLE vault_tags (path TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (path, tag))"
    )
    db.execute("CREATE INDEX vault_tags_by_tag ON vault_tags (tag)")
    db.execute(
        "CREATE TABLE vault_skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL, "
        "seen_at REAL NOT NULL)"
    )
    db.execute("CREATE TABLE vault_index_state (key TEXT PRIMARY KEY, value TEXT)")


@dataclass
class IndexReport:
    """What one indexing run did."""

    notes: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_kept: int = 0
    relinked: int = 0  # chunks whose only change was a link target: text updated, vector kept
    embedded: int = 0
    text_seconds: float = 0.0  # until full-text search covered every note
    repaired: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class VaultHit:
    path: str
    heading: str
    snippet: str
    score: float
    chunk_id: str

    def as_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {"path": self.path, "snippet": self.snippet, "score": self.score}
        if self.heading:
            row["heading"] = self.heading
        return row


def chunk_id(path: str, content: str, duplicate: int) -> str:
    return hashlib.sha1(f"{path}\0{content}\0{duplicate}".encode()).hexdigest()[:24]


def _ids(chunks: Sequence[Chunk]) -> list[str]:
    """Stable ids: the same text in the same note keeps its id wherever it moves."""
    seen: dict[str, int] = {}
    ids = []
    for chunk in chunks:
        duplicate = seen.get(chunk.hash, 0)
        seen[chunk.hash] = duplicate + 1
        ids.append(chunk_id(chunk.path, chunk.hash, duplicate))
    return ids


def _like_prefix(prefix: str) -> str:
    return re.sub(r"([\\%_])", r"\\\1", prefix) + "%"


@dataclass
class _Pending:
    """Chunks written to SQLite whose vectors are not yet written (one embedding batch)."""

    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    unembed: list[str] = field(default_factory=list)


class VaultIndex:
    """Keeps the hybrid index of one vault. With `follow`, it updates itself after every
    write and undo the `Vault` makes; a file watcher calls `index_note`/`remove_note`."""

    def __init__(
        self,
        vault: Vault,
        database: Database,
        vectors: Vectors | None,
        *,
        weights: Weights | None = None,
        follow: bool = True,
        refresh_before_search: bool = False,
        background: bool = False,
    ) -> None:
        self.vault = vault
        self.database = database
        self.vectors = vectors
        self.refresh_before_search = refresh_before_search
        self.background = background
        self._refreshed = False
        database.migrate(migrations)
        self.index = HybridIndex(database, "vault", "vault_chunks", vectors, weights)
        self._lock = threading.RLock()
        self._todo: OrderedDict[str, str] = OrderedDict()  # path -> "index" | "remove"
        self._busy: list[str] = []
        self._queue = threading.Condition()
        self._worker: threading.Thread | None = None
        self._closing = False
        self._vector_thread: threading.Thread | None = None
        self._progress: dict[str, Any] = {"phase": "idle", "done": 0, "total": 0}
        if follow:
            vault.subscribe(self.on_vault_change)

    # -- state --------------------------------------------------------------------------------

    def _get_state(self, key: str) -> str | None:
        rows = self.database.query("SELECT value FROM vault_index_state WHERE key = ?", [key])
        return rows[0]["value"] if rows else None

    def _state_statement(self, key: str, value: str | None) -> Statement:
        return (
            "INSERT INTO vault_index_state (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def _set_state(self, key: str, value: str | None) -> None:
        self.database.write(*self._state_statement(key, value))

    # -- writing ------------------------------------------------------------------------------

    def on_vault_change(self, event: VaultEvent) -> None:
        """After a write: bring its notes up to date, in the background when `background`
        (the write, and the tool that made it, never wait for the embedding model)."""
        if not self.background:
            for path in event.removed:
                self.remove_note(path)
            for path in event.changed:
                self.index_note(path)
            return
        with self._queue:
            for path in event.removed:
                self._todo.pop(path, None)
                self._todo[path] = "remove"
            for path in event.changed:
                self._todo.pop(path, None)
                self._todo[path] = "index"
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._work, name="vault-index-follow", daemon=True
                )
                self._worker.start()
            self._queue.notify_all()

    def _work(self) -> None:
        while True:
            with self._queue:
                while not self._todo and not self._closing:
                    self._queue.wait()
                if not self._todo:
                    return
                batch = list(self._todo.items())
                self._todo.clear()
                self._busy = [path for path, _ in batch]
            try:
                self._index_batch(batch)
            except Exception:  # the next full run repairs: the notes' mtimes differ
                log.exception("vault: background indexing failed for %d note(s)", len(batch))
            finally:
                with self._queue:
                    self._busy = []
                    self._queue.notify_all()

    def _index_batch(self, batch: list[tuple[str, str]]) -> None:
        """Removals, then every changed note in one transaction and one embedding run."""
        for path, op in batch:
            if op == "remove":
                self.remove_note(path)
        report = IndexReport()
        with self._lock:
            pending = _Pending()
            statements: list[Statement] = []
            for path, op in batch:
                rel = self._relative(path) if op == "index" else None
                if rel is not None:
                    statements += self._note_statements(rel, report, pending)
            self.database.write_many(statements)
            self._flush(pending, report)

    def pending(self) -> list[str]:
        """Notes written whose index update has not finished yet."""
        with self._queue:
            return [*self._busy, *self._todo]

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until the background updates are done; False if `timeout` came first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._queue:
            while self._todo or self._busy:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._queue.wait(left)
        return True

    def _relative(self, path: str | Path) -> str | None:
        """A vault-relative path worth indexing: inside the root, not hidden, not a folder."""
        rel = self.vault.jail.relative(path)
        if rel is None or rel in ("", ".") or (self.vault.root / rel).is_dir():
            return None
        if any(part.startswith(".") for part in rel.split("/")):
            return None  # .obsidian/, .git/, temp files of atomic writes
        return rel

    def index_note(self, path: str | Path) -> IndexReport:
        """Bring one note's chunks up to date (after a write, or a watcher event with an
        absolute or vault-relative path). A path that is gone is removed from the index."""
        report = IndexReport()
        with self._lock:
            pending = _Pending()
            rel = self._relative(path)
            if rel is None:
                return report
            if name_problem(rel):  # SQLite cannot hold such a name: record it readably
                self.database.write(
                    SKIPPED_INSERT, (readable_name(rel), name_problem(rel), time.time())
                )
                report.skipped += 1
                return report
            statements = self._note_statements(rel, report, pending)
            self.database.write_many(statements)
            self._flush(pending, report)
        return report

    def remove_note(self, path: str | Path) -> IndexReport:
        """Forget a note (or a folder of notes) that was deleted or renamed away: no stale
        chunk stays behind."""
        report = IndexReport()
        with self._lock:
            rel = self.vault.jail.relative(path)
            if rel is None or rel in ("", "."):
                return report
            if name_problem(rel):
                rel = readable_name(rel)  # how it was recorded when skipped
            found = self.database.query(
                "SELECT path FROM vault_notes WHERE path = ? OR path LIKE ? ESCAPE '\\' "
                "UNION SELECT path FROM vault_chunks WHERE path = ?",
                [rel, _like_prefix(rel + "/"), rel],
            )
            statements: list[Statement] = [
                (
                    "DELETE FROM vault_skipped WHERE path = ? OR path LIKE ? ESCAPE '\\'",
                    (rel, _like_prefix(rel + "/")),
                ),
            ]
            ids: list[str] = []
            for row in found:
                removal, removed_ids = self._removal(row["path"])
                statements.extend(removal)
                ids.extend(removed_ids)
                report.removed += 1
            self.database.write_many(statements)
            self.index.unembed(ids)
            report.chunks_removed = len(ids)
        return report

    def _removal(self, rel: str) -> tuple[list[Statement], list[str]]:
        ids = [
            row["id"]
            for row in self.database.query("SELECT id FROM vault_chunks WHERE path = ?", [rel])
        ]
        statements: list[Statement] = []
        for doc_id in ids:
            statements.extend(self.index.delete_statements(doc_id))
        statements += [
            ("DELETE FROM vault_chunks WHERE path = ?", (rel,)),
            ("DELETE FROM vault_notes WHERE path = ?", (rel,)),
            ("DELETE FROM vault_tags WHERE path = ?", (rel,)),
        ]
        return statements, ids

    def _note_statements(self, rel: str, report: IndexReport, pending: _Pending) -> list[Statement]:
        """SQLite statements that bring one note up to date; new chunks go to `pending`."""
        absolute = self.vault.root / rel
        try:
            stat = absolute.stat()
            reason = name_problem(rel) or skip_reason(
                absolute, max_bytes=self.vault.max_bytes, size=stat.st_size, mode=stat.st_mode
            )
            raw = None
            if not reason:
                data = read_note_bytes(absolute, max_bytes=self.vault.max_bytes)
                raw = data.decode("utf-8", errors="replace")
        except FileNotFoundError:
            statements, ids = self._removal(rel)
            pending.unembed.extend(ids)
            report.chunks_removed += len(ids)
            report.removed += 1 if ids else 0
            return [*statements, ("DELETE FROM vault_skipped WHERE path = ?", (rel,))]
        except NotANote as exc:
            reason, raw = str(exc), None
        except OSError as exc:
            reason, raw, stat = f"unreadable: {exc.strerror or exc}", None, None
        note = None
        if not reason and raw is not None:
            try:
                note = parse_note(rel, raw)
                chunks = chunk_note(note)
            except Exception as exc:  # one odd note never stops the vault
                log.warning("vault: cannot parse %s", rel, exc_info=True)
                reason = f"cannot be parsed: {type(exc).__name__}: {exc}"[:300]
        if reason or note is None or stat is None:
            statements, ids = self._removal(rel)
            pending.unembed.extend(ids)
            report.chunks_removed += len(ids)
            report.skipped += 1
            statements.append(
                (
                    SKIPPED_INSERT,
                    (readable_name(rel), reason or "unreadable", time.time()),
                )
            )
            return statements
        ids = _ids(chunks)
        stored = {
            row["id"]: row["text"]
            for row in self.database.query(
                "SELECT id, text FROM vault_chunks WHERE path = ?", [rel]
            )
        }
        existing = set(stored)
        statements: list[Statement] = [("DELETE FROM vault_skipped WHERE path = ?", (rel,))]
        gone = existing - set(ids)
        for doc_id in gone:
            statements.extend(self.index.delete_statements(doc_id))
            statements.append(("DELETE FROM vault_chunks WHERE id = ?", (doc_id,)))
        pending.unembed.extend(gone)
        added = 0
        for doc_id, chunk in zip(ids, chunks, strict=True):
            if doc_id in existing:
                statements.append(
                    (
                        "UPDATE vault_chunks SET ordinal = ?, mtime = ?, text = ? WHERE id = ?",
                        (chunk.ordinal, stat.st_mtime, chunk.text, doc_id),
                    )
                )
                if stored[doc_id] != chunk.text:  # only where a link points: same vector
                    statements += self.index.write_statements(doc_id, chunk.index_text)
                    report.relinked += 1
                continue
            added += 1
            statements.append(
                (
                    "INSERT INTO vault_chunks (id, path, heading, ordinal, text, hash, mtime) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        doc_id,
                        rel,
                        chunk.heading,
                        chunk.ordinal,
                        chunk.text,
                        chunk.hash,
                        stat.st_mtime,
                    ),
                )
            )
            statements.append(
                (
                    f"INSERT INTO {self.index.fts_table} (id, terms) VALUES (?, ?)",
                    (doc_id, fts_document(chunk.index_text)),
                )
            )
            pending.ids.append(doc_id)
            pending.texts.append(chunk.embed_text)
        statements.append(("DELETE FROM vault_tags WHERE path = ?", (rel,)))
        for tag in unique_tags(t.casefold() for t in note.tags):
            statements.append(("INSERT INTO vault_tags (path, tag) VALUES (?, ?)", (rel, tag)))
        statements.append(
            (
                "INSERT OR REPLACE INTO vault_notes (path, mtime_ns, size, chunks, "
                "frontmatter_error, indexed_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    rel,
                    stat.st_mtime_ns,
                    stat.st_size,
                    len(chunks),
                    note.frontmatter_error,
                    time.time(),
                ),
            )
        )
        report.notes += 1
        report.chunks_added += added
        report.chunks_removed += len(gone)
        report.chunks_kept += len(chunks) - added
        if added or gone:
            report.changed += 1
        else:
            report.unchanged += 1
        return statements

    def _flush(self, pending: _Pending, report: IndexReport) -> None:
        """Write the vectors of chunks SQLite already holds; a failure is left to repair."""
        if pending.unembed:
            self.index.unembed(pending.unembed)
        if pending.ids:
            if self.index.embed(pending.ids, pending.texts):
                report.embedded += len(pending.ids)
            else:
                self._set_state("vectors_dirty", "1")
        pending.ids, pending.texts, pending.unembed = [], [], []

    def index_vault(
        self,
        *,
        full: bool = False,
        progress: Progress | None = None,
        vectors_in_background: bool = False,
    ) -> IndexReport:
        """Index every note: changed chunks re-embedded, notes that are gone removed.
        `full` (or a changed embedding model) drops the index and rebuilds it from the files.

        Two passes. The text pass parses the changed notes and writes their chunks and
        full-text terms to SQLite, committing as it goes: full-text search answers from
        the first commit, and for the whole vault once the pass is done (`text_seconds`).
        The vector pass then embeds the new chunks a batch at a time; with
        `vectors_in_background` it runs on its own thread and this returns after the
        text pass (`wait_for_vectors` joins it). Until vectors are complete the index is
        marked `vectors_dirty`, so an interrupted run is repaired by the next one.
        `progress(phase, done, total)` is told about both passes ("text": notes,
        "vectors": chunks)."""
        started = time.perf_counter()
        report = IndexReport()
        self.wait_for_vectors()  # before the lock: that pass takes it too
        with self._lock:
            repair = False
            if self.vectors is not None:
                repair = self._get_state("vectors_dirty") == "1"  # a run was interrupted
                full = full or self.vectors.needs_reembed
            if full:
                self._clear()
                repair = False
            self._set_state("vectors_dirty", "1")  # until this run's vectors are all written
            self._phase("scan", 0, 0, progress)
            scan = self.vault.scan(peek=False)  # files that changed are checked when read
            known = {
                row["path"]: (row["mtime_ns"], row["size"])
                for row in self.database.query("SELECT path, mtime_ns, size FROM vault_notes")
            }
            on_disk = {info.path for info in scan.notes}
            pending = _Pending()
            statements: list[Statement] = [("DELETE FROM vault_skipped", ())]
            statements += [(SKIPPED_INSERT, (s.path, s.reason, time.time())) for s in scan.skipped]
            report.skipped = len(scan.skipped)
            for path in sorted(set(known) - on_disk):
                removal, ids = self._removal(path)
                statements.extend(removal)
                pending.unembed.extend(ids)
                report.chunks_removed += len(ids)
                report.removed += 1
            total = len(scan.notes)
            written = 0
            for done, info in enumerate(scan.notes, start=1):
                if known.get(info.path) == (info.mtime_ns, info.size):
                    report.notes += 1
                    report.unchanged += 1
                else:
                    statements.extend(self._note_statements(info.path, report, pending))
                if len(statements) >= TEXT_COMMIT_STATEMENTS or len(pending.ids) - written >= (
                    EMBED_BATCH
                ):
                    self.database.write_many(statements)  # searchable from here on
                    statements, written = [], len(pending.ids)
                self._phase("text", done, total, progress)
            statements.append(self._state_statement("last_indexed", str(time.time())))
            self.database.write_many(statements)
            report.text_seconds = round(time.perf_counter() - started, 3)
        if vectors_in_background and (pending.ids or pending.unembed or repair):
            self._vector_thread = threading.Thread(
                target=self._vector_pass,
                args=(pending, report, repair, progress, started),
                name="vault-vectors",
                daemon=True,
            )
            self._vector_thread.start()
            return report
        self._vector_pass(pending, report, repair, progress, started)
        return report

    def _vector_pass(
        self,
        pending: _Pending,
        report: IndexReport,
        repair: bool,
        progress: Progress | None,
        started: float,
    ) -> None:
        """Embed what the text pass wrote, a batch at a time; then repair drift."""
        try:
            with self._lock:
                if pending.unembed:
                    self.index.unembed(pending.unembed)
                total = len(pending.ids)
                self._phase("vectors", 0, total, progress)
                # in the background, small batches: closing waits for one batch at most
                size = (
                    BACKGROUND_BATCH
                    if threading.current_thread() is self._vector_thread
                    else (EMBED_BATCH)
                )
                for first in range(0, total, size):
                    if self._closing:
                        return  # vectors_dirty stays set: the next run embeds the rest
                    batch = _Pending(
                        pending.ids[first : first + size], pending.texts[first : first + size]
                    )
                    self._flush(batch, report)
                    self._phase("vectors", min(first + size, total), total, progress)
                if repair or self._vectors_failed(report):
                    report.repaired = self._repair(full=False)
                    report.embedded += report.repaired.get("added", 0)
                if not self._vectors_failed(report) and "failed" not in report.repaired:
                    self._set_state("vectors_dirty", None)
        except Exception:  # full text still works; the next run repairs the vectors
            if self._closing:  # the process is ending under it: the next run repairs
                log.debug("vault: embedding stopped at close", exc_info=True)
            else:
                log.exception("vault: embedding the index failed")
        finally:
            report.seconds = round(time.perf_counter() - started, 3)
            self._phase("idle", 0, 0, None)

    def wait_for_vectors(self, timeout: float | None = None) -> bool:
        """Wait for a vector pass running in the background; False if still running."""
        thread = self._vector_thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _phase(self, phase: str, done: int, total: int, progress: Progress | None) -> None:
        self._progress = {"phase": phase, "done": done, "total": total}
        if progress is not None and phase != "idle":
            progress(phase, done, total)

    def progress_state(self) -> dict[str, Any] | None:
        """What an indexing run is doing now (None when none runs): for `status`."""
        state = dict(self._progress)
        return None if state.get("phase", "idle") == "idle" else state

    def _vectors_failed(self, report: IndexReport) -> bool:
        return self.vectors is not None and report.embedded < report.chunks_added

    def repair_vectors(self) -> dict[str, int]:
        """Re-add every chunk vector the collection lacks (after it was lost or rebuilt)."""
        with self._lock:
            return self._repair(full=False)

    def _repair(self, *, full: bool) -> dict[str, int]:
        try:
            return self.index.sync(self._rows, full=full)
        except Exception as exc:  # noqa: BLE001 - vectors unavailable: full text still works
            log.warning("vault: vector index repair failed: %s", exc)
            return {"failed": 1}

    def _rows(self) -> Iterable[tuple[str, str]]:
        """(id, embedded text) of every chunk, rebuilt from the owner table."""
        titles: dict[str, str] = {}
        for row in self.database.query("SELECT id, path, heading, text FROM vault_chunks"):
            title = titles.setdefault(row["path"], note_title(row["path"]))
            yield row["id"], _embed_text(title, row["heading"], row["text"])

    def _clear(self) -> None:
        self.database.write_many(
            [
                ("DELETE FROM vault_chunks", ()),
                ("DELETE FROM vault_notes", ()),
                ("DELETE FROM vault_tags", ()),
                ("DELETE FROM vault_skipped", ()),
                (f"DELETE FROM {self.index.fts_table}", ()),
            ]
        )
        if self.vectors is not None:
            self.vectors.reset()

    # -- reading ------------------------------------------------------------------------------

    def close(self, *, drain_s: float = 5.0) -> None:
        """Finish the background updates (for at most `drain_s`: what is left, the next
        run finds by its changed mtime), then close."""
        self.wait_idle(drain_s)
        with self._queue:
            self._closing = True
            self._queue.notify_all()
        self.wait_for_vectors(drain_s)
        self.index.close()

    def search(
        self, query: str, k: int = 8, *, folder: str | None = None, tag: str | None = None
    ) -> list[VaultHit]:
        """The best chunks for `query` (full text and meaning), one per note section.

        With `refresh_before_search` (a process no watcher keeps the index current for),
        the first search brings the index up to date: only changed notes are re-embedded."""
        if self.refresh_before_search and not self._refreshed:
            self._refreshed = True
            # full text answers now; the meaning of new chunks follows in the background
            self.index_vault(vectors_in_background=True)
        clauses, params = ["1"], []
        if folder:
            base = self.vault.jail.folder(folder)
            if base.rel:
                clauses.append("o.path LIKE ? ESCAPE '\\'")
                params.append(_like_prefix(base.rel + "/"))
        if tag:
            wanted = tag.strip().lstrip("#").casefold()
            clauses.append(
                "o.path IN (SELECT path FROM vault_tags WHERE tag = ? OR tag LIKE ? ESCAPE '\\')"
            )
            params += [wanted, _like_prefix(wanted + "/")]
        templates = self.vault.jail.folder(self.vault.templates_folder).rel
        if templates and not (folder and self.vault.jail.folder(folder).rel.startswith(templates)):
            clauses.append("o.path NOT LIKE ? ESCAPE '\\'")  # templates are not knowledge
            params.append(_like_prefix(templates + "/"))
        # one result per note section: many chunks of one section (a long one split in
        # pieces) would crowd the others out, so fetch more candidates until k distinct
        # sections are found or the index has no more
        where = " AND ".join(clauses)
        candidates = k * 3
        while True:
            hits = self.index.search(query, candidates, where=where, params=params)
            found = self._distinct(hits, query, k)
            if len(found) >= k or len(hits) < candidates:
                return found
            if candidates >= SEARCH_MAX_CANDIDATES:
                return found
            candidates = min(candidates * 4, SEARCH_MAX_CANDIDATES)

    def _distinct(self, hits: list[Any], query: str, k: int) -> list[VaultHit]:
        if not hits:
            return []
        rows = {
            row["id"]: row
            for row in self.database.query(
                f"SELECT id, path, heading, text FROM vault_chunks WHERE id IN "
                f"({','.join('?' * len(hits))})",
                [hit.id for hit in hits],
            )
        }
        found: list[VaultHit] = []
        seen: set[tuple[str, str]] = set()
        for hit in hits:
            row = rows.get(hit.id)
            if row is None or (row["path"], row["heading"]) in seen:
                continue
            seen.add((row["path"], row["heading"]))
            found.append(
                VaultHit(
                    path=row["path"],
                    heading=row["heading"],
                    snippet=snippet(row["text"], query),
                    score=round(hit.score, 5),
                    chunk_id=hit.id,
                )
            )
            if len(found) >= k:
                break
        return found

    def status(self, *, check_disk: bool = True) -> dict[str, Any]:
        """Counts, the last indexed time, skipped files and why, and drift from the disk."""
        notes = self.database.query("SELECT count(*) AS n FROM vault_notes")[0]["n"]
        chunks = self.database.query("SELECT count(*) AS n FROM vault_chunks")[0]["n"]
        last = self._get_state("last_indexed")
        skipped = self.database.query("SELECT path, reason FROM vault_skipped ORDER BY path")
        broken = self.database.query(
            "SELECT path, frontmatter_error AS error FROM vault_notes "
            "WHERE frontmatter_error IS NOT NULL ORDER BY path"
        )
        status: dict[str, Any] = {
            "vault": str(self.vault.root),
            "notes": notes,
            "chunks": chunks,
            "last_indexed": (
                dt.datetime.fromtimestamp(float(last)).isoformat(timespec="seconds")
                if last
                else None
            ),
            "skipped": skipped,
            "frontmatter_errors": broken,
            "vectors_need_repair": self._get_state("vectors_dirty") == "1",
            "pending": self.pending(),
            "indexing": self.progress_state(),
        }
        recoveries = getattr(self.vault, "recoveries", None)
        if callable(recoveries):
            status["recovered"] = recoveries()
        if check_disk:
            known = {
                row["path"]: (row["mtime_ns"], row["size"])
                for row in self.database.query("SELECT path, mtime_ns, size FROM vault_notes")
            }
            scan = self.vault.scan(peek=False)
            on_disk = {info.path: (info.mtime_ns, info.size) for info in scan.notes}
            skipped = {row["path"] for row in status["skipped"]}
            status["stale"] = sorted(
                p for p, sig in on_disk.items() if known.get(p) != sig and p not in skipped
            )
            status["missing"] = sorted(set(known) - set(on_disk))
        return status


def _embed_text(title: str, heading: str, text: str) -> str:
    """Must match `chunk_note`'s embedded text, so a repair embeds the same thing."""
    return chunk_embed_text(title, heading, text)


def _highlighter(query: str) -> re.Pattern[str] | None:
    """A pattern for the query's words in a text: Latin words by their stem as a prefix,
    Chinese by its bigrams."""
    parts = []
    for term in query_terms(query):
        if re.match(r"[\u3400-\u9fff\uf900-\ufaff]", term):
            parts.append(re.escape(term))
        elif term not in STOP_WORDS and len(term) > 1:
            parts.append(r"\b" + re.escape(term) + r"\w*")
    if not parts:
        return None
    return re.compile("|".join(sorted(parts, key=len, reverse=True)), re.IGNORECASE)


_EMPHASIS_MARKS = re.compile(r"\*\*|__|==|~~")


def _plain(text: str) -> str:
    """A chunk's text as one line of plain words: links as shown, no block ids, no
    emphasis markers (the snippet's own bold must not nest in the note's)."""
    shown = shown_text(_HEADING_LINE.sub("", text, count=1)) or shown_text(text)
    return " ".join(_EMPHASIS_MARKS.sub("", shown).split())


def _spans(pattern: re.Pattern[str], window: str) -> list[tuple[int, int]]:
    """The matches in `window`, overlapping ones too (Chinese bigrams overlap), merged
    where they overlap, touch, or are apart by spaces only."""
    spans: list[tuple[int, int]] = []
    at = 0
    while (match := pattern.search(window, at)) is not None:
        start, end = match.span()
        at = start + 1
        if start == end:
            continue
        if spans and (start <= spans[-1][1] or not window[spans[-1][1] : start].strip()):
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return spans


def snippet(text: str, query: str, width: int = SNIPPET_CHARS) -> str:
    """A window of `text` around the first match of the query, matches in **bold**
    (adjacent ones as one, never nested, never inside link syntax: links read as their
    words); the start of the text when only the meaning matched."""
    flat = _plain(text)
    pattern = _highlighter(query)
    match = pattern.search(flat) if pattern else None
    if match is None or pattern is None:
        return flat[:width] + ("…" if len(flat) > width else "")
    start = max(0, match.start() - width // 3)
    end = min(len(flat), start + width)
    start = max(0, min(start, end - width))
    window = flat[start:end]
    parts, at = [], 0
    for left, right in _spans(pattern, window):
        parts += [window[at:left], "**", window[left:right], "**"]
        at = right
    parts.append(window[at:])
    return ("…" if start > 0 else "") + "".join(parts) + ("…" if end < len(flat) else "")
