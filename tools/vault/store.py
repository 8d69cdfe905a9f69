"""The vault (SPEC V1, V4): one folder of notes, read freely, written safely.

`Vault` is the vault's files (files.py: find, read, list, write bytes atomically) with
its planned writes (plans.py: every write is a list of `Change`s, computed before
anything changes) and its journal (journal.py: the intent stored before the first file
changes, undo, recovery after a crash). Opening a `Vault` recovers: a write a crash
interrupted is completed or rolled back, and stray temp files are removed.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory.db import Database
from tools.confirm import GuardedPreview
from tools.vault import plans
from tools.vault.files import (
    OWN_WRITE_TTL_S,
    TEMP_SUFFIX,
    VaultEvent,
    VaultFiles,
    atomic_write,
    now_local,
)
from tools.vault.jail import VaultPath
from tools.vault.journal import (
    JOURNAL_KEEP,
    Journal,
    RecoveryReport,
    UndoResult,
    WriteResult,
)
from tools.vault.notes import DEFAULT_MAX_BYTES
from tools.vault.plans import Change, plan_state

MOVE_PLANS_KEPT = 8

__all__ = [
    "TEMP_SUFFIX",
    "Change",
    "UndoResult",
    "Vault",
    "VaultEvent",
    "WriteResult",
    "atomic_write",
    "plan_state",
]


class Vault(VaultFiles):
    """One vault folder. Reads need nothing else; writes are journaled in `database`."""

    def __init__(
        self,
        root: Path,
        database: Database,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        daily_folder: str | None = None,
        daily_format: str | None = None,
        daily_template: str | None = None,
        templates_folder: str | None = None,
        clock: Callable[[], dt.datetime] = now_local,
        journal_keep: int = JOURNAL_KEEP,
        own_write_ttl_s: float = OWN_WRITE_TTL_S,
        recover: bool = True,
    ) -> None:
        super().__init__(
            root,
            max_bytes=max_bytes,
            daily_folder=daily_folder,
            daily_format=daily_format,
            daily_template=daily_template,
            templates_folder=templates_folder,
            clock=clock,
            own_write_ttl_s=own_write_ttl_s,
        )
        self.database = database
        self.journal_keep = journal_keep
        self.writes = Journal(self, database, journal_keep=journal_keep)
        self._move_plans: OrderedDict[tuple[str, str, bool], tuple[Any, tuple[Change, ...]]] = (
            OrderedDict()
        )
        self.recovered = self.writes.recover() if recover else RecoveryReport()

    # -- planning (nothing touches the disk) -------------------------------------------------

    def plan_create(self, path: str, content: str, *, overwrite: bool = False) -> list[Change]:
        return plans.plan_create(self, path, content, overwrite=overwrite)

    def plan_append(
        self, path: str, text: str, *, heading: str | None = None, create: bool = False
    ) -> list[Change]:
        return plans.plan_append(self, path, text, heading=heading, create=create)

    def plan_replace_section(self, path: str, heading: str, text: str) -> list[Change]:
        return plans.plan_replace_section(self, path, heading, text)

    def plan_delete(self, path: str) -> list[Change]:
        return plans.plan_delete(self, path)

    def plan_move(self, path: str, new_path: str, *, update_links: bool = True) -> list[Change]:
        """A move's plan. The plan its preview made is reused when no file of the vault
        changed since (same paths, sizes and mtimes): a confirmation does not parse the
        vault again, so it returns at once whatever the number of backlinks."""
        key = (path, new_path, update_links)
        signature = self.signature()
        with self._lock:
            cached = self._move_plans.get(key)
        if cached is not None and cached[0] == signature:
            return list(cached[1])
        changes = plans.plan_move(self, path, new_path, update_links=update_links)
        with self._lock:
            self._move_plans[key] = (signature, tuple(changes))
            while len(self._move_plans) > MOVE_PLANS_KEPT:
                self._move_plans.popitem(last=False)
        return changes

    def plan_template(
        self, template: str, path: str, *, variables: dict[str, str] | None = None
    ) -> tuple[VaultPath, list[Change]]:
        return plans.plan_template(self, template, path, variables=variables)

    def plan_daily(
        self, text: str | None, day: dt.date | None = None
    ) -> tuple[VaultPath, list[Change]]:
        return plans.plan_daily(self, text, day)

    def describe(self, changes: list[Change]) -> GuardedPreview:
        return plans.describe(changes)

    # -- writing ------------------------------------------------------------------------------

    def apply(
        self,
        changes: list[Change],
        *,
        actor: str | None = None,
        expect: dict[str, str | None] | None = None,
        may_start: Callable[[], bool] | None = None,
    ) -> WriteResult:
        return self.writes.apply(changes, actor=actor, expect=expect, may_start=may_start)

    def create(
        self, path: str, content: str, *, overwrite: bool = False, actor: str | None = None
    ) -> WriteResult:
        return self.apply(self.plan_create(path, content, overwrite=overwrite), actor=actor)

    def append(
        self,
        path: str,
        text: str,
        *,
        heading: str | None = None,
        create: bool = False,
        actor: str | None = None,
    ) -> WriteResult:
        return self.apply(self.plan_append(path, text, heading=heading, create=create), actor=actor)

    def replace_section(
        self, path: str, heading: str, text: str, *, actor: str | None = None
    ) -> WriteResult:
        return self.apply(self.plan_replace_section(path, heading, text), actor=actor)

    def move(
        self, path: str, new_path: str, *, update_links: bool = True, actor: str | None = None
    ) -> WriteResult:
        return self.apply(self.plan_move(path, new_path, update_links=update_links), actor=actor)

    def delete(self, path: str, *, actor: str | None = None) -> WriteResult:
        return self.apply(self.plan_delete(path), actor=actor)

    # -- the journal --------------------------------------------------------------------------

    def journal(self, limit: int = 20, *, include_undone: bool = False) -> list[dict[str, Any]]:
        return self.writes.journal(limit, include_undone=include_undone)

    def undo(self, n: int = 1, *, force: bool = False) -> UndoResult:
        return self.writes.undo(n, force=force)

    def recoveries(self) -> list[dict[str, Any]]:
        """Writes a restart completed or rolled back (for `vault status`)."""
        return self.writes.recoveries()
