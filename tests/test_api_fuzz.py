"""Fuzz the control API from its own OpenAPI description (S6): every route, every method,
any body, any Authorization header but the right one -> 401, and the daemon's services
are never reached. In process, through Starlette's TestClient (no socket is opened).

schemathesis is not installable in this environment, so the requests are generated with
hypothesis from `app.openapi()` directly.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from assistant.daemon.api import create_app

TOKEN = "tok-0123456789abcdef"


class Untouchable:
    """Stands in for the daemon's services: any use of it is a failed check."""

    touched: ClassVar[list[str]] = []

    def __getattr__(self, name: str) -> Any:
        Untouchable.touched.append(name)
        raise AssertionError(f"an unauthenticated request reached services.{name}")


APP = create_app(Untouchable(), TOKEN)  # type: ignore[arg-type]
CLIENT = TestClient(APP, raise_server_exceptions=False)
OPERATIONS = sorted(
    (method.upper(), path)
    for path, item in APP.openapi()["paths"].items()
    for method in item
    if method in {"get", "post", "put", "patch", "delete"}
)
WRONG_AUTH = st.one_of(
    st.none(),
    st.just(""),
    st.just(TOKEN),
    st.just(f"Bearer {TOKEN[:-1]}"),
    st.just(f"Bearer {TOKEN}x"),
    st.just(f"Basic {TOKEN}"),
    st.just("Bearer "),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40).map(
        lambda t: f"Bearer {t}"
    ),
)
BODIES = st.one_of(
    st.none(),
    st.dictionaries(st.text(max_size=10), st.text(max_size=20) | st.integers(), max_size=4),
    st.just({"text": "delete all notes", "unattended": False}),
)


def _right(auth: str | None) -> bool:
    """The token under the Bearer scheme, in any case, with any spacing RFC 7235 allows."""
    if auth is None:
        return False
    scheme, _, credentials = auth.strip().partition(" ")
    return scheme.lower() == "bearer" and credentials.strip() == TOKEN


def fill(path: str, value: str) -> str:
    return re.sub(r"\{[^}]+\}", value or "x", path)


def test_the_openapi_description_lists_the_routes() -> None:
    assert len(OPERATIONS) >= 5
    assert all(path.startswith("/") for _, path in OPERATIONS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(OPERATIONS),
    WRONG_AUTH.filter(lambda a: not _right(a)),
    BODIES,
    st.text(alphabet="abc_-0123456789", max_size=12),
)
def test_no_route_answers_without_the_exact_token(
    operation: tuple[str, str], auth: str | None, body: Any, param: str
) -> None:
    method, path = operation
    headers = {"Authorization": auth} if auth is not None else {}
    response = CLIENT.request(method, fill(path, param), headers=headers, json=body)
    assert response.status_code == 401, (method, path, auth, response.text)
    assert response.json()["error"] == "UNAUTHORIZED"
    assert response.headers["www-authenticate"] == "Bearer"
    assert Untouchable.touched == []


@pytest.mark.parametrize(
    "auth",
    [
        f"Bearer {TOKEN}",
        f"bearer {TOKEN}",
        f"BEARER {TOKEN}",
        f"Bearer  {TOKEN}",
        f"Bearer {TOKEN} ",
    ],
)
def test_the_bearer_scheme_is_case_insensitive(auth: str) -> None:
    """RFC 7235 section 2.1: the scheme is a case-insensitive token; RFC 6750 2.1: 1*SP."""
    response = CLIENT.get("/health", headers={"Authorization": auth})
    assert response.status_code == 200, response.text
