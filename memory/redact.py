"""Mask secrets and personal identifiers before text is stored or shown to a model (S4).

Masks keep the kind of what was removed ("[REDACTED:email]") so a reader of a trace knows
something was there. Patterns are data: callers add their own.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

# Words that say what state a password is in ("my password is wrong"), not what it is.
_PASSWORD_STATES = (
    "wrong|incorrect|correct|right|invalid|valid|expired|expiring|weak|strong|secure|"
    "insecure|safe|unsafe|short|long|empty|blank|missing|required|needed|set|unset|changed|"
    "reset|updated|saved|stored|locked|new|old|same|different|fine|ok|okay|good|bad|"
    "compromised|leaked|hacked|stolen|known|unknown|forgotten|lost|secret|private|encrypted|"
    "hashed|hidden|there|here|it|this|that|the|a|an|not|too|very|also|still|now|mine|yours|"
    "his|hers|easy|hard|simple|complicated|complex|protected|working|broken|temporary|"
    "written|ready|fixed|gone|none|null|nothing|something|what|which|case|sensitive"
)
_PASSWORD_WORDS = r"(?i:pass(?:word|wd|code|phrase)s?|pwd|pw)"
# where a one-word value ends: the end, clause punctuation, or a joining word
_CLAUSE_END = (
    r"(?=\s*(?:$|[.,;!?)\]\"'，。；！？、]|\s(?i:and|but|so|or|if|for|on|since|from|until|"
    r"because|yesterday|today|now)\b))"
)

DEFAULT_PATTERNS: dict[str, str] = {
    "private_key": r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
    "api_key": r"\b(?:sk|pk|rk)-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}\b"
    r"|\b(?:AKIA|ASIA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}\b"
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}\b|\bAIza[0-9A-Za-z_\-]{35}\b",
    "jwt": r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\b",
    "bearer": r"(?i:\bbearer\s+)[A-Za-z0-9._\-+/=]{16,}",
    "secret": r"(?P<keep>(?<![A-Za-z0-9_-])(?i:api[_-]?key|access[_-]?token|auth[_-]?token|"
    r"token|secret|password|passwd|pwd|密码|口令|密钥)(?:\s*(?:is|是|为))?\s*[:=：]?\s*)"
    r"(?![\[=:：])(?=[^\s\"',;，。]*[\d_\-!@#$%^&*])[^\s\"',;，。]{6,}",
    # a password given by its context, whatever it is made of: "pw: hunter", "my
    # password is correcthorsebatterystaple" (one word ending the clause, not a state such
    # as "wrong"), "密码是abcdefghzz", "口令：swordfish"
    "password": rf"(?P<keep>(?<![A-Za-z0-9_-]){_PASSWORD_WORDS}(?:\s+(?i:is|was))?\s*[:=：]\s*"
    r"[\"'“‘]?)(?![\[\s])"
    r"[^\s\"',;，。]{3,}"
    rf"|(?P<keep_to>(?<![A-Za-z0-9_-]){_PASSWORD_WORDS}\s+(?i:(?:is|was|has\s+been)\s+)?"
    r"(?i:set|changed|updated|reset)\s+to\s+[\"'“‘]?)(?![\[])[^\s\"',;，。]{3,}"
    rf"|(?P<keep_is>(?<![A-Za-z0-9_-]){_PASSWORD_WORDS}\s+(?i:is|was|has\s+been)\s+"
    r"(?i:now\s+|still\s+)?[\"'“‘]?)"
    rf"(?!(?i:{_PASSWORD_STATES})\b)(?![\[])[^\s\"',;，。]{{4,64}}{_CLAUSE_END}"
    r"|(?P<keep_zh>(?:密码|口令|暗号|密钥|通行码)(?:\s*(?:是|为|：|:|=|(?:已经)?(?:改成|改为|换成|变成|设成|设为|重置为)了?)\s*)+)(?![\[])"
    r"[!-~]{4,}",
    # AWS secret access keys: 40 characters of base64 (checked by `_aws_secret`: near an
    # access key id or the word "secret", or random-looking enough on their own)
    "aws_secret": r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    # bounded parts (RFC 5321: a local part <= 64, a label <= 63): an unbounded `+` here
    # made a megabyte without "@" (say "1+1+1+...") take quadratic time at every position
    "email": r"\b[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}"
    r"(?:\.[A-Za-z0-9\-]{1,63})*\.[A-Za-z]{2,}\b",
    # Chinese mobiles (138 0013 8000, +86...), E.164 and other "+" numbers, NANP numbers
    # (415-555-0132, (415) 555-0199, 415.555.0132: area and exchange codes start with
    # 2-9), UK national numbers (020 7946 0958, (020) 7946 0958, 07700 900123), French
    # ones (01 23 45 67 89) and Chinese landlines (010-12345678). Never inside a longer
    # run of digits, letters or dashes: dates, times, amounts and ids stay as they are.
    "phone": r"(?<![A-Za-z0-9])(?:(?:\+|00)?86[\s\-]?)?1[3-9]\d(?:[\s\-]?\d{4}){2}(?!\d)"
    r"|(?<![\w+])\+[1-9]\d{0,2}[\s.\-]?\(?\d{1,4}\)?(?:[\s.\-]?\d{2,4}){2,4}(?![\d\-])"
    r"|(?<![\w+\-/.$€£¥:])(?:1[\s.\-])?(?:\([2-9]\d{2}\)\s?|[2-9]\d{2}[\s.\-])[2-9]\d{2}"
    r"[\s.\-]\d{4}(?![\w\-/]|\.\d|:\d)"
    r"|(?<![\w+\-/.$€£¥:])0(?:\d{2}[\s\-]\d{4}[\s\-]\d{4}|\d{3}[\s\-]\d{3}[\s\-]\d{4}"
    r"|\d{4}[\s\-]\d{6}|\d{4}[\s\-]\d{3}[\s\-]\d{3}|\d{2,3}-\d{7,8}"
    r"|[1-9](?:[\s.\-]\d{2}){4})(?![\w\-/]|\.\d|:\d)"
    r"|(?<![\w+\-/.$€£¥:])\(0\d{2,4}\)\s?\d{3,4}[\s\-]?\d{3,4}(?![\w\-/]|\.\d|:\d)",
}

_AWS_CONTEXT = re.compile(r"(?i:aws|secret|access[\s_-]?key)|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_AWS_NEAR = 200


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _aws_secret(match: re.Match[str]) -> bool:
    """Is this 40-character run an AWS secret key? With an access key id or the words
    "aws"/"secret" near it, any mix of cases and digits is; on its own it must look
    random: upper and lower case and digits, and close to base64's entropy (a random
    key scores 4.2-5.0 bits a character; a SHA-1 in hex has no capitals)."""
    value = match.group()
    classes = sum(
        (
            any(c.isupper() for c in value),
            any(c.islower() for c in value),
            any(c.isdigit() for c in value),
        )
    )
    text = match.string
    around = text[max(match.start() - _AWS_NEAR, 0) : match.end() + _AWS_NEAR]
    if classes >= 2 and _AWS_CONTEXT.search(around.replace(value, " ")):
        return True
    return classes == 3 and _entropy(value) >= 4.2


# kinds whose regular expression only proposes: the check decides
_CHECKS: dict[str, Callable[[re.Match[str]], bool]] = {"aws_secret": _aws_secret}


_SCALARS = frozenset({int, float, bool, type(None)})


class Redactor:
    """All patterns run as one alternation: one pass over each string, not one per pattern."""

    def __init__(self, patterns: Mapping[str, str] | None = None, *, enabled: bool = True) -> None:
        merged = {**DEFAULT_PATTERNS, **(patterns or {})}
        self.enabled = enabled
        self.kinds = list(merged)
        self._combined = re.compile(
            "|".join(
                f"(?P<k{n}>{pattern.replace('(?P<keep', f'(?P<keep{n}_')})"
                for n, pattern in enumerate(merged.values())
            )
        )
        # the groups (`keep`, `keep_zh`...) each kind's mask keeps in front of it
        self._kept = [
            [name for name in self._combined.groupindex if name.startswith(f"keep{n}_")]
            for n in range(len(self.kinds))
        ]
        self._checks = [_CHECKS.get(kind) for kind in self.kinds]
        self._cache: dict[str, str] = {}

    def _mask(self, match: re.Match[str]) -> str:
        n = int(match.lastgroup[1:]) if match.lastgroup else 0
        check = self._checks[n]
        if check is not None and not check(match):
            return match.group()
        kept = next((match.group(g) for g in self._kept[n] if match.group(g)), "")
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
