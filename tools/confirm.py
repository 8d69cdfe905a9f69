"""Confirmation of dangerous actions (SPEC S2, V5).

A dangerous call (overwrite, delete, move, anything flagged) never runs inside a turn:
the runner stores it here as a pending action with a preview of what would change and
the model gets the action id. Only the user runs it, by confirming (`assistant confirm
ID`, a yes at the chat prompt, or the control API). Pending actions expire, and an
unattended run (a job, a file trigger) can never confirm.

An unattended run's action waits for the user instead: it does not expire before the user
has been shown it (`for_user`, behind `assistant pending` and `status`), and only then
gets its time to live. An action that expired stays listed for a day as `expired`, so
nothing disappears unseen. Each action records which run asked for it (`origin`).

A preview may record what it was computed from (`GuardedPreview.state`: a content hash per
note). The action keeps it, and confirming hands it to the tool (`expected_state`), which
refuses to act if anything changed since: the user never says yes to one diff and gets
another. Such a refusal leaves the action `stale` and raises `ConfirmationError("STALE")`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import sqlite_utils
from pydantic import BaseModel, ValidationError

from memory.db import Database, Migrations
from tools.base import ActionPreview, Tool, ToolContext, ToolError
from tools.registry import ToolRegistry

DEFAULT_TTL_S = 15 * 60
SHOW_EXPIRED_S = 24 * 3600  # how long an expired action is still listed for the user
STALE_PREVIEW = "STALE_PREVIEW"  # the ToolError code of a tool whose preview went stale

migrations = Migrations("confirmations")


@migrations
def m001_pending_actions(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE pending_actions (id TEXT PRIMARY KEY, tool TEXT NOT NULL, version TEXT, "
        "arguments TEXT NOT NULL, summary TEXT NOT NULL, diff TEXT, session TEXT, turn_id TEXT, "
        "unattended INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, "
        "expires_at REAL NOT NULL, status TEXT NOT NULL DEFAULT 'pending', result TEXT, "
        "decided_at REAL)"
    )


@migrations
def m002_preview_state(db: sqlite_utils.Database) -> None:
    db.execute("ALTER TABLE pending_actions ADD COLUMN preview_state TEXT")


@migrations
def m003_origin_and_seen(db: sqlite_utils.Database) -> None:
    """Which unattended run asked (`job:NAME`, `watch:RULE`); when the user was shown it."""
    db.execute("ALTER TABLE pending_actions ADD COLUMN origin TEXT")
    db.execute("ALTER TABLE pending_actions ADD COLUMN seen_at REAL")


@dataclass(frozen=True)
class GuardedPreview(ActionPreview):
    """A preview that says what it was computed from: each thing it read (a note path)
    with a hash of its content then, None where it did not exist. A tool that returns one
    must, when confirmed, refuse with `ToolError(STALE_PREVIEW, ...)` unless
    `expected_state()` still holds."""

    state: Mapping[str, str | None] = field(default_factory=dict)


_EXPECTED: ContextVar[dict[str, str | None] | None] = ContextVar(
    "confirmed_preview_state", default=None
)


def expected_state() -> dict[str, str | None] | None:
    """While a confirmed action runs: the state its preview was computed from (None when
    the preview recorded none, or outside a confirmation)."""
    return _EXPECTED.get()


@contextmanager
def _expecting(state: dict[str, str | None] | None) -> Iterator[None]:
    token = _EXPECTED.set(state)
    try:
        yield
    finally:
        _EXPECTED.reset(token)


class ConfirmationError(Exception):
    """A confirmation that cannot go ahead; `code` says why (UNKNOWN, EXPIRED, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class PendingAction:
    id: str
    tool: str
    version: str | None
    arguments: dict[str, Any]
    summary: str
    diff: str | None
    session: str | None
    turn_id: str | None
    unattended: bool
    created_at: float
    expires_at: float
    status: str
    result: Any = None
    decided_at: float | None = None
    preview_state: dict[str, str | None] | None = None
    origin: str | None = None
    seen_at: float | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> PendingAction:
        state = row.get("preview_state")
        return cls(
            **{
                **row,
                "arguments": json.loads(row["arguments"]),
                "unattended": bool(row["unattended"]),
                "result": json.loads(row["result"]) if row["result"] else None,
                "preview_state": json.loads(state) if state else None,
            }
        )

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class PendingActions:
    def __init__(self, database: Database, *, ttl_s: float = DEFAULT_TTL_S) -> None:
        self.database = database
        self.ttl_s = ttl_s
        database.migrate(migrations)
        self.interrupted = self._resolve_interrupted()

    def _resolve_interrupted(self) -> list[str]:
        """Actions a crash left `running` (the store opens before anything can confirm,
        in the one process that owns the data directory): they become `interrupted`
        instead of "already running" forever. A vault write they began is completed or
        rolled back when the vault opens (`assistant vault status` says which)."""
        rows = self.database.query("SELECT id FROM pending_actions WHERE status = 'running'")
        if not rows:
            return []
        result = {
            "error": "INTERRUPTED",
            "detail": "the process stopped while this action ran; a vault write it began was "
            "completed or rolled back at restart (see `assistant vault status`)",
        }
        self.database.write(
            "UPDATE pending_actions SET status = 'interrupted', result = ? "
            "WHERE status = 'running'",
            (json.dumps(result),),
        )
        return [row["id"] for row in rows]

    def create(self, tool: Tool, args: BaseModel, context: ToolContext) -> PendingAction:
        preview: ActionPreview = tool.describe(args, context)
        state = dict(preview.state) if isinstance(preview, GuardedPreview) else None
        now = time.time()
        action = PendingAction(
            id=f"a_{uuid.uuid4().hex[:10]}",
            tool=tool.name,
            version=tool.version,
            arguments=args.model_dump(mode="json"),
            summary=preview.summary,
            diff=preview.diff,
            session=context.session or None,
            turn_id=context.turn_id or None,
            unattended=context.unattended,
            created_at=now,
            expires_at=now + self.ttl_s,
            status="pending",
            preview_state=state,
            origin=(context.origin or "unattended") if context.unattended else None,
        )
        self.database.write(
            "INSERT INTO pending_actions (id, tool, version, arguments, summary, diff, session, "
            "turn_id, unattended, created_at, expires_at, status, preview_state, origin) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
            (
                action.id,
                action.tool,
                action.version,
                json.dumps(action.arguments),
                action.summary,
                action.diff,
                action.session,
                action.turn_id,
                action.unattended,
                now,
                action.expires_at,
                json.dumps(state) if state is not None else None,
                action.origin,
            ),
        )
        return action

    def get(self, action_id: str) -> PendingAction | None:
        rows = self.database.query("SELECT * FROM pending_actions WHERE id = ?", [action_id])
        return PendingAction.from_row(rows[0]) if rows else None

    def list(self, *, status: str | None = "pending") -> list[PendingAction]:
        self._expire()
        where, params = ("WHERE status = ?", [status]) if status else ("", [])
        rows = self.database.query(
            f"SELECT * FROM pending_actions {where} ORDER BY created_at DESC", params
        )
        return [PendingAction.from_row(row) for row in rows]

    def for_user(self, *, now: float | None = None) -> list[PendingAction]:
        """What to show the user: every pending action, unattended ones included, and
        those that expired within the last day. Showing an unattended action starts its
        time to live (until then it waits)."""
        now = time.time() if now is None else now
        self._expire(now)
        self.database.write(
            "UPDATE pending_actions SET seen_at = ?, expires_at = max(expires_at, ?) "
            "WHERE status = 'pending' AND seen_at IS NULL AND unattended = 1",
            (now, now + self.ttl_s),
        )
        rows = self.database.query(
            "SELECT * FROM pending_actions WHERE status = 'pending' "
            "OR (status = 'expired' AND expires_at >= ?) ORDER BY status DESC, created_at DESC",
            [now - SHOW_EXPIRED_S],
        )
        return [PendingAction.from_row(row) for row in rows]

    def _expire(self, now: float | None = None) -> None:
        """Past their time: interactive actions, and unattended ones the user was shown."""
        self.database.write(
            "UPDATE pending_actions SET status = 'expired' WHERE status = 'pending' "
            "AND expires_at <= ? AND (unattended = 0 OR seen_at IS NOT NULL)",
            (time.time() if now is None else now,),
        )

    def _decidable(self, action_id: str, *, unattended: bool) -> PendingAction:
        if unattended:
            raise ConfirmationError(
                "UNATTENDED", "an unattended run (job or file trigger) cannot confirm actions"
            )
        self._expire()
        action = self.get(action_id)
        if action is None:
            raise ConfirmationError("UNKNOWN", f"there is no pending action {action_id!r}")
        if action.status == "expired":
            raise ConfirmationError(
                "EXPIRED", f"action {action_id} expired; ask again to get a fresh one"
            )
        if action.status != "pending":
            raise ConfirmationError(
                "ALREADY_DECIDED", f"action {action_id} was already {action.status}"
            )
        return action

    def confirm(
        self, action_id: str, registry: ToolRegistry, *, unattended: bool = False
    ) -> PendingAction:
        """Run the action now, exactly once; its result (or error) is stored with it. If
        what it acts on changed since its preview, nothing runs: the action becomes
        `stale` and `ConfirmationError("STALE")` says which note changed."""
        action = self._decidable(action_id, unattended=unattended)
        tool = registry.get(action.tool)
        if tool is None:
            raise ConfirmationError("UNKNOWN_TOOL", f"the tool {action.tool!r} is not available")
        claimed = self.database.update(
            "UPDATE pending_actions SET status = 'running', decided_at = ? "
            "WHERE id = ? AND status = 'pending'",
            (time.time(), action_id),
        )
        if claimed != 1:
            raise ConfirmationError("ALREADY_DECIDED", f"action {action_id} is being decided")
        context = ToolContext(
            session=action.session or "",
            turn_id=action.turn_id or "",
            call_id=action.id,
            idempotency_key=action.id,
            confirmed=True,
        )
        status = "failed"
        try:
            args = tool.args_model.model_validate(action.arguments)
            with _expecting(action.preview_state):
                value = tool.invoke(args, context)
            result = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
            status = "confirmed"
        except ToolError as exc:
            result = exc.payload()
            if exc.code == STALE_PREVIEW:
                status = "stale"
        except (ValidationError, Exception) as exc:  # noqa: BLE001 - reported, not raised
            result = {"error": "TOOL_EXCEPTION", "detail": f"{type(exc).__name__}: {exc}"}
        self.database.write(
            "UPDATE pending_actions SET status = ?, result = ? WHERE id = ?",
            (status, json.dumps(result, ensure_ascii=False, default=str), action_id),
        )
        done = self.get(action_id)
        assert done is not None
        if status == "stale":
            raise ConfirmationError(
                "STALE",
                f"action {action_id} was not run: {result['detail']}. Ask again to see a "
                "fresh preview.",
            )
        return done

    def reject(self, action_id: str) -> PendingAction:
        self._decidable(action_id, unattended=False)
        self.database.write(
            "UPDATE pending_actions SET status = 'rejected', decided_at = ? WHERE id = ?",
            (time.time(), action_id),
        )
        rejected = self.get(action_id)
        assert rejected is not None
        return rejected


def pending_payload(action: PendingAction) -> dict[str, Any]:
    """What the model sees instead of a result: nothing happened yet, and why."""
    note = (
        "Nothing has changed yet. Tell the user exactly what would change and that it runs "
        f"only when they confirm (assistant confirm {action.id})."
    )
    payload: dict[str, Any] = {
        "status": "pending_confirmation",
        "action_id": action.id,
        "would": action.summary,
        "expires_in_s": round(action.expires_at - action.created_at),
        "note": note,
    }
    if action.unattended:
        payload["note"] += (
            " This run is unattended and cannot confirm; the action waits until the user "
            "sees it (assistant pending, assistant status)."
        )
        del payload["expires_in_s"]
    if action.diff:
        payload["diff"] = action.diff
    return payload
