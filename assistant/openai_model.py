"""`OpenAIChatModel`: any OpenAI-compatible chat-completions endpoint (SPEC O1, issue 12).

Replies are streamed (`stream=True`): the answer text reaches `on_delta` as it arrives,
tool-call fragments are assembled by index, usage comes from the final chunk where the
server sends it. Liveness is the gap between chunks (`[model] timeout_s`), not one
timeout for the whole answer; the caller's budget bounds the whole.

Errors are classified, never amplified: only what a retry can fix is retried (429,
502/503/504, a refused connection), with backoff that honours Retry-After, and only while
the caller's budget lasts. A timed-out generation is not re-sent (the server may still be
computing it); a rejected request (4xx, or a 500 whose body is a validation error) is
named in one line. What an endpoint turned out not to accept (`stream_options`,
`tool_choice`, a `response_format` mode, our stored tool messages) is remembered on this
object, so the next request goes straight to what works.
"""

from __future__ import annotations

import html
import json
import logging
import os
import random
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from assistant.config import ModelSettings
from assistant.errors import (
    ModelContextOverflow,
    ModelError,
    ModelRateLimited,
    ModelReplyError,
    ModelRequestError,
    ModelServerError,
    ModelTimeout,
    ModelUnavailable,
)
from assistant.model import Message, ModelReply, ToolCall, Usage
from assistant.reasoning import ThinkFilter, split_reasoning
from assistant.wire import clean_arguments, request_tokens_hint, wire_messages
from memory.tokens import estimate_message_tokens, estimate_tokens

log = logging.getLogger(__name__)

JsonMode = Literal["json_schema", "json_object", "text"]
JSON_MODES: tuple[JsonMode, ...] = ("json_schema", "json_object", "text")
RETRY_STATUSES = frozenset({429, 502, 503, 504})
_VALIDATION = re.compile(
    r"validation error|input should be|field required|extra inputs are not permitted|"
    r"value is not a valid|unprocessable|invalid request|is not valid under",
    re.IGNORECASE,
)
_OVERFLOW = re.compile(
    r"context[ _](length|window|size)|maximum context|too many tokens|exceeds? (the )?context|"
    r"prompt is too long|requested tokens .* exceed|context_length_exceeded",
    re.IGNORECASE,
)
MIN_REPLY_TOKENS = 64
_ENTITY = re.compile(r"&(?:#39|#34|quot|amp|lt|gt|apos);")


@dataclass
class EndpointCaps:
    """What this endpoint was found to accept; learnt from its refusals, kept on the
    model object (one per configured endpoint), never in module state, and in the data
    directory (`path`), so a one-shot `ask` does not pay for the same refusal again.
    Entries older than CAPS_MAX_AGE_S are learnt afresh (the server may have changed)."""

    stream: bool = True
    stream_tools: bool = True  # llama-cpp-python sends an empty 200 stream for a tool call
    stream_options: bool = True
    tool_choice: bool = True
    flatten_history: bool = False
    json_mode: JsonMode = "json_schema"
    developer_role: bool = True  # llama-cpp-python has no `developer` role (HTTP 500)
    tool_reasoning: bool = True  # DeepSeek wants a tool call's reasoning sent back
    learnt: list[str] = field(default_factory=list)
    path: Path | None = None
    key: str = ""

    def learn(self, what: str) -> None:
        self.learnt.append(what)
        log.warning("model endpoint: %s", what)
        if self.path is not None:
            self._save()

    @classmethod
    def load(cls, path: Path | None, key: str, *, stream: bool) -> EndpointCaps:
        caps = cls(stream=stream, path=path, key=key)
        if path is None:
            return caps
        try:
            entry = json.loads(path.read_text(encoding="utf-8")).get(key) or {}
        except (OSError, ValueError, AttributeError):
            return caps
        if time.time() - float(entry.get("at", 0)) > CAPS_MAX_AGE_S:
            return caps
        for name in _LEARNT:
            if name in entry and (name != "stream" or stream):
                setattr(caps, name, entry[name])
        return caps

    def _save(self) -> None:
        assert self.path is not None
        try:
            known = json.loads(self.path.read_text(encoding="utf-8"))
            known = known if isinstance(known, dict) else {}
        except (OSError, ValueError):
            known = {}
        known[self.key] = {name: getattr(self, name) for name in _LEARNT} | {"at": time.time()}
        partial = self.path.with_suffix(".tmp")
        try:
            partial.write_text(json.dumps(known, indent=1), encoding="utf-8")
            os.replace(partial, self.path)
        except OSError as exc:  # a read-only data directory: learnt for this process only
            log.info("cannot keep what the endpoint accepts in %s: %s", self.path, exc)


_LEARNT = (
    "stream",
    "stream_tools",
    "stream_options",
    "tool_choice",
    "flatten_history",
    "json_mode",
    "developer_role",
    "tool_reasoning",
)
CAPS_MAX_AGE_S = 7 * 24 * 3600


class OpenAIChatModel:
    def __init__(
        self, settings: ModelSettings, *, client: Any | None = None, caps_path: Path | None = None
    ) -> None:
        import openai

        self._openai = openai
        self.settings = settings
        self.name = settings.name
        self.remote = True  # see ChatModel: commit before each request
        self.endpoint = settings.base_url or "https://api.openai.com/v1"
        self.caps = EndpointCaps.load(
            caps_path, f"{self.endpoint} {self.name}", stream=settings.stream
        )
        self._client = client or openai.OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key or "not-needed",
            timeout=settings.timeout_s,
            max_retries=0,
        )

    # -- the ChatModel protocol -------------------------------------------------------------

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        *,
        temperature: float,
        timeout_s: float | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> ModelReply:
        return self._complete(messages, tools, temperature, timeout_s, on_delta, None)

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        *,
        name: str,
        temperature: float = 0.0,
        timeout_s: float | None = None,
    ) -> ModelReply:
        """A reply constrained to JSON: `response_format` json_schema where the server
        supports it, else json_object, else plain text (the caller repairs it). The
        mode that worked is remembered for this endpoint."""
        while True:
            mode = self.caps.json_mode
            response_format: dict[str, Any] | None = None
            if mode == "json_schema":
                response_format = {
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": schema, "strict": False},
                }
            elif mode == "json_object":
                response_format = {"type": "json_object"}
            try:
                return self._complete(messages, None, temperature, timeout_s, None, response_format)
            except ModelRequestError as exc:
                refused_payload = getattr(exc, "status", None) in (400, 422, 500)
                if mode == "text" or not refused_payload:
                    raise
                following = JSON_MODES[JSON_MODES.index(mode) + 1]
                self.caps.json_mode = following
                self.caps.learn(f"response_format {mode} refused ({exc}); using {following}")

    # -- one request, its retries and fallbacks ---------------------------------------------

    def _complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        temperature: float,
        timeout_s: float | None,
        on_delta: Callable[[str], None] | None,
        response_format: dict[str, Any] | None,
    ) -> ModelReply:
        budget = self.settings.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + budget
        attempt, flattened = 0, False
        while True:
            request = self._request(messages, tools, temperature, response_format, flattened)
            try:
                reply = self._send(request, messages, deadline, on_delta)
            except _EmptyStream as exc:
                if not request.get("tools") or not self.caps.stream_tools:
                    raise
                self.caps.stream_tools = False
                self.caps.learn(f"{exc}; tool requests are no longer streamed")
                continue
            except self._openai.OpenAIError as exc:
                error = self._translate(exc, attempt)
                if self._fell_back(error, request):
                    continue
                if (
                    type(error) is ModelRequestError
                    and getattr(exc, "status_code", None) in (400, 422, 500)
                    and not flattened
                    and not self.caps.flatten_history
                    and _has_tool_messages(messages)
                ):
                    log.warning(
                        "the endpoint rejected the history (%s); resending it as text", error
                    )
                    flattened = True
                    continue
                pause = self._retry_pause(exc, attempt)
                retryable = pause is not None and attempt < self.settings.max_retries
                if not retryable or time.monotonic() + pause >= deadline:
                    raise error from exc
                time.sleep(pause)
                attempt += 1
                continue
            if flattened:
                self.caps.learn("stored tool messages were refused; history is sent as text")
                self.caps.flatten_history = True
            if reply.reasoning:  # shown with -v only; the trace keeps it whole
                log.info("model reasoning: %s", one_line(reply.reasoning, 400))
            return reply

    def _request(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        temperature: float,
        response_format: dict[str, Any] | None,
        flattened: bool,
    ) -> dict[str, Any]:
        settings, caps = self.settings, self.caps
        request: dict[str, Any] = {
            "model": self.name,
            "messages": wire_messages(
                messages,
                "system"
                if settings.system_role == "developer" and not caps.developer_role
                else settings.system_role,
                flatten=flattened or caps.flatten_history or settings.tool_messages == "text",
                tool_reasoning=caps.tool_reasoning,
            ),
            "temperature": temperature,
            "max_tokens": self._max_tokens(messages, tools),
        }
        if tools:
            request["tools"] = list(tools)
            if caps.tool_choice:
                request["tool_choice"] = settings.tool_choice
            if settings.parallel_tool_calls is not None:
                request["parallel_tool_calls"] = settings.parallel_tool_calls
        if response_format is not None:
            request["response_format"] = response_format
        if settings.extra_body:
            request["extra_body"] = dict(settings.extra_body)
        if caps.stream and (caps.stream_tools or not tools):
            request["stream"] = True
            if caps.stream_options:
                request["stream_options"] = {"include_usage": True}
        return request

    def _max_tokens(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None
    ) -> int:
        """`[model] max_tokens`, and under `context_window` when one is set: a request
        that cannot fit is not sent (the loop compresses and tries again)."""
        wanted, window = self.settings.max_tokens, self.settings.context_window
        if window is None:
            return wanted
        prompt = estimate_tokens(request_tokens_hint(messages, tools)) + 4 * len(messages)
        room = window - prompt
        if room < min(MIN_REPLY_TOKENS * 4, wanted):
            raise ModelContextOverflow(
                f"the request (about {prompt} tokens) does not fit the context window of "
                f"{window} tokens with room for an answer ([model] context_window)"
            )
        return min(wanted, room)

    def _fell_back(self, error: ModelError, request: dict[str, Any]) -> bool:
        """A refused optional field is dropped for good and the request sent again."""
        if type(error) is not ModelRequestError:
            return False
        text, caps = str(error).lower(), self.caps
        if "stream_options" in request and "stream_options" in text:
            caps.stream_options = False
            caps.learn(f"stream_options refused ({error}); not sent again")
            return True
        if request.get("stream") and re.search(r"\bstream\b", text):
            caps.stream = False
            caps.learn(f"streaming refused ({error}); asking for whole replies")
            return True
        sent = request.get("messages", ())
        if "reasoning_content" in text and any("reasoning_content" in m for m in sent):
            caps.tool_reasoning = False
            caps.learn(f"reasoning_content refused ({error}); not sent back again")
            return True
        sent_roles = {m.get("role") for m in sent}
        if "developer" in sent_roles:  # servers without the role refuse the whole request
            caps.developer_role = False
            caps.learn(f"the developer role was refused ({error}); using system")
            return True
        if "tool_choice" in request and re.search(r"tool[_ ]choice", text):
            caps.tool_choice = False
            caps.learn(f"tool_choice refused ({error}); not sent again")
            return True
        return False

    def _send(
        self,
        request: dict[str, Any],
        messages: Sequence[Message],
        deadline: float,
        on_delta: Callable[[str], None] | None,
    ) -> ModelReply:
        left = max(deadline - time.monotonic(), 0.05)
        gap = min(self.settings.timeout_s, left)
        # The first byte has its own bound: a CPU server computes a whole unstreamed tool
        # reply (or a stream's first chunk) before sending anything. Chunks after it are
        # held to the gap (`_hold_to_gap`).
        first = min(self.settings.first_byte_timeout_s or left, left)
        timeout = self._openai.Timeout(first, connect=min(first, 10.0))
        try:
            if not request.get("stream"):
                try:
                    completion = self._client.chat.completions.create(**request, timeout=timeout)
                except ValueError as exc:  # a 200 whose body is cut short or is not JSON
                    raise ModelReplyError(
                        f"{self._where} gave an unusable reply: the body is not valid JSON ({exc})"
                    ) from exc
                return self._whole_reply(completion, messages, on_delta)
            stream = self._client.chat.completions.create(**request, timeout=timeout)
        except self._openai.APITimeoutError as exc:  # never re-sent: it may still compute it
            raise ModelTimeout(
                f"{self._where} sent no first byte within {first:.3g} s (not re-sent: it may "
                "still be working on it; [model] first_byte_timeout_s)"
            ) from exc
        response = getattr(stream, "response", None)
        _hold_to_gap(response, gap)
        kind = str(getattr(response, "headers", {}).get("content-type", "text/event-stream"))
        if "event-stream" not in kind:  # the server ignored stream=True
            return self._unstreamed(stream, response, messages, on_delta)
        assembler = StreamAssembler(on_delta)
        try:
            for chunk in stream:
                assembler.add(chunk)
                if time.monotonic() > deadline and not assembler.finished:
                    raise ModelTimeout(
                        f"{self._where} was still answering when the turn's time ran out"
                    )
        except (self._openai.APITimeoutError, *_transport_errors("TimeoutException")) as exc:
            raise ModelTimeout(
                f"{self._where} sent nothing for {gap:.3g} s"
                + (" in the middle of its answer" if assembler.started else "")
                + " (not re-sent: it may still be working on it)"
            ) from exc
        except (self._openai.APIConnectionError, *_transport_errors("TransportError")) as exc:
            raise ModelServerError(
                f"{self._where} closed the connection in the middle of its answer "
                f"({one_line(str(exc.__cause__ or exc), 120)})"
            ) from exc
        except ValueError as exc:
            raise ModelReplyError(f"{self._where} sent a chunk that is not JSON ({exc})") from exc
        finally:
            stream.close()
        if not assembler.started:
            raise _EmptyStream(f"{self._where} ended its stream without sending a reply")
        return assembler.reply(messages)

    def _unstreamed(
        self,
        stream: Any,
        response: Any,
        messages: Sequence[Message],
        on_delta: Callable[[str], None] | None,
    ) -> ModelReply:
        """A whole JSON completion sent back to a streaming request."""
        from openai.types.chat import ChatCompletion

        try:
            body = json.loads(response.read())
            completion = ChatCompletion.model_validate(body)
        except ValueError as exc:
            raise ModelReplyError(
                f"{self._where} gave an unusable reply: the body is not a chat completion "
                f"({one_line(str(exc), 120)})"
            ) from exc
        finally:
            stream.close()
        return self._whole_reply(completion, messages, on_delta)

    @property
    def _where(self) -> str:
        return f"{self.endpoint} (model {self.name})"

    def _retry_pause(self, exc: Exception, attempt: int) -> float | None:
        """Seconds to wait before retrying, or None when retrying cannot help."""
        openai = self._openai
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        if isinstance(exc, openai.APITimeoutError):
            return None  # the server may still be computing it: never re-send
        if isinstance(exc, openai.APIConnectionError):
            if not _refused(exc):
                return None
        elif not (isinstance(exc, openai.APIStatusError) and exc.status_code in RETRY_STATUSES):
            return None
        if str(headers.get("x-should-retry", "")).lower() == "false":
            return None
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            try:
                return min(max(float(headers[name]) * scale, 0.0), 60.0)
            except (KeyError, TypeError, ValueError):
                continue
        return min(0.5 * 2**attempt, 8.0) * (0.75 + random.random() / 2)

    def _translate(self, exc: Exception, retries: int) -> ModelError:
        openai, where = self._openai, self._where
        if isinstance(exc, openai.APITimeoutError):
            return ModelTimeout(
                f"{where} did not answer within {self.settings.timeout_s:g} s (not re-sent: "
                "it may still be working on it)"
            )
        if isinstance(exc, openai.APIConnectionError):
            return ModelUnavailable(f"cannot reach {where}: {one_line(str(exc.__cause__ or exc))}")
        if isinstance(exc, openai.RateLimitError):
            return ModelRateLimited(
                f"{where} kept answering 429 (rate limited); gave up after {retries} retries"
            )
        if isinstance(exc, openai.APIStatusError):
            detail = _error_message(exc)
            log.info(
                "%s answered HTTP %s: %s", where, exc.status_code, _error_message(exc, full=True)
            )
            status = exc.status_code
            if _OVERFLOW.search(detail) or _error_code(exc) == "context_length_exceeded":
                return ModelContextOverflow(
                    f"{where}: the request is too long for the model: {detail}"
                )
            if status < 500 or (status == 500 and _VALIDATION.search(detail)):
                rejected = ModelRequestError(
                    f"{where} rejected the request (HTTP {status}): {detail}"
                )
                rejected.status = status
                return rejected
            tried = f" after {retries} retries" if status in RETRY_STATUSES else ""
            return ModelServerError(f"{where} answered HTTP {status}{tried}: {detail}")
        if isinstance(exc, openai.APIError):
            return ModelReplyError(f"{where} reported an error mid-answer: {one_line(str(exc))}")
        return ModelReplyError(f"{where} gave an unusable reply: {one_line(str(exc))}")

    def _whole_reply(
        self, completion: Any, messages: Sequence[Message], on_delta: Callable[[str], None] | None
    ) -> ModelReply:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise ModelReplyError(f"{self.endpoint} returned a completion without choices")
        message = choices[0].message
        raw_calls = [
            (call.id, call.function.name, call.function.arguments)
            for call in message.tool_calls or ()
            if getattr(call, "function", None) is not None
        ]
        legacy = getattr(message, "function_call", None)
        if legacy is not None and not raw_calls:
            raw_calls.append((None, legacy.name, legacy.arguments))
        answer, inline_reasoning = split_reasoning(message.content)
        reasoning = _join(_reasoning_field(message), inline_reasoning)
        if on_delta is not None and answer:
            on_delta(answer)
        usage = getattr(completion, "usage", None)
        return _reply(answer, reasoning, raw_calls, choices[0].finish_reason, usage, messages)


class _EmptyStream(ModelReplyError):
    """A 200 stream with no chunk at all (llama-cpp-python when the model calls a tool
    while streaming: "Automatic streaming tool choice is not supported")."""


class StreamAssembler:
    """Builds one reply from streamed chunks, whatever shape the server sends them in
    (OpenAI: id+name first, then argument fragments; Ollama: each call whole in one
    chunk; vLLM: usage-only final chunk with `choices` empty or null; legacy
    `function_call` deltas; parallel calls all at index 0 told apart by their id)."""

    def __init__(self, on_delta: Callable[[str], None] | None) -> None:
        self.on_delta = on_delta
        self.think = ThinkFilter()
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, list[Any]] = {}
        self._by_index: dict[int, int] = {}
        self.legacy: list[Any] | None = None
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.started = False

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def add(self, chunk: Any) -> None:
        self.started = True
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0) not in (0, None):
                continue
            delta = getattr(choice, "delta", None)
            if delta is not None:
                self._delta(delta)
            if getattr(choice, "finish_reason", None):
                self.finish_reason = choice.finish_reason

    def _delta(self, delta: Any) -> None:
        reasoning = _reasoning_field(delta)
        if reasoning:
            self.reasoning.append(reasoning)
        text = getattr(delta, "content", None)
        if text:
            self._show(self.think.feed(text))
        for position, part in enumerate(getattr(delta, "tool_calls", None) or ()):
            self._tool_part(position, part)
        legacy = getattr(delta, "function_call", None)
        if legacy is not None:
            if self.legacy is None:
                self.legacy = [None, "", ""]
            if getattr(legacy, "name", None):
                self.legacy[1] = legacy.name
            self.legacy[2] += getattr(legacy, "arguments", None) or ""

    def _tool_part(self, position: int, part: Any) -> None:
        index = getattr(part, "index", None)
        index = position if index is None else index
        call_id = getattr(part, "id", None)
        slot = self._by_index.get(index)
        if slot is None or (call_id and self.calls[slot][0] and call_id != self.calls[slot][0]):
            slot = len(self.calls)
            self._by_index[index] = slot
            self.calls[slot] = [call_id, "", ""]
        entry = self.calls[slot]
        entry[0] = entry[0] or call_id
        function = getattr(part, "function", None)
        if function is not None:
            name = getattr(function, "name", None)
            if name and not entry[1]:
                entry[1] = name
            entry[2] += getattr(function, "arguments", None) or ""

    def _show(self, text: str) -> None:
        if text:
            self.content.append(text)
            if self.on_delta is not None:
                self.on_delta(text)

    def reply(self, messages: Sequence[Message]) -> ModelReply:
        self._show(self.think.flush())
        raw_calls = [tuple(entry) for entry in self.calls.values() if entry[1]]
        if self.legacy is not None and not raw_calls and self.legacy[1]:
            raw_calls.append(tuple(self.legacy))
        answer, stray = split_reasoning("".join(self.content))  # an unopened </think>
        reasoning = _join("".join(self.reasoning), "".join(self.think.reasoning), stray)
        return _reply(answer, reasoning, raw_calls, self.finish_reason, self.usage, messages)


def _reply(
    answer: str,
    reasoning: str,
    raw_calls: Sequence[tuple[Any, ...]],
    finish_reason: str | None,
    usage: Any,
    messages: Sequence[Message],
) -> ModelReply:
    if _ENTITY.search(answer):  # a template rendered with autoescape, echoed back
        answer = html.unescape(answer)
    calls = tuple(
        ToolCall(id=call_id or f"call_{index}", name=name, arguments=clean_arguments(arguments))
        for index, (call_id, name, arguments) in enumerate(raw_calls)
    )
    if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
        counted = Usage(usage.prompt_tokens, usage.completion_tokens or 0)
    else:
        produced = answer + json.dumps([c.arguments for c in calls], ensure_ascii=False)
        counted = Usage(
            estimate_message_tokens(messages), estimate_tokens(produced), estimated=True
        )
    return ModelReply(
        content=answer or None,
        tool_calls=calls,
        usage=counted,
        finish_reason=finish_reason,
        reasoning=reasoning or None,
    )


def _reasoning_field(part: Any) -> str:
    for name in ("reasoning_content", "reasoning"):
        value = getattr(part, name, None)
        if value is None:
            extra = getattr(part, "model_extra", None) or {}
            value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def _join(*parts: str) -> str:
    return "\n".join(part.strip() for part in parts if part and part.strip())


def _hold_to_gap(response: Any, gap: float) -> None:
    """From the response's head on, each read of the body waits at most `gap` seconds:
    httpx's transport reads the request's `timeout` extension when the body is first
    read, so setting it now makes later chunks keep the liveness bound while the head
    had the (longer) first-byte one."""
    timeouts = getattr(getattr(response, "request", None), "extensions", {}).get("timeout")
    if isinstance(timeouts, dict):
        timeouts["read"] = gap


def _has_tool_messages(messages: Sequence[Message]) -> bool:
    return any(m.get("role") == "tool" or m.get("tool_calls") for m in messages)


def _transport_errors(name: str) -> tuple[type[BaseException], ...]:
    """`name` (e.g. TimeoutException) of whichever HTTP library the SDK streams with:
    openai 1.x raises raw httpx errors mid-stream, later versions wrap httpx2's."""
    found = []
    for module_name in ("httpx", "httpx2"):
        module = sys.modules.get(module_name)
        kind = getattr(module, name, None) if module is not None else None
        if isinstance(kind, type) and issubclass(kind, BaseException):
            found.append(kind)
    return tuple(found)


def _refused(exc: Exception) -> bool:
    """A connection that was never made (refused, no route): no request reached the server."""
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, ConnectionRefusedError):
        return True
    return any(kind.__name__ == "ConnectError" for kind in type(cause).__mro__)


def one_line(text: str, limit: int = 240) -> str:
    """A server's (often multi-line, pydantic-dump) error text as one short line."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    joined = ": ".join(lines[:3]) + (" …" if len(lines) > 3 else "")
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def _error_code(exc: Any) -> str | None:
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    return str(error.get("code")) if isinstance(error, dict) and error.get("code") else None


def _error_message(exc: Any, *, full: bool = False) -> str:
    body = getattr(exc, "body", None)
    text = str(getattr(exc, "message", exc))
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            text = str(error["message"])
        elif isinstance(error, str):
            text = error
    return text if full else one_line(text)
