"""Terminal escapes never reach the terminal (issue 13, item 10): file names, note content,
pending summaries and diffs, answers and trace views print their control characters
visibly; JSON output stays valid JSON holding the original text. Through the real CLI in
a child process (the bytes a terminal would get), with the real `openai` SDK against the
local fake endpoint where a model is needed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, calls, completion

from assistant.terminal import json_text, visible

ROOT = Path(__file__).resolve().parent.parent
ESCAPES = "\x1b[3A\x1b[J\x1b]0;pwned\x07\x9b2J\u202e\r"
CONTROL_BYTES = [b"\x1b", b"\x07", b"\r", b"\xc2\x9b", "\u202e".encode()]


def _cli(
    home: Path, vault: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    base.update(ASSISTANT_HOME=str(home), ASSISTANT_VAULT=str(vault), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "assistant", *args],
        input=stdin.encode(),
        capture_output=True,
        env=base,
        timeout=180,
    )


def _assert_clean(output: bytes) -> None:
    for raw in CONTROL_BYTES:
        assert raw not in output, (raw, output[-2000:])


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    copy = tmp_path / "vault"
    shutil.copytree(ROOT / "vault_example", copy)
    return copy


def test_visible_shows_every_control_character_and_keeps_lines() -> None:
    shown = visible(f"a{ESCAPES}b\r\nc\td\x7f")
    assert shown == "a␛[3A␛[J␛]0;pwned␇\\x9b2J\\u202e␍b\nc\td␡"
    assert visible("[bold red]not markup[/]") == "[bold red]not markup[/]"
    text = {"name": f"x{ESCAPES}y"}
    assert json.loads(json_text(text)) == text
    _assert_clean(json_text(text).encode())


def test_file_names_and_note_text_print_visibly(tmp_path: Path, vault: Path) -> None:
    name = "Inbox/Evil\x1b]0;pwned\x07\x1b[2J.md"
    (vault / name).write_text(f"# Evil\n\nbody {ESCAPES} end\n", encoding="utf-8")
    home = tmp_path / "home"
    listed = _cli(home, vault, "vault", "list", "Inbox")
    assert listed.returncode == 0, listed.stderr
    _assert_clean(listed.stdout + listed.stderr)
    assert "Evil␛]0;pwned␇␛[2J.md" in listed.stdout.decode()
    as_json = _cli(home, vault, "vault", "list", "Inbox", "--json")
    paths = [note["path"] for note in json.loads(as_json.stdout)["notes"]]
    assert name in paths, "JSON keeps the real name, escaped by json"
    read = _cli(home, vault, "vault", "read", name)
    assert read.returncode == 0, read.stderr
    _assert_clean(read.stdout + read.stderr)
    assert "body ␛[3A␛[J" in read.stdout.decode()


def test_a_doctored_diff_at_the_chat_prompt_and_in_pending_prints_visibly(
    tmp_path: Path, vault: Path, fake_openai: FakeOpenAI
) -> None:
    """The issue's case: `\\x1b[3A\\x1b[J` in an overwrite would move the cursor up and
    erase the diff lines above the `confirm: … [y/N]` prompt."""
    env = {
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "test",
        "ASSISTANT_MODEL": "fake-model",
    }
    fake_openai.script(
        calls(
            (
                "vault_overwrite",
                {"path": "Inbox/Ideas to sort.md", "content": f"harmless\x1b[3A\x1b[J{ESCAPES}"},
            )
        ),
        completion(f"I prepared it {ESCAPES}[bold]yes[/bold]"),
    )
    home = tmp_path / "home"
    chat = _cli(home, vault, "chat", stdin="rewrite my inbox note\nn\n\n", env=env)
    assert chat.returncode == 0, chat.stderr
    _assert_clean(chat.stdout + chat.stderr)
    out = chat.stdout.decode() + chat.stderr.decode()
    assert "harmless␛[3A␛[J" in out  # the diff, made visible
    assert "[bold]yes[/bold]" in out  # model text is never read as markup
    assert "rejected: nothing changed" in out
    fake_openai.script(
        calls(("vault_delete", {"path": "Inbox/Ideas to sort.md"})), completion("ok")
    )
    asked = _cli(home, vault, "ask", f"delete it {ESCAPES}", env=env)
    _assert_clean(asked.stdout + asked.stderr)
    pending = _cli(home, vault, "pending", env=env)
    assert pending.returncode == 0, pending.stderr
    _assert_clean(pending.stdout + pending.stderr)
    trace = _cli(home, vault, "trace", "last", env=env)
    assert trace.returncode == 0, trace.stderr
    _assert_clean(trace.stdout + trace.stderr)
    assert "delete it ␛[3A" in trace.stdout.decode()
    as_json = json.loads(_cli(home, vault, "trace", "last", "--json", env=env).stdout)
    assert any("delete it \x1b[3A" in value for value in _strings(as_json)), "the real text"


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def test_the_live_view_shows_model_text_visibly_and_never_as_markup() -> None:
    """Streamed tokens and a tool name from the model pass `visible`; the spinner's label
    is escaped for rich, which writes its own cursor codes to the terminal underneath."""
    import io

    from assistant.events import TextDelta, ToolFinished, ToolStarted
    from assistant.live import TurnView
    from assistant.terminal import VisibleStream, raw_stream

    out_raw, err_raw = io.StringIO(), io.StringIO()
    out, err = VisibleStream(out_raw), VisibleStream(err_raw)
    view = TurnView(tokens=True, spinner=True, verbose=True, out=out, err=err)
    assert raw_stream(err) is err_raw and view._console.file is err_raw
    hostile = "[bold red]x[/]\x1b[2J"
    view(TextDelta(text=f"hello {hostile}", index=0))
    view(ToolStarted(name=hostile, call_id="c1"))
    assert view._status.status == "running \\[bold red]x\\[/]␛[2J…"
    view(ToolFinished(name=hostile, call_id="c1", status="ok", ms=1.0))
    view.close()
    assert "\x1b[2J" not in out_raw.getvalue() and "hello [bold red]x[/]␛[2J" in out_raw.getvalue()
    assert "x[/]␛[2J: ok" in err_raw.getvalue()
