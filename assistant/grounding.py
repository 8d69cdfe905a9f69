"""The second line of defence (SPEC L16): does the final answer agree with the tools?

The answer's numbers, dates and note paths are compared with what this turn's tools
returned and what the conversation already contains. A value the answer states that
appears nowhere, while a tool returned a close value of the same kind, is a
contradiction ("the answer says 41 but calc_evaluate returned 42"). Rounding and
reformatting (42.0 for 42, 3.33 for 3.3333) are not.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from tools.runner import CallOutcome

_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_PATH = re.compile(r"[\w\-./\u4e00-\u9fff]+\.md\b")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?%?(?![\w])")
_ENUMERATION = re.compile(r"(?m)^\s*\d+[.)、]\s")


def _parse_number(token: str) -> float | None:
    try:
        return float(token.replace(",", "").rstrip("%"))
    except ValueError:
        return None


@functools.lru_cache(maxsize=512)
def _numbers_in_text(text: str) -> tuple[tuple[str, float], ...]:
    """Cached: the system prompt and earlier messages are scanned again every turn."""
    text = _ENUMERATION.sub(" ", _PATH.sub(" ", _DATE.sub(" ", text)))
    found = []
    for match in _NUMBER.finditer(text):
        value = _parse_number(match.group())
        if value is not None:
            found.append((match.group(), value))
    return tuple(found)


def _walk(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _walk(item)
    else:
        yield value


def _list_lengths(value: Any) -> Iterator[float]:
    """A count the model may state ("3 notes") is the length of a list it was shown."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _list_lengths(item)
    elif isinstance(value, list | tuple):
        yield float(len(value))
        for item in value:
            yield from _list_lengths(item)


def _result_numbers(value: Any) -> list[float]:
    numbers: list[float] = list(_list_lengths(value))
    for leaf in _walk(value):
        if isinstance(leaf, bool):
            continue
        if isinstance(leaf, int | float):
            numbers.append(float(leaf))
        elif isinstance(leaf, str):
            numbers.extend(number for _, number in _numbers_in_text(leaf))
    return numbers


def _agrees(stated: str, claimed: float, known: float) -> bool:
    if abs(claimed - known) <= 1e-9 * max(1.0, abs(known)):
        return True
    digits = stated.rstrip("%")
    decimals = len(digits.split(".", 1)[1]) if "." in digits and "e" not in digits.lower() else 0
    if round(known, decimals) == claimed:
        return True
    if stated.endswith("%"):  # 25% for a tool's 0.25
        return round(known * 100, decimals) == claimed
    return False


def _close(claimed: float, known: float) -> bool:
    return 0 < abs(claimed - known) <= max(0.5 * abs(known), 1.0)


def check_answer(
    answer: str, outcomes: Sequence[CallOutcome], context_texts: Iterable[str]
) -> list[str]:
    """Return one sentence per contradiction; an empty list means the answer is grounded."""
    successful = [outcome for outcome in outcomes if outcome.ok]
    stated_numbers = _numbers_in_text(answer) if answer else ()
    if not successful or not (stated_numbers or _DATE.search(answer) or _PATH.search(answer)):
        return []  # nothing the answer states could contradict a tool
    tool_texts = [json.dumps(o.result, ensure_ascii=False, default=str) for o in successful]
    known_texts = [*context_texts, *tool_texts, *(o.arguments_raw for o in outcomes)]
    known_text = "\n".join(known_texts)
    known_numbers = [n for text in known_texts for _, n in _numbers_in_text(text)]
    for outcome in outcomes:
        known_numbers.extend(_result_numbers(outcome.result))
    by_tool = [(outcome.name, _result_numbers(outcome.result)) for outcome in successful]

    mismatches: list[str] = []
    for stated, claimed in stated_numbers:
        if any(_agrees(stated, claimed, known) for known in known_numbers):
            continue
        candidates = [
            (abs(claimed - number), name, number)
            for name, numbers in by_tool
            for number in numbers
            if _close(claimed, number)
        ]
        if candidates:
            _, name, number = min(candidates)
            shown = int(number) if number.is_integer() else number
            mismatches.append(f"your answer says {stated} but {name} returned {shown}")
    for pattern, kind in ((_DATE, "date"), (_PATH, "path")):
        tool_values = [
            (outcome.name, value)
            for outcome, text in zip(successful, tool_texts, strict=True)
            for value in pattern.findall(text)
        ]
        if not tool_values:
            continue
        for stated in set(pattern.findall(answer)):
            if stated in known_text:
                continue
            values = [value for _, value in tool_values]
            closest = difflib.get_close_matches(stated, values, n=1, cutoff=0.0)
            name = next(name for name, value in tool_values if value == closest[0])
            mismatches.append(
                f"your answer gives the {kind} {stated} but {name} returned {closest[0]}"
            )
    return mismatches


def corrective_note(mismatches: Sequence[str]) -> str:
    return (
        "[grounding check] "
        + "; ".join(mismatches)
        + ". Answer the user again, using exactly the values the tools returned."
    )
