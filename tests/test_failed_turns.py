"""A turn reported as failed did not happen (issue 13, item 9): through a running daemon,
an ask that a full disk failed must not appear in the history later, when there is room
again and the next write commits what was waiting."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from assistant.client import published
from assistant.config import load_settings
from assistant.daemon.process import Daemon
from assistant.errors import CommandError


def _messages(home: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(home / "assistant.db") as db:
        return db.execute("SELECT session, content FROM messages WHERE role = 'user'").fetchall()


def test_an_ask_reported_as_failed_never_lands_in_the_history(tmp_path: Path) -> None:
    daemon = Daemon(load_settings(), log_file=False)
    daemon.start()
    try:
        client = published(daemon.settings.home)
        assert client is not None
        assert "42" in client.call("ask", {"text": "15加27等于多少", "session": "s1"})["answer"]
        conn = daemon.assistant.database.db.conn
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")  # no room for one more page
        reported: dict[str, bool] = {}
        for n in range(20):
            text = f"{n}加{'9' * 3000}等于多少"
            try:
                client.call("ask", {"text": text, "session": "full"})
                reported[text] = True
            except CommandError as exc:
                assert "disk is full" in str(exc)
                reported[text] = False
                break
        assert False in reported.values(), "the disk never filled"
        conn.execute("PRAGMA max_page_count = 1073741823")  # room again
        after = client.call("ask", {"text": "1加1等于多少", "session": "after"})
        assert after["answer"].startswith("1+1 = 2")
    finally:
        daemon.stop()
    stored = {content for session, content in _messages(tmp_path) if session == "full"}
    for text, ok in reported.items():
        assert (text in stored) == ok, f"reported {'ok' if ok else 'failed'}: {text[:20]}..."
