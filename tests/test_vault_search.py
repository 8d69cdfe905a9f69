"""Search on real vaults (issue 14, defects 9, 11, 13): k results when k exist, clean
snippets, links indexed by what they show and the note they name (block ids not at all),
and a chunk whose only change is where a link points keeps its vector."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_vault_index import CountingBackend

from memory.db import Database
from memory.vectors import VectorStore, open_chroma
from tools.vault.index import VaultIndex, snippet
from tools.vault.store import Vault


def _index(tmp_path: Path, files: dict[str, str], vectors: bool = False) -> VaultIndex:
    root = tmp_path / "vault"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    database = Database(tmp_path / "a.db")
    store = None
    if vectors:
        store = VectorStore(open_chroma(tmp_path / "chroma"), "vault", CountingBackend())
    index = VaultIndex(Vault(root, database), database, store)
    index.index_vault()
    return index


def test_search_returns_k_results_when_k_exist_past_a_long_section(tmp_path: Path) -> None:
    long = "# Encryption\n\n" + "\n\n".join(
        f"Paragraph {i}: encryption keys, encryption at rest, encryption in transit. " * 6
        for i in range(40)
    )
    files = {"Long.md": long}
    files.update({f"Other {i}.md": f"# Other {i}\n\nA note on encryption.\n" for i in range(6)})
    index = _index(tmp_path, files)
    chunks = index.database.query("SELECT count(*) AS n FROM vault_chunks WHERE path = 'Long.md'")
    assert chunks[0]["n"] >= 20
    hits = index.search("encryption", 5)
    assert len(hits) == 5
    assert len({(hit.path, hit.heading) for hit in hits}) == 5


@pytest.mark.parametrize(
    ("text", "query", "shown"),
    [
        ("端到端加密是默认的", "端到端加密", "**端到端加密**是默认的"),
        (
            "**Encryption password** is needed",
            "encryption password",
            "**Encryption password** is needed",
        ),
        ("See ![[People.base]] for the list", "people", "See **People**.base for the list"),
        ("Read [[Guides/Setup|the setup guide]] first", "setup", "Read the **setup** guide first"),
        ("Rule one ^rule-1", "rule", "**Rule** one"),
    ],
)
def test_snippets_merge_hits_never_nest_and_never_bold_link_syntax(
    text: str, query: str, shown: str
) -> None:
    assert snippet(text, query) == shown


def test_links_are_indexed_by_what_they_show_and_the_note_they_name(tmp_path: Path) -> None:
    index = _index(
        tmp_path,
        {
            "Refunds.md": "# Refund policy\n\nWe refund within 30 days.\n",
            "Pricing.md": "# Pricing\n\n![[Policy#^discount-then-refund]]\n",
            "Trip.md": "# Trip\n\nBook [[Places/Kyoto|the temple stay]].\n",
            "Places/Kyoto.md": "# Kyoto\n",
        },
    )
    assert "Pricing.md" not in {hit.path for hit in index.search("refund")}  # a block id
    assert "Trip.md" in {hit.path for hit in index.search("kyoto")}  # the note it names
    assert "Trip.md" in {hit.path for hit in index.search("temple stay")}  # what it shows


def test_a_chunk_whose_only_change_is_a_link_target_keeps_its_vector(tmp_path: Path) -> None:
    files = {f"Trip {i}.md": f"# Trip {i}\n\nStayed near [[Places/Kyoto]].\n" for i in range(5)}
    files["Places/Kyoto.md"] = "# Kyoto\n\nTemples.\n"
    index = _index(tmp_path, files, vectors=True)
    assert index.vectors is not None
    backend = index.vectors.backend  # type: ignore[attr-defined]
    ids = {row["id"] for row in index.database.query("SELECT id FROM vault_chunks")}
    backend.passages.clear()
    index.vault.move("Places/Kyoto.md", "Japan/Kyoto.md")
    assert all("Trip" not in passage for passage in backend.passages)  # no linker re-embedded
    trip = index.database.query("SELECT id, text FROM vault_chunks WHERE path = 'Trip 0.md'")
    assert "[[Japan/Kyoto]]" in trip[0]["text"] and trip[0]["id"] in ids
    assert index.vectors.ids() == {  # type: ignore[attr-defined]
        row["id"] for row in index.database.query("SELECT id FROM vault_chunks")
    }
