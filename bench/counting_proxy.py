"""A tiny counting HTTP proxy for `bench/real_server.py`: it sits on loopback between the
product and a real chat-completions server and records what the server actually saw.

Why a proxy and not the product's own traces: the questions are about the wire (how many
of our requests were open at the server at once, which bodies the server refused and
with what words, how long each request took), and the product's traces are exactly what
is under test. It forwards every request unchanged, streams the reply back chunk by chunk
(server-sent events pass through as they come), and mirrors a client that gives up: when
the product closes its connection, the proxy closes its own to the server, as the server
would have seen without the proxy. Such requests are counted as `abandoned`.

Standard library only: it runs in the bench's own interpreter.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import threading
import time
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}
BODY_KEEP_CHARS = 4000


@dataclass
class Exchange:
    """One request as the server saw it."""

    phase: str
    method: str
    path: str
    started: float
    status: int | None = None
    seconds: float | None = None
    streamed: bool = False
    abandoned: bool = False
    in_flight_at_start: int = 0
    request: dict[str, Any] | None = None
    error_body: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    events: int = 0  # server-sent `data:` events of a streamed reply
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


def _summary_of(body: bytes) -> dict[str, Any] | None:
    """The parts of a chat request that matter for compatibility (not the whole text)."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    keys = sorted(data)
    messages = data.get("messages") or []
    return {
        "keys": keys,
        "max_tokens": data.get("max_tokens", data.get("max_completion_tokens")),
        "tool_choice": data.get("tool_choice"),
        "tools": len(data.get("tools") or []),
        "stream": bool(data.get("stream")),
        "response_format": data.get("response_format"),
        "roles": [m.get("role") for m in messages if isinstance(m, dict)],
        "null_content": sum(
            1 for m in messages if isinstance(m, dict) and "content" in m and m["content"] is None
        ),
    }


class CountingProxy:
    """Forward `http://127.0.0.1:<port>/...` to `upstream`, counting requests in flight."""

    def __init__(self, upstream: str, *, timeout_s: float = 900.0) -> None:
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.timeout_s = timeout_s
        self.phase = "-"
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self.max_in_flight: dict[str, int] = {}
        self.full_bodies: list[dict[str, Any]] = []  # the first rejected bodies, whole
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                proxy._forward(self)

            def do_POST(self) -> None:
                proxy._forward(self)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                return  # a client resetting an idle keep-alive connection is not news

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- accounting ------------------------------------------------------------------------

    def _enter(self, exchange: Exchange) -> None:
        with self._lock:
            exchange.in_flight_at_start = self._in_flight
            self._in_flight += 1
            peak = self.max_in_flight.get(exchange.phase, 0)
            self.max_in_flight[exchange.phase] = max(peak, self._in_flight)
            self.exchanges.append(exchange)

    def _leave(self, exchange: Exchange) -> None:
        with self._lock:
            self._in_flight -= 1
            exchange.seconds = round(time.monotonic() - exchange.started, 3)

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    def report(self, phase: str | None = None) -> dict[str, Any]:
        with self._lock:
            chosen = [e for e in self.exchanges if phase is None or e.phase == phase]
            peaks = dict(self.max_in_flight)
        chat = [e for e in chosen if e.path.endswith("/chat/completions")]
        # a 200 stream that ends before its first event is a refusal too (llama-cpp-python:
        # "Automatic streaming tool choice is not supported", raised after the headers)
        failed = [
            e
            for e in chosen
            if not e.abandoned
            and (e.status is None or e.status >= 400 or (e.streamed and not e.events))
        ]
        return {
            "requests": len(chat),
            "max_in_flight": max((peaks.get(p, 0) for p in {e.phase for e in chosen}), default=0),
            "failed": len(failed),
            # our side hung up before the server had finished its reply (a client that
            # closes a stream after its finish_reason, before `[DONE]`, is not counted)
            "abandoned": sum(e.abandoned and not e.finish_reasons for e in chosen),
            "closed_after_answer": sum(e.abandoned and bool(e.finish_reasons) for e in chosen),
            "abandoned_requests": [
                {
                    "seconds": e.seconds,
                    "streamed": e.streamed,
                    "events": e.events,
                    "request": e.request,
                }
                for e in chosen
                if e.abandoned and not e.finish_reasons
            ][:10],
            "streamed": sum(e.streamed for e in chat),
            "finish_length": sum("length" in e.finish_reasons for e in chat),
            # a stream that ended without any finish_reason was cut by the server (for
            # llama-cpp-python: another request arrived, `interrupt_requests`)
            "streams_cut": sum(
                e.streamed and e.events and not e.finish_reasons and not e.abandoned for e in chat
            ),
            "median_s": _median([e.seconds for e in chat if e.seconds is not None]),
            "max_s": max((e.seconds or 0 for e in chat), default=0),
            "failures": [asdict(e) for e in failed],
        }

    # -- forwarding ------------------------------------------------------------------------

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        exchange = Exchange(self.phase, handler.command, handler.path, time.monotonic())
        if body:
            exchange.request = _summary_of(body)
        self._enter(exchange)
        upstream = http.client.HTTPConnection(
            self.upstream_host, self.upstream_port, timeout=self.timeout_s
        )
        gone = threading.Event()
        watcher = threading.Thread(
            target=self._watch_client, args=(handler.connection, upstream, gone), daemon=True
        )
        try:
            headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Content-Length"] = str(len(body))
            upstream.request(handler.command, handler.path, body=body, headers=headers)
            watcher.start()
            response = upstream.getresponse()
            exchange.status = response.status
            content_type = response.getheader("Content-Type", "")
            exchange.streamed = "text/event-stream" in content_type
            if exchange.streamed:
                self._relay_stream(handler, response, exchange, body)
            else:
                payload = response.read()
                self._note_reply(exchange, payload, body)
                self._send(handler, response, payload)
        except (OSError, http.client.HTTPException) as exc:
            if gone.is_set():
                exchange.abandoned = True
            elif exchange.status is None:
                exchange.status = 502
                exchange.error_body = f"proxy: the server did not answer: {exc!r}"
                self._keep_body(exchange, body)
                message = json.dumps({"error": {"message": exchange.error_body}}).encode()
                try:
                    handler.send_response(502)
                    handler.send_header("Content-Type", "application/json")
                    handler.send_header("Content-Length", str(len(message)))
                    handler.end_headers()
                    handler.wfile.write(message)
                except OSError:
                    pass
        finally:
            if gone.is_set():
                exchange.abandoned = True
            gone.set()
            upstream.close()
            self._leave(exchange)

    def _watch_client(
        self, client: socket.socket, upstream: http.client.HTTPConnection, gone: threading.Event
    ) -> None:
        """Close the server side when the product hangs up first (its timeout fired)."""
        while not gone.is_set():
            try:
                readable, _, _ = select.select([client], [], [], 0.2)
                if readable and not client.recv(1, socket.MSG_PEEK):
                    gone.set()
                    if upstream.sock is not None:
                        upstream.sock.shutdown(socket.SHUT_RDWR)
                    return
            except (OSError, ValueError):
                return

    def _send(
        self, handler: BaseHTTPRequestHandler, response: http.client.HTTPResponse, payload: bytes
    ) -> None:
        handler.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP:
                handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _relay_stream(
        self,
        handler: BaseHTTPRequestHandler,
        response: http.client.HTTPResponse,
        exchange: Exchange,
        body: bytes,
    ) -> None:
        handler.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP:
                handler.send_header(name, value)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        tail = b""
        while True:
            chunk = response.read1(65536)
            if not chunk:
                break
            tail = (tail + chunk)[-65536:]
            self._note_stream(exchange, chunk)
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            handler.wfile.flush()
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()
        if not exchange.events:
            exchange.error_body = "HTTP 200, then the stream ended before its first event"
            self._keep_body(exchange, body)

    # -- what the server said ----------------------------------------------------------------

    def _note_reply(self, exchange: Exchange, payload: bytes, body: bytes) -> None:
        if exchange.status is not None and exchange.status >= 400:
            exchange.error_body = payload.decode("utf-8", "replace")[:BODY_KEEP_CHARS]
            self._keep_body(exchange, body)
            return
        try:
            data = json.loads(payload)
        except ValueError:
            return
        if isinstance(data, dict):
            for choice in data.get("choices") or []:
                if isinstance(choice, dict) and choice.get("finish_reason"):
                    exchange.finish_reasons.append(str(choice["finish_reason"]))
            usage = data.get("usage") or {}
            exchange.prompt_tokens = usage.get("prompt_tokens")
            exchange.completion_tokens = usage.get("completion_tokens")

    def _note_stream(self, exchange: Exchange, chunk: bytes) -> None:
        for line in chunk.split(b"\n"):
            if line.startswith(b"data:"):
                exchange.events += 1
            if not line.startswith(b"data:") or b"finish_reason" not in line:
                continue
            try:
                data = json.loads(line[5:].strip())
            except ValueError:
                continue
            for choice in data.get("choices") or []:
                if isinstance(choice, dict) and choice.get("finish_reason"):
                    exchange.finish_reasons.append(str(choice["finish_reason"]))
            usage = data.get("usage") or {}
            if usage:
                exchange.prompt_tokens = usage.get("prompt_tokens")
                exchange.completion_tokens = usage.get("completion_tokens")

    def _keep_body(self, exchange: Exchange, body: bytes) -> None:
        with self._lock:
            if len(self.full_bodies) < 20:
                self.full_bodies.append(
                    {
                        "phase": exchange.phase,
                        "status": exchange.status,
                        "error": exchange.error_body,
                        "request": body.decode("utf-8", "replace")[:20000],
                    }
                )


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return round((ordered[middle - 1] + ordered[middle]) / 2, 3)
