"""Writes are reported as they happened (issue 13, item 2): a tool's timeout never abandons
a write in flight, a write not begun by then never begins, and indexing runs after the
write, outside the write lock and the tool's time budget."""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory.db import Database
from memory.vectors import VectorStore, open_chroma
from tools.base import ToolContext
from tools.registry import ToolRegistry
from tools.runner import CallOutcome, ToolRunner
from tools.vault import Vault, VaultIndex, vault_tools
from tools.vault import journal as journal_module

EXAMPLE = Path(__file__).resolve().parent.parent / "vault_example"
NOTE = "Inbox/Ideas to sort.md"


class BlockingBackend:
    """An embedding model that waits for `release` (a slow model on a busy machine)."""

    name = "fake-blocking"
    dim = 8

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def _rows(self, texts: Sequence[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            digest = hashlib.sha256(text.encode()).digest()
            rows[i] = np.frombuffer(digest[: self.dim], dtype=np.uint8) - 127.5
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        assert self.release.wait(30)
        return self._rows(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._rows(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._rows([text])[0]


def _rig(tmp_path: Path, index: VaultIndex | None = None) -> tuple[Vault, ToolRunner]:
    root = tmp_path / "vault"
    if not root.exists():
        shutil.copytree(EXAMPLE, root)
    vault = index.vault if index is not None else Vault(root, Database(tmp_path / "a.db"))
    runner = ToolRunner(ToolRegistry(vault_tools(vault, index)), default_timeout_s=0.3)
    return vault, runner


def _append(runner: ToolRunner, text: str) -> CallOutcome:
    call = runner.prepare("c1", "vault_append", f'{{"path": "{NOTE}", "text": "{text}"}}')
    [outcome] = runner.run([call], lambda c: ToolContext(session="s", call_id=c.call_id))
    return outcome


def test_a_write_under_way_at_its_timeout_is_finished_and_reported_as_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault, runner = _rig(tmp_path)
    real = journal_module.atomic_write

    def slow_disk(path: Path, data: bytes) -> Any:
        time.sleep(1.0)  # well past the tool's 0.3 s
        return real(path, data)

    monkeypatch.setattr(journal_module, "atomic_write", slow_disk)
    outcome = _append(runner, "- buy milk")
    assert outcome.status == "ok", outcome.result
    assert outcome.result["status"] == "appended"
    assert "finished, not abandoned" in outcome.result["timeout_note"]
    assert (vault.root / NOTE).read_text(encoding="utf-8").count("- buy milk") == 1
    assert len(vault.journal()) == 1


def test_a_write_not_begun_at_its_timeout_never_begins_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault, runner = _rig(tmp_path)
    before = (vault.root / NOTE).read_bytes()
    release, finished = threading.Event(), threading.Event()
    results: list[str] = []
    real_plan = Vault.plan_append

    def slow_plan(self: Vault, *args: Any, **kwargs: Any) -> Any:
        assert release.wait(30)  # e.g. waiting behind another write
        return real_plan(self, *args, **kwargs)

    real_apply = journal_module.Journal.apply

    def apply(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return real_apply(self, *args, **kwargs)
        except Exception as exc:
            results.append(getattr(exc, "code", type(exc).__name__))
            raise
        finally:
            finished.set()

    monkeypatch.setattr(Vault, "plan_append", slow_plan)
    monkeypatch.setattr(journal_module.Journal, "apply", apply)
    outcome = _append(runner, "- buy milk")
    assert outcome.status == "TIMEOUT"
    assert "nothing was changed and nothing will be" in outcome.result["detail"]
    release.set()
    assert finished.wait(30)
    assert results == ["NOT_RUN"]
    assert (vault.root / NOTE).read_bytes() == before and vault.journal() == []


def test_indexing_follows_the_write_outside_its_time_budget(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE, root)
    database = Database(tmp_path / "a.db")
    backend = BlockingBackend()
    vectors = VectorStore(open_chroma(tmp_path / "chroma"), "vault", backend)
    index = VaultIndex(Vault(root, database), database, vectors, background=True)
    backend.release.set()
    index.index_vault()
    backend.release.clear()
    _, runner = _rig(tmp_path, index)
    outcome = _append(runner, "- the zebra migration plan")
    assert outcome.status == "ok", outcome.result  # the embedding model is still blocked
    assert "timeout_note" not in outcome.result
    assert index.pending() == [NOTE]
    assert index.status(check_disk=False)["pending"] == [NOTE]
    backend.release.set()
    assert index.wait_idle(30)
    assert index.pending() == []
    assert index.search("zebra migration", 3)[0].path == NOTE
