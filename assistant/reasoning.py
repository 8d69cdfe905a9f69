"""Reasoning text kept apart from the answer (issue 12, item 8).

Reasoning models put their chain of thought either in a separate field
(`reasoning_content`: DeepSeek, vLLM's reasoning parsers; `reasoning`: newer vLLM,
OpenRouter) or inline as `<think>…</think>` blocks (Qwen3, R1 distills). Neither belongs
in the answer, in memory, in grounding or in summaries: it is kept for the trace and
shown only with -v. The streaming filter handles tags split across chunks.
"""

from __future__ import annotations

import re

OPEN, CLOSE = "<think>", "</think>"
_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)


def split_reasoning(text: str | None) -> tuple[str, str]:
    """(answer, reasoning) of a whole reply's content.

    A reply that closes a block it never opened (templates that put `<think>` in the
    prompt, as R1 distills do) has everything before the `</think>` as its reasoning.
    """
    if not text:
        return "", ""
    lowered = text.lower()
    reasoning: list[str] = []
    close = lowered.find(CLOSE)
    if close != -1 and lowered.find(OPEN, 0, close) == -1:
        reasoning.append(text[:close])
        text = text[close + len(CLOSE) :]
    for match in _BLOCK.finditer(text):
        inner = match.group(0)[len(OPEN) :]
        reasoning.append(inner[: -len(CLOSE)] if inner.lower().endswith(CLOSE) else inner)
    answer = _BLOCK.sub("", text)
    return answer.strip(), "\n".join(part.strip() for part in reasoning if part.strip())


class ThinkFilter:
    """Feeds streamed content through; hands back only what is outside think blocks.

    A piece that could be the start of a tag (`<thi`) is held back until the next piece
    says what it is, so a tag split across chunks never leaks.
    """

    def __init__(self) -> None:
        self._inside = False
        self._pending = ""
        self.reasoning: list[str] = []

    def feed(self, piece: str) -> str:
        text, self._pending = self._pending + piece, ""
        shown: list[str] = []
        while text:
            tag = CLOSE if self._inside else OPEN
            at = text.lower().find(tag)
            if at != -1:
                self._take(text[:at], shown)
                self._inside = not self._inside
                text = text[at + len(tag) :]
                continue
            keep = _partial_tag_suffix(text, tag)
            self._take(text[: len(text) - keep], shown)
            self._pending = text[len(text) - keep :]
            break
        return "".join(shown)

    def flush(self) -> str:
        """What is left at the end of the stream (a held-back piece that was no tag)."""
        rest, self._pending = self._pending, ""
        if self._inside:
            self.reasoning.append(rest)
            return ""
        return rest

    def _take(self, text: str, shown: list[str]) -> None:
        if text:
            (self.reasoning if self._inside else shown).append(text)


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    lowered = text.lower()
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(lowered[-size:]):
            return size
    return 0
