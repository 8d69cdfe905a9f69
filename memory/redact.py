"""Mask secrets and personal identifiers before text is stored or shown to a model (S4).

Masks keep the kind of what was removed ("[REDACTED:email]") so a reader of a trace knows
something was there. Patterns are data: callers add their own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

DEFAULT_PATTERNS: dict[str, str] = {
    "private_key": r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    "api_key": r"\b(?:sk|pk|rk)-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}\b"
    r"|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}\b|\bxox[abprs]-[A-Za-z0-9\-]{10,}\b"
    r"|\bAIza[0-9A-Za-z_\-]{35}\b",
    "jwt": r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\b",
    "bearer": r"(?i:\bbearer\s+)[A-Za-z0-9._\-+/=]{16,}",
    "secret": r"(?P<keep>(?<![A-Za-z0-9_-])(?i:api[_-]?key|access[_-]?token|auth[_-]?token|"
    r"token|secret|password|passwd|pwd|密码|口令|密钥)(?:\s*(?:is|是|为))?\s*[:=：]?\s*)"
    r"(?![\[=:：])(?=[^\s\"',;，。]*[\d_\-!@#$%^&*])[^\s\"',;，。]{6,}",
    # bounded parts (RFC 5321: a local part <= 64, a label <= 63): an unbounded `+` here
    # made a megabyte without "@" (say "1+1+1+...") take quadratic time at every position
    "email": r"\b[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}"
    r"(?:\.[A-Za-z0-9\-]{1,63})*\.[A-Za-z]{2,}\b",
    "phone": r"(?<![A-Za-z0-9])(?:\+?86[\s\-]?)?1[3-9]\d(?:[\s\-]?\d{4}){2}(?!\d)"
    r"|(?<![A-Za-z0-9])\+\d{1,3}[\s\-]?\(?\d{1,4}\)?(?:[\s\-]?\d{2,4}){2,3}(?!\d)",
}


_SCALARS = frozenset({int, float, bool, type(None)})


class Redactor:
    """All patterns run as one alternation: one pass over each string, not one per pattern."""

    def __init__(self, patterns: Mapping[str, str] | None = None, *, enabled: bool = True) -> None:
        merged = {**DEFAULT_PATTERNS, **(patterns or {})}
        self.enabled = enabled
        self.kinds = list(merged)
        self._combined = re.compile(
            "|".join(
                f"(?P<k{n}>{pattern.replace('(?P<keep>', f'(?P<keep{n}>')})"
                for n, pattern in enumerate(merged.values())
            )
        )
        self._cache: dict[str, str] = {}

    def _mask(self, match: re.Match[str]) -> str:
        n = int(match.lastgroup[1:]) if match.lastgroup else 0
        kept = match.groupdict().get(f"keep{n}") or ""
        return f"{kept}[REDACTED:{self.kinds[n]}]"

    def text(self, value: str) -> str:
        if not self.enabled or not value:
            return value
        cached = self._cache.get(value)
        if cached is not None:
            return cached
        redacted = self._combined.sub(self._mask, value)
        if redacted != value:
            redacted = self._combined.sub(self._mask, redacted)
        if len(self._cache) > 2048:
            self._cache.clear()
        self._cache[value] = redacted
        return redacted

    def data(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (a copy; the value is not changed)."""
        if isinstance(value, str):
            return self.text(value)
        # leaves are handled inline, not by a call each (this walks every trace row; a
        # shared helper for the two comprehensions measured twice as slow)
        text = self.text
        if isinstance(value, dict):
            return {
                key: text(item)
                if type(item) is str
                else item
                if type(item) in _SCALARS
                else self.data(item)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [
                text(item)
                if type(item) is str
                else item
                if type(item) in _SCALARS
                else self.data(item)
                for item in value
            ]
        return value
