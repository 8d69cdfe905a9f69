"""`assistant trace`: a recorded turn as text a person can read."""

from __future__ import annotations

import json
import time
from typing import Any


def _when(timestamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp)) if timestamp else "?"


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"… (+{len(text) - limit} chars)"


def render_turn(turn: dict[str, Any]) -> str:
    lines = [
        f"turn {turn['id']}  session {turn['session']}  model {turn['model']}",
        f"started {_when(turn['started_at'])}  stop: {turn['stop_reason'] or 'unfinished'}"
        + (f" ({turn['stop_detail']})" if turn.get("stop_detail") else ""),
    ]
    if turn.get("trigger"):
        lines.append(f"trigger: {_short(turn['trigger'])}")
    lines.append(f"user: {turn['user_input']}")
    calls_by_request: dict[int, list[dict[str, Any]]] = {}
    for call in turn["tool_calls"]:
        calls_by_request.setdefault(call["request_idx"], []).append(call)
    for request in turn["requests"]:
        tools = ", ".join(request["tools"]) or "none (answer only)"
        lines.append(
            f"request {request['idx'] + 1}: {request['duration_ms']:.0f} ms, tools offered: {tools}"
        )
        if request["error"]:
            lines.append(f"  failed: {request['error']}")
        reply = request["reply"] or {}
        if reply.get("content"):
            lines.append(f"  reply: {_short(reply['content'])}")
        for call in calls_by_request.get(request["idx"], []):
            flags = [f for f in ("cached", "repaired", "truncated") if call[f]]
            flags += ["write"] if not call["read_only"] else []
            flags += ["dangerous"] if call["dangerous"] else []
            arguments = (
                call["arguments"] if call["arguments"] is not None else call["arguments_raw"]
            )
            lines.append(
                f"  -> {call['call_id']} {call['tool']} v{call['version'] or '?'} "
                f"{_short(arguments)}"
                f"  [{call['status']}, {call['duration_ms']:.1f} ms"
                + (f", {', '.join(flags)}" if flags else "")
                + "]"
            )
            lines.append(f"     result: {_short(call['result'])}")
    grounding = turn.get("grounding")
    if grounding:
        verdict = "; ".join(grounding["mismatches"]) or "answer agrees with the tool results"
        corrected = " (corrected)" if grounding.get("corrected") else ""
        lines.append(f"grounding check: {verdict}{corrected}")
    lines.append(f"answer: {turn['answer'] if turn['answer'] is not None else '(none)'}")
    usage = (
        f"tokens: {turn['prompt_tokens'] or 0} prompt + {turn['completion_tokens'] or 0} completion"
    )
    lines.append(usage + (" (estimated)" if turn.get("usage_estimated") else ""))
    return "\n".join(lines)
