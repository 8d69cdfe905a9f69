"""The evaluation harness (SPEC E1, E2): run a file of cases against the configured model
(an `OPENAI_*` endpoint or the offline planner) and say, per category, how many passed.

Why it exists: prompts, tools and the planner change; these cases are the regression net
that says whether the assistant still calls a tool when it should, does not when it should
not, and answers with the right number, path or memory.

Case file
---------
JSON (`.json`) or YAML (`.yaml`, `.yml`): a list of cases, or a mapping
`{vault: ../vault_example, cases: [...]}` where `vault` (relative to the file) is the
folder copied for vault cases. A case::

    - id: calc-zh-add                # unique in the file
      category: pure_calculation     # free text; results are grouped by it
      input: 15加27等于多少            # exactly one of `input`, `turns`, `sessions`
      expect_tool: calc_evaluate     # with `input`, expectations sit on the case
      expect_number: 42

    - id: switch-zh
      category: multi_turn
      turns:                         # several turns of one session
        - 15加27等于多少               # a bare string: a turn checked only for its stop reason
        - input: 如果换成 20 加 30 呢   # a mapping: a turn with its own expectations
          expect_number: 50

    - id: dentist
      category: memory
      sessions:                      # sessions in order, each a list of turns as above;
        - [remember that my dentist is Dr. Li]   # each session but the last is ended (M9)
        - - input: what do you know about my dentist?   # before the next one starts
            expect_answer_contains: [Dr. Li]

Expectations (every one optional):

    expect_tool_call: true | false    whether the turn called any tool
    expect_tool: name | [names]       each named tool was called in the turn; an item that is
                                      itself a list means "any of these"
    expect_answer_contains: [texts]   each text is in the answer (case-insensitive, full-width
                                      folded); an item that is a list means "any of these"
    expect_answer_not_contains: [texts]
    expect_number: 42 | [numbers]     each number is among the numbers in the answer, compared
                                      as floats within 1e-6 (or 1e-9 relative, for huge ones)
    expect_stop_reason: final         the default, checked on every turn

Expected texts may say `{today}` (2026-11-30) or `{iso_week}` (2026-W49): the date of the run.

Other keys: `description` (free text); `vault: true|false` (default: category `vault`) gives
the case a fresh copy of the vault as `ASSISTANT_VAULT` (other cases get no vault at all);
`offline: expected_fail` marks a case outside the offline planner's grammar and
`offline: known_gap` a case inside it that fails for a recorded reason; both need
`offline_reason`. The marks count only when the offline planner answers: such a case failing
is reported separately, not as a regression, and one passing is reported so its mark can go.

Each case runs in-process on its own temporary data directory (`ASSISTANT_HOME`), so memory
cannot leak from one case into another; a case is skipped (not failed) when the assistant
does not register a tool it expects, e.g. vault tools with no vault wiring.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import shutil
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.errors import AssistantError
from assistant.outcome import StopReason

if TYPE_CHECKING:
    from assistant.app import Assistant
    from assistant.config import Settings
    from assistant.outcome import TurnOutcome

NUMBER_TOLERANCE = 1e-6  # absolute (SPEC E1)
LARGE_NUMBER_TOLERANCE = 1e-9  # relative: from ~1e10 on, neighbouring floats are > 1e-6 apart
DEFAULT_VAULT = Path(__file__).resolve().parent.parent / "vault_example"
OFFLINE_MARKS = ("expected_fail", "known_gap")
STOP_REASONS = tuple(reason.value for reason in StopReason)
_EXPECT_KEYS = frozenset(
    {
        "expect_tool_call",
        "expect_tool",
        "expect_answer_contains",
        "expect_answer_not_contains",
        "expect_number",
        "expect_stop_reason",
    }
)
_CASE_KEYS = frozenset(
    {"id", "category", "description", "input", "turns", "sessions", "vault", "offline"}
    | {"offline_reason"}
)
_TURN_KEYS = _EXPECT_KEYS | {"input"}
# a minus sign counts only when it is not an operator between two operands ("7-12 = -5")
_NUMBER = re.compile(
    r"(?P<sign>(?<![\w)\]])-)?"
    r"(?P<body>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:[eE](?P<exp>[+-]?\d+)\b)?"
)

AssistantFactory = Callable[["Settings"], "Assistant"]


class CaseFileError(AssistantError):
    """The case file cannot be read or a case is malformed; the message names which."""


class CaseStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    EXPECTED_FAIL = "expected_fail"  # offline, outside its grammar, failed as marked
    KNOWN_GAP = "known_gap"  # offline, inside its grammar, fails for a recorded reason
    UNEXPECTED_PASS = "unexpected_pass"  # offline, marked, but passed: drop the mark
    SKIPPED = "skipped"  # the assistant does not register a tool the case needs


# -- the case format ----------------------------------------------------------------------


@dataclass(frozen=True)
class Expectations:
    """What one turn must show; `tools` and `contains` hold groups of alternatives."""

    tool_call: bool | None = None
    tools: tuple[tuple[str, ...], ...] = ()
    contains: tuple[tuple[str, ...], ...] = ()
    not_contains: tuple[str, ...] = ()
    numbers: tuple[float, ...] = ()
    stop_reason: str = "final"


@dataclass(frozen=True)
class TurnSpec:
    input: str
    expect: Expectations = field(default_factory=Expectations)


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    sessions: tuple[tuple[TurnSpec, ...], ...]
    vault: bool = False
    offline: str | None = None
    offline_reason: str | None = None
    description: str = ""

    @property
    def turns(self) -> list[TurnSpec]:
        return [turn for session in self.sessions for turn in session]

    def needed_tools(self) -> list[tuple[str, ...]]:
        """Groups of alternatives; the case cannot pass unless each group has one tool."""
        return [group for turn in self.turns for group in turn.expect.tools]


@dataclass(frozen=True)
class CaseFile:
    path: Path
    cases: tuple[Case, ...]
    vault: Path | None = None


def _where(path: Path, case_id: str | None, turn: str | None = None) -> str:
    where = f"{path}: case {case_id!r}" if case_id else str(path)
    return f"{where}, {turn}" if turn else where


def _alternatives(value: Any, key: str, where: str) -> tuple[tuple[str, ...], ...]:
    items = value if isinstance(value, list) else [value]
    groups = []
    for item in items:
        options = item if isinstance(item, list) else [item]
        if not options or not all(isinstance(o, str | int | float) for o in options):
            raise CaseFileError(f"{where}: {key} takes texts or lists of texts, got {item!r}")
        groups.append(tuple(str(o) for o in options))
    return tuple(groups)


def _expectations(raw: Mapping[str, Any], where: str) -> Expectations:
    tool_call = raw.get("expect_tool_call")
    if tool_call is not None and not isinstance(tool_call, bool):
        raise CaseFileError(f"{where}: expect_tool_call must be true or false")
    tools = _alternatives(raw["expect_tool"], "expect_tool", where) if "expect_tool" in raw else ()
    if tools and tool_call is False:
        raise CaseFileError(f"{where}: expect_tool contradicts expect_tool_call: false")
    contains = ()
    if "expect_answer_contains" in raw:
        contains = _alternatives(raw["expect_answer_contains"], "expect_answer_contains", where)
    not_contains: tuple[str, ...] = ()
    if "expect_answer_not_contains" in raw:
        groups = _alternatives(
            raw["expect_answer_not_contains"], "expect_answer_not_contains", where
        )
        not_contains = tuple(text for group in groups for text in group)
    numbers_raw = raw.get("expect_number", [])
    numbers_list = numbers_raw if isinstance(numbers_raw, list) else [numbers_raw]
    numbers = []
    for number in numbers_list:
        if isinstance(number, bool) or not isinstance(number, int | float | str):
            raise CaseFileError(f"{where}: expect_number takes numbers, got {number!r}")
        try:
            numbers.append(float(number))
        except ValueError:
            raise CaseFileError(f"{where}: expect_number takes numbers, got {number!r}") from None
    stop_reason = raw.get("expect_stop_reason", "final")
    if stop_reason not in STOP_REASONS:
        raise CaseFileError(
            f"{where}: expect_stop_reason {stop_reason!r} is not one of {', '.join(STOP_REASONS)}"
        )
    return Expectations(
        tool_call=tool_call,
        tools=tools,
        contains=contains,
        not_contains=not_contains,
        numbers=tuple(numbers),
        stop_reason=stop_reason,
    )


def _turn(raw: Any, where: str) -> TurnSpec:
    if isinstance(raw, str):
        raw = {"input": raw}
    if not isinstance(raw, dict):
        raise CaseFileError(f"{where}: a turn is a text or a mapping with `input`, got {raw!r}")
    unknown = sorted(set(raw) - _TURN_KEYS)
    if unknown:
        raise CaseFileError(f"{where}: unknown key(s) {', '.join(unknown)} in a turn")
    text = raw.get("input")
    if not isinstance(text, str) or not text.strip():
        raise CaseFileError(f"{where}: a turn needs a non-empty `input` text")
    return TurnSpec(text, _expectations(raw, where))


def _case(raw: Any, path: Path, index: int) -> Case:
    if not isinstance(raw, dict):
        raise CaseFileError(f"{path}: case #{index + 1} is not a mapping")
    case_id = raw.get("id")
    if not isinstance(case_id, str | int) or not str(case_id).strip():
        raise CaseFileError(f"{path}: case #{index + 1} has no `id`")
    case_id = str(case_id)
    where = _where(path, case_id)
    unknown = sorted(set(raw) - _CASE_KEYS - _EXPECT_KEYS)
    if unknown:
        raise CaseFileError(f"{where}: unknown key(s) {', '.join(unknown)}")
    category = raw.get("category")
    if not isinstance(category, str) or not category.strip():
        raise CaseFileError(f"{where}: `category` is missing")
    forms = [key for key in ("input", "turns", "sessions") if key in raw]
    if len(forms) != 1:
        raise CaseFileError(f"{where}: give exactly one of `input`, `turns`, `sessions`")
    case_expectations = {key: raw[key] for key in _EXPECT_KEYS if key in raw}
    if forms[0] == "input":
        sessions = [[_turn({"input": raw["input"], **case_expectations}, where)]]
    else:
        if case_expectations:
            raise CaseFileError(
                f"{where}: with `{forms[0]}`, put expectations on the turns they check"
            )
        raw_sessions = [raw["turns"]] if forms[0] == "turns" else raw["sessions"]
        if not isinstance(raw_sessions, list) or not raw_sessions:
            raise CaseFileError(f"{where}: `{forms[0]}` must be a non-empty list")
        sessions = []
        for s, raw_turns in enumerate(raw_sessions, start=1):
            if not isinstance(raw_turns, list) or not raw_turns:
                raise CaseFileError(f"{where}: session {s} must be a non-empty list of turns")
            sessions.append(
                [_turn(t, f"{where}, session {s} turn {n}") for n, t in enumerate(raw_turns, 1)]
            )
    offline = raw.get("offline")
    reason = raw.get("offline_reason")
    if offline is not None and offline not in OFFLINE_MARKS:
        raise CaseFileError(f"{where}: `offline` is one of {', '.join(OFFLINE_MARKS)}")
    if offline and not (isinstance(reason, str) and reason.strip()):
        raise CaseFileError(f"{where}: `offline: {offline}` needs an `offline_reason`")
    vault = raw.get("vault", category == "vault")
    if not isinstance(vault, bool):
        raise CaseFileError(f"{where}: `vault` must be true or false")
    return Case(
        id=case_id,
        category=category.strip(),
        sessions=tuple(tuple(turns) for turns in sessions),
        vault=vault,
        offline=offline,
        offline_reason=reason.strip() if isinstance(reason, str) else None,
        description=str(raw.get("description") or ""),
    )


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CaseFileError(f"{path}: cannot read the case file: {exc.strerror}") from exc
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise CaseFileError(f"{path}: not valid JSON: {exc}") from exc
    if suffix in {".yaml", ".yml"}:
        import yaml  # installed with python-frontmatter; only eval needs it

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CaseFileError(f"{path}: not valid YAML: {exc}") from exc
    raise CaseFileError(f"{path}: a case file ends in .json, .yaml or .yml")


def load_cases(path: str | Path) -> CaseFile:
    """Parse and check the whole file first: a typo should fail fast, not after 30 cases."""
    path = Path(path)
    data = _read(path)
    vault = None
    if isinstance(data, dict):
        unknown = sorted(set(data) - {"cases", "vault"})
        if unknown:
            raise CaseFileError(f"{path}: unknown top-level key(s) {', '.join(unknown)}")
        if data.get("vault") is not None:
            vault = (path.parent / str(data["vault"])).resolve()
        data = data.get("cases")
    if not isinstance(data, list) or not data:
        raise CaseFileError(f"{path}: expected a non-empty list of cases (or a `cases` list)")
    cases = [_case(raw, path, index) for index, raw in enumerate(data)]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise CaseFileError(f"{path}: the id {case.id!r} is used twice")
        seen.add(case.id)
    return CaseFile(path=path, cases=tuple(cases), vault=vault)


def load_case_files(paths: Iterable[str | Path]) -> list[CaseFile]:
    return [load_cases(path) for path in paths]


# -- checking one turn ----------------------------------------------------------------------


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def numbers_in(text: str) -> list[float]:
    """Every number the text states; "1,024" counts as 1024 (and as 1 and 24)."""
    text = unicodedata.normalize("NFKC", text).replace("−", "-")
    found: list[float] = []
    for match in _NUMBER.finditer(text):
        body = match.group("body")
        sign = -1.0 if match.group("sign") else 1.0
        scale = 10.0 ** int(match.group("exp")) if match.group("exp") else 1.0
        try:
            found.append(sign * float(body.replace(",", "")) * scale)
        except OverflowError:
            continue
        if "," in body:
            found.extend(float(part) for part in body.split(",") if part)
    return found


def same_number(found: float, expected: float) -> bool:
    return math.isclose(found, expected, rel_tol=LARGE_NUMBER_TOLERANCE, abs_tol=NUMBER_TOLERANCE)


def placeholders(now: dt.datetime | None = None) -> dict[str, str]:
    """Values for expected texts that depend on the day the eval runs."""
    now = now or dt.datetime.now().astimezone()
    year, week, _ = now.isocalendar()
    return {"{today}": now.strftime("%Y-%m-%d"), "{iso_week}": f"{year}-W{week:02d}"}


def _fill(text: str, values: Mapping[str, str]) -> str:
    for token, value in values.items():
        text = text.replace(token, value)
    return text


def _shown(number: float) -> str:
    return f"{number:.12g}"


def check_turn(
    expect: Expectations, outcome: TurnOutcome, values: Mapping[str, str] | None = None
) -> list[str]:
    """Each unmet expectation as one sentence; an empty list means the turn passed."""
    values = placeholders() if values is None else values
    failures = []
    stop = str(outcome.stop_reason)
    if stop != expect.stop_reason:
        detail = f" ({outcome.stop_detail})" if outcome.stop_detail else ""
        failures.append(f"stopped with {stop}{detail}, expected {expect.stop_reason}")
    called = [call.name for call in outcome.tool_calls]
    shown_calls = ", ".join(called) or "none"
    if expect.tool_call is True and not called:
        failures.append("expected a tool call, none was made")
    if expect.tool_call is False and called:
        failures.append(f"expected no tool call, got: {shown_calls}")
    for options in expect.tools:
        if not any(name in called for name in options):
            failures.append(f"expected a call to {' or '.join(options)}, got: {shown_calls}")
    answer = _fold(outcome.answer or "")
    for options in expect.contains:
        filled = [_fill(option, values) for option in options]
        if not any(_fold(option) in answer for option in filled):
            wanted = " or ".join(repr(option) for option in filled)
            failures.append(f"the answer does not contain {wanted}")
    for text in expect.not_contains:
        filled_text = _fill(text, values)
        if _fold(filled_text) in answer:
            failures.append(f"the answer contains {filled_text!r}, which it must not")
    if expect.numbers:
        stated = numbers_in(outcome.answer or "")
        for number in expect.numbers:
            if not any(same_number(found, number) for found in stated):
                listed = ", ".join(_shown(n) for n in stated[:12]) or "none"
                failures.append(
                    f"the answer does not state the number {_shown(number)} (numbers in it: "
                    f"{listed})"
                )
    return failures


# -- results --------------------------------------------------------------------------------


@dataclass
class ToolCallTrace:
    name: str
    arguments: Any
    status: str
    result: Any

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arguments": self.arguments,
            "status": self.status,
            "result": self.result,
        }


@dataclass
class TurnTrace:
    session: int
    input: str
    turn_id: str | None = None
    answer: str = ""
    stop_reason: str | None = None
    stop_detail: str | None = None
    requests: int = 0
    tool_calls: list[ToolCallTrace] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, session: int, text: str, outcome: TurnOutcome) -> TurnTrace:
        return cls(
            session=session,
            input=text,
            turn_id=outcome.turn_id,
            answer=outcome.answer or "",
            stop_reason=str(outcome.stop_reason),
            stop_detail=outcome.stop_detail,
            requests=outcome.requests,
            tool_calls=[
                ToolCallTrace(
                    call.name,
                    call.arguments if call.arguments is not None else call.arguments_raw,
                    call.status,
                    call.result,
                )
                for call in outcome.tool_calls
            ],
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "turn_id": self.turn_id,
            "input": self.input,
            "answer": self.answer,
            "stop_reason": self.stop_reason,
            "stop_detail": self.stop_detail,
            "requests": self.requests,
            "tool_calls": [call.as_dict() for call in self.tool_calls],
            "failures": self.failures,
        }


@dataclass
class CaseResult:
    case: Case
    status: CaseStatus
    reasons: list[str] = field(default_factory=list)
    turns: list[TurnTrace] = field(default_factory=list)
    offline: bool = False
    model: str | None = None

    @property
    def in_grammar(self) -> bool:
        """Whether the case counts towards the pass rate (marks apply offline only)."""
        return not (self.offline and self.case.offline)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.case.id,
            "category": self.case.category,
            "status": str(self.status),
            "in_grammar": self.in_grammar,
            "reasons": self.reasons,
            "offline_mark": self.case.offline,
            "offline_reason": self.case.offline_reason,
            "turns": [turn.as_dict() for turn in self.turns],
        }


def _counts(results: Iterable[CaseResult]) -> dict[str, Any]:
    results = list(results)

    def count(status: CaseStatus) -> int:
        return sum(1 for result in results if result.status is status)

    passed, failed = count(CaseStatus.PASSED), count(CaseStatus.FAILED)
    scored = passed + failed
    return {
        "cases": len(results),
        "passed": passed,
        "failed": failed,
        "scored": scored,
        "pass_rate": round(passed / scored, 4) if scored else None,
        "outside_grammar": count(CaseStatus.EXPECTED_FAIL),
        "known_gaps": count(CaseStatus.KNOWN_GAP),
        "unexpected_passes": count(CaseStatus.UNEXPECTED_PASS),
        "skipped": count(CaseStatus.SKIPPED),
    }


@dataclass
class EvalReport:
    """`scored` cases are the ones the pass rate is over: passed + failed."""

    sources: list[str]
    model: str
    offline: bool
    results: list[CaseResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(result.status is CaseStatus.FAILED for result in self.results)

    def summary(self) -> dict[str, Any]:
        return _counts(self.results)

    def categories(self) -> dict[str, dict[str, Any]]:
        names = sorted({result.case.category for result in self.results})
        return {name: _counts(r for r in self.results if r.case.category == name) for name in names}

    def headline(self) -> str:
        """One line: what passed, and what was set aside and why."""
        total = self.summary()
        if self.offline:
            parts = [
                f"offline planner: {total['passed']}/{total['scored']} in grammar passed",
                f"{total['outside_grammar']} outside its grammar (failed as expected)",
            ]
            if total["known_gaps"]:
                parts.append(f"{total['known_gaps']} known gaps (failing, marked known_gap)")
            if total["unexpected_passes"]:
                parts.append(
                    f"{total['unexpected_passes']} marked cases passed (remove their mark)"
                )
        else:
            rate = f" ({total['pass_rate']:.1%})" if total["pass_rate"] is not None else ""
            parts = [f"{self.model}: {total['passed']}/{total['scored']} passed{rate}"]
        if total["skipped"]:
            parts.append(f"{total['skipped']} skipped")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sources": self.sources,
            "model": self.model,
            "offline": self.offline,
            "ok": self.ok,
            "headline": self.headline(),
            "summary": self.summary(),
            "categories": self.categories(),
            "results": [result.as_dict() for result in self.results],
        }


# -- running --------------------------------------------------------------------------------


def _default_factory(settings: Settings) -> Assistant:
    from assistant.app import Assistant

    return Assistant(settings, role="eval")


def case_settings(base: Settings, home: Path, vault: Path | None) -> Settings:
    """The configured model and limits, with this case's own data directory and vault.

    A Chroma server from the config would be shared by every case (memory would leak from
    one to the next), so an eval always keeps vectors in the case's folder.
    """
    settings = base.model_copy(deep=True)
    settings.home = home
    settings.vault = vault
    settings.memory.chroma_host = None
    return settings


def _missing_tools(case: Case, registered: Collection[str]) -> list[str]:
    missing = [
        " or ".join(group)
        for group in case.needed_tools()
        if not any(name in registered for name in group)
    ]
    if case.vault and not any(name.startswith("vault_") for name in registered):
        missing.append("vault_* tools")
    return list(dict.fromkeys(missing))


def _settle(case: Case, offline: bool, failed: bool) -> CaseStatus:
    if offline and case.offline:
        if not failed:
            return CaseStatus.UNEXPECTED_PASS
        return CaseStatus.EXPECTED_FAIL if case.offline == "expected_fail" else CaseStatus.KNOWN_GAP
    return CaseStatus.FAILED if failed else CaseStatus.PASSED


def _drive(case: Case, assistant: Assistant, result: CaseResult, values: Mapping[str, str]) -> None:
    last = len(case.sessions)
    for number, turns in enumerate(case.sessions, start=1):
        session = f"eval-{case.id}-{number}"
        for index, spec in enumerate(turns, start=1):
            outcome = assistant.ask(spec.input, session=session)
            trace = TurnTrace.of(number, spec.input, outcome)
            trace.failures = check_turn(spec.expect, outcome, values)
            result.turns.append(trace)
            where = f"session {number} turn {index}" if last > 1 else f"turn {index}"
            result.reasons += [f"{where}: {failure}" for failure in trace.failures]
        if number < last and outcome.ok:
            assistant.end_session(session)  # what a session concluded outlives it (M9)


def run_case(
    case: Case,
    settings: Settings,
    *,
    vault_source: Path | None = None,
    factory: AssistantFactory | None = None,
    values: Mapping[str, str] | None = None,
) -> CaseResult:
    """One case, on a fresh temporary data directory (and vault copy) deleted afterwards."""
    factory = factory or _default_factory
    values = placeholders() if values is None else values
    result = CaseResult(case, CaseStatus.PASSED, offline=settings.model.offline)
    with tempfile.TemporaryDirectory(prefix="assistant-eval-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        vault = None
        if case.vault:
            source = vault_source or DEFAULT_VAULT
            if not source.is_dir():
                result.status = CaseStatus.FAILED
                result.reasons.append(f"the vault to copy, {source}, is not a folder")
                return result
            vault = root / "vault"
            shutil.copytree(source, vault, symlinks=True)
        try:
            assistant = factory(case_settings(settings, root / "home", vault))
        except Exception as exc:  # noqa: BLE001 - one broken case must not hide the others
            result.status = CaseStatus.FAILED
            result.reasons.append(f"could not start the assistant: {type(exc).__name__}: {exc}")
            return result
        try:
            result.offline, result.model = assistant.offline, assistant.model.name
            missing = _missing_tools(case, assistant.registry.names())
            if missing:
                result.status = CaseStatus.SKIPPED
                result.reasons.append(
                    f"needs {', '.join(missing)}, which this assistant does not register"
                )
                return result
            try:
                _drive(case, assistant, result, values)
            except Exception as exc:  # noqa: BLE001 - reported as this case's failure
                # a crash is a failure even in a case marked for the offline planner
                result.status = CaseStatus.FAILED
                result.reasons.append(f"the turn raised {type(exc).__name__}: {exc}")
                return result
        finally:
            assistant.close()
    result.status = _settle(case, result.offline, bool(result.reasons))
    return result


def run_eval(
    files: Iterable[CaseFile],
    settings: Settings,
    *,
    categories: Collection[str] | None = None,
    vault_source: Path | None = None,
    factory: AssistantFactory | None = None,
    on_result: Callable[[CaseResult], None] | None = None,
) -> EvalReport:
    """Run every case (of the chosen categories) in order; cases share nothing."""
    files = list(files)
    values = placeholders()
    model = "offline-planner" if settings.model.offline else settings.model.name
    report = EvalReport([str(f.path) for f in files], model, settings.model.offline)
    for case_file in files:
        for case in case_file.cases:
            if categories and case.category not in categories:
                continue
            result = run_case(
                case,
                settings,
                vault_source=vault_source or case_file.vault,
                factory=factory,
                values=values,
            )
            report.results.append(result)
            if on_result is not None:
                on_result(result)
    built = next((r for r in report.results if r.model is not None), None)
    if built is not None:  # the model the assistant really ran, which a factory may choose
        report.model, report.offline = built.model or model, built.offline
    return report


# -- showing the report ---------------------------------------------------------------------


def _clip(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rate(counts: Mapping[str, Any]) -> str:
    rate = counts["pass_rate"]
    return "-" if rate is None else f"{rate:.0%}"


def trace_lines(result: CaseResult, *, answer_chars: int = 300) -> list[str]:
    """The trace summary of one case: each turn's tool calls and answer."""
    lines = []
    for trace in result.turns:
        head = f"  [session {trace.session}] " if len(result.case.sessions) > 1 else "  "
        lines.append(f"{head}> {trace.input}   ({trace.turn_id}, {trace.stop_reason})")
        for call in trace.tool_calls:
            lines.append(
                f"      {call.name} {_clip(call.arguments, 120)} -> {call.status} "
                f"{_clip(call.result, 160)}"
            )
        lines.append(f"      answer: {_clip(trace.answer, answer_chars)}")
    return lines


def render_text(report: EvalReport) -> str:
    """Pass rate per category, the headline, what was set aside, and every failure."""
    categories = report.categories()
    width = max([len("category"), len("overall"), *(len(name) for name in categories)])
    columns = ["passed", "rate"]
    if report.offline:
        columns += ["outside grammar", "known gaps"]
    if any(r.status is CaseStatus.SKIPPED for r in report.results):
        columns.append("skipped")

    def row(name: str, counts: Mapping[str, Any]) -> str:
        cells = {
            "passed": f"{counts['passed']}/{counts['scored']}",
            "rate": _rate(counts),
            "outside grammar": str(counts["outside_grammar"] + counts["unexpected_passes"]),
            "known gaps": str(counts["known_gaps"]),
            "skipped": str(counts["skipped"]),
        }
        return f"{name:<{width}}  " + "  ".join(f"{cells[c]:>{len(c)}}" for c in columns)

    sources = ", ".join(report.sources)
    where = "offline planner" if report.offline else report.model
    count = len(report.results)
    lines = [f"eval {sources}: {count} case{'' if count == 1 else 's'} against {where}", ""]
    lines.append(f"{'category':<{width}}  " + "  ".join(columns))
    lines += [row(name, counts) for name, counts in categories.items()]
    lines.append(row("overall", report.summary()))
    lines += ["", report.headline()]

    def listed(status: CaseStatus, title: str, why: Callable[[CaseResult], str]) -> None:
        chosen = [r for r in report.results if r.status is status]
        if chosen:
            lines.extend(["", title])
            lines.extend(f"  {r.case.id} [{r.case.category}]: {why(r)}" for r in chosen)

    listed(
        CaseStatus.EXPECTED_FAIL,
        "outside the offline grammar (failed as expected):",
        lambda r: r.case.offline_reason or "",
    )
    listed(
        CaseStatus.KNOWN_GAP,
        "known gaps of the offline planner (failing as recorded):",
        lambda r: f"{r.case.offline_reason} — {'; '.join(r.reasons)}",
    )
    listed(
        CaseStatus.UNEXPECTED_PASS,
        "marked offline cases that now pass (remove their `offline` mark):",
        lambda r: r.case.offline_reason or "",
    )
    listed(CaseStatus.SKIPPED, "skipped:", lambda r: "; ".join(r.reasons))
    for result in report.results:
        if result.status is CaseStatus.FAILED:
            lines.extend(["", f"FAILED {result.case.id} [{result.case.category}]"])
            lines.extend(f"  - {reason}" for reason in result.reasons)
            lines.extend(trace_lines(result))
    return "\n".join(lines)


def run_from_cli(
    paths: Iterable[str],
    *,
    categories: Collection[str] | None = None,
    vault: str | None = None,
    as_json: bool = False,
    progress: bool = False,
    settings: Settings | None = None,
) -> int:
    """`assistant eval`: always in this process (each case needs its own data directory,
    which a running daemon could not give it). 0 when no case failed, 1 otherwise, 2 for a
    bad case file."""
    from assistant.config import load_settings

    try:
        files = load_case_files(paths)
    except CaseFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    known = {case.category for case_file in files for case in case_file.cases}
    unknown = sorted(set(categories or ()) - known)
    if unknown:
        print(
            f"error: no case has the category {', '.join(unknown)} "
            f"(categories: {', '.join(sorted(known))})",
            file=sys.stderr,
        )
        return 2
    source = Path(vault).expanduser() if vault else None
    if source is not None and not source.is_dir():
        print(f"error: --vault {source} is not a folder", file=sys.stderr)
        return 2

    total = sum(
        1 for f in files for case in f.cases if not categories or case.category in categories
    )
    progress_at = [0, time.monotonic()]  # cases done, when the last one ended

    def show(result: CaseResult) -> None:
        """One line per case as it ends: where the run is, and how long the case took."""
        now = time.monotonic()
        progress_at[0] += 1
        took, progress_at[1] = now - progress_at[1], now
        print(
            f"[{progress_at[0]}/{total}] {result.status:<15} {result.case.id} ({took:.1f} s)",
            file=sys.stderr,
            flush=True,
        )

    report = run_eval(
        files,
        settings or load_settings(),
        categories=categories,
        vault_source=source,
        on_result=show if progress else None,
    )
    if as_json:
        print(json.dumps(report.as_dict(), ensure_ascii=False, indent=2, default=str))
    else:
        print(render_text(report))
    return 0 if report.ok else 1
