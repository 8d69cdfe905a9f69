"""Long-term memory (SPEC M4-M7, M10) on real SQLite, real Chroma and the real embedding
model, through the `Assistant`, its tools, the offline planner and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from clirun import run_cli

from assistant.app import Assistant
from assistant.config import load_settings
from memory.lock import DataDirectoryBusy


@pytest.fixture
def assistant() -> Assistant:
    opened = Assistant(load_settings())
    yield opened
    opened.close()


def _store(assistant: Assistant):
    assert assistant.memory is not None
    return assistant.memory.store


def test_conclusions_survive_a_restart(tmp_path: Path) -> None:
    first = Assistant(load_settings())
    first.ask("remember that we decided to ship on Wednesday", session="s1")
    first.close()
    second = Assistant(load_settings())
    try:
        found = _store(second).recall("when do we ship?", 3)
        assert [c.text for c in found][:1] == ["we decided to ship on Wednesday"]
        assert found[0].kind == "decision" and found[0].source_session == "s1"
    finally:
        second.close()


def test_restatement_updates_instead_of_duplicating(assistant: Assistant) -> None:
    store = _store(assistant)
    store.remember("I prefer tea over coffee", kind="preference")
    again = store.remember("I like tea more than coffee", kind="preference")
    assert again.action == "restated"
    assert store.stats()["active"] == 1


def test_a_new_value_supersedes_and_keeps_history(assistant: Assistant) -> None:
    assistant.ask("remember that my dentist is Dr. Wu")
    outcome = assistant.ask("remember that my dentist is Dr. Li")
    assert "replaces" in outcome.answer and "Dr. Wu" in outcome.answer
    store = _store(assistant)
    [current] = store.recall("who is my dentist", 1)
    assert current.text == "my dentist is Dr. Li" and current.status == "active"
    [old] = store.history(current.id)
    assert old.text == "my dentist is Dr. Wu"
    assert old.status == "superseded" and old.valid_to is not None
    assert old.superseded_by == current.id


def test_chinese_subject_supersedes_offline(assistant: Assistant) -> None:
    assistant.ask("记住我的牙医是吴医生")
    assistant.ask("记住我的牙医是李医生")
    store = _store(assistant)
    assert [c.text for c in store.list()] == ["我的牙医是李医生"]
    assert store.stats()["superseded"] == 1


def test_forget_retires_once_the_user_confirms(assistant: Assistant) -> None:
    assistant.ask("remember that the wifi password hint is the cat's name")
    outcome = assistant.ask("forget the wifi password hint")
    assert outcome.answer.startswith("Waiting for your yes"), outcome.answer
    store = _store(assistant)
    assert len(store.recall("wifi password hint", 5)) == 1, "nothing is forgotten before a yes"
    [call] = outcome.tool_calls
    assistant.confirm(call.result["action_id"])
    assert store.recall("wifi password hint", 5) == []
    retired = store.list(status="retired")
    assert len(retired) == 1 and retired[0].valid_to is not None


def test_two_character_chinese_query_and_mixed_languages(assistant: Assistant) -> None:
    store = _store(assistant)
    store.remember("我的牙医是李医生")
    store.remember("我们决定下周三发布新版本", kind="decision")
    store.remember("周五的 budget review 要准备 slides")
    assert store.recall("牙医", 1)[0].text == "我的牙医是李医生"
    assert store.recall("发布", 1)[0].text == "我们决定下周三发布新版本"
    assert store.recall("budget review", 1)[0].text == "周五的 budget review 要准备 slides"
    assert store.recall("周五", 1)[0].text == "周五的 budget review 要准备 slides"


def test_filters_by_kind_and_tag_happen_in_sqlite(assistant: Assistant) -> None:
    store = _store(assistant)
    store.remember("Use SQLite for the prototype", kind="decision", tags=["#project"])
    store.remember("SQLite files live in the data directory", kind="fact")
    assert [c.kind for c in store.recall("SQLite", 5, kinds=["decision"])] == ["decision"]
    assert [c.tags for c in store.recall("SQLite", 5, tags=["project"])] == [["project"]]


def test_secrets_never_reach_the_store(assistant: Assistant) -> None:
    assistant.ask(
        "remember that my API key is sk-live-abcdefghijklmnopqrstu and my email is a@b.io"
    )
    rows = assistant.database.query("SELECT text FROM conclusions")
    stored = " ".join(row["text"] for row in rows)
    assert "sk-live-abcdefghijklmnopqrstu" not in stored and "a@b.io" not in stored
    assert "[REDACTED:api_key]" in stored
    turns = assistant.database.query("SELECT request_log, call_log FROM turns")
    assert any(json.loads(turn["call_log"]) for turn in turns)  # the remembering is traced
    traces = " ".join(turn["request_log"] + turn["call_log"] for turn in turns)
    assert "sk-live-abcdefghijklmnopqrstu" not in traces


def test_the_context_carries_relevant_conclusions(assistant: Assistant) -> None:
    _store(assistant).remember("my dentist is Dr. Li", subject="dentist")
    assistant.ask("what is my dentist's phone?", session="ctx")
    request = assistant.traces.turn(assistant.traces.last_turn_id())["requests"][0]
    system = request["new_messages"][0]["content"]
    assert "Long-term memory" in system and "my dentist is Dr. Li" in system


def test_drift_is_repaired_when_the_index_opens(tmp_path: Path) -> None:
    first = Assistant(load_settings())
    remembered = _store(first).remember("The boiler was serviced in March").conclusion
    vectors = first.memory.vectors
    vectors.delete([remembered.id])
    assert remembered.id not in vectors.ids()
    first.close()
    second = Assistant(load_settings())
    try:
        assert remembered.id in second.memory.vectors.ids()
        assert _store(second).recall("boiler maintenance", 1)[0].id == remembered.id
    finally:
        second.close()


def test_reindex_rebuilds_from_sqlite(assistant: Assistant) -> None:
    store = _store(assistant)
    ids = {store.remember(text).conclusion.id for text in ("alpha fact", "beta fact")}
    result = store.reindex()
    assert result["added"] == 2
    assert ids <= assistant.memory.vectors.ids()


def test_a_second_owner_of_the_data_directory_is_refused(assistant: Assistant) -> None:
    with pytest.raises(DataDirectoryBusy) as refused:
        Assistant(load_settings())
    assert str(os.getpid()) in str(refused.value)


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(home, *args)


def test_cross_session_recall_through_the_cli(tmp_path: Path) -> None:
    stored = _cli(tmp_path, "ask", "--session", "a", "记住我们决定下周三发布")
    assert stored.returncode == 0, stored.stderr
    recalled = _cli(tmp_path, "ask", "--session", "b", "关于发布你记得什么")
    assert "我们决定下周三发布" in recalled.stdout
    found = json.loads(_cli(tmp_path, "memory", "search", "--json", "发布").stdout)
    assert found[0]["text"] == "我们决定下周三发布"
    assert {"id", "text", "kind", "status", "score"} <= found[0].keys()
    forgotten = _cli(tmp_path, "memory", "forget", found[0]["id"])
    assert forgotten.returncode == 0
    listed = json.loads(_cli(tmp_path, "memory", "list", "--json").stdout)
    assert listed == []
    stats = json.loads(_cli(tmp_path, "memory", "stats", "--json").stdout)
    assert stats["retired"] == 1


def test_cli_refuses_while_another_process_owns_the_directory(tmp_path: Path) -> None:
    # It waits for the holder first ([daemon] lock_wait_s, issue 13), here briefly.
    (tmp_path / "config.toml").write_text("[daemon]\nlock_wait_s = 1\n", encoding="utf-8")
    holder = Assistant(load_settings())
    try:
        result = _cli(tmp_path, "ask", "hello")
    finally:
        holder.close()
    assert result.returncode != 0
    assert "waiting up to 1 s" in result.stderr
    assert "in use by process" in result.stderr and "Traceback" not in result.stderr
