"""Traces (SPEC T1-T3): every turn, request, reply and tool call, in SQLite.

A turn is one row; its requests and tool calls are JSON arrays in it (`request_log`,
`call_log`), so a fast turn writes one trace row, not one per request and per call (a
commit costs by the b-tree pages it writes). A request stores only the messages added since
the previous request of the same turn (plus how many came before, `prefix_count`), so a
long turn does not store its history over and over: request k's messages are the new ones
of requests 0..k. Everything is redacted first. The arrays are plain JSON, open to SQL:

    SELECT t.id, json_extract(c.value, '$.tool') FROM turns t, json_each(t.call_log) c
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

import sqlite_utils

from assistant.errors import ModelError
from assistant.loop import Turn, TurnRecorder
from assistant.model import Message, ModelReply
from assistant.outcome import TurnOutcome
from memory.db import Database, Migrations, Statement
from memory.errors import StorageError
from memory.jsontext import dumps, with_members
from memory.redact import Redactor
from memory.working import WorkingMemory
from tools.runner import CallOutcome

log = logging.getLogger(__name__)
migrations = Migrations("traces")


@migrations
def m001_turns_requests_tool_calls(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE turns (id TEXT PRIMARY KEY, session TEXT, model TEXT, started_at REAL, "
        "finished_at REAL, user_input TEXT, answer TEXT, stop_reason TEXT, stop_detail TEXT, "
        "error_code TEXT, requests INTEGER, prompt_tokens INTEGER, completion_tokens INTEGER, "
        "usage_estimated INTEGER, grounding TEXT, trigger TEXT)"
    )
    db.execute(
        "CREATE TABLE requests (turn_id TEXT NOT NULL REFERENCES turns(id), idx INTEGER, "
        "prefix_count INTEGER, new_messages TEXT, tools TEXT, reply TEXT, error TEXT, "
        "duration_ms REAL, prompt_tokens INTEGER, completion_tokens INTEGER, "
        "PRIMARY KEY (turn_id, idx))"
    )
    db.execute(
        "CREATE TABLE tool_calls (turn_id TEXT NOT NULL REFERENCES turns(id), "
        "request_idx INTEGER, call_id TEXT, tool TEXT, version TEXT, arguments_raw TEXT, "
        "arguments TEXT, status TEXT, result TEXT, content TEXT, truncated INTEGER, "
        "cached INTEGER, repaired INTEGER, executed INTEGER, duration_ms REAL, "
        "read_only INTEGER, dangerous INTEGER, failure_detail TEXT)"
    )
    db.execute("CREATE INDEX tool_calls_by_turn ON tool_calls (turn_id)")
    db.execute("CREATE INDEX turns_by_start ON turns (started_at)")


@migrations
def m002_turns_in_insertion_order(db: sqlite_utils.Database) -> None:
    """Turns are found newest-first by rowid (inserted as they start): one index less to
    write on every turn."""
    db.execute("DROP INDEX IF EXISTS turns_by_start")


@migrations
def m003_one_row_per_turn(db: sqlite_utils.Database) -> None:
    """Requests and tool calls move into their turn's row as JSON arrays: a fast turn then
    writes one trace row instead of five, and two b-trees fewer per commit. Every old row
    is carried over (a request or call whose turn row is missing gets one) before the old
    tables go."""
    db.execute("ALTER TABLE turns ADD COLUMN request_log TEXT NOT NULL DEFAULT '[]'")
    db.execute("ALTER TABLE turns ADD COLUMN call_log TEXT NOT NULL DEFAULT '[]'")
    traced = db.execute(
        "SELECT turn_id FROM requests UNION SELECT turn_id FROM tool_calls"
    ).fetchall()
    if len(traced) > 1000:  # about 4 s per 10,000 turns, once
        log.info("moving the traces of %d turns into one row each (once)", len(traced))
    for (turn_id,) in traced:
        requests = [
            _old_request(row)
            for row in db.query("SELECT * FROM requests WHERE turn_id = ? ORDER BY idx", [turn_id])
        ]
        calls = [
            _old_call(row)
            for row in db.query(
                "SELECT * FROM tool_calls WHERE turn_id = ? ORDER BY rowid", [turn_id]
            )
        ]
        db.execute("INSERT OR IGNORE INTO turns (id) VALUES (?)", [turn_id])
        db.execute(
            "UPDATE turns SET request_log = ?, call_log = ? WHERE id = ?",
            [dumps(requests), dumps(calls), turn_id],
        )
    db.execute("DROP TABLE requests")
    db.execute("DROP TABLE tool_calls")


def _loads(text: str | None) -> Any:
    return json.loads(text) if text else None


def _old_request(row: dict[str, Any]) -> dict[str, Any]:
    return {
        **{key: value for key, value in row.items() if key != "turn_id"},
        "new_messages": _loads(row["new_messages"]) or [],
        "tools": _loads(row["tools"]) or [],
        "reply": _loads(row["reply"]),
    }


_CALL_FLAGS = ("truncated", "cached", "repaired", "executed", "read_only", "dangerous")


def _old_call(row: dict[str, Any]) -> dict[str, Any]:
    return {
        **{key: value for key, value in row.items() if key != "turn_id"},
        **{flag: bool(row[flag]) for flag in _CALL_FLAGS if row[flag] is not None},
        "arguments": _loads(row["arguments"]),
        "result": _loads(row["result"]),
    }


# a turn row's columns: known when it starts, set when it ends, growing while it runs
_STARTED = ("id", "session", "model", "started_at", "user_input", "trigger")
_FINISHED = (
    "finished_at",
    "answer",
    "stop_reason",
    "stop_detail",
    "error_code",
    "requests",
    "prompt_tokens",
    "completion_tokens",
    "usage_estimated",
    "grounding",
)
_LOGS = ("request_log", "call_log")
_SAVE_TURN = (
    f"INSERT INTO turns ({', '.join(_STARTED + _FINISHED + _LOGS)}) "
    f"VALUES ({', '.join('?' * len(_STARTED + _FINISHED + _LOGS))}) "
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{column} = excluded.{column}" for column in _FINISHED + _LOGS)
)
_UNFINISHED = (None,) * len(_FINISHED)


class TraceStore:
    def __init__(self, database: Database, redactor: Redactor | None = None) -> None:
        self.database = database
        self.redactor = redactor or Redactor()
        database.migrate(migrations)

    def last_turn_id(self, session: str | None = None) -> str | None:
        where, params = ("WHERE session = ?", [session]) if session else ("", [])
        rows = self.database.query(
            f"SELECT id FROM turns {where} ORDER BY rowid DESC LIMIT 1", params
        )
        return rows[0]["id"] if rows else None

    def turn(self, turn_id: str) -> dict[str, Any] | None:
        rows = self.database.query("SELECT * FROM turns WHERE id = ?", [turn_id])
        if not rows:
            return None
        turn = rows[0]
        turn["grounding"] = _loads(turn["grounding"])
        turn["trigger"] = _loads(turn["trigger"])
        turn["requests"] = json.loads(turn.pop("request_log"))
        turn["tool_calls"] = json.loads(turn.pop("call_log"))
        return turn


class Recorder(TurnRecorder):
    """Persists the conversation into working memory and the turn into the trace store.

    Commits are few, because a commit costs more than all the rows of a fast turn: an
    assistant message that asks for tools that may change something is on disk before
    they run, and their results as soon as they are back; everything is on disk before a
    request to a remote model (the network hides the commit) and when the turn ends.
    Otherwise (an in-process model) the user's message, read-only steps and the trace are
    deferred to the next commit, which the database makes within `unsaved_s` at the
    latest, so a crash can lose at most that much work, never a step that changed
    something. The turn's trace row is queued once and built as it is committed, so it
    carries every change made until then.
    """

    def __init__(
        self,
        traces: TraceStore,
        working: WorkingMemory | None,
        *,
        trigger: dict[str, Any] | None = None,
        debug_stream: TextIO | None = None,
        unsaved_s: float = 0.05,
    ) -> None:
        self.db = traces.database
        self.unsaved_s = unsaved_s
        self.redact = traces.redactor
        self.working = working
        self.trigger = trigger
        self.debug_stream = debug_stream
        self.turn: Turn | None = None
        self._sent = 0
        self._last_reply: tuple[Message, str] | None = None
        # the trace row: read by the database's flusher thread, hence the lock
        self._row_lock = threading.Lock()
        self._row_queued = False
        self._queued: list[Statement] = []  # what this turn deferred (see `abandon`)
        self._start: tuple[object, ...] = ()
        self._finish: tuple[object, ...] = _UNFINISHED
        self._requests: list[str] = []
        self._calls: list[str] = []

    def _defer(self, *statements: Statement) -> None:
        self._queued.extend(statements)
        self.db.defer(statements, self.unsaved_s)

    def abandon(self) -> None:
        """The turn failed on storage and is reported as failed: what of it is still
        waiting for a commit must not land later (a retry would then store it twice)."""
        dropped = self.db.discard(self._queued)
        if dropped:
            log.warning("dropped %d unsaved row(s) of the failed turn", dropped)

    def _trace_changed(self, *statements: Statement) -> None:
        """Defer `statements`, and the turn's row unless it is queued already."""
        with self._row_lock:
            queued, self._row_queued = self._row_queued, True
        if not queued:
            statements = (*statements, (_SAVE_TURN, self._turn_row))
        if statements:
            self._defer(*statements)

    def _turn_row(self) -> tuple[object, ...]:
        """The row's values as the database commits it (maybe on its flusher thread)."""
        with self._row_lock:
            self._row_queued = False
            return (
                *self._start,
                *self._finish,
                f"[{','.join(self._requests)}]",
                f"[{','.join(self._calls)}]",
            )

    def save_what_ran(self) -> None:
        """The turn failed unexpectedly: commit what it produced before it failed."""
        try:
            self.db.flush()
        except StorageError as exc:  # the message names the file; the stack is for -v
            debug = log.isEnabledFor(logging.DEBUG)
            log.error("could not keep the failed turn's last steps: %s", exc, exc_info=debug)

    def turn_started(self, turn: Turn) -> None:
        self.turn = turn
        self._start = (
            turn.turn_id,
            turn.session,
            getattr(turn.model, "name", type(turn.model).__name__),
            time.time(),
            self.redact.text(turn.user_text),
            dumps(self.trigger) if self.trigger else None,
        )
        statements: list[Statement] = []
        if self.working is not None:
            user = {"role": "user", "content": turn.user_text}
            statements = self.working.start_turn_statements(turn.session, turn.turn_id, user)
        self._trace_changed(*statements)

    def messages(self, messages: Sequence[Message], *, durable: bool = False) -> None:
        if self.working is None or self.turn is None:
            return
        turn = self.turn
        statements = [
            self.working.insert_statement(turn.session, turn.turn_id, m) for m in messages
        ]
        if durable:
            self.db.write_many(statements)
        else:
            self._defer(*statements)

    def before_request(self, index: int, messages: Sequence[Message]) -> None:
        if self.debug_stream is not None:
            print_messages(messages, index, self.debug_stream)
        if self.turn is not None and getattr(self.turn.model, "remote", False):
            self.db.flush()  # costs nothing beside a network request; loses nothing

    def request(
        self,
        index: int,
        messages: Sequence[Message],
        tools: Sequence[str],
        reply: ModelReply | None,
        error: ModelError | None,
        duration_ms: float,
    ) -> None:
        prefix = self._sent if index else 0
        sent = list(messages[prefix:])
        self._sent = len(messages)
        parts = []
        # the model's previous reply opens this request's new messages: reuse its JSON
        if sent and self._last_reply is not None and sent[0] is self._last_reply[0]:
            parts.append(self._last_reply[1])
            del sent[0]
        parts.extend(dumps(m) for m in self.redact.data(sent))
        reply_message = reply.message if reply else None
        reply_json = dumps(self.redact.data(reply_message)) if reply_message else "null"
        self._last_reply = (reply_message, reply_json) if reply_message else None
        usage = reply.usage if reply else None
        entry = with_members(
            dumps(
                {
                    "idx": index,
                    "prefix_count": prefix,
                    "tools": list(tools),
                    "error": f"{error.code}: {error}" if error else None,
                    "duration_ms": duration_ms,
                    "prompt_tokens": usage.prompt_tokens if usage else None,
                    "completion_tokens": usage.completion_tokens if usage else None,
                }
            ),
            new_messages=f"[{','.join(parts)}]",
            reply=reply_json,
        )
        with self._row_lock:
            self._requests.append(entry)
        self._trace_changed()

    def tool_results(self, request_index: int, outcomes: Sequence[CallOutcome]) -> None:
        redact = self.redact
        entries = [
            dumps(
                {
                    "request_idx": request_index,
                    "call_id": o.call_id,
                    "tool": o.name,
                    "version": o.version,
                    "arguments_raw": redact.text(o.arguments_raw),
                    "arguments": redact.data(o.arguments),
                    "status": o.status,
                    "result": redact.data(o.result),
                    "content": redact.text(o.content),
                    "truncated": o.truncated,
                    "cached": o.cached,
                    "repaired": o.repaired,
                    "executed": o.executed,
                    "duration_ms": o.duration_ms,
                    "read_only": o.read_only,
                    "dangerous": o.dangerous,
                    "failure_detail": o.failure_detail,
                }
            )
            for o in outcomes
        ]
        with self._row_lock:
            self._calls.extend(entries)
        self._trace_changed()

    def turn_finished(self, outcome: TurnOutcome) -> None:
        """The answer and the whole trace are on disk before the caller gets the answer."""
        grounding = outcome.grounding
        finish = (
            time.time(),
            self.redact.text(outcome.answer),
            outcome.stop_reason.value,
            outcome.stop_detail,
            outcome.error_code,
            outcome.requests,
            outcome.usage.prompt_tokens,
            outcome.usage.completion_tokens,
            outcome.usage.estimated,
            dumps(
                {
                    "mismatches": grounding.mismatches,
                    "corrected": grounding.corrected,
                    "original_answer": grounding.original_answer,
                }
            )
            if grounding
            else None,
        )
        with self._row_lock:
            self._finish = finish
        self._trace_changed()
        self.db.flush()


def print_messages(messages: Sequence[Message], index: int, stream: TextIO = sys.stderr) -> None:
    """ASSISTANT_DEBUG: the messages about to be sent, with tool-call pairing visible."""
    print(f"--- request {index + 1}: {len(messages)} messages ---", file=stream)
    for n, message in enumerate(messages):
        role = message["role"]
        line = f"[{n}] {role}"
        if role == "tool":
            line += f" (answers {message.get('tool_call_id')})"
        content = (message.get("content") or "").replace("\n", " ")
        if content:
            line += f": {content[:200]}"
        print(line, file=stream)
        for call in message.get("tool_calls") or ():
            function = call["function"]
            print(f"      -> {call['id']} {function['name']}({function['arguments']})", file=stream)
    stream.flush()
