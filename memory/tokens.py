"""Token estimates for when the API reports no usage (offline planner, budgets).

A CJK character is roughly one token for current tokenizers, while English runs about
four characters a token; counting both the same way under-counts Chinese fourfold.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
MESSAGE_OVERHEAD = 4


def estimate_tokens(text: str) -> int:
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    rest = len(text) - cjk
    return cjk + (rest + 3) // 4


def estimate_message_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    total = 0
    for message in messages:
        total += MESSAGE_OVERHEAD + estimate_tokens(message.get("content") or "")
        if message.get("tool_calls"):
            total += estimate_tokens(json.dumps(message["tool_calls"], ensure_ascii=False))
    return total
