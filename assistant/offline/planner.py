"""The planner core: build a view of the conversation, ask each intent, answer honestly."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from assistant.model import Message, ModelReply, ToolCall, Usage
from memory.tokens import estimate_message_tokens, estimate_tokens

RUNTIME_NOTE_PREFIXES = ("[runtime note]", "[grounding check]")
_CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class ToolResult:
    name: str
    arguments: dict[str, Any]
    payload: dict[str, Any]

    @property
    def error(self) -> str | None:
        code = self.payload.get("error")
        return str(code) if code else None


@dataclass
class PlannerView:
    """The conversation as an intent needs it: this turn's request, results, and the past."""

    user_text: str
    history: list[Message]
    results: list[ToolResult]
    offered_tools: frozenset[str]
    calls_so_far: int

    @property
    def chinese(self) -> bool:
        return bool(_CJK.search(self.user_text))

    def can_call(self, name: str) -> bool:
        return name in self.offered_tools

    def say(self, english: str, chinese: str) -> str:
        return chinese if self.chinese else english

    def past_results(self) -> list[dict[str, Any]]:
        """Parsed tool results of earlier turns, newest first."""
        found = []
        for message in reversed(self.history):
            if message.get("role") == "tool":
                try:
                    payload = json.loads(message.get("content") or "")
                except json.JSONDecodeError:
                    continue
                if isinstance(payload, dict):
                    found.append(payload)
        return found


@dataclass
class PlannerStep:
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    answer: str | None = None


class Intent(Protocol):
    name: str
    examples: Sequence[str]

    def respond(self, view: PlannerView) -> PlannerStep | None:
        """A step if this intent understands the request, else None."""


def _split_turn(messages: Sequence[Message]) -> tuple[int, str]:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        content = message.get("content") or ""
        if message.get("role") == "user" and not content.startswith(RUNTIME_NOTE_PREFIXES):
            return index, content
    return len(messages), ""


def _results(turn_messages: Sequence[Message]) -> list[ToolResult]:
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    results = []
    for message in turn_messages:
        for call in message.get("tool_calls") or ():
            try:
                arguments = json.loads(call["function"]["arguments"] or "{}")
            except json.JSONDecodeError:
                arguments = {}
            calls[call["id"]] = (call["function"]["name"], arguments)
        if message.get("role") == "tool" and message.get("tool_call_id") in calls:
            name, arguments = calls[message["tool_call_id"]]
            try:
                payload = json.loads(message.get("content") or "{}")
            except json.JSONDecodeError:
                payload = {"result": message.get("content")}
            results.append(ToolResult(name, arguments, payload))
    return results


class OfflinePlanner:
    """Speaks the `ChatModel` protocol without a network."""

    name = "offline-planner"

    def __init__(self, intents: Sequence[Intent], *, config_path: str = "config.toml") -> None:
        self.intents = list(intents)
        self.config_path = config_path

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        *,
        temperature: float = 0.0,
        timeout_s: float | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> ModelReply:
        view = self.view(messages, tools)
        step = self.step(view)
        prompt_tokens = estimate_message_tokens(messages)
        if step.calls:
            calls = tuple(
                ToolCall(
                    id=f"call_offline_{view.calls_so_far + n}",
                    name=name,
                    arguments=json.dumps(args, ensure_ascii=False),
                )
                for n, (name, args) in enumerate(step.calls, start=1)
            )
            produced = sum(estimate_tokens(call.arguments) for call in calls)
            return ModelReply(None, calls, Usage(prompt_tokens, produced, True), "tool_calls")
        answer = step.answer or ""
        if on_delta is not None and answer:  # nothing streams here: the answer is one piece
            on_delta(answer)
        return ModelReply(answer, (), Usage(prompt_tokens, estimate_tokens(answer), True), "stop")

    def view(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None
    ) -> PlannerView:
        start, user_text = _split_turn(messages)
        turn_messages = messages[start + 1 :]
        return PlannerView(
            user_text=user_text.strip(),
            history=[m for m in messages[:start] if m.get("role") != "system"],
            results=_results(turn_messages),
            offered_tools=frozenset(t["function"]["name"] for t in tools or ()),
            calls_so_far=sum(len(m.get("tool_calls") or ()) for m in turn_messages),
        )

    def step(self, view: PlannerView) -> PlannerStep:
        for intent in self.intents:
            step = intent.respond(view)
            if step is None:
                continue
            unavailable = [name for name, _ in step.calls if not view.can_call(name)]
            if unavailable:
                return PlannerStep(answer=self.cannot_finish(view, unavailable))
            return step
        return PlannerStep(answer=self.outside_grammar(view))

    def cannot_finish(self, view: PlannerView, tools: Sequence[str]) -> str:
        names = ", ".join(tools)
        if all(name.startswith("vault_") for name in tools):
            return view.say(
                "No note vault is configured: set ASSISTANT_VAULT to your vault folder "
                f"(or `vault = ...` in {self.config_path}).",
                f"还没有配置笔记库：请把 ASSISTANT_VAULT 设为笔记库文件夹（或在 {self.config_path} "
                "中设置 vault）。",
            )
        return view.say(
            f"I could not finish: the tool(s) I need ({names}) are not available right now.",
            f"我没能完成：需要的工具（{names}）现在不可用。",
        )

    def outside_grammar(self, view: PlannerView) -> str:
        examples = [example for intent in self.intents for example in intent.examples]
        listed = "\n".join(f"  - {example}" for example in examples)
        path = self.config_path
        return view.say(
            "I'm running offline (no model endpoint is configured), so I only understand a "
            f"small set of requests, such as:\n{listed}\nFor anything else, configure a model: "
            "set OPENAI_BASE_URL (plus OPENAI_API_KEY if the endpoint needs one) and "
            f"ASSISTANT_MODEL, or add a [model] section to {path}.",
            "我现在是离线模式（没有配置模型接口），只能理解少量固定句式，例如：\n"
            f"{listed}\n其他问题需要配置模型：设置环境变量 OPENAI_BASE_URL（需要时再设 "
            f"OPENAI_API_KEY）和 ASSISTANT_MODEL，或在 {path} 中添加 [model] 配置。",
        )
