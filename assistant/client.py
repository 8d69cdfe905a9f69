"""The light client: finds the daemon that owns the data directory and calls its API.

Every CLI command goes through here first, so it imports only the standard library,
`assistant.errors`, `assistant.paths` and `memory.lock` (all light): no pydantic, chromadb,
openai or fastapi (tests/test_daemon_parts.py holds that). The daemon publishes `api.json`
(url, pid, started) once its API answers, and a bearer token in `api.token` (0600). A file
left by a dead process means no daemon; a live daemon that is still starting, or waiting
for the data directory's lock, is waited for.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.errors import CommandError
from assistant.events import TurnEvent, from_dict
from assistant.paths import data_home as data_home  # re-exported: the CLI resolves it here
from memory.lock import Owner, live_owner, pid_alive, waiting_daemon

API_FILE = "api.json"
TOKEN_FILE = "api.token"
HEALTH_TIMEOUT_S = 3.0
CALL_TIMEOUT_S = 60.0
LONG_TIMEOUT_S = 3600.0  # a turn is bounded by the daemon ([loop] turn_timeout_s)

# operation -> (method, path); path fields come from the parameters of the same name,
# the rest go in the query string (GET, DELETE) or the JSON body (POST).
ROUTES: dict[str, tuple[str, str]] = {
    "status": ("GET", "/status"),
    "ask": ("POST", "/ask"),
    "sessions": ("GET", "/sessions"),
    "end_session": ("POST", "/sessions/{session}/end"),
    "memory_search": ("GET", "/memory/search"),
    "memory_list": ("GET", "/memory"),
    "memory_stats": ("GET", "/memory/stats"),
    "memory_reindex": ("POST", "/memory/reindex"),
    "memory_show": ("GET", "/memory/{id}"),
    "memory_forget": ("POST", "/memory/{id}/forget"),
    "memory_restore": ("POST", "/memory/{id}/restore"),
    "memory_history": ("GET", "/memory/{id}/history"),
    "memory_edit": ("POST", "/memory/{id}/edit"),
    "pending": ("GET", "/pending"),
    "confirm": ("POST", "/pending/{id}/confirm"),
    "reject": ("POST", "/pending/{id}/reject"),
    "trace": ("GET", "/traces/{turn}"),
    "jobs_list": ("GET", "/jobs"),
    "jobs_add": ("POST", "/jobs"),
    "jobs_history": ("GET", "/jobs/history"),
    "jobs_remove": ("DELETE", "/jobs/{name}"),
    "jobs_run": ("POST", "/jobs/{name}/run"),
    "watch_list": ("GET", "/watch"),
    "vault_list": ("GET", "/vault/notes"),
    "vault_read": ("GET", "/vault/note"),
    "vault_search": ("GET", "/vault/search"),
    "vault_index": ("POST", "/vault/index"),
    "vault_status": ("GET", "/vault/status"),
    "vault_undo": ("POST", "/vault/undo"),
    "tools": ("GET", "/tools"),
    "served_tools": ("GET", "/tools/served"),
    "served_call": ("POST", "/tools/served/{name}"),
}
LONG_OPERATIONS = frozenset(
    {
        "ask",
        "end_session",
        "jobs_run",
        "memory_reindex",
        "confirm",
        "vault_index",
        "vault_search",
        "tools",
        "served_call",
    }
)


def _query_value(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class DaemonClient:
    url: str
    token: str
    pid: int

    def call(self, operation: str, params: Mapping[str, Any] | None = None) -> Any:
        """Run an operation of `assistant.commands` in the daemon; its data, or CommandError."""
        method, template = ROUTES[operation]
        rest = {k: v for k, v in (params or {}).items() if v is not None}
        fields = {}
        for name in [part.split("}")[0] for part in template.split("{")[1:]]:
            fields[name] = urllib.parse.quote(str(rest.pop(name)), safe="")
        path = template.format(**fields)
        timeout = LONG_TIMEOUT_S if operation in LONG_OPERATIONS else CALL_TIMEOUT_S
        if method in ("GET", "DELETE"):
            return self.request(method, path, query=rest, timeout_s=timeout)
        return self.request(method, path, body=rest, timeout_s=timeout)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        timeout_s: float = CALL_TIMEOUT_S,
    ) -> Any:
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode({k: _query_value(v) for k, v in query.items()})
        request = urllib.request.Request(
            url,
            data=None if body is None else json.dumps(body).encode("utf-8"),
            method=method,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        # No proxy: the daemon is on loopback, and a proxy must never see the token.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=timeout_s) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise _error_from(exc) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise CommandError(
                "DAEMON_UNREACHABLE",
                f"the daemon (pid {self.pid}) at {self.url} did not answer: {reason}",
                503,
            ) from None
        return json.loads(payload) if payload else None

    def ask_stream(
        self, params: Mapping[str, Any], on_event: Callable[[TurnEvent], None]
    ) -> dict[str, Any]:
        """`ask` through `POST /ask/stream`: each event goes to `on_event` as its line
        arrives; the outcome (what `ask` returns), or its CommandError."""
        body = {k: v for k, v in params.items() if v is not None}
        request = urllib.request.Request(
            self.url + "/ask/stream",
            data=json.dumps(body).encode("utf-8"),
            method="POST",
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/x-ndjson",
            },
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=LONG_TIMEOUT_S) as response:
                for raw in response:  # one line per event, read as it arrives
                    data = json.loads(raw) if raw.strip() else None
                    if not isinstance(data, dict):
                        continue
                    kind = data.get("event")
                    if kind == "outcome":
                        return data["outcome"]
                    if kind == "error":
                        status = int(data.get("status") or 500)
                        raise CommandError(str(data.get("error")), str(data.get("detail")), status)
                    if (event := from_dict(data)) is not None:
                        on_event(event)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:  # a daemon from before streaming: ask it the old way
                return self.call("ask", params)
            raise _error_from(exc) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise CommandError(
                "DAEMON_UNREACHABLE",
                f"the daemon (pid {self.pid}) at {self.url} stopped answering: {reason}",
                503,
            ) from None
        raise CommandError(
            "DAEMON_STREAM_CUT",
            f"the daemon (pid {self.pid}) ended the answer's stream before the outcome",
            502,
        )

    def healthy(self) -> bool:
        try:
            answer = self.request("GET", "/health", timeout_s=HEALTH_TIMEOUT_S)
        except CommandError:
            return False
        return isinstance(answer, dict) and answer.get("pid") == self.pid


def _error_from(exc: urllib.error.HTTPError) -> CommandError:
    try:
        data = json.loads(exc.read() or b"{}")
    except ValueError:
        data = {}
    detail = data.get("detail") if isinstance(data, dict) else None
    if not isinstance(detail, str):  # FastAPI's validation errors are a list
        detail = json.dumps(detail, ensure_ascii=False) if detail else exc.reason
    code = data.get("error") if isinstance(data, dict) else None
    return CommandError(code or f"HTTP_{exc.code}", detail, exc.code)


def published(home: Path) -> DaemonClient | None:
    """The daemon `api.json` names, if its process is alive and its token is readable."""
    try:
        info = json.loads((home / API_FILE).read_text(encoding="utf-8"))
        pid, url = int(info["pid"]), str(info["url"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not pid_alive(pid):
        return None
    try:
        token = (home / TOKEN_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return DaemonClient(url=url, token=token, pid=pid)


def starting_daemon(home: Path) -> int | None:
    """The PID of a live daemon that holds the data directory or waits for it.

    "Live" means the very process recorded (PID and start time), so a PID that a dead
    daemon left and another process reused is not waited for.
    """
    owner = live_owner(home)
    if owner is not None and owner.role == "daemon" and owner.pid != os.getpid():
        return owner.pid
    waiting = waiting_daemon(home)
    return waiting.pid if waiting is not None else None


def daemon_claims(home: Path, holder: Owner | None) -> bool:
    """Should a command waiting for the lock go to the daemon instead? Yes when the
    holder is a live daemon, or a daemon is waiting for the lock (it goes first)."""
    if holder is not None and holder.role == "daemon" and holder.alive:
        return True
    return waiting_daemon(home) is not None


def discover(
    home: Path, *, wait_s: float = 60.0, notice: Callable[[str], None] | None = None
) -> DaemonClient | None:
    """The running daemon of `home`, or None when commands should run in this process.

    A daemon that owns the directory but has not published its API yet (it is starting,
    or stopping) is waited for, up to `wait_s`.
    """
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        client = published(home)
        if client is not None and client.healthy():
            return client
        pid = starting_daemon(home)
        if pid is None or time.monotonic() >= deadline:
            return None
        if notice is not None and not told:
            notice(f"waiting for the daemon (pid {pid}) to start or stop")
            told = True
        time.sleep(0.1)
