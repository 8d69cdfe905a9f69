"""Session summary tier (SPEC M2, M3, M9): fold older turns into a running summary.

A long session would overflow the model's context, so once it passes a turn count or a
token budget, everything but the last few turns is folded into a summary and only the
recent turns reach the model verbatim. Cuts fall between whole units (an assistant
message with tool_calls plus all its results is one unit) and in fact at turn
boundaries, so the model never sees a tool result without its call or the reverse.
Raw messages are never deleted: the summary only records which ids it covers, and a
summariser that fails leaves the history as it was instead of storing its error.

Between folds the prompt would still swing by up to eight whole tool-heavy turns, so
what is sent of the unfolded turns is masked (`render_history`): the last few verbatim,
older tool results as short stubs (the call and its id kept), the oldest as request and
answer only. The running summary has a token cap: past it the summariser is asked to
shorten it, and if that fails it is cut. Together the prompt stays flat over a session.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlite_utils
from pydantic import ConfigDict

from memory.compression_settings import CompressionSettings
from memory.db import Database, Migrations
from memory.redact import Redactor
from memory.tokens import estimate_message_tokens, estimate_tokens
from memory.working import Message, WorkingMemory, repair

log = logging.getLogger(__name__)

Summariser = Callable[[str | None, list[Message]], str]
"""(previous running summary or None, the messages being folded) -> new running summary."""

Shrinker = Callable[[str, int], str]
"""(a running summary over its cap, the cap in tokens) -> the summary rewritten shorter."""

FoldedCallback = Callable[[str, list[Message]], None]
"""(session, the folded messages, each carrying its row `id`): e.g. extract conclusions."""

UnitKind = Literal["user", "answer", "tool_calls", "orphan", "other"]
Trigger = Literal["turns", "tokens"]

SUMMARY_HEADER = "Earlier in this session:"
SUMMARY_PREFIX = "Summary of the earlier conversation (older messages are folded into it):\n"

migrations = Migrations("compression")


@migrations
def m001_summaries(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE summaries (id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, "
        "text TEXT NOT NULL, covers_message_ids TEXT NOT NULL, "
        "last_message_id INTEGER NOT NULL, created_at REAL NOT NULL, "
        "tokens INTEGER NOT NULL, summariser TEXT NOT NULL)"
    )
    db.execute("CREATE INDEX summaries_by_session ON summaries (session, id)")


# -- units and turns ----------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """Messages that must stay together: a cut may fall before or after, never inside."""

    kind: UnitKind
    rows: tuple[dict[str, Any], ...]

    @property
    def ids(self) -> list[int]:
        return [row["id"] for row in self.rows]

    @property
    def call_ids(self) -> list[str]:
        """Ids of the tool calls the unit's assistant message makes (empty for other kinds)."""
        if self.kind != "tool_calls":
            return []
        return [call.get("id") for call in _tool_calls(self.rows[0])]

    @property
    def result_ids(self) -> list[str]:
        return [row.get("tool_call_id") for row in self.rows if row["role"] == "tool"]


def _tool_calls(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = row.get("tool_calls")
    if not raw:
        return []
    calls = json.loads(raw) if isinstance(raw, str) else raw
    return list(calls or [])


def split_units(rows: Iterable[Mapping[str, Any]]) -> list[Unit]:
    """Group message rows (in id order) into atomic units.

    Tool rows that directly follow an assistant message with tool_calls belong to it,
    parallel results included. A tool row with nothing to attach to is an "orphan" unit
    (repair drops it on load); it never splits a call from its results.
    """
    groups: list[tuple[UnitKind, list[dict[str, Any]]]] = []
    for raw in rows:
        row = dict(raw)
        role = row.get("role")
        if role == "tool":
            if groups and groups[-1][0] in ("tool_calls", "orphan"):
                groups[-1][1].append(row)
            else:
                groups.append(("orphan", [row]))
        elif role == "assistant" and _tool_calls(row):
            groups.append(("tool_calls", [row]))
        elif role == "user":
            groups.append(("user", [row]))
        elif role == "assistant":
            groups.append(("answer", [row]))
        else:
            groups.append(("other", [row]))
    return [Unit(kind, tuple(unit_rows)) for kind, unit_rows in groups]


def split_turns(units: Sequence[Unit]) -> list[list[Unit]]:
    """Group units into turns; each user unit starts one.

    Units before the first user message (if any) form a leading group that is not a
    user turn; it is folded together with the earliest turns.
    """
    turns: list[list[Unit]] = []
    for unit in units:
        if unit.kind == "user" or not turns:
            turns.append([unit])
        else:
            turns[-1].append(unit)
    return turns


def _is_user_turn(turn: Sequence[Unit]) -> bool:
    return bool(turn) and turn[0].kind == "user"


def row_message(row: Mapping[str, Any], *, with_id: bool = False) -> Message:
    """A stored message row in chat-completions form (optionally keeping its row id)."""
    message: Message = {"role": row["role"], "content": row.get("content")}
    calls = _tool_calls(row)
    if calls:
        message["tool_calls"] = calls
    if row.get("tool_call_id"):
        message["tool_call_id"] = row["tool_call_id"]
    if with_id:
        message["id"] = row["id"]
    return message


def _repaired(session: str, rows: Iterable[Mapping[str, Any]], *, with_id: bool) -> list[Message]:
    messages, problems = repair([row_message(row, with_id=with_id) for row in rows])
    for problem in problems:
        log.warning("session %s: %s", session, problem)
    return messages


def _without_ids(messages: Iterable[Message]) -> list[Message]:
    return [{key: value for key, value in m.items() if key != "id"} for m in messages]


# -- policy, records, results -------------------------------------------------------------


class CompressionPolicy(CompressionSettings):
    """When to fold, and how much to keep verbatim."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True


@dataclass
class Summary:
    """One stored running summary; the newest row per session is the current one."""

    id: int
    session: str
    text: str
    covers_message_ids: list[int]
    last_message_id: int
    created_at: float
    tokens: int
    summariser: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Summary:
        return cls(**{**row, "covers_message_ids": json.loads(row["covers_message_ids"])})


@dataclass
class SessionContext:
    """What the model should see of a session: the summary and the verbatim tail."""

    summary: str | None
    messages: list[Message]
    summary_id: int | None = None
    last_message_id: int | None = None
    elided_results: int = 0
    collapsed_turns: int = 0

    def as_messages(self) -> list[Message]:
        """Summary message (if any) followed by the verbatim messages, for after the
        system prompt."""
        head = [summary_message(self.summary)] if self.summary else []
        return [*head, *self.messages]


@dataclass
class CompressionResult:
    """What one compression did, or why it did nothing (`failed`, `error`)."""

    session: str
    summary: str | None
    folded_message_ids: list[int]
    kept_messages: int
    kept_turns: int
    tokens_before: int
    tokens_after: int
    trigger: Trigger
    summary_id: int | None = None
    covers_message_ids: list[int] = field(default_factory=list)
    failed: bool = False
    error: str | None = None
    callback_error: str | None = None
    shortened: Literal["rewritten", "trimmed"] | None = None


def summary_message(summary: str) -> Message:
    """The system message the loop places right after the system prompt."""
    return {"role": "system", "content": SUMMARY_PREFIX + summary}


# -- what the model sees of the unfolded turns --------------------------------------------


@dataclass
class Rendered:
    """The unfolded history as sent: recent turns verbatim, older ones masked."""

    messages: list[Message]
    elided_results: int = 0
    collapsed_turns: int = 0
    older_tokens: int = 0


def elided_stub(content: str | None, tool: str, preview_chars: int) -> str | None:
    """The stub sent instead of an old tool result, or None when it would not be shorter.

    The raw result stays in the store and in the trace; the model keeps the call, the
    tool's name and the start of what it returned, which is what it needs to know that
    the call happened and roughly what came back."""
    text = content or ""
    stub = json.dumps(
        {"elided": True, "tool": tool, "chars": len(text), "preview": shorten(text, preview_chars)},
        ensure_ascii=False,
    )
    return stub if estimate_tokens(stub) < estimate_tokens(text) else None


def _masked_turn(turn: Sequence[Unit], preview_chars: int) -> tuple[list[Message], int]:
    """The turn with each tool result replaced by its stub; calls and ids kept, so every
    call still has exactly one result right after it."""
    messages: list[Message] = []
    elided = 0
    for unit in turn:
        names = {
            call.get("id"): (call.get("function") or {}).get("name") or "tool"
            for call in _tool_calls(unit.rows[0])
        }
        for row in unit.rows:
            message = dict(row)
            if row["role"] == "tool":
                stub = elided_stub(
                    row.get("content"), names.get(row.get("tool_call_id"), "tool"), preview_chars
                )
                if stub is not None:
                    message["content"] = stub
                    elided += 1
            messages.append(message)
    return messages, elided


def _collapsed_turn(turn: Sequence[Unit]) -> list[Message]:
    """The turn as request and answer only: each tool_calls unit is left out whole (its
    text, if the model said something alongside the calls, is kept as a plain message),
    so no call or result can be orphaned."""
    messages: list[Message] = []
    for unit in turn:
        if unit.kind == "tool_calls":
            content = unit.rows[0].get("content")
            if content and content.strip():
                messages.append({"role": "assistant", "content": content})
        else:
            messages.extend(dict(row) for row in unit.rows)
    return messages


def render_history(messages: Sequence[Message], policy: CompressionPolicy) -> Rendered:
    """What the model is sent of the unfolded (repaired) messages.

    Without this the prompt grows between folds by whole tool-heavy turns: up to
    `compress_after_turns - keep_turns` of them. So the last `mask_after_turns` user turns go
    verbatim; older ones go with their tool results as stubs, newest first, while they fit
    `older_turns_tokens`; the rest as request and answer only. What varies between folds
    is then bounded by that budget plus a few short exchanges, whatever the tools return.
    """
    turns = split_turns(split_units(messages))
    user_turns = [i for i, turn in enumerate(turns) if _is_user_turn(turn)]
    if len(user_turns) <= policy.mask_after_turns:
        return Rendered(messages=[dict(m) for m in messages])
    start = user_turns[-policy.mask_after_turns]
    older: list[list[Message]] = []
    used = elided = collapsed = 0
    collapsing = False
    for turn in reversed(turns[:start]):
        if not collapsing:
            masked, count = _masked_turn(turn, policy.mask_preview_chars)
            cost = estimate_message_tokens(masked)
            if used + cost <= policy.older_turns_tokens:
                older.append(masked)
                used += cost
                elided += count
                continue
            collapsing = True
        short = _collapsed_turn(turn)
        older.append(short)
        used += estimate_message_tokens(short)
        collapsed += 1
    recent = [dict(row) for turn in turns[start:] for row in _rows(turn)]
    return Rendered(
        messages=[m for turn in reversed(older) for m in turn] + recent,
        elided_results=elided,
        collapsed_turns=collapsed,
        older_tokens=used,
    )


def trim_summary(text: str, max_tokens: int) -> str:
    """Cut a summary to `max_tokens` by dropping its oldest lines (the header stays); the
    last resort when the summariser could not shorten it itself."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = [lines.pop(0)] if lines and lines[0].strip() == SUMMARY_HEADER else []
    while len(lines) > 1 and estimate_tokens("\n".join(header + lines)) > max_tokens:
        lines.pop(0)
    result = "\n".join(header + lines)
    if estimate_tokens(result) > max_tokens and lines:
        # one long line (a model's paragraph): keep its start, cut by characters
        room = max(max_tokens - estimate_tokens("\n".join(header)) - 1, 1)
        line = lines[0]
        while estimate_tokens(line) > room:
            shorter = shorten(line, len(line) * 9 // 10)
            if len(shorter) >= len(line):
                break
            line = shorter
        result = "\n".join([*header, line])
    return result


# -- the compressor -----------------------------------------------------------------------


class SummariserError(RuntimeError):
    """The summariser returned nothing usable."""


class SessionCompressor:
    """Keeps each session's running summary and decides what stays verbatim."""

    def __init__(
        self,
        database: Database,
        working: WorkingMemory,
        summarise: Summariser,
        policy: CompressionPolicy | None = None,
        *,
        on_folded: FoldedCallback | None = None,
        redactor: Redactor | None = None,
        summariser_name: str | None = None,
        shrink: Shrinker | None = None,
    ) -> None:
        self.database = database
        self.working = working
        self.summarise = summarise
        self.policy = policy or CompressionPolicy()
        self.on_folded = on_folded
        self.redactor = redactor
        self.shrink = shrink
        self.summariser_name = (
            summariser_name or getattr(summarise, "__name__", None) or type(summarise).__name__
        )
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        database.migrate(migrations)

    # -- reads ----------------------------------------------------------------------------

    def latest(self, session: str) -> Summary | None:
        rows = self.database.query(
            "SELECT * FROM summaries WHERE session = ? ORDER BY id DESC LIMIT 1", [session]
        )
        return Summary.from_row(rows[0]) if rows else None

    def history(self, session: str) -> list[Summary]:
        """Every summary the session had, oldest first (for inspection and tests)."""
        rows = self.database.query(
            "SELECT * FROM summaries WHERE session = ? ORDER BY id", [session]
        )
        return [Summary.from_row(row) for row in rows]

    def _verbatim_rows(self, session: str, after: int | None) -> list[dict[str, Any]]:
        return self.working.database.query(
            "SELECT * FROM messages WHERE session = ? AND id > ? ORDER BY id",
            [session, after if after is not None else -1],
        )

    def context(self, session: str) -> SessionContext:
        """The running summary and the repaired messages it does not cover, the older of
        them masked (`render_history`)."""
        latest = self.latest(session)
        rows = self._verbatim_rows(session, latest.last_message_id if latest else None)
        rendered = render_history(_repaired(session, rows, with_id=False), self.policy)
        return SessionContext(
            summary=latest.text if latest else None,
            messages=rendered.messages,
            summary_id=latest.id if latest else None,
            last_message_id=latest.last_message_id if latest else None,
            elided_results=rendered.elided_results,
            collapsed_turns=rendered.collapsed_turns,
        )

    # -- compression ----------------------------------------------------------------------

    def _session_lock(self, session: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(session, threading.Lock())

    def maybe_compress(self, session: str) -> CompressionResult | None:
        """Fold the older turns if the verbatim part is over a threshold.

        Returns None when nothing needed (or could be) folded; a result with
        `failed=True` when the summariser failed, in which case nothing was stored.
        """
        if not self.policy.enabled:
            return None
        with self._session_lock(session):
            result, folded = self._compress(session)
        if result is not None and not result.failed and self.on_folded is not None:
            try:
                self.on_folded(session, folded)
            except Exception as exc:  # noqa: BLE001 - the summary is stored; extraction may retry
                log.warning("session %s: on_folded callback failed: %r", session, exc)
                result.callback_error = f"{type(exc).__name__}: {exc}"
        return result

    def _compress(self, session: str) -> tuple[CompressionResult | None, list[Message]]:
        policy = self.policy
        previous = self.latest(session)
        rows = self._verbatim_rows(session, previous.last_message_id if previous else None)
        turns = split_turns(split_units(rows))

        def sent_tokens(part: Sequence[list[Unit]]) -> int:
            """Tokens of these turns as the model would be sent them (masked)."""
            repaired = _repaired(
                session, [row for turn in part for row in _rows(turn)], with_id=False
            )
            return estimate_message_tokens(render_history(repaired, policy).messages)

        user_turns = [i for i, turn in enumerate(turns) if _is_user_turn(turn)]
        verbatim_tokens = sent_tokens(turns)
        over_turns = len(user_turns) > policy.compress_after_turns
        over_tokens = verbatim_tokens > policy.token_budget
        if not user_turns or not (over_turns or over_tokens):
            return None, []

        keep = min(policy.keep_turns, len(user_turns))
        while keep > 1 and sent_tokens(turns[user_turns[-keep] :]) > policy.token_budget:
            keep -= 1  # the budget wins over keep_turns, but the latest turn always stays
        cut = user_turns[-keep]
        if cut == 0:
            return None, []

        folded_rows = [row for turn in turns[:cut] for row in _rows(turn)]
        kept_rows = [row for turn in turns[cut:] for row in _rows(turn)]
        folded_ids = [row["id"] for row in folded_rows]
        folded = _repaired(session, folded_rows, with_id=True)
        summary_tokens = (
            estimate_message_tokens([summary_message(previous.text)]) if previous else 0
        )
        result = CompressionResult(
            session=session,
            summary=None,
            folded_message_ids=folded_ids,
            kept_messages=len(kept_rows),
            kept_turns=keep,
            tokens_before=summary_tokens + verbatim_tokens,
            tokens_after=summary_tokens + verbatim_tokens,
            trigger="turns" if over_turns else "tokens",
        )

        try:
            text = self.summarise(previous.text if previous else None, _without_ids(folded))
            if not isinstance(text, str) or not text.strip():
                raise SummariserError(f"the summariser returned no text ({text!r})")
        except Exception as exc:  # noqa: BLE001 - any summariser failure keeps the history
            result.failed = True
            result.error = f"{type(exc).__name__}: {exc}"
            log.warning(
                "session %s: summariser %s failed, history kept verbatim: %s",
                session,
                self.summariser_name,
                result.error,
            )
            return result, []

        text = text.strip()
        if estimate_tokens(text) > policy.summary_max_tokens:
            text, result.shortened = self._bounded(session, text)
        if self.redactor is not None:
            text = self.redactor.text(text)
        covers = sorted({*(previous.covers_message_ids if previous else []), *folded_ids})
        last_id = max(folded_ids)
        with self.database.lock:
            current = self.latest(session)
            if (current.id if current else None) != (previous.id if previous else None):
                result.failed = True
                result.error = "another compression of this session was stored meanwhile"
                log.warning("session %s: %s; this one is discarded", session, result.error)
                return result, []
            summary_id = self.database.write(
                "INSERT INTO summaries (session, text, covers_message_ids, last_message_id, "
                "created_at, tokens, summariser) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    session,
                    text,
                    json.dumps(covers),
                    last_id,
                    time.time(),
                    estimate_tokens(text),
                    self.summariser_name,
                ),
            )
        kept = render_history(_repaired(session, kept_rows, with_id=False), policy).messages
        result.summary = text
        result.summary_id = summary_id
        result.covers_message_ids = covers
        result.tokens_after = estimate_message_tokens([summary_message(text), *kept])
        return result, folded

    def _bounded(self, session: str, text: str) -> tuple[str, Literal["rewritten", "trimmed"]]:
        """Keep the running summary under its cap, so that it cannot grow with the
        session: the summariser shortens it; if that fails or is still too long, its
        oldest lines are cut."""
        cap = self.policy.summary_max_tokens
        if self.shrink is None:
            return trim_summary(text, cap), "trimmed"
        try:
            shorter = (self.shrink(text, cap) or "").strip()
        except Exception as exc:  # noqa: BLE001 - a failed shortening falls back to a cut
            log.warning("session %s: shortening the summary failed: %r", session, exc)
            shorter = ""
        if shorter and estimate_tokens(shorter) <= cap:
            return shorter, "rewritten"
        log.warning(
            "session %s: the summary is still over %d tokens after shortening; cut",
            session,
            cap,
        )
        return trim_summary(shorter or text, cap), "trimmed"


def _rows(turn: Iterable[Unit]) -> list[dict[str, Any]]:
    return [row for unit in turn for row in unit.rows]


# -- the offline summariser ---------------------------------------------------------------

USER_CHARS = 160
ANSWER_CHARS = 200
TOOL_CHARS = 160
SUMMARY_CHARS = 2000
_RESULT_KEYS = ("value", "result", "answer", "total", "count")
_SPACE = re.compile(r"\s+")
_LATIN = re.compile(r"[A-Za-z0-9]")


def shorten(text: str, limit: int) -> str:
    """Collapse whitespace and cut to `limit` characters with an ellipsis.

    Chinese has no spaces between words, so the cut is by character; only a cut inside
    a Latin word backs off to the previous space (when one is near).
    """
    flat = _SPACE.sub(" ", unicodedata.normalize("NFC", text or "")).strip()
    if len(flat) <= limit:
        return flat
    cut = max(limit - 1, 1)
    head = flat[:cut]
    if _LATIN.match(flat[cut - 1]) and _LATIN.match(flat[cut]):
        space = head.rfind(" ")
        if space >= cut * 3 // 4:
            head = head[:space]
    return head.rstrip() + "…"


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return shorten(value, 60)
    return None


def _call_names(messages: Iterable[Message]) -> dict[str, tuple[str, dict[str, Any]]]:
    names: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except (TypeError, ValueError):
                arguments = {}
            names[call.get("id")] = (
                function.get("name") or "tool",
                arguments if isinstance(arguments, dict) else {},
            )
    return names


def _tool_line(name: str, arguments: Mapping[str, Any], content: str | None) -> str:
    """`name: key values` - the scalars a later turn may need, never the raw JSON."""
    try:
        data = json.loads(content or "")
    except ValueError:
        return shorten(f"{name}: {content or ''}", TOOL_CHARS)
    if isinstance(data, dict) and "error" in data:
        detail = _scalar(data.get("detail"))
        return shorten(
            f"{name}: error {data['error']}" + (f" ({detail})" if detail else ""), TOOL_CHARS
        )
    if isinstance(data, list):
        return f"{name}: {len(data)} items"
    if not isinstance(data, dict):
        return shorten(f"{name}: {_scalar(data) or content}", TOOL_CHARS)
    scalars = {
        key: text
        for key, value in data.items()
        if key != "truncated" and (text := _scalar(value)) is not None
    }
    result_key = next((key for key in _RESULT_KEYS if key in scalars), None)
    if result_key is not None:
        inputs = [text for key, text in scalars.items() if key != result_key]
        if not inputs:
            inputs = [text for value in arguments.values() if (text := _scalar(value))]
        left = ", ".join(inputs)
        return shorten(
            f"{name}: {left} = {scalars[result_key]}" if left else f"{name}: {scalars[result_key]}",
            TOOL_CHARS,
        )
    parts = [f"{key}={text}" for key, text in scalars.items()]
    parts += [
        f"{key}: {len(value)} items" for key, value in data.items() if isinstance(value, list)
    ]
    return shorten(f"{name}: " + ", ".join(parts), TOOL_CHARS)


def _summary_lines(messages: Sequence[Message]) -> list[str]:
    calls = _call_names(messages)
    lines: list[str] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content") or ""
        if role == "user" and content.strip():
            lines.append("- user: " + shorten(content, USER_CHARS))
        elif role == "assistant" and not message.get("tool_calls") and content.strip():
            lines.append("- assistant: " + shorten(content, ANSWER_CHARS))
        elif role == "tool":
            name, arguments = calls.get(message.get("tool_call_id"), ("tool", {}))
            lines.append("- " + _tool_line(name, arguments, message.get("content")))
    return lines


def extractive_summary(
    previous: str | None, messages: list[Message], *, max_chars: int = SUMMARY_CHARS
) -> str:
    """The offline summariser: deterministic, no model.

    Keeps each user request, each final answer and the key values of tool results,
    appended to the previous summary; the oldest lines go first when over `max_chars`.
    """
    lines = [line for line in (previous or "").splitlines() if line.strip()]
    if lines and lines[0].strip() == SUMMARY_HEADER:
        lines = lines[1:]
    lines += _summary_lines(messages)
    size = len(SUMMARY_HEADER) + sum(len(line) + 1 for line in lines)
    while lines and size > max_chars and len(lines) > 1:
        size -= len(lines.pop(0)) + 1
    if lines and size > max_chars:
        lines[0] = shorten(lines[0], max(max_chars - len(SUMMARY_HEADER) - 1, 1))
    return "\n".join([SUMMARY_HEADER, *lines])
