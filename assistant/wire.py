"""What our messages look like on the wire: the one place they are made acceptable to
real servers (issue 12, items 1, 2 and 8).

Stored history and the loop's messages stay in the OpenAI chat format we keep; before a
request leaves, `wire_messages` turns them into what strict servers accept:

- no `content: null` (llama-cpp-python answers 500 "Input should be a valid string" to an
  assistant tool-call message without content): `""` instead, for stored rows too;
- only the keys each role has in the API (no row ids), and no `<think>` blocks in past
  answers (Qwen3 documents that history carries the final answer only). DeepSeek's rule
  for `reasoning_content`: an answer's reasoning is not sent back, but the reasoning of
  an assistant message that made tool calls is (within the turn: stored history keeps
  no reasoning), unless the endpoint refused it;
- our context delivered the way the template can take it (`system_role`);
- optionally (`flatten`), tool calls and results written as plain text, for a server
  that rejects a stored history's tool messages: the session is repaired, not poisoned.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any, Literal

from assistant.model import Message
from assistant.reasoning import split_reasoning

SystemRole = Literal["system", "developer", "user"]

_KEYS = {
    "system": ("role", "content", "name"),
    "developer": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": ("role", "content", "name", "tool_calls"),
    "tool": ("role", "content", "tool_call_id"),
}
CONTEXT_HEADER = "Instructions and context for this conversation:"


def wire_messages(
    messages: Sequence[Message],
    system_role: SystemRole = "system",
    *,
    flatten: bool = False,
    tool_reasoning: bool = True,
) -> list[Message]:
    """The messages as sent: see the module docstring."""
    sent = [_clean(message, tool_reasoning and not flatten) for message in messages]
    if flatten:
        sent = _flattened(sent)
    if system_role == "developer":
        sent = [{**m, "role": "developer"} if m["role"] == "system" else m for m in sent]
    elif system_role == "user":
        sent = _context_in_first_user_message(sent)
    return sent


def _clean(message: Message, tool_reasoning: bool) -> Message:
    role = message.get("role", "user")
    clean = {key: message[key] for key in _KEYS.get(role, ("role", "content")) if key in message}
    if (
        tool_reasoning
        and role == "assistant"
        and message.get("tool_calls")
        and (message.get("reasoning_content"))
    ):
        clean["reasoning_content"] = message["reasoning_content"]
    content = clean.get("content")
    if content is None:
        clean["content"] = ""
    elif role == "assistant" and isinstance(content, str) and "think>" in content.lower():
        clean["content"] = split_reasoning(content)[0]
    if role == "assistant" and not clean.get("tool_calls"):
        clean.pop("tool_calls", None)  # an empty list is refused by some servers
    return clean


def _flattened(messages: list[Message]) -> list[Message]:
    """Tool calls and results as plain text, consecutive same-role messages merged, so a
    template that cannot take tool messages (or our stored ones) still gets the facts."""
    names: dict[str, str] = {}
    plain: list[Message] = []
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if role == "assistant" and message.get("tool_calls"):
            lines = [content] if content else []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                names[call.get("id", "")] = function.get("name", "tool")
                lines.append(f"(calling {function.get('name')} {function.get('arguments', '')})")
            plain.append({"role": "assistant", "content": "\n".join(lines)})
        elif role == "tool":
            name = names.get(message.get("tool_call_id", ""), "a tool")
            plain.append({"role": "user", "content": f"[result of {name}] {content}"})
        else:
            plain.append({"role": role, "content": content})
    merged: list[Message] = []
    for message in plain:
        if merged and merged[-1]["role"] == message["role"] != "system":
            merged[-1] = {
                **merged[-1],
                "content": f"{merged[-1]['content']}\n\n{message['content']}",
            }
        else:
            merged.append(message)
    return merged


def _context_in_first_user_message(messages: list[Message]) -> list[Message]:
    """For templates that drop system messages (llama-cpp-python's `gemma`): every
    system message's text goes at the head of the first user message."""
    context = [m["content"] for m in messages if m["role"] == "system" and m["content"]]
    rest = [m for m in messages if m["role"] != "system"]
    if not context:
        return rest
    block = CONTEXT_HEADER + "\n" + "\n\n".join(context)
    for index, message in enumerate(rest):
        if message["role"] == "user":
            rest[index] = {**message, "content": f"{block}\n\n---\n\n{message['content']}"}
            return rest
    return [{"role": "user", "content": block}, *rest]


def clean_arguments(raw: str | None) -> str:
    """Tool-call arguments as JSON text: some servers HTML-escape the quotes
    (`{&quot;expression&quot;: …}`); unescaped only when that is what makes it JSON."""
    raw = raw or ""
    if "&" not in raw:
        return raw
    try:
        json.loads(raw)
        return raw
    except ValueError:
        pass
    unescaped = html.unescape(raw)
    try:
        json.loads(unescaped)
    except ValueError:
        return raw
    return unescaped


def request_tokens_hint(messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None) -> str:
    """The text whose size estimates a request's prompt (messages and tool schemas)."""
    parts = [m.get("content") or "" for m in messages]
    parts += [json.dumps(m["tool_calls"]) for m in messages if m.get("tool_calls")]
    if tools:
        parts.append(json.dumps(list(tools)))
    return "\n".join(parts)
