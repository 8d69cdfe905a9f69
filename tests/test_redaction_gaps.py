"""Redaction gaps of issue 13 (item 11): passwords known by their context (EN and ZH),
bare AWS secret keys, phone numbers in national and E.164 formats, without masking the
dates, times, amounts and ids around them; and a private data directory whatever the umask.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.testing import ScriptedModel, calls, text
from memory.redact import Redactor
from tools.base import tool

SECRETS = [
    # passwords by their context, whatever they are made of
    ("my password is correcthorsebatterystaple", "correcthorsebatterystaple", "password"),
    ("My password is correcthorsebatterystaple, don't tell", "correcthorsebatterystaple", None),
    ("the wifi password is 'sunflower' at home", "sunflower", None),
    ("my password was changed to bluebird yesterday", "bluebird", None),
    ("pw: hunter", "hunter", "password"),
    ("Passcode = tangerine", "tangerine", None),
    ("passphrase: mellon", "mellon", None),
    ("password is: swordfish", "swordfish", None),
    ("密码是abcdefghzz", "abcdefghzz", "password"),
    ("我的密码是 abcdefghzz，别告诉别人", "abcdefghzz", None),
    ("口令：swordfish", "swordfish", "password"),
    ("邮箱密码为 qwertyuiop。", "qwertyuiop", None),
    # AWS secret access keys: with their key id, by name, and bare
    (
        "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        None,
    ),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        None,
    ),
    (
        "use Zx8Kq2LmPn4Rt6Vw9Yb1Cd3Ef5Gh7Jk0Mn2Pq4St for the bucket",
        "Zx8Kq2LmPn4Rt6Vw9Yb1Cd3Ef5Gh7Jk0Mn2Pq4St",
        "aws_secret",
    ),
    # phone numbers: US, UK, CN, E.164
    ("call me at 415-555-0132", "415-555-0132", "phone"),
    ("office (415) 555-0199 ext 3", "555-0199", "phone"),
    ("or 415.555.0134", "415.555.0134", "phone"),
    ("+1 415 555 0199 is my cell", "555 0199", "phone"),
    ("+14155550199", "4155550199", "phone"),
    ("London office 020 7946 0958", "7946 0958", "phone"),
    ("mobile 07700 900123", "900123", "phone"),
    ("+44 20 7946 0958", "7946 0958", "phone"),
    ("手机 138 0013 8000", "0013 8000", "phone"),
    ("+86 138 0013 8000", "0013 8000", "phone"),
    ("+8613800138000", "13800138000", "phone"),
    ("座机 010-12345678", "12345678", "phone"),
    ("0086 138 0013 8000", "0013 8000", "phone"),
    ("+86-138-0013-8000", "0013-8000", "phone"),
    ("+44 (0)20 7946 0958", "7946 0958", "phone"),
    ("(020) 7946 0958", "7946 0958", "phone"),
    ("+1 (415) 555-0199", "555-0199", "phone"),
    ("1-800-555-0199", "555-0199", "phone"),
    ("Paris 01 23 45 67 89", "45 67 89", "phone"),
    ("+33 1 23 45 67 89", "45 67 89", "phone"),
    ("+49 30 1234567", "1234567", "phone"),
]

ORDINARY = [
    "My password is wrong.",
    "the password is too short",
    "my password has been reset",
    "what is my password?",
    "I forgot my password again",
    "我的密码是什么",
    "密码为空",
    "密码错误，请重试",
    "meeting on 2026-11-29 at 10:30",
    "the train leaves at 10:30:45 from platform 12",
    "dates 2026/12/01, 12-01-2026 and 01.12.2026",
    "order #12345 and invoice INV-2026-0042",
    "it cost $1,234,567.89, or 415 555 dollars",
    "ISBN 978-3-16-148410-0",
    "id 123-456-7890",
    "version 2.415.555.0132",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "ThisIsAVeryLongCamelCaseIdentifierNameXY",
    "images/2023/photos/summer/beach1234abcd",
    "15+27=42 and 2^10 = 1024",
    "the score was 3-1 after 90+4 minutes",
    "room 1012, floor 3, 1-800 is not a number",
    "scores 10 20 30 40 50 and 01 02 2026",
    "version 1.2.3.4.5",
]


@pytest.mark.parametrize(("raw", "secret", "kind"), SECRETS, ids=[s[0][:40] for s in SECRETS])
def test_secrets_known_by_context_or_shape_are_masked(raw: str, secret: str, kind: str | None):
    masked = Redactor().text(raw)
    assert secret not in masked, masked
    assert "[REDACTED:" in masked
    if kind is not None:
        assert f"[REDACTED:{kind}]" in masked


@pytest.mark.parametrize("plain", ORDINARY)
def test_ordinary_text_dates_times_amounts_and_ids_are_kept(plain: str) -> None:
    assert Redactor().text(plain) == plain


@tool
def account_lookup(name: str) -> dict[str, str]:
    """Look up an account. Call it when the user asks for one."""
    return {
        "name": name,
        "login": "my password is correcthorsebatterystaple",
        "aws": "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "phone": "(415) 555-0199",
        "备注": "密码是abcdefghzz",
    }


LEAKS = (
    "correcthorsebatterystaple",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "555-0199",
    "abcdefghzz",
)


def test_model_visible_results_traces_and_conclusions_are_masked() -> None:
    model = ScriptedModel([calls(("account_lookup", {"name": "work"})), text("Found it.")])
    assistant = Assistant(load_settings(), model=model, tools=[account_lookup])
    try:
        outcome = assistant.ask("what's my work account?")
        seen = model.requests[1]["messages"][-1]["content"]
        trace = str(assistant.traces.turn(outcome.turn_id))
        for leak in LEAKS:
            assert leak not in seen
            assert leak not in trace
        assert assistant.memory is not None
        stored = assistant.memory.store.remember("my password is correcthorsebatterystaple")
        assert "correcthorsebatterystaple" not in stored.conclusion.text
        stored = assistant.memory.store.remember("我的电话是 +1 415 555 0199")
        assert "555 0199" not in stored.conclusion.text
    finally:
        assistant.close()


# -- a private data directory -------------------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _modes(home: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(home.stat().st_mode)}
    for root, folders, files in os.walk(home):
        for name in [*folders, *files]:
            path = Path(root, name)
            if not path.is_symlink():
                found[str(path.relative_to(home))] = stat.S_IMODE(path.stat().st_mode)
    return found


def _open_to_others(modes: dict[str, int]) -> dict[str, str]:
    return {name: oct(mode) for name, mode in modes.items() if mode & 0o077}


def test_a_new_data_directory_is_private_whatever_the_umask(
    tmp_path: Path, umask_022: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "fresh" / "home"
    monkeypatch.setenv("ASSISTANT_HOME", str(home))
    assistant = Assistant(load_settings())
    try:
        assert assistant.memory is not None
        assistant.memory.store.remember("my dentist is Dr. Li")  # opens chroma/ as well
        assistant.ask("what is 2+2?")
        modes = _modes(home)
        assert "assistant.db" in modes and any(n.startswith("chroma") for n in modes)
        assert modes["."] == 0o700
        assert _open_to_others(modes) == {}
    finally:
        assistant.close()
    assert stat.S_IMODE(os.umask(0o022)) == 0o022, "the owner's umask is put back on release"


def test_existing_open_files_are_made_private_at_start(tmp_path: Path, umask_022: None) -> None:
    """A data directory an older version left 0755 / 0644 (assistant.db, daemon.log,
    jobs.db, chroma files) is tightened by the next owner, daemon or command."""
    home = tmp_path
    Assistant(load_settings()).close()
    for name in ("daemon.log", "jobs.db", "api.token"):
        (home / name).write_text("x", encoding="utf-8")
    (home / "chroma" / "seg").mkdir(parents=True, exist_ok=True)
    (home / "chroma" / "seg" / "data.bin").write_bytes(b"x")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("not ours", encoding="utf-8")
    (home / "link").symlink_to(outside)
    for path in [home, *home.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert _open_to_others(_modes(home))
    result = subprocess.run(
        [sys.executable, "-m", "assistant", "memory", "stats"],
        capture_output=True,
        text=True,
        env={**os.environ, "ASSISTANT_HOME": str(home)},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert _open_to_others(_modes(home)) == {}
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644, "a link's target is left alone"


def test_a_vault_folder_the_assistant_creates_keeps_the_vaults_mode(
    tmp_path: Path, umask_022: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    vault.chmod(0o755)
    monkeypatch.setenv("ASSISTANT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ASSISTANT_VAULT", str(vault))
    assistant = Assistant(load_settings())
    try:
        create: Any = assistant.registry.get("vault_create")
        assert create is not None
        from tools.base import ToolContext

        args = create.args_model.model_validate(
            {"path": "Garden/Beds/Tomato plan.md", "content": "hi"}
        )
        create.invoke(args, ToolContext())
        assert stat.S_IMODE((vault / "Garden").stat().st_mode) == 0o755
        assert stat.S_IMODE((vault / "Garden" / "Beds" / "Tomato plan.md").stat().st_mode) == 0o644
    finally:
        assistant.close()
