"""A local stand-in for an OpenAI-compatible `POST /v1/chat/completions` endpoint (SPEC O3).

The real `openai` SDK talks to it over HTTP on 127.0.0.1, so tests exercise the SDK's own
request building, retries, timeouts and response parsing. The server plays back a queue
of scripted items, one per request received:

- `completion(...)`: a chat completion (text and/or tool calls, optional usage);
- `http_error(status, ...)`: an HTTP error with an OpenAI-style JSON error body;
- `delay(seconds, then)`: wait before answering `then` (for timeout tests);
- any callable taking the parsed request body and returning one of the above.

A request with `"stream": true` is answered as server-sent events in the chunk shape of
the server's `shape` (OpenAI's, Ollama's or vLLM's documented streaming output), with an
optional delay before the first chunk and a gap between chunks. A `Profile` makes the
server behave like a real one that gets things wrong (issue 12): it rejects `content:
null` with a 500, ignores tools without `tool_choice`, dies on large grammars, sends the
legacy `function_call` field or HTML-escaped arguments, refuses `stream_options` or a
`response_format` mode, or has a small context window.

Every request body is recorded (parsed JSON) in arrival order, and `most_in_flight` is
the most requests it was answering at once. When the script is empty
the server answers 500 with a message saying so (and `x-should-retry: false`, so the SDK
does not retry it), which keeps a test from hanging on a missing reply.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

CHAT_PATH = "/v1/chat/completions"
EMPTY_SCRIPT_MESSAGE = "fake_openai: the script has no reply left for this request"


@dataclass(frozen=True)
class FakeToolCall:
    name: str
    arguments: str
    id: str


@dataclass(frozen=True)
class Completion:
    content: str | None = None
    tool_calls: tuple[FakeToolCall, ...] = ()
    usage: dict[str, int] | None = None
    finish_reason: str | None = None
    reasoning: str | None = None  # sent as `reasoning_content` (DeepSeek, vLLM)


Shape = Literal["openai", "ollama", "vllm"]


@dataclass
class Profile:
    """How far this server strays from OpenAI's behaviour (all off: a faithful server)."""

    shape: Shape = "openai"
    first_chunk_delay_s: float = 0.0
    chunk_gap_s: float = 0.0
    piece_chars: int = 4  # content characters per streamed chunk
    reject_null_content: bool = False  # llama-cpp-python: HTTP 500, pydantic dump
    tools_need_tool_choice: bool = False  # tools are ignored unless tool_choice is sent
    max_schema_length: int | None = None  # a maxLength/maxItems above it kills the server
    legacy_function_call: bool = False  # the first tool call as `function_call`
    html_escaped_arguments: bool = False  # `&quot;` in the arguments
    reject_stream_options: bool = False  # 400 on `stream_options`
    json_modes: tuple[str, ...] = ("json_schema", "json_object")  # response_format accepted
    context_window: int | None = None  # 400 when the prompt + max_tokens exceed it
    empty_stream_for_tool_calls: bool = False  # llama-cpp-python: a 200 stream, no chunk


@dataclass(frozen=True)
class HTTPError:
    status: int
    message: str = "scripted error"
    error_type: str = "server_error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Delay:
    seconds: float
    then: Any


Item = Completion | HTTPError | Delay | Callable[[dict[str, Any]], Any]

_call_numbers = itertools.count(1)


def tool_call(name: str, arguments: str | dict[str, Any], id: str | None = None) -> FakeToolCall:
    """One tool call; a dict is JSON-encoded, a str is sent as is (malformed JSON included)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return FakeToolCall(name=name, arguments=raw, id=id or f"call_{next(_call_numbers)}")


def completion(
    content: str | None = None,
    tool_calls: list[FakeToolCall] | tuple[FakeToolCall, ...] = (),
    *,
    usage: dict[str, int] | None = None,
    finish_reason: str | None = None,
    reasoning: str | None = None,
) -> Completion:
    return Completion(content, tuple(tool_calls), usage, finish_reason, reasoning)


def calls(*specs: tuple[str, str | dict[str, Any]], ids: list[str] | None = None) -> Completion:
    """A completion that carries only tool calls: `calls(("calc_evaluate", {...}), ...)`."""
    made = [
        tool_call(name, arguments, ids[n] if ids else None)
        for n, (name, arguments) in enumerate(specs)
    ]
    return completion(None, made)


def http_error(
    status: int,
    message: str | None = None,
    *,
    error_type: str | None = None,
    retry_after: float | None = 0,
    headers: dict[str, str] | None = None,
) -> HTTPError:
    """An HTTP error. `retry_after=0` also sends `retry-after-ms: 1` so SDK retries are instant."""
    sent = dict(headers or {})
    if retry_after is not None:
        sent.setdefault("Retry-After", f"{retry_after:g}")
        sent.setdefault("retry-after-ms", str(max(int(retry_after * 1000), 1)))
    default_type = "rate_limit_exceeded" if status == 429 else "server_error"
    return HTTPError(
        status=status,
        message=message or f"scripted HTTP {status}",
        error_type=error_type or default_type,
        headers=sent,
    )


def delay(seconds: float, then: Any) -> Delay:
    return Delay(seconds, then)


def _completion_body(
    item: Completion, model: str, profile: Profile | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": item.content}
    if item.reasoning is not None:
        message["reasoning_content"] = item.reasoning
    if profile is not None and profile.legacy_function_call and item.tool_calls:
        first = item.tool_calls[0]
        message["function_call"] = {"name": first.name, "arguments": first.arguments}
    elif item.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in item.tool_calls
        ]
    finish = item.finish_reason or ("tool_calls" if item.tool_calls else "stop")
    usage = item.usage or {"prompt_tokens": 20, "completion_tokens": 5}
    usage = {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}
    return {
        "id": f"chatcmpl-{next(_call_numbers)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage,
    }


class FakeOpenAI:
    """The server object: `.base_url`, `.script(...)`, `.requests`, `.close()`."""

    def __init__(self, profile: Profile | None = None) -> None:
        self.profile = profile or Profile()
        self._lock = threading.Lock()
        self._script: deque[Item] = deque()
        self._requests: list[dict[str, Any]] = []
        self._stopping = threading.Event()
        self.unknown_paths: list[str] = []
        self.in_flight = 0  # requests being answered now
        self.most_in_flight = 0  # the most at once so far (one slot on llama.cpp servers)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-openai",
            daemon=True,
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *items: Item) -> FakeOpenAI:
        with self._lock:
            self._script.extend(items)
        return self

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def close(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # -- serving -----------------------------------------------------------------------

    def _next_item(self, body: dict[str, Any]) -> Item | None:
        with self._lock:
            self._requests.append(body)
            item = self._script.popleft() if self._script else None
        return item

    def _put_back(self, item: Item) -> None:
        with self._lock:
            self._script.appendleft(item)

    def _resolve(self, item: Any, body: dict[str, Any]) -> Any:
        while callable(item):
            item = item(body)
        return item

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle(self) -> None:
                # the client may hang up between requests (a timeout test)
                with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                    super().handle()

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests read `.requests`, not the access log."""

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self._finished()  # before the last bytes: the client may answer at once
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up (a timeout test)

            def _stream(self, item: Completion, body: dict[str, Any]) -> None:
                """Server-sent events, chunked, with the profile's delays."""
                profile = fake.profile
                chunks = stream_chunks(item, str(body.get("model", "fake")), profile, body)
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.flush()
                    pause = profile.first_chunk_delay_s
                    events = [*map(json.dumps, chunks), "[DONE]"]
                    if profile.empty_stream_for_tool_calls and item.tool_calls:
                        events = []  # "Automatic streaming tool choice is not supported"
                        fake._put_back(item)  # what an unstreamed retry would produce
                    for data in events:
                        if pause and fake._stopping.wait(pause):
                            self.close_connection = True
                            return
                        event = f"data: {data}\n\n".encode()
                        self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                        self.wfile.flush()
                        pause = profile.chunk_gap_s
                    self._finished()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            def _error(self, status: int, message: str, kind: str, headers=None) -> None:
                body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
                self._send(status, body, headers)

            def do_POST(self) -> None:
                with fake._lock:
                    fake.in_flight += 1
                    fake.most_in_flight = max(fake.most_in_flight, fake.in_flight)
                self._counted = True
                try:
                    self._answer()
                finally:
                    self._finished()

            def _finished(self) -> None:
                """This request is no longer in flight: counted off once, before the
                response's last bytes are written (a client that sends its next request
                the moment this one ends must not overlap it in `most_in_flight`)."""
                if getattr(self, "_counted", False):
                    self._counted = False
                    with fake._lock:
                        fake.in_flight -= 1

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path.split("?", 1)[0] != CHAT_PATH:
                    fake.unknown_paths.append(self.path)
                    self._error(404, f"fake_openai serves only {CHAT_PATH}", "not_found")
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._error(400, "fake_openai: the request body is not JSON", "bad_request")
                    return
                item = fake._resolve(fake._next_item(body), body)
                while isinstance(item, Delay):
                    if fake._stopping.wait(item.seconds):
                        self.close_connection = True
                        return
                    item = fake._resolve(item.then, body)
                if item is None:
                    self._error(
                        500, EMPTY_SCRIPT_MESSAGE, "server_error", {"x-should-retry": "false"}
                    )
                elif isinstance(item, HTTPError):
                    self._error(item.status, item.message, item.error_type, item.headers)
                elif isinstance(item, Completion):
                    refusal = _refusal(fake.profile, body)
                    if refusal == "die":
                        self.close_connection = True  # the server process is gone
                        return
                    if refusal is not None:
                        fake._put_back(item)  # a refusal does not use up the scripted reply
                        self._error(*refusal)
                        return
                    item = _as_served(fake.profile, item, body)
                    if body.get("stream"):
                        self._stream(item, body)
                    else:
                        model = str(body.get("model", "fake"))
                        self._send(200, _completion_body(item, model, fake.profile))
                else:
                    self._error(500, f"fake_openai: bad script item {item!r}", "server_error")

        return Handler


# -- compatibility profiles ----------------------------------------------------------------

LLAMA_CPP_NULL_CONTENT = (
    "1 validation error for CreateChatCompletionRequest\nmessages.{index}."
    "ChatCompletionRequestAssistantMessage.content\n  Input should be a valid string "
    "[type=string_type, input_value=None, input_type=NoneType]"
)


def _schema_limits(value: Any) -> list[int]:
    found: list[int] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("maxLength", "maxItems") and isinstance(item, int):
                found.append(item)
            found.extend(_schema_limits(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_schema_limits(item))
    return found


def _prompt_tokens(body: dict[str, Any]) -> int:
    text = json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))
    return len(text) // 4


def _refusal(profile: Profile, body: dict[str, Any]) -> tuple[int, str, str] | str | None:
    """What a misbehaving real server does to this request: an error, "die", or None."""
    if profile.reject_null_content:
        for index, message in enumerate(body.get("messages", [])):
            if message.get("content", "") is None:
                return 500, LLAMA_CPP_NULL_CONTENT.format(index=index), "server_error"
    if profile.max_schema_length is not None and any(
        limit > profile.max_schema_length for limit in _schema_limits(body.get("tools", []))
    ):
        return "die"
    if profile.reject_stream_options and "stream_options" in body:
        return 400, "stream_options: Extra inputs are not permitted", "invalid_request_error"
    response_format = body.get("response_format") or {}
    kind = response_format.get("type")
    if kind in ("json_schema", "json_object") and kind not in profile.json_modes:
        return 400, f"response_format type {kind!r} is not supported", "invalid_request_error"
    if profile.context_window is not None:
        wanted = _prompt_tokens(body) + int(body.get("max_tokens") or 0)
        if wanted > profile.context_window:
            return (
                400,
                f"Requested tokens ({wanted}) exceed context window of {profile.context_window}",
                "invalid_request_error",
            )
    return None


def _as_served(profile: Profile, item: Completion, body: dict[str, Any]) -> Completion:
    """The scripted reply as this server would actually produce it."""
    calls = item.tool_calls
    if calls and profile.tools_need_tool_choice and "tool_choice" not in body:
        # the tools never reached the prompt: the model just talks
        return Completion("I would need a tool for that.", (), item.usage, "stop", item.reasoning)
    if calls and profile.html_escaped_arguments:
        calls = tuple(FakeToolCall(c.name, c.arguments.replace('"', "&quot;"), c.id) for c in calls)
    return Completion(item.content, calls, item.usage, item.finish_reason, item.reasoning)


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(size, 1))]


def stream_chunks(
    item: Completion, model: str, profile: Profile, body: dict[str, Any]
) -> list[dict[str, Any]]:
    """The chat.completion.chunk objects a server of `profile.shape` streams for `item`."""
    shape, size = profile.shape, profile.piece_chars
    base = {
        "id": f"chatcmpl-{next(_call_numbers)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    if shape == "ollama":
        base["system_fingerprint"] = "fp_ollama"
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        made = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if shape == "openai":
            made["choices"][0]["logprobs"] = None
            if include_usage:
                made["usage"] = None
        return made

    role = {"role": "assistant"}
    out: list[dict[str, Any]] = []
    if shape == "openai":
        out.append(chunk({**role, "content": "", "refusal": None}))
    elif shape == "vllm":
        out.append(chunk({**role, "content": ""}))
    for piece in _pieces(item.reasoning or "", size * 4):
        out.append(chunk({"reasoning_content": piece, "content": None}))
    for piece in _pieces(item.content or "", size):
        out.append(chunk({**role, "content": piece} if shape == "ollama" else {"content": piece}))
    if profile.legacy_function_call and item.tool_calls:
        first = item.tool_calls[0]
        out.append(chunk({"function_call": {"name": first.name, "arguments": ""}}))
        for piece in _pieces(first.arguments, 8):
            out.append(chunk({"function_call": {"arguments": piece}}))
    else:
        for index, call in enumerate(item.tool_calls):
            opening = {"index": index, "id": call.id, "type": "function"}
            if shape == "ollama":  # each call whole, in one chunk
                function = {"name": call.name, "arguments": call.arguments}
                out.append(
                    chunk(
                        {**role, "content": "", "tool_calls": [{**opening, "function": function}]}
                    )
                )
                continue
            function = (
                {"name": call.name} if shape == "vllm" else {"name": call.name, "arguments": ""}
            )
            out.append(chunk({"tool_calls": [{**opening, "function": function}]}))
            for piece in _pieces(call.arguments, 8):
                out.append(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                )
    finish = item.finish_reason or ("tool_calls" if item.tool_calls else "stop")
    if profile.legacy_function_call and item.tool_calls:
        finish = item.finish_reason or "function_call"
    if shape == "ollama" and finish == "tool_calls":
        finish = "stop"  # Ollama's OpenAI layer reports "stop" after tool calls
    last = (
        {**role, "content": ""}
        if shape == "ollama"
        else ({"content": ""} if shape == "vllm" else {})
    )
    out.append(chunk(last, finish))
    if include_usage:
        usage = item.usage or {"prompt_tokens": 20, "completion_tokens": 5}
        usage = {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}
        out.append({**base, "choices": [], "usage": usage})
    return out


def assert_paired(messages: list[dict[str, Any]]) -> None:
    """L2 on a message list: each assistant tool call is answered by exactly one `tool`
    message, right after its assistant message and in call order; no result is orphaned."""
    index = 0
    while index < len(messages):
        message = messages[index]
        assert message["role"] != "tool", f"tool result without a call at {index}: {message}"
        call_ids = [call["id"] for call in message.get("tool_calls") or ()]
        index += 1
        answered = []
        while index < len(messages) and messages[index]["role"] == "tool":
            answered.append(messages[index].get("tool_call_id"))
            index += 1
        assert answered == call_ids, f"calls {call_ids} answered by {answered}"
