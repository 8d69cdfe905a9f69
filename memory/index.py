"""One hybrid index engine (SPEC M6, V6): SQLite full-text + a Chroma vector collection.

The truth lives in an owner table (conclusions, vault chunks); this engine keeps two
derived indexes of its rows under the same ids: an FTS5 table of bigram/stemmed terms,
committed in the owner's own transaction, and a vector collection written after it.
Recall fuses both rankings by weighted reciprocal rank fusion; filters are SQL on the
owner table, never Chroma `where` clauses. `sync` repairs drift between the two.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import sqlite_utils

from memory.db import Database, Migrations, Statement
from memory.text import fts_document, fts_query

log = logging.getLogger(__name__)

RRF_K = 60


class Vectors(Protocol):
    needs_reembed: bool

    def upsert(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[dict] | None = None
    ) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def query(self, text: str, k: int) -> list[tuple[str, float]]: ...

    def similar(self, text: str, k: int) -> list[tuple[str, float]]:
        """Like `query`, but embeds `text` as a passage: for near-duplicate detection."""
        ...

    def ids(self) -> set[str]: ...

    def reset(self) -> None: ...


@dataclass
class Hit:
    id: str
    score: float
    fts_rank: int | None = None
    vector_rank: int | None = None
    similarity: float | None = None


@dataclass(frozen=True)
class Weights:
    """How much each ranking counts in the fusion; measured on LoCoMo (docs/BENCHMARKS.md)."""

    fts: float = 1.0
    vector: float = 1.0
    candidates: int = 50


class HybridIndex:
    def __init__(
        self,
        database: Database,
        name: str,
        owner_table: str,
        vectors: Vectors | None,
        weights: Weights | None = None,
    ) -> None:
        self.database = database
        self.name = name
        self.fts_table = f"{name}_fts"
        self.owner_table = owner_table
        self.vectors = vectors
        self.weights = weights or Weights()
        migrations = Migrations(f"index:{name}")
        fts_table = self.fts_table

        @migrations
        def m001_fts(db: sqlite_utils.Database) -> None:
            db.execute(f"CREATE VIRTUAL TABLE {fts_table} USING fts5(id UNINDEXED, terms)")

        database.migrate(migrations)

    # -- writes: FTS inside the owner's transaction, vectors after it ---------------------

    def write_statements(self, doc_id: str, text: str) -> list[Statement]:
        return [
            *self.delete_statements(doc_id),
            (
                f"INSERT INTO {self.fts_table} (id, terms) VALUES (?, ?)",
                (doc_id, fts_document(text)),
            ),
        ]

    def delete_statements(self, doc_id: str) -> list[Statement]:
        return [(f"DELETE FROM {self.fts_table} WHERE id = ?", (doc_id,))]

    def embed(self, ids: Sequence[str], texts: Sequence[str]) -> bool:
        """Write vectors after SQLite committed; a failure is logged and left to `sync`."""
        if self.vectors is None or not ids:
            return True
        try:
            self.vectors.upsert(list(ids), list(texts))
        except Exception as exc:  # noqa: BLE001 - SQLite holds the truth; sync repairs later
            log.warning(
                "%s: vector index write failed, will repair on next sync: %s", self.name, exc
            )
            return False
        return True

    def unembed(self, ids: Sequence[str]) -> None:
        if self.vectors is None or not ids:
            return
        try:
            self.vectors.delete(list(ids))
        except Exception as exc:  # noqa: BLE001 - a stale vector is filtered out by SQL anyway
            log.warning("%s: vector delete failed, will repair on next sync: %s", self.name, exc)

    # -- recall -----------------------------------------------------------------------------

    def search(
        self,
        query: str,
        k: int,
        *,
        where: str = "1",
        params: Sequence[Any] = (),
        weights: Weights | None = None,
    ) -> list[Hit]:
        """Top-k owner ids for `query`, restricted by the SQL condition `where` on the owner."""
        weights = weights or self.weights
        n = max(weights.candidates, k)
        fts_ids = self._fts(query, n, where, params) if weights.fts > 0 else []
        vector_hits = self._vector(query, n, where, params) if weights.vector > 0 else []
        hits: dict[str, Hit] = {}
        for rank, doc_id in enumerate(fts_ids, start=1):
            hit = hits.setdefault(doc_id, Hit(doc_id, 0.0))
            hit.fts_rank = rank
            hit.score += weights.fts / (RRF_K + rank)
        for rank, (doc_id, similarity) in enumerate(vector_hits, start=1):
            hit = hits.setdefault(doc_id, Hit(doc_id, 0.0))
            hit.vector_rank, hit.similarity = rank, similarity
            hit.score += weights.vector / (RRF_K + rank)
        return sorted(hits.values(), key=lambda hit: -hit.score)[:k]

    def _fts(self, query: str, n: int, where: str, params: Sequence[Any]) -> list[str]:
        expression = fts_query(query)
        if expression is None:
            return []
        rows = self.database.query(
            f"SELECT f.id AS id FROM {self.fts_table} f JOIN {self.owner_table} o ON o.id = f.id "
            f"WHERE {self.fts_table} MATCH ? AND ({where}) ORDER BY bm25({self.fts_table}) LIMIT ?",
            [expression, *params, n],
        )
        return [row["id"] for row in rows]

    def _vector(
        self, query: str, n: int, where: str, params: Sequence[Any]
    ) -> list[tuple[str, float]]:
        if self.vectors is None or not query.strip():
            return []
        try:
            found = self.vectors.query(query, n * 4)
        except Exception as exc:  # noqa: BLE001 - full-text recall still answers
            log.warning("%s: vector search failed, using full-text only: %s", self.name, exc)
            return []
        if not found:
            return []
        allowed = self.filter_ids([doc_id for doc_id, _ in found], where, params)
        return [(doc_id, sim) for doc_id, sim in found if doc_id in allowed][:n]

    def similar(
        self, text: str, k: int, *, where: str = "1", params: Sequence[Any] = ()
    ) -> list[tuple[str, float]]:
        """Rows most like `text` as a statement (passage to passage), filtered by SQL."""
        if self.vectors is None:
            return []
        found = self.vectors.similar(text, k * 4)
        allowed = self.filter_ids([doc_id for doc_id, _ in found], where, params)
        return [(doc_id, sim) for doc_id, sim in found if doc_id in allowed][:k]

    def filter_ids(self, ids: Sequence[str], where: str, params: Sequence[Any]) -> set[str]:
        allowed: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self.database.query(
                f"SELECT id FROM {self.owner_table} o WHERE id IN ({marks}) AND ({where})",
                [*chunk, *params],
            )
            allowed.update(row["id"] for row in rows)
        return allowed

    # -- repair -------------------------------------------------------------------------------

    def sync(
        self,
        rows: Callable[[], Iterable[tuple[str, str]]],
        *,
        full: bool = False,
        vectors: Vectors | None = None,
    ) -> dict[str, int]:
        """Make the vector collection hold exactly the owner's rows (M5: repair on start).

        `rows` yields (id, text) for every row that should be indexed. Missing vectors are
        added, stray ones deleted; a changed embedding model, or `full`, re-embeds all.
        """
        vectors = vectors or self.vectors
        if vectors is None:
            return {"added": 0, "removed": 0}
        wanted = dict(rows())
        if full or vectors.needs_reembed:
            vectors.reset()
            present: set[str] = set()
        else:
            present = vectors.ids()
        missing = [doc_id for doc_id in wanted if doc_id not in present]
        stray = [doc_id for doc_id in present if doc_id not in wanted]
        for start in range(0, len(missing), 256):
            batch = missing[start : start + 256]
            vectors.upsert(batch, [wanted[doc_id] for doc_id in batch])
        if stray:
            vectors.delete(stray)
        if missing or stray:
            log.info(
                "%s: vector index repaired: %d added, %d removed",
                self.name,
                len(missing),
                len(stray),
            )
        return {"added": len(missing), "removed": len(stray)}

    def rebuild_fts(self, rows: Iterable[tuple[str, str]]) -> int:
        statements: list[Statement] = [(f"DELETE FROM {self.fts_table}", ())]
        count = 0
        for doc_id, text in rows:
            statements.append(
                (
                    f"INSERT INTO {self.fts_table} (id, terms) VALUES (?, ?)",
                    (doc_id, fts_document(text)),
                )
            )
            count += 1
        self.database.write_many(statements)
        return count


class LazyVectors:
    """Opens the vector store on first use: a command that never recalls or stores a
    conclusion never pays for importing Chroma and loading the embedding model."""

    def __init__(self, factory: Callable[[], Vectors]) -> None:
        self._factory = factory
        self._vectors: Vectors | None = None

    @property
    def loaded(self) -> bool:
        return self._vectors is not None

    def _get(self) -> Vectors:
        if self._vectors is None:
            self._vectors = self._factory()
        return self._vectors

    @property
    def needs_reembed(self) -> bool:
        return self._get().needs_reembed

    def upsert(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[dict] | None = None
    ) -> None:
        self._get().upsert(ids, texts, metadatas)

    def delete(self, ids: Sequence[str]) -> None:
        self._get().delete(ids)

    def query(self, text: str, k: int) -> list[tuple[str, float]]:
        return self._get().query(text, k)

    def similar(self, text: str, k: int) -> list[tuple[str, float]]:
        return self._get().similar(text, k)

    def ids(self) -> set[str]:
        return self._get().ids()

    def reset(self) -> None:
        self._get().reset()
