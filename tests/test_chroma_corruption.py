"""A corrupt `chroma/chroma.sqlite3` is not fatal (issue 13, item 8): the index is derived
data. Found at open or on use, the folder is moved aside (kept, renamed with a time), a
fresh one is built from SQLite (conclusions and vault chunks), and the recovery is logged
and shown by `assistant status`; the daemon starts, `memory reindex` and remember work.
Real Chroma PersistentClient folders, corrupted on disk.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from pathlib import Path

import pytest

from assistant.app import Assistant
from assistant.config import load_settings

ROOT = Path(__file__).resolve().parent.parent


def _corrupt(home: Path, *, keep_header: bool, how: str = "random") -> bytes:
    """Damage Chroma's SQLite file: its header (not a database at all) or its pages, with
    random bytes, zeros, or by cutting it short."""
    db = home / "chroma" / "chroma.sqlite3"
    data = bytearray(db.read_bytes())
    start = 100 if keep_header else 0
    if how == "truncate":
        data = data[: max(len(data) // 3, start + 1)]
    elif how == "zeros":
        data[start : len(data) // 2] = bytes(len(data) // 2 - start)
    else:
        data[start:] = os.urandom(len(data) - start)
    db.write_bytes(bytes(data))
    return bytes(data)


def _moved_aside(home: Path) -> list[Path]:
    return sorted(home.glob("chroma.corrupt-*"))


def _vector_ids(assistant: Assistant) -> set[str]:
    assert assistant.memory is not None
    return assistant.memory.vectors.ids()


def test_corrupt_at_open_is_moved_aside_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assistant = Assistant(load_settings())
    assert assistant.memory is not None
    kept = assistant.memory.store.remember("my dentist is Dr. Li").conclusion
    assistant.close()
    damaged = _corrupt(tmp_path, keep_header=False)
    with caplog.at_level(logging.WARNING):
        assistant = Assistant(load_settings())
        try:
            assert assistant.memory is not None
            assert _vector_ids(assistant) == {kept.id}  # rebuilt from SQLite
            new = assistant.memory.store.remember("my car is a Volvo").conclusion
            assert _vector_ids(assistant) == {kept.id, new.id}
            assert assistant.memory.store.recall("dentist", 1)[0].id == kept.id
            [event] = assistant.space.recoveries
        finally:
            assistant.close()
    [aside] = _moved_aside(tmp_path)
    assert event["moved_to"] == str(aside)
    assert (aside / "chroma.sqlite3").read_bytes() == damaged, "the damaged folder is kept"
    logged = [r.getMessage() for r in caplog.records]
    assert any("was corrupt" in line and "moved aside" in line for line in logged)


@pytest.mark.parametrize("how", ["random", "zeros", "truncate"])
def test_corrupt_while_in_use_is_recovered_and_the_write_goes_through(
    tmp_path: Path, how: str
) -> None:
    assistant = Assistant(load_settings())
    try:
        assert assistant.memory is not None
        store = assistant.memory.store
        first = store.remember("my dentist is Dr. Li").conclusion
        _corrupt(tmp_path, keep_header=True, how=how)  # met by the open client's next query
        second = store.remember("my car is a Volvo").conclusion
        assert _vector_ids(assistant) == {first.id, second.id}
        assert [c.id for c in store.recall("what car do I drive", 1)] == [second.id]
        assert len(assistant.space.recoveries) == 1
        assert store.reindex()["added"] == 2
    finally:
        assistant.close()
    assert len(_moved_aside(tmp_path)) == 1


def test_status_of_a_later_process_names_the_folder_kept_aside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assistant = Assistant(load_settings())
    assert assistant.memory is not None
    assistant.memory.store.remember("my dentist is Dr. Li")
    assistant.close()
    _corrupt(tmp_path, keep_header=False)
    from assistant.cli import main

    assert main(["memory", "reindex"]) == 0
    capsys.readouterr()
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    [aside] = _moved_aside(tmp_path)
    assert f"kept aside after a corrupt vector index: {aside.name}" in out


def test_the_vault_index_is_rebuilt_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(ROOT / "vault_example", vault)
    monkeypatch.setenv("ASSISTANT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ASSISTANT_VAULT", str(vault))
    assistant = Assistant(load_settings())
    try:
        report = assistant.vault_index.index_vault()
        chunks = report.chunks_added
        assert chunks > 0
    finally:
        assistant.close()
    _corrupt(tmp_path / "home", keep_header=False)
    assistant = Assistant(load_settings())
    try:
        hits = assistant.vault_index.search("release checklist", 3)
        assert hits and any("Release Checklist" in hit.path for hit in hits)
        vectors = assistant.space.collection("vault")
        assert len(vectors.ids()) == chunks
    finally:
        assistant.close()


@pytest.mark.slow
def test_the_daemon_starts_reports_it_and_reindex_and_remember_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_daemon import DaemonProcess, make_vault

    home = tmp_path / "home"
    monkeypatch.setenv("ASSISTANT_HOME", str(home))
    first = Assistant(load_settings())
    assert first.memory is not None
    first.memory.store.remember("my dentist is Dr. Li")
    first.close()
    _corrupt(home, keep_header=False)
    daemon = DaemonProcess(home, make_vault(tmp_path / "vault"))
    try:
        daemon.start()
        status = daemon.cli_json("status")
        [event] = status["index"]["recovered"]
        assert Path(event["moved_to"]).is_dir()
        text = daemon.cli("status").stdout
        assert "was corrupt, moved aside" in text
        reindexed = daemon.cli("memory", "reindex")
        assert reindexed.returncode == 0, reindexed.stderr
        asked = daemon.cli_json("ask", "remember that my car is a Volvo")
        assert asked["served_by"] == "daemon" and asked["stop_reason"] == "final"
        found = json.loads(daemon.cli("memory", "search", "dentist", "--json").stdout)
        assert found and found[0]["text"] == "my dentist is Dr. Li"
        assert "Traceback" not in daemon.stderr()
    finally:
        daemon.close()
