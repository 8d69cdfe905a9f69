"""One owner per data directory (SPEC M6b).

Chroma loses or hides vectors when two processes write one folder, and SQLite writers
would contend, so a process that opens the stores first takes an exclusive lock, and
records its PID so a second one can say who holds it. The OS releases the lock when the
owner dies, even by kill -9.
"""

from __future__ import annotations

import os
from pathlib import Path

from filelock import FileLock, Timeout

from memory.errors import StorageError
from memory.private import PRIVATE_UMASK, make_private

LOCK_NAME = "assistant.lock"
PID_NAME = "assistant.pid"


class DataDirectoryBusy(StorageError):
    """Another process owns this data directory."""

    def __init__(self, home: Path, pid: int | None, role: str | None) -> None:
        who = f"process {pid}" if pid else "another process"
        if role:
            who += f" ({role})"
        super().__init__(
            f"the data directory {home} is in use by {who}; stop it first, or use the "
            "running daemon (commands go through it when it runs)"
        )
        self.pid = pid
        self.role = role


def read_owner(home: Path) -> tuple[int | None, str | None]:
    try:
        text = (home / PID_NAME).read_text(encoding="utf-8").split()
    except OSError:
        return None, None
    pid = int(text[0]) if text and text[0].isdigit() else None
    role = text[1] if len(text) > 1 else None
    return pid, role


class DataDirectoryLock:
    def __init__(self, home: Path, role: str = "cli") -> None:
        self.home = home
        self.role = role
        self._lock = FileLock(str(home / LOCK_NAME), timeout=0)
        self._umask: int | None = None  # the process umask before this lock made it 077

    def acquire(self) -> DataDirectoryLock:
        previous = os.umask(PRIVATE_UMASK)
        try:
            self._take()
        except BaseException:
            os.umask(previous)
            raise
        self._umask = previous
        return self

    def _take(self) -> None:
        try:
            make_private(self.home)  # the owner's files are its own (0700 / 0600)
        except OSError as exc:
            raise StorageError(f"cannot create the data directory {self.home}: {exc}") from exc
        try:
            self._lock.acquire()
        except Timeout:
            pid, role = read_owner(self.home)
            raise DataDirectoryBusy(self.home, pid, role) from None
        except OSError as exc:
            raise StorageError(f"cannot lock the data directory {self.home}: {exc}") from exc
        (self.home / PID_NAME).write_text(f"{os.getpid()} {self.role}\n", encoding="utf-8")

    def release(self) -> None:
        try:
            if self._lock.is_locked:
                try:
                    (self.home / PID_NAME).unlink(missing_ok=True)
                finally:
                    self._lock.release()
        finally:
            if self._umask is not None:
                os.umask(self._umask)
                self._umask = None

    @property
    def held(self) -> bool:
        return self._lock.is_locked
