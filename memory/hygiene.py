"""What must not become a long-term conclusion (issue 12, item 7).

A weak model's junk `memory_remember` calls (an empty text, "text", "...", the user's
own question echoed back) became active conclusions injected into every later prompt.
One rule for every way in: the memory tool refuses such a text with an error the model
sees, and the extractor drops it.
"""

from __future__ import annotations

import re

_PLACEHOLDERS = frozenset(
    {
        "",
        "text",
        "string",
        "str",
        "conclusion",
        "fact",
        "note",
        "memory",
        "value",
        "content",
        "none",
        "null",
        "n/a",
        "na",
        "todo",
        "tbd",
        "example",
        "placeholder",
        "something",
        "...",
        "…",
        "the conclusion",
        "the fact",
        "the conclusion in one self-contained sentence",
    }
)
_TOOL_NAME = re.compile(r"^(?:memory|vault|calc)_[a-z_]+$")
_TEMPLATE = re.compile(r"^[<{\[(].*[>}\])]$")
_WH_QUESTION = re.compile(  # "what is my dentist's name" (no question mark, still a question)
    r"^(?:what|who|whom|whose|which|when|where|why|how)(?:'s|\s+(?:is|are|was|were|do|does|"
    r"did|can|could|should|would|will|have|has|many|much))\b(?:\W+\w+){0,8}\W*$",
    re.IGNORECASE,
)
_CJK_QUESTION = re.compile(r"(?:吗|呢|什么|多少|几|哪|谁|怎么|为什么)[？?]?$")


def junk_reason(text: str | None) -> str | None:
    """Why `text` is not a conclusion worth storing, or None when it is one."""
    cleaned = " ".join((text or "").split())
    bare = cleaned.strip(" .!'\"`*-").lower()
    if not bare:
        return "the text is empty"
    if bare in _PLACEHOLDERS or _TOOL_NAME.match(bare) or _TEMPLATE.match(cleaned):
        return f"{cleaned!r} is a placeholder, not a conclusion"
    if len(re.findall(r"\w", bare)) < 3:
        return f"{cleaned!r} is too short to be a conclusion"
    if cleaned.rstrip().endswith(("?", "？")) or _WH_QUESTION.match(cleaned):
        return f"{cleaned!r} is a question, not a conclusion: store the answer or the fact"
    if _CJK_QUESTION.search(cleaned):
        return f"{cleaned!r} is a question, not a conclusion: store the answer or the fact"
    return None
