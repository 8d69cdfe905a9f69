"""One owner of the data directory without races (issue 13, item 5).

Holders are real child processes taking the real lock; the daemon is a real process.
Waits poll with generous deadlines; nothing asserts on timing.
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polling
import pytest
from clirun import run_cli
from test_daemon import DaemonProcess, make_vault

from assistant.client import discover, starting_daemon
from memory.lock import (
    PID_NAME,
    WANTED_NAME,
    DataDirectoryBusy,
    DataDirectoryLock,
    Owner,
    live_owner,
    process_start,
    read_record,
)

ROOT = Path(__file__).resolve().parent.parent

HOLD = """
import sys, time
from pathlib import Path
from memory.lock import DataDirectoryLock
lock = DataDirectoryLock(Path(sys.argv[1]), sys.argv[2]).acquire()
print("held", flush=True)
time.sleep(float(sys.argv[3]))
lock.release()
"""


def _holder(home: Path, role: str, seconds: float) -> subprocess.Popen[str]:
    """A child process that holds the data directory's lock for `seconds`."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(home), role, str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield child
    child.kill()
    child.wait()


# -- the lock ---------------------------------------------------------------------------------


def test_a_short_lived_holder_is_waited_for_and_named(tmp_path: Path) -> None:
    holder = _holder(tmp_path, "cli", 1.5)
    heard: list[str] = []
    try:
        lock = DataDirectoryLock(tmp_path, "daemon").acquire(60, notice=heard.append)
    finally:
        holder.wait(timeout=60)
    try:
        assert lock.held
        assert len(heard) == 1 and f"process {holder.pid} (cli)" in heard[0]
        assert "waiting up to 60 s" in heard[0]
        owner = read_record(tmp_path / PID_NAME)
        assert owner is not None and owner.pid == os.getpid() and owner.role == "daemon"
        assert not (tmp_path / WANTED_NAME).exists()  # the wait is over
    finally:
        lock.release()


def test_a_command_stops_waiting_when_a_daemon_claims_the_directory(tmp_path: Path) -> None:
    holder = _holder(tmp_path, "daemon", 30)
    try:
        with pytest.raises(DataDirectoryBusy) as refused:
            DataDirectoryLock(tmp_path, "cli").acquire(
                60, yield_to=lambda owner: owner is not None and owner.role == "daemon"
            )
    finally:
        holder.kill()
        holder.wait()
    assert refused.value.role == "daemon" and refused.value.pid == holder.pid


def test_the_record_names_the_process_with_its_start_time(tmp_path: Path) -> None:
    lock = DataDirectoryLock(tmp_path, "cli").acquire()
    try:
        owner = read_record(tmp_path / PID_NAME)
        assert owner == Owner.me("cli") and owner.alive
    finally:
        lock.release()
    assert not (tmp_path / PID_NAME).exists()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_reused_pid_is_recognised_as_stale(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    # A daemon died by kill -9 and left its record; its PID now belongs to another process.
    started = process_start(sleeper.pid)
    assert started is not None
    stale = Owner(sleeper.pid, "daemon", str(int(started) - 12345))
    (tmp_path / PID_NAME).write_text(stale.line(), encoding="utf-8")
    assert not stale.alive and live_owner(tmp_path) is None
    assert starting_daemon(tmp_path) is None
    heard: list[str] = []
    assert discover(tmp_path, wait_s=60, notice=heard.append) is None
    assert heard == []  # not waited for: it was the 60 s stall
    # the very process, recorded with its real start time, is live
    (tmp_path / PID_NAME).write_text(Owner(sleeper.pid, "daemon", started).line())
    assert starting_daemon(tmp_path) == sleeper.pid


def test_an_old_style_record_still_reads(tmp_path: Path) -> None:
    (tmp_path / PID_NAME).write_text(f"{os.getpid()} cli\n", encoding="utf-8")
    assert read_record(tmp_path / PID_NAME) == Owner(os.getpid(), "cli", None)


# -- the CLI ------------------------------------------------------------------------------------


def test_parallel_in_process_commands_queue_for_the_lock(tmp_path: Path) -> None:
    holder = _holder(tmp_path, "cli", 600)
    command = subprocess.Popen(
        [sys.executable, "-m", "assistant", "memory", "list", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "ASSISTANT_HOME": str(tmp_path)},
    )
    try:
        assert command.stderr is not None
        notice = command.stderr.readline()  # old code: the refusal, and exit 1
        assert f"in use by process {holder.pid} (cli); waiting up to" in notice
        holder.terminate()  # the holder ends; the command takes its turn
        out, err = command.communicate(timeout=300)
    finally:
        holder.kill()
        holder.wait()
        if command.poll() is None:
            command.kill()
            command.wait()
    assert command.returncode == 0, err
    assert out.strip() == "[]" and "Traceback" not in err


def test_ten_parallel_in_process_asks_all_answer(tmp_path: Path) -> None:
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "assistant", "ask", f"what is {n} + 1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "ASSISTANT_HOME": str(tmp_path)},
        )
        for n in range(10)
    ]
    results = [(child.communicate(timeout=600), child.returncode) for child in children]
    failed = [err for (out, err), code in results if code != 0]
    assert failed == []
    answers = sorted(out for (out, err), code in results)
    assert all(str(n + 1) in "".join(answers) for n in range(10))


# -- the daemon -------------------------------------------------------------------------------


def _daemon(tmp_path: Path) -> DaemonProcess:
    home = tmp_path / "home"
    home.mkdir()
    return DaemonProcess(home, make_vault(tmp_path / "vault"))


def _spawn_waiting(daemon: DaemonProcess) -> None:
    """Start the daemon's process and return once it waits for the lock."""
    daemon.starts += 1
    with daemon.log_path.open("wb") as log:
        daemon.proc = subprocess.Popen(
            [sys.executable, "-m", "assistant", "daemon"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=daemon.env,
        )

    def waiting() -> bool:
        assert daemon.proc is not None
        if daemon.proc.poll() is not None:  # old code: exit 1, "in use by process N (cli)"
            pytest.fail(f"the daemon exited with {daemon.proc.returncode}:\n{daemon.stderr()}")
        return (daemon.home / WANTED_NAME).exists()

    polling.wait_for(waiting, "the daemon to wait for the lock", 180, 0.1)


def test_the_daemon_waits_for_a_command_then_commands_go_through_it(tmp_path: Path) -> None:
    daemon = _daemon(tmp_path)
    holder = _holder(daemon.home, "cli", 600)
    try:
        _spawn_waiting(daemon)
        holder.terminate()  # the command ends
        polling.wait_for(daemon._published, "the daemon to publish api.json", 180, 0.25)
        assert "waiting up to" in daemon.stderr() and f"process {holder.pid}" in daemon.stderr()
        status = daemon.cli_json("status")
        assert status["served_by"] == "daemon" and status["daemon"]["pid"] == daemon.pid
    finally:
        holder.kill()
        holder.wait()
        daemon.close()


def test_a_command_during_the_daemons_wait_goes_through_the_daemon(tmp_path: Path) -> None:
    daemon = _daemon(tmp_path)
    holder = _holder(daemon.home, "cli", 600)
    try:
        _spawn_waiting(daemon)
        command = subprocess.Popen(
            [sys.executable, "-m", "assistant", "status", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=daemon.env,
        )
        assert command.stderr is not None
        notice = command.stderr.readline()  # old code: "in use by process N (cli)", exit 1
        assert f"waiting for the daemon (pid {daemon.pid})" in notice
        holder.terminate()
        out, err = command.communicate(timeout=300)
        assert command.returncode == 0, err
        assert '"served_by": "daemon"' in out
    finally:
        holder.kill()
        holder.wait()
        daemon.close()


def test_an_open_in_process_chat_hands_over_to_a_starting_daemon(tmp_path: Path) -> None:
    daemon = _daemon(tmp_path)
    chat = subprocess.Popen(
        [sys.executable, "-m", "assistant", "chat", "--session", "c1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=daemon.env,
    )
    try:
        assert chat.stdin is not None and chat.stdout is not None
        chat.stdin.write("what is 2 + 3\n")
        chat.stdin.flush()
        assert "5" in chat.stdout.readline()  # in-process: the chat holds the directory
        assert read_record(daemon.home / PID_NAME).role == "cli"
        daemon.start()  # old code: exited 1 while the chat was open
        chat.stdin.write("what is 4 + 4\n")
        chat.stdin.flush()
        assert "8" in chat.stdout.readline()
        chat.stdin.close()
        err = chat.stderr.read() if chat.stderr else ""
        assert chat.wait(timeout=120) == 0, err
        assert "handing the data directory over" in err
        turns = daemon.cli_json("trace", "last", "--session", "c1")
        assert "4 + 4" in str(turns)
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait()
        daemon.close()


# -- the shipped unit ---------------------------------------------------------------------------


def test_the_systemd_unit_restarts_the_daemon_on_failure() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment]
    unit.read(ROOT / "contrib" / "assistant.service", encoding="utf-8")
    service = unit["Service"]
    assert service["Restart"] in {"on-failure", "always"}
    assert 1 <= float(service["RestartSec"].rstrip("s")) <= 60
    prevented = service.get("RestartPreventExitStatus", "").split()
    assert "1" not in prevented  # a daemon that lost a start-up race must come back


# -- a full disk at the owner record (item 9) ---------------------------------------------------

FULL_AT_PID = """
import errno, os, pathlib, sys
real_open, real_write_text = os.open, pathlib.Path.write_text
def full(name):
    if "assistant.pid" in os.fspath(name):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(name))
def write_text(self, *args, **kwargs):
    full(self)
    return real_write_text(self, *args, **kwargs)
def open_(path, *args, **kwargs):
    if args and args[0] & os.O_WRONLY:
        full(path)
    return real_open(path, *args, **kwargs)
pathlib.Path.write_text, os.open = write_text, open_
from assistant.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _full_disk_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    return subprocess.run(
        [sys.executable, "-c", FULL_AT_PID, *args],
        capture_output=True,
        text=True,
        env={**env, "ASSISTANT_HOME": str(home)},
        cwd=ROOT,
        timeout=300,
    )


def test_a_full_disk_at_the_owner_record_is_one_warning_not_a_traceback(tmp_path: Path) -> None:
    result = _full_disk_cli(tmp_path, "ask", "what is 15 + 27")
    assert result.returncode == 0, result.stderr  # old code: OSError traceback, exit 1
    assert "42" in result.stdout
    assert "Traceback" not in result.stderr
    [warning] = [line for line in result.stderr.splitlines() if "assistant.pid" in line]
    assert "No space left on device" in warning


def test_the_daemon_starts_with_a_full_disk_at_the_owner_record(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env.update(ASSISTANT_HOME=str(home), NO_PROXY="127.0.0.1,localhost,::1")
    log = (tmp_path / "daemon.out").open("wb")
    daemon = subprocess.Popen(
        [sys.executable, "-c", FULL_AT_PID, "daemon"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=ROOT,
    )
    try:
        polling.wait_for(
            lambda: (home / "api.json").exists() or daemon.poll() is not None,
            "the daemon to start",
            180,
            0.25,
        )
        output = (tmp_path / "daemon.out").read_text(encoding="utf-8")
        assert daemon.poll() is None, output  # old code: exited with a traceback
        assert "Traceback" not in output and "No space left on device" in output
        status = run_cli(home, "status", "--json")
        assert status.returncode == 0 and '"served_by": "daemon"' in status.stdout
    finally:
        daemon.terminate()
        daemon.wait(timeout=120)
        log.close()
