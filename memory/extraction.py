"""Rule-based extraction of conclusions (SPEC M9, the offline half).

Without a model, only what people say in recognisable shapes becomes memory: an explicit
"remember that …" / "记住…", a preference ("I prefer …" / "我更喜欢…"), a decision
("we decided …" / "我们决定…"), and "my X is Y" / "我的X是Y", whose X becomes the
subject so that a later "my X is Z" supersedes it.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

MAX_TEXT_CHARS = 1000  # the longest conclusion kept


class Candidate(BaseModel):
    """One conclusion worth keeping; also the schema a model fills in (structured output)."""

    text: str = Field(
        min_length=1, max_length=MAX_TEXT_CHARS, description="The conclusion, self-contained."
    )
    kind: str = Field("fact", pattern="^(fact|preference|decision|note)$")
    subject: str | None = Field(
        None, max_length=80, description="What it is about, when a later value may replace it."
    )
    tags: list[str] = Field(default_factory=list)


class Extracted(BaseModel):
    conclusions: list[Candidate] = Field(default_factory=list)


_REMEMBER = re.compile(
    r"^\s*(?:please\s+|pls\s+)?(?:remember|note|keep in mind)(?:\s+that)?\s*[:,：，]?\s*"
    r"(?P<body>.+)$"
    r"|^\s*(?:请|麻烦)?(?:帮我)?(?:记住|记一下|记下|别忘了)(?:一下)?\s*[:：,，]?\s*(?P<zh>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_PREFERENCE = re.compile(
    r"\bI\s+(?:really\s+)?(?:prefer|like|love|enjoy|hate|dislike|don't like|do not like)\b"
    r"|我(?:更|比较|很|最)?(?:喜欢|偏好|爱|讨厌|不喜欢|倾向)",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\bwe(?:'ve| have)?\s+(?:decided|agreed|chose|chosen|settled)\b|\blet'?s go with\b"
    r"|我们(?:决定|定了|商定|选定|确定|同意)|决定了|就这么定",
    re.IGNORECASE,
)
_MY_X_IS = re.compile(
    r"^(?:my|our)\s+(?P<subject>[a-z][\w' -]{0,40}?)\s+(?:is|are|was|=)\s+(?P<value>.+)$",
    re.IGNORECASE,
)
_ZH_MY_X_IS = re.compile(
    r"^(?:我的|我们的)(?P<subject>[^，。,\s]{1,12}?)(?:是|叫|为|在)(?P<value>.+)$"
)
_TRAILING = re.compile(r"[\s。.!！]+$")


def classify(text: str) -> Candidate:
    """Kind and subject of a statement the user wants kept."""
    body = _TRAILING.sub("", text.strip())
    subject = None
    for pattern in (_MY_X_IS, _ZH_MY_X_IS):
        match = pattern.match(body)
        if match:
            subject = match.group("subject").strip()
            break
    if _DECISION.search(body):
        kind = "decision"
    elif _PREFERENCE.search(body):
        kind = "preference"
    else:
        kind = "fact"
    return Candidate(text=body, kind=kind, subject=subject)


def explicit_request(text: str) -> Candidate | None:
    """ "remember that X" / "记住X": what to keep, or None when the text asks nothing."""
    match = _REMEMBER.match(text.strip())
    if not match:
        return None
    body = (match.group("body") or match.group("zh") or "").strip()
    return classify(body) if body else None


_NOT_A_STATEMENT = re.compile(
    r"^\s*(?:please\s+)?(?:forget|what|who|where|when|why|how|do you|did we|can you|could you)\b"
    r"|^\s*(?:请|帮我)?(?:忘掉|忘记|删除记忆|别再记得)|^\s*(?:关于|你还?记得)",
    re.IGNORECASE,
)


def from_user_message(text: str) -> list[Candidate]:
    """Conclusions a user message states on its own (used when a span is summarised).

    Requests and questions ("forget that I prefer tea", "what do you know about …") are
    not statements, even when they quote one."""
    if _NOT_A_STATEMENT.search(text) or len(text.strip()) > MAX_TEXT_CHARS:
        return []  # a long message is not one crisp conclusion (and would not fit one)
    explicit = explicit_request(text)
    if explicit is not None:
        return [explicit]
    candidate = classify(text)
    if len(candidate.text) > 300 or candidate.text.endswith(("?", "？", "吗", "呢")):
        return []
    if candidate.kind in {"preference", "decision"} or candidate.subject:
        return [candidate]
    return []
