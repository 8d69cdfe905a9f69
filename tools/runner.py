"""Turn the model's tool calls into results: parse, repair, validate, run, cache, cut.

Everything that can go wrong with one call becomes a structured error result for the
model (SPEC L4-L6); nothing here raises into the loop. Bounds that span the turn
(how many calls, identical calls, failure streaks) are the loop's business: it marks a
prepared call as refused before `run` sees it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import queue
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from memory.jsontext import dumps
from tools.arguments import check_value, strict_loads
from tools.base import Tool, ToolContext, ToolError
from tools.confirm import PendingActions, pending_payload
from tools.pool import Job, WorkerPool
from tools.registry import ToolRegistry
from tools.truncate import fit_result, to_json
from tools.writegate import IDLE, WriteGate, gated

log = logging.getLogger(__name__)

MAX_ARGUMENT_CHARS = 100_000
PENDING = "pending_confirmation"
QUEUED_POLL_S = 0.05
WRITE_FINISH_S = 120.0  # how long a write already under way at its timeout is waited for


@dataclass
class PreparedCall:
    """One tool call after parsing and validation, before it runs."""

    call_id: str
    name: str
    arguments_raw: str
    tool: Tool | None = None
    args: BaseModel | None = None
    key: str = ""
    repaired: bool = False
    error: ToolError | None = None
    idempotency_key: str = ""
    arguments: dict[str, Any] | None = None  # the validated arguments, as JSON values

    @property
    def has_effects(self) -> bool:
        """Whether running it may change something outside the conversation."""
        return self.tool is not None and not self.tool.read_only


@dataclass
class CallOutcome:
    """What one call produced: the full result for the trace, the cut text for the model."""

    call_id: str
    name: str
    version: str | None
    arguments_raw: str
    arguments: dict[str, Any] | None
    status: str
    result: Any
    content: str
    truncated: bool = False
    repaired: bool = False
    cached: bool = False
    executed: bool = False
    duration_ms: float = 0.0
    read_only: bool = True
    dangerous: bool = False
    failure_detail: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """A pending confirmation is not a failure: nothing went wrong, nothing ran yet."""
        return self.status in ("ok", PENDING)


def _error_text(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        location = ".".join(str(part) for part in item["loc"]) or "arguments"
        parts.append(f"{location}: {item['msg']}")
    return "; ".join(parts)


def _as_payload(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return value
    return {"result": value}


class ToolRunner:
    def __init__(
        self,
        registry: ToolRegistry,
        *,
        result_budget: int = 4000,
        default_timeout_s: float = 20.0,
        workers: int = 4,
        cache_ttl_s: float = 600.0,
        pending: PendingActions | None = None,
        redact: Callable[[Any], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sequential_lock: threading.Lock | None = None,
    ) -> None:
        """`sequential_lock` is shared by runners over the same tools (the loop's and the
        one serving MCP clients), so sequential tools never overlap across them."""
        self.registry = registry
        self.pending = pending
        self.redact = redact
        self.result_budget = result_budget
        self.default_timeout_s = default_timeout_s
        self.cache_ttl_s = cache_ttl_s
        self._clock = clock
        self._pool = WorkerPool(workers)
        self._sequential = sequential_lock or threading.Lock()
        self._memo_lock = threading.Lock()
        self._cache: dict[str, tuple[float, Any]] = {}
        self._writes: dict[str, tuple[float, Any]] = {}

    # -- preparation -------------------------------------------------------------------

    def prepare(self, call_id: str, name: str, arguments: str) -> PreparedCall:
        """Never raises: whatever the model sent becomes a call or a call's error."""
        try:
            return self._prepare(call_id, name, arguments)
        except (RecursionError, ValueError, UnicodeError) as exc:  # a last line, not a path
            call = PreparedCall(call_id=call_id, name=name, arguments_raw=arguments or "")
            call.error = ToolError("INVALID_ARGUMENTS", f"unreadable arguments: {exc}")
            call.key = f"{name}:{len(call.arguments_raw)}"
            return call

    def _prepare(self, call_id: str, name: str, arguments: str) -> PreparedCall:
        call = PreparedCall(call_id=call_id, name=name, arguments_raw=arguments or "")
        call.tool = self.registry.get(name)
        if call.tool is None:
            call.error = ToolError(
                "UNKNOWN_TOOL",
                f"there is no tool named {name!r}",
                available_tools=self.registry.names(),
            )
            call.key = f"{name}:{call.arguments_raw.strip()}"
            return call
        parsed = self._parse(call)
        if parsed is None:
            call.key = f"{name}:{call.arguments_raw.strip()}"
            return call
        try:
            call.args = call.tool.args_model.model_validate(parsed)
            call.arguments = call.args.model_dump(mode="json")
        except ValidationError as exc:
            call.error = ToolError(
                "INVALID_ARGUMENTS",
                _error_text(exc),
                schema=call.tool.parameters_schema,
            )
            call.key = f"{name}:{to_json(parsed)}"
            return call
        call.key = f"{name}:{dumps(call.arguments, sort_keys=True)}"
        return call

    def _parse(self, call: PreparedCall) -> dict[str, Any] | None:
        raw = call.arguments_raw.strip()
        assert call.tool is not None
        if len(raw) > MAX_ARGUMENT_CHARS:
            call.error = ToolError(
                "ARGUMENTS_TOO_LARGE",
                f"{len(raw)} characters of arguments; the limit is {MAX_ARGUMENT_CHARS}",
            )
            return None
        if not raw:
            return {}
        try:
            parsed = strict_loads(raw)
        except ToolError as exc:  # JSON a tool must never see: too deep, NaN, surrogates
            call.error = ToolError(exc.code, exc.detail, schema=call.tool.parameters_schema)
            return None
        except json.JSONDecodeError as exc:
            parsed = self._repair(raw)
            try:
                check_value(parsed)
            except ToolError as refused:
                call.error = ToolError(
                    refused.code, refused.detail, schema=call.tool.parameters_schema
                )
                return None
            if parsed is None:
                call.error = ToolError(
                    "INVALID_JSON",
                    f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}) "
                    "and could not be repaired; send one JSON object matching the schema",
                    schema=call.tool.parameters_schema,
                )
                return None
            call.repaired = True
        if not isinstance(parsed, dict):
            call.error = ToolError(
                "INVALID_ARGUMENTS",
                f"the arguments must be a JSON object, got {type(parsed).__name__}",
                schema=call.tool.parameters_schema,
            )
            return None
        return parsed

    @staticmethod
    def _repair(raw: str) -> dict[str, Any] | None:
        import json_repair

        try:
            repaired = json_repair.loads(raw)
        except Exception:  # noqa: BLE001 - json-repair gives up in many ways
            return None
        return repaired if isinstance(repaired, dict) and repaired else None

    # -- execution ---------------------------------------------------------------------

    def run(
        self,
        calls: Sequence[PreparedCall],
        context_for: Callable[[PreparedCall], ToolContext],
        deadline: float | None = None,
    ) -> list[CallOutcome]:
        """Run the calls concurrently (sequential tools one at a time, inline tools in this
        thread while the pool works); results in call order."""
        outcomes: list[CallOutcome | None] = [None] * len(calls)
        jobs: dict[int, Job] = {}
        gates: dict[int, WriteGate] = {}
        first_with_key: dict[str, int] = {}
        duplicates: dict[int, int] = {}
        finished: queue.SimpleQueue[Job] = queue.SimpleQueue()
        inline: list[tuple[int, PreparedCall, ToolContext]] = []
        for index, call in enumerate(calls):
            context = context_for(call)
            call.idempotency_key = context.idempotency_key
            early = self._settle_without_running(call) or self._hold_for_confirmation(call, context)
            if early is not None:
                outcomes[index] = early
                continue
            key = self._memo_key(call) if self._memo_for(call) is not None else None
            if key is not None and key in first_with_key:
                duplicates[index] = first_with_key[key]
                continue
            if key is not None:
                first_with_key[key] = index
            if call.tool is not None and call.tool.inline:
                inline.append((index, call, context))
                continue
            gate = gates[index] = WriteGate() if call.has_effects else None
            jobs[index] = self._pool.submit(
                lambda c=call, ctx=context, g=gate: self._invoke(c, ctx, g), finished
            )
        for index, call, context in inline:  # while the pool works on the others
            outcomes[index] = self._collect(call, *self._invoke(call, context))
        self._wait(calls, jobs, outcomes, deadline, finished, gates)
        for index, original in duplicates.items():
            outcomes[index] = self._replay(calls[index], outcomes[original])
        return [outcome for outcome in outcomes if outcome is not None]

    def _hold_for_confirmation(
        self, call: PreparedCall, context: ToolContext
    ) -> CallOutcome | None:
        """A dangerous call becomes a pending action; it runs only when the user confirms."""
        assert call.tool is not None and call.args is not None
        if not call.tool.dangerous or context.confirmed:
            return None
        if self.pending is None:
            payload = {
                "error": "CONFIRMATION_UNAVAILABLE",
                "detail": f"{call.name} needs the user's confirmation, which is not available here",
            }
            return self._outcome(call, "CONFIRMATION_UNAVAILABLE", payload)
        try:
            action = self.pending.create(call.tool, call.args, context)
        except ToolError as exc:  # the preview shows the call cannot work as asked
            return self._outcome(call, exc.code, exc.payload())
        return self._outcome(call, PENDING, pending_payload(action))

    def _replay(self, call: PreparedCall, original: CallOutcome | None) -> CallOutcome:
        """A repeat of a call in the same batch shares the first one's result, not its effect."""
        assert original is not None
        outcome = self._outcome(call, original.status, original.result)
        outcome.cached = True
        assert call.tool is not None
        if not call.tool.read_only:
            outcome.extra["idempotent_replay"] = True
        return outcome

    def _settle_without_running(self, call: PreparedCall) -> CallOutcome | None:
        if call.error is not None:
            return self._outcome(call, call.error.code, call.error.payload())
        assert call.tool is not None
        memo = self._memo_for(call)
        if memo is not None:
            with self._memo_lock:
                hit = memo.get(self._memo_key(call))
            if hit is not None and hit[0] > self._clock():
                outcome = self._outcome(call, "ok", hit[1])
                outcome.cached = True
                if not call.tool.read_only:
                    outcome.extra["idempotent_replay"] = True
                return outcome
        return None

    def _memo_for(self, call: PreparedCall) -> dict[str, tuple[float, Any]] | None:
        """Read-only results are cached by arguments; write results by idempotency key."""
        assert call.tool is not None
        if call.tool.read_only:
            return self._cache if call.tool.cacheable and self.cache_ttl_s > 0 else None
        return self._writes if call.idempotency_key else None

    @staticmethod
    def _memo_key(call: PreparedCall) -> str:
        assert call.tool is not None
        scope = "" if call.tool.read_only else call.idempotency_key
        return f"{call.tool.version}:{call.key}:{scope}"

    def idempotency_key(self, session: str, turn_id: str, call: PreparedCall) -> str:
        text = f"{session}\0{turn_id}\0{call.key}"
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        return digest[:24]

    def _invoke(
        self, call: PreparedCall, context: ToolContext, gate: WriteGate | None = None
    ) -> tuple[Any, float]:
        assert call.tool is not None and call.args is not None
        with gated(gate):
            if call.tool.sequential:
                with self._sequential:
                    return self._timed(call, context)
            return self._timed(call, context)

    @staticmethod
    def _timed(call: PreparedCall, context: ToolContext) -> tuple[Any, float]:
        """Run the tool; a raised exception is returned, not thrown, with the duration."""
        assert call.tool is not None and call.args is not None
        started = time.perf_counter()
        try:
            value: Any = call.tool.invoke(call.args, context)
        except Exception as exc:  # noqa: BLE001 - becomes a structured result in _collect
            value = exc
        return value, (time.perf_counter() - started) * 1000

    def _wait(
        self,
        calls: Sequence[PreparedCall],
        jobs: dict[int, Job],
        outcomes: list[CallOutcome | None],
        deadline: float | None,
        finished: queue.SimpleQueue[Job],
        gates: dict[int, WriteGate] | None = None,
    ) -> None:
        """Collect results as they finish; give up on calls past their own timeout. A
        call whose write is under way is not given up: its write completes and its real
        result is reported (a write never happens behind a timeout's back)."""
        gates = gates or {}
        index_of = {id(job): index for index, job in jobs.items()}
        pending = dict(jobs)
        while pending:
            limits = [self._limit(calls[i], job, deadline) for i, job in pending.items()]
            if any(job.started_at is None for job in pending.values()):
                limits.append(self._clock() + QUEUED_POLL_S)  # its own timeout starts soon
            soonest = min((limit for limit in limits if limit is not None), default=None)
            try:
                timeout = None if soonest is None else max(soonest - self._clock(), 0.0)
                job = finished.get(timeout=timeout)
            except queue.Empty:
                job = None
            if job is not None and id(job) in index_of:
                index = index_of[id(job)]
                if pending.pop(index, None) is not None:
                    outcomes[index] = self._collect(calls[index], *job.future.result())
            now = self._clock()
            for index, waiting in list(pending.items()):
                limit = self._limit(calls[index], waiting, deadline)
                if limit is not None and now >= limit and not waiting.future.done():
                    gate = gates.get(index)
                    state = gate.give_up() if gate is not None else IDLE
                    if state != IDLE:
                        outcomes[index] = self._finish_write(calls[index], waiting)
                    else:
                        self._pool.abandon(waiting)
                        outcomes[index] = self._timeout(
                            calls[index],
                            waiting,
                            deadline,
                            unwritten=gate is not None and gate.consulted,
                        )
                    del pending[index]

    def _limit(self, call: PreparedCall, job: Job, deadline: float | None) -> float | None:
        assert call.tool is not None
        limit = deadline
        if job.started_at is not None:
            own = job.started_at + (call.tool.timeout_s or self.default_timeout_s)
            limit = own if limit is None else min(limit, own)
        return limit

    def _collect(self, call: PreparedCall, value: Any, duration_ms: float) -> CallOutcome:
        assert call.tool is not None
        if isinstance(value, ToolError):
            return self._outcome(call, value.code, value.payload(), duration_ms)
        if isinstance(value, Exception):
            log.warning("tool %s raised %s", call.name, value, exc_info=value)
            payload = {"error": "TOOL_EXCEPTION", "detail": f"{type(value).__name__}: {value}"}
            outcome = self._outcome(call, "TOOL_EXCEPTION", payload, duration_ms)
            outcome.failure_detail = "".join(traceback.format_exception(value))
            return outcome
        if value is None or value == "":
            payload = {"error": "EMPTY_RESULT", "detail": f"{call.name} returned no data"}
            return self._outcome(call, "EMPTY_RESULT", payload, duration_ms)
        payload = _as_payload(value)
        memo = self._memo_for(call)
        if memo is not None:
            ttl = self.cache_ttl_s if call.tool.read_only else max(self.cache_ttl_s, 3600.0)
            with self._memo_lock:
                memo[self._memo_key(call)] = (self._clock() + ttl, payload)
        return self._outcome(call, "ok", payload, duration_ms)

    def _finish_write(self, call: PreparedCall, job: Job) -> CallOutcome:
        """The call's time is up but its write is under way: wait for it, and report what
        it did, saying it took longer than its timeout."""
        assert call.tool is not None
        seconds = call.tool.timeout_s or self.default_timeout_s
        try:
            value, duration_ms = job.future.result(timeout=WRITE_FINISH_S)
        except TimeoutError:
            self._pool.abandon(job)
            payload = {
                "error": "WRITE_IN_FLIGHT",
                "detail": f"{call.name} passed its {seconds:g} s timeout while writing and is "
                f"still writing after {WRITE_FINISH_S:g} s more; it may yet finish. Check "
                "before retrying (assistant vault undo lists what was written)",
            }
            return self._outcome(call, "WRITE_IN_FLIGHT", payload, WRITE_FINISH_S * 1000)
        outcome = self._collect(call, value, duration_ms)
        if isinstance(outcome.result, dict):
            late = {
                **outcome.result,
                "timeout_note": f"this took longer than the {seconds:g} s timeout, but its "
                "write had begun, so it was finished, not abandoned: the result above is "
                "what happened",
            }
            outcome = self._outcome(call, outcome.status, late, duration_ms)
        outcome.extra["finished_after_timeout"] = True
        return outcome

    def _timeout(
        self, call: PreparedCall, job: Job, deadline: float | None, *, unwritten: bool = False
    ) -> CallOutcome:
        """`unwritten`: the tool writes through its gate and had not begun, so nothing was
        (or ever will be) written; the result says so."""
        assert call.tool is not None
        if job.started_at is None:
            payload = {"error": "NOT_RUN", "detail": "the turn ran out of time before it started"}
            return self._outcome(call, "NOT_RUN", payload)
        seconds = call.tool.timeout_s or self.default_timeout_s
        own_limit = job.started_at + seconds
        if deadline is not None and deadline < own_limit:
            detail = f"{call.name} was stopped: the turn's time budget ran out"
        else:
            detail = f"{call.name} did not finish within {seconds:g} s"
        if call.tool.read_only:
            detail += "; nothing was changed"
        elif unwritten:
            detail += (
                "; it had not begun writing, so nothing was changed and nothing will be "
                "(retrying is safe)"
            )
        payload = {"error": "TIMEOUT", "detail": detail}
        return self._outcome(call, "TIMEOUT", payload, (self._clock() - job.started_at) * 1000)

    def _outcome(
        self, call: PreparedCall, status: str, payload: Any, duration_ms: float | None = None
    ) -> CallOutcome:
        """`duration_ms` is None for calls that never ran (refused, cached, invalid).
        What the model sees is redacted (S4); the full result stays for the trace."""
        shown = self.redact(payload) if self.redact is not None else payload
        content, truncated = fit_result(shown, self.result_budget)
        return CallOutcome(
            call_id=call.call_id,
            name=call.name,
            version=call.tool.version if call.tool else None,
            arguments_raw=call.arguments_raw,
            arguments=call.arguments,
            status=status,
            result=payload,
            content=content,
            truncated=truncated,
            repaired=call.repaired,
            executed=duration_ms is not None,
            duration_ms=duration_ms or 0.0,
            read_only=call.tool.read_only if call.tool else True,
            dangerous=call.tool.dangerous if call.tool else False,
        )
