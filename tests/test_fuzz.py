"""Fuzzing with hypothesis (issue 6 item 5): tool arguments against every registered tool,
vault paths against the jail, random model replies through the loop. Zero crashes, zero
escapes, every tool call answered exactly once, never more requests than allowed."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import assert_paired
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.model import ModelReply, ToolCall, Usage
from assistant.outcome import StopReason, TurnOutcome
from memory.working import INTERRUPTED
from tools.base import ToolArgs, ToolContext, ToolError, tool
from tools.runner import CallOutcome, PreparedCall
from tools.vault.jail import VaultJail

EXAMPLE = Path(__file__).resolve().parent.parent / "vault_example"
FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PATHS = [
    "Projects/Project Phoenix.md",
    "Projects/Project Phoenix",
    "Phoenix",
    "Inbox/New idea.md",
    "Inbox",
    "",
    ".",
    "/",
    "../outside.md",
    "../../etc/passwd",
    "Inbox/../../outside.md",
    "/etc/passwd",
    "~/notes.md",
    "C:\\Windows\\x.md",
    "..\\outside.md",
    "escape/secret.md",
    "escape/new.md",
    "escape",
    "linked.md",
    ".obsidian/app.json",
    ".git/config",
    "Inbox/\x00evil.md",
    "Inbox/" + "长" * 200 + ".md",
    "x" * 300,
    "Templates/周报模板.md",
    "周报模板",
    "Daily/2026-11-24.md",
    "notes.txt",
    "Attachments/phoenix-architecture.png",
    "a/b/c/d/e/f/g/h.md",
    "Inbox/é\u0301\u200b\ufeff.md",
]
PATH_PARTS = st.sampled_from(
    [
        "..",
        ".",
        "",
        "~",
        "C:",
        "escape",
        "linked.md",
        "a",
        "名字",
        ".obsidian",
        "x" * 260,
        "\x00",
        "\\",
        "...",
    ]
)


def junk(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    leaves = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=True, allow_infinity=True)
        | st.text(max_size=30)
        | st.sampled_from(PATHS)
        | st.just("x" * 120_000)
        | st.just("周" * 3000)
        | st.dates().map(str)
    )
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def for_schema(prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value of roughly the right type for one property, or junk."""
    kinds = {prop.get("type")} | {p.get("type") for p in prop.get("anyOf", ())}
    options: list[st.SearchStrategy[Any]] = []
    if "string" in kinds:
        options.append(st.sampled_from(PATHS) | st.text(max_size=60))
    if "integer" in kinds or "number" in kinds:
        options.append(st.integers(-10, 1000) | st.floats(-1, 1e6))
    if "boolean" in kinds:
        options.append(st.booleans())
    if "enum" in prop:
        options.append(st.sampled_from(prop["enum"]))
    typed = st.one_of(*options) if options else junk()
    return st.one_of(typed, typed, typed, junk())  # mostly well-typed, sometimes junk


@st.composite
def arguments_for(draw: st.DrawFn, schema: dict[str, Any]) -> str:
    props: dict[str, Any] = schema.get("properties", {})
    shape = draw(st.sampled_from(["schema", "schema", "junk", "text"]))
    if shape == "text":
        return draw(st.text(max_size=80) | st.sampled_from(["{", "[]", "null", '{"path":', "1"]))
    if shape == "junk":
        return json.dumps(draw(junk()))
    required = list(schema.get("required", ()))
    optional = sorted(set(props) - set(required)) or ["x"]
    keys = required + draw(st.lists(st.sampled_from(optional), unique=True, max_size=4))
    args = {key: draw(for_schema(props.get(key, {}))) for key in keys}
    if draw(st.booleans()):
        args.update(draw(st.dictionaries(st.text(max_size=10), junk(4), max_size=3)))
    return json.dumps(args, ensure_ascii=draw(st.booleans()))


def files_outside(outer: Path, vault: Path) -> dict[str, bytes]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(outer, followlinks=False):
        here = Path(dirpath)
        if here == vault or vault in here.parents:
            continue
        for name in filenames:
            path = here / name
            found[path.relative_to(outer).as_posix()] = (
                b"->" + os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            )
        for name in dirnames:
            found[(here / name).relative_to(outer).as_posix() + "/"] = b""
    return found


@pytest.fixture
def outer(tmp_path: Path) -> Path:
    """tmp/outer/{vault, escape/secret.md, outside.md}; vault/escape -> ../escape and
    vault/linked.md -> ../outside.md are symlinks out of the vault."""
    outer = tmp_path / "outer"
    vault = outer / "vault"
    shutil.copytree(EXAMPLE, vault)
    (outer / "escape").mkdir()
    (outer / "escape" / "secret.md").write_text("# secret\n\nnot yours\n", encoding="utf-8")
    (outer / "outside.md").write_text("# outside\n", encoding="utf-8")
    (vault / "escape").symlink_to(outer / "escape", target_is_directory=True)
    (vault / "linked.md").symlink_to(outer / "outside.md")
    return outer


@pytest.fixture
def full(outer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Assistant]:
    """The default registry (calc, memory, vault) around a model that is never asked."""
    monkeypatch.setenv("ASSISTANT_VAULT", str(outer / "vault"))
    config = load_settings()
    config.home = tmp_path / "data"
    assistant = Assistant(config)
    try:
        yield assistant
    finally:
        assistant.close()


def test_fuzzed_arguments_never_crash_a_tool_nor_write_outside_the_vault(
    full: Assistant, outer: Path
) -> None:
    vault = outer / "vault"
    before = files_outside(outer, vault)
    runner = full.runner
    tools = [full.registry.get(name) for name in full.registry.names()]
    assert len(tools) >= 10
    seen: Counter[str] = Counter()

    @settings(FUZZ, max_examples=70)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        batch = data.draw(st.lists(st.sampled_from(tools), min_size=1, max_size=2))
        confirmed = data.draw(st.booleans())
        prepared: list[PreparedCall] = []
        for n, chosen in enumerate(batch):
            assert chosen is not None
            raw = data.draw(arguments_for(chosen.parameters_schema), label=chosen.name)
            prepared.append(runner.prepare(f"call_{n}", chosen.name, raw))

        def context_for(call: PreparedCall) -> ToolContext:
            return ToolContext(
                session="fuzz",
                turn_id="turn_fuzz",
                call_id=call.call_id,
                idempotency_key=f"{call.call_id}:{call.key}",
                confirmed=confirmed,
            )

        outcomes = runner.run(prepared, context_for)
        assert [o.call_id for o in outcomes] == [c.call_id for c in prepared]
        for outcome in outcomes:
            seen[outcome.status] += 1
            assert isinstance(outcome, CallOutcome)
            assert isinstance(outcome.content, str) and outcome.content
            assert outcome.status != "TOOL_EXCEPTION", (outcome.name, outcome.result)
            json.loads(outcome.content) if outcome.content.startswith("{") else None
        assert files_outside(outer, vault) == before, "a write escaped the vault"

    check()
    assert seen["ok"] > 0, "the fuzz reached real tool runs, not only refusals"


@given(
    st.one_of(
        st.sampled_from(PATHS),
        st.lists(PATH_PARTS, min_size=1, max_size=6).map("/".join),
        st.text(max_size=40),
        st.text(alphabet=st.sampled_from("./\\~:\x00a名é"), max_size=20),
    )
)
@FUZZ
def test_fuzzed_paths_resolve_inside_the_vault_or_are_refused(path: str) -> None:
    jail = _JAIL[0]
    for resolve in (
        lambda p: jail.note(p),
        lambda p: jail.note(p, for_write=True),
        lambda p: jail.folder(p),
    ):
        try:
            found = resolve(path)
        except ToolError as refused:
            assert refused.code in {
                "PATH_OUTSIDE_VAULT",
                "PATH_FORBIDDEN",
                "INVALID_PATH",
                "NOT_MARKDOWN",
            }, refused.payload()
            continue
        real = found.abs.resolve()
        assert real == jail.root or real.is_relative_to(jail.root), (path, real)
        assert (jail.root / found.rel).resolve() == real


_JAIL: list[VaultJail] = []


@pytest.fixture(autouse=True)
def _jail_for_path_fuzz(outer: Path) -> Iterator[None]:
    _JAIL[:] = [VaultJail(outer / "vault")]
    yield
    _JAIL.clear()


# -- random model replies through the loop ---------------------------------------------


class Echo(ToolArgs):
    text: str = ""


@tool(read_only=True)
def probe_read(args: Echo) -> dict[str, Any]:
    """Read-only probe."""
    return {"read": args.text}


@tool(read_only=False)
def probe_write(args: Echo) -> dict[str, Any]:
    """Writing probe."""
    return {"wrote": args.text}


@tool(read_only=False, dangerous=True)
def probe_delete(args: Echo) -> dict[str, Any]:
    """Dangerous probe."""
    raise AssertionError("a dangerous tool ran without confirmation")


@tool(read_only=True)
def probe_boom(args: Echo) -> dict[str, Any]:
    """A tool that raises."""
    raise RuntimeError(f"boom {args.text}")


NAMES = ["probe_read", "probe_write", "probe_delete", "probe_boom", "calc_evaluate"]
JUNK_NAMES = ["", "nope", "vault_delete", "probe_read ", "PROBE_READ", "名字", "x" * 300]
ARGUMENTS = st.one_of(
    st.builds(lambda t: json.dumps({"text": t}), st.text(max_size=20)),
    st.just('{"expression": "2*(3+4)"}'),
    st.sampled_from(["", "{", "[]", "null", "{'text': 'single'}", '{"text": 1}', "{}}"]),
    st.text(max_size=40),
    st.just(json.dumps({"text": "y" * 50_000})),
)
IDS = st.sampled_from(["", "a", "a", "b", "call_1", "重复", " "]) | st.text(max_size=12)


@st.composite
def replies(draw: st.DrawFn) -> list[ModelReply]:
    made = []
    for _ in range(draw(st.integers(1, 7))):
        count = draw(st.integers(0, 6))
        tool_calls = tuple(
            ToolCall(
                id=draw(IDS),
                name=draw(st.sampled_from(NAMES) | st.sampled_from(JUNK_NAMES)),
                arguments=draw(ARGUMENTS),
            )
            for _ in range(count)
        )
        content = draw(st.none() | st.text(max_size=30))
        made.append(
            ModelReply(
                content=content,
                tool_calls=tool_calls,
                usage=Usage(10, 5),
                finish_reason="tool_calls" if tool_calls else "stop",
            )
        )
    return made


class DrawnModel:
    """Plays the drawn replies, then keeps asking for tools forever."""

    name = "drawn"

    def __init__(self) -> None:
        self.replies: list[ModelReply] = []
        self.requests = 0

    def complete(self, messages: Any, tools: Any, **_: Any) -> ModelReply:
        self.requests += 1
        assert_paired([m for m in messages if m["role"] != "system"])
        if self.replies:
            return self.replies.pop(0)
        if not tools:
            return ModelReply(content="wrapped up", usage=Usage(1, 1), finish_reason="stop")
        forever = ToolCall(id=f"more_{self.requests}", name="probe_read", arguments="{}")
        return ModelReply(tool_calls=(forever,), usage=Usage(1, 1), finish_reason="tool_calls")


MAX_REQUESTS = 4


def test_random_model_replies_always_end_in_a_paired_history(
    tmp_path: Path,
) -> None:
    from tools.calc import calc_evaluate

    config = load_settings()
    config.home = tmp_path / "loop-data"
    config.memory.enabled = False
    config.loop.max_requests = MAX_REQUESTS
    config.loop.max_tool_calls = 8
    model = DrawnModel()
    assistant = Assistant(
        config,
        model=model,  # type: ignore[arg-type]
        tools=[probe_read, probe_write, probe_delete, probe_boom, calc_evaluate],
    )
    sessions = iter(range(10_000))

    @FUZZ
    @given(replies(), st.booleans())
    def check(script: list[ModelReply], unattended: bool) -> None:
        model.replies, model.requests = list(script), 0
        session = f"fuzz-{next(sessions)}"
        outcome = assistant.ask("go", session=session, unattended=unattended)
        assert isinstance(outcome, TurnOutcome)
        assert isinstance(outcome.stop_reason, StopReason) and outcome.answer
        assert model.requests == outcome.requests <= MAX_REQUESTS
        for call in outcome.tool_calls:
            if call.name == "probe_delete" and call.status == "ok":
                raise AssertionError("a dangerous call ran inside a turn")
        rows = assistant.working.rows(session)
        raw = [
            {
                "role": row["role"],
                "tool_calls": json.loads(row["tool_calls"]) if row["tool_calls"] else None,
                "tool_call_id": row["tool_call_id"],
            }
            for row in rows
        ]
        assert_paired(raw)
        loaded = assistant.working.load(session)
        assert_paired(loaded)
        assert len(loaded) == len(rows), "nothing dropped or invented on load"
        assert not [m for m in loaded if m["role"] == "tool" and m["content"] == INTERRUPTED]
        trace = assistant.traces.turn(outcome.turn_id)
        assert trace is not None and len(trace["tool_calls"]) == len(outcome.tool_calls)

    try:
        check()
    finally:
        assistant.close()


# -- the two bugs the fuzzing found, pinned -------------------------------------------------


@pytest.mark.parametrize(
    ("tool_name", "arguments"),
    [
        ("vault_read", {"path": "Inbox/" + "长" * 200}),
        ("vault_create_from_template", {"template": "Inbox/" + "长" * 200 + ".md"}),
        ("vault_list", {"folder": "x" * 300}),
        ("vault_create", {"path": "y" * 254}),
    ],
)
def test_a_name_too_long_for_the_file_system_is_refused_not_a_crash(
    full: Assistant, tool_name: str, arguments: dict[str, Any]
) -> None:
    call = full.runner.prepare("c1", tool_name, json.dumps(arguments))
    [outcome] = full.runner.run([call], lambda c: ToolContext(call_id=c.call_id))
    assert outcome.status == "INVALID_PATH", outcome.result
    assert "too long" in outcome.result["detail"]


def test_a_tool_call_with_an_empty_id_keeps_its_result_in_the_history(tmp_path: Path) -> None:
    config = load_settings()
    config.home = tmp_path / "data"
    config.memory.enabled = False
    model = DrawnModel()
    model.replies = [
        ModelReply(
            tool_calls=(ToolCall(id="", name="probe_read", arguments='{"text": "kept"}'),),
            usage=Usage(1, 1),
            finish_reason="tool_calls",
        ),
        ModelReply(content="done", usage=Usage(1, 1), finish_reason="stop"),
    ]
    assistant = Assistant(config, model=model, tools=[probe_read])  # type: ignore[arg-type]
    try:
        assistant.ask("go", session="s1")
        history = assistant.working.load("s1")
        [result] = [m for m in history if m["role"] == "tool"]
        assert result["tool_call_id"] == "" and "kept" in result["content"]
    finally:
        assistant.close()
