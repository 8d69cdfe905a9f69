"""`calc_evaluate`: arithmetic without `eval`, over a whitelist of AST nodes.

Models are bad at arithmetic and good at writing expressions; this tool takes the
expression as they (or users) write it, Chinese operators and full-width characters
included, and returns the exact value or a structured error.
"""

from __future__ import annotations

import ast
import math
import operator
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from pydantic import Field

from tools.base import ToolArgs, ToolError, tool

MAX_EXPRESSION_CHARS = 200
MAX_RESULT_DIGITS = 1000
MAX_EXPONENT = 10_000

_WORD_OPERATORS: list[tuple[str, str]] = [
    (r"的\s*(-?\d+(?:\.\d+)?)\s*次方", r"**\1"),
    (r"的\s*(\S+?)\s*次方", r"**(\1)"),
    (r"的\s*平方", "**2"),
    (r"的\s*立方", "**3"),
    (r"(\d)\s*次方", r"\1"),
    (r"加上|加", "+"),
    (r"减去|减", "-"),
    (r"乘以|乘上|乘", "*"),
    (r"除以", "/"),
    (r"\bplus\b", "+"),
    (r"\bminus\b", "-"),
    (r"\btimes\b|\bmultiplied by\b", "*"),
    (r"\bdivided by\b|\bover\b", "/"),
    (r"\bto the power of\b", "**"),
    (r"\bmod(?:ulo)?\b", "%"),
]
_SYMBOLS = {"×": "*", "✕": "*", "·": "*", "÷": "/", "−": "-", "–": "-", "^": "**"}
_TRAILING_QUESTION = re.compile(
    r"(等于|是)?\s*(多少|几)?\s*(呢|啊|吗)?\s*[?？=。.!！]*\s*$|\s*=\s*\??\s*$"
)

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def normalize_expression(text: str) -> str:
    """Full-width to ASCII, Chinese and English operator words to symbols."""
    expression = unicodedata.normalize("NFKC", text).strip()
    for symbol, replacement in _SYMBOLS.items():
        expression = expression.replace(symbol, replacement)
    expression = _TRAILING_QUESTION.sub("", expression)
    for pattern, replacement in _WORD_OPERATORS:
        expression = re.sub(pattern, replacement, expression, flags=re.IGNORECASE)
    expression = re.sub(r"(?<=\d)\s*[xX]\s*(?=[\d(])", "*", expression)
    expression = re.sub(r"(\d),(?=\d{3}\b)", r"\1", expression)
    return re.sub(r"\s+", "", expression)


def _check_power(base: Any, exponent: Any) -> None:
    if isinstance(exponent, int | float) and abs(exponent) > MAX_EXPONENT:
        raise ToolError("EXPONENT_TOO_LARGE", f"exponent {exponent} exceeds {MAX_EXPONENT}")
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        digits = exponent * math.log10(abs(base))
        if digits > MAX_RESULT_DIGITS:
            raise ToolError(
                "RESULT_TOO_LARGE",
                f"{base}**{exponent} would have about {int(digits)} digits "
                f"(limit {MAX_RESULT_DIGITS})",
            )


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise ToolError("DIVISION_BY_ZERO", "division by zero is undefined") from exc
        except OverflowError as exc:
            raise ToolError("RESULT_TOO_LARGE", "the result overflows a float") from exc
    raise ToolError(
        "INVALID_EXPRESSION",
        f"unsupported element {type(node).__name__}: only numbers, + - * / // % **, "
        "parentheses and unary minus are allowed",
    )


def evaluate(text: str) -> tuple[str, int | float]:
    expression = normalize_expression(text)
    if not expression:
        raise ToolError("INVALID_EXPRESSION", "the expression is empty")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(
            "EXPRESSION_TOO_LONG",
            f"{len(expression)} characters; the limit is {MAX_EXPRESSION_CHARS}",
        )
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ToolError("INVALID_EXPRESSION", f"cannot parse {expression!r}") from exc
    value = _evaluate(tree)
    if isinstance(value, complex):
        raise ToolError("INVALID_EXPRESSION", "the result is not a real number")
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ToolError("RESULT_TOO_LARGE", "the result is not a finite number")
        if value.is_integer() and abs(value) < 1e15:
            value = int(value)
    return expression, value


class CalcArgs(ToolArgs):
    expression: str = Field(
        description=(
            "The arithmetic expression, e.g. '15+27', '(12*5)+3', '2**10', '10/3'. "
            "Chinese operators (加 减 乘 除以 的N次方) and full-width characters are accepted."
        ),
        min_length=1,
        max_length=2000,
    )


@tool(version="1.0", inline=True)
def calc_evaluate(args: CalcArgs) -> dict[str, Any]:
    """Evaluate an arithmetic expression exactly.

    Call this whenever the user asks for any calculation (sums, products, division,
    powers, remainders), in any language, instead of computing it yourself. Pass the
    whole expression. Answer with the returned `value`; if it returns an error such as
    DIVISION_BY_ZERO, tell the user why there is no result.
    """
    expression, value = evaluate(args.expression)
    return {"expression": expression, "value": value}
