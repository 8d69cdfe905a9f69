"""One owner per data directory (SPEC M6b).

Chroma loses or hides vectors when two processes write one folder, and SQLite writers
would contend, so a process that opens the stores first takes an exclusive lock, and
records who it is (PID, role and the process's start time) so another one can say who
holds it, and can tell a live owner from a dead one whose PID was reused. The OS releases
the lock when the owner dies, even by kill -9.

Waiting, not failing: a process that finds the lock held may wait for it (`wait_s`),
polling, with a notice naming the holder. A daemon that waits also records itself in
`assistant.wanted`, so short-lived CLI processes let it go first and an open in-process
chat hands the directory over between turns.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from memory.errors import StorageError
from memory.private import PRIVATE_UMASK, make_private

log = logging.getLogger(__name__)

LOCK_NAME = "assistant.lock"
PID_NAME = "assistant.pid"
WANTED_NAME = "assistant.wanted"
POLL_S = 0.05


def process_start(pid: int) -> str | None:
    """When `pid` started (clock ticks since boot, /proc/PID/stat field 22), or None when
    that cannot be read (no such process, or no /proc on this platform)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()  # the name may hold spaces and ')'
    return fields[19].decode("ascii") if len(fields) > 19 else None


def pid_alive(pid: int) -> bool:
    """Whether a process with this PID exists (its start time says whether it is ours)."""
    if os.name == "nt":  # os.kill(pid, 0) would send CTRL_C_EVENT there: let /health decide
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class Owner:
    """Who a record file names: a PID, its role, and when that process started."""

    pid: int
    role: str | None
    started: str | None = None

    @classmethod
    def me(cls, role: str) -> Owner:
        return cls(os.getpid(), role, process_start(os.getpid()))

    def line(self) -> str:
        return f"{self.pid} {self.role or '-'} {self.started or '-'}\n"

    @property
    def alive(self) -> bool:
        """The very process recorded: alive, and (where /proc tells) started when recorded."""
        if self.pid <= 0 or not pid_alive(self.pid):
            return False
        if self.started is None or not Path("/proc/self/stat").exists():
            return True
        return process_start(self.pid) == self.started

    def describe(self) -> str:
        return f"process {self.pid}" + (f" ({self.role})" if self.role else "")


def read_record(path: Path) -> Owner | None:
    """The owner a record file names, or None when it is missing or unreadable."""
    try:
        fields = path.read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        return None
    if not fields or not fields[0].isdigit():
        return None
    role = fields[1] if len(fields) > 1 and fields[1] != "-" else None
    started = fields[2] if len(fields) > 2 and fields[2] != "-" else None
    return Owner(int(fields[0]), role, started)


def read_owner(home: Path) -> tuple[int | None, str | None]:
    owner = read_record(home / PID_NAME)
    return (owner.pid, owner.role) if owner is not None else (None, None)


def live_owner(home: Path) -> Owner | None:
    """The recorded owner of `home`, if that process still lives (not a reused PID)."""
    owner = read_record(home / PID_NAME)
    return owner if owner is not None and owner.alive else None


def waiting_daemon(home: Path) -> Owner | None:
    """A live daemon waiting for `home`'s lock, per `assistant.wanted`."""
    owner = read_record(home / WANTED_NAME)
    return owner if owner is not None and owner.alive and owner.pid != os.getpid() else None


def _write_record(path: Path, text: str) -> None:
    """Replace the file atomically; if there is no room for a new file (a full disk), try
    rewriting the old one in place, which needs no new block."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
        return
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.write(fd, text.encode("utf-8"))
            os.ftruncate(fd, len(text.encode("utf-8")))
        finally:
            os.close(fd)


class DataDirectoryBusy(StorageError):
    """Another process owns this data directory."""

    def __init__(
        self, home: Path, pid: int | None, role: str | None, waited_s: float = 0.0
    ) -> None:
        who = f"process {pid}" if pid else "another process"
        if role:
            who += f" ({role})"
        waited = f" (waited {waited_s:.0f} s)" if waited_s >= 1 else ""
        super().__init__(
            f"the data directory {home} is in use by {who}{waited}; stop it first, or use "
            "the running daemon (commands go through it when it runs)"
        )
        self.pid = pid
        self.role = role


class DataDirectoryLock:
    def __init__(self, home: Path, role: str = "cli") -> None:
        self.home = home
        self.role = role
        # not thread-local: a chat hands the directory over from another thread
        self._lock = FileLock(str(home / LOCK_NAME), timeout=0, thread_local=False)
        self._wanted = False
        self._umask: int | None = None  # the process umask before this lock made it 077

    def acquire(
        self,
        wait_s: float = 0.0,
        *,
        notice: Callable[[str], None] | None = None,
        yield_to: Callable[[Owner | None], bool] | None = None,
    ) -> DataDirectoryLock:
        """Take the lock (see `_acquire`); while it is held the process umask is 077, so
        whatever the owner creates in the data directory is its own (memory.private)."""
        previous = os.umask(PRIVATE_UMASK)
        try:
            self._acquire(wait_s, notice=notice, yield_to=yield_to)
        except BaseException:
            os.umask(previous)
            raise
        self._umask = previous
        return self

    def _acquire(
        self,
        wait_s: float,
        *,
        notice: Callable[[str], None] | None,
        yield_to: Callable[[Owner | None], bool] | None,
    ) -> None:
        """Take the lock, waiting up to `wait_s` for its holder to let go.

        `notice` hears once per holder that this process waits, and for whom; `yield_to`
        (given the current holder) may end the wait early with DataDirectoryBusy, which
        is how a CLI command learns that a daemon owns, or is about to own, the directory.
        The holder being this very process is never waited for.
        """
        self._make_home()
        deadline = time.monotonic() + wait_s
        started = time.monotonic()
        told: Owner | bool | None = False  # the holder last named in a notice
        try:
            while not self._try_lock():
                owner = read_record(self.home / PID_NAME)
                mine = owner is not None and owner.pid == os.getpid()
                if mine or time.monotonic() >= deadline or (yield_to and yield_to(owner)):
                    pid, role = (owner.pid, owner.role) if owner else (None, None)
                    raise DataDirectoryBusy(self.home, pid, role, time.monotonic() - started)
                if self.role == "daemon" and not self._wanted:
                    self._want()
                if notice is not None and owner != told:
                    who = owner.describe() if owner is not None else "another process"
                    notice(
                        f"the data directory {self.home} is in use by {who}; "
                        f"waiting up to {wait_s:.0f} s for it"
                    )
                    told = owner
                time.sleep(POLL_S)
        finally:
            self._unwant()
        self._record_owner()

    def _make_home(self) -> None:
        try:
            self.home.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise StorageError(
                f"the data directory {self.home} is not a folder (it is a file); "
                "point ASSISTANT_HOME at a folder"
            ) from None
        except OSError as exc:
            raise StorageError(
                f"cannot create the data directory {self.home}: {exc.strerror or exc}"
            ) from None
        if not self.home.is_dir():
            raise StorageError(
                f"the data directory {self.home} is not a folder; point ASSISTANT_HOME at one"
            )
        make_private(self.home)  # folders 0700, files 0600, whatever an earlier run left

    def _try_lock(self) -> bool:
        try:
            self._lock.acquire()
        except Timeout:
            return False
        except NotADirectoryError:
            raise StorageError(
                f"the data directory {self.home} is not a folder; point ASSISTANT_HOME at one"
            ) from None
        except OSError as exc:
            raise StorageError(
                f"cannot lock the data directory {self.home}: {exc.strerror or exc}"
            ) from None
        return True

    def _record_owner(self) -> None:
        """Say who holds the lock. The record only names the holder (the lock itself is
        the OS's), so a full disk here is a warning, not a failure to start."""
        try:
            _write_record(self.home / PID_NAME, Owner.me(self.role).line())
        except OSError as exc:
            log.warning(
                "could not record this process in %s (%s); other commands cannot name "
                "the owner of the data directory",
                self.home / PID_NAME,
                exc.strerror or exc,
            )

    def _want(self) -> None:
        try:
            _write_record(self.home / WANTED_NAME, Owner.me(self.role).line())
            self._wanted = True
        except OSError:  # only a courtesy to the holder: waiting works without it
            pass

    def _unwant(self) -> None:
        if self._wanted:
            self._wanted = False
            with contextlib.suppress(OSError):
                path = self.home / WANTED_NAME
                owner = read_record(path)
                if owner is not None and owner.pid == os.getpid():
                    path.unlink()

    def release(self) -> None:
        try:
            if self._lock.is_locked:
                try:
                    owner = read_record(self.home / PID_NAME)
                    if owner is not None and owner.pid == os.getpid():
                        (self.home / PID_NAME).unlink(missing_ok=True)
                except OSError:
                    pass
                finally:
                    self._lock.release()
        finally:
            if self._umask is not None:
                os.umask(self._umask)
                self._umask = None

    @property
    def held(self) -> bool:
        return self._lock.is_locked
