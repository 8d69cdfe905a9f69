"""The evaluation harness (SPEC E1, E2): the case format, the checks, the report, the CLI,
and the shipped `evals/` run through the offline planner."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fake_openai import completion, tool_call

from assistant.app import Assistant
from assistant.cli import main
from assistant.config import load_settings
from assistant.evaluation import (
    CaseFileError,
    CaseStatus,
    EvalReport,
    load_cases,
    numbers_in,
    render_text,
    run_eval,
    same_number,
)
from memory.lock import DataDirectoryLock

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "evals").glob("*.y*ml")) + sorted((ROOT / "evals").glob("*.json"))

SMALL_CASES: list[dict[str, Any]] = [
    {
        "id": "sum",
        "category": "pure_calculation",
        "input": "15加27等于多少",
        "expect_tool": "calc_evaluate",
        "expect_number": 42.0000004,  # within 1e-6
    },
    {
        "id": "wrong-number",
        "category": "pure_calculation",
        "input": "what is 6*7",
        "expect_number": 43,
    },
    {
        "id": "weather",
        "category": "not_a_tool",
        "input": "明天会下雨吗",
        "expect_tool_call": False,
    },
    {
        "id": "switch",
        "category": "multi_turn",
        "turns": [
            "15加27等于多少",
            {"input": "如果换成 20 加 30 呢", "expect_tool": "calc_evaluate", "expect_number": 50},
        ],
    },
    {
        "id": "dentist",
        "category": "memory",
        "sessions": [
            [{"input": "remember that my dentist is Dr. Li", "expect_tool": "memory_remember"}],
            [
                {
                    "input": "what do you know about my dentist?",
                    "expect_tool": "memory_recall",
                    "expect_answer_contains": ["dr. li"],
                }
            ],
        ],
    },
    {
        "id": "capital",
        "category": "not_a_tool",
        "input": "what's the capital of France?",
        "expect_answer_contains": ["Paris"],
        "offline": "expected_fail",
        "offline_reason": "general knowledge",
    },
    {
        "id": "marked-but-fine",
        "category": "small_talk",
        "input": "你好",
        "expect_tool_call": False,
        "offline": "known_gap",
        "offline_reason": "a stale mark",
    },
]


def write_json(path: Path, cases: Any) -> Path:
    path.write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    return path


def write_yaml(path: Path, cases: Any) -> Path:
    import yaml

    path.write_text(yaml.safe_dump(cases, allow_unicode=True), encoding="utf-8")
    return path


def by_id(report: EvalReport) -> dict[str, Any]:
    return {result.case.id: result for result in report.results}


# -- numbers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "present", "absent"),
    [
        ("15+27 = 42。", [15, 27, 42], []),
        ("7-12 = -5", [7, 12, -5], [-12]),
        ("1,024 + 976 = 2,000", [1024, 976, 2000], []),
        ("１２＋３０ ＝ ４２", [42], []),
        ("10/3 = 3.333333333", [10 / 3], []),
        ("about 2e3 people", [2000], []),
        ("Weekly/2026-W49 周报.md", [2026, 49], [-49]),
        ("x = −8", [-8], []),
    ],
)
def test_numbers_in_an_answer(text: str, present: list[float], absent: list[float]) -> None:
    found = numbers_in(text)
    for number in present:
        assert any(same_number(f, number) for f in found), (number, found)
    for number in absent:
        assert not any(same_number(f, number) for f in found), (number, found)


def test_numbers_compare_within_the_tolerance() -> None:
    assert same_number(42.0, 42.0000009)
    assert not same_number(42.0, 42.00001)
    assert same_number(1.8446744073709552e19, 18446744073709551616)


# -- the harness on a small file ------------------------------------------------------------


@pytest.fixture(scope="module")
def small_report(tmp_path_factory: pytest.TempPathFactory) -> EvalReport:
    """One offline run of the small case file, shared by the checks below (read only)."""
    folder = tmp_path_factory.mktemp("small")
    files = [
        load_cases(write_yaml(folder / "a.yaml", SMALL_CASES[:4])),
        load_cases(write_json(folder / "b.json", {"cases": SMALL_CASES[4:]})),
    ]
    with tempfile.TemporaryDirectory() as home:
        settings = load_settings({"ASSISTANT_HOME": home})
        return run_eval(files, settings)


def test_passing_and_failing_cases(small_report: EvalReport) -> None:
    results = by_id(small_report)
    assert results["sum"].status is CaseStatus.PASSED
    assert results["weather"].status is CaseStatus.PASSED
    wrong = results["wrong-number"]
    assert wrong.status is CaseStatus.FAILED
    assert wrong.reasons == [
        "turn 1: the answer does not state the number 43 (numbers in it: 6, 7, 42)"
    ]
    assert not small_report.ok


def test_multi_turn_and_cross_session_memory(small_report: EvalReport) -> None:
    results = by_id(small_report)
    switch = results["switch"]
    assert switch.status is CaseStatus.PASSED
    assert [t.tool_calls[0].arguments for t in switch.turns] == [
        {"expression": "15+27"},
        {"expression": "20+30"},
    ]
    dentist = results["dentist"]
    assert dentist.status is CaseStatus.PASSED, dentist.reasons
    assert [t.session for t in dentist.turns] == [1, 2]
    assert "Dr. Li" in dentist.turns[1].answer


def test_offline_marks_are_reported_apart(small_report: EvalReport) -> None:
    results = by_id(small_report)
    assert results["capital"].status is CaseStatus.EXPECTED_FAIL
    assert results["marked-but-fine"].status is CaseStatus.UNEXPECTED_PASS
    summary = small_report.summary()
    assert (summary["passed"], summary["scored"]) == (4, 5)
    assert summary["outside_grammar"] == 1
    assert small_report.headline() == (
        "offline planner: 4/5 in grammar passed; 1 outside its grammar (failed as expected); "
        "1 marked cases passed (remove their mark)"
    )
    categories = small_report.categories()
    assert categories["not_a_tool"]["passed"] == 1
    assert categories["not_a_tool"]["outside_grammar"] == 1


def test_the_text_report_shows_failures_with_their_trace(small_report: EvalReport) -> None:
    text = render_text(small_report)
    assert "pure_calculation" in text and "1/2" in text
    failure = text.split("FAILED wrong-number [pure_calculation]", 1)[1]
    assert "the answer does not state the number 43" in failure
    assert 'calc_evaluate {"expression": "6*7"} -> ok' in failure
    assert "answer: 6*7 = 42" in failure
    assert "capital [not_a_tool]: general knowledge" in text


def test_each_case_gets_its_own_data_directory(tmp_path: Path) -> None:
    cases = [
        {"id": "store", "category": "memory", "input": "remember that my dentist is Dr. Li"},
        {
            "id": "fresh",
            "category": "memory",
            "input": "what do you know about my dentist?",
            "expect_answer_not_contains": ["Dr. Li"],
        },
    ]
    homes: list[Path] = []

    def factory(settings: Any) -> Assistant:
        homes.append(settings.home)
        return Assistant(settings)

    report = run_eval(
        [load_cases(write_json(tmp_path / "c.json", cases))],
        load_settings(),
        factory=factory,
    )
    assert report.ok, render_text(report)
    assert len(set(homes)) == 2
    assert not any(home.exists() for home in homes)  # removed after each case


def test_vault_cases_work_on_a_copy(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "Notes").mkdir(parents=True)
    (vault / "Notes" / "Garden.md").write_text("# Garden\n\nPlant the tulips in October.\n")
    cases = {
        "vault": "vault",
        "cases": [
            {
                "id": "read",
                "category": "vault",
                "input": "read note Garden",
                "expect_tool": "vault_read",
                "expect_answer_contains": ["tulips"],
            },
            {
                "id": "no-vault",
                "category": "pure_calculation",
                "input": "what is 2+2",
                "expect_number": 4,
            },
        ],
    }
    seen: list[Any] = []

    def factory(settings: Any) -> Assistant:
        seen.append(settings.vault)
        return Assistant(settings)

    report = run_eval(
        [load_cases(write_json(tmp_path / "v.json", cases))], load_settings(), factory=factory
    )
    results = by_id(report)
    assert seen[0] != vault and seen[0].name == "vault"  # a copy, not the folder itself
    assert seen[1] is None  # other cases get no vault at all
    if results["read"].status is CaseStatus.SKIPPED:
        pytest.skip(f"vault tools are not registered yet: {results['read'].reasons}")
    assert results["read"].status is CaseStatus.PASSED, results["read"].reasons


def test_a_missing_tool_skips_the_case(tmp_path: Path) -> None:
    cases = [{"id": "x", "category": "c", "input": "hi", "expect_tool": "no_such_tool"}]
    report = run_eval([load_cases(write_json(tmp_path / "c.json", cases))], load_settings())
    [result] = report.results
    assert result.status is CaseStatus.SKIPPED
    assert result.reasons == ["needs no_such_tool, which this assistant does not register"]
    assert report.ok


def test_vault_cases_are_skipped_without_vault_tools(tmp_path: Path) -> None:
    from tools.calc import calc_evaluate

    cases = [{"id": "v", "category": "vault", "input": "search my notes for Phoenix"}]
    report = run_eval(
        [load_cases(write_json(tmp_path / "c.json", cases))],
        load_settings(),
        factory=lambda settings: Assistant(settings, tools=[calc_evaluate]),
    )
    [result] = report.results
    assert result.status is CaseStatus.SKIPPED
    assert result.reasons == ["needs vault_* tools, which this assistant does not register"]


def test_a_crash_is_a_failure_even_in_a_marked_case(tmp_path: Path) -> None:
    cases = [
        {
            "id": "x",
            "category": "c",
            "input": "hi",
            "offline": "expected_fail",
            "offline_reason": "not a licence to crash",
        }
    ]

    def factory(settings: Any) -> Assistant:
        raise RuntimeError("boom")

    report = run_eval(
        [load_cases(write_json(tmp_path / "c.json", cases))], load_settings(), factory=factory
    )
    [result] = report.results
    assert result.status is CaseStatus.FAILED
    assert result.reasons == ["could not start the assistant: RuntimeError: boom"]


# -- against an endpoint (the fake OpenAI server) -------------------------------------------


def test_against_a_configured_endpoint(fake_openai, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("ASSISTANT_MODEL", "fake-model")
    fake_openai.script(
        completion(None, [tool_call("calc_evaluate", {"expression": "6*7"})]),
        completion("6 times 7 is 42."),
        completion("I think it is about 41."),
    )
    cases = [
        {"id": "good", "category": "calc", "input": "what is 6*7", "expect_number": 42},
        {
            "id": "bad",
            "category": "calc",
            "input": "what is 6*7",
            "expect_tool": "calc_evaluate",
            "expect_number": 42,
            "offline": "expected_fail",  # marks count for the offline planner only
            "offline_reason": "irrelevant here",
        },
    ]
    settings = load_settings()
    settings.model.max_retries = 0
    report = run_eval([load_cases(write_json(tmp_path / "c.json", cases))], settings)
    assert (report.model, report.offline) == ("fake-model", False)
    results = by_id(report)
    assert results["good"].status is CaseStatus.PASSED
    assert results["bad"].status is CaseStatus.FAILED
    assert results["bad"].reasons[0] == "turn 1: expected a call to calc_evaluate, got: none"
    assert report.headline() == "fake-model: 1/2 passed (50.0%)"


# -- the case format ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cases", "message"),
    [
        ([{"category": "c", "input": "x"}], "has no `id`"),
        ([{"id": "a", "input": "x"}], "`category` is missing"),
        ([{"id": "a", "category": "c"}], "exactly one of"),
        ([{"id": "a", "category": "c", "input": "x", "expect_anwser": ["y"]}], "expect_anwser"),
        ([{"id": "a", "category": "c", "turns": ["x"], "expect_number": 1}], "on the turns"),
        ([{"id": "a", "category": "c", "input": "x", "expect_number": "many"}], "numbers"),
        ([{"id": "a", "category": "c", "input": "x", "offline": "expected_fail"}], "reason"),
        (
            [
                {
                    "id": "a",
                    "category": "c",
                    "input": "x",
                    "expect_tool": "t",
                    "expect_tool_call": False,
                }
            ],
            "contradicts",
        ),
        ([{"id": "a", "category": "c", "input": "x"}] * 2, "used twice"),
        ([], "non-empty list"),
    ],
)
def test_malformed_cases_are_named(tmp_path: Path, cases: Any, message: str) -> None:
    with pytest.raises(CaseFileError, match=message):
        load_cases(write_json(tmp_path / "bad.json", cases))


def test_only_json_and_yaml(tmp_path: Path) -> None:
    path = tmp_path / "cases.txt"
    path.write_text("[]")
    with pytest.raises(CaseFileError, match=r"\.json, \.yaml or \.yml"):
        load_cases(path)


# -- the CLI ------------------------------------------------------------------------------


def test_cli_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_yaml(tmp_path / "good.yaml", [SMALL_CASES[0], SMALL_CASES[2]])
    mixed = write_json(tmp_path / "mixed.json", SMALL_CASES[:3])
    # a daemon (or anyone) owning the data directory does not stop an eval: it runs in-process
    # on directories of its own
    owner = DataDirectoryLock(load_settings().home, "daemon").acquire()
    try:
        assert main(["eval", str(good)]) == 0
        out = capsys.readouterr().out
        assert "offline planner: 2/2 in grammar passed; 0 outside its grammar" in out

        assert main(["eval", str(mixed), "--json"]) == 1
        data = json.loads(capsys.readouterr().out)
    finally:
        owner.release()
    assert data["ok"] is False
    assert data["summary"]["passed"] == 2 and data["summary"]["failed"] == 1
    assert data["categories"]["pure_calculation"]["pass_rate"] == 0.5
    failed = next(r for r in data["results"] if r["status"] == "failed")
    [turn] = failed["turns"]
    assert turn["turn_id"] and turn["answer"] == "6*7 = 42"
    assert turn["tool_calls"] == [
        {
            "name": "calc_evaluate",
            "arguments": {"expression": "6*7"},
            "status": "ok",
            "result": {"expression": "6*7", "value": 42},
        }
    ]

    assert main(["eval", str(mixed), "--category", "not_a_tool", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in data["results"]] == ["weather"]


def test_cli_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read the case file" in capsys.readouterr().err
    good = write_json(tmp_path / "good.json", SMALL_CASES[:1])
    assert main(["eval", str(good), "--category", "nope"]) == 2
    assert "no case has the category nope" in capsys.readouterr().err


# -- the shipped cases ----------------------------------------------------------------------


def test_the_shipped_cases_are_many_and_bilingual() -> None:
    cases = [case for path in SHIPPED for case in load_cases(path).cases]
    assert len(cases) >= 40
    categories = {case.category for case in cases}
    assert {
        "pure_calculation",
        "mixed_intent",
        "not_a_tool",
        "multi_turn",
        "memory",
        "vault",
        "small_talk",
    } <= categories
    texts = [turn.input for case in cases for turn in case.turns]
    assert sum(1 for t in texts if any("\u4e00" <= ch <= "\u9fff" for ch in t)) >= 15
    assert sum(1 for t in texts if t.isascii()) >= 15


def test_the_offline_planner_passes_every_shipped_case_in_its_grammar() -> None:
    files = [load_cases(path) for path in SHIPPED]
    with tempfile.TemporaryDirectory() as home:
        report = run_eval(files, load_settings({"ASSISTANT_HOME": home}))
    assert report.offline
    text = render_text(report)
    failed = [r.case.id for r in report.results if r.status is CaseStatus.FAILED]
    assert not failed, text
    stale = [r.case.id for r in report.results if r.status is CaseStatus.UNEXPECTED_PASS]
    assert not stale, f"these cases pass offline now; remove their `offline` mark: {stale}"
    # the harness skips a case whose tools `assistant.registry.names()` lacks: only vault
    # cases may be skipped, and only while the Assistant registers no vault_ tools
    skipped = [r for r in report.results if r.status is CaseStatus.SKIPPED]
    assert all(r.case.category == "vault" for r in skipped), text
    if skipped:
        pytest.skip(
            f"{len(skipped)} vault cases not run: the Assistant registers no vault_ tools yet "
            f"({skipped[0].reasons[0]})"
        )
