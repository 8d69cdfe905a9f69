from __future__ import annotations

import json

import pytest

from tools.base import ToolContext, ToolError
from tools.calc import CalcArgs, calc_evaluate, evaluate


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("15加27", 42),
        ("15 加上 27 等于多少", 42),
        ("(12*5)+3", 63),
        ("2的10次方", 1024),
        ("２＋３×４", 14),
        ("（１＋２）÷３", 1),
        ("10 - 4", 6),
        ("7 % 3", 1),
        ("7 // 2", 3),
        ("-3 ** 2", -9),
        ("10/4", 2.5),
        ("100 减去 1", 99),
        ("6 乘以 7", 42),
        ("3 times 4", 12),
        ("1,000 + 1", 1001),
        ("2^3", 8),
    ],
)
def test_evaluates_what_people_write(text: str, value: float) -> None:
    assert evaluate(text)[1] == value


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("10/0", "DIVISION_BY_ZERO"),
        ("10除以0", "DIVISION_BY_ZERO"),
        ("5 % 0", "DIVISION_BY_ZERO"),
        ("__import__('os')", "INVALID_EXPRESSION"),
        ("a + 1", "INVALID_EXPRESSION"),
        ("[1, 2]", "INVALID_EXPRESSION"),
        ("2 ** 100000", "EXPONENT_TOO_LARGE"),
        ("9 ** 9999", "RESULT_TOO_LARGE"),
        ("1e308 * 10", "RESULT_TOO_LARGE"),
        ("1+" * 150 + "1", "EXPRESSION_TOO_LONG"),
        ("", "INVALID_EXPRESSION"),
        ("(1+2", "INVALID_EXPRESSION"),
    ],
)
def test_refuses_with_a_structured_error(text: str, code: str) -> None:
    with pytest.raises(ToolError) as raised:
        evaluate(text)
    assert raised.value.code == code
    assert raised.value.payload()["error"] == code


def test_result_states_expression_and_value() -> None:
    result = calc_evaluate.invoke(CalcArgs(expression="15加27"), ToolContext())
    assert result == {"expression": "15+27", "value": 42}


def test_schema_is_derived_and_description_says_when_to_call() -> None:
    definition = calc_evaluate.definition["function"]
    assert definition["name"] == "calc_evaluate"
    assert definition["parameters"]["required"] == ["expression"]
    assert "whenever" in definition["description"]
    json.dumps(definition)
    assert calc_evaluate.read_only and not calc_evaluate.dangerous and calc_evaluate.version
