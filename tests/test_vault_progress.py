"""Indexing shows its progress (issue 14, defects 10 and 13): a bar on a terminal, phase
counts with -v, the phase in `status`; on a first index full-text search answers once the
text pass is done, while the vectors are still being made."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

from clirun import run_cli
from test_vault_timeouts import BlockingBackend

from memory.db import Database
from memory.vectors import VectorStore, open_chroma
from tools.vault import Vault, VaultIndex

ROOT = Path(__file__).resolve().parent.parent


def _vault(tmp_path: Path) -> Path:
    copy = tmp_path / "vault"
    shutil.copytree(ROOT / "vault_example", copy)
    return copy


def test_vault_index_verbose_prints_the_count_of_each_phase(tmp_path: Path) -> None:
    done = run_cli(tmp_path / "data", "-v", "vault", "index", vault=_vault(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "full text (notes): 14/14" in done.stderr
    assert "meaning (chunks): " in done.stderr


def test_vault_index_on_a_terminal_shows_a_progress_bar(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env.update(
        ASSISTANT_HOME=str(tmp_path / "data"), ASSISTANT_VAULT=str(_vault(tmp_path)), COLUMNS="100"
    )
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "assistant", "vault", "index"],
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed its end
            break
        if not data:
            break
        shown += data
    assert child.wait(180) == 0
    text = shown.decode("utf-8", "replace")
    assert "full text (notes)" in text and "14/14" in text
    assert "━" in text  # rich's bar


def test_full_text_answers_and_status_shows_progress_while_vectors_are_made(
    tmp_path: Path,
) -> None:
    database = Database(tmp_path / "a.db")
    backend = BlockingBackend()
    vectors = VectorStore(open_chroma(tmp_path / "chroma"), "vault", backend)
    index = VaultIndex(Vault(_vault(tmp_path), database), database, vectors)
    report = index.index_vault(vectors_in_background=True)
    assert report.notes == 14 and report.embedded == 0  # the model has embedded nothing yet
    hits = index.search("payment sandbox", 3)  # full text, while the vectors wait
    assert hits and hits[0].path == "Projects/Project Phoenix.md"
    state = index.status(check_disk=False)
    assert state["indexing"]["phase"] == "vectors" and state["vectors_need_repair"]
    backend.release.set()
    assert index.wait_for_vectors(60)
    assert report.embedded == report.chunks_added
    assert index.status(check_disk=False)["indexing"] is None
    assert not index.status(check_disk=False)["vectors_need_repair"]
