"""The control API (SPEC D5, S6): FastAPI on a loopback address, one bearer token.

Every request, `/openapi.json` and `/health` included, must carry `Authorization: Bearer
TOKEN` (the token is in `api.token`, mode 0600, in the data directory, new at each start);
anything else gets 401 before it reaches a route. Routes call the same operations as the
CLI (`assistant.commands`), so both print the same data. Handlers are plain functions:
FastAPI runs them in its thread pool, and turns go through the daemon's work queue.

`POST /ask/stream` runs the same turn as `POST /ask` and streams it as NDJSON (one JSON
object a line, `application/x-ndjson`): the turn's events (`assistant.events`) as they
happen, then one `{"event": "outcome", "outcome": {...}}` (what `/ask` returns) or one
`{"event": "error", "error": CODE, "detail": ..., "status": N}`. A client that leaves
before the end cancels its turn.

Extension point: more endpoints (the vault's, issue 4) come in as `APIRouter`s through
`create_app(..., routers=...)`; `Daemon.routers()` is where the daemon adds them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import uvicorn
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, Field
from starlette.routing import BaseRoute

from assistant import __version__, commands
from assistant.commands import Services
from assistant.daemon.workqueue import QueueClosed
from assistant.errors import AssistantError, CommandError
from assistant.events import TurnEvent, as_dict
from memory.errors import StorageError

log = logging.getLogger(__name__)


class AskRequest(BaseModel):
    text: str = Field(min_length=1, max_length=100_000)
    session: str | None = None  # checked by `commands.ask`, the same way in-process


class EditRequest(BaseModel):
    text: str = Field(min_length=1, max_length=2000)


class JobRequest(BaseModel):
    prompt: str = Field(min_length=1, max_length=100_000)
    cron: str | None = None
    every: str | None = None
    name: str | None = None
    write_scope: list[str] | None = None


class VaultIndexRequest(BaseModel):
    full: bool = False


class VaultUndoRequest(BaseModel):
    n: int = Field(1, ge=1, le=100)
    force: bool = False


class ServedCallRequest(BaseModel):
    arguments: dict[str, Any] = Field(default_factory=dict)


class BearerToken:
    """ASGI middleware: no request passes without the right token (S6)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    def _valid(self, header: bytes) -> bool:
        """`Bearer TOKEN`; the scheme is case-insensitive (RFC 7235 section 2.1)."""
        scheme, _, credentials = header.strip().partition(b" ")
        bearer = hmac.compare_digest(scheme.lower(), b"bearer")
        return hmac.compare_digest(credentials.strip(), self.expected) and bearer

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not self._valid(given):
                response = JSONResponse(
                    {
                        "error": "UNAUTHORIZED",
                        "detail": "a valid bearer token is required; "
                        "it is in api.token in the data directory",
                    },
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _describe_invalid(exc: RequestValidationError) -> str:
    """FastAPI's list of problems as one line: `query k: Input should be ... (got 'x')`."""
    problems = []
    for item in exc.errors():
        where = " ".join(str(part) for part in item.get("loc", ()))
        got = f" (got {item['input']!r:.60})" if "input" in item else ""
        problems.append(f"{where}: {item.get('msg', 'invalid')}{got}")
    return "; ".join(problems) or "the request is not valid"


def _error(status: int, code: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail}, status_code=status)


def _failure(exc: Exception) -> tuple[int, str, str]:
    """(HTTP status, code, detail) of a failed operation, as the handlers below answer."""
    if isinstance(exc, CommandError):
        return exc.status, exc.code, str(exc)
    if isinstance(exc, QueueClosed):
        return 503, "SHUTTING_DOWN", str(exc)
    if isinstance(exc, StorageError):
        return 503, "STORAGE_ERROR", str(exc)
    if isinstance(exc, AssistantError):
        return 400, type(exc).__name__, str(exc)
    return 500, "INTERNAL", f"{type(exc).__name__}: {exc}"


def _line(data: dict[str, Any]) -> bytes:
    return json.dumps(data, ensure_ascii=False, default=str).encode("utf-8") + b"\n"


async def stream_turn(services: Services, text: str, session: str | None) -> AsyncIterator[bytes]:
    """The turn runs in its own thread (and the work queue); its events come back to this
    event loop one line each, written as soon as they arrive."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[bytes | None] = asyncio.Queue()
    cancel = threading.Event()

    def put(line: bytes | None) -> None:
        # RuntimeError: the event loop is gone (shutdown): nobody is listening
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(lines.put_nowait, line)

    def observe(event: TurnEvent) -> None:
        put(_line(as_dict(event)))

    def run() -> None:
        try:
            outcome = commands.ask(services, text, session, observer=observe, cancel=cancel)
            put(_line({"event": "outcome", "outcome": outcome}))
        except Exception as exc:  # becomes the stream's last line
            status, code, detail = _failure(exc)
            if status == 500:
                log.error("unexpected error streaming a turn", exc_info=exc)
            put(_line({"event": "error", "error": code, "detail": detail, "status": status}))
        finally:
            put(None)

    threading.Thread(target=run, name="ask-stream", daemon=True).start()
    try:
        while (line := await lines.get()) is not None:
            yield line
    finally:  # the client left before the end: stop its turn (`cancelled`)
        cancel.set()


def create_app(
    services: Services,
    token: str,
    *,
    routers: Sequence[APIRouter] = (),
    routes: Sequence[BaseRoute] = (),
    lifespan: Callable[[Any], AbstractAsyncContextManager[Any]] | None = None,
) -> FastAPI:
    """`routes` are raw ASGI routes (the MCP endpoint, X1) behind the same token; what they
    need running (the MCP session manager) is entered by `lifespan`."""
    app = FastAPI(
        lifespan=lifespan,
        title="assistant daemon",
        version=__version__,
        description="Control API of a local assistant daemon. Loopback only; every request "
        "needs `Authorization: Bearer TOKEN` (the token is in api.token in the data "
        "directory).",
        # Documents the scheme in the OpenAPI description; `BearerToken` enforces it.
        dependencies=[Depends(HTTPBearer(auto_error=False))],
        docs_url=None,
        redoc_url=None,
    )
    app.add_middleware(BearerToken, token=token)

    @app.exception_handler(CommandError)
    async def command_error(request: Request, exc: CommandError) -> JSONResponse:
        return _error(exc.status, exc.code, str(exc))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "BAD_REQUEST", _describe_invalid(exc))

    @app.exception_handler(QueueClosed)
    async def shutting_down(request: Request, exc: QueueClosed) -> JSONResponse:
        return _error(503, "SHUTTING_DOWN", str(exc))

    @app.exception_handler(StorageError)
    async def storage_error(request: Request, exc: StorageError) -> JSONResponse:
        log.error("storage fault serving %s: %s", request.url.path, exc)
        return _error(503, "STORAGE_ERROR", str(exc))

    @app.exception_handler(AssistantError)
    async def assistant_error(request: Request, exc: AssistantError) -> JSONResponse:
        return _error(400, type(exc).__name__, str(exc))

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error serving %s", request.url.path)
        return _error(500, "INTERNAL", f"{type(exc).__name__}: {exc}")

    s = services

    @app.get("/health", tags=["daemon"])
    def health() -> dict[str, Any]:
        """Cheap liveness check the CLI makes before using the daemon."""
        return {"status": "ok", "pid": os.getpid(), "version": __version__}

    @app.get("/status", tags=["daemon"])
    def status() -> dict[str, Any]:
        return commands.status(s)

    @app.post("/ask", tags=["turns"])
    def ask(request: AskRequest) -> dict[str, Any]:
        """One turn through the loop; the outcome with `served_by: daemon`."""
        return commands.ask(s, request.text, request.session)

    @app.post(
        "/ask/stream",
        tags=["turns"],
        response_class=StreamingResponse,
        responses={
            200: {
                "description": "One JSON object per line: the turn's events, then "
                "`outcome` or `error`",
                "content": {"application/x-ndjson": {}},
            }
        },
    )
    def ask_stream(request: AskRequest) -> StreamingResponse:
        """The same turn as `/ask`, as NDJSON: its events as they happen, then the
        outcome (`{"event": "outcome", ...}`) or `{"event": "error", ...}`."""
        return StreamingResponse(
            stream_turn(s, request.text, request.session), media_type="application/x-ndjson"
        )

    @app.get("/sessions", tags=["turns"])
    def sessions(limit: int = 50) -> list[dict[str, Any]]:
        return commands.sessions(s, limit)

    @app.post("/sessions/{session}/end", tags=["turns"])
    def end_session(session: str) -> dict[str, Any]:
        """The conversation is over: extract its conclusions into long-term memory."""
        return commands.end_session(s, session)

    @app.get("/memory", tags=["memory"])
    def memory_list(status: str = "active", limit: int = 50) -> list[dict[str, Any]]:
        return commands.memory_list(s, status, limit)

    @app.get("/memory/search", tags=["memory"])
    def memory_search(
        query: str,
        k: int = 10,
        kind: str | None = None,
        tag: str | None = None,
        include_all: bool = False,
        as_of: str | None = None,
    ) -> list[dict[str, Any]]:
        return commands.memory_search(s, query, k, kind, tag, include_all, as_of)

    @app.get("/memory/stats", tags=["memory"])
    def memory_stats() -> dict[str, Any]:
        return commands.memory_stats(s)

    @app.post("/memory/reindex", tags=["memory"])
    def memory_reindex() -> dict[str, Any]:
        return commands.memory_reindex(s)

    @app.get("/memory/{id}", tags=["memory"])
    def memory_show(id: str) -> dict[str, Any]:
        return commands.memory_show(s, id)

    @app.post("/memory/{id}/forget", tags=["memory"])
    def memory_forget(id: str) -> dict[str, Any]:
        return commands.memory_forget(s, id)

    @app.post("/memory/{id}/restore", tags=["memory"])
    def memory_restore(id: str) -> dict[str, Any]:
        """Undo a forget: the retired conclusion is active again."""
        return commands.memory_restore(s, id)

    @app.get("/memory/{id}/history", tags=["memory"])
    def memory_history(id: str) -> list[dict[str, Any]]:
        """Every value of the thing a conclusion is about, oldest first."""
        return commands.memory_history(s, id)

    @app.post("/memory/{id}/edit", tags=["memory"])
    def memory_edit(id: str, request: EditRequest) -> dict[str, Any]:
        """The user's correction: a new row (source "user") supersedes the conclusion."""
        return commands.memory_edit(s, id, request.text)

    @app.get("/pending", tags=["confirmations"])
    def pending() -> list[dict[str, Any]]:
        return commands.pending(s)

    @app.post("/pending/{id}/confirm", tags=["confirmations"])
    def confirm(id: str) -> dict[str, Any]:
        return commands.confirm(s, id)

    @app.post("/pending/{id}/reject", tags=["confirmations"])
    def reject(id: str) -> dict[str, Any]:
        return commands.reject(s, id)

    @app.get("/traces/{turn}", tags=["traces"])
    def trace(turn: str, session: str | None = None) -> dict[str, Any]:
        """A turn's trace; `last` is the newest (of `session`, when given)."""
        return commands.trace(s, turn, session)

    @app.get("/jobs", tags=["jobs"])
    def jobs_list() -> list[dict[str, Any]]:
        return commands.jobs_list(s)

    @app.post("/jobs", tags=["jobs"])
    def jobs_add(request: JobRequest) -> dict[str, Any]:
        return commands.jobs_add(
            s, request.prompt, request.cron, request.every, request.name, request.write_scope
        )

    @app.get("/jobs/history", tags=["jobs"])
    def jobs_history(name: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        return commands.jobs_history(s, name, limit)

    @app.delete("/jobs/{name}", tags=["jobs"])
    def jobs_remove(name: str) -> dict[str, Any]:
        return commands.jobs_remove(s, name)

    @app.post("/jobs/{name}/run", tags=["jobs"])
    def jobs_run(name: str) -> dict[str, Any]:
        """Run the job now (waits for its turn); the run's history row."""
        return commands.jobs_run(s, name)

    @app.get("/watch", tags=["watch"])
    def watch_list() -> dict[str, Any]:
        return commands.watch_list(s)

    @app.get("/vault/notes", tags=["vault"])
    def vault_list(
        folder: str | None = None, tag: str | None = None, recent: bool = False, limit: int = 100
    ) -> dict[str, Any]:
        return commands.vault_list(s, folder, tag, recent, limit)

    @app.get("/vault/note", tags=["vault"])
    def vault_read(path: str, heading: str | None = None) -> dict[str, Any]:
        return commands.vault_read(s, path, heading)

    @app.get("/vault/search", tags=["vault"])
    def vault_search(
        query: str, k: int = 8, folder: str | None = None, tag: str | None = None
    ) -> list[dict[str, Any]]:
        return commands.vault_search(s, query, k, folder, tag)

    @app.post("/vault/index", tags=["vault"])
    def vault_index(request: VaultIndexRequest) -> dict[str, Any]:
        return commands.vault_index(s, request.full)

    @app.get("/vault/status", tags=["vault"])
    def vault_status() -> dict[str, Any]:
        return commands.vault_status(s)

    @app.post("/vault/undo", tags=["vault"])
    def vault_undo(request: VaultUndoRequest) -> dict[str, Any]:
        return commands.vault_undo(s, request.n, request.force)

    @app.get("/tools", tags=["tools"])
    def tools_list() -> dict[str, Any]:
        """Every tool with its source and flags; MCP servers and plugins with their state."""
        return commands.tools(s)

    @app.get("/tools/served", tags=["tools"])
    def served_tools() -> list[dict[str, Any]]:
        """The tools offered to MCP clients, with their schemas and hints."""
        return commands.served_tools(s)

    @app.post("/tools/served/{name}", tags=["tools"])
    def served_call(name: str, request: ServedCallRequest) -> dict[str, Any]:
        """One MCP client's call; a dangerous tool answers with a pending action."""
        return commands.served_call(s, name, request.arguments)

    for router in routers:
        app.include_router(router)
    app.router.routes.extend(routes)
    return app


class ApiServer:
    """Uvicorn in a thread on a socket bound here, so the port is known before it serves."""

    def __init__(self, app: FastAPI, host: str, port: int) -> None:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((host, port))
        except OSError as exc:
            self.socket.close()
            raise AssistantError(
                f"the control API cannot listen on {host} port {port}: {exc.strerror}; "
                "set [daemon] port = 0 to pick a free port"
            ) from None
        bound = self.socket.getsockname()
        self.url = f"http://{host if family == socket.AF_INET else f'[{host}]'}:{bound[1]}"
        self.server = uvicorn.Server(
            uvicorn.Config(
                app,
                log_config=None,
                access_log=False,
                lifespan="on",
                ws="none",
                timeout_graceful_shutdown=5,
            )
        )
        self._thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, name="api", daemon=True
        )

    def start(self, timeout_s: float = 30.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the control API did not start on {self.url}")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self.socket.close()
