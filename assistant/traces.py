"""Traces (SPEC T1-T3): every turn, request, reply and tool call, in SQLite.

A request stores only the messages added since the previous request of the same turn
(plus how many came before, `prefix_count`), so a long turn does not store its history
over and over: request k's messages are the new ones of requests 0..k. Everything is
redacted first.
"""

from __future__ import annotations

import json
import logging
import sys
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
from memory.jsontext import dumps
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
        turn["grounding"] = json.loads(turn["grounding"]) if turn["grounding"] else None
        turn["trigger"] = json.loads(turn["trigger"]) if turn["trigger"] else None
        turn["requests"] = [
            {
                **row,
                "new_messages": json.loads(row["new_messages"]),
                "tools": json.loads(row["tools"]),
                "reply": json.loads(row["reply"]) if row["reply"] else None,
            }
            for row in self.database.query(
                "SELECT * FROM requests WHERE turn_id = ? ORDER BY idx", [turn_id]
            )
        ]
        turn["tool_calls"] = [
            {
                **row,
                "arguments": json.loads(row["arguments"]) if row["arguments"] else None,
                "result": json.loads(row["result"]) if row["result"] else None,
            }
            for row in self.database.query(
                "SELECT * FROM tool_calls WHERE turn_id = ? ORDER BY rowid", [turn_id]
            )
        ]
        return turn


class Recorder(TurnRecorder):
    """Persists the conversation into working memory and the turn into the trace store.

    Commits are few, because a commit costs more than all the rows of a fast turn: an
    assistant message that asks for tools that may change something is on disk before
    they run, and their results as soon as they are back; everything is on disk before a
    request to a remote model (the network hides the commit) and when the turn ends.
    Otherwise (an in-process model) the user's message, read-only steps and trace rows
    are deferred to the next commit, which the database makes within `unsaved_s` at the
    latest, so a crash can lose at most that much work, never a step that changed
    something.
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

    def _defer(self, *statements: Statement) -> None:
        self.db.defer(statements, self.unsaved_s)

    def save_what_ran(self) -> None:
        """The turn failed unexpectedly: commit what it produced before it failed."""
        try:
            self.db.flush()
        except StorageError:
            log.exception("could not keep the failed turn's last steps")

    def turn_started(self, turn: Turn) -> None:
        self.turn = turn
        statements: list[Statement] = []
        if self.working is not None:
            user = {"role": "user", "content": turn.user_text}
            statements = self.working.start_turn_statements(turn.session, turn.turn_id, user)
        statements.append(
            (
                "INSERT INTO turns (id, session, model, started_at, user_input, trigger) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    turn.turn_id,
                    turn.session,
                    getattr(turn.model, "name", type(turn.model).__name__),
                    time.time(),
                    self.redact.text(turn.user_text),
                    dumps(self.trigger) if self.trigger else None,
                ),
            )
        )
        self._defer(*statements)

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
        assert self.turn is not None
        prefix = self._sent if index else 0
        sent = list(messages[prefix:])
        self._sent = len(messages)
        parts = []
        # the model's previous reply opens this request's new messages: reuse its JSON
        if sent and self._last_reply is not None and sent[0] == self._last_reply[0]:
            parts.append(self._last_reply[1])
            del sent[0]
        parts.extend(dumps(m) for m in self.redact.data(sent))
        reply_message = reply.as_message() if reply else None
        reply_json = dumps(self.redact.data(reply_message)) if reply_message else None
        self._last_reply = (reply_message, reply_json) if reply_message else None
        usage = reply.usage if reply else None
        self._defer(
            (
                "INSERT INTO requests (turn_id, idx, prefix_count, new_messages, tools, reply, "
                "error, duration_ms, prompt_tokens, completion_tokens) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.turn.turn_id,
                    index,
                    prefix,
                    f"[{','.join(parts)}]",
                    dumps(list(tools)),
                    reply_json,
                    f"{error.code}: {error}" if error else None,
                    duration_ms,
                    usage.prompt_tokens if usage else None,
                    usage.completion_tokens if usage else None,
                ),
            )
        )

    def tool_results(self, request_index: int, outcomes: Sequence[CallOutcome]) -> None:
        assert self.turn is not None
        insert = (
            "INSERT INTO tool_calls (turn_id, request_idx, call_id, tool, version, "
            "arguments_raw, arguments, status, result, content, truncated, cached, "
            "repaired, executed, duration_ms, read_only, dangerous, failure_detail) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        self._defer(
            *(
                (
                    insert,
                    (
                        self.turn.turn_id,
                        request_index,
                        o.call_id,
                        o.name,
                        o.version,
                        self.redact.text(o.arguments_raw),
                        dumps(self.redact.data(o.arguments)) if o.arguments is not None else None,
                        o.status,
                        dumps(self.redact.data(o.result)),
                        self.redact.text(o.content),
                        o.truncated,
                        o.cached,
                        o.repaired,
                        o.executed,
                        o.duration_ms,
                        o.read_only,
                        o.dangerous,
                        o.failure_detail,
                    ),
                )
                for o in outcomes
            )
        )

    def turn_finished(self, outcome: TurnOutcome) -> None:
        grounding = outcome.grounding
        finish = (
            "UPDATE turns SET finished_at = ?, answer = ?, stop_reason = ?, stop_detail = ?, "
            "error_code = ?, requests = ?, prompt_tokens = ?, completion_tokens = ?, "
            "usage_estimated = ?, grounding = ? WHERE id = ?",
            (
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
                outcome.turn_id,
            ),
        )
        self.db.write_many([finish])


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
