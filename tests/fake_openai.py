"""A local stand-in for an OpenAI-compatible `POST /v1/chat/completions` endpoint (SPEC O3).

The real `openai` SDK talks to it over HTTP on 127.0.0.1, so tests exercise the SDK's own
request building, retries, timeouts and response parsing. The server plays back a queue
of scripted items, one per request received:

- `completion(...)`: a chat completion (text and/or tool calls, optional usage);
- `http_error(status, ...)`: an HTTP error with an OpenAI-style JSON error body;
- `delay(seconds, then)`: wait before answering `then` (for timeout tests);
- any callable taking the parsed request body and returning one of the above.

Every request body is recorded (parsed JSON) in arrival order. When the script is empty
the server answers 500 with a message saying so (and `x-should-retry: false`, so the SDK
does not retry it), which keeps a test from hanging on a missing reply.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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
) -> Completion:
    return Completion(content, tuple(tool_calls), usage, finish_reason)


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


def _completion_body(item: Completion, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": item.content}
    if item.tool_calls:
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

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: deque[Item] = deque()
        self._requests: list[dict[str, Any]] = []
        self._stopping = threading.Event()
        self.unknown_paths: list[str] = []
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

    def _resolve(self, item: Any, body: dict[str, Any]) -> Any:
        while callable(item):
            item = item(body)
        return item

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

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
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up (a timeout test)

            def _error(self, status: int, message: str, kind: str, headers=None) -> None:
                body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
                self._send(status, body, headers)

            def do_POST(self) -> None:
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
                    self._send(200, _completion_body(item, str(body.get("model", "fake"))))
                else:
                    self._error(500, f"fake_openai: bad script item {item!r}", "server_error")

        return Handler


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
